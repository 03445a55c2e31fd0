"""VC2's 3-D UNet as diffusers' ``UNet3DConditionModel`` plus the fps embedding VC2 adds.

The original ``openaimodel3d.UNetModel`` and diffusers' ``UNet3DConditionModel`` are the same network
(ResBlock + temporal conv, spatial transformer, temporal transformer, an initial temporal attention)
except for one term: VC2 adds ``fps_embedding(timestep_embedding(fps))`` to the time embedding.  We
build the diffusers model from the shapes in the checkpoint, load it through the explicit key map
below, and run it with our own forward pass (:mod:`.unet_forward`), which adds the fps term to the time
embedding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ...core.attention import plain_processors
from ...core.errors import InputError, ModelFileError
from .unet_forward import unet_forward

NORM_GROUPS = 32
INIT_ATTN_HEADS = 8  # VC2 and diffusers both build the initial temporal attention with 8 heads

# ResBlock sub-modules: VC2 (openaimodel3d.ResBlock) -> diffusers (ResnetBlock2D)
_RESNET_PARTS = {
    "in_layers.0": "norm1",
    "in_layers.2": "conv1",
    "emb_layers.1": "time_emb_proj",
    "out_layers.0": "norm2",
    "out_layers.3": "conv2",
    "skip_connection": "conv_shortcut",
}
_TEMPORAL_CONV = "temopral_conv."  # sic: the key name in every VC2 checkpoint


@dataclass(frozen=True)
class UNetLayout:
    """The UNet hyper-parameters, read from tensor shapes (see :func:`infer_layout`)."""

    in_channels: int
    out_channels: int
    block_out_channels: tuple[int, ...]
    attention_levels: tuple[bool, ...]
    layers_per_block: int
    cross_attention_dim: int
    attention_head_dim: int
    extra: dict[str, Any] = field(default_factory=dict)

    def diffusers_config(self) -> dict[str, Any]:
        down = tuple("CrossAttnDownBlock3D" if a else "DownBlock3D" for a in self.attention_levels)
        up = tuple("CrossAttnUpBlock3D" if a else "UpBlock3D" for a in reversed(self.attention_levels))
        config: dict[str, Any] = {
            "in_channels": self.in_channels,
            "out_channels": self.out_channels,
            "block_out_channels": self.block_out_channels,
            "down_block_types": down,
            "up_block_types": up,
            "layers_per_block": self.layers_per_block,
            "cross_attention_dim": self.cross_attention_dim,
            "attention_head_dim": self.attention_head_dim,
            "norm_num_groups": NORM_GROUPS,
        }
        config.update(self.extra)
        return config


def _shape(sd: Mapping[str, Any], key: str) -> tuple[int, ...]:
    if key not in sd:
        raise ModelFileError(f"The VC2 UNet weights have no '{key}': the file is incomplete or not a VC2 UNet.")
    return tuple(sd[key].shape)


def _input_block_ids(sd: Mapping[str, Any], prefix: str) -> list[int]:
    found = {int(m.group(1)) for k in sd if (m := re.match(re.escape(prefix) + r"(\d+)\.", k))}
    return sorted(found)


def infer_layout(sd: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> UNetLayout:
    """Hyper-parameters of a VC2-layout UNet state dict (no prefix), from its shapes.

    Levels are the runs of ResBlocks between the ``op`` downsamplers of ``input_blocks``; a level has
    attention when its ResBlocks are followed by a transformer (``.1.proj_in``).  The head width is the
    initial temporal attention's inner width over its fixed 8 heads (64 for every released VC2).
    ``config`` overrides any inferred value (and may add other ``UNet3DConditionModel`` arguments).
    """
    levels: list[list[int]] = [[]]
    attention: list[bool] = [False]
    for idx in _input_block_ids(sd, "input_blocks.")[1:]:
        if f"input_blocks.{idx}.0.op.weight" in sd:
            levels.append([])
            attention.append(False)
            continue
        levels[-1].append(_shape(sd, f"input_blocks.{idx}.0.in_layers.2.weight")[0])
        if f"input_blocks.{idx}.1.proj_in.weight" in sd:
            attention[-1] = True
    counts = {len(level) for level in levels}
    if len(counts) != 1 or 0 in counts:
        raise ModelFileError(f"VC2 UNet levels have uneven ResBlock counts {[len(x) for x in levels]}: not a VC2 UNet.")
    first_attn = next(
        (i for i in _input_block_ids(sd, "input_blocks.") if f"input_blocks.{i}.1.proj_in.weight" in sd), None
    )
    cross_dim = (
        _shape(sd, f"input_blocks.{first_attn}.1.transformer_blocks.0.attn2.to_k.weight")[1]
        if first_attn is not None
        else _shape(sd, "middle_block.1.transformer_blocks.0.attn2.to_k.weight")[1]
    )
    values: dict[str, Any] = {
        "in_channels": _shape(sd, "input_blocks.0.0.weight")[1],
        "out_channels": _shape(sd, "out.2.weight")[0],
        "block_out_channels": tuple(level[0] for level in levels),
        "attention_levels": tuple(attention),
        "layers_per_block": counts.pop(),
        "cross_attention_dim": cross_dim,
        "attention_head_dim": _shape(sd, "init_attn.0.proj_in.weight")[0] // INIT_ATTN_HEADS,
    }
    extra: dict[str, Any] = {}
    for key, value in (config or {}).items():
        if key in values:
            values[key] = tuple(value) if isinstance(value, list) else value
        else:
            extra[key] = value
    return UNetLayout(**values, extra=extra)


def _map_resnet(rest: str, target: str, temporal_index: str) -> str:
    """``rest`` is the part after the ResBlock's own prefix; ``target`` the diffusers block prefix."""
    if rest.startswith(_TEMPORAL_CONV):
        return f"{target}.temp_convs.{temporal_index}.{rest[len(_TEMPORAL_CONV) :]}"
    for old, new in _RESNET_PARTS.items():
        if rest.startswith(old + "."):
            return f"{target}.resnets.{temporal_index}.{new}{rest[len(old) :]}"
    raise KeyError(rest)


def vc2_to_diffusers_keys(sd: Mapping[str, Any], layout: UNetLayout) -> dict[str, str]:
    """The explicit key map VC2 ``model.diffusion_model.*`` (prefix removed) -> diffusers + fps keys.

    Returns ``{vc2_key: our_key}`` for every key; an unknown key raises :class:`ModelFileError`.
    """
    n_res = layout.layers_per_block
    n_levels = len(layout.block_out_channels)
    # input_blocks index -> (level, position) ; downsamplers are the extra index after each level
    input_slots: dict[int, tuple[str, int, int]] = {}
    idx = 1
    for level in range(n_levels):
        for r in range(n_res):
            input_slots[idx] = ("res", level, r)
            idx += 1
        if level < n_levels - 1:
            input_slots[idx] = ("down", level, 0)
            idx += 1
    mapping: dict[str, str] = {}
    for key in sd:
        mapping[key] = _map_key(key, input_slots, layout)
    return mapping


def _map_key(key: str, input_slots: dict[int, tuple[str, int, int]], layout: UNetLayout) -> str:
    simple = {
        "time_embed.0.": "unet.time_embedding.linear_1.",
        "time_embed.2.": "unet.time_embedding.linear_2.",
        "fps_embedding.0.": "fps_embedding.linear_1.",
        "fps_embedding.2.": "fps_embedding.linear_2.",
        "input_blocks.0.0.": "unet.conv_in.",
        "init_attn.0.": "unet.transformer_in.",
        "out.0.": "unet.conv_norm_out.",
        "out.2.": "unet.conv_out.",
    }
    for old, new in simple.items():
        if key.startswith(old):
            return new + key[len(old) :]
    n_levels = len(layout.block_out_channels)
    n_up = layout.layers_per_block + 1
    try:
        if m := re.match(r"input_blocks\.(\d+)\.(\d+)\.(.+)", key):
            block, part, rest = int(m.group(1)), int(m.group(2)), m.group(3)
            kind, level, r = input_slots[block]
            target = f"unet.down_blocks.{level}"
            if kind == "down":
                return f"{target}.downsamplers.0.conv.{rest.removeprefix('op.')}"
            if part == 0:
                return _map_resnet(rest, target, str(r))
            return f"{target}.{'attentions' if part == 1 else 'temp_attentions'}.{r}.{rest}"
        if m := re.match(r"middle_block\.(\d+)\.(.+)", key):
            part, rest = int(m.group(1)), m.group(2)
            target = "unet.mid_block"
            if part in (0, 3):
                return _map_resnet(rest, target, "0" if part == 0 else "1")
            return f"{target}.{'attentions' if part == 1 else 'temp_attentions'}.0.{rest}"
        if m := re.match(r"output_blocks\.(\d+)\.(\d+)\.(.+)", key):
            block, part, rest = int(m.group(1)), int(m.group(2)), m.group(3)
            up, r = divmod(block, n_up)
            target = f"unet.up_blocks.{up}"
            has_attn = layout.attention_levels[n_levels - 1 - up]
            upsample_part = 3 if has_attn else 1
            if part == upsample_part and up < n_levels - 1 and rest.startswith("conv."):
                return f"{target}.upsamplers.0.{rest}"
            if part == 0:
                return _map_resnet(rest, target, str(r))
            if has_attn and part in (1, 2):
                return f"{target}.{'attentions' if part == 1 else 'temp_attentions'}.{r}.{rest}"
    except (KeyError, IndexError):
        pass
    raise ModelFileError(f"Unexpected VC2 UNet weight '{key}': the checkpoint is not the VC2 t2v layout.")


def convert_vc2_unet(sd: Mapping[str, torch.Tensor], layout: UNetLayout) -> dict[str, torch.Tensor]:
    """VC2-layout UNet tensors -> our module's state dict (Conv1d ``init_attn`` projections become Linear)."""
    mapping = vc2_to_diffusers_keys(sd, layout)
    out: dict[str, torch.Tensor] = {}
    for old, new in mapping.items():
        tensor = sd[old]
        if new.startswith("unet.transformer_in.proj_") and new.endswith(".weight") and tensor.ndim == 3:
            tensor = tensor.squeeze(-1)
        out[new] = tensor
    return out


class VC2UNet(nn.Module):
    """diffusers ``UNet3DConditionModel`` + VC2's fps embedding; ``forward(x, t, context, fps)`` -> eps.

    The forward pass is :func:`.unet_forward.unet_forward` over diffusers' modules; every attention runs the
    kernel :func:`core.attention.use_attention` installs (PyTorch's SDPA until then).
    """

    def __init__(self, layout: UNetLayout) -> None:
        super().__init__()
        from diffusers import UNet3DConditionModel
        from diffusers.models.embeddings import TimestepEmbedding, Timesteps

        self.layout = layout
        self.unet = UNet3DConditionModel(**layout.diffusers_config())
        base = layout.block_out_channels[0]
        self.fps_proj = Timesteps(base, flip_sin_to_cos=True, downscale_freq_shift=0)
        self.fps_embedding = TimestepEmbedding(base, base * 4)
        plain_processors(self.unet)
        self.gradient_checkpointing = False  # recompute each block in backward (the LoRA trainer turns it on)

    @property
    def dtype(self) -> torch.dtype:
        return self.unet.conv_in.weight.dtype

    @property
    def device(self) -> torch.device:
        return self.unet.conv_in.weight.device

    def forward(
        self,
        x: torch.Tensor,
        timesteps: torch.Tensor | int,
        context: torch.Tensor,
        fps: torch.Tensor | int = 16,
    ) -> torch.Tensor:
        """Noise prediction for latents ``x`` ``[B,C,T,H,W]`` at ``timesteps`` with text ``context``."""
        if x.ndim != 5:
            raise InputError(f"VC2 UNet input must be [B,C,T,H,W], got shape {tuple(x.shape)}.")
        batch = x.shape[0]
        t = torch.as_tensor(timesteps, device=x.device).reshape(-1).expand(batch)
        fps_t = torch.as_tensor(fps, device=x.device).reshape(-1).expand(batch)
        emb = self.unet.time_embedding(self.unet.time_proj(t).to(self.dtype))
        emb = emb + self.fps_embedding(self.fps_proj(fps_t).to(self.dtype))
        return unet_forward(self.unet, x.to(self.dtype), emb, context.to(self.dtype), self.gradient_checkpointing)


def keep_group_norm_fp32(model: nn.Module, compute_dtype: torch.dtype) -> None:
    """Run every GroupNorm in fp32 (weights and statistics) inside a half-precision model.

    VC2's ``normalization()`` computes GroupNorm in fp32 because half-precision statistics overflow on
    large activations; diffusers runs them in the module dtype.  Hooks cast the input up and the
    output back to ``compute_dtype`` so the surrounding layers are unchanged.
    """

    def to_fp32(_module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        return (inputs[0].float(), *inputs[1:])

    def back(_module: nn.Module, _inputs: Any, output: torch.Tensor) -> torch.Tensor:
        return output.to(compute_dtype)

    for module in model.modules():
        if isinstance(module, nn.GroupNorm):
            module.float()
            module.register_forward_pre_hook(to_fp32)
            module.register_forward_hook(back)


def build_unet(
    sd: Mapping[str, torch.Tensor],
    config: Mapping[str, Any] | None = None,
    dtype: torch.dtype = torch.float32,
) -> VC2UNet:
    """A :class:`VC2UNet` with the VC2-layout weights ``sd`` (prefix removed), strict, no double allocation.

    The module is built on the ``meta`` device and the converted tensors are assigned, so peak memory
    stays near one copy of the weights.
    """
    layout = infer_layout(sd, config)
    converted = convert_vc2_unet(sd, layout)
    with torch.device("meta"):
        model = VC2UNet(layout)
    return assign_weights(model, converted, dtype, "VC2")


def assign_weights(model: VC2UNet, converted: Mapping[str, torch.Tensor], dtype: torch.dtype, name: str) -> Any:
    """Assign converted tensors to a ``meta``-built UNet (strict), cast it and freeze it for inference."""
    layout = model.layout
    try:
        result = model.load_state_dict(converted, strict=False, assign=True)
    except RuntimeError as exc:
        raise ModelFileError(
            f"The {name} UNet weights do not fit the architecture {layout.diffusers_config()} "
            f"(check the config override): {str(exc).splitlines()[-1].strip()}"
        ) from exc
    if result.missing_keys or result.unexpected_keys:
        raise ModelFileError(
            f"The {name} UNet weights do not fit the inferred architecture "
            f"({len(result.missing_keys)} missing, e.g. {result.missing_keys[:3]}; "
            f"{len(result.unexpected_keys)} unexpected, e.g. {result.unexpected_keys[:3]})."
        )
    model.to(dtype=dtype)
    if dtype != torch.float32:
        keep_group_norm_fp32(model, dtype)
    return model.train(False).requires_grad_(False)
