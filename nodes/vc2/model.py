"""A loaded VC2 model (UNet, schedule, optional VAE and text encoder) and the operations on it.

``load_model`` accepts a path or a state-dict mapping (UNet-only too: the schedule and ``scale_arr``
are VC2's fixed ones when the file does not carry them).  ``sample`` seeds its noise on the CPU so a
seed gives the same clip on any device, then runs the faithful DDIM of :mod:`.ddim`.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ...core.errors import InputError, ModelFileError
from ...core.progress import ProgressFn
from .checkpoint import read_vc2
from .ddim import ddim_sample, q_sample
from .schedule import Schedule, ddim_timesteps, schedule_from_buffers
from .text_encoder import OpenCLIPPenultimate, build_text_encoder
from .unet import VC2UNet, build_unet
from .vae import build_vae, decode_latents

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
DEFAULT_FRAMES, DEFAULT_HEIGHT, DEFAULT_WIDTH = 16, 320, 512
LATENT_FACTOR = 8


@dataclass
class VC2Model:
    """What :func:`load_model` returns; ``unet(x, timesteps, context, fps)`` gives the noise prediction."""

    unet: VC2UNet
    schedule: Schedule
    vae: Any | None = None
    text_encoder: OpenCLIPPenultimate | None = None
    description: str = "VideoCrafter2"

    @property
    def context_dim(self) -> int:
        return self.unet.layout.cross_attention_dim

    @property
    def latent_channels(self) -> int:
        return self.unet.layout.in_channels


def parse_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}.")
    return DTYPES[dtype]


def load_model(
    source: str | os.PathLike[str] | Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    dtype: str | torch.dtype = torch.float32,
    text_encoder: bool = True,
    vae: bool = True,
) -> VC2Model:
    """Load a VC2 checkpoint (see :mod:`.checkpoint` for the accepted formats) on the CPU.

    The UNet and VAE take ``dtype`` (half-precision UNets keep GroupNorm in fp32 as the original);
    the text encoder stays fp32 (it runs once per prompt and its LayerNorms are fp32-sensitive).
    """
    torch_dtype = parse_dtype(dtype)
    parts = read_vc2(source)
    return VC2Model(
        unet=build_unet(parts.unet, config, torch_dtype),
        schedule=schedule_from_buffers(parts.buffers),
        vae=build_vae(parts.vae, torch_dtype) if vae and parts.vae else None,
        text_encoder=build_text_encoder(parts.text) if text_encoder and parts.text else None,
        description=parts.description,
    )


def encode_text(model: VC2Model, texts: str | Sequence[str]) -> torch.Tensor:
    """``[B, 77, 1024]`` context for ``texts`` with the checkpoint's own OpenCLIP weights (CPU, fp32)."""
    if model.text_encoder is None:
        raise ModelFileError(
            f"{model.description} has no text encoder (cond_stage_model) weights: load a full VC2 checkpoint, "
            "or pass a ComfyUI CONDITIONING from an SD 2.x CLIPLoader instead."
        )
    batch = [texts] if isinstance(texts, str) else list(texts)
    return model.text_encoder.encode(batch).float()


def decode(
    model: VC2Model, latents: torch.Tensor, chunk: int = 1, tiled: bool = False, progress: ProgressFn | None = None
) -> torch.Tensor:
    """Latents ``[B,4,T,h,w]`` -> IMAGE ``[B*T, 8h, 8w, 3]`` (0..1, CPU), ``chunk`` frames per VAE call."""
    if model.vae is None:
        raise ModelFileError(f"{model.description} has no VAE (first_stage_model) weights: load a full VC2 checkpoint.")
    return decode_latents(model.vae, latents, chunk=chunk, tiled=tiled, progress=progress)


def latent_shape(batch: int, frames: int, height: int, width: int, channels: int = 4) -> tuple[int, ...]:
    """The latent shape for a clip, or an :class:`InputError` for impossible sizes."""
    if frames < 1:
        raise InputError(f"frames must be at least 1, got {frames}.")
    if batch < 1:
        raise InputError(f"batch must be at least 1, got {batch}.")
    if width % LATENT_FACTOR or height % LATENT_FACTOR or width < LATENT_FACTOR or height < LATENT_FACTOR:
        raise InputError(
            f"width and height must be positive multiples of 8 (the VAE downsamples by 8), got {width}x{height}; "
            f"for example use {max(8, width // 8 * 8)}x{max(8, height // 8 * 8)}."
        )
    return (batch, channels, frames, height // LATENT_FACTOR, width // LATENT_FACTOR)


def skipped_steps(steps: int, denoise: float) -> int:
    """How many of the noisiest DDIM steps an init latent with ``denoise`` skips (always runs at least one)."""
    return min(steps - 1, int(round(steps * (1.0 - denoise))))


def _expand(context: torch.Tensor, batch: int, name: str) -> torch.Tensor:
    if context.ndim != 3:
        raise InputError(f"{name} must be [B, tokens, width], got {tuple(context.shape)}.")
    if context.shape[0] == batch:
        return context
    if context.shape[0] == 1:
        return context.expand(batch, -1, -1)
    raise InputError(f"{name} has batch {context.shape[0]} but the latents have batch {batch}.")


def sample(
    model: VC2Model,
    context: torch.Tensor,
    uncond_context: torch.Tensor | None,
    steps: int = 50,
    cfg: float = 12.0,
    eta: float = 1.0,
    fps: int = 16,
    x_T: torch.Tensor | None = None,
    seed: int | None = None,
    noise: Sequence[torch.Tensor] | torch.Tensor | None = None,
    shape: Sequence[int] | None = None,
    init_latent: torch.Tensor | None = None,
    denoise: float = 1.0,
    progress: ProgressFn | None = None,
    preview: Callable[[torch.Tensor], None] | None = None,
) -> torch.Tensor:
    """Sample latents ``[B,4,T,h,w]`` (CPU, fp32) with VC2's DDIM; see :func:`.ddim.ddim_sample`.

    Without ``x_T`` the start noise is drawn on the CPU from ``seed`` (a random seed when None) with
    ``shape`` (default one 16-frame 320x512 clip per context row); per-step noise follows from the same
    generator unless ``noise`` is given.  ``init_latent`` with ``denoise < 1`` starts from that latent
    noised to the matching timestep (skipping the first ``steps * (1 - denoise)`` steps).
    ``preview`` receives each step's denoised estimate (for a live preview) before ``progress``.
    """
    if not 0.0 < denoise <= 1.0:
        raise InputError(f"denoise must be in (0, 1], got {denoise}.")
    ddim_timesteps(steps, model.schedule.num_timesteps)
    generator = torch.Generator().manual_seed(seed if seed is not None else random.SystemRandom().randrange(2**63))
    if x_T is None:
        if init_latent is not None:
            shape = tuple(init_latent.shape)
        elif shape is None:
            shape = latent_shape(context.shape[0], DEFAULT_FRAMES, DEFAULT_HEIGHT, DEFAULT_WIDTH, model.latent_channels)
        x_T = torch.randn(tuple(shape), generator=generator, dtype=torch.float32)
    if x_T.ndim != 5 or x_T.shape[1] != model.latent_channels:
        raise InputError(f"x_T must be [B,{model.latent_channels},T,H,W], got {tuple(x_T.shape)}.")
    start_step = 0
    if init_latent is not None and denoise < 1.0:
        if tuple(init_latent.shape) != tuple(x_T.shape):
            raise InputError(f"init latent {tuple(init_latent.shape)} and noise {tuple(x_T.shape)} differ in shape.")
        start_step = skipped_steps(steps, denoise)
        t_start = int(ddim_timesteps(steps, model.schedule.num_timesteps)[steps - 1 - start_step])
        x_T = q_sample(model.schedule, init_latent.float(), t_start, x_T)
    batch = x_T.shape[0]
    device, dtype = model.unet.device, model.unet.dtype
    cond = _expand(context, batch, "context").to(device=device, dtype=dtype)
    uncond = (
        _expand(uncond_context, batch, "uncond_context").to(device=device, dtype=dtype)
        if uncond_context is not None
        else None
    )
    with torch.no_grad():
        latents = ddim_sample(
            model.unet,
            model.schedule,
            x_T.to(device=device, dtype=torch.float32),
            cond,
            uncond,
            steps=steps,
            cfg=cfg,
            eta=eta,
            fps=fps,
            noise=noise,
            generator=generator,
            start_step=start_step,
            progress=progress,
            preview=preview,
        )
    return latents.float().cpu()
