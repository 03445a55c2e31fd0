"""A preview clip sampled with the LoRA as trained so far (VC2's own DDIM sampler and VAE decode)."""

from __future__ import annotations

from typing import Any

import torch

from ..core.progress import ProgressFn


def preview_clip(
    run: Any,
    prompt: str,
    width: int = 256,
    height: int = 256,
    frames: int = 8,
    steps: int = 25,
    cfg: float = 12.0,
    seed: int = 123,
    progress: ProgressFn | None = None,
) -> torch.Tensor:
    """IMAGE ``[frames, height, width, 3]`` for ``prompt`` from the run's current (unmerged) adapters."""
    from ..nodes.vc2.model import decode, encode_text, latent_shape, sample

    model = run.preview_model()
    context = encode_text(model, [prompt, ""])
    shape = latent_shape(1, frames, height, width, model.latent_channels)
    latents = sample(
        model,
        context[:1],
        context[1:],
        steps=steps,
        cfg=cfg,
        eta=1.0,
        fps=run.clip_fps,
        seed=seed,
        shape=shape,
        progress=progress,
    )
    return decode(model, latents)
