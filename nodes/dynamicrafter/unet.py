"""DynamiCrafter's 8-channel UNet: VC2's diffusers UNet plus image cross-attention.

``openaimodel3d.UNetModel`` of DynamiCrafter / ToonCrafter / godmodeanimation Run is VC2's network with
three additions, all handled here on top of :class:`~..vc2.unet.VC2UNet` (same key map, same fs/fps
embedding):

* ``in_channels 8``: the noisy latent concatenated with the conditioning latents (only ``conv_in`` changes);
* image cross-attention in every *spatial* transformer: the context is 77 text tokens followed by image
  tokens; text and image tokens get separate key/value projections (``to_k_ip``/``to_v_ip``) and separate
  softmaxes, and the image result is added to the text result (times 1.0, or ``tanh(alpha) + 1`` in the
  learnable-scale variant);
* per-frame image tokens: when the context holds exactly ``77 + T * 16`` tokens (the original hard-codes
  16), frame ``f`` attends only to image tokens ``16 f .. 16 f + 15``; otherwise every frame sees them all.

Our forward passes the context once per clip; :class:`ImageCrossAttnProcessor` computes the keys and values
once per clip and gives each frame its own image tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ...core.attention import Attends, attend_shared
from ...core.errors import InputError, ModelFileError
from ...core.layers import apply
from ..vc2.unet import UNetLayout, VC2UNet, assign_weights, convert_vc2_unet, infer_layout

TEXT_TOKENS = 77
TOKENS_PER_FRAME = 16  # openaimodel3d.UNetModel.forward: ``if l_context == 77 + t*16`` (hard-coded)
DEFAULT_FS = 24
OLD_FS_NAME = "framestride_embed."  # DynamiCrafter 256 checkpoints; the original renames it on load
_IP_KEYS = (".attn2.to_k_ip.", ".attn2.to_v_ip.", ".attn2.alpha")

# original hyper-parameter name -> UNetLayout field (the original config's words, used by ``config``)
_UNET_NAMES = {
    "in_channels": "in_channels",
    "out_channels": "out_channels",
    "num_res_blocks": "layers_per_block",
    "context_dim": "cross_attention_dim",
    "num_head_channels": "attention_head_dim",
}
_ORIGINAL_ONLY = {"model_channels", "channel_mult", "attention_resolutions", "default_fs", "temporal_length"}
# accepted for completeness of an original config; they do not change the inference network here
_IGNORED = {
    "dropout",
    "use_linear",
    "use_checkpoint",
    "temporal_conv",
    "temporal_attention",
    "temporal_selfatt_only",
    "use_relative_position",
    "use_causal_attention",
    "addition_attention",
    "image_cross_attention",
    "image_cross_attention_scale_learnable",
    "fs_condition",
    "transformer_depth",
    "conv_resample",
    "dims",
}


def rename_old_keys(sd: Mapping[str, Any]) -> dict[str, Any]:
    """``framestride_embed.*`` -> ``fps_embedding.*`` (what the original inference script does on load)."""
    return {("fps_embedding." + k[len(OLD_FS_NAME) :] if k.startswith(OLD_FS_NAME) else k): v for k, v in sd.items()}


def layout_from_config(sd: Mapping[str, Any], config: Mapping[str, Any] | None) -> tuple[UNetLayout, int]:
    """The layout inferred from shapes, overridden by ``config`` in the original parameter names.

    Returns ``(layout, default_fs)``.  ``model_channels`` x ``channel_mult`` give the level widths and
    ``attention_resolutions`` (downsampling factors 1, 2, 4 ...) the levels with attention, as in the
    original constructor.
    """
    config = dict(config or {})
    unknown = set(config) - set(_UNET_NAMES) - _ORIGINAL_ONLY - _IGNORED
    if unknown:
        raise InputError(f"Unknown DynamiCrafter UNet config keys {sorted(unknown)}.")
    inferred = infer_layout(sd)
    overrides: dict[str, Any] = {_UNET_NAMES[k]: v for k, v in config.items() if k in _UNET_NAMES}
    mult = config.get("channel_mult")
    base = config.get("model_channels")
    if mult is not None or base is not None:
        base = base if base is not None else inferred.block_out_channels[0]
        if mult is None:
            mult = [c // inferred.block_out_channels[0] for c in inferred.block_out_channels]
        overrides["block_out_channels"] = tuple(base * m for m in mult)
    if "attention_resolutions" in config:
        levels = len(overrides.get("block_out_channels", inferred.block_out_channels))
        overrides["attention_levels"] = tuple(2**i in set(config["attention_resolutions"]) for i in range(levels))
    return infer_layout(sd, overrides), int(config.get("default_fs", DEFAULT_FS))


class ImageCrossAttnProcessor(Attends, nn.Module):
    """diffusers attention processor for DynamiCrafter's text + image cross-attention (``attn2`` only).

    The context holds one row per clip (``[B, 77 + image tokens, D]``) for ``B*T`` query rows: text keys and values
    are computed once per clip; per-frame image tokens give each frame its own 16, otherwise every frame sees all.
    """

    def __init__(self, context_dim: int, inner_dim: int, learnable_scale: bool = False) -> None:
        super().__init__()
        self.to_k_ip = nn.Linear(context_dim, inner_dim, bias=False)
        self.to_v_ip = nn.Linear(context_dim, inner_dim, bias=False)
        self.alpha = nn.Parameter(torch.zeros(())) if learnable_scale else None

    def forward(
        self,
        attn: Any,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        temb: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if encoder_hidden_states is None:
            raise InputError("DynamiCrafter's spatial cross-attention needs a context (text + image tokens).")
        text = encoder_hidden_states[:, :TEXT_TOKENS]
        image = encoder_hidden_states[:, TEXT_TOKENS:]
        q = apply(attn.to_q, hidden_states)
        out = attend_shared(self.attend, q, apply(attn.to_k, text), apply(attn.to_v, text), attn.heads)
        if image.shape[1]:
            k, v = apply(self.to_k_ip, image), apply(self.to_v_ip, image)
            frames = q.shape[0] // image.shape[0]
            if frames > 1 and image.shape[1] == frames * TOKENS_PER_FRAME:  # rows are (clip, frame)
                k, v = (t.reshape(q.shape[0], TOKENS_PER_FRAME, t.shape[-1]) for t in (k, v))
            out_ip = attend_shared(self.attend, q, k, v, attn.heads)
            out = out + (out_ip * (torch.tanh(self.alpha) + 1) if self.alpha is not None else out_ip)
        return apply(attn.to_out[0], out)  # to_out[1] is inference-time dropout: the identity


class DynamiCrafterUNet(VC2UNet):
    """``forward(x, timesteps, context, fs)``: ``x`` ``[B,8,T,H,W]`` (noisy ⊕ conditioning latents) -> ``[B,4,T,H,W]``."""

    def __init__(self, layout: UNetLayout, default_fs: int = DEFAULT_FS, learnable_scale: bool = False) -> None:
        super().__init__(layout)
        self.default_fs = default_fs
        self.image_processors: list[ImageCrossAttnProcessor] = []
        for name, module in self.unet.named_modules():
            if name.endswith(".attn2") and ".attentions." in name:
                proc = ImageCrossAttnProcessor(layout.cross_attention_dim, module.inner_dim, learnable_scale)
                module.set_processor(proc)
                self.image_processors.append(proc)

    def forward(  # type: ignore[override]
        self,
        x: torch.Tensor,
        timesteps: torch.Tensor | int,
        context: torch.Tensor,
        fs: torch.Tensor | int | None = None,
    ) -> torch.Tensor:
        if x.ndim != 5 or x.shape[1] != self.layout.in_channels:
            raise InputError(
                f"DynamiCrafter UNet input must be [B,{self.layout.in_channels},T,H,W] (noisy latent and "
                f"conditioning latents on channels), got shape {tuple(x.shape)}."
            )
        if context.ndim != 3 or context.shape[1] < TEXT_TOKENS:
            raise InputError(f"context must be [B, 77 + image tokens, D], got shape {tuple(context.shape)}.")
        return super().forward(x, timesteps, context, self.default_fs if fs is None else fs)


def convert_dc_unet(sd: Mapping[str, torch.Tensor], layout: UNetLayout) -> dict[str, torch.Tensor]:
    """Original ``model.diffusion_model.*`` tensors (prefix removed) -> our module's state dict."""
    plain = {k: v for k, v in sd.items() if not any(p in k for p in _IP_KEYS)}
    ip = {k: v for k, v in sd.items() if k not in plain}
    out = convert_vc2_unet(plain, layout)
    # the image projections sit beside to_k/to_v in the original: map their block through the same table
    for key, tensor in ip.items():
        for part in _IP_KEYS:
            if part in key:
                head, tail = key.split(part, 1)
                anchor = f"{head}.attn2.to_k.weight"
                if anchor not in sd:
                    raise ModelFileError(
                        f"Unexpected DynamiCrafter UNet weight '{key}' (no text projection beside it)."
                    )
                mapped = convert_vc2_unet({anchor: sd[anchor]}, layout)
                target = next(iter(mapped)).removesuffix(".attn2.to_k.weight")
                out[f"{target}.attn2.processor{part[len('.attn2') :]}{tail}"] = tensor
    return out


def build_dc_unet(
    sd: Mapping[str, torch.Tensor],
    config: Mapping[str, Any] | None = None,
    dtype: torch.dtype = torch.float32,
) -> DynamiCrafterUNet:
    """A :class:`DynamiCrafterUNet` from original-layout weights (prefix removed), strict, built on ``meta``."""
    sd = rename_old_keys(sd)
    layout, default_fs = layout_from_config(sd, config)
    converted = convert_dc_unet(sd, layout)
    learnable = any(k.endswith(".attn2.alpha") for k in sd)
    with torch.device("meta"):
        model = DynamiCrafterUNet(layout, default_fs=default_fs, learnable_scale=learnable)
    return assign_weights(model, converted, dtype, "DynamiCrafter")
