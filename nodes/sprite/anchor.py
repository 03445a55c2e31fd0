"""Anchor and stabilise a sprite clip so the character does not swim inside its frame.

Generated clips drift and jitter by a few pixels.  Game engines place a sprite by one fixed pivot
(usually the feet), so every frame must put the character's pivot at the same canvas pixel.  We
find the pivot per frame from the alpha (feet: lowest opaque row, centred on the opaque pixels of
the lowest rows; centroid: alpha-weighted centre), choose a target track (``lock``: one constant
position, for in-place cycles; ``smooth``: a Gaussian-smoothed track, keeping slow intended motion
but removing jitter), shift every frame by a whole number of pixels (no resampling blur, which
matters for pixel art) and crop all frames to one fixed canvas: the union of the shifted boxes
plus padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import gaussian_filter1d

from ...core.errors import InputError
from ...core.progress import ProgressFn, no_progress
from .matte import check_alpha, check_frames
from .options import ANCHORS
from .options import STABILISE_MODES as MODES


@dataclass(frozen=True)
class Stabilised:
    """Result of :func:`stabilise`.

    ``offsets[t] = (dx, dy)``: where input pixel ``(x, y)`` of frame ``t`` lands on the canvas is
    ``(x + dx, y + dy)``.  ``anchor`` is the pivot's position on the canvas (the same in every
    frame for ``lock``); ``boxes`` are the per-frame opaque boxes ``(x0, y0, x1, y1)`` of the input
    (exclusive ends; all -1 for an empty frame).
    """

    rgb: np.ndarray
    alpha: np.ndarray
    offsets: np.ndarray  # int [T,2]
    anchor: np.ndarray  # float [T,2] pivot on the output canvas
    boxes: np.ndarray  # int [T,4]


def bounding_boxes(alpha: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """Per-frame boxes ``(x0, y0, x1, y1)`` (exclusive) of ``alpha > threshold``; -1s when empty."""
    opaque = alpha > threshold
    rows, cols = opaque.any(axis=2), opaque.any(axis=1)
    h, w = alpha.shape[1:]
    y0 = np.argmax(rows, axis=1)
    y1 = h - np.argmax(rows[:, ::-1], axis=1)
    x0 = np.argmax(cols, axis=1)
    x1 = w - np.argmax(cols[:, ::-1], axis=1)
    boxes = np.stack([x0, y0, x1, y1], axis=1).astype(np.int64)
    boxes[~rows.any(axis=1)] = -1
    return boxes


def anchor_points(alpha: np.ndarray, anchor: str = "feet", threshold: float = 0.5, feet_rows: int = 3) -> np.ndarray:
    """Per-frame pivot ``(x, y)`` in input pixels; NaN for frames with no opaque pixel.

    ``feet``: y is the bottom edge of the lowest opaque row, x the mean x of the opaque pixels in
    the lowest ``feet_rows`` rows (between both feet for a standing character).
    """
    if anchor not in ANCHORS:
        raise InputError(f"Unknown anchor {anchor!r}; choose one of {', '.join(ANCHORS)}.")
    t, h, w = alpha.shape
    boxes = bounding_boxes(alpha, threshold)
    points = np.full((t, 2), np.nan)
    empty = boxes[:, 0] < 0
    xs = np.arange(w, dtype=np.float64)
    ys = np.arange(h, dtype=np.float64)
    if anchor == "bbox_center":
        points[:, 0] = (boxes[:, 0] + boxes[:, 2]) / 2
        points[:, 1] = (boxes[:, 1] + boxes[:, 3]) / 2
    elif anchor == "centroid":
        mass = alpha.sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            points[:, 0] = (alpha.sum(axis=1) @ xs) / mass
            points[:, 1] = (alpha.sum(axis=2) @ ys) / mass
    else:
        opaque = alpha > threshold
        bottom = boxes[:, 3]
        band = (ys[None, :] >= (bottom - feet_rows)[:, None]) & (ys[None, :] < bottom[:, None])
        feet = opaque & band[:, :, None]
        count = feet.sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            points[:, 0] = (feet.sum(axis=1) @ xs + 0.5 * count) / count
        points[:, 1] = bottom
    points[empty] = np.nan
    return points


def target_track(points: np.ndarray, mode: str = "lock", sigma: float = 2.0) -> np.ndarray:
    """Where each frame's pivot should go (input pixel coordinates), ignoring empty frames."""
    if mode not in MODES:
        raise InputError(f"Unknown stabilise mode {mode!r}; choose one of {', '.join(MODES)}.")
    valid = ~np.isnan(points[:, 0])
    if not valid.any():
        return points.copy()
    filled = points.copy()
    idx = np.arange(len(points))
    for k in range(2):
        filled[:, k] = np.interp(idx, idx[valid], points[valid, k])
    if mode == "none":
        return filled
    if mode == "lock":
        return np.broadcast_to(np.median(points[valid], axis=0), points.shape).copy()
    return gaussian_filter1d(filled, sigma=max(sigma, 1e-3), axis=0, mode="nearest")


def stabilise(
    rgb: np.ndarray,
    alpha: np.ndarray,
    anchor: str = "feet",
    mode: str = "lock",
    sigma: float = 2.0,
    padding: int = 2,
    threshold: float = 0.5,
    progress: ProgressFn | None = None,
) -> Stabilised:
    """Shift frames so the pivot follows the target track, then crop to one fixed canvas."""
    rgb = check_frames(rgb, "rgb")
    alpha = check_alpha(alpha, rgb, "alpha")
    if padding < 0:
        raise InputError(f"padding must be >= 0; got {padding}.")
    report = progress or no_progress
    t, h, w = alpha.shape
    boxes = bounding_boxes(alpha, threshold)
    if (boxes[:, 0] < 0).all():
        raise InputError(
            "Every frame is fully transparent, so there is nothing to anchor. Check the matte "
            "(Remove Background tolerances) or the mask you connected."
        )
    points = anchor_points(alpha, anchor, threshold)
    target = target_track(points, mode, sigma)
    shift = np.nan_to_num(np.rint(target - points), nan=0.0).astype(np.int64)
    present = boxes[:, 0] >= 0
    moved = boxes[present] + np.concatenate([shift[present], shift[present]], axis=1)
    cx0, cy0 = moved[:, 0].min() - padding, moved[:, 1].min() - padding
    cx1, cy1 = moved[:, 2].max() + padding, moved[:, 3].max() + padding
    ch, cw = int(cy1 - cy0), int(cx1 - cx0)
    offsets = shift - np.array([cx0, cy0])
    out_rgb = np.zeros((t, ch, cw, 3), np.float32)
    out_a = np.zeros((t, ch, cw), np.float32)
    for i in range(t):
        dx, dy = offsets[i]
        # Destination window on the canvas, clipped, and the matching source window.
        x0, y0 = max(0, dx), max(0, dy)
        x1, y1 = min(cw, dx + w), min(ch, dy + h)
        if x1 > x0 and y1 > y0:
            out_rgb[i, y0:y1, x0:x1] = rgb[i, y0 - dy : y1 - dy, x0 - dx : x1 - dx]
            out_a[i, y0:y1, x0:x1] = alpha[i, y0 - dy : y1 - dy, x0 - dx : x1 - dx]
        report(i + 1, t)
    anchor_out = np.where(np.isnan(points), np.nan, points + offsets)
    return Stabilised(out_rgb, out_a, offsets.astype(np.int64), anchor_out, boxes)
