"""A sprite clip rendered from the shipped rig motion, with its POSE_KEYPOINT: for the rig-root anchor.

The run cycle (``nodes/pose/motions/run_cycle.bvh``) is rendered as the README demo's mannequin
(capsule depth > 0 is the alpha) seen from the side; ``shake`` plants whole-pixel camera shake in
the frames and in the keypoints alike, as a shaky render would.  Used by the tests, the anchor
benchmark and the docs pictures.
"""

from __future__ import annotations

import copy

import numpy as np


def run_cycle_clip(
    width: int = 256,
    height: int = 256,
    step: int = 2,
    follow_root: bool = True,
    shake: int = 0,
    seed: int = 0,
    pad: int = 8,
) -> tuple[np.ndarray, list, np.ndarray]:
    """``(alpha [T, height+2*pad, width+2*pad], pose, planted [T,2])`` of the run cycle (every ``step``-th frame)."""
    from gameanim.nodes.pose.conditions import SAMPLE_RUN_CYCLE, CameraSettings, render_pose
    from gameanim.nodes.pose.joint_tracks import load_motion
    from gameanim.nodes.pose.skeleton import pose3d_from_motion

    settings = CameraSettings(preset="side_right", width=width, height=height, follow_root=follow_root)
    motion = load_motion(SAMPLE_RUN_CYCLE, (0, None, step))
    render = render_pose(pose3d_from_motion(motion, "auto"), settings, with_depth_normal=True)
    alpha = (render.depth_maps > 0).astype(np.float32)
    t = len(alpha)
    planted = np.random.default_rng(seed).integers(-shake, shake + 1, (t, 2))
    full_w, full_h = width + 2 * pad, height + 2 * pad
    out = np.zeros((t, full_h, full_w), np.float32)
    pose = copy.deepcopy(render.keypoints)
    for i, (dx, dy) in enumerate(planted):
        out[i, pad + dy : pad + dy + height, pad + dx : pad + dx + width] = alpha[i]
        flat = pose[i]["people"][0]["pose_keypoints_2d"]
        for j in range(0, len(flat), 3):
            if flat[j + 2] > 0:
                flat[j] = (flat[j] * width + pad + dx) / full_w
                flat[j + 1] = (flat[j + 1] * height + pad + dy) / full_h
        pose[i]["canvas_width"], pose[i]["canvas_height"] = full_w, full_h
    return out, pose, planted
