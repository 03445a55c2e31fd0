"""AnimeGamer's tokenizer: loading, validation of every added token, and the turn prompt layouts.

The released tokenizer (``MLLM/VisualAR/animegamer_tokenizer``) is Mistral's sentencepiece model plus
284 added tokens (vocabulary 32284).  The MLLM's weights index rows by these ids, so a tokenizer
folder whose added tokens moved by one would silently feed the model the wrong embeddings: we check
every id before use.  Prompt pieces are encoded exactly as the released ``inference_MLLM.py`` encodes
them (each piece on its own, without special tokens), which gives the same ids.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....core.errors import InputError, ModelFileError

VOCAB_SIZE = 32284
NUM_QUERY_TOKENS = 226
NUM_FRAME_TOKENS = 256
STRENGTH_RANGE = range(-5, 6)
FRAME_TOKEN = "<frame_{:05d}>"
STRENGTH_TOKEN = "<Strength_{:d}>"
STATE_TAGS = ("ML", "SC", "ET", "ST")
TOKENIZER_FILES = ("tokenizer.model", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")


def documented_token_ids() -> dict[str, int]:
    """Every added token and the id the released weights were trained with (reference notes §1.2)."""
    ids = {FRAME_TOKEN.format(i): 32000 + i for i in range(NUM_FRAME_TOKENS)}
    for offset, token in enumerate(("<img>", "</img>", "<vid>", "</vid>", "<frame>", "</frame>")):
        ids[token] = 32256 + offset
    for offset, value in enumerate(STRENGTH_RANGE):
        ids[STRENGTH_TOKEN.format(value)] = 32262 + offset
    tail = ("<visual>", "<ML>", "</ML>", "<SC>", "</SC>", "<ET>", "</ET>", "<ST>", "</ST>", "<TURN>", "</TURN>")
    for offset, token in enumerate(tail):
        ids[token] = 32273 + offset
    ids.update({"<unk>": 0, "<s>": 1, "</s>": 2})
    return ids


@dataclass(frozen=True)
class TokenIds:
    """The ids the step needs, read from a validated tokenizer."""

    bos: int
    eos: int
    frame_open: int
    frame_close: int
    frames: tuple[int, ...]
    strengths: dict[int, int]

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> TokenIds:
        convert = tokenizer.convert_tokens_to_ids
        return cls(
            bos=tokenizer.bos_token_id,
            eos=tokenizer.eos_token_id,
            frame_open=convert("<frame>"),
            frame_close=convert("</frame>"),
            frames=tuple(convert(FRAME_TOKEN.format(i)) for i in range(NUM_FRAME_TOKENS)),
            strengths={convert(STRENGTH_TOKEN.format(v)): v for v in STRENGTH_RANGE},
        )


def validate_tokenizer(tokenizer: Any, source: str = "the tokenizer") -> TokenIds:
    """Raise :class:`ModelFileError` unless ``tokenizer`` has vocabulary 32284 and every documented id."""
    size = len(tokenizer)
    if size != VOCAB_SIZE:
        raise ModelFileError(
            f"{source} has a vocabulary of {size} tokens; AnimeGamer's weights need {VOCAB_SIZE} "
            "(Mistral's 32000 plus 284 added tokens). Use the animegamer_tokenizer folder from the AnimeGamer "
            "repository (MLLM/VisualAR/animegamer_tokenizer)."
        )
    wrong = []
    for token, expected in documented_token_ids().items():
        found = tokenizer.convert_tokens_to_ids(token)
        if found != expected:
            wrong.append(f"{token}: {found} (expected {expected})")
    if tokenizer.bos_token_id != 1 or tokenizer.eos_token_id != 2:
        wrong.append(f"bos/eos ids {tokenizer.bos_token_id}/{tokenizer.eos_token_id} (expected 1/2)")
    if wrong:
        shown = "; ".join(wrong[:8]) + (f"; and {len(wrong) - 8} more" if len(wrong) > 8 else "")
        raise ModelFileError(
            f"{source} does not map AnimeGamer's special tokens to the ids its weights use: {shown}. "
            "Use the unmodified animegamer_tokenizer folder from the AnimeGamer repository."
        )
    return TokenIds.from_tokenizer(tokenizer)


def load_tokenizer(folder: str | os.PathLike[str]) -> tuple[Any, TokenIds]:
    """Load and validate AnimeGamer's tokenizer folder (needs ``sentencepiece`` and ``protobuf``)."""
    path = Path(folder)
    if not path.is_dir() or not (path / "tokenizer.model").is_file():
        raise ModelFileError(
            f"AnimeGamer's tokenizer folder was not found at {path} (it must hold {', '.join(TOKENIZER_FILES)}). "
            "Copy MLLM/VisualAR/animegamer_tokenizer from github.com/TencentARC/AnimeGamer into models/animegamer/."
        )
    from transformers import LlamaTokenizer

    try:
        tokenizer = LlamaTokenizer.from_pretrained(str(path), legacy=False)
    except Exception as exc:  # noqa: BLE001 - sentencepiece/transformers raise many types for a damaged folder
        raise ModelFileError(
            f"AnimeGamer's tokenizer in {path} could not be read ({type(exc).__name__}: {exc}). Expected the "
            f"sentencepiece tokenizer.model and {', '.join(TOKENIZER_FILES)} from MLLM/VisualAR/animegamer_tokenizer."
        ) from exc
    return tokenizer, validate_tokenizer(tokenizer, source=str(path))


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


def frame_block() -> str:
    """``<img><frame><frame_00000>…<frame_00225></frame></img>``: the 226 query/representation slots."""
    frames = "".join(FRAME_TOKEN.format(i) for i in range(NUM_QUERY_TOKENS))
    return "<img><frame>" + frames + "</frame></img>"


def check_instruction(instruction: str) -> str:
    """The instruction, stripped; empty or special-token-bearing text is an :class:`InputError`."""
    text = (instruction or "").strip()
    if not text:
        raise InputError(
            "The instruction is empty. Give one game_demo line, e.g. "
            "'Character: Qiqi; Motion: quickly flying on broomstick; Background: day sky.'"
        )
    for token in ("<TURN>", "</TURN>", "<ML>", "<frame", "<img>", "<Strength_"):
        if token in text:
            raise InputError(f"The instruction contains the control token {token!r}; write plain text only.")
    return text


def strengths_text(strengths: Sequence[int]) -> str:
    """``<ML><Strength_a></ML><SC>…</ST>`` for one turn's ``[ML, SC, ET, ST]``."""
    return "".join(
        f"<{tag}>{STRENGTH_TOKEN.format(int(v))}</{tag}>" for tag, v in zip(STATE_TAGS, strengths, strict=True)
    )


@dataclass(frozen=True)
class Prompt:
    """Token ids of one step's prompt and where the representation slots are."""

    ids: list[int]
    history_slots: list[int]
    query_start: int

    @property
    def query_slice(self) -> slice:
        return slice(self.query_start, self.query_start + NUM_QUERY_TOKENS)


def build_prompt(
    tokenizer: Any, ids: TokenIds, instruction: str, history: Sequence[tuple[str, Sequence[int]]] = ()
) -> Prompt:
    """The released prompt: ``<s>`` + history turns + ``<TURN>{instruction}<img><frame>…</frame></img><ML>``.

    Each history turn is ``<TURN>{instr}<img><frame>{226 frames}</frame></img>{strengths}</TURN>`` with
    that turn's own strengths and a single ``</ST>`` (the released code writes the current turn's
    all-zero strengths and ``</ST>`` twice; see docs/animegamer_mllm.md).  ``history_slots`` holds the
    first position of each history turn's 226 frame tokens, where the previous representation goes.
    """
    video = _encode(tokenizer, frame_block())
    prompt = [ids.bos]
    slots: list[int] = []
    for past_instruction, past_strengths in history:
        prompt += _encode(tokenizer, "<TURN>" + check_instruction(past_instruction))
        slots.append(len(prompt) + 2)
        prompt += video
        prompt += _encode(tokenizer, strengths_text(past_strengths) + "</TURN>")
    prompt += _encode(tokenizer, "<TURN>" + check_instruction(instruction))
    query_start = len(prompt) + 2
    prompt += video + _encode(tokenizer, "<ML>")
    return Prompt(ids=prompt, history_slots=slots, query_start=query_start)
