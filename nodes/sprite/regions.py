"""Regions of a frame's masks, worked out inside the box where they can differ from the trivial answer.

Most of a sprite frame is sure background; labelling connected components over all of it was a large
share of the matte's time.  These helpers label only the box that matters and give the same result as
labelling the whole frame.
"""

from __future__ import annotations

import cv2
import numpy as np


def as_bytes(mask: np.ndarray) -> np.ndarray:
    """A mask as the uint8 image OpenCV takes: a bool mask's own bytes (a view, no copy), any other converted."""
    return mask.view(np.uint8) if mask.dtype == np.bool_ else mask.astype(np.uint8)


def sprite_box(mask: np.ndarray) -> tuple[slice, slice] | None:
    """The bounding box of ``mask`` as slices (None when empty): later steps work inside it."""
    x, y, w, h = cv2.boundingRect(as_bytes(mask))
    return (slice(y, y + h), slice(x, x + w)) if w and h else None


def band_width(h: int, w: int, border: int) -> int:
    """How many px wide the ``border``-px band around an ``h x w`` frame is: at least 1, at most half the frame."""
    return max(1, min(border, h // 2, w // 2))


def around(mask: np.ndarray, margin: int = 1) -> tuple[slice, slice] | None:
    """The bounding box of ``mask`` grown by ``margin`` pixels on each side, within the frame (None when empty)."""
    box = sprite_box(mask)
    if box is None:
        return None
    h, w = mask.shape
    return slice(max(0, box[0].start - margin), min(h, box[0].stop + margin)), slice(
        max(0, box[1].start - margin), min(w, box[1].stop + margin)
    )


def border_connected(mask: np.ndarray) -> np.ndarray:
    """The pixels of ``mask`` connected (4-neighbours) to the frame border through ``mask``.

    Only :func:`around` the pixels outside ``mask`` is labelled: every pixel outside their box reaches the
    border in a straight line through ``mask``, so it is connected, and so is whatever inside the box
    touches it (the grown box is framed by such pixels or by the frame border).
    """
    out = np.ones(mask.shape, bool)
    box = around(~mask)
    if box is None:
        return out
    n, labels = cv2.connectedComponents(mask[box].view(np.uint8), connectivity=4)
    keep = np.zeros(n, bool)
    for edge in (labels[0], labels[-1], labels[:, 0], labels[:, -1]):
        keep[edge] = True
    keep[0] = False  # label 0 is outside the mask
    out[box] = keep.take(labels)  # a label table looked up by take: indexing with the label image is twice as slow
    return out


def components(mask: np.ndarray, connectivity: int) -> tuple[int, np.ndarray, np.ndarray]:
    """``(count, labels, areas)``: OpenCV's connected components of a bool ``mask`` (label 0 outside it) and each
    label's pixel count, counted with ``bincount``: OpenCV's component statistics took two to four times the
    labelling itself, and the matte asks only for the areas here."""
    n, labels = cv2.connectedComponents(as_bytes(mask), connectivity=connectivity)
    return n, labels, np.bincount(labels.reshape(-1), minlength=n)


def label_means(labels: np.ndarray, n: int, values: np.ndarray) -> np.ndarray:
    """The mean of ``values`` over each label ``0..n-1`` of the label image ``labels`` (0 for an empty label)."""
    flat = labels.ravel()
    return np.bincount(flat, weights=values.ravel(), minlength=n) / np.maximum(np.bincount(flat, minlength=n), 1)


def region_means(mask: np.ndarray, values: np.ndarray, connectivity: int) -> tuple[np.ndarray, np.ndarray]:
    """``(labels [H,W], mean of values per label)`` of the connected regions of ``mask`` (uint8 or bool ``[H,W]``;
    label 0 is outside it)."""
    n, labels = cv2.connectedComponents(mask.view(np.uint8), connectivity=connectivity)
    return labels, label_means(labels, n, values)
