"""Input checks shared by the motion modules: IMAGE-style clips, flow tensors and masks.

Every function here turns a user-facing mistake (one frame, a list of differently sized frames,
a mask of another size) into an :class:`InputError` that says what was found and what to do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from ...core.errors import InputError, NumericalError
from ...core.frames import to_numpy
from ...core.threads import run_chunks


def clip_array(frames: Any, min_frames: int = 2) -> np.ndarray:
    """A clip as float32 ``[T,H,W,3]`` in 0..1 from an IMAGE tensor, an array or a list of frames.

    A list of frames of different sizes is rejected (flow needs pixel correspondence); RGBA input
    keeps its RGB channels; a single grey channel is repeated.
    """
    if isinstance(frames, Sequence) and not isinstance(frames, np.ndarray) and not hasattr(frames, "shape"):
        shapes = {tuple(np.shape(f)) for f in frames}
        if len(shapes) > 1:
            raise InputError(
                f"The frames have different sizes {sorted(shapes)}; optical flow needs every frame of a clip at the "
                "same size. Resize them to one size first (e.g. with an Upscale Image node)."
            )
        frames = np.stack([to_numpy(f) for f in frames]) if frames else np.zeros((0, 1, 1, 3), np.float32)
    array = to_numpy(frames)
    if array.ndim != 4 or array.shape[-1] not in (1, 3, 4):
        raise InputError(
            f"Expected a clip shaped [T,H,W,3] (an IMAGE batch, one image per frame); got shape {tuple(array.shape)}."
        )
    if array.shape[0] < min_frames:
        raise InputError(
            f"The clip has {array.shape[0]} frame(s); motion needs at least {min_frames} frames "
            "(one frame pair). Pass the whole animation as one IMAGE batch."
        )
    if array.shape[1] < 8 or array.shape[2] < 8:
        raise InputError(f"Frames of {array.shape[1]}x{array.shape[2]} px are too small for optical flow (min 8x8).")
    low, high = value_range(array)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise NumericalError("The frames contain NaN or inf values; check the node that produced them.")
    if array.shape[-1] == 1:
        array = np.repeat(array, 3, axis=-1)
    rgb = array[..., :3]
    if low < 0.0 or high > 1.0:  # an IMAGE in 0..1 (the usual case) is used as it is, not copied
        rgb = np.clip(rgb, 0.0, 1.0)
    return np.ascontiguousarray(rgb, dtype=np.float32)


def value_range(array: np.ndarray) -> tuple[float, float]:
    """``(min, max)`` of an array; both are finite exactly when every value is (NaN and inf propagate).

    SIMD passes over a few frames per thread, without the full-size boolean array ``isfinite`` builds.
    """
    if array.size == 0:
        return 0.0, 0.0
    chunk = 8
    count = -(-len(array) // chunk)
    lows, highs = [0.0] * count, [0.0] * count

    def scan(start: int, stop: int) -> None:
        part = array[start:stop]
        lows[start // chunk], highs[start // chunk] = float(part.min()), float(part.max())

    run_chunks(scan, len(array), chunk)
    return min(lows, key=_nan_first), max(highs, key=_nan_last)


def _nan_first(value: float) -> float:
    return -math.inf if math.isnan(value) else value


def _nan_last(value: float) -> float:
    return math.inf if math.isnan(value) else value


def grey_uint8(clip: np.ndarray) -> list[np.ndarray]:
    """Per-frame 8-bit luma (OpenCV's RGB2GRAY weights), the input OpenCV flow methods want."""
    return [cv2.convertScaleAbs(cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY), alpha=255.0) for frame in clip]


def flow_array(flow: Any) -> np.ndarray:
    """An ``OPTICAL_FLOW`` value as float32 ``[N,H,W,2]`` (pixels, x then y), NaN rejected."""
    array = to_numpy(flow)
    if array.ndim == 3 and array.shape[-1] == 2:
        array = array[None]
    if array.ndim != 4 or array.shape[-1] != 2 or array.shape[0] < 1:
        raise InputError(f"Expected optical flow shaped [N-1,H,W,2] (OPTICAL_FLOW); got shape {tuple(array.shape)}.")
    if not all(math.isfinite(v) for v in value_range(array)):
        raise NumericalError("The optical flow contains NaN or inf values; recompute it (RAFT weights may be corrupt).")
    return np.ascontiguousarray(array, dtype=np.float32)


def pair_masks(mask: Any, pairs: int, height: int, width: int) -> np.ndarray:
    """A boolean ``[pairs,H,W]`` selection from a MASK given per frame, per pair or once for the clip.

    Pair ``i`` uses the mask of its first frame ``i`` (the flow is defined on that frame's pixels).
    Values above 0.5 select a pixel, so soft mattes work.
    """
    array = to_numpy(mask)
    if array.ndim == 2:
        array = array[None]
    if array.ndim == 4 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.ndim != 3:
        raise InputError(f"Expected a MASK shaped [T,H,W] or [H,W]; got shape {tuple(array.shape)}.")
    if array.shape[1:] != (height, width):
        raise InputError(
            f"The mask is {array.shape[1]}x{array.shape[2]} px but the frames are {height}x{width}; "
            "give a mask of the same size as the frames."
        )
    if array.shape[0] == 1:
        array = np.repeat(array, pairs, axis=0)
    elif array.shape[0] in (pairs, pairs + 1):
        array = array[:pairs]
    else:
        raise InputError(
            f"The mask has {array.shape[0]} frames; expected 1, {pairs} (one per frame pair) or {pairs + 1} (one per frame)."
        )
    return array > 0.5
