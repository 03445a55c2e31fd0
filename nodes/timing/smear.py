"""Smear frames: the stretched drawing or the multiples an animator puts on the fastest in-betweens.

Only frames whose displacement from the previous frame is above a threshold (px) change; keys
never do.  The sprite's own pixels are splatted backwards along their flow to where they were on
the previous frame (``strength`` = how much of that way, 0..1), painter's order with the frame
itself on top.  Because every smear pixel is a sprite pixel moved along its own path, the smear
stays inside the region the sprite swept between the two poses.  Styles:

- ``smear``: a continuous streak (one copy per pixel of travel), fading to 40 % at its tail;
- ``multiples``: ``copies`` evenly spaced whole copies, each fainter than the one before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import InputError
from ...core.frames import image_alpha
from ...core.progress import ProgressFn, no_progress
from .clip_motion import pair_flows, subject_masks

STYLES = ("smear", "multiples")
TAIL_ALPHA = 0.4
MAX_LAYERS = 64


@dataclass
class Smeared:
    """Smeared frames, their alpha and which frames were smeared (with each frame's displacement)."""

    rgb: np.ndarray
    alpha: np.ndarray
    smeared: list[int]
    displacement: list[float]


def _splat(rgba: np.ndarray, flow: np.ndarray, scale: float, opacity: float) -> np.ndarray:
    """The frame's visible pixels moved by ``scale · flow`` (nearest pixel), as a straight-alpha layer."""
    h, w = rgba.shape[:2]
    ys, xs = np.nonzero(rgba[..., 3] > 0.0)
    tx = np.rint(xs + scale * flow[ys, xs, 0]).astype(int)
    ty = np.rint(ys + scale * flow[ys, xs, 1]).astype(int)
    inside = (tx >= 0) & (tx < w) & (ty >= 0) & (ty < h)
    layer = np.zeros_like(rgba)
    order = np.argsort(rgba[ys, xs, 3][inside], kind="stable")  # most opaque written last wins a shared pixel
    sel_y, sel_x = ys[inside][order], xs[inside][order]
    layer[ty[inside][order], tx[inside][order]] = rgba[sel_y, sel_x]
    layer[..., 3] *= opacity
    return layer


def _over(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    at, ab = top[..., 3:], bottom[..., 3:]
    alpha = at + ab * (1.0 - at)
    rgb = (top[..., :3] * at + bottom[..., :3] * ab * (1.0 - at)) / np.maximum(alpha, 1e-6)
    return np.concatenate([np.where(alpha > 0, rgb, 0.0), alpha], axis=-1)


def smear_frame(rgba: np.ndarray, back_flow: np.ndarray, strength: float, style: str, copies: int) -> np.ndarray:
    """One smeared frame from its RGBA and its flow back to the previous frame (``[H,W,2]`` px)."""
    travel = float(np.abs(back_flow).max()) * strength
    if style == "smear":
        count = int(min(MAX_LAYERS, max(1, np.ceil(travel))))
        scales = [strength * (k / count) for k in range(count, 0, -1)]
        fades = [1.0 - (1.0 - TAIL_ALPHA) * k / count for k in range(count, 0, -1)]
    else:
        scales = [strength * (k / copies) for k in range(copies, 0, -1)]
        fades = [1.0 - 0.6 * k / (copies + 1) for k in range(copies, 0, -1)]
    canvas = np.zeros_like(rgba)
    for scale, fade in zip(scales, fades, strict=True):
        canvas = _over(_splat(rgba, back_flow, scale, fade), canvas)
    return _over(rgba, canvas)


def smear_frames(
    frames: object,
    alpha: object | None,
    threshold: float = 8.0,
    strength: float = 0.7,
    style: str = "smear",
    copies: int = 3,
    keys: list[int] | None = None,
    progress: ProgressFn | None = None,
) -> Smeared:
    """Smear every frame (except ``keys`` and the first) that moved more than ``threshold`` px."""
    if style not in STYLES:
        raise InputError(f"Unknown smear style {style!r}; choose one of {', '.join(STYLES)}.")
    if not 0.0 <= strength <= 1.0 or threshold < 0.0 or copies < 1:
        raise InputError("strength must be within 0..1, threshold >= 0 and copies >= 1.")
    rgb, a = image_alpha(frames, alpha)
    if a is None:
        raise InputError("Smears need the sprite's alpha (connect a MASK or an RGBA image).")
    out_rgb, out_a = rgb.copy(), a.copy()
    if len(rgb) < 2:
        return Smeared(out_rgb, out_a, [], [0.0])
    _, backward = pair_flows(rgb, a, subject_masks(rgb, a), progress, forward=False)
    report = progress or no_progress
    skip = set(keys or ())
    smeared, moved = [], [0.0]
    for t in range(1, len(rgb)):
        flow = backward[t - 1]
        sprite = a[t] > 0.5
        displacement = float(np.linalg.norm(flow[sprite], axis=-1).mean()) if sprite.any() else 0.0
        moved.append(displacement)
        if displacement > threshold and t not in skip:
            rgba = np.concatenate([rgb[t], a[t][..., None]], axis=-1)
            result = smear_frame(rgba, flow, strength, style, copies)
            out_rgb[t], out_a[t] = result[..., :3], result[..., 3]
            smeared.append(t)
        report(t, len(rgb) - 1)
    return Smeared(out_rgb, out_a, smeared, moved)
