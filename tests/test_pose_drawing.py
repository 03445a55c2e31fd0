"""OpenPose drawing: the planned, threaded renderer paints exactly what the drawing rule says.

The rule, drawn here one item at a time as the reference: limbs and joints far-to-near, a joint
just in front of the nearest visible limb it ends, ties keeping limbs before joints in index order;
hidden points are skipped with their limbs; hands last.  Float maps equal uint8 maps / 255.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from gameanim.core.progress import Cancelled, CancelToken
from gameanim.nodes.pose.maps import DRAW_CHUNK, Projected, render_pose_maps
from gameanim.nodes.pose.render import COLORS, HAND_COLORS, HAND_EDGES, LIMB_DIM, LIMBS, depth_shade

W, H = 160, 128


def reference_map(xy, visible, depth, shade, hands_xy=None, hands_visible=None, stick=4):
    canvas = np.zeros((H, W, 3), np.uint8)
    items, joint_depth = [], [float(d) for d in depth]
    for k, (a, b) in enumerate(LIMBS):
        if visible[a] and visible[b]:
            items.append((float(depth[a] + depth[b]) / 2.0, 0, k))
            joint_depth[a] = min(joint_depth[a], items[-1][0])
            joint_depth[b] = min(joint_depth[b], items[-1][0])
    items += [(joint_depth[i] - 1e-6, 1, i) for i in range(18) if visible[i]]
    for _, kind, k in sorted(items, key=lambda t: (-t[0], t[1])):
        if kind == 0:
            (x0, y0), (x1, y1) = xy[LIMBS[k][0]], xy[LIMBS[k][1]]
            angle = int(math.degrees(math.atan2(y0 - y1, x0 - x1)))
            centre = (int((x0 + x1) / 2.0), int((y0 + y1) / 2.0))
            poly = cv2.ellipse2Poly(centre, (int(math.hypot(x1 - x0, y1 - y0) / 2), stick), angle, 0, 360, 1)
            colour = COLORS[k] * LIMB_DIM * min(shade[LIMBS[k][0]], shade[LIMBS[k][1]])
            cv2.fillConvexPoly(canvas, poly, [int(c) for c in colour])
        else:
            centre = (int(xy[k, 0]), int(xy[k, 1]))
            cv2.circle(canvas, centre, stick, [int(c) for c in COLORS[k] * shade[k]], -1)
    for side in range(2) if hands_xy is not None else ():
        pts, vis = hands_xy[side].astype(int), hands_visible[side]
        for k, (a, b) in enumerate(HAND_EDGES):
            if vis[a] and vis[b]:
                cv2.line(canvas, tuple(map(int, pts[a])), tuple(map(int, pts[b])), HAND_COLORS[k], 2)
        for i in np.flatnonzero(vis):
            cv2.circle(canvas, tuple(map(int, pts[i])), 4, (0, 0, 255), -1)
    return canvas


def random_projection(frames: int = 37, seed: int = 0, hands: bool = True) -> Projected:
    """Points inside the canvas, some on whole pixels and some sharing a depth; some hidden."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform([0, 0], [W - 1, H - 1], (frames, 18, 2))
    xy[::3] = np.floor(xy[::3])  # whole pixels: the midpoint and length roundings sit on their edges
    depth = rng.uniform(0.0, 10.0, (frames, 18))
    depth[1::4, :6] = 5.0  # ties between limbs and joints
    visible = rng.random((frames, 18)) > 0.15
    projected = Projected(xy, depth, visible)
    if hands:
        projected.hands_xy = rng.uniform([0, 0], [W - 1, H - 1], (frames, 2, 21, 2))
        projected.hands_visible = rng.random((frames, 2, 21)) > 0.2
    return projected


@pytest.mark.parametrize("shading", [False, True])
@pytest.mark.parametrize("hands", [False, True])
def test_maps_equal_the_item_by_item_rule(shading, hands):
    projected = random_projection(seed=int(shading) + 2 * int(hands), hands=hands)
    shade = depth_shade(projected.depth, projected.visible) if shading else np.ones_like(projected.depth)
    maps = render_pose_maps(projected, W, H, depth_shading=shading)
    as_float = render_pose_maps(projected, W, H, depth_shading=shading, as_float=True)
    assert maps.dtype == np.uint8 and as_float.dtype == np.float32
    for f in range(projected.xy.shape[0]):
        args = (projected.hands_xy[f], projected.hands_visible[f]) if hands else ()
        expected = reference_map(projected.xy[f], projected.visible[f], projected.depth[f], shade[f], *args)
        assert np.array_equal(maps[f], expected), f
    assert np.array_equal(as_float, maps * np.float32(1.0 / 255.0))
    assert maps.any(axis=(1, 2, 3)).all()  # every frame drew something


def test_progress_per_chunk_and_cancel_between_chunks():
    projected = random_projection(frames=3 * DRAW_CHUNK + 1, hands=False)
    calls = []
    render_pose_maps(projected, W, H, progress=lambda done, total: calls.append((done, total)))
    total = 3 * DRAW_CHUNK + 1
    assert calls == [(DRAW_CHUNK, total), (2 * DRAW_CHUNK, total), (3 * DRAW_CHUNK, total), (total, total)]
    token, seen = CancelToken(), []

    def inner(done, total):
        seen.append(done)
        token.cancel()

    with pytest.raises(Cancelled):
        render_pose_maps(projected, W, H, progress=token.progress(inner))
    assert seen == [DRAW_CHUNK]
