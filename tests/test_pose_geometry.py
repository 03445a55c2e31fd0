"""Projection, orientation and drawing of rig poses against analytic geometry."""

from __future__ import annotations

import gameanim.nodes.pose.camera as cam_mod
import numpy as np
import pytest
from gameanim.core.errors import InputError
from gameanim.nodes.pose.joint_tracks import load_motion
from gameanim.nodes.pose.maps import project_pose, render_capsule_maps, render_pose_maps
from gameanim.nodes.pose.render import COLORS, capsule_maps, depth_image, normal_image
from gameanim.nodes.pose.skeleton import pose3d_from_motion
from support.pose_bvh import analytic_points, write_bvh

W, H = 512, 384
# Hand-derived camera axes (right, up, view) per preset for a rig facing +Z with its left at +X.
S2 = np.sqrt(0.5)
EXPECTED_AXES = {
    "front": ((1, 0, 0), (0, 1, 0), (0, 0, -1)),
    "back": ((-1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "side_right": ((0, 0, 1), (0, 1, 0), (1, 0, 0)),
    "side_left": ((0, 0, -1), (0, 1, 0), (-1, 0, 0)),
    "three_quarter": ((S2, 0, S2), (0, 1, 0), (S2, 0, -S2)),
    "top": ((-1, 0, 0), (0, 0, 1), (0, -1, 0)),
}
# Face points hidden per preset (indices: 0 nose, 14 r_eye, 15 l_eye, 16 r_ear, 17 l_ear).
EXPECTED_HIDDEN = {
    "front": set(),
    "back": {0, 14, 15},
    "side_right": {15, 17},
    "side_left": {14, 16},
    "three_quarter": {17},
    "top": set(),
}
FRAMES = [((0.0, 100.0, 0.0), 0.0), ((3.0, 104.0, 7.0), 0.0)]


@pytest.fixture(scope="module")
def pose(tmp_path_factory):
    path = tmp_path_factory.mktemp("bvh") / "tpose.bvh"
    write_bvh(path, FRAMES)
    return pose3d_from_motion(load_motion(path))


def analytic(frames):
    pts, centres, tops = zip(*(analytic_points(root, yaw) for root, yaw in frames), strict=True)
    return np.stack(pts), np.stack(centres), np.stack(tops)


@pytest.mark.parametrize("preset", cam_mod.PRESETS)
@pytest.mark.parametrize("projection", cam_mod.PROJECTIONS)
def test_projection_matches_analytic(pose, preset, projection):
    right, up, view = (np.array(v, dtype=float) for v in EXPECTED_AXES[preset])
    target = np.array([1.0, 95.0, -2.0])
    if projection == "orthographic":
        camera = cam_mod.make_camera(pose, preset, projection, W, H, target=target, scale=1.7)
    else:
        camera = cam_mod.make_camera(pose, preset, projection, W, H, target=target, scale=700.0, distance=400.0)
    pts, _, _ = analytic(FRAMES)
    rel = pts - (target if projection == "orthographic" else target - 400.0 * view)
    x, y, z = rel @ right, rel @ up, rel @ view
    if projection == "perspective":
        x, y = 700.0 * x / z, 700.0 * y / z
    else:
        x, y = 1.7 * x, 1.7 * y
    expected = np.stack([W / 2 + x, H / 2 - y], axis=-1)
    projected = project_pose(pose, camera)
    err = np.abs(projected.xy - expected).max()
    assert err < 0.5, f"{preset}/{projection}: max error {err:.4f} px"
    hidden = {i for i in range(18) if not projected.visible[0, i]}
    assert hidden == EXPECTED_HIDDEN[preset]


@pytest.mark.parametrize("preset", cam_mod.PRESETS)
def test_auto_fit_is_analytic(pose, preset):
    margin = 0.1
    camera = cam_mod.make_camera(pose, preset, "orthographic", W, H, margin=margin)
    right, up, _ = (np.array(v, dtype=float) for v in EXPECTED_AXES[preset])
    pts, centres, tops = analytic(FRAMES)
    fit = np.concatenate([pts, centres[:, None], tops[:, None]], axis=1).reshape(-1, 3)
    px, py = fit @ right, fit @ up
    scale = min(W * (1 - 2 * margin) / np.ptp(px), H * (1 - 2 * margin) / np.ptp(py))
    expected_x = W / 2 + scale * (pts @ right - (px.min() + px.max()) / 2)
    expected_y = H / 2 - scale * (pts @ up - (py.min() + py.max()) / 2)
    got = project_pose(pose, camera).xy
    assert abs(camera.scale - scale) < 1e-6
    assert np.abs(got - np.stack([expected_x, expected_y], axis=-1)).max() < 0.5


def _nearest_at(projected, f, k):
    """The visible point nearest the camera among those drawn on the same pixel as point ``k``."""
    close = np.linalg.norm(projected.xy[f] - projected.xy[f, k], axis=-1) < 1.0
    candidates = np.flatnonzero(close & projected.visible[f])
    return int(candidates[np.argmin(projected.depth[f, candidates])])


def _colour_at(image, xy):
    x, y = int(xy[0]), int(xy[1])
    return tuple(int(c) for c in image[y, x])


def test_back_view_swaps_colours_and_hides_face(pose):
    renders = {}
    for preset in ("front", "back"):
        camera = cam_mod.make_camera(pose, preset, "orthographic", W, H)
        projected = project_pose(pose, camera)
        renders[preset] = (projected, render_pose_maps(projected, W, H)[0])
    (front_p, front_img), (back_p, back_img) = renders["front"], renders["back"]
    # Front: the character's left shoulder (5) is on screen right; back: on screen left.
    assert front_p.xy[0, 5, 0] > front_p.xy[0, 2, 0]
    assert back_p.xy[0, 5, 0] < back_p.xy[0, 2, 0]
    right_front = front_p.xy[0, 5] if front_p.xy[0, 5, 0] > front_p.xy[0, 2, 0] else front_p.xy[0, 2]
    right_back = back_p.xy[0, 2] if back_p.xy[0, 2, 0] > back_p.xy[0, 5, 0] else back_p.xy[0, 5]
    assert _colour_at(front_img, right_front) == tuple(COLORS[5].astype(int))
    assert _colour_at(back_img, right_back) == tuple(COLORS[2].astype(int))
    assert front_p.visible[0, [0, 14, 15]].all()
    assert not back_p.visible[0, [0, 14, 15]].any()
    # No nose-coloured or eye-coloured pixel is drawn in the back view.
    for idx in (0, 14, 15):
        assert not (back_img == COLORS[idx].astype(np.uint8)).all(axis=-1).any()


def test_turn_keeps_true_sides_every_frame(tmp_path):
    yaws = [15.0 * i for i in range(13)]  # 0 → 180 degrees
    frames = [((0.0, 100.0, 0.0), yaw) for yaw in yaws]
    path = tmp_path / "turn.bvh"
    write_bvh(path, frames)
    pose = pose3d_from_motion(load_motion(path))
    camera = cam_mod.make_camera(pose, "front", "orthographic", W, H)
    projected = project_pose(pose, camera)
    images = render_pose_maps(projected, W, H)
    pts, _, _ = analytic(frames)
    expected, _ = camera.project(pts)
    for f, yaw in enumerate(yaws):
        for idx in (2, 3, 4, 5, 6, 7, 8, 11):  # sides of arms and hips follow the rotated rig exactly
            assert np.abs(projected.xy[f, idx] - expected[f, idx]).max() < 0.5, (yaw, idx)
        near = _nearest_at(projected, f, 5 if projected.depth[f, 5] < projected.depth[f, 2] else 2)
        assert _colour_at(images[f], projected.xy[f, near]) == tuple(COLORS[near].astype(int)), yaw
        # The character's left is on screen right until it has turned past 90 degrees.
        if yaw < 90:
            assert projected.xy[f, 5, 0] > projected.xy[f, 2, 0]
        elif yaw > 90:
            assert projected.xy[f, 5, 0] < projected.xy[f, 2, 0]
    assert projected.visible[0, 0] and not projected.visible[-1, 0]


def test_limbs_drawn_far_to_near(pose):
    # In a T-pose profile both arms collapse onto one pixel; the nearest wrist must win, whereas
    # the annotator's fixed order would always show the left wrist (index 7, drawn last).
    for preset, near in (("side_right", 4), ("side_left", 7)):
        camera = cam_mod.make_camera(pose, preset, "orthographic", W, H)
        projected = project_pose(pose, camera)
        image = render_pose_maps(projected, W, H)[0]
        assert _nearest_at(projected, 0, 2) == near
        assert _colour_at(image, projected.xy[0, 2]) == tuple(COLORS[near].astype(int)), preset


def test_depth_shading_darkens_far_side(pose):
    camera = cam_mod.make_camera(pose, "three_quarter", "orthographic", W, H)
    projected = project_pose(pose, camera)
    image = render_pose_maps(projected, W, H, depth_shading=True)[0]
    near, far = _colour_at(image, projected.xy[0, 4]), _colour_at(image, projected.xy[0, 7])
    assert max(far) < max(near)


def test_sphere_depth_and_normals_exact():
    seg = np.array([[[50.0, 40.0, 100.0], [50.0, 40.0, 100.0]]])
    zbuf, normals = capsule_maps(seg, np.array([20.0]), 100, 80)
    ys, xs = np.mgrid[0:80, 0:100] + 0.5
    rr = (xs - 50) ** 2 + (ys - 40) ** 2
    inside = rr < 400
    assert np.allclose(zbuf[inside], 100 - np.sqrt(400 - rr[inside]), atol=1e-3)
    assert np.isinf(zbuf[~inside]).all()
    assert np.allclose(normals[40, 50], [0.5 / 20, 0.5 / 20, -1.0], atol=2e-3)
    rgb = normal_image(normals)
    assert np.allclose(rgb[40, 50], [0.5 + 0.0125, 0.5 - 0.0125, 1.0], atol=2e-3)
    assert np.allclose(rgb[0, 0], [0.5, 0.5, 1.0])
    assert rgb[40, 69][0] > 0.9  # right edge faces right
    depth = depth_image(zbuf, 80.0, 100.0)
    assert depth[40, 50] == pytest.approx(1.0, abs=1e-3) and depth[0, 0] == 0.0


def test_capsule_maps_near_limb_brighter(pose):
    camera = cam_mod.make_camera(pose, "side_right", "orthographic", W, H)
    depth, normal = render_capsule_maps(pose, camera)
    assert depth.shape == (2, H, W) and normal.shape == (2, H, W, 3)
    xy, _ = camera.project(pose.points)
    hand = xy[0, 4]  # right wrist: nearest to a camera on the right
    assert depth[0, int(hand[1]), int(hand[0])] > depth[0].max() - 0.05
    assert (depth > 0).any() and normal.min() >= 0.0 and normal.max() <= 1.0


def test_hands_from_finger_bones(tmp_path):
    from gameanim.nodes.pose.conditions import CameraSettings, render_pose
    from gameanim.nodes.pose.render import HAND_COLORS
    from support.pose_bvh import FINGER_NAMES, rest_positions, yaw_matrix

    frames = [((0.0, 100.0, 0.0), 0.0), ((0.0, 100.0, 0.0), 180.0)]
    path = tmp_path / "hands.bvh"
    write_bvh(path, frames, fingers=True)
    pose = pose3d_from_motion(load_motion(path))
    assert pose.hands is not None and pose.hands.shape == (2, 2, 21, 3)
    rest = rest_positions()
    for f, (root, yaw) in enumerate(frames):
        for s, side in enumerate(("Left", "Right")):
            names = [f"{side}Hand"] + [f"{side}Hand{finger}{k}" for finger in FINGER_NAMES for k in range(1, 5)]
            expected = np.array(root) + rest_positions_rotated(rest, names, yaw_matrix(yaw))
            assert np.abs(pose.hands[f, s] - expected).max() < 1e-9
    result = render_pose(pose, CameraSettings(preset="front", width=W, height=H))
    person = result.keypoints[0]["people"][0]
    left, right = person["hand_left_keypoints_2d"], person["hand_right_keypoints_2d"]
    assert len(left) == 63 and len(right) == 63
    # Front view: the character's left hand is on screen right, and its wrist equals body point 7.
    assert left[0] > right[0] and left[0] == person["pose_keypoints_2d"][7 * 3]
    # From the top the fingers spread out: blue points and the annotator's rainbow edges are drawn.
    image = render_pose(pose, CameraSettings(preset="top", width=W, height=H)).pose_maps[0]
    assert (image == np.array([0, 0, 255], dtype=np.uint8)).all(axis=-1).sum() > 200
    assert (image == np.array(HAND_COLORS[5], dtype=np.uint8)).all(axis=-1).any()  # a rainbow finger edge
    assert pose3d_from_motion(load_motion(path), hands=False).hands is None


def rest_positions_rotated(rest, names, rot):
    return np.stack([rot @ rest[n] for n in names])


def test_no_hands_without_finger_bones(pose):
    assert pose.hands is None


def test_wider_fov_means_stronger_perspective(pose):
    """A wider angle moves the camera closer, so near and far points differ more in scale."""
    ratios = []
    for fov in (10.0, 60.0):
        camera = cam_mod.make_camera(pose, "front", "perspective", W, H, fov_degrees=fov)
        depth = camera.to_camera(pose.points)[..., 2]
        ratios.append(float(depth.max() / depth.min()))
    assert ratios[1] > ratios[0] > 1.0
    with pytest.raises(InputError):
        cam_mod.make_camera(pose, "front", "perspective", W, H, fov_degrees=0.0)
