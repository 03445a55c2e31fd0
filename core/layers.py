"""Plain torch layers called as the functions they compute, and CPU convolutions with their weights prepared once.

A module call costs several microseconds of Python (hooks, tracing state, ``forward`` lookup); the small models of
the parity tests run hundreds of layers per step, where that is a fifth of the time.  :func:`apply` calls the
functional op for a layer of exactly a plain torch class with no hooks, and the module itself otherwise, so every
wrapper keeps working: a peft LoRA layer, ComfyUI's casting layers (``comfy.ops`` subclasses, which stream weights on
a partial load), hooks such as the fp32 GroupNorm casts of a half-precision UNet.

On the CPU, oneDNN converts a convolution's weight into its blocked layout on every call.  Where a convolution sees
few pixels for its width (a UNet's deep levels: 1280 channels over a few hundred latent pixels) that conversion
costs several times the arithmetic; :func:`conv2d` keeps the converted weight beside the layer (rebuilt when the
weight is replaced or changed in place) and runs oneDNN on it directly, with the same result.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def _linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return F.linear(x, layer.weight, layer.bias)


def _conv2d(layer: nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    if layer.padding_mode != "zeros" or layer.dilation != (1, 1) or layer.groups != 1:
        return layer(x)
    return conv2d(layer, x, layer.weight, layer.bias, layer.stride, layer.padding)


def _group_norm(layer: nn.GroupNorm, x: torch.Tensor) -> torch.Tensor:
    # the op F.group_norm ends in, without its Python-side batch-size check (a GroupNorm layer validated its shape)
    return torch.group_norm(x, layer.num_groups, layer.weight, layer.bias, layer.eps, torch.backends.cudnn.enabled)


def _layer_norm(layer: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    return torch.layer_norm(
        x, layer.normalized_shape, layer.weight, layer.bias, layer.eps, torch.backends.cudnn.enabled
    )


_DIRECT: dict[type, Callable[[Any, torch.Tensor], torch.Tensor]] = {
    nn.Linear: _linear,
    nn.Conv2d: _conv2d,
    nn.GroupNorm: _group_norm,
    nn.LayerNorm: _layer_norm,
}


def apply(layer: Any, x: torch.Tensor) -> torch.Tensor:
    """``layer(x)``, as its functional op when ``layer`` is exactly a plain torch layer without hooks."""
    direct = _DIRECT.get(type(layer))
    if direct is None or layer._forward_hooks or layer._forward_pre_hooks:
        return layer(x)
    return direct(layer, x)


PACK_MIN_WEIGHTS = 1 << 17  # weight elements from which the conversion outweighs the direct call's own overhead
PACK_MAX_PIXELS = 1024  # output pixels (batch x height x width) up to which the conversion dominates the arithmetic
# layer -> (weight identity, prepared weight); outside the modules, so copies and state dicts never see it
_PREPARED: weakref.WeakKeyDictionary[nn.Module, tuple[tuple[Any, ...], torch.Tensor]] = weakref.WeakKeyDictionary()
_HAS_ONEDNN = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_convolution_pointwise")


def _packs(x: torch.Tensor, weight: torch.Tensor, stride: tuple[int, int]) -> bool:
    """True where a prepared weight pays: CPU fp32 inference, a large weight, few output pixels."""
    if weight.numel() < PACK_MIN_WEIGHTS or not _HAS_ONEDNN or torch.is_grad_enabled() or x.device.type != "cpu":
        return False
    if x.dtype != torch.float32 or weight.dtype != torch.float32 or weight.is_inference():
        return False  # an inference tensor has no version counter to tell an in-place change
    return x.shape[0] * (x.shape[2] // stride[0]) * (x.shape[3] // stride[1]) <= PACK_MAX_PIXELS


_NATIVE = hasattr(torch._C._nn, "thnn_conv2d")


def _native_pays(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """True for a small (k,1) kernel (a temporal convolution) in CPU fp32 inference: PyTorch sends a batch of more than
    one to oneDNN, whose per-call setup then costs twice its own im2col path (measured on the tiny UNets' 32-64
    channels; 3x3 and 1x1 kernels are faster in oneDNN)."""
    return (
        weight.shape[-1] == 1
        and weight.shape[-2] > 1
        and weight.numel() < PACK_MIN_WEIGHTS
        and x.device.type == "cpu"
        and x.dtype == torch.float32
        and not torch.is_grad_enabled()
    )


def conv2d(
    owner: nn.Module,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (0, 0),
) -> torch.Tensor:
    """``F.conv2d(x, weight, bias, stride, padding)``; on the CPU in fp32 inference, where it pays, with ``weight``
    converted once to oneDNN's layout for this input shape and kept for ``owner`` (the layer the weight belongs to)
    while that layer lives: one more copy of those weights in memory, the price of not converting them each step.

    The kept copy is keyed by the weight's storage and version, so loading, merging a LoRA or training the weight
    (in place or by replacement) rebuilds it.  The output is channels-last, oneDNN's layout.
    """
    if not _packs(x, weight, stride):
        if _NATIVE and _native_pays(x, weight):
            return torch._C._nn.thnn_conv2d(x, weight, weight.shape[-2:], bias, stride, padding)
        return F.conv2d(x, weight, bias, stride, padding)
    key = (weight.data_ptr(), weight._version, tuple(weight.shape), tuple(x.shape), stride, padding)
    kept = _PREPARED.get(owner)
    if kept is None or kept[0] != key:
        prepared = torch._C._nn.mkldnn_reorder_conv2d_weight(
            weight.contiguous().to_mkldnn(), list(padding), list(stride), [1, 1], 1, list(x.shape)
        )
        kept = (key, prepared)
        _PREPARED[owner] = kept
    return torch.ops.mkldnn._convolution_pointwise(
        x, kept[1], bias, list(padding), list(stride), [1, 1], 1, "none", [], ""
    )
