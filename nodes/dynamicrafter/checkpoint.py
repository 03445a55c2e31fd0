"""Find out what a DynamiCrafter-family weight file is (by keys and shapes) and split it by component.

Accepted: DynamiCrafter's ``model.ckpt`` (512, and the interp/loop variants, which share its layout),
ToonCrafter's ``model.ckpt`` (same UNet, dual-reference VAE decoder), the godmodeanimation Run Lightning
checkpoint (``state_dict`` plus optimizer state, which is never read: pickles are memory-mapped and only
the selected tensors touched, the same path as VC2's Lightning fine-tunes), DynamiCrafter 256 files with
``framestride_embed`` (renamed on load as the original does), and ``.safetensors`` conversions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import ModelFileError
from ...core.weights import is_safetensors, read_state_dict, safetensors_shapes
from ..vc2.checkpoint import TEXT_PREFIX, VAE_PREFIX, describe_foreign

UNET_PREFIX = "model.diffusion_model."
IMAGE_PROJ_PREFIX = "image_proj_model."
EMBEDDER_PREFIX = "embedder.model.visual."
BUFFER_KEYS = ("alphas_cumprod", "scale_arr")
_CONV_IN = "input_blocks.0.0.weight"
_DUALREF_MARKER = "decoder.attn_refinement."
EXPECTED = (
    "Expected a DynamiCrafter-family image-to-video checkpoint: DynamiCrafter 512 (or its interp/loop "
    "variant) model.ckpt, ToonCrafter model.ckpt, or the godmodeanimation Run checkpoint "
    "(UNet keys 'model.diffusion_model.*' with 8 input channels, plus 'image_proj_model.*')."
)


@dataclass
class DCParts:
    """The tensors of one checkpoint, split by component, prefixes removed."""

    unet: dict[str, Any]
    image_proj: dict[str, Any] = field(default_factory=dict)
    image_encoder: dict[str, Any] = field(default_factory=dict)
    text: dict[str, Any] = field(default_factory=dict)
    vae: dict[str, Any] = field(default_factory=dict)
    buffers: dict[str, Any] = field(default_factory=dict)
    description: str = "DynamiCrafter checkpoint"

    @property
    def dual_reference_vae(self) -> bool:
        """ToonCrafter's VAE: its decoder reads the keyframes back (``AutoencoderKL_Dualref``)."""
        return any(k.startswith(_DUALREF_MARKER) for k in self.vae)


def _unet_prefix(shapes: Mapping[str, tuple[int, ...]]) -> str | None:
    if UNET_PREFIX + _CONV_IN in shapes:
        return UNET_PREFIX
    if _CONV_IN in shapes and "init_attn.0.proj_in.weight" in shapes:
        return ""
    return None


def check_dynamicrafter(shapes: Mapping[str, tuple[int, ...]], where: str) -> str:
    """The UNet key prefix of a DynamiCrafter-family state dict; otherwise a :class:`ModelFileError`."""
    prefix = _unet_prefix(shapes)
    if prefix is None:
        raise ModelFileError(f"{where} looks like {describe_foreign(shapes)}. {EXPECTED}")
    in_shape = shapes[prefix + _CONV_IN]
    if len(in_shape) != 4 or in_shape[1] != 8:
        kind = (
            "a VideoCrafter2 text-to-video checkpoint (load it with the VC2 loader)"
            if in_shape[1:2] == (4,)
            else (f"a UNet with {in_shape[1] if len(in_shape) > 1 else '?'} input channels")
        )
        raise ModelFileError(f"{where} looks like {kind}. {EXPECTED}")
    if not any(".attn2.to_k_ip." in k for k in shapes):
        raise ModelFileError(f"{where} has an 8-channel UNet without image cross-attention (to_k_ip). {EXPECTED}")
    return prefix


def _selector(prefix: str) -> Any:
    def select(key: str) -> bool:
        return (
            (
                key.startswith(prefix)
                and not key.startswith((IMAGE_PROJ_PREFIX, "embedder.", "cond_stage_model.", VAE_PREFIX))
            )
            or key.startswith((IMAGE_PROJ_PREFIX, EMBEDDER_PREFIX, TEXT_PREFIX, VAE_PREFIX))
            or key in BUFFER_KEYS
        )

    return select


def split_parts(tensors: Mapping[str, Any], prefix: str, description: str) -> DCParts:
    """Split a state dict into UNet / image projection / image tower / text / VAE / schedule tensors."""
    parts = DCParts(unet={}, description=description)
    routes = (
        (IMAGE_PROJ_PREFIX, parts.image_proj),
        (EMBEDDER_PREFIX, parts.image_encoder),
        (TEXT_PREFIX, parts.text),
        (VAE_PREFIX, parts.vae),
    )
    for key, value in tensors.items():
        if key in BUFFER_KEYS:
            parts.buffers[key] = value
            continue
        for route, target in routes:
            if key.startswith(route):
                target[key[len(route) :]] = value
                break
        else:
            if prefix and key.startswith(prefix):
                parts.unet[key[len(prefix) :]] = value
            elif not prefix and "." in key and not key.startswith(("embedder.", "cond_stage_model.")):
                parts.unet[key] = value
    return parts


def _describe(parts: DCParts, name: str) -> str:
    kind = "ToonCrafter" if parts.dual_reference_vae else "DynamiCrafter"
    return f"{kind} checkpoint ({name})"


def read_dynamicrafter(source: str | os.PathLike[str] | Mapping[str, Any]) -> DCParts:
    """Read and split a checkpoint from a path or an in-memory state dict (detected by content)."""
    if isinstance(source, Mapping):
        inner = source.get("state_dict") if isinstance(source.get("state_dict"), Mapping) else source
        shapes = {k: tuple(v.shape) for k, v in inner.items() if hasattr(v, "shape")}
        prefix = check_dynamicrafter(shapes, "The given state dict")
        select = _selector(prefix)
        parts = split_parts({k: v for k, v in inner.items() if select(k)}, prefix, "")
        parts.description = _describe(parts, "state dict")
        return parts
    path = Path(source)
    if not path.is_file():
        raise ModelFileError(f"{path} does not exist or is not a file. {EXPECTED}")
    if path.stat().st_size > 0 and is_safetensors(path):
        prefix = check_dynamicrafter(safetensors_shapes(path), str(path))
        tensors = read_state_dict(path, select=_selector(prefix))
    else:
        everything = read_state_dict(path, opaque_objects=True)
        prefix = check_dynamicrafter(
            {k: tuple(v.shape) for k, v in everything.items() if hasattr(v, "shape")}, str(path)
        )
        select = _selector(prefix)
        tensors = {k: v for k, v in everything.items() if select(k)}
    parts = split_parts(tensors, prefix, "")
    parts.description = _describe(parts, path.name)
    return parts
