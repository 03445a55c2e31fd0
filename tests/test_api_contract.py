"""The Python API keeps its promised signatures (leading parameters, names, defaults): the one place they are asserted.

Extra parameters may follow, but only with defaults, so existing calls keep working.
"""

from __future__ import annotations

import inspect

import pytest
from gameanim import api

EMPTY = inspect.Parameter.empty
CONTRACT = {
    "load_vc2": [("source", EMPTY), ("config", None)],
    "encode_vc2_text": [("model", EMPTY), ("texts", EMPTY)],
    "vc2_token_count": [("text", EMPTY)],
    "decode_vc2": [("model", EMPTY), ("latents", EMPTY), ("chunk", 1), ("tiled", False)],
    "sample_vc2": [
        ("model", EMPTY),
        ("context", EMPTY),
        ("uncond_context", EMPTY),
        ("steps", 50),
        ("cfg", 12.0),
        ("eta", 1.0),
        ("fps", 16),
        ("x_T", None),
        ("seed", None),
        ("noise", None),
    ],
    "train_lora": [("model", EMPTY), ("dataset", EMPTY)],
    "apply_lora": [("model", EMPTY), ("path", EMPTY), ("strength", "any")],
    "remove_background": [("frames", EMPTY)],
    "stabilise": [("rgb", EMPTY), ("alpha", EMPTY)],
    "sprite_sheet": [("rgb", EMPTY), ("alpha", EMPTY), ("columns", None)],
    "pixelate_clips": [("clips", EMPTY), ("width", EMPTY), ("height", EMPTY), ("palette", "kmeans"), ("colours", 16)],
    "pose_from_bvh": [("path", EMPTY), ("camera", "side_right"), ("width", 512), ("height", 512), ("frames", None)],
    "pose_from_motion_json": [
        ("path", EMPTY),
        ("camera", "side_right"),
        ("width", 512),
        ("height", 512),
        ("frames", None),
    ],
    "motion_scope": [("frames", EMPTY), ("method", "dis"), ("r", 0.2), ("mask", None)],
    "load_animegamer_mllm": [("weights", EMPTY), ("tokenizer", EMPTY), ("base", None), ("config", None)],
    "new_game": [("character", EMPTY), ("window", 1)],
    "game_step": [("model", EMPTY), ("game", EMPTY), ("instruction", EMPTY), ("max_new_tokens", 200)],
    "load_animegamer_decoder": [("source", EMPTY), ("config", None)],
    "key_poses": [("frames", EMPTY), ("alpha", None), ("max_keys", None)],
    "time_animation": [("frames", EMPTY), ("keys", EMPTY), ("on", 2), ("hold", 2), ("spacing", "ease-in-out")],
    "load_dynamicrafter": [("source", EMPTY), ("config", None)],
    "dynamicrafter_conditioning": [
        ("model", EMPTY),
        ("image", EMPTY),
        ("prompt", ""),
        ("frames", 16),
        ("end_image", None),
        ("cfg", 7.5),
    ],
    "sample_dynamicrafter": [
        ("model", EMPTY),
        ("context", EMPTY),
        ("uncond_context", EMPTY),
        ("cond_latents", EMPTY),
        ("steps", 50),
        ("cfg", 7.5),
        ("eta", 1.0),
        ("fs", 24),
        ("guidance_rescale", 0.7),
        ("spacing", "uniform_trailing"),
        ("x_T", None),
        ("seed", None),
        ("noise", None),
    ],
    "decode_dynamicrafter": [("model", EMPTY), ("latents", EMPTY), ("chunk", 1), ("keyframes", None)],
}


def test_everything_exported_exists():
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert not missing


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_signature(name):
    params = list(inspect.signature(getattr(api, name)).parameters.values())
    expected = CONTRACT[name]
    for param, (want_name, want_default) in zip(params, expected, strict=False):
        assert param.name == want_name
        if want_default != "any":
            assert param.default == want_default or (param.default is EMPTY and want_default is EMPTY), param
    for param in params[len(expected) :]:
        assert param.kind is param.VAR_KEYWORD or param.default is not EMPTY, (
            f"{name}: new parameter {param.name} needs a default"
        )
    assert name in api.__all__
