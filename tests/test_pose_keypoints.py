"""POSE_KEYPOINT format: field-by-field check and a round trip through controlnet_aux's reader logic."""

from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np
import pytest
from gameanim import api
from gameanim.nodes.pose.conditions import SAMPLE_RUN_CYCLE
from gameanim.nodes.pose.maps import DRAW_CHUNK


class Keypoint(NamedTuple):
    x: float
    y: float


def decode_json_as_poses(pose_json: dict):
    """Re-implementation of comfyui_controlnet_aux's reader (decode_json_as_poses): flat [x, y, c]
    triples, anything with c < 1 is dropped (None); returns (people, height, width)."""
    height, width = pose_json["canvas_height"], pose_json["canvas_width"]

    def decompress(numbers):
        if not numbers:
            return None
        assert len(numbers) % 3 == 0
        return [None if c < 1.0 else Keypoint(x, y) for x, y, c in zip(*[iter(numbers)] * 3, strict=True)]

    people = [
        (
            decompress(p.get("pose_keypoints_2d")),
            decompress(p.get("hand_left_keypoints_2d")),
            decompress(p.get("hand_right_keypoints_2d")),
            decompress(p.get("face_keypoints_2d")),
        )
        for p in pose_json.get("people", [])
    ]
    return people, height, width


def is_normalized(keypoints) -> bool:
    """controlnet_aux's check: every found coordinate lies within [0, 1]."""
    found = [k for k in keypoints if k is not None]
    return all(0 <= k.x <= 1 and 0 <= k.y <= 1 for k in found)


@pytest.fixture(scope="module")
def rendered():
    from gameanim.nodes.pose.conditions import CameraSettings, render_motion_file

    return render_motion_file(SAMPLE_RUN_CYCLE, CameraSettings(preset="back", width=640, height=384), (0, None, 4))


def test_format_field_by_field(rendered):
    frames = json.loads(json.dumps(rendered.keypoints))  # must survive JSON unchanged
    assert frames == rendered.keypoints
    assert isinstance(frames, list) and len(frames) == 6
    for frame in frames:
        assert set(frame) == {"people", "canvas_height", "canvas_width"}
        assert frame["canvas_width"] == 640 and frame["canvas_height"] == 384
        assert isinstance(frame["canvas_width"], int) and isinstance(frame["canvas_height"], int)
        assert len(frame["people"]) == 1
        person = frame["people"][0]
        assert set(person) == {
            "pose_keypoints_2d",
            "face_keypoints_2d",
            "hand_left_keypoints_2d",
            "hand_right_keypoints_2d",
        }
        assert person["face_keypoints_2d"] is None and person["hand_left_keypoints_2d"] is None
        flat = person["pose_keypoints_2d"]
        assert len(flat) == 54 and all(isinstance(v, float) for v in flat)
        for x, y, c in zip(*[iter(flat)] * 3, strict=True):
            assert c in (0.0, 1.0)
            if c == 0.0:
                assert x == 0.0 and y == 0.0
            else:
                assert 0.0 <= x <= 1.0 and 0.0 <= y <= 1.0


def test_round_trip_through_reader(rendered):
    xy, visible = rendered.projected.xy, rendered.projected.visible
    for f, frame in enumerate(rendered.keypoints):
        people, height, width = decode_json_as_poses(json.loads(json.dumps(frame)))
        body, left_hand, right_hand, face = people[0]
        assert left_hand is None and right_hand is None and face is None
        assert len(body) == 18 and is_normalized(body)
        for i, kp in enumerate(body):
            if not visible[f, i]:
                assert kp is None
                continue
            assert abs(kp.x * width - xy[f, i, 0]) < 1e-6 and abs(kp.y * height - xy[f, i, 1]) < 1e-6
    # Back view: the reader sees no nose and no eyes.
    body = decode_json_as_poses(rendered.keypoints[0])[0][0][0]
    assert body[0] is None and body[14] is None and body[15] is None


def test_api_pose_from_bvh_matches_contract():
    images, keypoints = api.pose_from_bvh(
        str(SAMPLE_RUN_CYCLE), camera="side_right", width=256, height=192, frames=(0, 8, 1)
    )
    assert tuple(images.shape) == (8, 192, 256, 3) and str(images.dtype) == "torch.float32"
    assert 0.0 <= float(images.min()) and float(images.max()) <= 1.0 and float(images.max()) > 0.5
    assert len(keypoints) == 8 and keypoints[0]["canvas_width"] == 256
    assert "pose_from_bvh" in api.__all__ and "pose_from_motion_json" in api.__all__


def test_api_cancel_stops_render():
    token = api.CancelToken()
    calls = []

    def inner(done, total):
        calls.append((done, total))
        if len(calls) == 2:
            token.cancel()

    with pytest.raises(api.Cancelled):
        api.pose_from_bvh(str(SAMPLE_RUN_CYCLE), progress=token.progress(inner))
    assert calls == [(DRAW_CHUNK, 24), (2 * DRAW_CHUNK, 24)]  # stopped before the last frames were drawn


def test_api_pose_from_motion_json(tmp_path):
    from gameanim.nodes.pose.joint_tracks import load_motion

    motion = load_motion(SAMPLE_RUN_CYCLE)
    data = {
        "format": "gameanim-motion",
        "version": 1,
        "up": "Y",
        "fps": motion.fps,
        "joints": motion.names,
        "parents": motion.parents,
        "rest": {"positions": motion.rest_positions.tolist(), "rotations": motion.rest_rotations.tolist()},
        "frames": [
            {"frame": i, "positions": p.tolist(), "rotations": r.tolist()}
            for i, (p, r) in enumerate(zip(motion.positions, motion.rotations, strict=True))
        ],
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    a_img, a_kp = api.pose_from_motion_json(str(path), camera="three_quarter", frames=4)
    b_img, b_kp = api.pose_from_bvh(str(SAMPLE_RUN_CYCLE), camera="three_quarter", frames=4)
    assert np.array_equal(a_img.numpy(), b_img.numpy())
    assert np.allclose(
        np.array([f["people"][0]["pose_keypoints_2d"] for f in a_kp]),
        np.array([f["people"][0]["pose_keypoints_2d"] for f in b_kp]),
        atol=1e-9,
    )
