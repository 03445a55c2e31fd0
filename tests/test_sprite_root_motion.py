"""Root motion from Stabilise into the atlas: per frame, in sheet pixels, in every writer.

A real walk (Kenney's CC0 male adventurer, see ``support/sprite_real.py``) made to travel 6 px per frame goes
through the nodes as a user wires them: Stabilise (lock) -> Pixel Art (half size) -> Save Sprite
Sheet with Stabilise's offsets_json on ``root_motion``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from gameanim.core.errors import InputError
from gameanim.nodes.sprite import anchor, comfy_nodes, operations
from support import sprite_real as real
from support import sprite_synth as synth

STEP = 6  # px per frame the walk travels


def travelling_walk(jitter: int = 0, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The 8-frame walk moving STEP px right per frame (plus optional whole-pixel jitter) on a wide canvas."""
    _, alpha = real.walk_cycle("male_adventurer")
    t, h, w = alpha.shape
    shake = np.random.default_rng(seed).integers(-jitter, jitter + 1, (t, 2)) if jitter else np.zeros((t, 2), int)
    canvas = np.zeros((t, h + 12, w + STEP * t + 12), np.float32)
    for i, (dx, dy) in enumerate(shake):
        canvas[i, 6 + dy : 6 + dy + h, 6 + STEP * i + dx : 6 + STEP * i + dx + w] = alpha[i]
    rgb = np.repeat(canvas[..., None], 3, axis=-1) * np.float32(0.6)
    return torch.from_numpy(rgb), torch.from_numpy(canvas)


def save_sheet(image, mask, root_motion, merge_holds=False, godot="both") -> list:
    widgets = (["packed"], [0], [1], [0], [False], [10.0], [merge_holds], [True], [godot])
    out = comfy_nodes.GameAnimSpriteSheet().run([image], ["sheet"], *widgets, mask=[mask], root_motion=[root_motion])
    return out["ui"]["text"][0].split(", ")


def test_root_motion_reaches_every_atlas_in_sheet_pixels(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    rgb, alpha = travelling_walk()
    image, mask, info_text = comfy_nodes.GameAnimSpriteStabilise().run(rgb, "feet", "lock", 2.0, 2, mask=alpha)
    info = json.loads(info_text)
    root = np.asarray(info["root_motion"])
    # The body estimate wanders a little with the drawn torso: measured 6.04 px/frame (0.25 px over the walk).
    np.testing.assert_allclose(root[:, 0], STEP * np.arange(8), atol=0.3)
    ch, cw = mask.shape[1:]
    small_w, small_h = cw // 2, ch // 2
    (pix,), (pix_mask,) = comfy_nodes.GameAnimSpritePixelArt().run(
        [image], [small_w], [small_h], ["none"], [8], [""], [False], ["000000"], [0], mask=[mask]
    )
    names = save_sheet(pix, pix_mask, info_text)
    out = tmp_path / "output"
    expected_x = root[:, 0] * small_w / cw  # sheet pixels: Pixel Art halved the canvas
    for atlas_name in (names[1], names[2]):  # TexturePacker and Aseprite JSON
        atlas = json.loads((out / atlas_name).read_text())
        roots = [entry["root"] for entry in atlas["frames"].values()]
        np.testing.assert_allclose([r["x"] for r in roots], expected_x, atol=0.01)
        assert all(r["y"] == 0 for r in roots)
    godot4 = (out / names[3]).read_text()
    assert "metadata/root_motion = {" in godot4 and f"{expected_x[1]:.6g}, 0" in godot4
    godot3 = (out / names[4]).read_text()
    assert '__meta__ = {\n"root_motion": {' in godot3 and "PoolVector2Array(0, 0," in godot3


def test_jitter_stays_out_of_the_root_motion():
    """Stabilise removes ±3 px of shake; the exported travel is the steady 6 px/frame, not the shake."""
    for seed in range(6):
        rgb, alpha = travelling_walk(jitter=3, seed=seed)
        _, _, info_text = comfy_nodes.GameAnimSpriteStabilise().run(rgb, "feet", "lock", 2.0, 2, mask=alpha)
        info = json.loads(info_text)
        root, removed = np.asarray(info["root_motion"]), np.asarray(info["offsets"])
        removed = removed[0] - removed
        steps = np.diff(root[:, 0])
        # Steady, at the walk's speed (measured 5.60-6.55 px/frame over these seeds).
        assert np.ptp(steps) <= 0.011 and abs(steps.mean() - STEP) <= 0.6, (seed, steps)
        assert np.ptp(np.diff(removed[:, 0])) >= 2, seed  # the raw removal carried the shake
        assert np.abs(root[:, 1]).max() == 0, seed  # vertical shake is not travel
    # An in-place clip has no travel: nothing to put back.
    assert not anchor.root_travel(np.array([[0, 0], [2, -1], [-1, 1], [1, 0]])).any()


def test_merged_holds_keep_their_first_frames_root():
    frames, alpha, _ = synth.clip(t=4, h=64, w=64)
    frames[1], alpha[1] = frames[0], alpha[0]  # frame 1 holds frame 0
    info = {"root_motion": [[0, 0], [2, 0], [4, 0], [6, 0]], "canvas": {"w": 64, "h": 64}}
    built = operations.build_sheet(frames, alpha, merge_holds=True, root_motion=info)
    assert [f.root for f in built.frames] == [(0.0, 0.0), (4.0, 0.0), (6.0, 0.0)]
    assert [f.duration_ms for f in built.frames] == [167, 83, 83]


def test_root_motion_follows_a_timing_chart_after_stabilise():
    """Retimed after Stabilise (5 frames from 4, an in-between at 1.5): the roots follow the source times."""
    frames, alpha, _ = synth.clip(t=5, h=48, w=48)
    info = {"root_motion": [[0, 0], [4, 0], [8, 0], [12, 0]], "canvas": {"w": 96, "h": 96}}  # half size here
    times = [0.0, 1.0, 1.5, 2.0, 3.0]
    built = operations.build_animation_sheet(
        [(frames, alpha)], ["run"], [12.0], root_motion=[info], source_times=[times]
    )
    assert [f.root for f in built.frames] == [(0.0, 0.0), (2.0, 0.0), (3.0, 0.0), (4.0, 0.0), (6.0, 0.0)]


def test_root_motion_errors():
    frames, alpha, _ = synth.clip(t=3, h=32, w=32)
    with pytest.raises(InputError, match="offsets_json"):
        operations.build_sheet(frames, alpha, root_motion="not json")
    with pytest.raises(InputError, match="Timing Chart's timing"):
        operations.build_sheet(frames, alpha, root_motion={"root_motion": [[0, 0]], "canvas": {"w": 32, "h": 32}})
    with pytest.raises(InputError, match="root motions"):
        operations.build_animation_sheet([(frames, alpha)] * 2, ["a", "b"], [12.0, 12.0], root_motion=[None])
