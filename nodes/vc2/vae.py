"""VC2's KL-f8 VAE as diffusers ``AutoencoderKL``, converted from the LDM keys by diffusers itself.

Decoding goes frame by frame (in chunks) as the original ``decode_first_stage_2DAE`` does, which bounds
memory to one chunk of frames; optional diffusers tiling bounds it further for large frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ...core.attention import plain_processors
from ...core.errors import InputError, ModelFileError
from ...core.progress import ProgressFn, no_progress

SCALE_FACTOR = 0.18215


def vae_config(sd: Mapping[str, torch.Tensor]) -> dict[str, Any]:
    """``AutoencoderKL`` arguments read from the LDM VAE shapes (ch 128, mult 1,2,4,4 for VC2)."""
    try:
        levels = sorted({int(k.split(".")[2]) for k in sd if k.startswith("encoder.down.")})
        channels = tuple(int(sd[f"encoder.down.{i}.block.0.conv2.weight"].shape[0]) for i in levels)
        layers = len({k.split(".")[4] for k in sd if k.startswith("encoder.down.0.block.")})
        return {
            "in_channels": int(sd["encoder.conv_in.weight"].shape[1]),
            "out_channels": int(sd["decoder.conv_out.weight"].shape[0]),
            "latent_channels": int(sd["post_quant_conv.weight"].shape[1]),
            "block_out_channels": channels,
            "down_block_types": ("DownEncoderBlock2D",) * len(channels),
            "up_block_types": ("UpDecoderBlock2D",) * len(channels),
            "layers_per_block": layers,
            "norm_num_groups": 32,
            "scaling_factor": SCALE_FACTOR,
        }
    except (KeyError, IndexError, ValueError) as exc:
        raise ModelFileError(
            f"The checkpoint's VAE (first_stage_model) is incomplete or not an LDM KL VAE ({exc})."
        ) from exc


def build_vae(sd: Mapping[str, torch.Tensor], dtype: torch.dtype = torch.float32) -> Any:
    """diffusers ``AutoencoderKL`` from ``first_stage_model.*`` tensors (prefix removed)."""
    from diffusers import AutoencoderKL
    from diffusers.loaders.single_file_utils import convert_ldm_vae_checkpoint

    config = vae_config(sd)
    converted = convert_ldm_vae_checkpoint(dict(sd), config)
    with torch.device("meta"):
        vae = AutoencoderKL(**config)
    result = vae.load_state_dict(converted, strict=False, assign=True)
    if result.missing_keys or result.unexpected_keys:
        raise ModelFileError(
            f"The VAE weights do not fit: missing {result.missing_keys[:3]}, unexpected {result.unexpected_keys[:3]}."
        )
    plain_processors(vae)
    return vae.to(dtype=dtype).train(False).requires_grad_(False)


def decode_latents(
    vae: Any,
    latents: torch.Tensor,
    chunk: int = 1,
    tiled: bool = False,
    progress: ProgressFn | None = None,
) -> torch.Tensor:
    """``[B,4,T,h,w]`` latents -> IMAGE ``[B*T, 8h, 8w, 3]`` float32 0..1 on the CPU, ``chunk`` frames at a time."""
    if latents.ndim != 5:
        raise InputError(f"VC2 latents must be [B,4,T,H,W], got {tuple(latents.shape)}.")
    if chunk < 1:
        raise InputError(f"chunk must be >= 1, got {chunk}.")
    if tiled:
        vae.enable_tiling()
    else:
        vae.disable_tiling()
    device, dtype = vae.device, vae.dtype
    frames = latents.permute(0, 2, 1, 3, 4).reshape(-1, *latents.shape[1:2], *latents.shape[3:])
    report = progress or no_progress
    out = []
    total = (frames.shape[0] + chunk - 1) // chunk
    with torch.no_grad():
        for i, start in enumerate(range(0, frames.shape[0], chunk)):
            z = frames[start : start + chunk].to(device=device, dtype=dtype) / SCALE_FACTOR
            image = vae.decode(z, return_dict=False)[0].float().clamp(-1, 1)
            out.append(((image + 1) / 2).permute(0, 2, 3, 1).cpu())
            report(i + 1, total)
    return torch.cat(out)


def encode_frames(vae: Any, images: torch.Tensor, chunk: int = 1, progress: ProgressFn | None = None) -> torch.Tensor:
    """IMAGE ``[T,H,W,3]`` 0..1 -> latents ``[1,4,T,H/8,W/8]`` (posterior mean, scaled by 0.18215)."""
    if images.ndim != 4 or images.shape[-1] != 3:
        raise InputError(f"Expected an IMAGE batch [T,H,W,3], got {tuple(images.shape)}.")
    if images.shape[1] % 8 or images.shape[2] % 8:
        raise InputError(f"Image height and width must be multiples of 8, got {images.shape[1]}x{images.shape[2]}.")
    report = progress or no_progress
    out = []
    total = (images.shape[0] + chunk - 1) // chunk
    with torch.no_grad():
        for i, start in enumerate(range(0, images.shape[0], chunk)):
            x = images[start : start + chunk].permute(0, 3, 1, 2).to(device=vae.device, dtype=vae.dtype) * 2 - 1
            out.append(vae.encode(x).latent_dist.mode().float().cpu() * SCALE_FACTOR)
            report(i + 1, total)
    latents = torch.cat(out)
    return latents.permute(1, 0, 2, 3).unsqueeze(0)
