"""Background to alpha for sprites rendered on a solid colour.

VideoCrafter2 sprites are prompted with "solid color background", so the background of one clip
is (nearly) one colour.  The matte works in three steps, all vectorised with OpenCV/numpy:

1. **Estimate** the background colour from a border band of every frame (median), and check that
   the border really is one colour.  If it is not, we refuse to guess: the input is returned
   unchanged (alpha = 1) with a warning, because a wrong key would destroy the sprite.
2. **Classify** pixels by their CIE Lab distance (ΔE76) to the background: below ``low`` is
   background, above ``high`` is the solid core of the sprite.  Lab is used because a fixed ΔE
   threshold means the same visible difference for dark and bright keys.
3. **Unmix** the anti-aliased edge: an edge pixel is ``C = a·F + (1 - a)·B``.  ``F`` is estimated
   from nearby core pixels (a normalised box filter), then ``a`` is the projection of ``C - B``
   onto ``F - B``.  Solving for ``F`` gives the edge colour without the background tint
   (despill).  A morphological opening of the core removes specks, and partial alpha is only
   kept next to the core, so noise in the background never becomes semi-transparent dust.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import cv2
import numpy as np

from ...core.errors import InputError
from ...core.progress import ProgressFn, no_progress

logger = logging.getLogger("gameanim.sprite")


@dataclass(frozen=True)
class Background:
    """The estimated key colour of a clip and whether the border really is one colour."""

    rgb: np.ndarray  # float32 [3] in 0..1
    solid_fraction: float  # share of border pixels within ``low`` ΔE of the key
    solid: bool


def check_frames(frames: np.ndarray, name: str = "frames") -> np.ndarray:
    """Validate an ``[T,H,W,3]`` float batch (the IMAGE layout) and return it as float32."""
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise InputError(f"{name} must be an RGB batch [T,H,W,3]; got shape {tuple(frames.shape)}.")
    if frames.shape[0] == 0:
        raise InputError(f"{name} is an empty batch (0 frames); connect a node that outputs at least one frame.")
    if frames.shape[1] < 2 or frames.shape[2] < 2:
        raise InputError(f"{name} frames are {frames.shape[2]}x{frames.shape[1]} px; sprites need at least 2x2 px.")
    return np.ascontiguousarray(frames, dtype=np.float32)


def check_alpha(alpha: np.ndarray, frames: np.ndarray, name: str = "mask") -> np.ndarray:
    """Validate an alpha/MASK batch against ``frames``; a single mask is broadcast over time."""
    if alpha.ndim == 2:
        alpha = alpha[None]
    if alpha.ndim != 3:
        raise InputError(f"{name} must be [T,H,W] (a MASK); got shape {tuple(alpha.shape)}.")
    t, h, w = frames.shape[:3]
    if alpha.shape[1:] != (h, w):
        raise InputError(
            f"{name} is {alpha.shape[2]}x{alpha.shape[1]} px but the frames are {w}x{h} px; "
            "resize the mask (or the frames) so they match."
        )
    if alpha.shape[0] == 1 and t > 1:
        alpha = np.broadcast_to(alpha, (t, h, w))
    if alpha.shape[0] != t:
        raise InputError(f"{name} has {alpha.shape[0]} frames but the image batch has {t}; give one mask per frame.")
    return np.ascontiguousarray(np.clip(alpha, 0.0, 1.0), dtype=np.float32)


def to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB float 0..1 (any leading shape, last dim 3) to CIE Lab (L 0..100) via OpenCV."""
    flat = np.ascontiguousarray(rgb.reshape(-1, 1, 3), dtype=np.float32)
    return cv2.cvtColor(flat, cv2.COLOR_RGB2Lab).reshape(rgb.shape)


def border_pixels(frames: np.ndarray, border: int) -> np.ndarray:
    """All pixels of a ``border``-wide band around every frame, as ``[N,3]``."""
    b = max(1, min(border, frames.shape[1] // 2, frames.shape[2] // 2))
    parts = [frames[:, :b].reshape(-1, 3), frames[:, -b:].reshape(-1, 3)]
    parts += [frames[:, b:-b, :b].reshape(-1, 3), frames[:, b:-b, -b:].reshape(-1, 3)]
    return np.concatenate(parts, axis=0)


def estimate_background(
    frames: np.ndarray, border: int = 4, low: float = 8.0, min_solid_fraction: float = 0.8
) -> Background:
    """The key colour of a clip: the median of its border band, plus a solidity check.

    ``solid`` is False when fewer than ``min_solid_fraction`` of the border pixels are within
    ``low`` ΔE of the median (a gradient, a scene, or a sprite that fills the frame edge).
    """
    pixels = border_pixels(check_frames(frames), border)
    key = np.median(pixels, axis=0).astype(np.float32)
    dist = np.linalg.norm(to_lab(pixels) - to_lab(key[None]), axis=-1)
    fraction = float(np.mean(dist <= low))
    return Background(rgb=key, solid_fraction=fraction, solid=fraction >= min_solid_fraction)


def matte_frame(
    frame: np.ndarray, key: np.ndarray, low: float = 8.0, high: float = 30.0, cleanup: int = 1, window: int = 7
) -> tuple[np.ndarray, np.ndarray]:
    """Matte one ``[H,W,3]`` frame against ``key``; returns (despilled rgb, alpha) float32.

    Only the thin rim between background and interior is unmixed (indexed, not full-frame), which
    keeps the cost near that of the Lab conversion itself.
    """
    key_lab = to_lab(key[None])[0]
    diff = cv2.cvtColor(frame, cv2.COLOR_RGB2Lab) - key_lab
    dist2 = np.einsum("hwc,hwc->hw", diff, diff)  # squared ΔE: compared with squared thresholds
    core = (dist2 >= high * high).astype(np.uint8)
    if cleanup > 0:
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * cleanup + 1, 2 * cleanup + 1))
        core = cv2.morphologyEx(core, cv2.MORPH_OPEN, kernel)
    alpha = np.zeros(frame.shape[:2], np.float32)
    rgb = frame.copy()  # background pixels already hold (nearly) the key colour
    x, y, w, h = cv2.boundingRect(core)
    if w == 0 or h == 0:
        return rgb, alpha
    # Everything below happens inside the sprite's box (plus the filter reach), not the whole frame.
    m = window
    x0, y0 = max(0, x - m), max(0, y - m)
    x1, y1 = min(frame.shape[1], x + w + m), min(frame.shape[0], y + h + m)
    crop, core_c, dist2_c = frame[y0:y1, x0:x1], core[y0:y1, x0:x1], dist2[y0:y1, x0:x1]
    # Pixels whose whole 3x3 neighbourhood is core are surely opaque; the rim of the core is where
    # anti-aliasing lives (on a dark key a 30% blend already exceeds ``high``), so it is unmixed too.
    square = np.ones((3, 3), np.uint8)
    interior = cv2.erode(core_c, square)
    inner = interior.astype(np.float32)
    alpha[y0:y1, x0:x1] = inner
    rim = (cv2.dilate(core_c, square) > interior) & (dist2_c >= low * low)
    ys, xs = np.nonzero(rim)
    if len(ys):
        # Foreground colour behind each rim pixel: mean of the interior pixels in a small window.
        weight = cv2.boxFilter(inner, -1, (window, window), normalize=False)[ys, xs]
        fg_sum = cv2.boxFilter(crop * inner[..., None], -1, (window, window), normalize=False)[ys, xs]
        c = crop[ys, xs]
        fg = np.where(weight[:, None] > 0, fg_sum / np.maximum(weight, 1e-6)[:, None], c)
        diff_fg = fg - key
        proj = np.sum((c - key) * diff_fg, axis=-1) / np.maximum(np.sum(diff_fg * diff_fg, axis=-1), 1e-6)
        a = np.clip(proj, 0.0, 1.0).astype(np.float32)
        # Despill: remove the key's share from rim pixels (exact for C = a F + (1 - a) B).
        safe = np.maximum(a, 0.05)[:, None]
        unmixed = np.clip((c - (1.0 - safe) * key) / safe, 0.0, 1.0)
        alpha[ys + y0, xs + x0] = a
        rgb[ys + y0, xs + x0] = np.where(a[:, None] >= 1.0, c, np.where(a[:, None] > 0, unmixed, key))
    return rgb, alpha


def remove_background(
    frames: np.ndarray,
    low: float = 8.0,
    high: float = 30.0,
    border: int = 4,
    cleanup: int = 1,
    min_solid_fraction: float = 0.8,
    progress: ProgressFn | None = None,
) -> tuple[np.ndarray, np.ndarray, Background]:
    """Matte a clip on a solid background: ``(rgb [T,H,W,3], alpha [T,H,W], background)``.

    When the border is not one colour the frames come back unchanged with alpha 1 and a warning
    is logged (``background.solid`` is False) — see the module docstring for why.
    """
    frames = check_frames(frames)
    if not 0 <= low < high:
        raise InputError(f"The tolerances must satisfy 0 <= low < high; got low={low}, high={high}.")
    report = progress or no_progress
    background = estimate_background(frames, border, low, min_solid_fraction)
    t = frames.shape[0]
    if not background.solid:
        logger.warning(
            "Background is not a solid colour: only %.0f%% of the border pixels match the key colour "
            "(need %.0f%%). Returning the frames unchanged with an opaque alpha; use an external mask "
            "(e.g. a segmentation node) for this clip.",
            100 * background.solid_fraction,
            100 * min_solid_fraction,
        )
        report(t, t)
        return frames.copy(), np.ones(frames.shape[:3], np.float32), background
    rgb = np.empty_like(frames)
    alpha = np.empty(frames.shape[:3], np.float32)
    for i in range(t):
        rgb[i], alpha[i] = matte_frame(frames[i], background.rgb, low, high, cleanup)
        report(i + 1, t)
    return rgb, alpha, background


def apply_mask(
    frames: np.ndarray, mask: np.ndarray, despill: bool = True, border: int = 4, low: float = 8.0
) -> tuple[np.ndarray, np.ndarray]:
    """Use an external MASK (e.g. from a segmentation node) as alpha; optionally despill edges.

    Despill only runs when the border is a solid colour (there is then a known tint to remove).
    """
    frames = check_frames(frames)
    alpha = check_alpha(mask, frames)
    rgb = frames.copy()
    if despill:
        background = estimate_background(frames, border, low)
        if background.solid:
            safe = np.maximum(alpha, 0.05)[..., None]
            unmixed = np.clip((frames - (1.0 - safe) * background.rgb) / safe, 0.0, 1.0)
            edge = ((alpha > 0) & (alpha < 1))[..., None]
            rgb = np.where(edge, unmixed, frames).astype(np.float32)
    return rgb, alpha
