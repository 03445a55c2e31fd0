"""VC2 nodes run end to end on a tiny complete checkpoint (no ComfyUI needed), plus the prompt builder."""

from __future__ import annotations

import json

import gameanim.nodes.vc2.comfy_nodes as cn
import gameanim.nodes.vc2.prompts as prompts
import pytest
import torch
from gameanim.core.errors import InputError, ModelFileError
from safetensors.torch import save_file
from support.vc2_fixtures import tiny_full_checkpoint

SMALL = {"width": 64, "height": 64, "frames": 2, "fps": 16, "steps": 1, "cfg": 4.0, "eta": 1.0, "seed": 3}


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("comfy")
    folder = base / "models" / "videocrafter"
    folder.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in tiny_full_checkpoint().items()}, str(folder / "tiny_vc2.safetensors"))
    (base / "models" / "checkpoints").mkdir()
    save_file(
        {"model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight": torch.zeros(320, 768)},
        str(base / "models" / "checkpoints" / "sd15.safetensors"),
    )
    return base


@pytest.fixture(scope="module")
def loaded(base_dir):
    mp = pytest.MonkeyPatch()
    mp.setenv("GAMEANIM_BASE_DIR", str(base_dir))
    names = cn.VC2Loader.INPUT_TYPES()["required"]["ckpt_name"][0]
    assert names == ["tiny_vc2.safetensors", "sd15.safetensors"]
    with pytest.raises(ModelFileError, match="Stable Diffusion 1.x"):
        cn.VC2Loader().load("sd15.safetensors", "fp32", True)
    (model,) = cn.VC2Loader().load("tiny_vc2.safetensors", "fp32", True)
    yield model
    mp.undo()


def test_text_encode_reports_tokens_and_cut_words(loaded):
    out = cn.VC2TextEncode().encode(loaded, "game character running animation")
    cond, tokens, message = out["result"]
    assert cond[0][0].shape == (1, 77, 32) and tokens == 6 and message == "6/77 tokens"
    long = cn.VC2TextEncode().encode(loaded, " ".join(["knight"] * 75) + " golden helmet")
    assert "cut off" in long["result"][2] and "golden helmet" in long["ui"]["text"][0]


def test_sampler_and_decode(loaded):
    positive = cn.VC2TextEncode().encode(loaded, "a knight")["result"][0]
    (latent,) = cn.VC2Sampler().run(loaded, positive, **SMALL)
    assert latent["samples"].shape == (1, 4, 2, 8, 8)
    assert latent["fps"] == SMALL["fps"]
    decoded = cn.VC2Decode().decode(loaded, latent, chunk=1, tiled=False)
    frames, fps = decoded["result"]
    assert fps == float(SMALL["fps"]), "the clip's rate reaches the sprite savers"
    (preview,) = decoded["ui"]["gameanim_preview"]
    assert len(preview["frames"]) == 2 and preview["fps"] == SMALL["fps"]
    assert frames.shape == (2, 64, 64, 3) and frames.dtype == torch.float32
    assert 0 <= float(frames.min()) and float(frames.max()) <= 1
    (encoded,) = cn.VC2Encode().encode(loaded, frames)
    (v2v,) = cn.VC2Sampler().run(loaded, positive, init_latent=encoded, denoise=0.5, **SMALL)
    assert v2v["samples"].shape == (1, 4, 2, 8, 8)


def test_sampler_accepts_comfy_conditioning_and_rejects_wrong_width(loaded):
    cond = [[torch.randn(1, 154, 32), {"pooled_output": None}]]
    (latent,) = cn.VC2Sampler().run(loaded, cond, negative=[[torch.zeros(1, 77, 32), {}]], **SMALL)
    assert latent["samples"].shape == (1, 4, 2, 8, 8)
    with pytest.raises(InputError, match="expects 32"):
        cn.VC2Sampler().run(loaded, [[torch.zeros(1, 77, 1024), {}]], **SMALL)


@pytest.mark.parametrize(
    "change,match", [({"width": 100}, "multiples of 8"), ({"frames": 0}, "frames must be at least 1")]
)
def test_sampler_bad_sizes(loaded, change, match):
    positive = [[torch.zeros(1, 77, 32), {}]]
    with pytest.raises(InputError, match=match):
        cn.VC2Sampler().run(loaded, positive, **{**SMALL, **change})


def test_action_set_keeps_character_and_seed(loaded):
    frames, labels, per_action, clips, names, fps = cn.VC2ActionSet().run(
        loaded,
        actions="running, sword slash\nrunning",
        character="a red knight",
        view="side view",
        background="solid color background",
        style="none",
        seed_policy="same seed",
        decode_chunk=2,
        **{**SMALL, "frames": 1, "steps": 1},
    )
    info = json.loads(labels)
    assert per_action == 1 and frames.shape == (2, 64, 64, 3)
    assert [i["action"] for i in info] == ["running", "sword slash"]
    assert all("a red knight" in i["prompt"] and i["seed"] == 3 for i in info)
    assert info[1]["first_frame"] == 1 and "sword slashing" in info[1]["prompt"]
    assert names == ["running", "sword slash"] and fps == float(SMALL["fps"])
    assert [tuple(c.shape) for c in clips] == [(1, 64, 64, 3)] * 2
    assert torch.equal(torch.cat(clips), frames)


def test_sprite_prompt_form_and_budget():
    node = cn.VC2SpritePrompt().build("spin kick", "a monk, orange robe", "side view", "solid color background", "none")
    text, tokens = node["result"]
    assert text == "Game character spin kick animation of a monk, orange robe, side view, solid color background"
    assert tokens <= 77
    long = prompts.build_sprite_prompt(
        "running", "knight, " + ", ".join(f"detail number {i} with extra words" for i in range(20))
    )
    assert long.tokens <= 77 and long.dropped and long.dropped[-1] == "detail number 19 with extra words"
    assert long.text.endswith("side view, solid color background")
    with pytest.raises(InputError, match="77"):
        prompts.build_sprite_prompt("running", "word " * 90)
    assert prompts.parse_actions("running, Running\njumping,") == ["running", "jumping"]
    with pytest.raises(InputError):
        prompts.parse_actions(" , ")
