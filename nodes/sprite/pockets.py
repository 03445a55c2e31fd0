"""Enclosed key-coloured pockets that are drawn parts of the character, told apart by time.

A pocket of key colour enclosed by the sprite is either background seen through the character
(between the legs, between arm and body) or a part drawn in the key's own colour (a white visor or
white eyes on white).  One frame cannot tell them apart: both are the key's colour and enclosed.
A clip can: a drawn part moves with the body around it, so in every other frame the same
neighbourhood holds an enclosed region of the key's colour of the same size and shape (a pocket, or an island
too small for one), while a gap between the legs changes
shape from frame to frame, opens to the outside background or closes.  :func:`drawn_pockets`
follows each pocket through the clip by matching its neighbourhood and keeps those that persist.
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from .regions import sprite_box

# A pocket is the same pocket in another frame when their areas overlap this much (IoU) after alignment.  A part
# drawn in the key's colour and shaded towards it changes shape where it reaches the key as the body turns or
# lifts (Frozen-Bubble's eye whites on white: 91-187 px over its jump, IoU 0.44-0.55 against the largest; under
# H.264 the two eyes merge into one pocket in some frames, IoU 0.37-0.44 against one eye).  Over the 5312 pockets of
# 164 clips (Kenney's walks in both looks; tuxmath's, Pingus's, Frozen-Bubble's and Kenney's robot's sprites in four
# looks), with QUORUM's majority, 0.4 keeps 200 of the 275 drawn parts and 8 gaps, 0.45 193 and 5, 0.35 204 and 21
# (Kenney's arm-body gaps under noise).
SAME_POCKET = 0.4
# A pocket is a drawn part when it reappears in more than this share of the other frames (those that are evidence).
# A drawn part goes missing where the body turns it away (Pingus's belly), merges with another (Frozen-Bubble's eyes
# after H.264) or leaves the key's colour in a frame; a gap changes shape, opens or closes in most.  Over the same
# pockets as SAME_POCKET's figures, a majority keeps 200 of the 275 drawn parts and 8 gaps (990 px in all), two thirds
# 178 and 4 (224 px).
QUORUM = 0.5
# A pocket is open, no part enclosed by the character, when the outside background holds this share of the ring of
# pixels around it.  Under a video model's noise the background beside the silhouette breaks into regions just beyond
# the tolerance (14-20 per frame of Kenney's generated-look walks on white, grey and black): matching each through the
# clip was most of the matte's time there, and a few passed the quorum and stayed opaque.  Over the 315 clips of
# docs/sprite.md's evaluation, of the pockets the outside touches, 6,400 are at least half open; the matching kept 37 of
# them, none a drawn part, while the drawn parts it keeps that touch the outside (white sleeves behind a broken outline
# after JPEG, an eye against the head's edge after H.264) are less open.
OPEN = 0.5
# Clips shorter than this have too little evidence: their pockets stay background (the per-frame rule).
MIN_FRAMES = 3
# A frame pair is evidence only when the sprite's silhouette changed by this much (1 - IoU after
# alignment): in a still or rigidly sliding sprite a gap between the legs persists as well as an eye.
DEFORMED = 0.05


def drawn_pockets(
    lab: np.ndarray,
    sprite: list[np.ndarray],
    pockets: list[np.ndarray],
    margin: int = 8,
    search: int = 12,
    reach: int = 8,
    map_: Callable = map,
    regions: list[np.ndarray] | None = None,
    measures: list[Measures] | None = None,
) -> list[np.ndarray]:
    """Per frame, the pixels of the enclosed pockets that are drawn parts of the character (bool ``[H,W]``).

    ``lab`` is the clip's (blurred) Lab ``[T,H,W,3]``, ``sprite`` per frame the pixels not connected
    to the border background (the sprite with its pockets), ``pockets`` per frame a label image of
    the enclosed key-coloured pockets (positive; 0 = none) and of the other enclosed near-key regions, which stay
    opaque (negative, see :func:`.matte.pocket_labels`).  A pocket's neighbourhood (its box plus ``margin``
    px) is looked up in the other frames up to ``reach`` away (which bounds the work on long clips)
    by template matching within ``search`` px of where the sprite's centroid moved; the pocket is
    the same one there when the regions at the match, pockets or not, overlap it with IoU >= SAME_POCKET: a drawn
    part near a pocket's least size (an eye white, a pupil of 25-40 px) is smaller than one in some frames and opaque
    there: still there, not missing.  Only frame pairs between which the silhouette deformed count (a still or
    sliding sprite keeps its gaps too).  Pockets that reappear in more than QUORUM of those frames, and in none of
    the compared frames land on the outside background, are drawn parts; a gap that opens to the outside, or
    changes shape or closes in half of them or more, stays background, and so does a pocket the outside background
    surrounds on ``OPEN`` of its ring or more (no part enclosed by the character; not followed).  A pocket's
    matching stops once too few frames are left for it to reach the quorum (nine in ten matches find no pocket),
    which cannot change a decision.  Frames are looked at through ``map_`` (a thread pool's map).  ``regions``: per
    frame the labels' boxes and areas as :func:`.matte.pocket_labels` gives them (counted from the labels when None).
    ``measures``: per frame its :func:`pocket_measures` when already taken (with the pockets: one exchange between
    processes less).
    """
    t = len(lab)
    if t < MIN_FRAMES:
        return [np.zeros(p.shape, bool) for p in pockets]
    h, w = pockets[0].shape
    if measures is None:
        measures = list(
            map_(lambda i: pocket_measures(sprite[i], pockets[i], None if regions is None else regions[i]), range(t))
        )
    centres, areas, frames_boxes, labels, counts, open_ = (list(v) for v in zip(*measures, strict=True))
    mids, sizes = (list(v) for v in zip(*map(region_shapes, frames_boxes, areas), strict=True))

    def frame(i: int) -> np.ndarray:
        kept = np.zeros((h, w), bool)
        change: dict[tuple[int, int, int, int], float] = {}  # pockets of a frame mostly match at one shift
        if centres[i] is None:
            return kept
        others = [j for j in range(max(0, i - reach), min(t, i + reach + 1)) if j != i and centres[j] is not None]
        least = -(-len(others) // 2)  # the fewest evidence frames that can decide: half the others
        need = int(QUORUM * least) + 1  # the fewest reappearances that can pass: more than QUORUM of that evidence
        # Absent, open to the outside, or without a region of like size nearby in enough frames (most gaps): not
        # worth matching.
        ks = np.flatnonzero((areas[i][1 : counts[i] + 1] > 0) & ~open_[i][1:]) + 1
        similar = similar_pockets(i, ks, others, mids, sizes, centres, search + margin // 2)
        for k, alike in zip(ks, similar, strict=True):
            if alike.sum() < need:
                continue
            y, x, bh, bw = frames_boxes[i][k - 1].astype(int)
            y0, y1 = max(0, y - margin), min(h, y + bh + margin)
            x0, x1 = max(0, x - margin), min(w, x + bw + margin)
            template = lab[i, y0:y1, x0:x1]
            own = labels[i][y0:y1, x0:x1] == k
            seen = {}  # frame -> (shift of the neighbourhood, the pocket is there)
            hits, chances = 0, int(alike.sum())  # the frames that can still show the pocket
            for j in others:
                shift = (int(round(centres[j][0] - centres[i][0])), int(round(centres[j][1] - centres[i][1])))
                at = None
                if alike[j]:
                    at = best_match(lab[j], template, y0 + shift[0], x0 + shift[1], search)
                    chances -= 1
                if at is None:
                    seen[j] = (shift, False)
                else:
                    seen[j] = ((at[0] - y0, at[1] - x0), overlap(own, labels[j], areas[j], at) >= SAME_POCKET)
                    hits += seen[j][1]
                if hits + chances < need:
                    break  # too few frames left to show it: a gap (most pockets), not worth matching on
            if hits < need:
                continue
            votes = evidence = 0
            for j, (shift, hit) in seen.items():
                pair = (i, j, *shift)
                if pair not in change:
                    change[pair] = silhouette_change(sprite[i], sprite[j], shift)
                if change[pair] >= DEFORMED:
                    evidence += 1
                    votes += hit
            if evidence < least or votes <= QUORUM * evidence:
                continue
            # A part drawn in the key colour is enclosed wherever it is; a gap that opens to the
            # outside in any frame (the forearm lifted, the feet apart) is background.
            opened = False
            for j, (shift, hit) in seen.items():
                if not hit:
                    at = best_match(lab[j], template, y0 + shift[0], x0 + shift[1], search)
                    opened |= at is not None and outside(own, sprite[j], at) >= 0.5
            if not opened:
                kept |= labels[i] == k
        return kept

    return list(map_(frame, range(t)))


Measures = tuple[tuple[float, float] | None, np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]


def pocket_measures(
    sprite: np.ndarray, pockets: np.ndarray, regions: np.ndarray | None = None, out: np.ndarray | None = None
) -> Measures:
    """What :func:`drawn_pockets` looks at in one frame (its ``sprite``, the pockets' label image ``pockets`` and
    ``regions``, see there): ``(centroid, areas, boxes, labels renumbered as by :func:`numbered`, pockets, open)``,
    ``open`` per label as :func:`open_pockets` tells; the renumbered labels written into ``out`` when given (a frame
    of a shared array: the largest of the measures travels between processes as its place)."""
    labels, count = numbered(pockets, out)
    if regions is None:
        areas = label_areas(labels)
        found = np.array(boxes(labels, len(areas)), np.float32).reshape(-1, 4)
    else:
        areas, found = region_measures(regions, labels.size)
    return centroid(sprite), areas, found, labels, count, open_pockets(labels, found, count, sprite)


def numbered(labels: np.ndarray, out: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """``(labels, pockets)``: a frame's pocket labels (pockets ``1..P``, the other enclosed key-coloured regions
    ``-1..-S``, see :func:`.matte.pocket_labels`) renumbered ``1..P`` then ``P+1..P+S`` (into ``out`` when given), and
    ``P``."""
    count = int(labels.max(initial=0))
    if out is None:
        out = labels.copy()
    else:
        np.copyto(out, labels)
    np.subtract(count, labels, out=out, where=labels < 0)
    return out, count


def open_pockets(labels: np.ndarray, found: np.ndarray, count: int, sprite: np.ndarray) -> np.ndarray:
    """Per label ``0..count`` (the pockets, their boxes ``found`` as :func:`boxes` gives them), whether the outside
    background (not ``sprite``) holds at least ``OPEN`` of the ring of pixels around it (its 4-neighbours)."""
    out = np.zeros(count + 1, bool)
    h, w = labels.shape
    cross = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
    for k, (y, x, bh, bw) in enumerate(found[:count].astype(int), start=1):
        if not bh:
            continue
        box = slice(max(0, y - 1), min(h, y + bh + 1)), slice(max(0, x - 1), min(w, x + bw + 1))
        own = labels[box] == k
        ring = (cv2.dilate(own.view(np.uint8), cross) > 0) & ~own
        out[k] = np.count_nonzero(ring & ~sprite[box]) >= OPEN * np.count_nonzero(ring)
    return out


def outside(own: np.ndarray, sprite: np.ndarray, at: tuple[int, int]) -> float:
    """Share of a pocket (``own``, a crop mask) that lands on another frame's outside background at ``at``."""
    there = sprite[at[0] : at[0] + own.shape[0], at[1] : at[1] + own.shape[1]]
    return float(np.count_nonzero(own & ~there)) / max(int(own.sum()), 1)


def similar_pockets(
    i: int,
    ks: np.ndarray,
    others: list[int],
    mids: list[np.ndarray],
    sizes: list[np.ndarray],
    centres: list,
    reach: float,
) -> np.ndarray:
    """``[len(ks), T]``: per pocket ``ks`` of frame i (label ids), whether frame ``j`` (of ``others``) has a region
    (a pocket or an island) of like size within ``reach`` px of where the sprite's motion takes the pocket.
    ``mids`` and ``sizes`` hold per frame its regions' box centres ``[R,2]`` and sizes ``[R,3]`` (area, height,
    width; see :func:`region_shapes`).

    Like size: area, height and width each within the ratio SAME_POCKET (the same shape overlapping
    by that IoU cannot differ more); a cheap test that spares the template matching for most gaps
    and for the islands a noisy key leaves, which have no twin nearby.  All the other frames' regions are
    compared in one pass (a pass per frame was a dozen short numpy calls each).
    """
    out = np.zeros((len(ks), len(mids)), bool)
    rows = [j for j in others if len(mids[j])]
    if not len(ks) or not rows:
        return out
    mid, size = mids[i][ks - 1], sizes[i][ks - 1]
    shift = np.concatenate([np.broadcast_to(np.subtract(centres[j], centres[i]), mids[j].shape) for j in rows])
    moved = mid[:, None] + shift[None]  # [K,R,2]: each pocket moved as the sprite moved to that region's frame
    there = np.concatenate([mids[j] for j in rows])
    near = (np.abs(moved - there[None]) <= reach).all(axis=-1)
    ratio = np.concatenate([sizes[j] for j in rows])[None] / np.maximum(size[:, None], 1)
    alike = ((ratio >= SAME_POCKET) & (ratio <= 1 / SAME_POCKET)).all(axis=-1)
    starts = np.cumsum([0] + [len(mids[j]) for j in rows[:-1]])
    out[:, rows] = np.logical_or.reduceat(near & alike, starts, axis=1)
    return out


def region_shapes(found: np.ndarray, areas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(centres [R,2], sizes [R,3])`` of a frame's regions from their boxes ``found`` (y, x, height, width) and
    ``areas`` (per label, 0 first): what :func:`similar_pockets` compares."""
    mids = found[:, :2] + found[:, 2:] / 2
    sizes = np.concatenate([areas[1:, None], found[:, 2:]], axis=1).astype(np.float32)
    return mids, sizes


def region_measures(regions: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(areas, boxes)`` as :func:`label_areas` and :func:`boxes` count them on the :func:`numbered` labels of a frame
    of ``size`` px, from its regions' statistics ``[R,6]`` (signed label, y, x, height, width, area; every label
    ``1..P`` and ``-1..-S`` is one region, so the labels renumber as the frame's do): without a pass over the pixels."""
    number, _ = numbered(regions[:, 0])
    areas = np.zeros(len(regions) + 1, np.int64)
    areas[number] = regions[:, 5]
    areas[0] = size - int(regions[:, 5].sum())
    found = np.zeros((len(regions), 4), np.float32)
    found[number - 1] = regions[:, 1:5]
    return areas, found


def label_areas(labels: np.ndarray) -> np.ndarray:
    """Pixel count of each label ``0..max`` of a label image (counted inside the box of the labelled pixels)."""
    box = sprite_box(labels > 0)
    if box is None:
        return np.array([labels.size])
    areas = np.bincount(labels[box].ravel())
    areas[0] += labels.size - labels[box].size
    return areas


def boxes(labels: np.ndarray, n: int) -> list[tuple[int, int, int, int]]:
    """``(y, x, height, width)`` of the bounding box of each label ``1..n-1`` (zeros for an absent label).

    The extremes of all labels in one pass each (``ufunc.at``), not one pass over the pixels per label."""
    box = sprite_box(labels > 0)
    if box is None:
        return [(0, 0, 0, 0)] * (n - 1)
    ys, xs = np.nonzero(labels[box])
    ids = labels[box][ys, xs]
    low_y, low_x = np.full(n, ys.max(initial=0) + 1), np.full(n, xs.max(initial=0) + 1)
    high_y, high_x = np.full(n, -1), np.full(n, -1)
    np.minimum.at(low_y, ids, ys)
    np.minimum.at(low_x, ids, xs)
    np.maximum.at(high_y, ids, ys)
    np.maximum.at(high_x, ids, xs)
    y0, x0 = box[0].start, box[1].start
    return [
        (int(low_y[k] + y0), int(low_x[k] + x0), int(high_y[k] - low_y[k] + 1), int(high_x[k] - low_x[k] + 1))
        if high_y[k] >= 0
        else (0, 0, 0, 0)
        for k in range(1, n)
    ]


def silhouette_change(a: np.ndarray, b: np.ndarray, shift: tuple[int, int]) -> float:
    """``1 - IoU`` of silhouette ``a`` and silhouette ``b`` moved back by ``shift`` ``(dy, dx)``."""
    dy, dx = shift
    h, w = a.shape
    ya, yb = slice(max(0, -dy), min(h, h - dy)), slice(max(0, dy), min(h, h + dy))
    xa, xb = slice(max(0, -dx), min(w, w - dx)), slice(max(0, dx), min(w, w + dx))
    inter = int(np.count_nonzero(a[ya, xa] & b[yb, xb]))
    union = int(np.count_nonzero(a)) + int(np.count_nonzero(b)) - inter
    return 1.0 - inter / union if union else 0.0


def centroid(mask: np.ndarray) -> tuple[float, float] | None:
    """``(y, x)`` centroid of ``mask`` (None when empty): the sprite's motion to compensate.

    Not the bounding box's centre: on a noisy key a few background islands far from the sprite
    stretch the box, and they weigh next to nothing in the centroid.  Measured inside that box (OpenCV's moments
    of the whole frame were a tenth of the pocket matching's time).
    """
    box = sprite_box(mask)
    if box is None:
        return None
    m = cv2.moments(mask[box].view(np.uint8), binaryImage=True)
    # Sums of pixel coordinates, exact integers in float64: moved to the frame's, the frame's own moments.
    y, x = m["m01"] + box[0].start * m["m00"], m["m10"] + box[1].start * m["m00"]
    return y / m["m00"], x / m["m00"]


def best_match(image: np.ndarray, template: np.ndarray, y: int, x: int, search: int) -> tuple[int, int] | None:
    """Top-left ``(y, x)`` in ``image`` where ``template`` fits best (least squared difference) within
    ``search`` px of ``(y, x)``; None when the search window does not hold the template.

    Coarse to fine: a wide search is first done on every other pixel of the lightness channel, then
    refined within 2 px at full resolution (the full search cost more than the rest of the matte).
    """
    if search > 2 and min(template.shape[:2]) >= 12:
        coarse = best_match(image[::2, ::2, :1], template[::2, ::2, :1], y // 2, x // 2, (search + 1) // 2)
        if coarse is not None:
            y, x, search = 2 * coarse[0], 2 * coarse[1], 2
    h, w = image.shape[:2]
    th, tw = template.shape[:2]
    sy0, sx0 = max(0, y - search), max(0, x - search)
    sy1, sx1 = min(h, y + th + search), min(w, x + tw + search)
    if sy1 - sy0 < th or sx1 - sx0 < tw:
        return None
    score = cv2.matchTemplate(
        np.ascontiguousarray(image[sy0:sy1, sx0:sx1]), np.ascontiguousarray(template), cv2.TM_SQDIFF
    )
    _, _, (mx, my), _ = cv2.minMaxLoc(score)  # the first least score in row order, as np.argmin's
    return sy0 + my, sx0 + mx


def overlap(own: np.ndarray, labels: np.ndarray, areas: np.ndarray, at: tuple[int, int]) -> float:
    """IoU of a pocket (``own``, a crop mask) with the regions of another frame's ``labels`` (its pockets and
    islands, numbered by :func:`numbered`) it lands on at ``at``.

    The other regions count with their whole area (``areas`` per label), so a pocket that merged
    into a larger gap, or leaked out of the crop, does not look like the same pocket.
    """
    y, x = at
    under = labels[y : y + own.shape[0], x : x + own.shape[1]][own]
    under = under[under > 0]  # the pocket's pixels that land on another region: the intersection
    if not len(under):
        return 0.0
    inter = len(under)
    return inter / (int(np.count_nonzero(own)) + int(areas[np.unique(under)].sum()) - inter)
