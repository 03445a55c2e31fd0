"""Animation timing: key poses, timing charts (holds, ones/twos/threes, spacing) and smears.

Synthetic clips have known keys (tests/support/timing_synth.py); the Kenney walk cycle (CC0, from the
``arcade`` wheel, tests/fixtures/kenney_walk) and the shipped run_cycle.bvh rendered by the pose
renderer are real material nobody here drew.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError
from gameanim.nodes.timing.spacing import spacing_curve
from support import timing_synth as ts

ROOT = Path(__file__).resolve().parents[1]
KENNEY = ROOT / "tests" / "fixtures" / "kenney_walk"


def _rgba(rgb, alpha):
    return torch.from_numpy(np.concatenate([rgb, alpha[..., None]], axis=-1))


@pytest.fixture(scope="module")
def eased():
    positions, keys = ts.eased_with_holds()
    rgb, alpha = ts.render(positions)
    return rgb, alpha, keys


def test_keys_of_eased_motion_with_holds(eased):
    rgb, alpha, truth = eased
    found = api.key_poses(torch.from_numpy(rgb), torch.from_numpy(alpha))
    assert len(found) == len(truth)
    assert all(abs(f - t) <= 1 for f, t in zip(found, truth, strict=True)), (found, truth)
    reasons = {r["frame"]: r["reason"] for r in api.key_pose_report(rgb, alpha)}
    assert all("hold" in reasons[f] for f in found[1:-1])


def test_keys_without_alpha_on_a_solid_backdrop(eased):
    rgb, alpha, truth = eased
    backdrop = np.array([0.2, 0.7, 0.3], np.float32)
    flat = rgb * alpha[..., None] + backdrop * (1 - alpha[..., None])
    found = api.key_poses(flat)
    assert len(found) == len(truth) and all(abs(f - t) <= 1 for f, t in zip(found, truth, strict=True))


def test_no_keys_on_constant_velocity():
    rgb, alpha = ts.render(ts.constant_velocity(frames=20, speed=5.0))
    assert api.key_poses(rgb, alpha) == [0, 19]
    curved = [(80 + 40 * np.cos(i * 0.12), 48 + 30 * np.sin(i * 0.12)) for i in range(20)]  # steady arc
    rgb, alpha = ts.render(curved)
    assert api.key_poses(rgb, alpha) == [0, 19]


def test_bounce_contacts():
    positions, contacts = ts.bounce()
    rgb, alpha = ts.render(positions)
    report = api.key_pose_report(rgb, alpha)
    found = {r["frame"]: r["reason"] for r in report}
    for contact in contacts:
        near = [f for f in found if abs(f - contact) <= 1]
        assert near and "contact" in found[near[0]], (contact, found)
    # contacts outrank the tops of the hops
    ranked = [r["frame"] for r in report if r["reason"] not in ("first", "last")]
    assert sorted(ranked[: len(contacts)]) == contacts


def test_pendulum_extremes():
    angles, extremes = ts.pendulum()
    rgb, alpha = ts.render([(80.0, 80.0)] * len(angles), angles=angles, pivot=(80.0, 10.0))
    found = api.key_poses(rgb, alpha)
    inner = found[1:-1]
    assert len(inner) == len(extremes) and all(abs(f - e) <= 1 for f, e in zip(inner, extremes, strict=True))


def test_max_keys_keeps_the_strongest(eased):
    rgb, alpha, truth = eased
    assert api.key_poses(rgb, alpha, max_keys=2) == [0, len(rgb) - 1]
    with pytest.raises(InputError):
        api.key_poses(rgb, alpha, max_keys=1)


def test_timing_keeps_keys_bit_identical_with_exact_holds_and_twos(eased):
    rgb, alpha, keys = eased
    frames = _rgba(rgb, alpha)
    for on, hold in ((2, 2), (3, 4), (1, 1)):
        out, durations = api.time_animation(frames, keys, on=on, hold=hold, spacing="ease-in-out")
        assert len(out) == len(durations)
        key_rows = [i for i, d in enumerate(durations) if d == hold]
        if on != hold:
            # exactly one output per key, with the hold as its duration, in order and bit-identical
            assert len(key_rows) == len(keys)
            for row, key in zip(key_rows, keys, strict=True):
                assert torch.equal(out[row], frames[key])
            assert all(d == on for i, d in enumerate(durations) if i not in key_rows)
        # every key appears unchanged and in order
        hits = [next(i for i in range(len(out)) if torch.equal(out[i], frames[k])) for k in keys]
        assert hits == sorted(hits)


def test_segment_lengths_follow_the_chart(eased):
    rgb, alpha, keys = eased
    _, durations = api.time_animation(_rgba(rgb, alpha), keys, on=2, hold=2)
    # segments of 12, 12 and 11 frames: key (2) + round((L - 2) / 2) in-betweens of 2, final key held 2
    expected = []
    for a, b in zip(keys[:-1], keys[1:], strict=True):
        expected += [2] + [2] * int(np.floor((b - a - 2) / 2 + 0.5))
    assert durations == expected + [2]


@pytest.mark.parametrize("on", [2, 3])
@pytest.mark.parametrize("spacing", ["ease-in-out", "ease-in", "ease-out", "even"])
def test_positions_follow_the_spacing_curve_within_a_pixel(eased, spacing, on):
    rgb, alpha, keys = eased
    out, durations = api.time_animation(_rgba(rgb, alpha), keys, on=on, hold=2, spacing=spacing)
    xs = [ts.centroid(frame[..., 3].numpy())[0] for frame in out]
    key_rows = []
    row = 0
    for a, b in zip(keys[:-1], keys[1:], strict=True):
        count = int(np.floor((b - a - 2) / on + 0.5))
        key_x, next_x = ts.centroid(alpha[a])[0], ts.centroid(alpha[b])[0]
        wanted = key_x + spacing_curve(spacing, np.arange(1, count + 1) / (count + 1)) * (next_x - key_x)
        got = np.array(xs[row + 1 : row + 1 + count])
        assert np.abs(got - wanted).max() < 1.0, (spacing, got - wanted)
        key_rows.append(row)
        row += 1 + count
    assert row == len(out) - 1 == len(durations) - 1  # the last key closes the chart


def test_even_on_ones_without_holds_gives_back_the_source():
    rgb, alpha = ts.render(ts.constant_velocity(frames=12, speed=4.0))
    frames = _rgba(rgb, alpha)
    out, durations = api.time_animation(frames, [0, 11], on=1, hold=1, spacing="even")
    assert durations == [1] * 12
    assert torch.equal(out, frames)


def test_nearest_mode_only_uses_source_frames(eased):
    rgb, alpha, keys = eased
    frames = _rgba(rgb, alpha)
    out, _ = api.time_animation(frames, keys, on=3, hold=2, spacing="ease-out", inbetween="nearest")
    assert all(any(torch.equal(o, f) for f in frames) for o in out)


def test_anticipation_moves_against_the_motion(eased):
    rgb, alpha, keys = eased
    frames = _rgba(rgb, alpha)
    out, _ = api.time_animation(frames, keys[:2], on=1, hold=1, spacing="even", anticipation=0.3)
    xs = [ts.centroid(f[..., 3].numpy())[0] for f in out]
    start = ts.centroid(alpha[keys[0]])[0]
    assert min(xs) < start - 3.0  # the first move goes left, away from the key on the right
    assert torch.equal(out[0], frames[keys[0]])


def test_bad_timing_inputs_are_clear(eased):
    rgb, alpha, _ = eased
    with pytest.raises(InputError, match="outside the clip"):
        api.time_animation(rgb, [0, 99])
    with pytest.raises(InputError, match="spacing"):
        api.time_animation(rgb, [0, 5], spacing="bouncy")
    with pytest.raises(InputError, match="at least 1"):
        api.time_animation(rgb, [0, 5], on=0)


def test_smears_only_above_the_threshold_and_inside_the_swept_area():
    positions = [(20, 48), (24, 48), (44, 48), (80, 48), (84, 48)]
    rgb, alpha = ts.render(positions)
    for style in ("smear", "multiples"):
        out_rgb, out_a, smeared = api.smear_frames(rgb, alpha, threshold=8.0, strength=0.8, style=style)
        out_rgb, out_a = out_rgb.numpy(), out_a.numpy()
        assert smeared == [2, 3]
        for t in (0, 1, 4):
            assert np.array_equal(out_rgb[t], rgb[t]) and np.array_equal(out_a[t], alpha[t])
        for t in smeared:
            now, before = alpha[t] > 0.01, alpha[t - 1] > 0.01
            smear = out_a[t] > 0.01
            assert smear.sum() > now.sum() * 1.3  # visibly stretched
            assert np.all(smear[now])  # the sprite itself stays
            rows = np.nonzero(now.any(axis=1) | before.any(axis=1))[0]
            cols = np.nonzero(now.any(axis=0) | before.any(axis=0))[0]
            ys, xs = np.nonzero(smear)
            assert rows.min() <= ys.min() and ys.max() <= rows.max()
            assert cols.min() <= xs.min() and xs.max() <= np.nonzero(now.any(axis=0))[0].max()
            opaque = alpha[t] > 0.999
            assert np.allclose(out_rgb[t][opaque], rgb[t][opaque], atol=1e-5)  # drawn on top, unchanged
    _, _, none = api.smear_frames(rgb, alpha, threshold=8.0, keys=[2, 3])
    assert none == []


def _kenney_walk(cycles: int = 2) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image

    frames = [
        np.asarray(Image.open(KENNEY / f"maleAdventurer_walk{i % 8}.png").convert("RGBA"), np.float32) / 255.0
        for i in range(8 * cycles + 1)
    ]
    clip = np.stack(frames)
    return clip[..., :3], clip[..., 3]


def test_real_walk_cycle_keys_are_the_down_positions():
    rgb, alpha = _kenney_walk()
    report = api.key_pose_report(rgb, alpha)
    found = sorted(r["frame"] for r in report)
    # Kenney's 8-frame walk steps twice per cycle; the body is lowest on frames 1 and 5 of each cycle.
    assert found == [0, 5, 9, 13, 16]
    assert all("contact" in r["reason"] for r in report if r["frame"] in (5, 9, 13))
    frames = _rgba(rgb, alpha)
    out, durations = api.time_animation(frames, found, on=2, hold=2)
    # 5-frame first segment: key + 2 in-betweens (1.5 rounds up); 4-frame ones: key + 1; 3-frame last: key + 1
    assert durations == [2, 2, 2] + [2, 2] * 3 + [2]
    for key in found:
        assert any(torch.equal(o, frames[key]) for o in out)


def test_real_walk_cycle_as_a_loop_keys_both_down_positions_and_keeps_its_length():
    rgb, alpha = _kenney_walk(cycles=1)
    cycle = _rgba(rgb[:8], alpha[:8])  # frames 0..7: frame 0 follows frame 7
    report = api.key_pose_report(cycle, loop=True)
    # Around the loop both down positions are contacts, frame 1 included (beside the forced first frame otherwise)
    assert sorted(r["frame"] for r in report) == [1, 5] and all(r["reason"] == "contact" for r in report)
    out, durations = api.time_animation(cycle, [1, 5], on=2, hold=2, loop=True)
    # key 1, one in-between, key 5, one in-between across the seam: no end keys added, the cycle's 8 frames kept
    assert durations == [2, 2, 2, 2] and torch.equal(out[0], cycle[1]) and torch.equal(out[2], cycle[5])


def test_run_cycle_rig_contacts_from_pose_keypoints():
    images, keypoints = api.pose_from_bvh(ROOT / "nodes" / "pose" / "motions" / "run_cycle.bvh", width=128, height=128)
    report = api.key_pose_report(images, pose=keypoints)
    contacts = sorted(r["frame"] for r in report if "contact" in r["reason"])
    points = np.array([np.reshape(f["people"][0]["pose_keypoints_2d"], (-1, 3))[:, :2] for f in keypoints]) * 128
    for ankle in (10, 13):
        fall = np.diff(points[:, ankle, 1])
        landings = [t for t in range(1, len(fall)) if fall[t - 1] > 1.0 and fall[t] < 0.5 * fall[t - 1]]
        assert any(abs(c - t) <= 1 for c in contacts for t in landings), (ankle, contacts, landings)
    assert len(contacts) == 2  # one landing per foot in the cycle


def test_timing_chart_node_feeds_the_sprite_savers(eased, tmp_path, monkeypatch):
    from gameanim.core import host
    from gameanim.nodes.sprite.comfy_nodes import GameAnimSpriteExport, GameAnimSpriteSheet
    from gameanim.nodes.timing.comfy_nodes import GameAnimKeyPoses, GameAnimSmearFrames, GameAnimTimingChart

    monkeypatch.setattr(host, "output_dir", lambda: tmp_path / "output")
    monkeypatch.setattr(host, "temp_dir", lambda: tmp_path / "temp")
    (tmp_path / "output").mkdir()
    rgb, alpha, truth = eased
    image, mask = torch.from_numpy(rgb), torch.from_numpy(alpha)
    keys = GameAnimKeyPoses().run(image, 0, False, 0.5, 60.0, mask=mask)["result"][0]
    assert keys == ", ".join(str(k) for k in truth)
    result = GameAnimTimingChart().run(image, keys, 2, 3, "ease-in-out", 0.0, 0.0, "flow", mask=mask)
    out, out_mask, timing, durations, chart = result["result"]
    assert json.loads(durations) == timing["durations"] and len(out) == len(timing["durations"])
    assert chart.shape[0] == 1 and chart.shape[-1] == 3 and result["ui"]["gameanim_preview"]
    smeared = GameAnimSmearFrames().run(out, out_mask, 8.0, 0.7, "smear", 3, timing=timing)
    assert not set(json.loads(smeared[2])["smeared"]) & set(timing["keys"])
    sheet = GameAnimSpriteSheet().run(
        [smeared[0]],
        ["walk"],
        ["grid"],
        [0],
        [1],
        [0],
        [False],
        [10.0],
        [False],
        [True],
        ["godot4"],
        mask=[smeared[1]],
        timing=[timing],
    )
    atlas = json.loads(sheet["result"][2])
    assert [f["duration"] for f in atlas["frames"].values()] == [d * 100 for d in timing["durations"]]
    tres = next((tmp_path / "output").glob("walk_*.tres")).read_text()
    # Godot 4 stores durations relative to the animation speed: holds of 3 frames are 1.5x the twos
    relative = [float(v) for v in re.findall(r'"duration": ([0-9.]+)', tres)]
    assert relative == [d / min(timing["durations"]) for d in timing["durations"]]
    files = GameAnimSpriteExport().run(smeared[0], "walk", "apng", 10.0, 0, mask=smeared[1], timing=timing)
    from PIL import Image

    with Image.open(tmp_path / "output" / files["result"][0]) as apng:
        delays = []
        for index in range(apng.n_frames):
            apng.seek(index)
            delays.append(apng.info["duration"])
    assert delays == [d * 100 for d in timing["durations"]]
    with pytest.raises(InputError, match="durations"):
        GameAnimSpriteExport().run(image, "x", "apng", 10.0, 0, mask=mask, timing=timing)


def test_timing_nodes_read_a_transparency_mask_as_its_inverse(eased):
    """Core Load Image's MASK is 1 where transparent: with ``mask_is='transparency'`` every timing node and Sprite
    Timing give exactly what the same alpha gives."""
    from gameanim.nodes.sprite.comfy_nodes import GameAnimSpriteTiming
    from gameanim.nodes.timing.comfy_nodes import GameAnimKeyPoses, GameAnimSmearFrames, GameAnimTimingChart

    rgb, alpha, _ = eased
    alpha = np.round(alpha * 256) / 256  # 8-bit steps: 1 - (1 - a) == a exactly in float32
    image, mask, inverse = torch.from_numpy(rgb), torch.from_numpy(alpha), torch.from_numpy(1.0 - alpha)
    keys = GameAnimKeyPoses().run(image, 0, False, 0.5, 60.0, mask=mask)["result"]
    flipped = GameAnimKeyPoses().run(image, 0, False, 0.5, 60.0, mask=inverse, mask_is="transparency")["result"]
    assert keys[0] == flipped[0] and torch.equal(keys[1], flipped[1])
    args = (image, keys[0], 2, 2, "ease-in-out", 0.0, 0.0, "flow")
    chart = GameAnimTimingChart().run(*args, mask=mask)["result"]
    chart_t = GameAnimTimingChart().run(*args, mask=inverse, mask_is="transparency")["result"]
    assert all(torch.equal(a, b) for a, b in zip(chart[:2], chart_t[:2], strict=True)) and chart[3] == chart_t[3]
    drawn = torch.round(chart[1] * 256) / 256
    smear = GameAnimSmearFrames().run(chart[0], drawn, 4.0, 0.7, "smear", 3)
    smear_t = GameAnimSmearFrames().run(chart[0], 1.0 - drawn, 4.0, 0.7, "smear", 3, mask_is="transparency")
    assert torch.equal(smear[0], smear_t[0]) and torch.equal(smear[1], smear_t[1]) and smear[2] == smear_t[2]
    timed = GameAnimSpriteTiming().run(image, "ping_pong", 2, 8, 24.0, 12.0, 4, mask=mask)
    timed_t = GameAnimSpriteTiming().run(image, "ping_pong", 2, 8, 24.0, 12.0, 4, mask=inverse, mask_is="transparency")
    assert torch.equal(timed[1], timed_t[1]) and torch.equal(timed[1], mask[json.loads(timed[2])["indices"]])
