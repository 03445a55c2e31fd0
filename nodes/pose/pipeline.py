"""Pose3D + Camera → projected points, OpenPose maps, depth and normal maps (per-frame loops with progress)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...progress import ProgressFn, no_progress
from .camera import Camera
from .render import CAPSULES, capsule_maps, depth_image, depth_shade, draw_openpose, normal_image
from .skeleton import FACE_INDEX, Pose3D

# A face point is hidden when its outward normal turns away from the camera beyond this cosine:
# the far eye and ear in a profile, nose and eyes from behind (ears stay, as a detector sees them).
FACE_CULL_COSINE = -0.15


@dataclass
class Projected:
    """Pixel points (F, 18, 2), depth along the view (F, 18) and visibility (F, 18) of a pose."""

    xy: np.ndarray
    depth: np.ndarray
    visible: np.ndarray


def project_pose(pose: Pose3D, camera: Camera) -> Projected:
    """Project the 18 points; hide face points facing away and points off the canvas."""
    xy, depth = camera.project(pose.points)
    visible = np.ones(depth.shape, dtype=bool)
    face = list(FACE_INDEX)
    if camera.perspective:
        to_cam = camera.eye[:, None, :] - pose.points[:, face]
        to_cam /= np.linalg.norm(to_cam, axis=-1, keepdims=True)
    else:
        to_cam = np.broadcast_to(-camera.view_direction(), (pose.frame_count, len(face), 3))
    cosine = np.einsum("fkj,fkj->fk", pose.normals[:, face], to_cam)
    visible[:, face] = cosine >= FACE_CULL_COSINE
    inside = (xy[..., 0] >= 0) & (xy[..., 0] < camera.width) & (xy[..., 1] >= 0) & (xy[..., 1] < camera.height)
    visible &= inside
    return Projected(xy, depth, visible)


def render_pose_maps(
    projected: Projected,
    width: int,
    height: int,
    stick_width: int = 4,
    depth_shading: bool = False,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """OpenPose maps (F, H, W, 3) uint8, one per frame; reports progress after every frame."""
    report = progress or no_progress
    count = projected.xy.shape[0]
    shade = depth_shade(projected.depth, projected.visible) if depth_shading else None
    out = np.empty((count, height, width, 3), dtype=np.uint8)
    for f in range(count):
        out[f] = draw_openpose(
            projected.xy[f],
            projected.visible[f],
            projected.depth[f],
            width,
            height,
            stick_width,
            None if shade is None else shade[f],
        )
        report(f + 1, count)
    return out


def render_capsule_maps(
    pose: Pose3D, camera: Camera, progress: ProgressFn | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Depth (F, H, W) and normal (F, H, W, 3) maps in [0, 1] from limb capsules and a head sphere."""
    report = progress or no_progress
    count = pose.frame_count
    pts = np.concatenate([pose.points, pose.head_centre[:, None]], axis=1)
    xy, depth = camera.project(pts)
    # Depth in pixel units so capsules are round: ortho scale is px/unit; perspective uses f / z.
    if camera.perspective:
        px_per_unit = camera.scale / depth
    else:
        px_per_unit = np.full(depth.shape, camera.scale)
    z_px = depth * (camera.scale if not camera.perspective else float(np.mean(px_per_unit)))
    seg_index = [(a, b) for a, b, _ in CAPSULES] + [(18, 18)]
    fractions = np.array([r for _, _, r in CAPSULES] + [0.0])
    head_r = pose.head_radius * 1.15
    near, far = np.inf, -np.inf
    zbufs = np.empty((count, camera.height, camera.width), dtype=np.float32)
    normals = np.empty((count, camera.height, camera.width, 3), dtype=np.float32)
    for f in range(count):
        segs = np.array([[[*xy[f, a], z_px[f, a]], [*xy[f, b], z_px[f, b]]] for a, b in seg_index])
        scale = np.array([(px_per_unit[f, a] + px_per_unit[f, b]) / 2.0 for a, b in seg_index])
        radii = fractions * pose.height * scale
        radii[-1] = head_r * scale[-1]
        zbufs[f], normals[f] = capsule_maps(segs, radii, camera.width, camera.height)
        finite = zbufs[f][np.isfinite(zbufs[f])]
        if finite.size:
            near, far = min(near, float(finite.min())), max(far, float(finite.max()))
        report(f + 1, count)
    if not np.isfinite(near):
        near, far = 0.0, 1.0
    depth_maps = np.stack([depth_image(z, near, far) for z in zbufs])
    normal_maps = np.stack([normal_image(z, n) for z, n in zip(zbufs, normals, strict=True)])
    return depth_maps, normal_maps
