"""Direct layer calls and CPU convolutions with prepared weights compute what the modules compute."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from gameanim.core import layers
from torch import nn


@pytest.mark.parametrize(
    ("layer", "shape"),
    [
        (nn.Linear(8, 6), (3, 5, 8)),
        (nn.Conv2d(4, 6, 3, stride=2, padding=1), (2, 4, 9, 9)),
        (nn.GroupNorm(2, 4, eps=1e-6), (2, 4, 5, 5)),
        (nn.LayerNorm(8), (3, 5, 8)),
    ],
)
def test_apply_equals_the_module(layer, shape):
    torch.manual_seed(0)
    x = torch.randn(shape)
    with torch.no_grad():
        torch.testing.assert_close(layers.apply(layer, x), layer(x), rtol=0, atol=0)


def test_apply_keeps_hooks_and_subclasses():
    """A hooked layer (the fp32 GroupNorm casts) or a wrapper subclass (ComfyUI's casting layers) runs as a module."""
    linear = nn.Linear(4, 4)
    x = torch.randn(2, 4)
    linear.register_forward_hook(lambda _m, _i, out: out * 0)
    assert layers.apply(linear, x).abs().max() == 0

    class Doubled(nn.Linear):
        def forward(self, inp: torch.Tensor) -> torch.Tensor:
            return 2 * super().forward(inp)

    doubled = Doubled(4, 4)
    torch.testing.assert_close(layers.apply(doubled, x), 2 * F.linear(x, doubled.weight, doubled.bias))


def _wide_conv() -> nn.Conv2d:
    torch.manual_seed(1)
    conv = nn.Conv2d(128, 128, 3, padding=1)  # 147k weights: above PACK_MIN_WEIGHTS
    with torch.no_grad():
        conv.weight.normal_(0, 0.03)
    return conv


def test_prepared_weight_gives_the_convolution_and_follows_weight_changes():
    conv = _wide_conv()
    x = torch.randn(2, 128, 8, 8)  # 128 output pixels: below PACK_MAX_PIXELS
    with torch.no_grad():
        out = layers.apply(conv, x)
        torch.testing.assert_close(out, F.conv2d(x, conv.weight, conv.bias, padding=1), rtol=1e-5, atol=1e-5)
        assert (conv in layers._PREPARED) == layers._HAS_ONEDNN
        conv.weight.mul_(-2)  # in place (a merged LoRA, an optimiser step): the prepared copy is rebuilt
        changed = layers.apply(conv, x)
        torch.testing.assert_close(changed, F.conv2d(x, conv.weight, conv.bias, padding=1), rtol=1e-5, atol=1e-5)
        conv.weight = nn.Parameter(torch.zeros_like(conv.weight))  # replaced (a reload)
        torch.testing.assert_close(layers.apply(conv, x), conv.bias[None, :, None, None].expand_as(out))
        other = torch.randn(1, 128, 4, 4)  # another input shape
        torch.testing.assert_close(layers.apply(conv, other), conv(other), rtol=1e-5, atol=1e-5)
    copied = copy.deepcopy(conv)  # the prepared weight stays outside the module
    with torch.no_grad():
        torch.testing.assert_close(layers.apply(copied, other), conv(other), rtol=1e-5, atol=1e-5)


def test_training_and_large_inputs_use_the_plain_convolution():
    conv = _wide_conv()
    x = torch.randn(1, 128, 64, 64)  # 4096 output pixels: the conversion is paid back by the arithmetic
    with torch.no_grad():
        layers.apply(conv, x)
    assert conv not in layers._PREPARED
    small = torch.randn(2, 128, 8, 8, requires_grad=True)
    out = layers.apply(conv, small)  # autograd on: the prepared weight has no gradient path
    out.sum().backward()
    assert conv not in layers._PREPARED and conv.weight.grad is not None and small.grad is not None


def test_weights_made_in_inference_mode_use_the_plain_convolution():
    """Such a weight has no version counter, so a prepared copy could not tell it was changed in place."""
    with torch.inference_mode():
        conv = _wide_conv()
        x = torch.randn(2, 128, 8, 8)
        out = layers.apply(conv, x)
    assert conv not in layers._PREPARED
    torch.testing.assert_close(out, F.conv2d(x, conv.weight, conv.bias, padding=1))


def test_small_temporal_kernel_runs_the_native_path_with_the_same_result():
    """A (3,1) kernel over a batch of two: PyTorch's im2col path instead of oneDNN, same numbers, autograd untouched."""
    torch.manual_seed(2)
    conv = nn.Conv2d(32, 32, (3, 1), padding=(1, 0))
    x = torch.randn(2, 32, 3, 64).transpose(2, 3).contiguous().transpose(2, 3)  # a strided clip view, as the UNet's
    with torch.no_grad():
        assert layers._native_pays(x, conv.weight)
        torch.testing.assert_close(layers.apply(conv, x), conv(x), rtol=1e-5, atol=1e-5)
    assert not layers._native_pays(x, conv.weight)  # autograd on
    assert not layers._native_pays(x, torch.zeros(32, 32, 3, 3))  # 3x3: oneDNN is faster
