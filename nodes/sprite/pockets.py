"""Enclosed key-coloured pockets that are drawn parts of the character, told apart by time.

A pocket of key colour enclosed by the sprite is either background seen through the character
(between the legs, between arm and body) or a part drawn in the key's own colour (a white visor or
white eyes on white).  One frame cannot tell them apart: both are the key's colour and enclosed.
A clip can: a drawn part moves with the body around it, so in every other frame the same
neighbourhood holds a pocket of the same size and shape, while a gap between the legs changes
shape from frame to frame, opens to the outside background or closes.  :func:`drawn_pockets`
follows each pocket through the clip by matching its neighbourhood and keeps those that persist.
"""

from __future__ import annotations

import cv2
import numpy as np

# A pocket is the same pocket in another frame when their areas overlap this much (IoU) after alignment.
SAME_POCKET = 0.6
# Share of the other frames in which a pocket must reappear to count as a drawn part.
QUORUM = 2 / 3
# Clips shorter than this have too little evidence: their pockets stay background (the per-frame rule).
MIN_FRAMES = 3
# A frame pair is evidence only when the sprite's silhouette changed by this much (1 - IoU after
# alignment): in a still or rigidly sliding sprite a gap between the legs persists as well as an eye.
DEFORMED = 0.05


def drawn_pockets(
    lab: np.ndarray, sprite: list[np.ndarray], pockets: list[np.ndarray], margin: int = 8, search: int = 12
) -> list[np.ndarray]:
    """Per frame, the pixels of the enclosed pockets that are drawn parts of the character (bool ``[H,W]``).

    ``lab`` is the clip's (blurred) Lab ``[T,H,W,3]``, ``sprite`` per frame the pixels not connected
    to the border background (the sprite with its pockets), ``pockets`` per frame a label image of
    the enclosed key-coloured pockets (0 = none).  A pocket's neighbourhood (its box plus ``margin``
    px) is looked up in every other frame by template matching within ``search`` px of where the
    sprite's box moved; the pocket is the same one there when the pockets at the match overlap it
    with IoU >= SAME_POCKET.  Pockets that reappear in QUORUM of the other frames are drawn parts;
    a gap that opens to the background, changes shape or closes in more frames stays background.
    """
    t = len(lab)
    kept = [np.zeros(p.shape, bool) for p in pockets]
    if t < MIN_FRAMES:
        return kept
    h, w = pockets[0].shape
    centres = [box_centre(s) for s in sprite]
    areas = [np.bincount(p.ravel()) for p in pockets]
    change: dict[tuple[int, int, int, int], float] = {}  # pockets of a frame mostly match at one shift
    for i in range(t):
        if centres[i] is None:
            continue
        for k, (y, x, bh, bw) in enumerate(boxes(pockets[i], len(areas[i])), start=1):
            if areas[i][k] == 0:
                continue
            y0, y1 = max(0, y - margin), min(h, y + bh + margin)
            x0, x1 = max(0, x - margin), min(w, x + bw + margin)
            template = lab[i, y0:y1, x0:x1]
            own = pockets[i][y0:y1, x0:x1] == k
            same = {}  # frame -> (shift of the neighbourhood, the pocket is there)
            for j in range(t):
                if j == i or centres[j] is None:
                    continue
                dy = int(round(centres[j][0] - centres[i][0]))
                dx = int(round(centres[j][1] - centres[i][1]))
                at = best_match(lab[j], template, y0 + dy, x0 + dx, search)
                if at is not None:
                    same[j] = ((at[0] - y0, at[1] - x0), overlap(own, pockets[j], areas[j], at) >= SAME_POCKET)
            if sum(hit for _, hit in same.values()) < QUORUM * (t - 1) / 2:
                continue  # too few reappearances to ever pass (most gaps): spare the silhouette checks
            votes = evidence = 0
            for j, (shift, hit) in same.items():
                pair = (i, j, *shift)
                if pair not in change:
                    change[pair] = silhouette_change(sprite[i], sprite[j], shift)
                if change[pair] >= DEFORMED:
                    evidence += 1
                    votes += hit
            if evidence >= (t - 1) / 2 and votes >= QUORUM * evidence:
                kept[i] |= pockets[i] == k
    return kept


def boxes(labels: np.ndarray, n: int) -> list[tuple[int, int, int, int]]:
    """``(y, x, height, width)`` of the bounding box of each label ``1..n-1`` (zeros for an absent label)."""
    ys, xs = np.nonzero(labels)
    ids = labels[ys, xs]
    out = []
    for k in range(1, n):
        pick = ids == k
        if not pick.any():
            out.append((0, 0, 0, 0))
            continue
        py, px = ys[pick], xs[pick]
        out.append((int(py.min()), int(px.min()), int(py.max() - py.min() + 1), int(px.max() - px.min() + 1)))
    return out


def silhouette_change(a: np.ndarray, b: np.ndarray, shift: tuple[int, int]) -> float:
    """``1 - IoU`` of silhouette ``a`` and silhouette ``b`` moved back by ``shift`` ``(dy, dx)``."""
    dy, dx = shift
    h, w = a.shape
    ya, yb = slice(max(0, -dy), min(h, h - dy)), slice(max(0, dy), min(h, h + dy))
    xa, xb = slice(max(0, -dx), min(w, w - dx)), slice(max(0, dx), min(w, w + dx))
    inter = int(np.count_nonzero(a[ya, xa] & b[yb, xb]))
    union = int(a.sum()) + int(b.sum()) - inter
    return 1.0 - inter / union if union else 0.0


def box_centre(mask: np.ndarray) -> tuple[float, float] | None:
    """``(y, x)`` centre of the bounding box of ``mask`` (None when empty): the sprite's motion to compensate."""
    x, y, w, h = cv2.boundingRect(mask.astype(np.uint8))
    return (y + h / 2, x + w / 2) if w and h else None


def best_match(image: np.ndarray, template: np.ndarray, y: int, x: int, search: int) -> tuple[int, int] | None:
    """Top-left ``(y, x)`` in ``image`` where ``template`` fits best (least squared difference) within
    ``search`` px of ``(y, x)``; None when the search window does not hold the template."""
    h, w = image.shape[:2]
    th, tw = template.shape[:2]
    sy0, sx0 = max(0, y - search), max(0, x - search)
    sy1, sx1 = min(h, y + th + search), min(w, x + tw + search)
    if sy1 - sy0 < th or sx1 - sx0 < tw:
        return None
    score = cv2.matchTemplate(np.ascontiguousarray(image[sy0:sy1, sx0:sx1]), template, cv2.TM_SQDIFF)
    my, mx = np.unravel_index(int(np.argmin(score)), score.shape)
    return sy0 + int(my), sx0 + int(mx)


def overlap(own: np.ndarray, labels: np.ndarray, areas: np.ndarray, at: tuple[int, int]) -> float:
    """IoU of a pocket (``own``, a crop mask) with the pockets of another frame's ``labels`` it lands on at ``at``.

    The other pockets count with their whole area (``areas`` per label), so a pocket that merged
    into a larger gap, or leaked out of the crop, does not look like the same pocket.
    """
    y, x = at
    there = labels[y : y + own.shape[0], x : x + own.shape[1]]
    hit = np.unique(there[own])
    hit = hit[hit > 0]
    if not len(hit):
        return 0.0
    inter = int(np.count_nonzero(own & np.isin(there, hit)))
    return inter / (int(own.sum()) + int(areas[hit].sum()) - inter)
