"""Shared helpers for the AnimeGamer MLLM tests: where the real tokenizer is, and the tiny fixture."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "animegamer_mllm"


def tokenizer_candidates() -> list[Path]:
    """Where AnimeGamer's tokenizer may be: $GAMEANIM_ANIMEGAMER_TOKENIZER, then ../shared/reference/."""
    env = os.environ.get("GAMEANIM_ANIMEGAMER_TOKENIZER", "")
    # ../shared from the repo root (main checkout); ../../shared from a worktree under wt/.
    shared = [up / "shared" / "reference" / "animegamer_tokenizer" for up in (ROOT.parent, ROOT.parent.parent)]
    return ([Path(env)] if env else []) + shared


def tokenizer_dir() -> Path:
    """AnimeGamer's real tokenizer folder, or a skip that says where we looked."""
    for candidate in tokenizer_candidates():
        if (candidate / "tokenizer.model").is_file():
            return candidate
    reason = (
        "AnimeGamer's tokenizer files are absent (looked at $GAMEANIM_ANIMEGAMER_TOKENIZER and "
        "../shared/reference/animegamer_tokenizer); copy MLLM/VisualAR/animegamer_tokenizer from TencentARC/AnimeGamer"
    )
    print(f"SKIP: {reason}")
    pytest.skip(reason)


def reference() -> dict:
    return json.loads((FIXTURE / "reference.json").read_text())


def tiny_config(reference_record: dict) -> dict:
    return {**reference_record["config"], "dtype": "float32"}
