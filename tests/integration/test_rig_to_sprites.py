"""The rig → Wan 2.1 VACE → sprite sheet workflow in a real ComfyUI, on a tiny VACE DiT.

Its own server (``rig_server`` in conftest, not the shared one) because it loads a test-only custom node:
the UMT5-XXL stand-in (see :mod:`.wan_models`).  The DiT is a tiny Wan 2.1 VACE in the released key layout that core
``UNETLoader`` detects; the VAE is ComfyUI's full-size Wan 2.1 VAE with random weights; the shipped
graph runs unchanged except for the stand-in, smaller sizes and fewer steps.
"""

from __future__ import annotations

import json
from pathlib import Path

from .comfy_server import describe_failure
from .wan_models import STANDIN_NODE, assert_only_the_text_encoder_is_missing

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "workflows" / "api" / "rig_to_sprites_wan.json"
# A CPU-sized run of the same graph: 64x64, 5 frames (4n+1), 2 steps.
# Random tiny Wan weights decode noise, not a solid key: the clip's Remove Background (19) keeps it opaque.
REDUCTIONS = {
    "2": {"width": 64, "height": 64},
    "3": {"max_frames": 5},
    "15": {"steps": 2},
    "19": {"if_not_solid": "keep opaque"},
}


def _workflow() -> dict:
    return json.loads(WORKFLOW.read_text(encoding="utf-8"))


def test_shipped_workflow_validates_except_for_the_absent_text_encoder(rig_server):
    """Unchanged, the graph is valid in real ComfyUI; only the model file nobody placed is reported."""
    assert_only_the_text_encoder_is_missing(rig_server.queue(_workflow()), _workflow())


def test_workflow_runs_to_sprite_sheet(rig_server):
    prompt = _workflow()
    prompt["9"]["class_type"] = STANDIN_NODE
    for node_id, inputs in REDUCTIONS.items():
        prompt[node_id]["inputs"].update(inputs)
    response = rig_server.queue(prompt)
    body = response.json()
    assert response.status_code == 200 and body.get("node_errors") == {}, json.dumps(body, indent=1)
    entry = rig_server.wait_history(body["prompt_id"], timeout=900)
    assert entry["status"]["status_str"] == "success", describe_failure(entry)

    log = rig_server.log()
    assert "WAN21_Vace" in log, "UNETLoader did not detect the tiny DiT as Wan 2.1 VACE"
    assert "unet missing" not in log and "unet unexpected" not in log, "the tiny DiT's keys do not match the layout"
    assert "Missing VAE keys" not in log and "Leftover VAE keys" not in log

    from PIL import Image

    out = rig_server.base / "output" / "gameanim"
    (raw,) = out.glob("rig_to_sprites_raw*.webp")
    with Image.open(raw) as clip:
        # 5 control frames (4n+1) -> 2 latents (+1 reference latent, trimmed) -> 5 decoded frames at 16 fps
        assert clip.n_frames == 5 and clip.size == (64, 64)
        clip.seek(1)
        clip.load()
        assert clip.info["duration"] == int(1000 / 16)  # the Fit node's fps reached the saver
    (atlas,) = out.glob("rig_to_sprites_0*[0-9].json")
    (aseprite,) = out.glob("rig_to_sprites_0*.aseprite.json")
    # 5 frames at 16 fps retimed to 12 fps: 4 frames in the sheet (fewer if merge_holds joins equal ones)
    frames = json.loads(atlas.read_text(encoding="utf-8"))["frames"]
    assert 1 <= len(frames) <= 4
    assert len(json.loads(aseprite.read_text(encoding="utf-8"))["frames"]) == len(frames)
    assert list(out.glob("rig_to_sprites*.png")) and list(out.glob("rig_to_sprites*.gif"))
    assert list(out.glob("rig_to_sprites*.tres")), "no Godot SpriteFrames written"
