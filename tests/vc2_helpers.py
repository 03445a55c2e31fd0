"""Shared helpers for the VC2 tests: the real key manifest on the meta device and the parity fixture."""

from __future__ import annotations

from pathlib import Path

import torch

MANIFEST = Path("/work/shared/reference/manifests/vc2_t2v_512_v2.tsv")
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "vc2"
TINY_WEIGHTS = FIXTURES / "vc2_unet_tiny.safetensors"
PARITY = FIXTURES / "vc2_parity.safetensors"
MANIFEST_COPY = FIXTURES / "vc2_t2v_512_v2.tsv"


def manifest_state_dict() -> dict[str, torch.Tensor]:
    """Every real VC2 key with its real shape, as meta tensors (no memory)."""
    source = MANIFEST_COPY if MANIFEST_COPY.is_file() else MANIFEST
    out: dict[str, torch.Tensor] = {}
    for line in source.read_text().splitlines():
        if not line or line.startswith("#") or line.startswith("key\t"):
            continue
        key, shape = line.split("\t")[:2]
        dims = [] if shape == "scalar" else [int(x) for x in shape.split("x")]
        out[key] = torch.empty(dims, device="meta")
    return out
