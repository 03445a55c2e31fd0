"""Pose3D + Camera → projected points, OpenPose maps, depth and normal maps (per-frame loops with progress)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.buffers import zeroed
from ...core.progress import ProgressFn, no_progress
from ...core.threads import run_chunks
from .camera import Camera
from .render import CAPSULES, capsule_maps, depth_image, depth_shade, normal_image, plan_openpose
from .skeleton import FACE_INDEX, Pose3D

# A face point is hidden when its outward normal turns away from the camera beyond this cosine:
# the far eye and ear in a profile, nose and eyes from behind (ears stay, as a detector sees them).
FACE_CULL_COSINE = -0.15
# Frames per progress report and per thread task: short enough for a prompt Cancel.
DRAW_CHUNK = 8


@dataclass
class Projected:
    """Pixel points (F, 18, 2), depth along the view (F, 18) and visibility (F, 18) of a pose."""

    xy: np.ndarray
    depth: np.ndarray
    visible: np.ndarray
    hands_xy: np.ndarray | None = None  # (F, 2, 21, 2) left, right
    hands_visible: np.ndarray | None = None  # (F, 2, 21)


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
    result = Projected(xy, depth, visible)
    if pose.hands is not None:
        count = pose.frame_count
        hands_xy, _ = camera.project(pose.hands.reshape(count, 42, 3))
        result.hands_xy = hands_xy.reshape(count, 2, 21, 2)
        hx, hy = result.hands_xy[..., 0], result.hands_xy[..., 1]
        result.hands_visible = (hx >= 0) & (hx < camera.width) & (hy >= 0) & (hy < camera.height)
    return result


def render_pose_maps(
    projected: Projected,
    width: int,
    height: int,
    stick_width: int = 4,
    depth_shading: bool = False,
    progress: ProgressFn | None = None,
    as_float: bool = False,
) -> np.ndarray:
    """OpenPose maps (F, H, W, 3), uint8 or float32 in [0, 1]; reports progress after every few frames.

    Every frame's drawing calls are planned at once (:func:`plan_openpose`), then frames are drawn
    on a few threads straight into the zeroed output.  ``as_float`` draws the float colours
    themselves (``c / 255`` as float32), so the float maps equal the uint8 ones divided by 255
    without a conversion pass over the batch (what an IMAGE tensor needs).  The output is
    :func:`~core.buffers.zeroed`: a batch of float maps is large enough for numpy's huge-page
    advice to cost more in the kernel than the drawing itself.
    """
    count = projected.xy.shape[0]
    shade = depth_shade(projected.depth, projected.visible) if depth_shading else None
    strokes = plan_openpose(
        projected.xy,
        projected.visible,
        projected.depth,
        stick_width,
        shade,
        as_float,
        projected.hands_xy,
        projected.hands_visible,
    )
    out = zeroed((count, height, width, 3), np.float32 if as_float else np.uint8)

    def draw(start: int, stop: int) -> None:
        for f in range(start, stop):
            strokes.paint(out[f], f)

    run_chunks(draw, count, DRAW_CHUNK, progress)
    return out


def render_capsule_maps(
    pose: Pose3D, camera: Camera, progress: ProgressFn | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Depth (F, H, W) and normal (F, H, W, 3) maps in [0, 1] from limb capsules and a head sphere.

    Depth is normalised over the whole motion (near = 1.0, farthest body point = 0.2, background 0)
    so brightness is comparable between frames.
    """
    report = progress or no_progress
    count, width, height = pose.frame_count, camera.width, camera.height
    pts = np.concatenate([pose.points, pose.head_centre[:, None]], axis=1)
    xy, depth = camera.project(pts)
    # Depth in pixel units so capsules are round: ortho scale is px/unit; perspective uses f / z.
    px_per_unit = camera.scale / depth if camera.perspective else np.full(depth.shape, camera.scale)
    z_px = depth * (float(np.mean(px_per_unit)) if camera.perspective else camera.scale)
    pairs = np.array([(a, b) for a, b, _ in CAPSULES] + [(18, 18)])
    radii_all = np.array([r for _, _, r in CAPSULES] + [0.0]) * pose.height * px_per_unit[:, pairs].mean(axis=-1)
    radii_all[:, -1] = pose.head_radius * 1.15 * px_per_unit[:, 18]
    ends = np.concatenate([xy, z_px[..., None]], axis=-1)[:, pairs]  # (F, K, 2, 3)
    near = float((ends[..., 2].min(axis=-1) - radii_all).min())
    far = float(ends[..., 2].max())
    depth_maps = np.empty((count, height, width), dtype=np.float32)
    normal_maps = np.empty((count, height, width, 3), dtype=np.float32)
    normals = np.empty((height, width, 3), dtype=np.float32)
    for f in range(count):
        capsule_maps(ends[f], radii_all[f], width, height, zbuf=depth_maps[f], normals=normals)
        normal_image(normals, out=normal_maps[f])
        depth_image(depth_maps[f], near, far, out=depth_maps[f])
        report(f + 1, count)
    return depth_maps, normal_maps
