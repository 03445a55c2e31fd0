"""A tiny VC2 with VAE and text encoder (random weights, real architecture) and a synthetic concept dataset."""

from __future__ import annotations

import numpy as np
import torch
from gameanim import api
from gameanim.nodes.vc2.model import VC2Model
from gameanim.nodes.vc2.text_encoder import OpenCLIPPenultimate
from PIL import Image

from .vc2_fixtures import TINY_WEIGHTS


def tiny_vae(seed: int = 1):
    from diffusers import AutoencoderKL

    torch.manual_seed(seed)
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        block_out_channels=(8, 8, 8, 8),
        down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4,
        layers_per_block=1,
        norm_num_groups=8,
        scaling_factor=0.18215,
    )
    return vae.requires_grad_(False).train(False)


def tiny_text_encoder(seed: int = 2) -> OpenCLIPPenultimate:
    torch.manual_seed(seed)
    encoder = OpenCLIPPenultimate(width=32, layers=2, heads=2, vocab=49408, context_length=77, proj_dim=32)
    return encoder.requires_grad_(False).train(False)


def tiny_model(seed_offset: float = 0.0) -> VC2Model:
    """The tiny VC2 fixture UNet (optionally with every weight shifted: a 'different base')."""
    base = api.load_vc2(str(TINY_WEIGHTS))
    if seed_offset:
        gen = torch.Generator().manual_seed(7)
        with torch.no_grad():
            for p in base.unet.parameters():
                p.add_(seed_offset * torch.randn(p.shape, generator=gen))
    return VC2Model(unet=base.unet, schedule=base.schedule, vae=tiny_vae(), text_encoder=tiny_text_encoder())


def write_concept_folder(folder, count: int = 4, size: int = 64) -> None:
    """A 'character': a red block with a yellow head on white, in a few positions, with captions."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(count):
        img = np.full((size, size + 16 * (i % 2), 3), 255, dtype=np.uint8)
        x, y = rng.integers(4, 24, size=2)
        img[y + 12 : y + 36, x : x + 16] = (200, 30, 30)
        img[y : y + 12, x + 2 : x + 14] = (240, 220, 40)
        Image.fromarray(img).save(folder / f"hero_{i}.png")
        if i % 2 == 0:
            (folder / f"hero_{i}.txt").write_text(f"pose {i}, standing")
