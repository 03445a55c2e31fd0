"""Cameras for rig motion: presets around the rig's own facing, ortho or perspective, auto-fit.

Presets are placed relative to the rig's rest-pose forward direction (not a world axis), so
``front`` always looks at the character's face whatever the file's axis convention.  The camera
stays fixed in the world while the character moves or turns (a 180° turn shows the back), unless
``follow_root`` moves it with the root's ground-plane motion (side-scroller style: the character
stays centred while running, vertical bobbing and jumps remain visible).

Every view is an *azimuth* and an *elevation* around the rig: the azimuth is how far the camera
has moved from the character's front towards its right side (0 ``front``, 45 ``three_quarter``,
90 ``side_right`` where the character faces screen-right, 180 ``back``, 270 ``side_left``), the
elevation how far it is raised above the ground plane, looking down (0 level, 90 straight down).
``top`` is azimuth 180 at elevation 90: the character's front towards the top of the image.  The
screen's right axis stays horizontal at every elevation, so a raised camera (30° draws 2:1
pixel-art isometric ground, 35.26° true isometric) never rolls the picture.

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
ORBIT = "azimuth"  # the view whose azimuth is given in degrees
VIEWS = (*PRESETS, ORBIT)
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


PRESET_ANGLES = {  # (azimuth, elevation) in degrees
    "front": (0.0, 0.0),
    "back": (180.0, 0.0),
    "side_left": (270.0, 0.0),
    "side_right": (90.0, 0.0),
    "three_quarter": (45.0, 0.0),
    "top": (180.0, 90.0),
}


def orbit_basis(azimuth: float, elevation: float, forward: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Rows (right, up, view) of a camera at ``azimuth`` / ``elevation`` degrees around a rig facing ``forward``.

    The camera sits in the direction ``cos(el) * h + sin(el) * up`` from the character, where ``h``
    turns from ``forward`` towards the character's right by ``azimuth``; screen right is
    ``up x h``, horizontal whatever the elevation (so even straight down is well defined).
    """
    if not -90.0 <= elevation <= 90.0:
        raise InputError(f"elevation must be in [-90, 90] degrees, got {elevation}.")
    az, el = np.radians(azimuth), np.radians(elevation)
    char_right = np.cross(forward, up)  # Y-up, facing +Z → right is -X
    h = np.cos(az) * forward + np.sin(az) * char_right
    to_camera = np.cos(el) * h + np.sin(el) * up
    right = np.cross(up, h)
    right /= np.linalg.norm(right)
    view = -to_camera / np.linalg.norm(to_camera)
    return np.stack([right, np.cross(right, view), view])


def view_angles(preset: str, azimuth: float = 0.0, elevation: float = 0.0) -> tuple[float, float]:
    """(azimuth, elevation) of a view.

    ``preset`` ``azimuth`` takes ``azimuth``; the other presets bring their own.  ``elevation``
    raises any view but ``top``, which is always straight down.
    """
    if preset == ORBIT:
        return float(azimuth), float(elevation)
    if preset not in PRESET_ANGLES:
        raise InputError(f"Unknown camera preset {preset!r}; choose one of {', '.join(VIEWS)}.")
    preset_azimuth, preset_elevation = PRESET_ANGLES[preset]
    return preset_azimuth, preset_elevation if preset == "top" else float(elevation)


def _plane_box(camera: Camera, pose: Pose3D) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners of every fit point over the motion in the image plane (before scaling)."""
    plane, _ = _plane(camera.to_camera(fit_points(pose)), camera.perspective)
    flat = plane.reshape(-1, 2)
    return flat.min(axis=0), flat.max(axis=0)


def plane_extent(camera: Camera, pose: Pose3D) -> tuple[float, float]:
    """Width and height the motion spans in ``camera``'s image plane before scaling (the fit's unit)."""
    lo, hi = _plane_box(camera, pose)
    return float(hi[0] - lo[0]), float(hi[1] - lo[1])


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
    azimuth: float = 0.0,
    elevation: float = 0.0,
    fit_extent: tuple[float, float] | None = None,
) -> Camera:
    """Build a camera for ``pose``; auto-fits unless both ``target`` and ``scale`` are given.

    The view is ``preset`` (``azimuth`` in degrees when the preset is ``"azimuth"``) raised by
    ``elevation`` degrees (see :func:`view_angles`).  ``fit_extent`` (image-plane width and height,
    before scaling) makes the fit frame at least that extent, so cameras that share it draw the
    character at one size: a direction set passes the largest extent of all its views.

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
    basis = orbit_basis(*view_angles(preset, azimuth, elevation), pose.forward, pose.up)
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
    p_lo, p_hi = _plane_box(camera, pose)
    extent = np.maximum(p_hi - p_lo, 1e-9)
    if fit_extent is not None:
        extent = np.maximum(extent, np.asarray(fit_extent, dtype=np.float64))
    usable = np.array([width, height]) * (1.0 - 2.0 * margin)
    camera.scale = float(min(usable / extent)) if scale is None else float(scale)
    mid = (p_lo + p_hi) / 2.0
    camera.principal = (width / 2.0 - camera.scale * mid[0], height / 2.0 + camera.scale * mid[1])
    return camera
