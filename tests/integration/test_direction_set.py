"""The rig → direction set → Wan 2.1 VACE → one sprite sheet workflow in a real ComfyUI, on a tiny VACE DiT.

Runs on ``rig_server`` (tiny Wan 2.1 VACE DiT, random full-size Wan VAE, UMT5 stand-in; see
:mod:`.wan_models`).  The shipped graph runs with a second motion connected (two actions), four
directions, 64x64, 5 frames and 2 steps; ComfyUI runs every node after Direction Set once per clip and
Save Sprite Sheet gets all of them.  The sheet it writes is then played by Phaser (headless Chromium)
and Godot 3, one animation per (action, direction).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from .comfy_server import describe_failure
from .wan_models import STANDIN_NODE, assert_only_the_text_encoder_is_missing

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "workflows" / "api" / "rig_to_direction_set.json"
ACTIONS = ("run", "stride")
DIRECTIONS = ("e", "s", "w", "n")
NAMES = [f"{a}_{d}" for a in ACTIONS for d in DIRECTIONS]
# A CPU-sized run: 64x64, 5 frames (4n+1), 2 steps. Random tiny Wan weights decode noise, not a solid key:
# the clips' Remove Background (19) keeps them opaque.
REDUCTIONS = {
    "2": {"width": 64, "height": 64},
    "3": {"directions": "4", "actions": ", ".join(ACTIONS), "pose3d_2": ["90", 0]},
    "4": {"max_frames": 5},
    "16": {"steps": 2},
    "19": {"if_not_solid": "keep opaque"},
}
SECOND_MOTION = {  # the first half of the shipped run cycle as a second action
    "class_type": "GameAnimLoadMotion",
    "inputs": {"motion": "sample:run_cycle.bvh", "frame_start": 0, "frame_end": 12, "frame_step": 1,
               "skeleton_mapping": "auto"},
}  # fmt: skip


def _workflow() -> dict:
    return json.loads(WORKFLOW.read_text(encoding="utf-8"))


def test_shipped_workflow_validates_except_for_the_absent_text_encoder(rig_server):
    """Unchanged, the graph is valid in real ComfyUI; only the model file nobody placed is reported."""
    assert_only_the_text_encoder_is_missing(rig_server.queue(_workflow()), _workflow())


@pytest.fixture(scope="module")
def direction_sheet(rig_server, tmp_path_factory) -> Path:
    """Run the reduced workflow; a folder with its sheet and atlases renamed sheet.* (what the consumers load)."""
    prompt = _workflow()
    prompt["10"]["class_type"] = STANDIN_NODE
    prompt["90"] = SECOND_MOTION
    for node_id, inputs in REDUCTIONS.items():
        prompt[node_id]["inputs"].update(inputs)
    response = rig_server.queue(prompt)
    body = response.json()
    assert response.status_code == 200 and body.get("node_errors") == {}, json.dumps(body, indent=1)
    entry = rig_server.wait_history(body["prompt_id"], timeout=1500)
    assert entry["status"]["status_str"] == "success", describe_failure(entry)
    # Render Pose ran once per clip, each with its direction's camera (its preview caption names the view)
    captions = [p["caption"] for p in entry["outputs"]["5"]["gameanim_preview"]]
    azimuths = {"e": 90, "s": 0, "w": 270, "n": 180}
    assert captions == [f"azimuth {azimuths[d]}° · elevation 30° · orthographic" for _ in ACTIONS for d in DIRECTIONS]
    (sheet,) = entry["outputs"]["22"]["images"]
    out = rig_server.base / "output" / sheet["subfolder"]
    stem = Path(sheet["filename"]).stem
    folder = tmp_path_factory.mktemp("direction_sheet")
    for path in out.glob(f"{stem}.*"):
        shutil.copy(path, folder / path.name.replace(stem, "sheet"))
    return folder


def test_one_sheet_names_every_action_and_direction(direction_sheet):
    atlas = json.loads((direction_sheet / "sheet.json").read_text(encoding="utf-8"))
    assert list(atlas["animations"]) == NAMES
    assert all(atlas["animations"][name] for name in NAMES)
    aseprite = json.loads((direction_sheet / "sheet.aseprite.json").read_text(encoding="utf-8"))
    assert [tag["name"] for tag in aseprite["meta"]["frameTags"]] == NAMES
    for tres in ("sheet.godot3.tres", "sheet.tres"):
        text = (direction_sheet / tres).read_text(encoding="utf-8")
        assert re.findall(r'"name": &?"(\w+)"', text) == NAMES, tres


def _rects(atlas: dict) -> dict[str, list[list[int]]]:
    frames = atlas["frames"]
    return {n: [[frames[f]["frame"][k] for k in "xywh"] for f in fs] for n, fs in atlas["animations"].items()}


def test_phaser_plays_every_direction(direction_sheet):
    from test_sprite_consumers import run_phaser

    expected = _rects(json.loads((direction_sheet / "sheet.json").read_text(encoding="utf-8")))
    result = run_phaser(direction_sheet)
    assert list(result["played"]["texturepacker"]) == NAMES
    assert result["played"]["texturepacker"] == expected
    assert result["played"]["aseprite"] == expected


def test_godot3_plays_every_direction(direction_sheet):
    from test_sprite_consumers import run_godot3

    atlas = json.loads((direction_sheet / "sheet.json").read_text(encoding="utf-8"))
    result = run_godot3(direction_sheet)
    got = {a["name"]: a for a in result["animations"]}
    assert sorted(got) == sorted(NAMES)
    for name, rects in _rects(atlas).items():
        # Godot 3 has no per-frame durations: a merged hold is listed once per 1/fps step
        regions = [r[:4] for r in got[name]["regions"]]
        assert [r for i, r in enumerate(regions) if i == 0 or r != regions[i - 1]] == rects, name
        assert got[name]["loop"] and got[name]["speed"] > 0
