"""VC2 DDIM sampler: parity with the original sampler, schedule rules, seeds, errors, progress."""

from __future__ import annotations

import gameanim.nodes.vc2.schedule as sched
import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError, NumericalError
from gameanim.core.progress import Cancelled, CancelToken
from safetensors.torch import load_file
from support.vc2_fixtures import PARITY, TINY_WEIGHTS


@pytest.fixture(scope="module")
def model():
    return api.load_vc2(str(TINY_WEIGHTS))


@pytest.fixture(scope="module")
def ref():
    return load_file(PARITY)


def _rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("eta,key", [(0.0, "ddim_eta0"), (1.0, "ddim_eta1")])
def test_ddim_matches_original_sampler(model, ref, eta, key):
    out = api.sample_vc2(
        model,
        ref["ddim_cond"],
        ref["ddim_uncond"],
        steps=4,
        cfg=7.5,
        eta=eta,
        fps=24,
        x_T=ref["ddim_x_T"],
        noise=ref["ddim_noises"],
    )
    assert out.shape == ref[key].shape and out.dtype == torch.float32
    assert _rel(out, ref[key]) < 1e-4


def test_scale_arr_is_applied(model, ref):
    """Without VC2's scale_arr rescaling the result is far from the original (the test can fail)."""
    plain = sched.Schedule(model.schedule.alphas_cumprod, None)
    from gameanim.nodes.vc2.ddim import ddim_sample

    with torch.no_grad():
        out = ddim_sample(model.unet, plain, ref["ddim_x_T"], ref["ddim_cond"], ref["ddim_uncond"], 4, 7.5, 0.0, 24)
    assert _rel(out, ref["ddim_eta0"]) > 1e-2


def test_unet_only_mapping_uses_builtin_schedule(ref):
    weights = load_file(TINY_WEIGHTS)
    unet_only = {k: v for k, v in weights.items() if k.startswith("model.diffusion_model.")}
    model = api.load_vc2(unet_only)
    assert model.vae is None and model.text_encoder is None
    assert torch.allclose(model.schedule.alphas_cumprod, weights["alphas_cumprod"])
    assert torch.allclose(model.schedule.scale_arr, weights["scale_arr"])
    out = api.sample_vc2(model, ref["ddim_cond"], ref["ddim_uncond"], 4, 7.5, 0.0, 24, x_T=ref["ddim_x_T"])
    assert _rel(out, ref["ddim_eta0"]) < 1e-4


def test_timesteps_rule():
    assert list(sched.ddim_timesteps(50))[:3] == [1, 21, 41] and sched.ddim_timesteps(50)[-1] == 981
    assert list(sched.ddim_timesteps(4)) == [1, 251, 501, 751]
    for steps in (3, 7, 30, 33, 333, 500):
        ts = sched.ddim_timesteps(steps)
        assert len(ts) == steps and ts.max() <= 999 and np.all(np.diff(ts) == 1000 // steps)
    for bad in (0, -1, 501):
        with pytest.raises(InputError):
            sched.ddim_timesteps(bad)


def test_vc2_schedule_numbers():
    s = sched.vc2_schedule()
    assert abs(float(s.alphas_cumprod[1]) - 0.99830) < 1e-5
    assert abs(float(s.alphas_cumprod[999]) - 0.004660) < 1e-6
    assert s.scale_arr.shape == (1400,) and float(s.scale_arr[0]) == 1.0 and abs(float(s.scale_arr[400]) - 0.7) < 1e-7


def test_seed_is_reproducible_and_eta_noise_matters(model, ref):
    cond = ref["ddim_cond"]
    shape = (1, 4, 2, 8, 8)
    from gameanim.nodes.vc2.model import sample

    a = sample(model, cond, None, steps=2, eta=1.0, seed=7, shape=shape)
    b = sample(model, cond, None, steps=2, eta=1.0, seed=7, shape=shape)
    c = sample(model, cond, None, steps=2, eta=1.0, seed=8, shape=shape)
    assert torch.equal(a, b) and not torch.allclose(a, c)
    assert a.shape == shape


def test_progress_every_step_and_cancel(model, ref):
    from gameanim.nodes.vc2.model import sample

    seen = []
    sample(
        model,
        ref["ddim_cond"],
        None,
        steps=3,
        eta=0.0,
        seed=1,
        shape=(1, 4, 1, 8, 8),
        progress=lambda d, t: seen.append((d, t)),
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]
    token = CancelToken()

    def cancel_after_first(done, total):
        token.cancel()

    with pytest.raises(Cancelled):
        sample(
            model,
            ref["ddim_cond"],
            None,
            steps=3,
            eta=0.0,
            seed=1,
            shape=(1, 4, 1, 8, 8),
            progress=token.progress(cancel_after_first),
        )


def test_nan_latents_raise_a_named_error(model, ref):
    x = ref["ddim_x_T"].clone()
    x[0, 0, 0, 0, 0] = float("inf")
    with pytest.raises(NumericalError, match="fp16 overflow.*bf16"):
        api.sample_vc2(model, ref["ddim_cond"], ref["ddim_uncond"], steps=2, x_T=x)


def test_bad_sizes_are_clear_errors():
    from gameanim.nodes.vc2.model import latent_shape

    assert latent_shape(1, 16, 320, 512) == (1, 4, 16, 40, 64)
    with pytest.raises(InputError, match="multiples of 8"):
        latent_shape(1, 16, 321, 512)
    with pytest.raises(InputError, match="frames must be at least 1"):
        latent_shape(1, 0, 320, 512)


def test_init_latent_denoise_skips_steps(model, ref):
    from gameanim.nodes.vc2.model import sample

    seen = []
    init = torch.zeros(1, 4, 2, 8, 8)
    out = sample(
        model,
        ref["ddim_cond"],
        None,
        steps=4,
        eta=0.0,
        seed=3,
        init_latent=init,
        denoise=0.5,
        progress=lambda d, t: seen.append(t),
    )
    assert seen == [2, 2] and out.shape == init.shape
    with pytest.raises(InputError, match="denoise"):
        sample(model, ref["ddim_cond"], None, steps=4, seed=3, init_latent=init, denoise=0.0)


def test_half_precision_keeps_group_norm_fp32(ref):
    from gameanim.nodes.vc2.model import load_model

    model = load_model(str(TINY_WEIGHTS), dtype="bf16")
    assert model.unet.dtype == torch.bfloat16
    assert model.unet.unet.conv_norm_out.weight.dtype == torch.float32
    with torch.no_grad():
        eps = model.unet(ref["unet_x"], ref["unet_t"], ref["unet_context"], ref["unet_fps"])
    assert eps.dtype == torch.bfloat16
    assert _rel(eps.float(), ref["unet_eps"]) < 5e-2


def test_config_override_reaches_the_architecture(ref):
    from gameanim.core.errors import ModelFileError

    weights = load_file(TINY_WEIGHTS)
    model = api.load_vc2(weights, config={"norm_eps": 1e-2})
    assert model.unet.unet.conv_norm_out.eps == 1e-2
    with torch.no_grad():
        eps = model.unet(ref["unet_x"], ref["unet_t"], ref["unet_context"], ref["unet_fps"])
    assert _rel(eps, ref["unet_eps"]) > 1e-4
    with pytest.raises(ModelFileError, match="config override"):
        api.load_vc2(weights, config={"attention_head_dim": 4})
