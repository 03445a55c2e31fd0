"""Direction sets: the azimuth / elevation camera, compass naming, true sides per direction, one scale."""

from __future__ import annotations

import math

import gameanim.nodes.pose.camera as cam_mod
import numpy as np
import pytest
from gameanim.core.errors import InputError
from gameanim.nodes.pose import directions as dirs
from gameanim.nodes.pose.comfy_nodes import DirectionSet, LoadMotion, PoseCamera
from gameanim.nodes.pose.conditions import CameraSettings, render_pose
from gameanim.nodes.pose.joint_tracks import load_motion
from gameanim.nodes.pose.maps import project_pose
from gameanim.nodes.pose.skeleton import OPENPOSE_18, pose3d_from_motion
from support.pose_bvh import write_bvh

W, H = 256, 256
NOSE, NECK, R_SHOULDER, L_SHOULDER, R_HIP, L_HIP = (
    OPENPOSE_18.index(n) for n in ("nose", "neck", "r_shoulder", "l_shoulder", "r_hip", "l_hip")
)


@pytest.fixture(scope="module")
def tpose(tmp_path_factory):
    path = tmp_path_factory.mktemp("bvh") / "tpose.bvh"
    write_bvh(path, [((0.0, 100.0, 0.0), 0.0), ((3.0, 104.0, 7.0), 0.0)])
    return pose3d_from_motion(load_motion(path))


@pytest.fixture(scope="module")
def run_cycle():
    (pose,) = LoadMotion().load("sample:run_cycle.bvh", 0, -1, 1, "auto")
    return pose


@pytest.mark.parametrize(
    ("preset", "azimuth", "elevation"),
    [
        ("front", 0, 0),
        ("three_quarter", 45, 0),
        ("side_right", 90, 0),
        ("back", 180, 0),
        ("side_left", 270, 0),
        ("top", 180, 90),
    ],
)
@pytest.mark.parametrize("projection", cam_mod.PROJECTIONS)
def test_azimuth_camera_agrees_with_the_presets(tpose, preset, azimuth, elevation, projection):
    by_preset = cam_mod.make_camera(tpose, preset, projection, W, H)
    by_angle = cam_mod.make_camera(tpose, cam_mod.ORBIT, projection, W, H, azimuth=azimuth, elevation=elevation)
    np.testing.assert_allclose(by_angle.basis, by_preset.basis, atol=1e-12)
    np.testing.assert_allclose(project_pose(tpose, by_angle).xy, project_pose(tpose, by_preset).xy, atol=1e-9)


@pytest.mark.parametrize(
    ("elevation", "edge_degrees"), [(30.0, math.degrees(math.atan(0.5))), (35.264389682754654, 30.0)]
)
@pytest.mark.parametrize("azimuth", [0.0, 45.0, 90.0, 200.0])
def test_elevation_draws_isometric_ground(tpose, elevation, edge_degrees, azimuth):
    """A camera 30° up draws the ground's 45° grid as 2:1 pixel-art tiles; 35.26° as true isometric."""
    camera = cam_mod.make_camera(
        tpose, cam_mod.ORBIT, "orthographic", W, H, azimuth=azimuth, elevation=elevation, target=np.zeros(3), scale=1.0
    )
    right, _, view = camera.basis
    assert abs(right[1]) < 1e-12, "screen right stays horizontal: the picture never rolls"
    assert math.isclose(math.degrees(math.asin(-view[1])), elevation, abs_tol=1e-9)
    up = tpose.up
    away = np.cross(right, up)  # horizontal, away from the camera
    corners = np.stack([np.zeros(3), right + away, right - away])  # a ground tile's two edges from one corner
    xy = camera.project(np.broadcast_to(corners, (len(camera.eye), 3, 3)))[0][0]
    for corner in xy[1:]:
        dx, dy = corner - xy[0]
        assert math.isclose(math.degrees(math.atan2(abs(dy), abs(dx))), edge_degrees, abs_tol=1e-9)


def test_elevation_outside_the_range_is_refused(tpose):
    with pytest.raises(InputError, match="elevation"):
        cam_mod.make_camera(tpose, cam_mod.ORBIT, "orthographic", W, H, elevation=120.0)


def test_compass_names_and_order():
    eight = dirs.parse_directions("8")
    assert [d.name for d in eight] == ["e", "se", "s", "sw", "w", "nw", "n", "ne"]
    assert [d.azimuth for d in eight] == [90.0, 45.0, 0.0, 315.0, 270.0, 225.0, 180.0, 135.0]
    assert [d.name for d in dirs.parse_directions("4")] == ["e", "s", "w", "n"]
    listed = dirs.parse_directions("list", "S, e , n,back_left=225, a30=30")
    assert [(d.name, d.azimuth) for d in listed] == [
        ("s", 0.0),
        ("e", 90.0),
        ("n", 180.0),
        ("back_left", 225.0),
        ("a30", 30.0),
    ]


@pytest.mark.parametrize(
    ("listed", "message"),
    [
        ("e, up", "not a compass point"),
        ("e, e", "twice"),
        (" , ", "empty"),
        ("e, x=left", "degrees"),
        ("walk east=90", "letters"),
    ],
)
def test_bad_direction_lists_are_explained(listed, message):
    with pytest.raises(InputError, match=message):
        dirs.parse_directions("list", listed)


def test_action_names_one_per_motion():
    assert dirs.action_names(" run, walk ", 2) == ["run", "walk"]
    for text, count, message in [
        ("run", 2, "one comma-separated name"),
        ("run, run", 2, "differ"),
        ("r n", 1, "letters"),
    ]:
        with pytest.raises(InputError, match=message):
            dirs.action_names(text, count)


def _screen_angle(camera, pose) -> float:
    """Clockwise-from-east angle (y-down screen) of the rig's facing as drawn, frame 0."""
    xy = camera.project(np.stack([pose.root, pose.root + pose.forward], axis=1))[0][0]
    dx, dy = xy[1] - xy[0]
    return math.degrees(math.atan2(dy, dx)) % 360.0


@pytest.mark.parametrize("elevation", [30.0, 26.57])
def test_engine_lookup_by_screen_angle_finds_the_clip_facing_that_way(tpose, elevation):
    """``names[round(angle / 45°) % 8]`` (Godot / Phaser screen angles) picks the clip whose character faces that way."""
    settings = CameraSettings("side_right", "orthographic", W, H, elevation=elevation)
    clips = dirs.direction_set([("walk", tpose)], settings, dirs.parse_directions("8"))
    names = [c.name for c in clips]
    assert names == [f"walk_{d}" for d in dirs.COMPASS]
    for clip in clips:
        angle = _screen_angle(clip.camera.fit(tpose), tpose)
        assert names[round(angle / 45.0) % 8] == clip.name, (clip.name, angle)


def test_true_sides_per_direction(run_cycle):
    """OpenPose right/left stay the rig's own: east shows the right side nearest, north the back, and so on."""
    settings = CameraSettings("side_right", "orthographic", W, H, elevation=30.0)
    clips = {
        c.direction.name: c for c in dirs.direction_set([("run", run_cycle)], settings, dirs.parse_directions("8"))
    }
    for name, clip in clips.items():
        render = render_pose(run_cycle, clip.camera)
        xy, depth, visible = render.projected.xy, render.projected.depth, render.projected.visible
        people = render.keypoints[0]["people"][0]["pose_keypoints_2d"]
        kx = np.array(people[0::3]) * W
        np.testing.assert_allclose(kx[[R_SHOULDER, L_SHOULDER]], xy[0, [R_SHOULDER, L_SHOULDER], 0], atol=1e-3)
        faces_right = name in ("e", "se", "ne")
        faces_left = name in ("w", "sw", "nw")
        towards_viewer = name in ("s", "se", "sw")
        away = name in ("n", "ne", "nw")
        hips = xy[:, [R_HIP, L_HIP]].mean(axis=1)
        if faces_right or faces_left:
            if not away:  # the nose points where the character faces: ahead of the hips every frame
                assert ((xy[:, NOSE, 0] - hips[:, 0]) * (1 if faces_right else -1) > 0).all(), name
            # the side the character turns to the camera is nearer: right side for east, left for west
            near = depth[:, R_SHOULDER] < depth[:, L_SHOULDER]
            assert near.all() if faces_right else (~near).all(), name
        if towards_viewer:  # seen from the front: the character's right is on screen left, its face shows
            assert (xy[:, R_HIP, 0] < xy[:, L_HIP, 0]).all() and visible[:, NOSE].all(), name
        if away:  # seen from behind: its right is on screen right, no face drawn
            assert (xy[:, R_HIP, 0] > xy[:, L_HIP, 0]).all() and not visible[:, NOSE].any(), name


def test_east_is_the_side_right_preset_and_west_side_left(run_cycle):
    settings = CameraSettings("front", "orthographic", W, H)
    clips = {
        c.direction.name: c for c in dirs.direction_set([("run", run_cycle)], settings, dirs.parse_directions("4"))
    }
    for name, preset in (("e", "side_right"), ("w", "side_left"), ("s", "front"), ("n", "back")):
        direction_camera = clips[name].camera.fit(run_cycle)
        preset_camera = CameraSettings(preset, "orthographic", W, H).fit(run_cycle)
        np.testing.assert_allclose(direction_camera.basis, preset_camera.basis, atol=1e-12)
        maps = render_pose(run_cycle, clips[name].camera).pose_maps
        # same view, one shared scale: the clip is the preset's render up to that scale
        assert maps.shape == (run_cycle.frame_count, H, W, 3)


def test_every_clip_of_a_set_has_one_scale_and_stays_in_frame(run_cycle, tpose):
    margin = 0.1
    settings = CameraSettings("side_right", "perspective", W, H, margin=margin, follow_root=True, elevation=30.0)
    clips = dirs.direction_set([("run", run_cycle), ("pose", tpose)], settings, dirs.parse_directions("8"))
    assert [c.name for c in clips][:2] == ["run_e", "run_se"] and [c.name for c in clips][8:10] == ["pose_e", "pose_se"]
    cameras = [c.camera.fit(c.pose) for c in clips]
    assert len({round(c.scale, 9) for c in cameras}) == 1
    own_fit = [
        cam_mod.make_camera(
            c.pose, cam_mod.ORBIT, "perspective", W, H, margin, True, azimuth=c.direction.azimuth, elevation=30.0
        )
        for c in clips
    ]
    assert cameras[0].scale == pytest.approx(min(c.scale for c in own_fit))  # the widest view sets the scale
    for camera, clip in zip(cameras, clips, strict=True):
        xy, _ = camera.project(cam_mod.fit_points(clip.pose))
        assert xy.min() >= margin * W - 1e-6 and xy.max() <= (1 - margin) * W + 1e-6, clip.name


def test_node_outputs_one_list_entry_per_action_and_direction(run_cycle, tpose):
    node = DirectionSet()
    assert DirectionSet.OUTPUT_IS_LIST == (True, True, True, True)
    (camera,) = PoseCamera().build("top", "orthographic", 128, 128, 0.05, True, 30.0, elevation=10.0)
    poses, cameras, names, prompts = node.expand(
        run_cycle, camera, "run, idle", "list", "s, ne", "a knight, {view}, {action} {direction}", pose3d_3=tpose
    )
    assert names == ["run_s", "run_ne", "idle_s", "idle_ne"]
    assert poses == [run_cycle, run_cycle, tpose, tpose]
    assert [(c.azimuth, c.elevation, c.width) for c in cameras] == [(0.0, 90.0, 128), (135.0, 90.0, 128)] * 2
    assert prompts[0] == "a knight, front view, run s"
    assert prompts[1] == "a knight, three-quarter back view facing right, run ne"
    with pytest.raises(InputError, match="2 motion"):
        node.expand(run_cycle, camera, "run", "4", pose3d_2=tpose)
