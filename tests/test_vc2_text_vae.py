"""VC2 text encoder (tiny OpenCLIP tower built here) and VAE (real LDM layout, random weights)."""

from __future__ import annotations

import gameanim.nodes.vc2.text_encoder as te
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError, ModelFileError
from safetensors.torch import load_file
from support.vc2_fixtures import TINY_WEIGHTS, manifest_state_dict


@pytest.fixture(scope="module")
def tiny_clip():
    from open_clip.transformer import TextTransformer

    torch.manual_seed(0)
    tower = TextTransformer(context_length=77, vocab_size=49408, width=64, heads=1, layers=3, output_dim=64).eval()
    sd = {f"cond_stage_model.model.{k}": v for k, v in tower.state_dict().items()}
    sd["cond_stage_model.model.logit_scale"] = torch.tensor(4.6)
    return tower, sd


def test_tokenizer_is_offline_open_clip():
    ids = te.tokenize(["a knight running"])
    assert ids.shape == (1, 77) and ids[0, 0] == 49406 and (ids[0] == 49407).sum() == 1 and ids[0, -1] == 0
    long = te.tokenize(["word " * 100])
    assert long[0, -1] == 49407  # truncated with EOT forced last


def test_token_report_names_the_cut_words():
    short = te.token_report("game character running animation")
    assert short.tokens == 6 and not short.truncated and short.cut_text == ""
    text = " ".join(["knight"] * 74) + " red cape golden helmet"
    rep = te.token_report(text)
    assert rep.truncated and rep.tokens == 80
    assert rep.cut_text == "cape golden helmet"
    assert api.vc2_token_count(text) == (80, "cape golden helmet")


def test_penultimate_layer_plus_final_ln(tiny_clip):
    tower, sd = tiny_clip
    weights = {**load_file(TINY_WEIGHTS), **sd}
    model = api.load_vc2(weights)
    got = api.encode_vc2_text(model, ["a knight swinging a sword", ""])
    tokens = te.tokenize(["a knight swinging a sword", ""])
    with torch.no_grad():
        inter = tower.forward_intermediates(tokens, indices=[1], normalize_intermediates=True, output_fmt="NLC")
        last = tower.forward_intermediates(tokens, indices=[2], normalize_intermediates=True, output_fmt="NLC")
    expected = inter["text_intermediates"][0]
    assert got.shape == (2, 77, 64)
    assert torch.allclose(got, expected, atol=1e-5)
    assert not torch.allclose(got, last["text_intermediates"][0], atol=1e-3)  # not the last layer


def test_conditioning_input():
    t = torch.zeros(1, 154, 1024)
    assert te.context_from_conditioning([[t, {"pooled_output": None}]], 1024) is t
    with pytest.raises(InputError, match="expects 1024"):
        te.context_from_conditioning([[torch.zeros(1, 77, 768), {}]], 1024)
    with pytest.raises(InputError):
        te.context_from_conditioning("nope", 1024)


def test_missing_text_encoder_is_explained():
    model = api.load_vc2({k: v for k, v in load_file(TINY_WEIGHTS).items()})
    with pytest.raises(ModelFileError, match="no text encoder"):
        api.encode_vc2_text(model, "x")
    with pytest.raises(ModelFileError, match="no VAE"):
        api.decode_vc2(model, torch.zeros(1, 4, 1, 2, 2))


@pytest.fixture(scope="module")
def real_vae():
    from gameanim.nodes.vc2.vae import build_vae

    gen = torch.Generator().manual_seed(0)
    sd = {}
    for key, meta in manifest_state_dict().items():
        if key.startswith("first_stage_model."):
            name = key.removeprefix("first_stage_model.")
            if meta.ndim == 1 and name.endswith("weight"):
                sd[name] = torch.ones(meta.shape)
            elif meta.ndim == 1:
                sd[name] = torch.zeros(meta.shape)
            else:
                sd[name] = torch.randn(meta.shape, generator=gen) / meta[0].numel() ** 0.5
    return build_vae(sd)


def test_vae_from_ldm_keys_decodes_frame_by_frame(real_vae):
    from gameanim.nodes.vc2.vae import decode_latents, encode_frames

    latents = torch.randn(1, 4, 2, 3, 4, generator=torch.Generator().manual_seed(1))
    seen = []
    frames = decode_latents(real_vae, latents, chunk=1, progress=lambda d, t: seen.append(d))
    assert frames.shape == (2, 24, 32, 3) and frames.dtype == torch.float32
    assert frames.min() >= 0 and frames.max() <= 1 and seen == [1, 2]
    together = decode_latents(real_vae, latents, chunk=2)
    assert torch.allclose(frames, together, atol=1e-4)
    single = decode_latents(real_vae, latents[:, :, 1:2], chunk=1)
    assert torch.allclose(frames[1:], single, atol=1e-5)
    back = encode_frames(real_vae, frames)
    assert back.shape == (1, 4, 2, 3, 4)
    with pytest.raises(InputError, match="multiples of 8"):
        encode_frames(real_vae, torch.zeros(1, 20, 32, 3))
