"""How a clip moves, measured once and shared by key-pose detection, retiming and smears.

Motion comes from three sources, whichever the clip has: optical flow (OpenCV DIS via
:mod:`..motion.flow`, both directions between neighbouring frames), the sprite's alpha (its
centroid and its lowest opaque row give a direction and ground contacts that flow on a flat-coloured
sprite cannot), and the rig's joints when the clip was rendered from a pose (POSE_KEYPOINT): joints
are exact where pixels are ambiguous.  Flow is zeroed outside the sprite so a transparent
background is truly static when in-betweens are warped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.errors import InputError
from ...core.frames import image_alpha
from ...core.progress import ProgressFn, no_progress
from ..pose.keypoints import joints_from_pose

# OpenPose body-18 ankles (right, left): the joints whose lowest points are ground contacts.
ANKLES = (10, 13)
FOREGROUND_DIFF = 0.05
SPRITE_ALPHA = 0.004  # flow is kept on every pixel the sprite touches, anti-aliased rim included  # without alpha: a pixel this far from the clip's median is the moving subject


@dataclass
class ClipMotion:
    """Per-frame-pair motion of a clip of ``n`` frames.

    ``speed[i]`` is the mean displacement in px of the subject's pixels (or joints) from frame ``i`` to
    ``i+1``; ``velocity[i]`` the subject's overall displacement (centroid) for the same pair;
    ``bottom[t]`` the lowest row of the subject in frame ``t`` (image y grows downward);
    ``contact_rows[t, k]`` the y of each foot joint when a rig is known, else None.
    ``forward[i]`` / ``backward[i]`` are the flows frame ``i -> i+1`` and ``i+1 -> i`` ([H,W,2], px),
    zero outside the subject of their first frame; ``masks`` the subject per frame ([T,H,W] bool).
    A ``loop`` clip is a cycle (frame 0 follows frame ``n-1``): every per-pair array has ``n``
    entries, the last one for the seam pair ``n-1 -> 0``; otherwise ``n-1``.
    """

    speed: np.ndarray
    velocity: np.ndarray
    bottom: np.ndarray
    contact_rows: np.ndarray | None
    forward: np.ndarray
    backward: np.ndarray
    masks: np.ndarray
    loop: bool = False

    @property
    def frame_count(self) -> int:
        return len(self.bottom)


def subject_masks(rgb: np.ndarray, alpha: np.ndarray | None) -> np.ndarray:
    """Boolean ``[T,H,W]``: every pixel the sprite touches, or what differs from the background.

    Without alpha the background is the frame border's colour when the border is one colour
    (a sprite on a solid backdrop), else the clip's median frame (a static camera).
    """
    if alpha is not None:
        return alpha > SPRITE_ALPHA
    border = np.concatenate([rgb[:, :2].reshape(len(rgb), -1, 3), rgb[:, -2:].reshape(len(rgb), -1, 3)], axis=1)
    border = np.concatenate(
        [border, rgb[:, :, :2].reshape(len(rgb), -1, 3), rgb[:, :, -2:].reshape(len(rgb), -1, 3)], axis=1
    )
    if float(border.std(axis=1).max()) < FOREGROUND_DIFF / 2:
        background = np.median(border, axis=1)[:, None, None, :]
    else:
        background = np.median(rgb, axis=0)[None]
    return np.abs(rgb - background).max(axis=-1) > FOREGROUND_DIFF


def flow_input(rgb: np.ndarray, alpha: np.ndarray | None) -> np.ndarray:
    """Frames for the flow estimator: premultiplied over black so a transparent background carries no texture."""
    return rgb if alpha is None else rgb * alpha[..., None]


def _aligned_flow(first: np.ndarray, second: np.ndarray, shift: tuple[int, int]) -> np.ndarray:
    """DIS flow ``first -> second`` after moving ``second`` back by ``shift`` (whole px), shift added back.

    DIS loses small sprites that jump more than their own size between frames; pre-aligning the two
    sprites by their alpha centroids leaves it only the residual (limbs, rotation, squash).
    """
    from ..motion.flow import estimate_flow

    dx, dy = shift
    moved = np.roll(second, (-dy, -dx), axis=(0, 1)) if dx or dy else second
    flow = estimate_flow(np.stack([first, moved]), "dis_medium").numpy()[0]
    flow[..., 0] += dx
    flow[..., 1] += dy
    return flow


def pair_flows(
    rgb: np.ndarray,
    alpha: np.ndarray | None,
    masks: np.ndarray,
    progress: ProgressFn | None = None,
    forward: bool = True,
    loop: bool = False,
) -> tuple[np.ndarray | None, np.ndarray]:
    """Forward (``i -> i+1``) and backward (``i+1 -> i``) flows, zero outside each first frame's ``masks``.

    Each pair is pre-aligned by the shift of the masks' centroids (see :func:`_aligned_flow`).
    ``forward=False`` skips the forward flows (returned as None): smears only look back, and each
    direction is a full DIS pass.  ``loop=True`` adds the seam pair ``T-1 -> 0`` as the last entry
    (a cycle whose first frame follows its last).
    """
    report = progress or no_progress
    clip = flow_input(rgb, alpha)
    pairs = len(clip) if loop else len(clip) - 1
    following = (np.arange(pairs) + 1) % len(clip)
    centroids = _centroids(masks)
    shifts = np.rint(centroids[following] - centroids[:pairs]).astype(int)
    forward_flows = np.empty((pairs, *clip.shape[1:3], 2), np.float32) if forward else None
    backward = np.empty((pairs, *clip.shape[1:3], 2), np.float32)
    for i, j in enumerate(following):
        dx, dy = int(shifts[i, 0]), int(shifts[i, 1])
        if forward_flows is not None:
            forward_flows[i] = _aligned_flow(clip[i], clip[j], (dx, dy))
        backward[i] = _aligned_flow(clip[j], clip[i], (-dx, -dy))
        report(i + 1, pairs)
    if forward_flows is not None:
        forward_flows *= masks[:pairs, ..., None]
    backward *= masks[following, ..., None]
    return forward_flows, backward


def _centroids(masks: np.ndarray) -> np.ndarray:
    t, h, w = masks.shape
    ys, xs = np.mgrid[0:h, 0:w]
    out = np.zeros((t, 2), np.float64)
    for i, m in enumerate(masks):
        if m.any():
            out[i] = (xs[m].mean(), ys[m].mean())
        elif i:
            out[i] = out[i - 1]
    return out


def _bottoms(masks: np.ndarray) -> np.ndarray:
    rows = masks.any(axis=2)
    height = masks.shape[1]
    return np.array([height - 1 - np.argmax(r[::-1]) if r.any() else 0 for r in rows], np.float64)


def frame_steps(values: np.ndarray, loop: bool) -> np.ndarray:
    """Differences between following frames (``[T-1,...]``, or ``[T,...]`` with the seam step of a loop)."""
    return np.diff(np.concatenate([values, values[:1]]) if loop else values, axis=0)


def measure(
    frames: Any,
    alpha: Any | None = None,
    pose: Any | None = None,
    progress: ProgressFn | None = None,
    loop: bool = False,
) -> ClipMotion:
    """Measure a clip (IMAGE + optional alpha + optional POSE_KEYPOINT with one entry per frame).

    ``loop=True`` treats the clip as a cycle and also measures the seam, last frame to first.
    """
    rgb, a = image_alpha(frames, alpha)
    t, h, w = rgb.shape[:3]
    if t < 2:
        raise InputError(f"Timing needs a clip of at least 2 frames; got {t}.")
    masks = subject_masks(rgb, a)
    forward, backward = pair_flows(rgb, a, masks, progress, loop=loop)
    pairs = len(forward)
    weights = masks[:pairs].astype(np.float32)
    magnitude = np.linalg.norm(forward, axis=-1)
    area = np.maximum(weights.reshape(pairs, -1).sum(axis=1), 1.0)
    speed = (magnitude * weights).reshape(pairs, -1).sum(axis=1) / area
    velocity = frame_steps(_centroids(masks), loop)
    contact_rows = None
    if pose is not None:
        pts, vis = joints_from_pose(pose, w, h)
        if len(pts) != t:
            raise InputError(f"The pose has {len(pts)} frames but the clip has {t}; give one pose per frame.")
        both = vis & np.roll(vis, -1, axis=0)
        step = np.linalg.norm(frame_steps(pts, loop), axis=-1)
        speed = np.array([s[b].mean() if b.any() else 0.0 for s, b in zip(step, both[:pairs], strict=True)])
        centre = np.array([p[v].mean(axis=0) if v.any() else (0.0, 0.0) for p, v in zip(pts, vis, strict=True)])
        velocity = frame_steps(centre, loop)
        feet = [j for j in ANKLES if j < pts.shape[1] and vis[:, j].all()]
        contact_rows = pts[:, feet, 1] if feet else None
    return ClipMotion(speed, velocity, _bottoms(masks), contact_rows, forward, backward, masks, loop)
