"""Shared helpers for the DynamiCrafter tests: the parity fixture and the real key manifests on ``meta``."""

from __future__ import annotations

import json
from pathlib import Path

import torch

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "dynamicrafter"
TINY_WEIGHTS = FIXTURES / "dc_tiny.safetensors"
PARITY = FIXTURES / "dc_parity.safetensors"


def fixture_meta() -> dict[str, dict]:
    from safetensors import safe_open

    with safe_open(str(PARITY), "pt") as f:
        return {k: json.loads(v) for k, v in f.metadata().items()}


def manifest_state_dict(name: str) -> dict[str, torch.Tensor]:
    """Every key of a real checkpoint layout with its real shape, as meta tensors (no memory)."""
    out: dict[str, torch.Tensor] = {}
    for line in (FIXTURES / f"{name}.tsv").read_text().splitlines():
        if not line or line.startswith("#") or line.startswith("key\t"):
            continue
        key, shape = line.split("\t")[:2]
        dims = [] if shape == "scalar" else [int(x) for x in shape.split("x")]
        out[key] = torch.empty(dims, device="meta")
    return out
