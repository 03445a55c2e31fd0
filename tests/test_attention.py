"""One attention kernel for every model: PyTorch's SDPA in plain Python, the host's choice inside ComfyUI.

The hosted case runs each model's parity fixture (made by the original code) with a stand-in ComfyUI whose
``optimized_attention`` is a plain einsum softmax (ComfyUI's ``attention_basic``) while PyTorch's SDPA raises:
the outputs still match the original at the parity tolerances, so every attention went through the host's kernel.
The real ComfyUI runs the same nodes in tests/integration.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import gameanim.nodes.vc2.checkpoint as vc2_ckpt
import pytest
import torch
import torch.nn.functional as F
from gameanim import api
from gameanim.core import host
from gameanim.core.attention import AttnProcessor, sdpa
from gameanim.nodes.dynamicrafter import checkpoint as dc_ckpt
from gameanim.nodes.dynamicrafter import dualref_vae
from gameanim.nodes.dynamicrafter.resampler import build_resampler
from gameanim.nodes.dynamicrafter.unet import build_dc_unet
from gameanim.nodes.vc2.unet import build_unet
from safetensors.torch import load_file
from support import dynamicrafter_fixtures as dcf
from support import vc2_fixtures

DECODER = Path(__file__).parent / "fixtures" / "animegamer_decoder"


def reference_attention(q, k, v, heads, mask=None):
    """Softmax attention written out (what ComfyUI's ``attention_basic`` computes), counting its calls."""
    reference_attention.calls += 1
    assert q.ndim == k.ndim == v.ndim == 3 and q.shape[-1] % heads == 0
    q, k, v = (t.unflatten(-1, (heads, -1)).transpose(1, 2) for t in (q, k, v))
    logits = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
    if mask is not None:
        logits = logits + mask
    out = torch.einsum("bhij,bhjd->bhid", logits.softmax(-1), v)
    return out.transpose(1, 2).flatten(2)


@pytest.fixture
def fake_comfyui(monkeypatch):
    """Just enough of a ComfyUI process for ``host``: ``folder_paths``, ``comfy.utils`` and the attention module."""
    attention = types.ModuleType("comfy.ldm.modules.attention")
    attention.optimized_attention = reference_attention
    names = ("folder_paths", "comfy", "comfy.utils", "comfy.ldm", "comfy.ldm.modules")
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "comfy.ldm.modules.attention", attention)

    def no_sdpa(*args, **kwargs):
        raise AssertionError("PyTorch's SDPA was called although the host chose another kernel")

    monkeypatch.setattr(F, "scaled_dot_product_attention", no_sdpa)
    host._attention_module.cache_clear()
    reference_attention.calls = 0
    yield
    host._attention_module.cache_clear()


def test_sdpa_is_softmax_attention_with_an_additive_mask():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, n, 4 * 8, generator=gen) for n in (5, 7, 7))
    mask = torch.randn(2, 4, 5, 7, generator=gen)
    reference_attention.calls = 0
    for m in (None, mask):
        torch.testing.assert_close(sdpa(q, k, v, 4, m), reference_attention(q, k, v, 4, m), atol=1e-5, rtol=1e-5)


def test_outside_comfyui_the_host_kernel_is_sdpa(monkeypatch):
    host._attention_module.cache_clear()
    assert host._attention_module() is None
    calls = []
    real = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    q = torch.randn(1, 3, 16)
    torch.testing.assert_close(host.attention(q, q, q, 2), sdpa(q, q, q, 2))
    assert len(calls) == 2


def test_inside_comfyui_the_host_kernel_gets_the_mask(fake_comfyui):
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, n, 16, generator=gen) for n in (3, 4, 4))
    mask = torch.zeros(1, 2, 3, 4)
    mask[..., -1] = -1e9
    out = host.attention(q, k, v, 2, mask)
    assert reference_attention.calls == 1
    torch.testing.assert_close(out, reference_attention(q, k[:, :3], v[:, :3], 2))  # the masked key is ignored


def test_managed_vc2_unet_matches_the_original_on_the_host_kernel(fake_comfyui):
    model = build_unet(vc2_ckpt.read_vc2(vc2_fixtures.TINY_WEIGHTS).unet)
    assert isinstance(model.unet.down_blocks[0].attentions[0].transformer_blocks[0].attn1.processor, AttnProcessor)
    host.manage(model, "VC2 UNet")
    ref = load_file(vc2_fixtures.PARITY)
    with torch.no_grad():
        eps = model(ref["unet_x"], ref["unet_t"], ref["unet_context"], ref["unet_fps"])
    assert (eps - ref["unet_eps"]).abs().max() < 1e-4
    assert reference_attention.calls == 18  # transformer_in, 3 spatial and 3 temporal transformers: 2 each + 4 more


def test_managed_dynamicrafter_parts_match_the_original_on_the_host_kernel(fake_comfyui):
    parts = dc_ckpt.read_dynamicrafter(load_file(dcf.TINY_WEIGHTS))
    meta = dcf.fixture_meta()
    parity = load_file(dcf.PARITY)
    unet = host.manage(build_dc_unet(parts.unet, {"default_fs": meta["unet"]["default_fs"]}), "UNet").module
    proj = host.manage(build_resampler(parts.image_proj, meta["resampler"]), "Resampler").module
    with torch.no_grad():
        out = unet(parity["unet_x"], parity["unet_t"], parity["unet_context"], parity["unet_fs"])
        unet_calls = reference_attention.calls
        tokens = proj(parity["resampler_in"])
    torch.testing.assert_close(out, parity["unet_out"], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(tokens, parity["resampler_out"], atol=1e-4, rtol=1e-4)
    assert unet_calls > 0 and reference_attention.calls > unet_calls


def test_managed_tooncrafter_decoder_matches_the_original_on_the_host_kernel(fake_comfyui):
    weights = load_file(dcf.TOON_VAE)
    parity = load_file(dcf.FIXTURES / "tc_vae_parity.safetensors")
    prefix = "first_stage_model."
    vae = dualref_vae.build_dual_reference_vae(
        {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
    )
    host.manage(vae, "ToonCrafter VAE", "vae")
    keyframes = [parity[f"hidden_{i}"] for i in range(5)]
    with torch.no_grad():
        ours = dualref_vae.decode_clip(vae.decoder, parity["z_short"], keyframes, redecode_middle=False)
    assert (ours - parity["decode_short"]).abs().max() < 1e-4
    assert reference_attention.calls > 0


def test_managed_animegamer_decoder_matches_the_original_on_the_host_kernel(fake_comfyui):
    decoder = api.load_animegamer_decoder(DECODER / "sat", config={"sample_height": 8, "sample_width": 8})
    host.manage(decoder, "AnimeGamer decoder")
    parity = load_file(str(DECODER / "parity.safetensors"))
    t5, clip = parity["t5"], parity["clip"]
    with torch.no_grad():
        tokens = decoder.encode_conditions(
            torch.cat([torch.zeros_like(t5), t5]), torch.cat([torch.zeros_like(clip), clip])
        )
        out = decoder.transformer(parity["x"], parity["timesteps"], tokens, parity["flows"])
    assert (out - parity["out_encoder"]).abs().max() < 1e-4
    assert reference_attention.calls == decoder.config.num_layers
