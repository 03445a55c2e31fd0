"""The stable Python API of GameAnim, for headless scripts and outside checks.

Import the pack by path (see the README's "Python API") and call these functions; they never need
ComfyUI.  Signatures here are a contract: new parameters get defaults, nothing is renamed.
Long functions accept ``progress``: a callable ``(done, total)`` that may raise to cancel (for
example :meth:`CancelToken.progress`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import GameAnimError, InputError, ModelFileError, NumericalError, UnsafePathError
from .progress import Cancelled, CancelToken

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence

    import torch

    from .nodes.vc2.model import VC2Model

__version__ = "0.1.0"

__all__ = [
    "decode_vc2",
    "encode_vc2_text",
    "load_vc2",
    "sample_vc2",
    "vc2_token_count",
    "train_lora",
    "apply_lora",
    "CancelToken",
    "Cancelled",
    "GameAnimError",
    "InputError",
    "ModelFileError",
    "NumericalError",
    "UnsafePathError",
    "__version__",
]


# ----------------------------------------------------------------------------- VideoCrafter2


def load_vc2(source: str | os.PathLike[str] | Mapping[str, Any], config: Mapping[str, Any] | None = None) -> VC2Model:
    """Load a VideoCrafter2 / godmodeanimation checkpoint (fp32, CPU) from a path or a state dict.

    Formats are detected by keys and shapes: the original ``model.ckpt``, godmodeanimation Lightning
    checkpoints (optimizer state never read), ``.safetensors`` conversions with or without prefixes,
    and UNet-only mappings (the sampler then uses VC2's own schedule and ``scale_arr``).  ``config``
    overrides the UNet hyper-parameters inferred from the shapes.  The result's
    ``unet(x, timesteps, context, fps)`` maps ``[B,4,T,H,W]`` latents to the noise prediction; move
    parts to a GPU with ``model.unet.to("cuda")``.  Non-VC2 files raise :class:`ModelFileError`.
    """
    from .nodes.vc2.model import load_model

    return load_model(source, config=config)


def sample_vc2(
    model: VC2Model,
    context: torch.Tensor,
    uncond_context: torch.Tensor | None,
    steps: int = 50,
    cfg: float = 12.0,
    eta: float = 1.0,
    fps: int = 16,
    x_T: torch.Tensor | None = None,
    seed: int | None = None,
    noise: Sequence[torch.Tensor] | torch.Tensor | None = None,
) -> torch.Tensor:
    """Run VC2's original DDIM (leading timesteps +1, eta, CFG, fps, ``scale_arr``); final latents ``[B,4,T,H,W]``.

    ``x_T`` is the start latent; without it the noise is drawn on the CPU from ``seed`` for one
    16-frame 320x512 clip per context row.  ``noise`` optionally gives the per-step noises for eta > 0
    (added as sigma_i * noise[i] in sampling order) so a run is reproducible exactly.  Step counts that
    do not divide 1000 keep the stride ``1000 // steps`` and run exactly ``steps`` steps.
    """
    from .nodes.vc2.model import sample

    return sample(
        model, context, uncond_context, steps=steps, cfg=cfg, eta=eta, fps=fps, x_T=x_T, seed=seed, noise=noise
    )


def encode_vc2_text(model: VC2Model, texts: str | Sequence[str]) -> torch.Tensor:
    """``[B, 77, 1024]`` conditioning from the checkpoint's OpenCLIP weights (``""`` = unconditional)."""
    from .nodes.vc2.model import encode_text

    return encode_text(model, texts)


def vc2_token_count(text: str) -> tuple[int, str]:
    """(OpenCLIP tokens including start/end, text cut off past the 77-token window; empty if none)."""
    from .nodes.vc2.text_encoder import token_report

    report = token_report(text)
    return report.tokens, report.cut_text


def decode_vc2(model: VC2Model, latents: torch.Tensor, chunk: int = 1, tiled: bool = False) -> torch.Tensor:
    """Latents ``[B,4,T,h,w]`` -> IMAGE ``[B*T, 8h, 8w, 3]`` float32 0..1, decoded ``chunk`` frames at a time."""
    from .nodes.vc2.model import decode

    return decode(model, latents, chunk=chunk, tiled=tiled)


# ----------------------------------------------------------------------------- LoRA training


def train_lora(model: VC2Model, dataset: Any, **settings: Any) -> Any:
    """Train a VC2 LoRA headless and return the finished :class:`~.trainers.loop.TrainingRun`.

    ``dataset`` is a :class:`~.trainers.datasets.TrainDataset` or a folder of still images (with
    same-name ``.txt`` captions and kohya ``N_name`` repeat folders).  ``settings`` are the fields of
    :class:`~.trainers.loop.TrainSettings` (targets, rank, alpha, learning_rate, lr_schedule, batch_size,
    grad_accum, gradient_checkpointing, precision, seed, caption_dropout, still_ratio, checkpoint_every,
    checkpoint_path, ...) plus: ``steps`` (default ``total_steps``), ``trigger``/``width``/``height``
    (folder datasets), ``resume`` (default True: continue from ``checkpoint_path``), ``progress``
    (may raise to cancel; a checkpoint is written first) and ``output_dir`` + ``name`` to save the
    LoRA there (never overwriting; the path is ``run.saved_path``).
    """
    from pathlib import Path

    from .trainers.datasets import TrainDataset, load_stills
    from .trainers.loop import TrainSettings, start_training, train
    from .trainers.lora_file import save_lora

    options = dict(settings)
    steps = options.pop("steps", None)
    progress = options.pop("progress", None)
    resume = options.pop("resume", True)
    output_dir = options.pop("output_dir", None)
    name = options.pop("name", "gameanim_lora")
    trigger = options.pop("trigger", "")
    width, height = options.pop("width", 256), options.pop("height", 256)
    config = TrainSettings.from_kwargs(**options)
    if not isinstance(dataset, TrainDataset):
        dataset = TrainDataset(stills=load_stills(Path(dataset), width, height, trigger=trigger), trigger=trigger)
    run = start_training(model, dataset, config, resume=resume)
    remaining = (steps if steps is not None else config.total_steps) - run.step
    if remaining > 0:
        train(run, remaining, progress)
    run.saved_path = save_lora(run.lora_state(), output_dir, name, run.metadata()) if output_dir else None
    return run


def apply_lora(
    model: VC2Model, path: str | os.PathLike[str], strength: float = 1.0, allow_other_base: bool = False
) -> VC2Model:
    """A new VC2 model with the GameAnim LoRA at ``path`` merged at ``strength`` (``model`` is unchanged).

    Apply again to stack LoRAs; strength 0 gives the base model's output exactly.  A LoRA from another
    tool (foreign keys), a damaged file or one trained on a different base model raises
    :class:`ModelFileError` (``allow_other_base=True`` skips only the base check).
    """
    from .trainers.lora_file import apply_lora_file

    return apply_lora_file(model, path, strength, allow_other_base)
