"""In-betweens where no source frame sits at the wanted time: warp both neighbours along the flow.

For a time ``t`` between frames A and B, every output pixel ``x`` looks for the point ``y`` of A
that the flow carries onto it (``y + t·F_AB(y) = x``, solved by fixed-point iteration on the flow
sampled nearest-neighbour, so no point is invented between the sprite and the background) and
likewise in B with ``1 - t`` and ``F_BA``.  A side whose iteration does not converge (the pixel
was covered or uncovered) is ignored, and a side that lands on the subject (the sprite) wins over one
that only finds static background; the chosen sides are blended premultiplied ``1-t : t``.  Times outside 0..1
(anticipation, overshoot) warp only the nearer frame.
"""

from __future__ import annotations

import cv2
import numpy as np

ITERATIONS = 12
CONVERGED_PX = 1.0


def _sample(image: np.ndarray, x: np.ndarray, y: np.ndarray, interpolation: int) -> np.ndarray:
    return cv2.remap(image, x, y, interpolation, borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def _solve(field: np.ndarray, step: np.float32, start: tuple[float, float]) -> tuple[np.ndarray, ...]:
    """Fixed-point search for ``y + step·F(y) = x`` from ``y0 = x - start``; returns ``(sx, sy, converged)``."""
    h, w = field.shape[:2]
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    sx, sy = gx - np.float32(start[0]), gy - np.float32(start[1])
    for _ in range(ITERATIONS):
        moved = _sample(field, sx, sy, cv2.INTER_NEAREST)
        sx, sy = gx - step * moved[..., 0], gy - step * moved[..., 1]
    moved = _sample(field, sx, sy, cv2.INTER_NEAREST)
    residual = np.hypot(sx + step * moved[..., 0] - gx, sy + step * moved[..., 1] - gy)
    return sx, sy, residual < CONVERGED_PX


def warp_along(rgba: np.ndarray, flow: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """``rgba`` moved ``t`` of the way along ``flow``: ``(warped [H,W,4], converged [H,W] bool)``.

    The search starts twice: at the pixel itself (finds the static background) and one typical
    sprite step back (finds sprite points whose own position is outside the sprite); a converged
    start that lands on the sprite wins.
    """
    field = np.ascontiguousarray(flow, np.float32)
    step = np.float32(t)
    moving = np.abs(field).sum(axis=-1) > 0
    typical = np.median(field[moving], axis=0) if moving.any() else np.zeros(2, np.float32)
    image = np.ascontiguousarray(rgba, np.float32)
    best, best_ok = None, None
    for start in ((0.0, 0.0), (float(step * typical[0]), float(step * typical[1]))):
        sx, sy, ok = _solve(field, step, start)
        warped = _sample(image, sx, sy, cv2.INTER_LINEAR)
        if best is None:
            best, best_ok = warped, ok
            continue
        better = ok & (~best_ok | (warped[..., 3] > best[..., 3]))
        best = np.where(better[..., None], warped, best)
        best_ok = best_ok | ok
    return best, best_ok


def interpolate(
    rgba_a: np.ndarray, rgba_b: np.ndarray, flow_ab: np.ndarray, flow_ba: np.ndarray, t: float
) -> np.ndarray:
    """The frame ``t`` of the way from A to B (``[H,W,4]`` float, straight alpha).

    ``rgba_*`` carry a 5th channel, the subject mask (1 on the sprite): a side whose point lies on
    the subject wins over one that only found static background there.
    """
    sides = []
    if t < 1.0:
        sides.append((*warp_along(rgba_a, flow_ab, t), max(1.0 - t, 1e-3)))
    if t > 0.0:
        sides.append((*warp_along(rgba_b, flow_ba, 1.0 - t), max(t, 1e-3)))
    on_subject = [ok & (warped[..., 4] > 0.5) for warped, ok, _ in sides]
    any_subject = np.logical_or.reduce(on_subject)
    colour = np.zeros(rgba_a.shape[:2] + (3,), np.float32)
    alpha = np.zeros(rgba_a.shape[:2], np.float32)
    weight = np.zeros(rgba_a.shape[:2], np.float32)
    for (warped, ok, side_weight), subject in zip(sides, on_subject, strict=True):
        w = side_weight * np.where(any_subject, subject, ok).astype(np.float32)
        colour += (w * warped[..., 3])[..., None] * warped[..., :3]
        alpha += w * warped[..., 3]
        weight += w
    nearer = rgba_a if t < 0.5 else rgba_b
    found = weight > 1e-6
    alpha = np.where(found, alpha / np.maximum(weight, 1e-6), nearer[..., 3])
    premul = np.where(
        found[..., None], colour / np.maximum(weight, 1e-6)[..., None], nearer[..., :3] * nearer[..., 3:4]
    )
    rgb = np.where(alpha[..., None] > 1e-6, premul / np.maximum(alpha, 1e-6)[..., None], 0.0)
    return np.concatenate([rgb, alpha[..., None]], axis=-1).astype(np.float32)
