"""Motion → pose maps + POSE_KEYPOINT (+ depth / normal maps): the whole path in one call.

Shared by the nodes, :mod:`...api` and ``scripts/demo.py`` so all three give the same result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...core.progress import ProgressFn
from .camera import Camera, make_camera
from .joint_tracks import Motion, load_motion
from .keypoints import pose_keypoint_frames
from .maps import Projected, project_pose, render_capsule_maps, render_pose_maps
from .skeleton import Pose3D, pose3d_from_motion

SAMPLE_DIR = Path(__file__).resolve().parent / "motions"
SAMPLE_RUN_CYCLE = SAMPLE_DIR / "run_cycle.bvh"


@dataclass
class CameraSettings:
    """What a user picks; the camera itself is fitted to each motion (see :func:`make_camera`)."""

    preset: str = "side_right"
    projection: str = "orthographic"
    width: int = 512
    height: int = 512
    margin: float = 0.08
    follow_root: bool = False
    fov_degrees: float = 30.0
    azimuth: float = 0.0
    elevation: float = 0.0
    fit_extent: tuple[float, float] | None = None

    def fit(self, pose: Pose3D) -> Camera:
        return make_camera(
            pose,
            self.preset,
            self.projection,
            self.width,
            self.height,
            self.margin,
            self.follow_root,
            self.fov_degrees,
            azimuth=self.azimuth,
            elevation=self.elevation,
            fit_extent=self.fit_extent,
        )


@dataclass
class PoseRender:
    """Everything one render produces; maps are uint8 (F, H, W, 3) / float32 in [0, 1]."""

    pose: Pose3D
    camera: Camera
    projected: Projected
    pose_maps: np.ndarray
    keypoints: list[dict[str, Any]]
    depth_maps: np.ndarray | None = None
    normal_maps: np.ndarray | None = None


def render_pose(
    pose: Pose3D,
    settings: CameraSettings,
    stick_width: int = 4,
    depth_shading: bool = False,
    with_depth_normal: bool = False,
    progress: ProgressFn | None = None,
    as_float: bool = False,
) -> PoseRender:
    """Fit the camera, project, draw the OpenPose maps and (optionally) the capsule depth/normal maps.

    ``as_float`` gives float32 maps in [0, 1] (ready for an IMAGE tensor) instead of uint8.
    """
    camera = settings.fit(pose)
    projected = project_pose(pose, camera)
    maps = render_pose_maps(projected, camera.width, camera.height, stick_width, depth_shading, progress, as_float)
    keypoints = pose_keypoint_frames(
        projected.xy, projected.visible, camera.width, camera.height, projected.hands_xy, projected.hands_visible
    )
    result = PoseRender(pose, camera, projected, maps, keypoints)
    if with_depth_normal:
        result.depth_maps, result.normal_maps = render_capsule_maps(pose, camera, progress)
    return result


def render_motion_file(
    path: str | Path,
    settings: CameraSettings,
    frames: Any = None,
    mapping: str | dict[str, Any] = "auto",
    progress: ProgressFn | None = None,
    as_float: bool = False,
) -> PoseRender:
    """Load a .bvh / .json motion file and :func:`render_pose` it."""
    motion: Motion = load_motion(path, frames)
    return render_pose(pose3d_from_motion(motion, mapping), settings, progress=progress, as_float=as_float)
