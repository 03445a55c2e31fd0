"""DynamiCrafter sampler: the original DDIM (v-prediction, zero-SNR schedule, CFG, guidance rescale,
``scale_arr``, trailing timesteps) against runs of the original sampler, plus the conditioning helpers."""

from __future__ import annotations

import pytest
import torch
from gameanim.core.errors import InputError
from gameanim.nodes.dynamicrafter.model import conditioning_latents, load_model, sample, split_config
from gameanim.nodes.dynamicrafter.schedule import dynamicrafter_schedule
from gameanim.nodes.vc2.schedule import ddim_timesteps
from safetensors.torch import load_file
from support.dynamicrafter_fixtures import PARITY, TINY_WEIGHTS, fixture_meta

RUNS = {  # fixture name: (eta, spacing, guidance_rescale), as make_dynamicrafter_fixture.py ran them
    "eta0": (0.0, "uniform_trailing", 0.7),
    "eta1": (1.0, "uniform_trailing", 0.7),
    "eta1_uniform_norescale": (1.0, "uniform", 0.0),
}


@pytest.fixture(scope="module")
def tiny():
    meta = fixture_meta()
    model = load_model(str(TINY_WEIGHTS), config={**meta["unet"], **meta["resampler"]})
    return model, load_file(PARITY), meta


def test_default_schedule_is_the_originals_zero_terminal_snr_schedule():
    weights = load_file(TINY_WEIGHTS)  # buffers as the original register_schedule made them
    ours = dynamicrafter_schedule()
    torch.testing.assert_close(ours.alphas_cumprod, weights["alphas_cumprod"], atol=1e-7, rtol=1e-6)
    torch.testing.assert_close(ours.scale_arr, weights["scale_arr"])
    assert float(ours.alphas_cumprod[-1]) < 1e-9  # zero terminal SNR


def test_trailing_timesteps_start_at_the_last_step():
    assert ddim_timesteps(4, spacing="uniform_trailing").tolist() == [249, 499, 749, 999]
    assert ddim_timesteps(50, spacing="uniform_trailing")[-1] == 999
    with pytest.raises(InputError, match="spacing"):
        ddim_timesteps(4, spacing="quadratic")


@pytest.mark.parametrize("run", sorted(RUNS))
def test_sampler_matches_the_original(tiny, run):
    model, parity, meta = tiny
    eta, spacing, rescale = RUNS[run]
    ddim = meta["ddim"]
    out = sample(
        model,
        parity["ddim_cond"],
        parity["ddim_uncond"],
        parity["ddim_concat"],
        steps=ddim["steps"],
        cfg=ddim["cfg"],
        eta=eta,
        fs=ddim["fs"],
        guidance_rescale=rescale,
        spacing=spacing,
        x_T=parity["ddim_x_T"],
        noise=parity["ddim_noises"],
    )
    expected = parity[f"ddim_out_{run}"]
    assert (out - expected).abs().max() <= 1e-4 * expected.abs().max()


def test_progress_is_reported_every_step_and_can_cancel(tiny):
    model, parity, _ = tiny
    seen = []

    def progress(done, total):
        seen.append((done, total))
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sample(model, parity["ddim_cond"], None, parity["ddim_concat"], steps=4, cfg=1.0, seed=1, progress=progress)
    assert seen == [(1, 4), (2, 4)]


def test_a_seed_gives_the_same_clip(tiny):
    model, parity, _ = tiny
    runs = [sample(model, parity["ddim_cond"], None, parity["ddim_concat"], steps=2, cfg=1.0, seed=7) for _ in "ab"]
    torch.testing.assert_close(runs[0], runs[1], rtol=0, atol=0)


def test_image_to_video_conditioning_repeats_the_first_frame():
    start = torch.randn(2, 4, 5, 6)
    cond = conditioning_latents(start, 3)
    assert cond.shape == (2, 4, 3, 5, 6)
    for f in range(3):
        assert torch.equal(cond[:, :, f], start)


def test_inbetween_conditioning_holds_both_keyframes_and_zeros_between():
    start, end = torch.randn(1, 4, 5, 6), torch.randn(1, 4, 5, 6)
    cond = conditioning_latents(start, 16, end)
    assert torch.equal(cond[:, :, 0], start) and torch.equal(cond[:, :, -1], end)
    assert not cond[:, :, 1:-1].any()
    with pytest.raises(InputError, match="same size"):
        conditioning_latents(start, 16, torch.randn(1, 4, 5, 7))


def test_config_accepts_flat_and_original_nesting():
    flat = split_config({"model_channels": 32, "heads": 4, "video_length": 3})
    nested = split_config(
        {
            "model": {
                "params": {
                    "unet_config": {"params": {"model_channels": 32}},
                    "image_proj_stage_config": {"params": {"heads": 4, "video_length": 3}},
                }
            }
        }
    )
    assert flat == nested == ({"model_channels": 32}, {"heads": 4, "video_length": 3})
