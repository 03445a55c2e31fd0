"""Drawing: OpenPose maps (orientation-true, depth-ordered) and capsule depth / normal maps.

The OpenPose constants (limb pairs, colours, 0.6× limb colour, stick half-width 4, joint radius 4)
follow the ControlNet annotator so the maps look like what the ControlNet was trained on; the
drawing code is our own (controlnet_aux pulls every detector on import).  Unlike the annotator we
draw limbs and joints far-to-near, so a near arm correctly covers the torso behind it, and points
marked hidden (face turned away, off canvas) are skipped along with their limbs.

Depth and normal maps come from capsules around the limbs and a sphere for the head, in numpy:
each pixel takes the nearest surface of the sphere swept along the limb at the pixel's closest
point on the projected segment.  That is exact for spheres and for limbs parallel to the image
plane and a close approximation otherwise; no Blender is needed.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

# 0-based versions of the annotator's 1-based limb pairs, in its order.
LIMBS = (
    (1, 2), (1, 5), (2, 3), (3, 4), (5, 6), (6, 7), (1, 8), (8, 9), (9, 10),
    (1, 11), (11, 12), (12, 13), (1, 0), (0, 14), (14, 16), (0, 15), (15, 17),
)  # fmt: skip
COLORS = np.array(
    [
        [255, 0, 0], [255, 85, 0], [255, 170, 0], [255, 255, 0], [170, 255, 0], [85, 255, 0],
        [0, 255, 0], [0, 255, 85], [0, 255, 170], [0, 255, 255], [0, 170, 255], [0, 85, 255],
        [0, 0, 255], [85, 0, 255], [170, 0, 255], [255, 0, 255], [255, 0, 170], [255, 0, 85],
    ],
    dtype=np.float64,
)  # fmt: skip
LIMB_DIM = 0.6


def draw_openpose(
    xy: np.ndarray,
    visible: np.ndarray,
    depth: np.ndarray,
    width: int,
    height: int,
    stick_width: int = 4,
    shade: np.ndarray | None = None,
) -> np.ndarray:
    """One OpenPose map (H, W, 3) uint8 RGB from 18 pixel points of one frame.

    ``depth`` orders drawing far-to-near; ``shade`` (18,) in (0, 1] optionally darkens far points
    and limbs (the depth-shaded skeleton).
    """
    canvas = np.zeros((height, width, 3), dtype=np.uint8)
    shade = np.ones(18) if shade is None else shade
    items: list[tuple[float, int, int]] = []  # (depth, kind 0=limb 1=joint, index)
    # A joint sorts just in front of the nearest limb it ends, so its dot stays on top of its own
    # limbs (as in the annotator) while nearer body parts still cover it.
    joint_depth = [float(d) for d in depth]
    for k, (a, b) in enumerate(LIMBS):
        if visible[a] and visible[b]:
            limb_depth = float(depth[a] + depth[b]) / 2.0
            items.append((limb_depth, 0, k))
            joint_depth[a] = min(joint_depth[a], limb_depth)
            joint_depth[b] = min(joint_depth[b], limb_depth)
    for i in range(18):
        if visible[i]:
            items.append((joint_depth[i] - 1e-6, 1, i))
    items.sort(key=lambda t: (-t[0], t[1]))
    radius = stick_width
    for _, kind, k in items:
        if kind == 0:
            a, b = LIMBS[k]
            (x0, y0), (x1, y1) = xy[a], xy[b]
            mx, my = (x0 + x1) / 2.0, (y0 + y1) / 2.0
            length = math.hypot(x1 - x0, y1 - y0)
            angle = math.degrees(math.atan2(y0 - y1, x0 - x1))
            poly = cv2.ellipse2Poly((int(mx), int(my)), (int(length / 2), stick_width), int(angle), 0, 360, 1)
            color = COLORS[k] * LIMB_DIM * min(shade[a], shade[b])
            cv2.fillConvexPoly(canvas, poly, [int(c) for c in color])
        else:
            x, y = xy[k]
            cv2.circle(canvas, (int(x), int(y)), radius, [int(c) for c in COLORS[k] * shade[k]], thickness=-1)
    return canvas


HAND_EDGES = (
    (0, 1), (1, 2), (2, 3), (3, 4), (0, 5), (5, 6), (6, 7), (7, 8), (0, 9), (9, 10),
    (10, 11), (11, 12), (0, 13), (13, 14), (14, 15), (15, 16), (0, 17), (17, 18), (18, 19), (19, 20),
)  # fmt: skip


def _hsv_rainbow(count: int) -> list[list[int]]:
    """The annotator's hand edge colours: hue i / count at full saturation and value."""
    hsv = np.array([[[int(round(180 * i / count)), 255, 255] for i in range(count)]], dtype=np.uint8)
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[0].astype(int).tolist()


HAND_COLORS = _hsv_rainbow(len(HAND_EDGES))


def draw_hand(canvas: np.ndarray, xy: np.ndarray, visible: np.ndarray) -> None:
    """Draw one 21-point hand in place like the annotator: rainbow edges (width 2), blue points (radius 4)."""
    for k, (a, b) in enumerate(HAND_EDGES):
        if visible[a] and visible[b]:
            cv2.line(
                canvas, (int(xy[a, 0]), int(xy[a, 1])), (int(xy[b, 0]), int(xy[b, 1])), HAND_COLORS[k], thickness=2
            )
    for i in range(21):
        if visible[i]:
            cv2.circle(canvas, (int(xy[i, 0]), int(xy[i, 1])), 4, (0, 0, 255), thickness=-1)


def depth_shade(depth: np.ndarray, visible: np.ndarray, near: float = 1.0, far: float = 0.35) -> np.ndarray:
    """Per-point brightness (F, 18): ``near`` for the nearest visible point of the motion, ``far`` for the farthest."""
    seen = depth[visible.astype(bool)]
    if seen.size == 0:
        return np.ones_like(depth)
    lo, hi = float(seen.min()), float(seen.max())
    t = (depth - lo) / max(hi - lo, 1e-9)
    return np.clip(near + (far - near) * t, min(near, far), max(near, far))


# Capsules between OpenPose points: (a, b, radius as a fraction of body height).
CAPSULES = (
    (2, 3, 0.045), (3, 4, 0.038), (5, 6, 0.045), (6, 7, 0.038),  # arms
    (8, 9, 0.065), (9, 10, 0.05), (11, 12, 0.065), (12, 13, 0.05),  # legs
    (2, 5, 0.055), (8, 11, 0.075), (1, 8, 0.09), (1, 11, 0.09),  # shoulders, pelvis, torso
)  # fmt: skip


def capsule_maps(
    segments: np.ndarray,
    radii: np.ndarray,
    width: int,
    height: int,
    zbuf: np.ndarray | None = None,
    normals: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Depth (H, W) and camera-space normals (H, W, 3) of capsules for one frame.

    ``segments`` (K, 2, 3): endpoints as (pixel x, pixel y, depth in pixels) — depth measured in the
    same pixel units as x and y; ``radii`` (K,) in pixels.  A segment with equal endpoints is a
    sphere.  Background depth is +inf with normal (0, 0, -1); z < 0 points towards the camera.
    ``zbuf`` (H, W) and ``normals`` (H, W, 3) float32 buffers may be passed in to be filled.
    """
    zbuf = np.empty((height, width), dtype=np.float32) if zbuf is None else zbuf
    normals = np.empty((height, width, 3), dtype=np.float32) if normals is None else normals
    zbuf.fill(np.inf)
    normals[..., :2] = 0.0
    normals[..., 2] = -1.0  # background faces the viewer
    for (p0, p1), r in zip(segments, radii, strict=True):
        if not np.isfinite(p0).all() or not np.isfinite(p1).all() or r <= 0:
            continue
        x_lo = max(int(math.floor(min(p0[0], p1[0]) - r)), 0)
        x_hi = min(int(math.ceil(max(p0[0], p1[0]) + r)) + 1, width)
        y_lo = max(int(math.floor(min(p0[1], p1[1]) - r)), 0)
        y_hi = min(int(math.ceil(max(p0[1], p1[1]) + r)) + 1, height)
        if x_lo >= x_hi or y_lo >= y_hi:
            continue
        ys, xs = np.mgrid[y_lo:y_hi, x_lo:x_hi].astype(np.float32)
        xs += 0.5
        ys += 0.5
        d = (p1 - p0).astype(np.float32)
        dd = float(d[0] ** 2 + d[1] ** 2)
        if dd > 1e-9:
            t = np.clip(((xs - p0[0]) * d[0] + (ys - p0[1]) * d[1]) / dd, 0.0, 1.0)
        else:
            t = np.zeros_like(xs)
        cx, cy, cz = p0[0] + t * d[0], p0[1] + t * d[1], p0[2] + t * d[2]
        dx, dy = xs - cx, ys - cy
        rr = dx * dx + dy * dy
        inside = rr < r * r
        dz = np.sqrt(np.maximum(r * r - rr, 0.0))
        z = np.where(inside, cz - dz, np.inf)
        window = zbuf[y_lo:y_hi, x_lo:x_hi]
        closer = z < window
        window[closer] = z[closer]
        nwin = normals[y_lo:y_hi, x_lo:x_hi]
        nwin[closer, 0] = dx[closer] / r
        nwin[closer, 1] = dy[closer] / r
        nwin[closer, 2] = -dz[closer] / r
    return zbuf, normals


def depth_image(zbuf: np.ndarray, near: float, far: float, out: np.ndarray | None = None) -> np.ndarray:
    """ControlNet-style depth (H, W) in [0, 1]: ``near`` = 1.0, ``far`` = 0.2, background 0 (``out`` may be ``zbuf``)."""
    background = ~np.isfinite(zbuf)
    out = np.empty(zbuf.shape, dtype=np.float32) if out is None else out
    np.subtract(zbuf, near, out=out)
    out *= -0.8 / max(far - near, 1e-9)
    out += 1.0
    np.clip(out, 0.2, 1.0, out=out)
    out[background] = 0.0
    return out


def normal_image(normals: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Normal map (H, W, 3) in [0, 1], ControlNet / BAE convention: R = right, G = up, B = towards the viewer.

    Image y grows downwards and camera depth grows away from the viewer, so both flip; the
    background normal (0, 0, -1) becomes the flat "facing the viewer" colour (0.5, 0.5, 1).
    """
    out = np.empty(normals.shape, dtype=np.float32) if out is None else out
    np.multiply(normals, np.array([0.5, -0.5, -0.5], dtype=np.float32), out=out)
    out += 0.5
    return out
