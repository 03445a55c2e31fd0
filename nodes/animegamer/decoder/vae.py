"""The CogVideoX 3D VAE (diffusers ``AutoencoderKLCogVideoX``) for decoding AnimeGamer shots.

Accepted sources, by content:

* a diffusers folder (``config.json`` + ``diffusion_pytorch_model*.safetensors``), e.g. THUDM/CogVideoX-2b ``vae/``;
* the SAT ``3d-vae.pt`` the original code loads (or any state dict with ``encoder.*``/``decoder.*`` keys, optionally
  under ``first_stage_model.``), renamed with the key table of diffusers' ``convert_cogvideox_to_diffusers.py``.

Decoding: latents are divided by the scaling factor (1.15258426) and decoded by diffusers, which walks the latent
frames in the same chunks the original script uses ([0:3] then [3:5] for 5 latents, carrying the causal-conv cache
between chunks); spatial tiling is optional for small GPUs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from ....core.errors import InputError, ModelFileError
from ....core.progress import ProgressFn
from ....core.weights import read_state_dict

_SAT_RENAMES = (
    ("block.", "resnets."),
    ("down.", "down_blocks."),
    ("downsample", "downsamplers.0"),
    ("upsample", "upsamplers.0"),
    ("nin_shortcut", "conv_shortcut"),
    ("encoder.mid.block_1", "encoder.mid_block.resnets.0"),
    ("encoder.mid.block_2", "encoder.mid_block.resnets.1"),
    ("decoder.mid.block_1", "decoder.mid_block.resnets.0"),
    ("decoder.mid.block_2", "decoder.mid_block.resnets.1"),
)


def convert_sat_vae_state_dict(sat: dict[str, torch.Tensor], num_up_blocks: int = 4) -> dict[str, torch.Tensor]:
    """SAT ``3d-vae.pt`` keys -> diffusers ``AutoencoderKLCogVideoX`` keys (``loss.*`` dropped, up blocks reversed)."""
    out: dict[str, torch.Tensor] = {}
    for key, value in sat.items():
        key = key.removeprefix("first_stage_model.")
        if key.startswith("loss") or not key.startswith(("encoder.", "decoder.")):
            continue
        new = key
        for old, repl in _SAT_RENAMES:
            new = new.replace(old, repl)
        parts = new.split(".")
        if parts[0] == "decoder" and parts[1] == "up":
            parts[1] = "up_blocks"
            parts[2] = str(num_up_blocks - 1 - int(parts[2]))
            new = ".".join(parts)
        out[new] = value
    return out


def load_vae(
    source: str | os.PathLike[str],
    dtype: torch.dtype = torch.float32,
    device: Any = "cpu",
    config: dict[str, Any] | None = None,
) -> Any:
    """An ``AutoencoderKLCogVideoX`` from a diffusers folder or a SAT ``3d-vae.pt`` (clear error otherwise).

    ``config``: ``AutoencoderKLCogVideoX`` arguments for a SAT file that is not the CogVideoX-2B VAE (the default).
    """
    from diffusers import AutoencoderKLCogVideoX
    from safetensors import SafetensorError

    path = Path(source)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelFileError(
                f"{path} is a folder without config.json; expected a diffusers CogVideoX VAE folder (THUDM/CogVideoX-2b vae/)."
            )
        try:
            vae = AutoencoderKLCogVideoX.from_pretrained(str(path), torch_dtype=dtype)
        except (OSError, ValueError, KeyError, RuntimeError, SafetensorError) as exc:
            raise ModelFileError(f"{path} could not be loaded as a diffusers AutoencoderKLCogVideoX: {exc}") from exc
        return vae.to(device).train(False).requires_grad_(False)
    state = read_state_dict(
        path, select=lambda k: k.removeprefix("first_stage_model.").startswith(("encoder.", "decoder."))
    )
    if not state:
        raise ModelFileError(
            f"{path} holds no VAE tensors (no encoder.*/decoder.* keys). Expected the CogVideoX SAT 3d-vae.pt or a "
            "diffusers vae/ folder."
        )
    converted = convert_sat_vae_state_dict(state)
    vae = AutoencoderKLCogVideoX(**(config or {}))
    expected = {k: tuple(v.shape) for k, v in vae.state_dict().items()}
    missing = sorted(set(expected) - set(converted))
    unexpected = sorted(set(converted) - set(expected))
    wrong = sorted(k for k in set(expected) & set(converted) if tuple(converted[k].shape) != expected[k])
    if missing or unexpected or wrong:
        raise ModelFileError(
            f"{path} does not match the CogVideoX VAE layout (missing {missing[:3]}, unexpected {unexpected[:3]}, "
            f"wrong shape {wrong[:3]}). Is it the CogVideoX-5B/1.5 VAE or another model?"
        )
    vae.load_state_dict(converted, strict=True)
    return vae.to(device=device, dtype=dtype).train(False).requires_grad_(False)


@torch.no_grad()
def decode_latents(
    vae: Any,
    latents: torch.Tensor,
    *,
    tiling: bool = False,
    progress: ProgressFn | None = None,
) -> torch.Tensor:
    """Latents ``[B,T,C,H,W]`` (sampler output) -> frames ``[B, frames, H*8, W*8, 3]`` float32 in 0..1 on the CPU."""
    if latents.ndim != 5:
        raise InputError(
            f"latents have shape {tuple(latents.shape)}; expected [batch, frames, channels, height, width]."
        )
    channels = vae.config.latent_channels
    if latents.shape[2] != channels:
        raise InputError(f"latents have {latents.shape[2]} channels; this VAE decodes {channels}.")
    if tiling:
        vae.enable_tiling()
    else:
        vae.disable_tiling()
    param = next(vae.parameters())
    videos = []
    for index, item in enumerate(latents):
        z = (item.unsqueeze(0).permute(0, 2, 1, 3, 4) / vae.config.scaling_factor).to(
            device=param.device, dtype=param.dtype
        )
        video = vae.decode(z).sample  # [1, 3, frames, H, W] in -1..1
        videos.append(((video.float().clamp(-1, 1) + 1) / 2).permute(0, 2, 3, 4, 1).cpu())
        if progress is not None:
            progress(index + 1, latents.shape[0])
    return torch.cat(videos, dim=0)


@torch.no_grad()
def latent_rgb_map(vae: Any, size: int = 16, seed: int = 0) -> tuple[list[list[float]], list[float]]:
    """A linear latent -> RGB map fitted to this VAE, for cheap live previews of sampler latents.

    The host has no preview factors for CogVideoX latents, so this decodes one ``size`` x ``size`` latent
    frame of seeded unit noise (sampler scale, like real latents) and solves, by least squares, the
    per-channel weights and bias that best predict each 8x8 pixel block's mean colour (in -1..1) from the
    latent under it.  Returns ``(factors [C][3], bias [3])`` in the layout of ComfyUI's latent formats.
    """
    param = next(vae.parameters())
    channels = vae.config.latent_channels
    generator = torch.Generator().manual_seed(seed)
    z = torch.randn((1, channels, 1, size, size), generator=generator)
    video = vae.decode((z / vae.config.scaling_factor).to(device=param.device, dtype=param.dtype)).sample
    pixels = torch.nn.functional.adaptive_avg_pool2d(video[:, :, 0].float().cpu(), size)  # [1, 3, size, size]
    x = torch.cat([z[0, :, 0].reshape(channels, -1).T, torch.ones(size * size, 1)], dim=1)  # [N, C + 1]
    y = pixels[0].reshape(3, -1).T  # [N, 3]
    solution = torch.linalg.lstsq(x, y).solution  # [C + 1, 3]
    return solution[:channels].tolist(), solution[channels].tolist()
