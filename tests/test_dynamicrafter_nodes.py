"""DynamiCrafter nodes run end to end on a complete tiny checkpoint (no ComfyUI needed)."""

from __future__ import annotations

import gameanim.nodes.dynamicrafter.comfy_nodes as cn
import numpy as np
import pytest
import torch
from gameanim.core.errors import InputError, ModelFileError
from gameanim.nodes.dynamicrafter import model as dc_model
from PIL import Image
from safetensors.torch import save_file
from support.dynamicrafter_fixtures import fixture_meta, tiny_full_checkpoint

SMALL = {"prompt": "a knight runs", "width": 24, "height": 16, "frames": 3, "steps": 2, "cfg": 3.0, "eta": 1.0}
SMALL.update({"guidance_rescale": 0.7, "seed": 5})
REAL_LOAD = dc_model.load_model


def _sprite(path: str = "sample_data/sprite_frames/frame_000.png") -> torch.Tensor:
    return torch.from_numpy(np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255.0)[None]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    base = tmp_path_factory.mktemp("comfy")
    folder = base / "models" / "dynamicrafter" / "tiny"
    folder.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in tiny_full_checkpoint().items()}, str(folder / "model.safetensors"))
    (base / "models" / "checkpoints").mkdir()
    save_file(
        {"model.diffusion_model.input_blocks.0.0.weight": torch.zeros(8, 4, 3, 3)},
        str(base / "models" / "checkpoints" / "odd.safetensors"),
    )
    mp = pytest.MonkeyPatch()
    mp.setenv("GAMEANIM_BASE_DIR", str(base))
    # the tiny fixture's head split / per-frame queries are not the released ones: give them as the config
    meta = fixture_meta()
    mp.setattr(dc_model, "load_model", lambda src, dtype: REAL_LOAD(src, {**meta["unet"], **meta["resampler"]}, dtype))
    names = cn.DynamiCrafterLoader.INPUT_TYPES()["required"]["ckpt_name"][0]
    assert names == ["tiny/model.safetensors", "odd.safetensors"]
    with pytest.raises(ModelFileError, match="Expected a DynamiCrafter"):
        cn.DynamiCrafterLoader().load("odd.safetensors", "fp32", True)
    (model,) = cn.DynamiCrafterLoader().load("tiny/model.safetensors", "fp32", True)
    yield model
    mp.undo()


def test_animate_a_sprite_and_decode(loaded):
    (latent,) = cn.DynamiCrafterAnimate().run(loaded, _sprite(), frame_stride=24, **SMALL)
    assert latent["samples"].shape == (1, 4, 3, 2, 3)
    out = cn.DynamiCrafterDecode().decode(loaded, latent, chunk=2)
    (frames,) = out["result"]
    assert frames.shape == (3, 16, 24, 3) and torch.isfinite(frames).all()
    assert out["ui"]["gameanim_preview"]


def test_inbetween_two_keyframes(loaded):
    first, last = _sprite(), _sprite("sample_data/sprite_frames/frame_004.png")
    (latent,) = cn.DynamiCrafterInbetween().run(loaded, first, last, frame_stride=10, **SMALL)
    assert latent["samples"].shape == (1, 4, 3, 2, 3)


def test_wrong_clip_size_is_a_clear_error(loaded):
    with pytest.raises(InputError, match="multiples of 8"):
        cn.DynamiCrafterAnimate().run(loaded, _sprite(), frame_stride=24, **{**SMALL, "width": 30})


def test_fit_image_centre_crops_without_stretching():
    image = torch.zeros(1, 10, 40, 3)
    image[:, :, 18:22] = 1.0  # a thin white bar in the middle: stretching would widen it to the edges
    out = dc_model.fit_image(image, 16, 16)
    assert out.shape == (1, 16, 16, 3)
    assert float(out[0, 8, 8, 0]) > 0.9 and float(out[0, 8, 0, 0]) < 0.1


@pytest.fixture(scope="module")
def toon(tmp_path_factory):
    from support.dynamicrafter_fixtures import tiny_tooncrafter_checkpoint

    base = tmp_path_factory.mktemp("comfy_toon")
    folder = base / "models" / "dynamicrafter" / "ToonCrafter"
    folder.mkdir(parents=True)
    torch.save(tiny_tooncrafter_checkpoint(), folder / "model.ckpt")  # a pickle, as released
    mp = pytest.MonkeyPatch()
    mp.setenv("GAMEANIM_BASE_DIR", str(base))
    meta = fixture_meta()
    mp.setattr(dc_model, "load_model", lambda src, dtype: REAL_LOAD(src, {**meta["unet"], **meta["resampler"]}, dtype))
    (model,) = cn.DynamiCrafterLoader().load("ToonCrafter/model.ckpt", "fp32", True)
    yield model
    mp.undo()


def test_tooncrafter_inbetween_decodes_with_the_keyframes_it_carries(toon):
    assert toon.model.dual_reference_vae and toon.model.description.startswith("ToonCrafter")
    first, last = _sprite(), _sprite("sample_data/sprite_frames/frame_004.png")
    (latent,) = cn.DynamiCrafterInbetween().run(toon, first, last, frame_stride=10, **SMALL)
    assert latent[cn.KEYFRAMES].shape == (2, 16, 24, 3)
    (frames,) = cn.DynamiCrafterDecode().decode(toon, latent, chunk=1)["result"]
    assert frames.shape == (3, 16, 24, 3) and torch.isfinite(frames).all()
    # the keyframes reach the decoder: other keyframes give other frames (the first frame gets them added)
    swapped = {**latent, cn.KEYFRAMES: latent[cn.KEYFRAMES].flip(0)}
    (other,) = cn.DynamiCrafterDecode().decode(toon, swapped, chunk=1)["result"]
    assert (other[0] - frames[0]).abs().max() > 1e-3
    # keyframes given to the node win over the latent's, and are fitted to the clip size
    (given,) = cn.DynamiCrafterDecode().decode(toon, swapped, 1, *latent[cn.KEYFRAMES].split(1))["result"]
    torch.testing.assert_close(given, frames)
    big_first, big_last = (dc_model.fit_image(x, 32, 48) for x in latent[cn.KEYFRAMES].split(1))
    (fitted,) = cn.DynamiCrafterDecode().decode(toon, {"samples": latent["samples"]}, 1, big_first, big_last)["result"]
    assert fitted.shape == frames.shape and (fitted - frames).abs().mean() < 0.05


def test_tooncrafter_decode_without_keyframes_is_a_clear_error(toon):
    with pytest.raises(InputError, match="reads the two keyframes back"):
        cn.DynamiCrafterDecode().decode(toon, {"samples": torch.zeros(1, 4, 3, 2, 3)}, chunk=1)
