"""The host memory and preview API in plain Python (no ComfyUI): handles, device moves, previews as progress.

The hosted path (ComfyUI's ModelPatcher, ``/free``) is exercised in tests/integration/test_memory.py.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch
from gameanim.core import host
from gameanim.nodes.animegamer.decoder.vae import latent_rgb_map


def test_manage_keeps_one_handle_per_module_and_copies_get_their_own():
    module = torch.nn.Linear(3, 2)
    handle = host.manage(module, "first")
    assert host.manage(module, "second") is handle and handle.name == "first"
    assert handle.patcher is None  # not hosted: no ModelPatcher
    clone = copy.deepcopy(module)
    assert host.manage(clone, "clone") is not handle
    assert torch.equal(clone.weight, module.weight)


def test_manage_rejects_unknown_roles():
    with pytest.raises(ValueError, match="role"):
        host.manage(torch.nn.Linear(1, 1), "x", role="gpu")


class _Recorder(torch.nn.Linear):
    def to(self, *args, **kwargs):  # records moves instead of doing them
        self.moves.append(torch.device(args[0] if args else kwargs["device"]))
        return self


def test_on_device_moves_plainly_and_unloads_when_asked(monkeypatch):
    monkeypatch.setattr(host, "torch_device", lambda: torch.device("meta"))
    module = _Recorder(3, 2)
    module.moves = []
    handle = host.manage(module, "m")
    with host.on_device(handle, keep_loaded=False) as device:
        assert device == torch.device("meta") and module.moves == [device]
    assert module.moves == [torch.device("meta"), torch.device("cpu")]
    with host.on_device(handle):
        pass
    assert module.moves[-1] == torch.device("meta")  # kept loaded
    assert host.loaded_model_names() == []


def test_weight_dtype_is_the_request_outside_comfyui():
    assert host.weight_dtype("vae", torch.float16) is torch.float16


def test_preview_progress_is_a_plain_progress_callback_outside_comfyui():
    reporter = host.preview_progress(3, "sd")
    assert not reporter.enabled
    reporter.preview(torch.zeros(1, 4, 2, 8, 8))
    reporter(1, 3)  # no host: nothing to draw, nothing raised


class _LinearVAE(torch.nn.Module):
    """A stand-in decoder whose output is an exact per-pixel linear map of the latent (8x upsampled)."""

    def __init__(self, factors: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        self.factors = torch.nn.Parameter(factors)
        self.bias = torch.nn.Parameter(bias)
        self.config = SimpleNamespace(latent_channels=factors.shape[0], scaling_factor=1.15258426)

    def decode(self, z: torch.Tensor) -> SimpleNamespace:
        latent = z * self.config.scaling_factor  # back to sampler scale, as the fit feeds it
        rgb = torch.einsum("bcthw,cr->brthw", latent, self.factors) + self.bias.view(1, 3, 1, 1, 1)
        return SimpleNamespace(sample=rgb.repeat_interleave(8, dim=3).repeat_interleave(8, dim=4))


def test_latent_rgb_map_recovers_a_linear_decoder():
    generator = torch.Generator().manual_seed(1)
    factors = torch.randn(16, 3, generator=generator) * 0.1
    bias = torch.tensor([0.1, -0.2, 0.05])
    fitted, fitted_bias = latent_rgb_map(_LinearVAE(factors, bias))
    assert torch.allclose(torch.tensor(fitted), factors, atol=1e-4)
    assert torch.allclose(torch.tensor(fitted_bias), bias, atol=1e-4)
