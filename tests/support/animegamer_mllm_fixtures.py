"""Shared helpers for the AnimeGamer MLLM tests: the real tokenizer (committed test data) and the tiny fixture."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "animegamer_mllm"


TOKENIZER = ROOT / "tests" / "data" / "animegamer_tokenizer"


def tokenizer_dir() -> Path:
    """AnimeGamer's real tokenizer folder, committed with its licence (``tests/data/animegamer_tokenizer``)."""
    return TOKENIZER


def reference() -> dict:
    return json.loads((FIXTURE / "reference.json").read_text())


def tiny_config(reference_record: dict) -> dict:
    return {**reference_record["config"], "dtype": "float32"}
