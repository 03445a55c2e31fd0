"""DynamiCrafter nodes run end to end on a complete tiny checkpoint (no ComfyUI needed)."""

from __future__ import annotations

import gameanim.nodes.dynamicrafter.comfy_nodes as cn
import numpy as np
import pytest
import torch
from dynamicrafter_helpers import fixture_meta, tiny_full_checkpoint
from gameanim.core.errors import InputError, ModelFileError
from gameanim.nodes.dynamicrafter import model as dc_model
from PIL import Image
from safetensors.torch import save_file

SMALL = {"prompt": "a knight runs", "width": 24, "height": 16, "frames": 3, "steps": 2, "cfg": 3.0, "eta": 1.0}
SMALL.update({"guidance_rescale": 0.7, "seed": 5})


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
    real_load = dc_model.load_model
    mp.setattr(dc_model, "load_model", lambda src, dtype: real_load(src, {**meta["unet"], **meta["resampler"]}, dtype))
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


def test_tooncrafter_decoder_is_refused_not_faked(loaded):
    model = loaded.model
    model.dual_reference_vae = True
    try:
        with pytest.raises(ModelFileError, match="dual-reference VAE decoder"):
            dc_model.decode(model, torch.zeros(1, 4, 2, 2, 3))
    finally:
        model.dual_reference_vae = False
