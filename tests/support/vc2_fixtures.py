"""Shared helpers for the VC2 tests: the real key manifest on the meta device and the parity fixture."""

from __future__ import annotations

from pathlib import Path

import torch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vc2"
TINY_WEIGHTS = FIXTURES / "vc2_unet_tiny.safetensors"
PARITY = FIXTURES / "vc2_parity.safetensors"
MANIFEST = FIXTURES / "vc2_t2v_512_v2.tsv"  # copy of shared/reference/manifests/vc2_t2v_512_v2.tsv


def manifest_state_dict(manifest: Path = MANIFEST) -> dict[str, torch.Tensor]:
    """Every key of a real checkpoint layout (VC2's unless told) with its real shape, as meta tensors (no memory)."""
    out: dict[str, torch.Tensor] = {}
    for line in manifest.read_text().splitlines():
        if not line or line.startswith("#") or line.startswith("key\t"):
            continue
        key, shape = line.split("\t")[:2]
        dims = [] if shape == "scalar" else [int(x) for x in shape.split("x")]
        out[key] = torch.empty(dims, device="meta")
    return out


def tiny_full_checkpoint() -> dict[str, torch.Tensor]:
    """A complete tiny VC2 state dict in the original layout: fixture UNet + tiny OpenCLIP tower + tiny LDM VAE.

    The VAE keys are the real manifest's with every channel width divided by 4 (128/256/512 -> 32/64/128),
    so the LDM layout is the real one at a size that decodes in milliseconds.
    """
    from open_clip.transformer import TextTransformer
    from safetensors.torch import load_file

    sd = dict(load_file(TINY_WEIGHTS))
    gen = torch.Generator().manual_seed(5)
    torch.manual_seed(5)
    tower = TextTransformer(context_length=77, vocab_size=49408, width=32, heads=1, layers=2, output_dim=32)
    sd.update({f"cond_stage_model.model.{k}": v for k, v in tower.state_dict().items()})
    for key, meta in manifest_state_dict().items():
        if not key.startswith("first_stage_model."):
            continue
        shape = [d // 4 if d in (128, 256, 512) else d for d in meta.shape]
        if len(shape) == 1:
            sd[key] = torch.ones(shape) if key.endswith("weight") else torch.zeros(shape)
        else:
            fan_in = 1
            for d in shape[1:]:
                fan_in *= d
            sd[key] = torch.randn(shape, generator=gen) / fan_in**0.5
    return sd
