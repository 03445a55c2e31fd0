"""Motion scope: how far the moving part of a clip travels per frame, in resolution-independent units.

Conventions (see docs/motion.md for the measurements behind them):

* **Units.** Flow magnitudes are expressed in pixels of a *reference frame* of 480x720 (the AnimeGamer
  decoder's resolution, 345,600 px): each magnitude is multiplied by ``sqrt(480*720 / (H*W))``.  The
  factor is isotropic, so portrait and landscape clips are treated alike, and it is exact for any
  uniform rescale; a 4 px/frame motion at 320x480 reads 6.0, as the same motion does at 480x720
  (6 px).  Between 320x512 and 480x720 (aspects 1.6 vs 1.5) the same scene differs by under 3%.
* **Foreground.** A pixel of pair ``i`` counts as moving when its magnitude is above
  ``r x S`` where ``S`` is the clip's 99th-percentile magnitude over the usable pixels of all
  pairs (a robust clip maximum: one wild pixel at an occlusion cannot raise the bar, a character
  covering at least 1% of the frame sets it).  ``r = 0.2`` as in AnimeGamer; what their r is
  relative to is unpublished.
* **Usable pixels** are those inside the optional mask and, when frames are given, with texture:
  the smaller eigenvalue of the local structure tensor (OpenCV ``cornerMinEigenVal``, 5x5 block, on
  0..1 grey) above ``min_texture``.  Flow in a flat area is not measured but filled in from the
  edges, and on the plain backgrounds typical of sprites DIS spreads the character's motion over
  most of the frame (70-80% of pixels above the cut, scope 25% low); the texture test removes that.
* **Per-frame value** = mean magnitude of the pair's foreground, 0 when it has none (a pause, a
  static or all-black clip); **scope** = mean of the per-frame values, **peak** = their maximum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from ...core.errors import InputError, NumericalError
from ...core.threads import run_chunks
from .frames import clip_array, flow_array, grey_uint8, pair_masks

REFERENCE_SIZE = (480, 720)
DEFAULT_R = 0.2
DEFAULT_QUANTILE = 0.99
DEFAULT_MIN_TEXTURE = 2e-5
# Frame pairs per thread task in the scope step (about 1 ms each at 320x512).
PAIR_CHUNK = 4


@dataclass(frozen=True)
class ScopeResult:
    """The measured motion of one clip; magnitudes in reference pixels per frame pair."""

    scope: float
    peak: float
    per_frame: tuple[float, ...]
    threshold: float
    foreground_fraction: tuple[float, ...]


def reference_scale(height: int, width: int, reference: tuple[int, int] = REFERENCE_SIZE) -> float:
    """Factor from pixels of a ``height`` x ``width`` frame to pixels of the reference frame."""
    return math.sqrt(reference[0] * reference[1] / float(height * width))


def _textured(grey: np.ndarray, min_texture: float) -> np.ndarray:
    """Where a frame has enough texture to measure flow (see the module docstring).

    ``cornerMinEigenVal`` on 8-bit input scales gradients by 1/255, so the threshold is in 0..1 grey units.
    """
    return cv2.cornerMinEigenVal(grey, 5, 3) > min_texture


def _robust_max(parts: list[np.ndarray], quantile: float, zeros: int = 0) -> float:
    """The ``quantile`` of the values of ``parts`` laid end to end plus ``zeros`` more zeros; above a
    million values, of every n-th of them (same answer to <1%, 5x faster), picked without joining all
    the values first."""
    total = sum(part.size for part in parts) + zeros
    if total == 0:
        return 0.0
    step = max(1, total // 1_000_000)
    picked, offset = [], 0
    for part in parts:
        picked.append(part[(-offset) % step :: step])
        offset += part.size
    picked.append(np.zeros(zeros // step, np.float32))
    return float(np.quantile(np.concatenate(picked), quantile, overwrite_input=True))


def nonzero_box(flow: np.ndarray) -> tuple[slice, slice]:
    """Rows and columns of the box holding every non-zero vector of one pair's flow ``[H,W,2]``
    (empty slices when all are zero).  Our OpenCV flow is zero outside the box where the frames
    differ, so the per-pixel work of the scope step only needs that box."""
    bits = flow.view(np.uint64).reshape(flow.shape[:2])  # one 64-bit word per (x, y) vector
    rows = np.flatnonzero(bits.any(axis=1))
    if rows.size == 0:
        return slice(0, 0), slice(0, 0)
    cols = np.flatnonzero(bits.any(axis=0))
    return slice(int(rows[0]), int(rows[-1]) + 1), slice(int(cols[0]), int(cols[-1]) + 1)


def scope_from_flow(
    flow: Any,
    frames: Any = None,
    r: float = DEFAULT_R,
    mask: Any = None,
    quantile: float = DEFAULT_QUANTILE,
    min_texture: float = DEFAULT_MIN_TEXTURE,
    reference: tuple[int, int] = REFERENCE_SIZE,
) -> ScopeResult:
    """The motion scope of a clip from its flow (``OPTICAL_FLOW`` ``[N,H,W,2]``).

    ``frames`` (the clip the flow came from) enables the texture test; ``mask`` (MASK per frame,
    per pair or one for all) restricts the measurement to e.g. the character.  Never returns NaN:
    a clip with no usable or no moving pixels has scope 0.
    """
    check_options(r, quantile)
    array = flow_array(flow)
    pairs, height, width = array.shape[:3]
    masks = None if mask is None else pair_masks(mask, pairs, height, width)
    clip = None
    if frames is not None:
        clip = clip_array(frames, min_frames=1)
        if clip.shape[1:3] != (height, width):
            raise InputError(
                f"The frames are {clip.shape[1]}x{clip.shape[2]} px but the flow is {height}x{width}; "
                "pass the frames the flow was computed from."
            )
        if clip.shape[0] not in (pairs, pairs + 1):
            raise InputError(
                f"{clip.shape[0]} frames were given with flow for {pairs} frame pairs; pass the {pairs + 1} frames "
                "the flow was computed from."
            )
    return scope_of_arrays(array, clip, None, masks, r, quantile, min_texture, reference)


def check_options(r: float, quantile: float) -> None:
    """Reject an ``r`` or ``quantile`` outside its range with a message that says the range."""
    if not 0.0 <= r < 1.0:
        raise InputError(f"r must be in [0, 1) (a fraction of the clip's reference speed); got {r}.")
    if not 0.0 < quantile <= 1.0:
        raise InputError(f"quantile must be in (0, 1]; got {quantile}.")


def scope_of_arrays(
    array: np.ndarray,
    clip: np.ndarray | None,
    grey: list[np.ndarray] | None,
    masks: np.ndarray | None,
    r: float = DEFAULT_R,
    quantile: float = DEFAULT_QUANTILE,
    min_texture: float = DEFAULT_MIN_TEXTURE,
    reference: tuple[int, int] = REFERENCE_SIZE,
) -> ScopeResult:
    """:func:`scope_from_flow` on checked inputs: flow ``[N,H,W,2]``, the clip (or None), its frames'
    :func:`grey_uint8` images when already made (else made here for the texture test) and the
    boolean pair masks (or None).  The per-pair steps (speeds, texture test, foreground sums) run on a
    few threads, a few pairs per task; speeds are computed inside each pair's :func:`nonzero_box`
    only, the usable pixels outside it entering the quantile as zeros (what they are).  Only
    pixels above the threshold count as foreground, so a zero never does."""
    pairs, height, width = array.shape[:3]
    scale = reference_scale(height, width, reference)
    usable = np.ones((pairs, height, width), bool) if masks is None else masks
    boxes: list[tuple[slice, slice]] = [(slice(0, 0), slice(0, 0))] * pairs
    speeds: list[np.ndarray] = [np.empty(0, np.float32)] * pairs
    values: list[np.ndarray] = [np.empty(0, np.float32)] * pairs
    still = np.zeros(pairs, np.int64)  # usable pixels outside the flow's box: speed 0

    def measure(start: int, stop: int) -> None:
        part = slice(start, stop)
        if clip is not None and min_texture > 0:
            frames = grey[start:stop] if grey is not None else grey_uint8(clip[part])
            usable[part] &= np.stack([_textured(g, min_texture) for g in frames])
        for i in range(start, stop):
            rows, cols = boxes[i] = nonzero_box(array[i])
            inside = array[i, rows, cols]
            speed = speeds[i] = np.hypot(inside[..., 0], inside[..., 1])
            speed *= scale
            values[i] = speed[usable[i, rows, cols]]
            still[i] = np.count_nonzero(usable[i]) - values[i].size

    run_chunks(measure, pairs, PAIR_CHUNK)
    threshold = r * _robust_max(values, quantile, int(still.sum()))
    counts = np.empty(pairs, np.int64)
    sums = np.empty(pairs, np.float64)

    def tally(start: int, stop: int) -> None:
        for i in range(start, stop):
            rows, cols = boxes[i]
            foreground = usable[i, rows, cols] & (speeds[i] > threshold)
            counts[i] = np.count_nonzero(foreground)
            sums[i] = speeds[i][foreground].sum(dtype=np.float64)

    run_chunks(tally, pairs, PAIR_CHUNK)
    per_frame = [float(total / count) if count else 0.0 for total, count in zip(sums, counts, strict=True)]
    fractions = [float(count) / float(height * width) for count in counts]
    if not all(math.isfinite(v) for v in per_frame):
        raise NumericalError("The motion scope came out non-finite; the flow holds values too large to measure.")
    return ScopeResult(
        scope=float(np.mean(per_frame)),
        peak=float(np.max(per_frame)),
        per_frame=tuple(per_frame),
        threshold=threshold,
        foreground_fraction=tuple(fractions),
    )


def plot_per_frame(
    result: ScopeResult, edges: tuple[float, ...] = (), level: int | None = None, size: tuple[int, int] = (256, 512)
) -> Any:
    """An IMAGE ``[1,H,W,3]``: the per-frame curve, its mean (dashed) and the level edges in range."""
    import torch

    height, width = size
    canvas = np.full((height, width, 3), 255, np.uint8)
    left, right, top, bottom = 48, width - 12, 28, height - 24
    values = np.asarray(result.per_frame, np.float64)
    visible_edges = [e for e in edges if e <= max(result.peak * 1.15, 1e-6)]
    top_value = max(result.peak, *visible_edges, 1e-6) * 1.15

    def y_of(value: float) -> int:
        return int(round(bottom - (bottom - top) * value / top_value))

    def x_of(index: int) -> int:
        return int(round(left + (right - left) * index / max(len(values) - 1, 1)))

    cv2.rectangle(canvas, (left, top), (right, bottom), (200, 200, 200), 1)
    for value in (0.0, result.scope):
        cv2.putText(canvas, f"{value:.2f}", (4, y_of(value) + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (40, 120, 40), 1)
    for edge in visible_edges:
        cv2.line(canvas, (left, y_of(edge)), (right, y_of(edge)), (230, 160, 60), 1)
        cv2.putText(canvas, f"{edge:g}", (4, y_of(edge) + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (200, 120, 20), 1)
    for x in range(left, right, 10):
        cv2.line(canvas, (x, y_of(result.scope)), (min(x + 5, right), y_of(result.scope)), (40, 160, 40), 1)
    points = np.array([[x_of(i), y_of(v)] for i, v in enumerate(values)], np.int32)
    cv2.polylines(canvas, [points], False, (30, 60, 200), 2, cv2.LINE_AA)
    for point in points:
        cv2.circle(canvas, tuple(int(c) for c in point), 2, (30, 60, 200), -1)
    label = f"scope {result.scope:.2f}  peak {result.peak:.2f}  px/frame @480x720"
    if level is not None:
        label += f"  level {level}"
    cv2.putText(canvas, label, (left, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.putText(canvas, "frame pair", (right - 70, height - 6), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (90, 90, 90), 1)
    return torch.from_numpy(canvas.astype(np.float32)[None] / 255.0)
