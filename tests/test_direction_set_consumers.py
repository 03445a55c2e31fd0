"""A direction set's sheet in real engines: Phaser 3 (headless Chromium) and Godot 3 play every (action, direction).

The clips are the rig's own pose renders, one per direction and action, handed from Direction Set
through Render Pose to Save Sprite Sheet as ComfyUI hands lists (the Wan stage in between is run in
``tests/integration/test_direction_set.py``).  Skips, with the reason, when a consumer is not installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gameanim.nodes.pose.comfy_nodes import DirectionSet, LoadMotion, PoseCamera, RenderPose
from gameanim.nodes.sprite.comfy_nodes import GameAnimSpriteSheet
from test_sprite_consumers import run_godot3, run_phaser

ACTIONS = ("run", "stride")
COMPASS = ("e", "se", "s", "sw", "w", "nw", "n", "ne")
NAMES = [f"{a}_{d}" for a in ACTIONS for d in COMPASS]


@pytest.fixture(scope="module")
def direction_sheet(tmp_path_factory) -> tuple[Path, dict]:
    """Eight directions of two actions (the run cycle, and its first half) on one sheet; folder and atlas."""
    base = tmp_path_factory.mktemp("direction_set")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GAMEANIM_BASE_DIR", str(base))
        (run,) = LoadMotion().load("sample:run_cycle.bvh", 0, -1, 4, "auto")
        (stride,) = LoadMotion().load("sample:run_cycle.bvh", 0, 12, 3, "auto")
        (camera,) = PoseCamera().build("side_right", "orthographic", 64, 64, 0.05, True, 30.0, elevation=30.0)
        poses, cameras, names, _ = DirectionSet().expand(run, camera, ", ".join(ACTIONS), "8", pose3d_2=stride)
        clips = [RenderPose().render(p, c, 2, False)["result"][0] for p, c in zip(poses, cameras, strict=True)]
        masks = [(clip.amax(dim=-1) > 0).float() for clip in clips]  # the skeleton drawn on black
        out = GameAnimSpriteSheet().run(
            image=clips, mask=masks, animation=names, fps=[8.0], filename_prefix=["sheet"], layout=["packed"],
            columns=[0], padding=[2], extrude=[1], power_of_two=[False], merge_holds=[False], aseprite_json=[True],
            godot=["godot3"],
        )  # fmt: skip
    folder = base / "output"
    for name in out["ui"]["text"][0].split(", "):  # the consumers load fixed names: sheet.png, sheet.json, ...
        (folder / name).rename(folder / name.replace("sheet_00001", "sheet"))
    return folder, json.loads((folder / "sheet.json").read_text(encoding="utf-8"))


def _rects(atlas: dict) -> dict[str, list[list[int]]]:
    frames = atlas["frames"]
    return {n: [[frames[f]["frame"][k] for k in "xywh"] for f in fs] for n, fs in atlas["animations"].items()}


def test_sheet_names_every_action_and_direction(direction_sheet):
    _, atlas = direction_sheet
    assert list(atlas["animations"]) == NAMES
    counts = {name: len(frames) for name, frames in atlas["animations"].items()}
    assert {counts[f"run_{d}"] for d in COMPASS} == {6} and {counts[f"stride_{d}"] for d in COMPASS} == {4}


def test_phaser_plays_every_direction(direction_sheet):
    folder, atlas = direction_sheet
    result = run_phaser(folder)
    expected = _rects(atlas)
    assert list(result["played"]["texturepacker"]) == NAMES
    assert result["played"]["texturepacker"] == expected
    assert result["played"]["aseprite"] == expected
    rects = [tuple(r) for rs in expected.values() for r in rs]
    assert len(set(rects)) == len(rects), "every frame of every direction has its own picture"


def test_godot3_plays_every_direction(direction_sheet):
    folder, atlas = direction_sheet
    result = run_godot3(folder)
    got = {a["name"]: a for a in result["animations"]}
    assert sorted(got) == sorted(NAMES)
    for name, rects in _rects(atlas).items():
        assert [r[:4] for r in got[name]["regions"]] == rects, name
        assert got[name]["loop"] and got[name]["speed"] == 8
