"""One AnimeGamer shot: representation (+ motion level) -> latents -> frames, the way the released script does it.

Defaults are the released ones: 17 frames (5 latents) at 480x720, 50 steps, released dynamic CFG with scale 6,
flow scalar from ``inference_Decoder.py``'s level table, 8 fps.  The unconditional half is E_a on zeros.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ....core.errors import InputError
from ....core.progress import ProgressFn
from ...motion.levels import DEFAULT_TABLE, released_flow
from .sampler import sample
from .vae import decode_latents

VAE_SPATIAL = 8
VAE_TEMPORAL = 4
FPS = 8


@dataclass
class Shot:
    """Sampler latents ``[B,T,C,H,W]``, decoded frames ``[B,frames,H,W,3]`` in 0..1 (None without a VAE), the flow used."""

    latents: torch.Tensor
    frames: torch.Tensor | None
    flow: float
    fps: int = FPS


def latent_shape(decoder: Any, num_frames: int, height: int, width: int) -> tuple[int, int, int, int]:
    """(T, C, H, W) of the latents for a shot of ``num_frames`` frames at ``height`` x ``width`` pixels."""
    step = VAE_SPATIAL * decoder.config.patch_size
    if num_frames < 1 or (num_frames - 1) % VAE_TEMPORAL:
        raise InputError(f"num_frames={num_frames}; it must be 4k+1 (the VAE packs 4 frames per latent), e.g. 17.")
    if height % step or width % step or height <= 0 or width <= 0:
        raise InputError(f"{width}x{height} is not a multiple of {step} pixels; the released size is 720x480.")
    return (
        (num_frames - 1) // VAE_TEMPORAL + 1,
        decoder.config.in_channels,
        height // VAE_SPATIAL,
        width // VAE_SPATIAL,
    )


def decode_shot(
    decoder: Any,
    representation: torch.Tensor,
    *,
    vae: Any = None,
    motion_level: int | None = 3,
    flow: float | None = None,
    flow_table: str = DEFAULT_TABLE,
    steps: int = 50,
    cfg_mode: str = "released",
    cfg: float = 6.0,
    seed: int = 0,
    num_frames: int = 17,
    height: int = 480,
    width: int = 720,
    vae_tiling: bool = False,
    device: Any = None,
    progress: ProgressFn | None = None,
    preview: Callable[[torch.Tensor], None] | None = None,
) -> Shot:
    """Generate one shot; ``flow`` (raw motion scope) overrides ``motion_level`` when given.

    ``device``: where the sampler's tensors live (default: the decoder's device; give the GPU when the decoder
    is under sequential CPU offload).  The VAE is moved there after sampling; the caller moves it back.
    Without a ``vae`` only the latents are made (a host may place the VAE itself and call
    :func:`.vae.decode_latents`).  ``preview`` gets each step's denoised latents ``[B, T, C, H, W]``.
    """
    if representation.ndim == 2:
        representation = representation.unsqueeze(0)
    decoder.check_tokens(representation)
    scope = (
        float(flow) if flow is not None else released_flow(motion_level if motion_level is not None else 5, flow_table)
    )
    shape = latent_shape(decoder, num_frames, height, width)
    total = steps + (representation.shape[0] if vae is not None else 0)

    def step_progress(done: int, _: int) -> None:
        if progress is not None:
            progress(done, total)

    device = decoder.device if device is None else torch.device(device)
    with torch.no_grad():
        latents = sample(
            decoder.transformer,
            representation.to(device=device, dtype=decoder.dtype),
            decoder.unconditional_tokens(1).to(device),
            scope,
            shape,
            steps=steps,
            seed=seed,
            cfg_mode=cfg_mode,
            cfg=cfg,
            device=device,
            progress=step_progress,
            preview=preview,
        )
    frames = None
    if vae is not None:

        def vae_progress(done: int, _: int) -> None:
            step_progress(steps + done, total)

        vae.to(device)  # only now: while sampling, the VAE's memory stays free for the transformer
        frames = decode_latents(vae, latents, tiling=vae_tiling, progress=vae_progress)
    return Shot(latents=latents.float().cpu(), frames=frames, flow=scope)
