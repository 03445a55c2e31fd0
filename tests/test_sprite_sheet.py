"""Sprite sheets: layouts, padding/extrusion, power of two, atlas formats and durations."""

from __future__ import annotations

import json

import gameanim.nodes.sprite.sheet as sheet
import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError, UnsafePathError
from support import sprite_synth as synth


def frames_rgba(t=5, h=40, w=30, seed=0):
    rng = np.random.default_rng(seed)
    rgba = np.zeros((t, h, w, 4), np.uint8)
    for i in range(t):
        y0, x0 = rng.integers(0, h // 2), rng.integers(0, w // 2)
        rgba[i, y0 : y0 + h // 3, x0 : x0 + w // 3] = [40 * i, 200, 30, 255]
    return rgba


def assert_frames_match(built, rgba):
    """Every atlas rectangle holds exactly the (trimmed) source pixels it claims."""
    for i, f in enumerate(built.frames):
        got = built.rgba[f.y : f.y + f.h, f.x : f.x + f.w]
        want = rgba[i, f.src_y : f.src_y + f.h, f.src_x : f.src_x + f.w]
        np.testing.assert_array_equal(got, want)
        # Trimming dropped only transparent pixels.
        assert rgba[i, ..., 3].sum() == want[..., 3].sum()


def no_overlap(built, gap):
    rects = [(f.x, f.y, f.x + f.w, f.y + f.h) for f in built.frames]
    for i, a in enumerate(rects):
        for b in rects[i + 1 :]:
            assert a[2] + gap <= b[0] or b[2] + gap <= a[0] or a[3] + gap <= b[1] or b[3] + gap <= a[1]


@pytest.mark.parametrize("layout", ["grid", "packed"])
@pytest.mark.parametrize(("padding", "extrude"), [(0, 0), (2, 0), (2, 1)])
def test_layouts_hold_the_right_pixels(layout, padding, extrude):
    rgba = frames_rgba(t=7)
    built = sheet.build_sheet(rgba, layout=layout, padding=padding, extrude=extrude)
    assert len(built.frames) == 7
    assert_frames_match(built, rgba)
    no_overlap(built, padding + 2 * extrude)
    if layout == "packed":
        assert all(f.trimmed for f in built.frames)
        assert built.rgba.shape[0] * built.rgba.shape[1] < 7 * 40 * 30


def test_grid_columns_and_power_of_two():
    rgba = frames_rgba(t=5, h=20, w=10)
    built = sheet.build_sheet(rgba, columns=5, padding=0)
    assert built.size == (50, 20)
    assert [f.x for f in built.frames] == [0, 10, 20, 30, 40]
    pot = sheet.build_sheet(rgba, columns=5, padding=0, power_of_two=True)
    assert pot.size == (64, 32)


def test_extrusion_repeats_edge_pixels():
    rgba = np.zeros((1, 4, 4, 4), np.uint8)
    rgba[0] = [255, 0, 0, 255]
    built = sheet.build_sheet(rgba, padding=0, extrude=2)
    assert built.size == (8, 8)
    assert (built.rgba[..., 3] == 255).all()  # the border ring is the frame's edge, repeated


def test_texturepacker_and_aseprite_contents():
    rgba = frames_rgba(t=3)
    built = sheet.build_sheet(rgba, [100, 200, 100], layout="packed", name="walk")
    tp = sheet.texturepacker(built, "walk.png")
    assert list(tp["frames"]) == ["walk_000", "walk_001", "walk_002"]
    assert tp["meta"]["size"] == {"w": built.size[0], "h": built.size[1]} and tp["meta"]["image"] == "walk.png"
    assert [v["duration"] for v in tp["frames"].values()] == [100, 200, 100]
    assert tp["frames"]["walk_001"]["sourceSize"] == {"w": 30, "h": 40}
    arr = sheet.texturepacker(built, "walk.png", array=True)
    assert [f["filename"] for f in arr["frames"]] == list(tp["frames"])
    ase = sheet.aseprite(built, "walk.png")
    assert ase["meta"]["frameTags"][0] == {
        "name": "walk",
        "from": 0,
        "to": 2,
        "direction": "forward",
        "color": "#000000ff",
    }
    assert list(ase["frames"]) == ["0", "1", "2"]
    json.dumps(ase)


def test_godot_tres_text():
    rgba = frames_rgba(t=3)
    built = sheet.build_sheet(rgba, [100, 200, 100], name="walk")
    g4 = sheet.godot4_tres(built, "res://walk.png")
    assert g4.startswith('[gd_resource type="SpriteFrames" load_steps=5 format=3]')
    assert g4.count('[sub_resource type="AtlasTexture"') == 3
    assert '"duration": 2,' in g4 and '"speed": 10' in g4 and '"name": &"walk"' in g4
    g3 = sheet.godot3_tres(built, "res://walk.png")
    assert "format=2" in g3 and g3.count("SubResource( 2 )") == 2  # the 200 ms frame is repeated
    f = built.frames[1]
    assert f"region = Rect2({f.x}, {f.y}, {f.w}, {f.h})" in g4


def test_api_sprite_sheet_contract():
    frames, alpha, _ = synth.clip(t=4, h=48, w=64)
    sheet_rgba, atlas = api.sprite_sheet(torch.from_numpy(frames), torch.from_numpy(alpha), columns=2)
    assert sheet_rgba.shape == (1, 1 + 2 * 49, 1 + 2 * 65, 4)
    assert set(atlas) == {"frames", "animations", "meta"}
    assert atlas["animations"] == {"sprite": ["sprite_000", "sprite_001", "sprite_002", "sprite_003"]}
    assert atlas["meta"]["size"] == {"w": 131, "h": 99}
    assert atlas["frames"]["sprite_001"]["frame"] == {"x": 66, "y": 1, "w": 64, "h": 48}
    got = sheet_rgba[0, 1:49, 66:130, 3].numpy()
    np.testing.assert_allclose(got, alpha[1], atol=1 / 255)


def test_merge_holds_becomes_durations():
    frames, alpha, _ = synth.clip(t=4, h=48, w=64)
    held = api.hold_frames(torch.from_numpy(frames), 2)
    held_a = api.hold_frames(torch.from_numpy(alpha), 2)
    _, atlas = api.sprite_sheet(held, held_a, fps=10, merge_holds=True)
    assert [f["duration"] for f in atlas["frames"].values()] == [200, 200]


def test_save_sprite_sheet_files_and_confinement(tmp_path):
    frames, alpha, _ = synth.clip(t=3, h=48, w=64)
    paths = api.save_sprite_sheet(
        torch.from_numpy(frames),
        torch.from_numpy(alpha),
        tmp_path,
        "out/knight",
        formats=("texturepacker_hash", "aseprite_array", "godot4", "godot3"),
    )
    assert [p.name for p in paths] == [
        "knight.png",
        "knight.json",
        "knight.aseprite-array.json",
        "knight.tres",
        "knight.godot3.tres",
    ]
    assert all(p.parent == tmp_path / "out" for p in paths)
    assert json.loads(paths[1].read_text())["meta"]["image"] == "knight.png"
    for bad in ("../escape", "/abs/x", "..\\x"):
        with pytest.raises(UnsafePathError):
            api.save_sprite_sheet(torch.from_numpy(frames), torch.from_numpy(alpha), tmp_path, bad)


def test_sheet_bad_input():
    with pytest.raises(InputError, match="empty"):
        sheet.build_sheet(np.zeros((0, 4, 4, 4), np.uint8))
    with pytest.raises(InputError, match="duration"):
        sheet.build_sheet(frames_rgba(t=2), [100])
    with pytest.raises(InputError, match="layout"):
        sheet.build_sheet(frames_rgba(t=2), layout="spiral")
    with pytest.raises(InputError, match="match"):
        api.sprite_sheet(torch.zeros(2, 8, 8, 3), torch.zeros(2, 4, 4))


def test_several_animations_share_one_sheet_and_every_atlas_names_them():
    from gameanim.nodes.sprite import operations

    small = synth.clip(t=3, h=40, w=30, seed=1)
    tall = synth.clip(t=2, h=48, w=26, seed=2)
    built = operations.build_animation_sheet(
        [(torch.from_numpy(small[0]), torch.from_numpy(small[1])), (torch.from_numpy(tall[0]), tall[1])],
        ["walk", "jump"],
        [10.0, 4.0],
    )
    assert [f.name for f in built.frames] == ["walk_000", "walk_001", "walk_002", "jump_000", "jump_001"]
    assert {(f.src_w, f.src_h) for f in built.frames} == {(30, 48)}  # one frame size: the largest of each side
    assert [f.duration_ms for f in built.frames] == [100, 100, 100, 250, 250]
    # The smaller clip sits on the shared frame's bottom edge, centred: its first row is transparent.
    first = built.frames[0]
    assert built.rgba[first.y : first.y + 8, first.x : first.x + 30, 3].max() == 0
    tp = sheet.texturepacker(built, "s.png")
    assert tp["animations"] == {"walk": ["walk_000", "walk_001", "walk_002"], "jump": ["jump_000", "jump_001"]}
    tags = sheet.aseprite(built, "s.png")["meta"]["frameTags"]
    assert [(t["name"], t["from"], t["to"]) for t in tags] == [("walk", 0, 2), ("jump", 3, 4)]
    godot4 = sheet.godot4_tres(built, "res://s.png")
    assert godot4.count('"name": &"walk"') == 1 and godot4.count('"name": &"jump"') == 1
    assert '"speed": 10' in godot4 and '"speed": 4' in godot4
    assert 'SubResource("AtlasTexture_4")' in godot4.split('&"walk"')[1]  # jump's frames follow walk's block
    godot3 = sheet.godot3_tres(built, "res://s.png")
    assert godot3.count('"name": "walk"') == 1 and godot3.count('"name": "jump"') == 1


@pytest.mark.parametrize(
    "names,match", [(["a"], "one animation name per clip"), (["a", "a"], "distinct"), (["a", " "], "non-empty")]
)
def test_animation_names_are_checked(names, match):
    from gameanim.nodes.sprite import operations

    clip = synth.clip(t=2, h=20, w=20)
    with pytest.raises(InputError, match=match):
        operations.build_animation_sheet([(clip[0], clip[1])] * 2, names, [12.0, 12.0])
