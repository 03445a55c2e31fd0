"""The stable Python API of GameAnim, for headless scripts and outside checks.

Import the pack by path (see the README's "Python API") and call these functions; they never need
ComfyUI.  Signatures here are a contract: new parameters get defaults, nothing is renamed.
Long functions accept ``progress``: a callable ``(done, total)`` that may raise to cancel (for
example :meth:`CancelToken.progress`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import GameAnimError, InputError, ModelFileError, NumericalError, UnsafePathError
from .progress import Cancelled, CancelToken, ProgressFn

if TYPE_CHECKING:
    import torch

    from .nodes.animegamer.game_state import Game
    from .nodes.animegamer.mllm_model import AnimeGamerMLLM
    from .nodes.animegamer.mllm_step import StepResult

__version__ = "0.1.0"


def load_animegamer_mllm(
    weights: str | os.PathLike[str] | Mapping[str, torch.Tensor],
    tokenizer: str | os.PathLike[str],
    base: str | os.PathLike[str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> AnimeGamerMLLM:
    """Load AnimeGamer's MLLM (Mistral-7B-Instruct-v0.1 + LoRA + resamplers) for :func:`game_step`.

    ``weights``: the path of ``MLLM-<char>/pytorch_model.bin`` (or a mapping in its key layout:
    ``llm.base_model.model.…`` with peft names, ``input_resampler.proj.*``, ``output_resampler.proj.*``).
    ``tokenizer``: AnimeGamer's ``animegamer_tokenizer`` folder (vocabulary and every added token are
    checked).  ``base``: the Mistral-7B-Instruct-v0.1 folder when ``weights`` lacks the base weights.
    ``config``: ``MistralConfig`` keyword overrides (``dtype`` picks the compute dtype, default bfloat16).
    The LoRA rank comes from the ``lora_A`` shapes (alpha = rank), the representation width from the
    resampler shapes.  Missing or mis-shaped tensors raise :class:`ModelFileError`.
    """
    from .nodes.animegamer.mllm_model import load_animegamer_mllm as load

    return load(weights, tokenizer, base=base, config=config)


def new_game(character: str, window: int = 1) -> Game:
    """A new AnimeGamer game (states at 50).  ``window`` 1 is the released behaviour (no history in the
    prompt); ``window`` > 1 shows the last ``window - 1`` turns with their own strengths and representations."""
    from .nodes.animegamer.game_state import new_game as make

    return make(character, window)


def game_step(
    model: AnimeGamerMLLM,
    game: Game,
    instruction: str,
    max_new_tokens: int = 200,
    progress: ProgressFn | None = None,
) -> tuple[Game, StepResult]:
    """Play one turn; returns the new game and the step (``representation`` 226×D, ``generated_ids``,
    ``text``, ``level``, ``flow``, ``deltas`` (SC, ET, ST), ``states``).  ``game`` itself is unchanged."""
    from .nodes.animegamer.mllm_step import game_step as step

    return step(model, game, instruction, max_new_tokens=max_new_tokens, progress=progress)


def save_game(game: Game, path: str | os.PathLike[str]) -> os.PathLike[str]:
    """Save a game atomically as ``<path>.game.json`` + a checksummed ``.safetensors``; returns the JSON path."""
    from .nodes.animegamer.game_state import save_game as save

    return save(game, path)


def load_game(path: str | os.PathLike[str]) -> Game:
    """Load a game saved by :func:`save_game`; a corrupt save raises :class:`ModelFileError`."""
    from .nodes.animegamer.game_state import load_game as load

    return load(path)


__all__ = [
    "CancelToken",
    "Cancelled",
    "GameAnimError",
    "InputError",
    "ModelFileError",
    "NumericalError",
    "UnsafePathError",
    "__version__",
    "game_step",
    "load_animegamer_mllm",
    "load_game",
    "new_game",
    "save_game",
]
