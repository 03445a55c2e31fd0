"""Synthetic sprites with known ground truth for the sprite-toolkit tests.

Shapes are drawn at 8x resolution and area-downsampled, so every edge pixel is an exact blend
``C = a F + (1 - a) B`` with a known coverage ``a`` (the truth alpha).
"""

from __future__ import annotations

import cv2
import numpy as np

SS = 8


def draw_sprite(h: int, w: int, cx: float, cy: float, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """A two-colour character-like shape: (colour [h,w,3] float, coverage [h,w] float)."""
    H, W = h * SS, w * SS
    colour = np.zeros((H, W, 3), np.float32)
    cover = np.zeros((H, W), np.float32)
    X, Y = int(cx * SS), int(cy * SS)
    r = int(14 * scale * SS)
    body = np.zeros((H, W), np.uint8)
    cv2.ellipse(body, (X, Y - r), (r, int(1.4 * r)), 0, 0, 360, 1, -1)
    head = np.zeros((H, W), np.uint8)
    cv2.circle(head, (X, Y - int(3.2 * r)), int(0.8 * r), 1, -1)
    legs = np.zeros((H, W), np.uint8)
    cv2.rectangle(legs, (X - r // 2 - SS * 3, Y), (X - r // 2 + SS * 3, Y + int(0.8 * r)), 1, -1)
    cv2.rectangle(legs, (X + r // 2 - SS * 3, Y), (X + r // 2 + SS * 3, Y + int(0.8 * r)), 1, -1)
    for mask, rgb in ((body, (0.85, 0.2, 0.15)), (legs, (0.2, 0.25, 0.6)), (head, (0.95, 0.8, 0.6))):
        colour[mask.astype(bool)] = rgb
        cover[mask.astype(bool)] = 1.0
    small_cover = cv2.resize(cover, (w, h), interpolation=cv2.INTER_AREA)
    premul = cv2.resize(colour * cover[..., None], (w, h), interpolation=cv2.INTER_AREA)
    fg = premul / np.maximum(small_cover, 1e-6)[..., None]
    return fg.astype(np.float32), small_cover.astype(np.float32)


def clip(
    t: int = 6, h: int = 160, w: int = 256, bg=(0.1, 0.8, 0.2), positions=None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, list[tuple[float, float]]]:
    """A clip on a solid ``bg``: (frames [t,h,w,3], truth alpha [t,h,w], planted anchor positions)."""
    rng = np.random.default_rng(seed)
    if positions is None:
        positions = [(w / 2 + rng.uniform(-3, 3), h * 0.7 + rng.uniform(-3, 3)) for _ in range(t)]
    frames, alphas = [], []
    key = np.asarray(bg, np.float32)
    for cx, cy in positions:
        fg, a = draw_sprite(h, w, cx, cy)
        frames.append(a[..., None] * fg + (1 - a[..., None]) * key)
        alphas.append(a)
    return np.stack(frames).astype(np.float32), np.stack(alphas), list(positions)


def iou(a: np.ndarray, b: np.ndarray, thr: float = 0.5) -> float:
    ma, mb = a > thr, b > thr
    return float(np.logical_and(ma, mb).sum() / max(np.logical_or(ma, mb).sum(), 1))
