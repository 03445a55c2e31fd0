"""Pixel Art inside a real ComfyUI on VC2 Action Set's list of clips: one palette over every action.

ComfyUI hands a list node (``INPUT_IS_LIST``) all the clips of a list at once and maps its list outputs
(``OUTPUT_IS_LIST``) back onto the nodes after it; this runs the shipped ``vc2_action_set`` workflow (tiny
VC2, reduced as in ``test_comfyui``) with Pixel Art between the smear pass and Save Sprite Sheet, and reads
the colours of each action back from the sheet through its atlas.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from .comfy_server import describe_failure
from .workflow_models import WORKFLOW_REDUCTIONS

ROOT = Path(__file__).resolve().parents[2]
COLOURS = 6


def _action_set_with_pixel_art(scope: str) -> dict:
    prompt = json.loads((ROOT / "workflows" / "api" / "vc2_action_set.json").read_text(encoding="utf-8"))
    for node_id, inputs in WORKFLOW_REDUCTIONS["vc2_action_set"].items():
        prompt[node_id]["inputs"].update(inputs)
    prompt["20"] = {
        "class_type": "GameAnimSpritePixelArt",
        "inputs": {
            "image": ["10", 0],
            "mask": ["10", 1],
            "width": 32,
            "height": 32,
            "palette": "kmeans",
            "colours": COLOURS,
            "palette_file": "",
            "outline": False,
            "outline_colour": "000000",
            "seed": 0,
            "mask_is": "alpha",
            "palette_scope": scope,
        },
    }
    sheet = prompt["6"]["inputs"]
    sheet.update(image=["20", 0], mask=["20", 1], filename_prefix=f"pixel_list/{scope}", merge_holds=False)
    del prompt["7"]  # the GIF export is not what this checks
    return prompt


def _colours_per_action(server, scope: str) -> dict[str, set[tuple[int, ...]]]:
    response = server.queue(_action_set_with_pixel_art(scope))
    assert response.status_code == 200, response.text
    entry = server.wait_history(response.json()["prompt_id"])
    assert entry["status"]["status_str"] == "success", describe_failure(entry)
    (image,) = entry["outputs"]["6"]["images"]
    png = server.base / "output" / image["subfolder"] / image["filename"]
    atlas = json.loads(png.with_suffix(".json").read_text(encoding="utf-8"))
    sheet = np.asarray(Image.open(png).convert("RGBA"))
    colours = {}
    for action, names in atlas["animations"].items():
        found: set[tuple[int, ...]] = set()
        for name in names:
            box = atlas["frames"][name]["frame"]
            cell = sheet[box["y"] : box["y"] + box["h"], box["x"] : box["x"] + box["w"]]
            found |= {tuple(c) for c in cell[cell[..., 3] > 0][:, :3]}
        colours[action] = found
    return colours


def test_pixel_art_locks_one_palette_across_the_action_set(server):
    shared = _colours_per_action(server, "all_clips")
    assert len(shared) >= 2, shared.keys()  # the workflow's actions, one animation each
    assert all(shared.values()) and len(set().union(*shared.values())) <= COLOURS
    per_clip = _colours_per_action(server, "each_clip")
    assert per_clip.keys() == shared.keys()
    assert len(set().union(*per_clip.values())) > COLOURS, "each_clip fits one palette per action"
