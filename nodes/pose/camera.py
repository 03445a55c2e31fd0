"""Cameras for rig motion: presets around the rig's own facing, ortho or perspective, auto-fit.

Presets are placed relative to the rig's rest-pose forward direction (not a world axis), so
``front`` always looks at the character's face whatever the file's axis convention.  The camera
stays fixed in the world while the character moves or turns (a 180° turn shows the back), unless
``follow_root`` moves it with the root's ground-plane motion (side-scroller style: the character
stays centred while running, vertical bobbing and jumps remain visible).

``side_right`` puts the camera on the character's right, so the character faces screen-right;
``three_quarter`` sits between ``front`` and ``side_right``; ``top`` looks down with the
character's front towards the top of the image.

Auto-fit maps the bounding box of every drawn point over the whole motion (in the image plane,
after perspective division) into the canvas with a margin, with one uniform scale for all frames,
so the character's size is stable across the animation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import InputError
from .skeleton import Pose3D

PRESETS = ("front", "back", "side_left", "side_right", "three_quarter", "top")
PROJECTIONS = ("orthographic", "perspective")


@dataclass
class Camera:
    """A fitted camera: world → pixel for every frame.

    ``basis`` rows are the camera's right, up and viewing direction in world space; ``eye`` (F, 3)
    the camera position per frame for perspective (for orthographic, the point that maps to the
    principal point); ``scale`` px per world unit (ortho) or focal length in px (perspective);
    ``principal`` the pixel where the optical axis lands.
    """

    basis: np.ndarray
    eye: np.ndarray
    scale: float
    principal: tuple[float, float]
    perspective: bool
    width: int
    height: int

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        """World points (F, K, 3) → camera coordinates (x right, y up, z depth along the view)."""
        return np.einsum("ij,fkj->fki", self.basis, points - self.eye[:, None, :])

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World points (F, K, 3) → pixels (F, K, 2) and depth along the view axis (F, K)."""
        cam = self.to_camera(points)
        plane, depth = _plane(cam, self.perspective)
        px = self.principal[0] + self.scale * plane[..., 0]
        py = self.principal[1] - self.scale * plane[..., 1]
        return np.stack([px, py], axis=-1), depth

    def view_direction(self) -> np.ndarray:
        """The world direction the camera looks along."""
        return self.basis[2]


def _plane(cam: np.ndarray, perspective: bool) -> tuple[np.ndarray, np.ndarray]:
    depth = cam[..., 2]
    if not perspective:
        return cam[..., :2], depth
    if (depth <= 1e-6).any():
        raise InputError(
            "Part of the motion is behind the perspective camera; increase the camera distance or use the orthographic projection."
        )
    return cam[..., :2] / depth[..., None], depth


def preset_basis(preset: str, forward: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Rows (right, up, view) of the camera for ``preset`` around a rig facing ``forward``."""
    if preset not in PRESETS:
        raise InputError(f"Unknown camera preset {preset!r}; choose one of {', '.join(PRESETS)}.")
    left = np.cross(up, forward)  # Y-up, facing +Z → left is +X
    to_camera = {
        "front": forward,
        "back": -forward,
        "side_left": left,
        "side_right": -left,
        "three_quarter": (forward - left) / np.sqrt(2.0),
    }
    if preset == "top":
        view, screen_up = -up, forward
    else:
        view, screen_up = -to_camera[preset], up
    right = np.cross(view, screen_up)
    right /= np.linalg.norm(right)
    true_up = np.cross(right, view)
    return np.stack([right, true_up, view])


def fit_points(pose: Pose3D) -> np.ndarray:
    """The world points auto-fit must keep in frame: 18 points, the head's top and the hands."""
    top = pose.head_centre + pose.up * pose.head_radius
    parts = [pose.points, pose.head_centre[:, None], top[:, None]]
    if pose.hands is not None:
        parts.append(pose.hands.reshape(pose.frame_count, -1, 3))
    return np.concatenate(parts, axis=1)


def follow_offsets(pose: Pose3D, follow_root: bool) -> np.ndarray:
    """Per-frame camera shift: the root's ground-plane motion since the first frame, or zero."""
    if not follow_root:
        return np.zeros((pose.frame_count, 3))
    moved = pose.root - pose.root[:1]
    return moved - np.outer(moved @ pose.up, pose.up)


def make_camera(
    pose: Pose3D,
    preset: str = "side_right",
    projection: str = "orthographic",
    width: int = 512,
    height: int = 512,
    margin: float = 0.08,
    follow_root: bool = False,
    fov_degrees: float = 30.0,
    distance: float | None = None,
    target: np.ndarray | None = None,
    scale: float | None = None,
) -> Camera:
    """Build a camera for ``pose``; auto-fits unless both ``target`` and ``scale`` are given.

    ``distance`` (perspective) defaults to the distance at which the motion's size fills
    ``fov_degrees`` (a wider angle puts the camera closer: stronger perspective; the fit then
    scales the image to the canvas either way), ``target`` to the centre of
    its bounding box; ``scale`` is px per unit (ortho) or the focal length in px (perspective).
    """
    if projection not in PROJECTIONS:
        raise InputError(f"Unknown projection {projection!r}; choose orthographic or perspective.")
    if width < 8 or height < 8:
        raise InputError(f"Canvas {width}x{height} is too small; use at least 8x8 pixels.")
    if not 0.0 <= margin < 0.5:
        raise InputError(f"margin must be in [0, 0.5), got {margin}")
    basis = preset_basis(preset, pose.forward, pose.up)
    shift = follow_offsets(pose, follow_root)
    pts = fit_points(pose) - shift[:, None, :]
    flat = pts.reshape(-1, 3)
    lo, hi = flat.min(axis=0), flat.max(axis=0)
    centre = (lo + hi) / 2.0 if target is None else np.asarray(target, dtype=np.float64)
    size = float(np.linalg.norm(hi - lo)) or 1.0
    perspective = projection == "perspective"
    if perspective:
        if distance is None:
            if not 1.0 <= fov_degrees <= 150.0:
                raise InputError(f"fov_degrees must be in [1, 150], got {fov_degrees}")
            dist = max(0.5 * size / np.tan(np.radians(fov_degrees) / 2.0), 0.75 * size)
        else:
            dist = float(distance)
        eye = centre - dist * basis[2] + shift
    else:
        eye = centre + shift
    principal = (width / 2.0, height / 2.0)
    camera = Camera(
        basis, np.broadcast_to(eye, (pose.frame_count, 3)).copy(), 1.0, principal, perspective, width, height
    )
    if scale is not None and target is not None:
        camera.scale = float(scale)
        return camera
    plane, _ = _plane(camera.to_camera(fit_points(pose)), perspective)
    p_lo, p_hi = plane.reshape(-1, 2).min(axis=0), plane.reshape(-1, 2).max(axis=0)
    extent = np.maximum(p_hi - p_lo, 1e-9)
    usable = np.array([width, height]) * (1.0 - 2.0 * margin)
    camera.scale = float(min(usable / extent)) if scale is None else float(scale)
    mid = (p_lo + p_hi) / 2.0
    camera.principal = (width / 2.0 - camera.scale * mid[0], height / 2.0 + camera.scale * mid[1])
    return camera
