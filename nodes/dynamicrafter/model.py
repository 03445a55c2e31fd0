"""A loaded DynamiCrafter-family model and the operations on it: conditioning, sampling, decoding.

``load_model`` takes a path or a state dict in the original layout.  The result carries the UNet
(``unet(x, t, context, fs)``), the Resampler (``project_image(features)``), and when the file has them the
OpenCLIP image and text towers, the VAE and the schedule.  :func:`sample` is the original DDIM of
``lvdm/models/samplers/ddim.py`` with the hybrid conditioning of ``DiffusionWrapper``: the conditioning
latents are concatenated to the noisy latent on channels at every UNet call.

Conditioning (``scripts/evaluation/inference.py::image_guided_synthesis``):

* image-to-video (DynamiCrafter, godmodeanimation Run): the first frame's latent repeated over all frames;
* interpolation / looping (ToonCrafter, DynamiCrafter interp): the first and last frames' latents at
  frames 0 and T-1, zeros between; the image tokens come from the first keyframe.
* unconditional branch for CFG: the empty prompt and the image tokens of an all-zero (mid-grey) image,
  with the same conditioning latents.

:func:`decode` uses the per-frame LDM decoder, or for ToonCrafter the dual-reference decoder of
:mod:`.dualref_vae`, which needs the two keyframe pictures again.
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
from ..vc2.ddim import ddim_sample
from ..vc2.model import latent_shape, parse_dtype
from ..vc2.schedule import Schedule
from ..vc2.text_encoder import OpenCLIPPenultimate, build_text_encoder
from ..vc2.vae import build_vae, decode_latents, encode_frames
from .checkpoint import read_dynamicrafter
from .dualref_vae import build_dual_reference_vae, decode_dual_reference
from .image_encoder import ImageTokens, build_image_encoder
from .resampler import NAMES as RESAMPLER_NAMES
from .resampler import build_resampler
from .schedule import schedule_from_buffers
from .unet import DynamiCrafterUNet, build_dc_unet

DEFAULT_FRAMES, DEFAULT_HEIGHT, DEFAULT_WIDTH = 16, 320, 512
# the released 512 models' sampling settings (scripts/run.sh of DynamiCrafter and ToonCrafter)
DEFAULTS = {"steps": 50, "cfg": 7.5, "eta": 1.0, "guidance_rescale": 0.7, "spacing": "uniform_trailing"}
DEFAULT_FS = {"image": 24, "interpolate": 10}


@dataclass
class DynamiCrafterModel:
    """What :func:`load_model` returns."""

    unet: DynamiCrafterUNet
    image_proj: Any
    schedule: Schedule
    image_encoder: ImageTokens | None = None
    text_encoder: OpenCLIPPenultimate | None = None
    vae: Any | None = None
    dual_reference_vae: bool = False
    description: str = "DynamiCrafter"

    @property
    def context_dim(self) -> int:
        return self.unet.layout.cross_attention_dim

    @property
    def video_length(self) -> int:
        return int(self.image_proj.config_original["video_length"])

    def project_image(self, features: torch.Tensor) -> torch.Tensor:
        """CLIP image features ``[B,257,E]`` -> image tokens ``[B, num_queries x video_length, D]``."""
        expected = self.image_proj.config_original["embedding_dim"]
        if features.ndim != 3 or features.shape[-1] != expected:
            raise InputError(f"Image features must be [B, tokens, {expected}], got {tuple(features.shape)}.")
        param = self.image_proj.proj_in.weight
        with torch.no_grad():
            return self.image_proj(features.to(param.device, param.dtype))


def split_config(config: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``config`` in the original's names -> (UNet overrides, Resampler overrides).

    Accepts a flat mapping (the two sets of names do not overlap) or the original YAML's nesting
    (``unet_config.params`` / ``image_proj_stage_config.params``, optionally under ``model.params``).
    """
    if not config:
        return {}, {}
    config = dict(config)
    if "model" in config and isinstance(config["model"], Mapping):
        config = dict(config["model"].get("params", config["model"]))
    unet = dict(config.pop("unet_config", {}).get("params", {})) if "unet_config" in config else {}
    proj = (
        dict(config.pop("image_proj_stage_config", {}).get("params", {})) if "image_proj_stage_config" in config else {}
    )
    for key, value in config.items():
        (proj if key in RESAMPLER_NAMES else unet)[key] = value
    return unet, proj


def load_model(
    source: str | os.PathLike[str] | Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    dtype: str | torch.dtype = torch.float32,
    encoders: bool = True,
    vae: bool = True,
) -> DynamiCrafterModel:
    """Load a DynamiCrafter-family checkpoint (see :mod:`.checkpoint`) on the CPU.

    The UNet, Resampler and VAE take ``dtype`` (half-precision UNets keep GroupNorm in fp32 as the original);
    the text and image towers stay fp32 (they run once per clip).
    """
    torch_dtype = parse_dtype(dtype)
    parts = read_dynamicrafter(source)
    if not parts.image_proj:
        raise ModelFileError(f"{parts.description} has no image projection (image_proj_model.*) weights.")
    unet_cfg, proj_cfg = split_config(config)
    if "video_length" not in proj_cfg and "temporal_length" in unet_cfg:
        proj_cfg["video_length"] = unet_cfg["temporal_length"]
    return DynamiCrafterModel(
        unet=build_dc_unet(parts.unet, unet_cfg, torch_dtype),
        image_proj=build_resampler(parts.image_proj, proj_cfg, torch_dtype),
        schedule=schedule_from_buffers(parts.buffers),
        image_encoder=build_image_encoder(parts.image_encoder) if encoders and parts.image_encoder else None,
        text_encoder=build_text_encoder(parts.text) if encoders and parts.text else None,
        vae=_build_vae(parts.vae, parts.dual_reference_vae, torch_dtype) if vae and parts.vae else None,
        dual_reference_vae=parts.dual_reference_vae,
        description=parts.description,
    )


def _build_vae(sd: Mapping[str, Any], dual_reference: bool, dtype: torch.dtype) -> Any:
    """The LDM VAE; for ToonCrafter the same encoder with its dual-reference decoder (see :mod:`.dualref_vae`)."""
    return build_dual_reference_vae(sd, dtype) if dual_reference else build_vae(sd, dtype)


def _need(part: Any, model: DynamiCrafterModel, what: str, prefix: str) -> Any:
    if part is None:
        raise ModelFileError(f"{model.description} has no {what} ({prefix}*) weights: load the full model.ckpt.")
    return part


def encode_text(model: DynamiCrafterModel, texts: str | Sequence[str]) -> torch.Tensor:
    """``[B, 77, D]`` text tokens from the checkpoint's OpenCLIP text tower (``""`` = unconditional)."""
    encoder = _need(model.text_encoder, model, "text encoder", "cond_stage_model.")
    return encoder.encode([texts] if isinstance(texts, str) else list(texts)).float()


def _check_images(images: torch.Tensor, name: str) -> torch.Tensor:
    if images.ndim != 4 or images.shape[-1] not in (3, 4):
        raise InputError(f"{name} must be an IMAGE [B,H,W,3], got shape {tuple(images.shape)}.")
    return images[..., :3].float()


def encode_image_tokens(model: DynamiCrafterModel, images: torch.Tensor) -> torch.Tensor:
    """IMAGE ``[B,H,W,3]`` (0..1) -> image tokens ``[B, Q, D]`` through the OpenCLIP tower and the Resampler."""
    encoder = _need(model.image_encoder, model, "image encoder", "embedder.")
    images = _check_images(images, "image")
    with torch.no_grad():
        features = encoder(images.permute(0, 3, 1, 2).to(encoder.visual.conv1.weight.device) * 2 - 1)
    return model.project_image(features.float())


def conditioning_latents(start: torch.Tensor, frames: int, end: torch.Tensor | None = None) -> torch.Tensor:
    """The 4 extra UNet input channels ``[B,4,T,h,w]`` from keyframe latents ``[B,4,h,w]``.

    Without ``end``: ``start`` repeated over every frame (image-to-video).  With ``end``: ``start`` at frame 0,
    ``end`` at frame T-1 and zeros between (ToonCrafter inbetweening, DynamiCrafter interp/loop).
    """
    if start.ndim != 4:
        raise InputError(f"Keyframe latents must be [B,4,h,w], got {tuple(start.shape)}.")
    if frames < 2 and end is not None:
        raise InputError(f"Inbetweening needs at least 2 frames, got {frames}.")
    if end is None:
        return start.unsqueeze(2).expand(-1, -1, frames, -1, -1).contiguous()
    if end.shape != start.shape:
        raise InputError(f"The two keyframes must have the same size, got {tuple(start.shape)} and {tuple(end.shape)}.")
    out = torch.zeros(*start.shape[:2], frames, *start.shape[2:], dtype=start.dtype, device=start.device)
    out[:, :, 0], out[:, :, -1] = start, end
    return out


def encode_keyframes(
    model: DynamiCrafterModel, images: torch.Tensor, progress: ProgressFn | None = None
) -> torch.Tensor:
    """IMAGE ``[B,H,W,3]`` -> latents ``[B,4,h,w]`` (VAE posterior mean x 0.18215; sizes multiple of 8)."""
    vae = _need(model.vae, model, "VAE", "first_stage_model.")
    images = _check_images(images, "keyframe")
    return encode_frames(vae, images, progress=progress)[0].permute(1, 0, 2, 3)


@dataclass
class Conditioning:
    """Everything one sampling run needs besides the noise: cross-attention contexts and concat latents."""

    context: torch.Tensor
    uncond_context: torch.Tensor | None
    latents: torch.Tensor


def build_conditioning(
    model: DynamiCrafterModel,
    image: torch.Tensor,
    prompt: str = "",
    frames: int = DEFAULT_FRAMES,
    end_image: torch.Tensor | None = None,
    cfg: float = DEFAULTS["cfg"],
    progress: ProgressFn | None = None,
) -> Conditioning:
    """Contexts and conditioning latents for one clip per image row, as ``image_guided_synthesis`` builds them."""
    image = _check_images(image, "image")
    start = encode_keyframes(model, image, progress)
    end = encode_keyframes(model, _check_images(end_image, "end keyframe"), progress) if end_image is not None else None
    if end is not None and end.shape[0] != start.shape[0]:
        end = end.expand(start.shape[0], -1, -1, -1) if end.shape[0] == 1 else end
    text = encode_text(model, [prompt] * image.shape[0])
    tokens = encode_image_tokens(model, image)
    context = torch.cat([text.to(tokens.device, tokens.dtype), tokens], dim=1)
    uncond = None
    if cfg != 1.0:
        empty = encode_text(model, [""] * image.shape[0])
        grey = encode_image_tokens(model, torch.full_like(image, 0.5))  # all zeros in the model's -1..1
        uncond = torch.cat([empty.to(grey.device, grey.dtype), grey], dim=1)
    return Conditioning(context=context, uncond_context=uncond, latents=conditioning_latents(start, frames, end))


def sample(
    model: DynamiCrafterModel,
    context: torch.Tensor,
    uncond_context: torch.Tensor | None,
    cond_latents: torch.Tensor,
    steps: int = DEFAULTS["steps"],
    cfg: float = DEFAULTS["cfg"],
    eta: float = DEFAULTS["eta"],
    fs: int | torch.Tensor = DEFAULT_FS["image"],
    guidance_rescale: float = DEFAULTS["guidance_rescale"],
    spacing: str = DEFAULTS["spacing"],
    x_T: torch.Tensor | None = None,
    seed: int | None = None,
    noise: Sequence[torch.Tensor] | torch.Tensor | None = None,
    progress: ProgressFn | None = None,
    preview: Callable[[torch.Tensor], None] | None = None,
) -> torch.Tensor:
    """The original DDIM (v-prediction, eta, CFG, guidance rescale, ``scale_arr``); latents ``[B,4,T,h,w]``.

    ``cond_latents`` ``[B,4,T,h,w]`` (see :func:`conditioning_latents`) are concatenated to the noisy latent on
    channels at every UNet call.  ``x_T`` defaults to CPU noise from ``seed`` (random when None) so a seed gives
    the same clip on any device; ``noise`` optionally fixes the per-step noises for eta > 0.  ``preview`` gets
    each step's predicted clean latent (for a live preview).
    """
    if cond_latents.ndim != 5:
        raise InputError(f"cond_latents must be [B,4,T,h,w], got {tuple(cond_latents.shape)}.")
    unet = model.unet
    device, dtype = unet.device, unet.dtype
    gen = torch.Generator().manual_seed(random.randrange(2**63) if seed is None else seed)
    if x_T is None:
        x_T = torch.randn(cond_latents.shape, generator=gen)
    if x_T.shape != cond_latents.shape:
        raise InputError(f"x_T {tuple(x_T.shape)} and cond_latents {tuple(cond_latents.shape)} must match.")
    concat = cond_latents.to(device, torch.float32)

    def model_fn(x: torch.Tensor, t: torch.Tensor, c: torch.Tensor, fs_: Any) -> torch.Tensor:
        with torch.no_grad():
            return unet(
                torch.cat([x, concat.expand(x.shape[0], -1, -1, -1, -1)], dim=1), t, c.to(device, dtype), fs_
            ).float()

    fs_t = torch.as_tensor(fs, device=device).reshape(-1).expand(x_T.shape[0])
    return ddim_sample(
        model_fn,
        model.schedule,
        x_T.to(device, torch.float32),
        context.to(device),
        uncond_context.to(device) if uncond_context is not None else None,
        steps=steps,
        cfg=cfg,
        eta=eta,
        fps=fs_t,
        noise=noise,
        generator=gen,
        progress=progress,
        preview=preview,
        parameterization="v",
        guidance_rescale=guidance_rescale,
        spacing=spacing,
        unfixed_last_scale=True,
    )


def decode(
    model: DynamiCrafterModel,
    latents: torch.Tensor,
    chunk: int = 1,
    tiled: bool = False,
    progress: ProgressFn | None = None,
    keyframes: tuple[torch.Tensor, torch.Tensor] | None = None,
    redecode_middle: bool = True,
) -> torch.Tensor:
    """Latents ``[B,4,T,h,w]`` -> IMAGE ``[B*T, 8h, 8w, 3]`` 0..1.

    DynamiCrafter / Run: per-frame decoding, ``chunk`` frames per call (``tiled`` for large frames).
    ToonCrafter: its dual-reference decoder needs ``keyframes`` = (first, last) IMAGEs ``[B or 1, 8h, 8w, 3]``
    (the pictures the clip was conditioned on); it decodes up to 16 frames per call as the original (its
    temporal layers see them together), ``chunk`` and ``tiled`` do not apply; ``redecode_middle`` as
    :func:`.dualref_vae.decode_clip`.
    """
    vae = _need(model.vae, model, "VAE", "first_stage_model.")
    if not model.dual_reference_vae:
        return decode_latents(vae, latents, chunk=chunk, tiled=tiled, progress=progress)
    if keyframes is None:
        raise InputError(
            f"{model.description}: ToonCrafter's decoder reads the two keyframes back. Decode the latent from "
            "DynamiCrafter Inbetween Keyframes (it carries them), or give the first and last keyframe images."
        )
    first, last = (_check_images(k, "keyframe") for k in keyframes)
    return decode_dual_reference(vae, latents, first, last, redecode_middle=redecode_middle, progress=progress)


def fit_image(image: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """IMAGE ``[B,H,W,C]`` -> ``[B,height,width,3]``: scale the short side to fit, centre-crop the rest.

    The original's preprocessing (``Resize(min(size))`` then ``CenterCrop(size)``), so a picture of any shape
    gives the training aspect without stretching the character.
    """
    import torch.nn.functional as F

    image = _check_images(image, "image")
    clip_shape(1, 1, height, width)  # validates the size (multiples of 8)
    _, h, w, _ = image.shape
    scale = max(height / h, width / w)
    new_h, new_w = max(height, round(h * scale)), max(width, round(w * scale))
    x = image.permute(0, 3, 1, 2)
    if (new_h, new_w) != (h, w):
        x = F.interpolate(x, size=(new_h, new_w), mode="bicubic", align_corners=False, antialias=True)
    top, left = (new_h - height) // 2, (new_w - width) // 2
    return x[:, :, top : top + height, left : left + width].permute(0, 2, 3, 1).clamp(0, 1)


def clip_shape(batch: int, frames: int, height: int, width: int) -> tuple[int, ...]:
    """The latent shape of a clip (sizes must be multiples of 8)."""
    return latent_shape(batch, frames, height, width)
