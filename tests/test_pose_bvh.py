"""BVH parsing, kinematics (against pybvh when installed), skeleton mappings and their errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gameanim.core.errors import InputError
from gameanim.nodes.pose.bvh import forward_kinematics, parse_bvh, read_bvh
from gameanim.nodes.pose.conditions import SAMPLE_RUN_CYCLE
from gameanim.nodes.pose.joint_tracks import load_motion, motion_from_dict, select_frames
from gameanim.nodes.pose.skeleton import pose3d_from_motion, resolve_mapping
from support.pose_bvh import analytic_points, write_bvh

GOOD = """HIERARCHY
ROOT Hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT Spine
  {
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 5 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.04
0 100 0 0 0 0 0 0 90
1 100 0 0 0 0 90 0 0
"""


def test_good_file_and_kinematics():
    skel = parse_bvh(GOOD, "good.bvh")
    assert skel.names == ["Hips", "Spine", "Spine_End"] and skel.parents == [-1, 0, 1]
    pos, rot = forward_kinematics(skel)
    assert np.allclose(pos[0], [[0, 100, 0], [0, 110, 0], [0, 115, 0]])
    # Frame 1: Spine rotated 90 degrees about Z → its end site points along -X.
    assert np.allclose(pos[1, 2], [1 - 5, 110, 0])
    assert np.allclose(rot[1, 1] @ [0, 1, 0], [-1, 0, 0])


def _replace_line(line_no: int, text: str) -> str:
    lines = GOOD.splitlines()
    lines[line_no - 1] = text
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (GOOD.replace("HIERARCHY", "HIERARCHIE"), 1, "HIERARCHY"),
        (_replace_line(4, "  OFFSET 0 zero 0"), 4, "not a number"),
        (_replace_line(5, "  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation"), 5, "declares 6"),
        (_replace_line(9, "    CHANNELS 3 Zrotation Xrotation Wrotation"), 9, "unknown channel"),
        (_replace_line(13, "      CHANNELS 1 Xrotation"), 13, "End Site"),
        (_replace_line(19, "0 100 0 0 0 0 0 0"), 19, "has 8 values"),
        (_replace_line(20, "1 100 0 0 0 0 90 abc 0"), 20, "'abc'"),
        (_replace_line(17, "Frames: 3"), 20, "ends after 2"),
        (_replace_line(15, "}}"), 15, "unexpected"),
        (GOOD.replace("MOTION", "}\nMOTION"), 16, "unmatched"),
        (_replace_line(18, "Frame Time: 0"), 18, "positive"),
    ],
)
def test_malformed_bvh_names_the_line(text, line, words):
    with pytest.raises(InputError) as info:
        parse_bvh(text, "bad.bvh")
    message = str(info.value)
    assert f"bad.bvh, line {line}:" in message, message
    assert words in message, message


def test_missing_file_is_clear(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_bvh(tmp_path / "nope.bvh")


def test_positions_match_pybvh():
    pybvh = pytest.importorskip("pybvh", reason="pybvh (dev dependency) is not installed")
    ours, _ = forward_kinematics(read_bvh(SAMPLE_RUN_CYCLE))
    theirs = pybvh.frames_to_node_positions(pybvh.read_bvh_file(SAMPLE_RUN_CYCLE, world_up="+y"))
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() < 1e-6


def test_unknown_bones_name_the_missing_mapping(tmp_path):
    path = tmp_path / "odd.bvh"
    write_bvh(path, [((0, 100, 0), 0.0)], prefix="", rename={"LeftArm": "L_UpperArm", "RightArm": "R_UpperArm"})
    motion = load_motion(path)
    with pytest.raises(InputError) as info:
        pose3d_from_motion(motion)
    message = str(info.value)
    assert "mapping 'mixamo' is missing" in message
    assert "r_shoulder←RightArm" in message and "l_shoulder←LeftArm" in message
    assert "mapping 'cmu_asf' is missing" in message
    assert "mapping JSON" in message
    with pytest.raises(InputError, match="mapping 'cmu' is missing"):
        pose3d_from_motion(motion, "cmu")


def test_user_mapping_fixes_unknown_bones(tmp_path):
    path = tmp_path / "odd.bvh"
    write_bvh(path, [((0, 100, 0), 0.0)], prefix="", rename={"LeftArm": "L_UpperArm", "RightArm": "R_UpperArm"})
    mapping = dict(resolve_mapping(_mixamo_names())[1])
    mapping.update({"neck": ["R_UpperArm", "L_UpperArm"], "r_shoulder": "R_UpperArm", "l_shoulder": "L_UpperArm"})
    mapping_path = tmp_path / "map.json"
    mapping_path.write_text(json.dumps({"joints": mapping}))
    from gameanim.nodes.pose.skeleton import load_mapping

    pose = pose3d_from_motion(load_motion(path), load_mapping(mapping_path))
    expected, _, _ = analytic_points((0, 100, 0), 0.0)
    assert pose.mapping == "custom"
    assert np.abs(pose.points[0] - expected).max() < 1e-9


def _mixamo_names():
    from support.pose_bvh import JOINTS

    return [name for name, _, _ in JOINTS]


def test_bad_mapping_keys_are_reported():
    from gameanim.nodes.pose.skeleton import validate_mapping

    with pytest.raises(InputError, match="unknown mapping keys"):
        validate_mapping({"joints": {"left_knee": "X"}}, "map.json")
    with pytest.raises(InputError, match="lacks required keys"):
        validate_mapping({"joints": {"neck": "Neck"}}, "map.json")


def test_cmu_names_use_head_end_site(tmp_path):
    path = tmp_path / "cmu.bvh"
    write_bvh(path, [((0, 100, 0), 30.0)], prefix="", head_end_site=True)
    pose = pose3d_from_motion(load_motion(path))
    assert pose.mapping == "cmu"
    expected, _, _ = analytic_points((0, 100, 0), 30.0)
    assert np.abs(pose.points[0] - expected).max() < 1e-9


def test_frame_selection():
    assert select_frames(10, None).tolist() == list(range(10))
    assert select_frames(10, 3).tolist() == [0, 1, 2]
    assert select_frames(10, (2, None, 3)).tolist() == [2, 5, 8]
    assert select_frames(10, (0, -1, 4)).tolist() == [0, 4, 8]
    assert select_frames(10, [9, 1]).tolist() == [9, 1]
    with pytest.raises(InputError):
        select_frames(10, (20, None, 1))
    with pytest.raises(InputError):
        select_frames(10, [12])
    motion = load_motion(SAMPLE_RUN_CYCLE, (0, None, 2))
    assert motion.frame_count == 12 and motion.frame_numbers.tolist() == list(range(0, 24, 2))


def test_json_motion_z_up_equals_y_up():
    motion = load_motion(SAMPLE_RUN_CYCLE)
    to_z = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])  # Y-up → Z-up (inverse of the loader's map)
    data = {
        "format": "gameanim-motion",
        "version": 1,
        "up": "Z",
        "fps": 30,
        "joints": motion.names,
        "parents": motion.parents,
        "rest": {
            "positions": (motion.rest_positions @ to_z.T).tolist(),
            "rotations": (to_z @ motion.rest_rotations).tolist(),
        },
        "frames": [
            {"frame": i, "positions": (p @ to_z.T).tolist(), "rotations": (to_z @ r).tolist()}
            for i, (p, r) in enumerate(zip(motion.positions, motion.rotations, strict=True))
        ],
    }
    back = motion_from_dict(json.loads(json.dumps(data)))
    assert np.abs(back.positions - motion.positions).max() < 1e-9
    a, b = pose3d_from_motion(motion), pose3d_from_motion(back)
    assert np.abs(a.points - b.points).max() < 1e-9
    with pytest.raises(InputError, match="not a GameAnim motion file"):
        motion_from_dict({"format": "other"}, "x.json")
