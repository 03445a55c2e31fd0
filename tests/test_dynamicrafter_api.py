"""The DynamiCrafter part of ``api.py``: load from a state dict, UNet / image projection contract, an
image-to-video and an inbetweening run end to end on a complete tiny checkpoint."""

from __future__ import annotations

import pytest
import torch
from gameanim import api
from gameanim.core.errors import ModelFileError
from safetensors.torch import load_file
from support.dynamicrafter_fixtures import PARITY, fixture_meta, tiny_full_checkpoint


@pytest.fixture(scope="module")
def model():
    meta = fixture_meta()
    return api.load_dynamicrafter(tiny_full_checkpoint(), config={**meta["unet"], **meta["resampler"]})


def test_unet_and_project_image_follow_the_contract(model):
    parity = load_file(PARITY)
    with torch.no_grad():
        out = model.unet(parity["unet_x"], parity["unet_t"], parity["unet_context"], parity["unet_fs"])
    torch.testing.assert_close(out, parity["unet_out"], atol=1e-4, rtol=1e-4)
    tokens = model.project_image(parity["resampler_in"])
    torch.testing.assert_close(tokens, parity["resampler_out"], atol=1e-4, rtol=1e-4)


def test_config_in_the_original_yaml_nesting(model):
    meta = fixture_meta()
    nested = {"unet_config": {"params": meta["unet"]}, "image_proj_stage_config": {"params": meta["resampler"]}}
    again = api.load_dynamicrafter(tiny_full_checkpoint(), config=nested)
    assert again.image_proj.config_original == model.image_proj.config_original


def test_image_to_video_end_to_end(model):
    image = torch.rand(1, 16, 24, 3)
    cond = api.dynamicrafter_conditioning(model, image, prompt="a knight runs", frames=3, cfg=2.0)
    assert cond.context.shape == (1, 77 + 48, 32) and cond.uncond_context.shape == cond.context.shape
    assert cond.latents.shape == (1, 4, 3, 2, 3)
    assert torch.equal(cond.latents[:, :, 0], cond.latents[:, :, 2])
    latents = api.sample_dynamicrafter(
        model, cond.context, cond.uncond_context, cond.latents, steps=2, cfg=2.0, fs=24, seed=3
    )
    frames = api.decode_dynamicrafter(model, latents)
    assert frames.shape == (3, 16, 24, 3) and 0 <= float(frames.min()) and float(frames.max()) <= 1


def test_inbetween_conditioning_uses_both_keyframes(model):
    first, last = torch.rand(1, 16, 24, 3), torch.rand(1, 16, 24, 3)
    cond = api.dynamicrafter_conditioning(model, first, frames=3, end_image=last, cfg=1.0)
    assert cond.uncond_context is None
    assert not torch.equal(cond.latents[:, :, 0], cond.latents[:, :, 2])
    assert not cond.latents[:, :, 1].any()


def test_unet_only_mapping_cannot_condition_on_an_image():
    weights = load_file(PARITY.parent / "dc_tiny.safetensors")
    meta = fixture_meta()
    model = api.load_dynamicrafter(weights, config={**meta["unet"], **meta["resampler"]})
    with pytest.raises(ModelFileError, match="no VAE"):
        api.dynamicrafter_conditioning(model, torch.rand(1, 16, 24, 3))


def test_tooncrafter_inbetweening_decodes_with_its_keyframes():
    from gameanim.core.errors import InputError
    from support.dynamicrafter_fixtures import tiny_tooncrafter_checkpoint

    meta = fixture_meta()
    toon = api.load_dynamicrafter(tiny_tooncrafter_checkpoint(), config={**meta["unet"], **meta["resampler"]})
    assert toon.dual_reference_vae
    first, last = torch.rand(1, 16, 24, 3), torch.rand(1, 16, 24, 3)
    cond = api.dynamicrafter_conditioning(toon, first, frames=3, end_image=last, cfg=1.0)
    latents = api.sample_dynamicrafter(toon, cond.context, None, cond.latents, steps=2, cfg=1.0, fs=10, seed=3)
    frames = api.decode_dynamicrafter(toon, latents, keyframes=(first, last))
    assert frames.shape == (3, 16, 24, 3) and 0 <= float(frames.min()) and float(frames.max()) <= 1
    with pytest.raises(InputError, match="keyframes"):
        api.decode_dynamicrafter(toon, latents)
