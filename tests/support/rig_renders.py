"""3-D-rendered sprite material with its true alpha: real rigged characters rendered by Render Training Clips.

Shaded characters (Blender Workbench) of assimp's test models (see :mod:`support.rig_assets`; ``mrfixit``
shows its textures, the others a flat material grey) on a solid key: grey on grey, white on white, or
darkened on black (``shade`` scales the straight colour before the key is composited from the true alpha),
optionally GIF-dithered as the frames arrive from a GIF (:func:`.sprite_sources.gif_dithered`).  Renders are
cached per process; they need ``GAMEANIM_BLENDER``.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache

import numpy as np
import pytest

from .rig_assets import FACING, require_character
from .sprite_sources import gif_dithered, publish_as

ENV_VAR = "GAMEANIM_BLENDER"
ACTIONS = {"Testwuson": "Wuson_Run", "BCN_Epileptic": "Epileptisch", "mrfixit": "idle"}


def require_blender() -> None:
    if not os.environ.get(ENV_VAR):
        message = f"{ENV_VAR} is not set (a Blender or a bpy==5.0.1 venv python renders the 3-D characters)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@lru_cache(maxsize=8)
def _rgba(character: str, view: str, frames: int, width: int, height: int) -> np.ndarray:
    """Straight RGBA uint8 ``[T,H,W,4]`` of the character's action (the render behind every key)."""
    from gameanim.nodes.pose.training_clips import ActionSpec, ClipSettings, read_clip, render_training_clips

    require_blender()
    path = require_character(character)
    settings = ClipSettings(frames=frames, width=width, height=height, facing=FACING.get(character, "-Y"))
    with tempfile.TemporaryDirectory() as out:
        spec = [ActionSpec(ACTIONS[character], None, "moving")]
        (clip,) = render_training_clips(path, out, "character", spec, [view], ["black"], settings=settings)
        keyed, alpha, _ = read_clip(clip.folder)
    # On black the keyed frame is the premultiplied colour: divide it back to straight colour.
    a = alpha.astype(np.float32)[..., None] / 255.0
    straight = np.where(a > 0, keyed.astype(np.float32) / np.maximum(a, 1e-6), 0.0)
    return np.concatenate([np.clip(np.rint(straight), 0, 255), alpha[..., None]], axis=-1).astype(np.uint8)


def rendered_clip(
    character: str = "BCN_Epileptic",
    key: tuple[int, int, int] = (128, 128, 128),
    shade: float = 1.0,
    view: str = "side_right",
    frames: int = 8,
    width: int = 320,
    height: int = 320,
    gif: bool = False,
    generated: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """``(frames uint8 [T,H,W,3], true alpha float32 [T,H,W])`` of a shaded character on ``key``.

    ``generated`` puts it on a key as a video model draws one: a vignette, a horizontal gradient and
    per-frame Gaussian noise (σ 0.012), as :func:`.sprite_sources.composite` does.
    """
    rgba = _rgba(character, view, frames, width, height)
    alpha = rgba[..., 3].astype(np.float32) / 255.0
    colour = np.clip(rgba[..., :3].astype(np.float32) * shade, 0, 255)
    return _on_key(colour, alpha, key, gif, generated), alpha


def _on_key(colour: np.ndarray, alpha: np.ndarray, key: tuple[int, int, int], gif: bool, generated: bool) -> np.ndarray:
    """Straight ``colour`` (0..255) with ``alpha`` over ``key`` as uint8 frames (see :func:`rendered_clip`)."""
    height, width = alpha.shape[1:]
    back = np.broadcast_to(np.asarray(key, np.float32), colour.shape)
    if generated:
        yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
        r2 = ((xx - width / 2) / (width / 2)) ** 2 + ((yy - height / 2) / (height / 2)) ** 2
        back = back * (0.96 + 0.04 * (1 - r2) + 0.02 * (xx / width - 0.5))[..., None]
    keyed = colour * alpha[..., None] + back * (1.0 - alpha[..., None])
    if generated:
        keyed = keyed + np.random.default_rng(0).normal(0, 0.012 * 255, keyed.shape).astype(np.float32)
    keyed = np.clip(np.rint(keyed), 0, 255).astype(np.uint8)
    return gif_dithered(keyed) if gif else keyed


def pale_vest_clip(
    lift: tuple[float, float] = (5.0, 20.0), rows: tuple[float, float] = (0.31, 0.53), form: str = "gif"
) -> tuple[np.ndarray, np.ndarray]:
    """``(frames uint8 [T,H,W,3], true alpha float32 [T,H,W])``: a fighter in a pale grey vest on a mid-grey key,
    as a video model draws one and a file of ``form`` publishes it (generated look, then GIF-dithered by default;
    see :func:`.sprite_sources.publish_as`).

    Mr. Fixit's dark, unsaturated armour between ``rows`` (shares of the frame's height: chest to hips) is
    repainted a grey ``lift`` levels above the key's 128, lighter where the armour was lighter (its texture's
    shading): ΔE 2-7 from the key, within the tolerance the key's noise and dithering give it.
    """
    rgba = _rgba("mrfixit", "side_right", 8, 320, 320)
    alpha = rgba[..., 3].astype(np.float32) / 255.0
    colour = rgba[..., :3].astype(np.float32)
    lightness = colour.mean(axis=-1)
    armour = (lightness < 70) & (np.ptp(colour, axis=-1) < 25)
    h = alpha.shape[1]
    band = np.zeros(h, bool)
    band[round(rows[0] * h) : round(rows[1] * h)] = True
    armour &= band[None, :, None]
    grey = 128.0 + lift[0] + (lift[1] - lift[0]) * np.clip(lightness / 70.0, 0, 1)
    colour = np.where(armour[..., None], grey[..., None], colour)
    return publish_as(_on_key(colour, alpha, (128, 128, 128), gif=False, generated=True), form), alpha
