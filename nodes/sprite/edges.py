"""Colour edges against the key's own noise: where a frame steps in colour more than its background does.

The gradient is taken on the 3x3-averaged Lab the matte already works on, so GIF dithering and per-pixel
noise average out instead of raising the threshold, and the threshold comes from the border band, where
only the key (its noise, gradient and vignette) is.
"""

from __future__ import annotations

import cv2
import numpy as np

from .colour import root_sum
from .quantiles import quantile
from .regions import around, border_connected, components, label_means

# An edge is a gradient this many times the border's 99.5th percentile (the key's noise and vignette).
EDGE = 2.0
# Never count a gradient below this (ΔE per px) as an edge: a clean key has no noise to measure.
MIN_EDGE = 1.5
# Under noise a region behind an edge whose mean key distance is at most KEY_GAP x the key's own (the border's median)
# is the key seen through a gap whose way out is all edge (between BCN_Epileptic's legs, closed by his feet), not a
# part.  Measured on the calm regions behind an edge in 11 generated-look clips (renders on grey, the pale vest,
# Pingus, Frozen-Bubble, Tux, the penguin): such gaps 1.0-1.35x, parts 1.8x and more (at 2x BCN_Epileptic lost a part).
KEY_GAP = 1.5


def lab_gradient(lab: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """ΔE per px of a Lab frame ``[H,W,3]`` (Sobel on each channel, combined as a Euclidean norm), written into
    ``out`` when given."""
    gx = cv2.Sobel(lab, cv2.CV_32F, 1, 0, ksize=3, scale=0.125)
    gy = cv2.Sobel(lab, cv2.CV_32F, 0, 1, ksize=3, scale=0.125)
    cv2.multiply(gx, gx, dst=gx)
    cv2.multiply(gy, gy, dst=gy)
    return root_sum(cv2.add(gx, gy, dst=gx), out)


def edge_band(band: np.ndarray, reach: int = 1) -> np.ndarray:
    """The border ``band`` without the frame's outermost ``reach`` px (at least 1), where a filter reaching that far
    reflects the frame (Sobel's 1 px: where :func:`edge_level` reads the gradients)."""
    inner = band.copy()
    inner[:reach], inner[-reach:], inner[:, :reach], inner[:, -reach:] = False, False, False, False
    return inner


def edge_level(values: list[np.ndarray]) -> float:
    """The gradient (ΔE/px) that counts as an edge in a clip whose frames have the gradients ``values`` over the
    :func:`edge_band` (``grad[edge_band(band)]`` of each frame, taken with its gradient: on the worker processes):
    ``EDGE`` x their 99.5th percentile, which leaves out the border's outliers (the character touching the border).
    """
    values = np.concatenate(values)
    q = float(quantile(values, 0.995)) if len(values) else 0.0
    return max(MIN_EDGE, EDGE * q)


def edge_cut(
    bg: np.ndarray,
    grad: np.ndarray,
    level: float,
    min_area: int,
    dist: np.ndarray | None = None,
    key_noise: float | None = None,
) -> np.ndarray:
    """The pixels of the background region ``bg`` that belong to the character behind an edge (bool ``[H,W]``).

    ``bg`` is everything within the key's tolerance connected to the border; a part shaded through the
    key's colour is within it too, and the region runs into it.  The background is flooded again from the
    border through ``bg`` pixels whose gradient ``grad`` is below ``level``.  Among what it no longer
    reaches, a connected region of non-edge pixels of at least ``min_area`` px is a part of the character
    (a part with an inside: a gap in a claw is a few px wide and all edge); each edge pixel between goes
    to the nearer of the flood and such a part, so the key's halo around the outline stays background.  Given the
    key distance ``dist`` and the key's ``key_noise`` (under noise), a region whose mean distance is within ``KEY_GAP``
    times that is no part.
    """
    calm = bg & (grad < level)
    flood = border_connected(calm)
    cut = bg & ~flood
    if not cut.any():
        return cut
    # Everything outside the box around the restless pixels is flood, and so is the box's one-pixel frame:
    # the parts, and each pixel's distances to them and to the flood, are those of the box alone.
    box = around(~calm)
    cut_b, calm_b, flood_b = cut[box], calm[box], flood[box]
    n, labels, area = components(cut_b & calm_b, connectivity=4)
    big = area >= min_area
    if key_noise is not None:
        big &= label_means(labels, n, dist[box]) > KEY_GAP * key_noise
    big[0] = False
    parts = big.take(labels)
    out = np.zeros_like(cut)
    if not parts.any():
        return out
    to_flood = cv2.distanceTransform((~flood_b).view(np.uint8), cv2.DIST_L2, 3)
    to_parts = cv2.distanceTransform((~parts).view(np.uint8), cv2.DIST_L2, 3)
    out[box] = parts | (cut_b & ~calm_b & (to_parts < to_flood))
    return out


def close_steps(bg: np.ndarray, grad: np.ndarray, level: float) -> np.ndarray:
    """``bg`` without its edge pixels (a gradient ``grad`` of at least ``level``) that a 3x3 closing of the character
    (everything not ``bg``) fills: channels and notches one or two pixels wide between two of the character's parts.

    On a neutral key the 3x3-averaged step from a dark outline to a light part passes through the key's colour.
    Where the outline is broken (the sparse dark dots around Tux's white belly on a grey key) that line of
    key-coloured steps joins the border's background, and unmixed beside it the part's rim went transparent
    with it.  Background seen through a gap that narrow lies within a pixel of the contour, where a matte's error
    hardly shows; a part's rim lost is wider.
    """
    filled = cv2.morphologyEx((~bg).view(np.uint8), cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8)) > 0
    return bg & ~(filled & (grad >= level))
