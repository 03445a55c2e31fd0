"""The forward pass of the VC2-family 3-D UNet over diffusers' ``UNet3DConditionModel`` modules.

diffusers' own forward is general (masks, adapters, GLIGEN, deprecation checks, every norm type); this one computes
the same network with less work:

* on the CPU, at levels of 16x16 pixels and more, activations stay ``[B*T, C, H, W]`` in channels-last memory
  (``[B, T, H, W, C]``), where oneDNN's convolutions and GroupNorm have channels-last kernels and the spatial
  transformer's tokens ``[B*T, H*W, C]`` and the temporal convolution's ``[B, C, T, H*W]`` are views, not copies
  (measured: the released UNet at 32x32 is about 10 % faster; at 8x8 the conversions cost more than they save);
  each level converts once, and residual sums keep the layout of their first operand, the block's input;
* the (3,1,1) temporal convolutions run as (3,1) 2-D convolutions over ``[B, C, T, H*W]`` (same weights; PyTorch's
  CPU ``Conv3d`` takes a slow unfold path for them);
* plain layers run as their functional ops (:func:`core.layers.apply`), wide convolutions over few pixels with their
  weight converted once for oneDNN (:func:`core.layers.conv2d`), the plain attentions inline, and the other
  processors (DynamiCrafter's image cross-attention) are called directly; all call the kernel
  :func:`core.attention.use_attention` installed;
* transformer tokens are contiguous before their linear layers (a strided token view runs every linear layer as a
  per-row batched matmul), and residual sums are in place on fresh layer outputs;
* the context is passed once per clip, not repeated per frame: cross-attention keys and values are computed once
  per clip and each clip's frames are folded into one query sequence (:func:`core.attention.attend_shared`).

Wrapped layers (a peft LoRA, ComfyUI's casting layers for partial loading, hooks) are still called as modules.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from ...core.attention import AttnProcessor, attend_shared
from ...core.layers import apply, conv2d

CHANNELS_LAST_MIN_PIXELS = 16 * 16  # level size from which channels-last pays on the CPU (see above)


def _layout(x: torch.Tensor) -> torch.Tensor:
    """``x`` ``[B*T, C, H, W]`` in the memory layout its level runs in (see the module docstring)."""
    channels_last = x.device.type == "cpu" and x.shape[-2] * x.shape[-1] >= CHANNELS_LAST_MIN_PIXELS
    return x.contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


def _resnet(block: Any, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
    """diffusers ``ResnetBlock2D`` (default time-embedding norm, no up/down sampling, scale factor 1);
    ``temb`` is SiLU(time embedding), computed once for all blocks."""
    h = apply(block.conv1, F.silu(apply(block.norm1, x)))
    h += apply(block.time_emb_proj, temb)[:, :, None, None]
    h = apply(block.conv2, F.silu(apply(block.norm2, h)))
    shortcut = block.conv_shortcut
    h += x if shortcut is None else apply(shortcut, x)
    return h


def _time_conv(conv: Any, x: torch.Tensor) -> torch.Tensor:
    """A (3,1,1) ``Conv3d`` applied to ``[B, C, T, N]``: as the (3,1) 2-D convolution it is (no layout change), unless
    the layer computes its own way (a LoRA wrapper, or ComfyUI casting its weights on the fly)."""
    if type(conv) is nn.Conv3d and not conv._forward_hooks and not conv._forward_pre_hooks:
        return conv2d(conv, x, conv.weight.squeeze(-1), conv.bias, padding=(1, 0))
    return conv(x.unsqueeze(-1)).squeeze(-1)


def _temporal_conv(layer: Any, x: torch.Tensor, frames: int) -> torch.Tensor:
    """diffusers ``TemporalConvLayer``: four GroupNorm-SiLU-conv(time) stages added to the input."""
    bt, c, height, width = x.shape
    clip = x.reshape(bt // frames, frames, c, height * width).transpose(1, 2)  # [B, C, T, HW]
    h = clip
    for stage in (layer.conv1, layer.conv2, layer.conv3, layer.conv4):
        parts = stage._modules  # GroupNorm, SiLU, [Dropout: the identity at inference,] Conv3d
        h = _time_conv(parts[str(len(parts) - 1)], F.silu(apply(parts["0"], h)))
    return (clip + h).transpose(1, 2).reshape(bt, c, height, width)  # clip first: the sum keeps x's layout


def _attention(attn: Any, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
    """A diffusers ``Attention`` of a transformer block: our plain processor's computation inline (these attentions
    have no group norm, residual or rescaling), any other processor (DynamiCrafter's image cross-attention) called."""
    processor = attn.processor
    if type(processor) is not AttnProcessor:
        return processor(attn, x, context)
    source = x if context is None else context
    q, k, v = apply(attn.to_q, x), apply(attn.to_k, source), apply(attn.to_v, source)
    return apply(attn.to_out._modules["0"], attend_shared(processor.attend, q, k, v, attn.heads))


def _transformer_block(block: Any, x: torch.Tensor, context: torch.Tensor | None) -> torch.Tensor:
    """diffusers ``BasicTransformerBlock`` (layer norms, self-attention, cross- or second self-attention, GEGLU)."""
    h = _attention(block.attn1, apply(block.norm1, x))
    h += x
    x = h
    if block.attn2 is not None:
        h = _attention(block.attn2, apply(block.norm2, x), context)
        h += x
        x = h
    ff = block.ff.net._modules  # GEGLU, Dropout (the identity at inference), Linear
    h, gate = apply(ff["0"].proj, apply(block.norm3, x)).chunk(2, dim=-1)
    h = apply(ff["2"], h * F.gelu(gate))
    h += x
    return h


def _spatial(model: Any, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
    """diffusers ``Transformer2DModel`` with linear projections: every frame's pixels as one token sequence."""
    bt, c, height, width = x.shape
    h = apply(model.norm, x).permute(0, 2, 3, 1).reshape(bt, height * width, c).contiguous()  # see _temporal
    h = apply(model.proj_in, h)
    for block in model.transformer_blocks:
        h = _transformer_block(block, h, context)
    h = apply(model.proj_out, h)
    return x + h.view(bt, height, width, c).permute(0, 3, 1, 2)  # x first: the sum keeps x's layout


def _temporal(model: Any, x: torch.Tensor, frames: int) -> torch.Tensor:
    """diffusers ``TransformerTemporalModel``: every pixel's frames as one token sequence."""
    bt, c, height, width = x.shape
    batch = bt // frames
    clip = x.reshape(batch, frames, c, height * width).transpose(1, 2)  # [B, C, T, HW]
    # contiguous tokens: a strided view (one clip) would send every linear layer through a per-row batched matmul
    h = apply(model.norm, clip).permute(0, 3, 2, 1).reshape(batch * height * width, frames, c).contiguous()
    h = apply(model.proj_in, h)
    for block in model.transformer_blocks:
        h = _transformer_block(block, h, None)
    h = apply(model.proj_out, h).view(batch, height, width, frames, c).permute(0, 3, 4, 1, 2)
    return (x.reshape(batch, frames, c, height, width) + h).reshape(bt, c, height, width)  # x first: keeps x's layout


def _stage(
    block: Any, index: int, x: torch.Tensor, temb: torch.Tensor, context: torch.Tensor, frames: int
) -> torch.Tensor:
    """One resolution step of a block: ResBlock, temporal conv, then the two transformers if the block has them."""
    key = str(index)
    x = _temporal_conv(block.temp_convs._modules[key], _resnet(block.resnets._modules[key], x, temb), frames)
    attentions = block._modules.get("attentions")
    if attentions is not None:
        x = _spatial(attentions._modules[key], x, context)
        x = _temporal(block.temp_attentions._modules[key], x, frames)
    return x


def _down(
    block: Any, x: torch.Tensor, temb: torch.Tensor, context: torch.Tensor, frames: int
) -> tuple[torch.Tensor, ...]:
    """A down block; returns every step's output (the skips), the last being the block's output."""
    outs = []
    for index in range(len(block.resnets)):
        x = _stage(block, index, x, temb, context, frames)
        outs.append(x)
    if block.downsamplers is not None:
        outs.append(_layout(apply(block.downsamplers._modules["0"].conv, x)))
    return tuple(outs)


def _mid(block: Any, x: torch.Tensor, temb: torch.Tensor, context: torch.Tensor, frames: int) -> torch.Tensor:
    x = _stage(block, 0, x, temb, context, frames)
    resnet, temp_conv = block.resnets._modules["1"], block.temp_convs._modules["1"]
    return _temporal_conv(temp_conv, _resnet(resnet, x, temb), frames)


def _up(
    block: Any,
    x: torch.Tensor,
    skips: tuple[torch.Tensor, ...],
    size: tuple[int, int] | None,
    temb: torch.Tensor,
    context: torch.Tensor,
    frames: int,
) -> torch.Tensor:
    """An up block: each step joins the latest skip on channels; then upsampling to ``size``."""
    for index in range(len(block.resnets)):
        x = _stage(block, index, torch.cat([x, skips[-1 - index]], dim=1), temb, context, frames)
    if block.upsamplers is not None:
        x = _layout(apply(block.upsamplers._modules["0"].conv, F.interpolate(x, size=size, mode="nearest")))
    return x


def unet_forward(
    unet: Any,
    sample: torch.Tensor,
    emb: torch.Tensor,
    context: torch.Tensor,
    gradient_checkpointing: bool = False,
) -> torch.Tensor:
    """Noise prediction of diffusers' ``UNet3DConditionModel`` ``unet`` for ``sample`` ``[B, C, T, H, W]``.

    ``emb`` is the time embedding ``[B, D]`` (fps already added), ``context`` the cross-attention tokens
    ``[B, L, D_ctx]`` (one row per clip); returns ``[B, C_out, T, H, W]``.  With ``gradient_checkpointing`` (and
    autograd on) each block's activations are recomputed in the backward pass instead of kept.
    """
    batch, channels, frames, height, width = sample.shape
    x = _layout(sample.transpose(1, 2).reshape(batch * frames, channels, height, width))
    temb = F.silu(emb).repeat_interleave(frames, dim=0)
    checkpointed = gradient_checkpointing and torch.is_grad_enabled()

    def run(fn: Any, *args: Any) -> Any:
        return checkpoint(fn, *args, use_reentrant=False) if checkpointed else fn(*args)

    x = _temporal(unet.transformer_in, apply(unet.conv_in, x), frames)
    skips = [x]
    for block in unet.down_blocks:
        outs = run(_down, block, x, temb, context, frames)
        skips.extend(outs)
        x = outs[-1]
    x = run(_mid, unet.mid_block, x, temb, context, frames)
    for block in unet.up_blocks:
        taken = len(block.resnets)
        mine, skips = tuple(skips[-taken:]), skips[:-taken]
        size = tuple(skips[-1].shape[-2:]) if block.upsamplers is not None else None
        x = run(_up, block, x, mine, size, temb, context, frames)
    x = apply(unet.conv_out, F.silu(apply(unet.conv_norm_out, x)))
    return x.reshape(batch, frames, -1, height, width).transpose(1, 2).contiguous()
