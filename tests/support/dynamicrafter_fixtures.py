"""Shared helpers for the DynamiCrafter tests: the parity fixture and the real key manifests on ``meta``."""

from __future__ import annotations

import json
from pathlib import Path

import torch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dynamicrafter"
TINY_WEIGHTS = FIXTURES / "dc_tiny.safetensors"
PARITY = FIXTURES / "dc_parity.safetensors"
TOON_VAE = FIXTURES / "tc_vae_tiny.safetensors"


def fixture_meta() -> dict[str, dict]:
    from safetensors import safe_open

    with safe_open(str(PARITY), "pt") as f:
        return {k: json.loads(v) for k, v in f.metadata().items()}


def manifest_state_dict(name: str) -> dict[str, torch.Tensor]:
    """Every key of a real checkpoint layout with its real shape, as meta tensors (no memory)."""
    from .vc2_fixtures import manifest_state_dict as read_manifest

    return read_manifest(FIXTURES / f"{name}.tsv")


def tiny_full_checkpoint() -> dict[str, torch.Tensor]:
    """A complete tiny DynamiCrafter state dict in the original layout.

    The parity fixture's UNet, Resampler, image tower (a tiny open_clip ViT, width 24 = the Resampler's
    ``embedding_dim``) and schedule, plus VC2's tiny OpenCLIP text tower and LDM VAE (the same components
    at the same prefixes).
    """
    from safetensors.torch import load_file

    from .vc2_fixtures import tiny_full_checkpoint as vc2_tiny

    sd = dict(load_file(TINY_WEIGHTS))
    sd.update({k: v for k, v in vc2_tiny().items() if k.startswith(("cond_stage_model.", "first_stage_model."))})
    return sd


def tiny_tooncrafter_checkpoint() -> dict[str, torch.Tensor]:
    """:func:`tiny_full_checkpoint` with the ToonCrafter parity fixture's VAE (``AutoencoderKL_Dualref``, made by
    the original code): a complete tiny ToonCrafter in the original layout."""
    from safetensors.torch import load_file

    sd = {k: v for k, v in tiny_full_checkpoint().items() if not k.startswith("first_stage_model.")}
    sd.update(load_file(TOON_VAE))
    return sd
