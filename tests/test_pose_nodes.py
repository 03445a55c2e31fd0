"""Pose node classes in plain Python, the shipped workflow and the demo script."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from gameanim.core.errors import InputError, UnsafePathError
from gameanim.nodes.pose import comfy_nodes as nodes
from gameanim.nodes.pose.blender_client import ENV_VAR, BlenderError, blender_executable, motion_from_rig


@pytest.fixture()
def base_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    (tmp_path / "input").mkdir()
    return tmp_path


def test_node_chain(base_dir):
    choices = nodes.LoadMotion.INPUT_TYPES()["required"]["motion"][0]
    assert "sample:run_cycle.bvh" in choices
    (pose,) = nodes.LoadMotion().load("sample:run_cycle.bvh", 0, -1, 3, "auto")
    assert pose.frame_count == 8 and pose.mapping == "mixamo"
    (camera,) = nodes.PoseCamera().build("three_quarter", "perspective", 320, 256, 0.1, True, 30.0)
    rendered = nodes.RenderPose().render(pose, camera, 4, True)
    images, keypoints = rendered["result"]
    assert tuple(images.shape) == (8, 256, 320, 3) and len(keypoints) == 8
    (preview,) = rendered["ui"]["gameanim_preview"]
    assert len(preview["frames"]) == 8 and preview["caption"] == "three_quarter · perspective"
    depth, normal, mask = nodes.RenderPoseDepthNormal().render(pose, camera)
    assert tuple(depth.shape) == (8, 256, 320, 3) and tuple(normal.shape) == (8, 256, 320, 3)
    assert tuple(mask.shape) == (8, 256, 320) and 0.02 < float(mask.mean()) < 0.6
    out = nodes.SavePoseKeypoints().save(keypoints, "pose/test")
    saved = base_dir / "output" / "pose" / "test_00001.json"
    assert json.loads(saved.read_text()) == keypoints and out["result"] == ()
    assert out["ui"]["files"] == [{"filename": "test_00001.json", "subfolder": "pose", "type": "output"}]
    nodes.SavePoseKeypoints().save(keypoints, "pose/test")
    assert (base_dir / "output" / "pose" / "test_00002.json").exists()


def test_node_rejects_traversal_and_missing_files(base_dir):
    with pytest.raises(UnsafePathError):
        nodes.LoadMotion().load("../secret.bvh", 0, -1, 1, "auto")
    with pytest.raises(InputError, match="not found"):
        nodes.LoadMotion().load("nothing.bvh", 0, -1, 1, "auto")
    with pytest.raises(InputError, match="mapping_file is empty"):
        nodes.LoadMotion().load("sample:run_cycle.bvh", 0, -1, 1, nodes.CUSTOM_MAPPING)


def test_blender_not_configured_names_the_setting(base_dir, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(BlenderError, match=ENV_VAR) as info:
        blender_executable("")
    assert "blender_executable" in str(info.value)
    rig = base_dir / "input" / "hero.fbx"
    rig.write_bytes(b"not really fbx")
    with pytest.raises(BlenderError, match=ENV_VAR):
        nodes.LoadMotion().load("hero.fbx", 0, -1, 1, "auto")
    with pytest.raises(BlenderError, match="not an executable"):
        motion_from_rig(rig, blender=str(tmp_path / "no-blender-here"))


def test_demo_script_writes_frames_and_keypoints(pack_root, tmp_path):
    out = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, str(pack_root / "scripts" / "demo.py"), "--out", str(out), "--size", "256", "--step", "4"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    frames = sorted(out.glob("pose/pose_*.png"))
    assert len(frames) == 6
    keypoints = json.loads((out / "pose_keypoints.json").read_text())
    assert len(keypoints) == 6 and keypoints[0]["canvas_width"] == 256
    import cv2

    image = cv2.imread(str(frames[0]))
    assert image.shape == (256, 256, 3) and np.count_nonzero(image) > 100


def test_saved_keypoints_are_valid_json_or_a_clear_error(base_dir):
    """numpy values (some packs' keypoints hold them) are saved as plain numbers; NaN, which JSON cannot hold, and
    objects that are no keypoints are refused before a file is written."""
    frame = {
        "people": [{"pose_keypoints_2d": np.array([0.5, 0.25, 1.0] * 18, np.float32)}],
        "canvas_width": np.int64(64),
    }
    nodes.SavePoseKeypoints().save([frame], "pose/numpy")
    saved = json.loads((base_dir / "output" / "pose" / "numpy_00001.json").read_text())
    assert saved[0]["canvas_width"] == 64 and saved[0]["people"][0]["pose_keypoints_2d"][:3] == [0.5, 0.25, 1.0]
    broken = [{"people": [{"pose_keypoints_2d": [float("nan")] * 54}], "canvas_width": 64, "canvas_height": 64}]
    with pytest.raises(InputError, match="NaN or infinite coordinates"):
        nodes.SavePoseKeypoints().save(broken, "pose/broken")
    with pytest.raises(InputError, match="holds a value of type object, which is no keypoint data"):
        nodes.SavePoseKeypoints().save([{"people": [object()]}], "pose/broken")
    assert not list((base_dir / "output" / "pose").glob("broken*"))
