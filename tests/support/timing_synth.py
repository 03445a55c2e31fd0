"""Synthetic clips with known key poses for the timing tests: a textured ball moving along known paths.

The ball is drawn at sub-pixel positions (bilinear warp of a premultiplied template), so a position
``x`` is recovered by the alpha centroid to well under a pixel.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

SIZE = 20


def _template() -> tuple[np.ndarray, np.ndarray]:
    ss = 8
    big = SIZE * ss
    yy, xx = np.mgrid[0:big, 0:big] / ss
    cover = (((xx - SIZE / 2) ** 2 + (yy - SIZE / 2) ** 2) <= (SIZE / 2 - 1) ** 2).astype(np.float32)
    checker = ((xx // 4 + yy // 4) % 2).astype(np.float32)
    colour = np.stack([0.3 + 0.6 * checker, 0.2 + 0.5 * (yy / SIZE), 0.8 - 0.6 * (xx / SIZE)], axis=-1)
    small = cv2.resize(cover, (SIZE, SIZE), interpolation=cv2.INTER_AREA)
    premul = cv2.resize((colour * cover[..., None]).astype(np.float32), (SIZE, SIZE), interpolation=cv2.INTER_AREA)
    return premul, small


def render(positions, h: int = 96, w: int = 160, angles=None, pivot=None) -> tuple[np.ndarray, np.ndarray]:
    """Frames ``[T,h,w,3]`` and alpha ``[T,h,w]`` with the ball centred at each ``(x, y)``.

    With ``angles`` (degrees) and ``pivot``, the ball hangs from ``pivot`` instead (a pendulum); the
    positions are then the ball's centre at angle 0.
    """
    premul, cover = _template()
    rgba = np.concatenate([premul, cover[..., None]], axis=-1)
    frames, alphas = [], []
    for i, (x, y) in enumerate(positions):
        matrix = np.float32([[1, 0, x - SIZE / 2], [0, 1, y - SIZE / 2]])
        if angles is not None:
            rot = cv2.getRotationMatrix2D(pivot, -angles[i], 1.0)
            matrix = rot @ np.vstack([matrix, [0, 0, 1]])
        out = cv2.warpAffine(rgba, matrix.astype(np.float32), (w, h), flags=cv2.INTER_LINEAR)
        a = out[..., 3]
        frames.append(np.where(a[..., None] > 1e-6, out[..., :3] / np.maximum(a, 1e-6)[..., None], 0.0))
        alphas.append(a)
    return np.stack(frames).astype(np.float32), np.stack(alphas).astype(np.float32)


def centroid(alpha: np.ndarray) -> tuple[float, float]:
    ys, xs = np.mgrid[0 : alpha.shape[0], 0 : alpha.shape[1]]
    total = alpha.sum()
    return float((xs * alpha).sum() / total), float((ys * alpha).sum() / total)


def eased_with_holds() -> tuple[list[tuple[float, float]], list[int]]:
    """Left -> right -> left with sine-eased moves and 3-frame holds; keys are the hold starts."""
    xs: list[float] = []
    keys = [0]

    def move(a: float, b: float, frames: int) -> None:
        for j in range(1, frames + 1):
            xs.append(a + (b - a) * (1 - math.cos(math.pi * j / frames)) / 2)

    xs.append(20.0)
    xs += [20.0] * 2  # hold at the start
    move(20.0, 130.0, 10)
    keys.append(len(xs) - 1)
    xs += [130.0] * 3
    move(130.0, 40.0, 9)
    keys.append(len(xs) - 1)
    xs += [40.0] * 3
    move(40.0, 100.0, 8)
    keys.append(len(xs) - 1)
    return [(x, 48.0) for x in xs], keys


def constant_velocity(frames: int = 20, speed: float = 5.0) -> list[tuple[float, float]]:
    return [(15.0 + speed * i, 48.0) for i in range(frames)]


def bounce(frames: int = 29) -> tuple[list[tuple[float, float]], list[int]]:
    """A ball drifting right and bouncing on a floor; contacts at known frames (the parabola's ends)."""
    period, ground, height = 10, 80.0, 50.0
    pos, contacts = [], []
    for i in range(frames):
        phase = (i + 5) % period / period  # starts at the top of a hop
        pos.append((12.0 + 4.5 * i, ground - height * 4 * phase * (1 - phase)))
        if (i + 5) % period == 0:
            contacts.append(i)
    return pos, contacts


def pendulum(frames: int = 33, period: float = 16.0, amplitude: float = 40.0):
    """Angles of a pendulum swinging ``amplitude`` degrees; extremes at the swing's turning points."""
    angles = [amplitude * math.cos(2 * math.pi * i / period) for i in range(frames)]
    extremes = [i for i in range(1, frames - 1) if i % (period / 2) == 0]
    return angles, extremes


def swing_cycle(frames: int = 24, phase: int = 0, amplitude: float = 50.0):
    """One cycle of a side-to-side swing (``x = 80 + A·cos``) whose first frame follows its last.

    Returns the positions and the frames of the two extremes (``-phase`` and ``frames/2 - phase``,
    modulo ``frames``); with ``phase`` 0 one extreme sits exactly on the seam.
    """
    xs = [80.0 + amplitude * math.cos(2 * math.pi * (i + phase) / frames) for i in range(frames)]
    extremes = sorted({(-phase) % frames, (frames // 2 - phase) % frames})
    return [(x, 48.0) for x in xs], extremes
