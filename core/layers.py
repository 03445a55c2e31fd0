"""Plain torch layers called as the functions they compute, skipping ``nn.Module.__call__``.

A module call costs several microseconds of Python (hooks, tracing state, ``forward`` lookup); the small models of
the parity tests run hundreds of layers per step, where that is a fifth of the time.  :func:`apply` calls the
functional op for a layer of exactly a plain torch class with no hooks, and the module itself otherwise, so every
wrapper keeps working: a peft LoRA layer, ComfyUI's casting layers (``comfy.ops`` subclasses, which stream weights on
a partial load), hooks such as the fp32 GroupNorm casts of a half-precision UNet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def _linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return F.linear(x, layer.weight, layer.bias)


def _conv2d(layer: nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    if layer.padding_mode != "zeros":
        return layer(x)
    return F.conv2d(x, layer.weight, layer.bias, layer.stride, layer.padding, layer.dilation, layer.groups)


def _group_norm(layer: nn.GroupNorm, x: torch.Tensor) -> torch.Tensor:
    return F.group_norm(x, layer.num_groups, layer.weight, layer.bias, layer.eps)


def _layer_norm(layer: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, layer.normalized_shape, layer.weight, layer.bias, layer.eps)


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
