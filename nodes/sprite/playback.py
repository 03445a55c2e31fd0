"""Timing for sprite clips: holds, frame counts, ping-pong, loop closure and fps changes.

Every operation is expressed as a list of source frame indices (plus, where it matters, per-frame
durations in milliseconds), so the same plan applies to RGB, alpha, or anything else indexed by
frame, and tests can check the plan itself.  Game engines store per-frame durations, so
:func:`collapse_holds` turns repeated frames back into one frame with a longer duration.
"""

from __future__ import annotations

import cv2
import numpy as np

from ...core.errors import InputError


def _check_count(n: int, what: str = "frame count") -> None:
    if n < 1:
        raise InputError(f"The {what} must be at least 1; got {n}. Connect a batch with at least one frame.")


def hold_indices(n: int, step: int = 2) -> np.ndarray:
    """Animate "on twos" (``step`` = 2), threes, ...: keep the frame count, hold every ``step``-th frame."""
    _check_count(n)
    if step < 1:
        raise InputError(f"The hold step must be >= 1; got {step}.")
    idx = np.arange(n)
    return idx - idx % step


def repeat_indices(n: int, times: int = 2) -> np.ndarray:
    """Repeat each frame ``times`` times (a clip ``times`` as long at the same fps)."""
    _check_count(n)
    if times < 1:
        raise InputError(f"The repeat count must be >= 1; got {times}.")
    return np.repeat(np.arange(n), times)


def resample_indices(n: int, count: int) -> np.ndarray:
    """Drop or repeat frames (evenly spread) so the clip has exactly ``count`` frames."""
    _check_count(n)
    _check_count(count, "target frame count")
    return np.minimum(np.floor(np.arange(count) * n / count + 1e-9).astype(np.int64), n - 1)


def retime_indices(n: int, fps_in: float, fps_out: float) -> np.ndarray:
    """Nearest-earlier frame sampling from ``fps_in`` to ``fps_out``, keeping the clip's duration."""
    _check_count(n)
    if fps_in <= 0 or fps_out <= 0:
        raise InputError(f"Frame rates must be positive; got fps_in={fps_in}, fps_out={fps_out}.")
    count = max(1, int(round(n * fps_out / fps_in)))
    times = np.arange(count) / fps_out
    return np.minimum(np.floor(times * fps_in + 1e-6).astype(np.int64), n - 1)


def ping_pong_indices(n: int) -> np.ndarray:
    """Forward then backward without repeating the end frames: 0..n-1, n-2..1 (loops seamlessly)."""
    _check_count(n)
    return np.concatenate([np.arange(n), np.arange(n - 2, 0, -1)]).astype(np.int64)


def frame_signatures(rgb: np.ndarray, alpha: np.ndarray | None = None, size: int = 48) -> np.ndarray:
    """Small premultiplied thumbnails ``[T, size*size*3]`` used to compare frames quickly."""
    t, h, w = rgb.shape[:3]
    scale = size / max(h, w)
    sw, sh = max(1, round(w * scale)), max(1, round(h * scale))
    premul = rgb if alpha is None else rgb * alpha[..., None]
    thumbs = [
        cv2.resize(np.ascontiguousarray(premul[i], np.float32), (sw, sh), interpolation=cv2.INTER_AREA)
        for i in range(t)
    ]
    sig = np.stack(thumbs).reshape(t, -1)
    if alpha is not None:
        amaps = [
            cv2.resize(np.ascontiguousarray(alpha[i], np.float32), (sw, sh), interpolation=cv2.INTER_AREA)
            for i in range(t)
        ]
        sig = np.concatenate([sig, np.stack(amaps).reshape(t, -1)], axis=1)
    return sig


def find_loop(rgb: np.ndarray, alpha: np.ndarray | None = None, min_length: int = 4) -> tuple[int, int, float]:
    """The best seamless loop ``(start, end, score)``: play frames ``start .. end-1`` and repeat.

    Frame ``end`` is the frame most similar to ``start`` among pairs at least ``min_length``
    apart, so jumping from ``end - 1`` back to ``start`` looks like the step ``end - 1 -> end``.
    ``score`` is the mean absolute difference of the two frames' thumbnails (0 = identical).
    Ties prefer the longer loop.
    """
    t = rgb.shape[0]
    if t < min_length + 1:
        raise InputError(
            f"Loop closure needs at least min_length + 1 = {min_length + 1} frames; got {t}. "
            "Lower min_length or give a longer clip."
        )
    if min_length < 1:
        raise InputError(f"min_length must be >= 1; got {min_length}.")
    sig = frame_signatures(rgb, alpha)
    dist = np.stack([np.abs(sig - sig[k]).mean(axis=1) for k in range(t)])  # row-wise keeps memory at O(T·S)
    i, j = np.meshgrid(np.arange(t), np.arange(t), indexing="ij")
    allowed = (j - i) >= min_length
    cost = np.where(allowed, dist, np.inf)
    # Prefer longer loops among (numerically) equal costs.
    best = cost.min()
    ties = np.argwhere(cost <= best + 1e-6)
    start, end = max(ties.tolist(), key=lambda p: (p[1] - p[0], -p[0]))
    return int(start), int(end), float(best)


def collapse_holds(
    rgb: np.ndarray, alpha: np.ndarray | None, durations_ms: np.ndarray, tolerance: float = 1e-4
) -> tuple[np.ndarray, np.ndarray]:
    """Merge runs of identical consecutive frames: ``(kept indices, summed durations in ms)``."""
    t = rgb.shape[0]
    flat = rgb.reshape(t, -1)
    same = np.abs(flat[1:] - flat[:-1]).max(axis=1) <= tolerance
    if alpha is not None:
        same &= np.abs(alpha.reshape(t, -1)[1:] - alpha.reshape(t, -1)[:-1]).max(axis=1) <= tolerance
    starts = np.concatenate([[0], np.nonzero(~same)[0] + 1])
    sums = np.add.reduceat(np.asarray(durations_ms, np.float64), starts)
    return starts.astype(np.int64), sums


def uniform_durations(n: int, fps: float) -> np.ndarray:
    """Per-frame durations in ms for ``n`` frames at ``fps``."""
    if fps <= 0:
        raise InputError(f"fps must be positive; got {fps}.")
    return np.full(n, 1000.0 / fps)
