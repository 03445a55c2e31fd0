"""Find out what a weight file is (by keys and shapes, never by name) and split a VC2 checkpoint.

Accepted: the VC2 ``model.ckpt`` (``state_dict`` with ``model.diffusion_model.`` /
``first_stage_model.`` / ``cond_stage_model.model.`` prefixes and schedule buffers), the
godmodeanimation Lightning checkpoints (same ``state_dict`` plus optimizer state, which is never
touched: the pickle is memory-mapped and only the selected tensors are read), and ``.safetensors``
conversions with or without those prefixes, including UNet-only files.  Anything else raises
:class:`ModelFileError` naming what the file looks like.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import ModelFileError
from ...core.weights import is_safetensors, read_state_dict, safetensors_shapes

UNET_PREFIX = "model.diffusion_model."
VAE_PREFIX = "first_stage_model."
TEXT_PREFIX = "cond_stage_model.model."
BUFFER_KEYS = ("alphas_cumprod", "scale_arr")
_UNET_MARKER = "init_attn.0.proj_in.weight"
UNET_GROUPS = (
    "time_embed.",
    "fps_embedding.",
    "input_blocks.",
    "init_attn.",
    "middle_block.",
    "output_blocks.",
    "out.",
)
_TEMPORAL_MARKER = ".0.temopral_conv.conv1.0.weight"


@dataclass
class VC2Parts:
    """The tensors of one VC2 checkpoint, split by component, prefixes removed."""

    unet: dict[str, Any]
    vae: dict[str, Any] = field(default_factory=dict)
    text: dict[str, Any] = field(default_factory=dict)
    buffers: dict[str, Any] = field(default_factory=dict)
    description: str = "VideoCrafter2 checkpoint"


def _unet_prefix(shapes: Mapping[str, tuple[int, ...]]) -> str | None:
    """The prefix in front of the VC2 UNet keys ('' for a bare UNet), or None when there is none."""
    for key in shapes:
        if key.endswith(_UNET_MARKER):
            prefix = key[: -len(_UNET_MARKER)]
            if any(k.startswith(prefix + "input_blocks.") and k.endswith(_TEMPORAL_MARKER) for k in shapes):
                return prefix
    return None


def describe_foreign(shapes: Mapping[str, tuple[int, ...]]) -> str:
    """A human description of a weight file that is not a VC2 text-to-video checkpoint."""
    keys = list(shapes)

    def has(part: str) -> bool:
        return any(part in k for k in keys)

    if not keys:
        return "an empty weight file (no tensors)"
    if has("image_proj_model.") or has("embedder.model.visual") or has("to_k_ip"):
        in_ch = next((s[1] for k, s in shapes.items() if k.endswith("input_blocks.0.0.weight")), None)
        if in_ch == 8 or has("embedder."):
            return "a DynamiCrafter/ToonCrafter image-to-video checkpoint (not supported yet)"
        return "a VideoCrafter1 image-to-video checkpoint with image cross-attention (not supported yet)"
    if has("temopral_conv") or has("temporal_transformer"):
        return "a VideoCrafter-family video UNet whose layout this loader does not know"
    if has("fps_embedding.linear_1") and has("temp_convs"):
        return "a diffusers-format VC2 UNet conversion (e.g. adamdad/videocrafterv2_diffusers; not supported yet)"
    if has("temp_convs") and has("down_blocks."):
        return "a ModelScope/Zeroscope text-to-video UNet in diffusers layout (no fps embedding, not VC2)"
    if has("conditioner.embedders"):
        return "an SDXL image checkpoint"
    k2 = next(
        (s for k, s in shapes.items() if k.endswith("input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight")), None
    )
    if k2 is not None:
        if k2[1] == 768:
            return "a Stable Diffusion 1.x image checkpoint (2-D UNet, CLIP-L context 768)"
        if k2[1] == 1024:
            return "a Stable Diffusion 2.x image checkpoint (2-D UNet, OpenCLIP-H context 1024)"
        return f"a 2-D image diffusion checkpoint (context width {k2[1]})"
    if has("down_blocks.") and has("attentions"):
        return "a diffusers-format image UNet"
    if has("encoder.down.") and has("decoder.up."):
        return "a VAE only (no UNet)"
    if has("transformer.resblocks.") and has("token_embedding"):
        return "a CLIP text encoder only (no UNet)"
    if has("lora_") or has("lora."):
        return "a LoRA (apply it to a loaded model instead)"
    return f"an unknown weight file ({len(keys)} tensors, e.g. {', '.join(keys[:3])})"


EXPECTED = (
    "Expected a VideoCrafter2 text-to-video checkpoint: the original model.ckpt, a godmodeanimation "
    "fine-tune, or a .safetensors conversion of either (UNet keys 'model.diffusion_model.*' or bare "
    "'input_blocks.*' with 'init_attn' and 'temopral_conv')."
)


def check_vc2(shapes: Mapping[str, tuple[int, ...]], where: str) -> str:
    """The UNet key prefix of a VC2 state dict; otherwise a :class:`ModelFileError` saying what it is."""
    prefix = _unet_prefix(shapes)
    if prefix is None:
        raise ModelFileError(f"{where} looks like {describe_foreign(shapes)}. {EXPECTED}")
    if any("to_k_ip" in k or k.startswith(("image_proj_model.", "embedder.")) for k in shapes):
        raise ModelFileError(f"{where} looks like {describe_foreign(shapes)}. {EXPECTED}")
    in_shape = shapes.get(prefix + "input_blocks.0.0.weight", ())
    if len(in_shape) != 4 or in_shape[1] != 4:
        channels = in_shape[1] if len(in_shape) > 1 else "an unknown number of"
        raise ModelFileError(
            f"{where} looks like a VideoCrafter-family UNet with {channels} input channels; VC2 text-to-video "
            "has 4 (8 is DynamiCrafter/ToonCrafter image-to-video, not supported yet). " + EXPECTED
        )
    return prefix


def split_parts(tensors: Mapping[str, Any], prefix: str, description: str) -> VC2Parts:
    """Split a VC2 state dict into UNet / VAE / text / schedule tensors (prefixes removed)."""
    parts = VC2Parts(unet={}, description=description)
    for key, value in tensors.items():
        if key.startswith(prefix) and key[len(prefix) :].startswith(UNET_GROUPS):
            parts.unet[key[len(prefix) :]] = value
        elif key.startswith(VAE_PREFIX):
            parts.vae[key[len(VAE_PREFIX) :]] = value
        elif key.startswith(TEXT_PREFIX):
            parts.text[key[len(TEXT_PREFIX) :]] = value
        elif key in BUFFER_KEYS:
            parts.buffers[key] = value
    return parts


def _wanted(prefix: str) -> Any:
    def select(key: str) -> bool:
        unet = key.startswith(prefix) and key[len(prefix) :].startswith(UNET_GROUPS)
        return unet or key.startswith((VAE_PREFIX, TEXT_PREFIX)) or key in BUFFER_KEYS

    return select


def read_vc2(source: str | os.PathLike[str] | Mapping[str, Any]) -> VC2Parts:
    """Read and split a VC2 checkpoint from a path or an in-memory state dict (detected by content)."""
    if isinstance(source, Mapping):
        inner = source.get("state_dict") if isinstance(source.get("state_dict"), Mapping) else source
        shapes = {k: tuple(v.shape) for k, v in inner.items() if hasattr(v, "shape")}
        prefix = check_vc2(shapes, "The given state dict")
        return split_parts(inner, prefix, "VideoCrafter2 state dict")
    path = Path(source)
    if not path.is_file():
        raise ModelFileError(f"{path} does not exist or is not a file. {EXPECTED}")
    if path.stat().st_size > 0 and is_safetensors(path):
        prefix = check_vc2(safetensors_shapes(path, EXPECTED), str(path))
        tensors = read_state_dict(path, select=_wanted(prefix), expected=EXPECTED)
    else:
        everything = read_state_dict(path, opaque_objects=True, expected=EXPECTED)
        prefix = check_vc2({k: tuple(v.shape) for k, v in everything.items() if hasattr(v, "shape")}, str(path))
        tensors = {k: v for k, v in everything.items() if _wanted(prefix)(k)}
    kind = (
        "VideoCrafter2 UNet-only weights"
        if not any(k.startswith(VAE_PREFIX) for k in tensors)
        else "VideoCrafter2 checkpoint"
    )
    return split_parts(tensors, prefix, f"{kind} ({path.name})")
