"""Anchor and stabilise a sprite clip so the character does not swim inside its frame.

Generated clips drift and jitter by a few pixels.  Game engines place a sprite by one fixed pivot
(usually the feet), so every frame must put the character's pivot at the same canvas pixel.  We
find the pivot per frame from the alpha, choose a target track (``lock``: one constant position,
for in-place cycles and to take the root motion out of a walk that travels; ``smooth``: a
Gaussian-smoothed track, keeping slow intended motion but removing jitter), shift every frame by
a whole number of pixels (no resampling blur, which matters for pixel art) and crop all frames
to one fixed canvas: the union of the shifted boxes plus padding.

The ``feet`` pivot takes x from the body (torso and hips), not from the lowest pixels: in a walk
the lowest pixels alternate between the front and the back foot, and following them makes the
sprite slide back and forth.  y is the ground line of the frames in contact; frames in the air
(a run's flight phase, a jump) keep their height above it.  When the clip was rendered from a rig
(our pose renders), the rig root's x per frame (``root_x``) replaces the estimate: it is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import gaussian_filter1d

from ...core.errors import InputError
from ...core.frames import check_alpha
from ...core.progress import ProgressFn, no_progress
from .matte import check_frames
from .options import ANCHORS
from .options import STABILISE_MODES as MODES


@dataclass(frozen=True)
class Stabilised:
    """Result of :func:`stabilise`.

    ``offsets[t] = (dx, dy)``: where input pixel ``(x, y)`` of frame ``t`` lands on the canvas is
    ``(x + dx, y + dy)``.  ``anchor`` is the pivot's position on the canvas (the same in every
    frame for ``lock``); ``boxes`` are the per-frame opaque boxes ``(x0, y0, x1, y1)`` of the input
    (exclusive ends; all -1 for an empty frame).
    """

    rgb: np.ndarray
    alpha: np.ndarray
    offsets: np.ndarray  # int [T,2]
    anchor: np.ndarray  # float [T,2] pivot on the output canvas
    boxes: np.ndarray  # int [T,4]


def bounding_boxes(alpha: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """Per-frame boxes ``(x0, y0, x1, y1)`` (exclusive) of ``alpha > threshold``; -1s when empty."""
    opaque = alpha > threshold
    rows, cols = opaque.any(axis=2), opaque.any(axis=1)
    h, w = alpha.shape[1:]
    y0 = np.argmax(rows, axis=1)
    y1 = h - np.argmax(rows[:, ::-1], axis=1)
    x0 = np.argmax(cols, axis=1)
    x1 = w - np.argmax(cols[:, ::-1], axis=1)
    boxes = np.stack([x0, y0, x1, y1], axis=1).astype(np.int64)
    boxes[~rows.any(axis=1)] = -1
    return boxes


# Body bands (fractions of the typical frame's sprite height, from each frame's top): six narrow
# bands over the torso and hips, 30-66 % of the height.  The head (the top 30 %: the whole upper
# third of a chibi character) bobs and leans in a drawn walk, and the legs (the lowest third) are
# what moves most, so both are left out.  Narrow bands give the median more votes: an arm swinging
# across the torso moves one or two of them.
BODY_BANDS = tuple((0.30 + 0.06 * k, 0.36 + 0.06 * k) for k in range(6))


def band_profiles(alpha: np.ndarray, boxes: np.ndarray, band: tuple[float, float], height: float) -> np.ndarray:
    """``[T,W]`` column profiles: alpha summed over the rows of ``band`` of each frame's sprite.

    Rows are counted from each frame's top in units of one common ``height`` (the typical
    frame's), so a frame with a raised foot (a shorter box) does not move its bands up the body.
    """
    t, h, w = alpha.shape
    profiles = np.zeros((t, w), np.float64)
    first, last = int(band[0] * height), max(1, int(round(band[1] * height)))
    for i in np.flatnonzero(boxes[:, 0] >= 0):
        y0 = boxes[i, 1]
        profiles[i] = alpha[i, min(h, y0 + first) : min(h, y0 + last)].sum(axis=0)
    return profiles


def match_lags(profiles: np.ndarray, ref: int, present: np.ndarray) -> np.ndarray:
    """Sub-pixel lag (cross-correlation peak) of every present profile against ``profiles[ref]``.

    The whole-pixel peak is refined by a parabola through it and its neighbours: a generated
    clip's soft edges carry sub-pixel position, and the median of whole-pixel lags rounds twice.
    """
    w = profiles.shape[1]
    n = 1 << int(np.ceil(np.log2(2 * w)))
    spectra = np.fft.rfft(profiles[present], n)
    corr = np.fft.irfft(spectra * np.conj(np.fft.rfft(profiles[ref], n)), n)
    peak = corr.argmax(axis=1)
    rows = np.arange(len(peak))
    left, centre, right = corr[rows, peak - 1], corr[rows, peak], corr[rows, (peak + 1) % n]
    curve = left - 2 * centre + right
    safe = np.where(curve < 0, curve, -1.0)
    frac = np.where(curve < 0, np.clip(0.5 * (left - right) / safe, -0.5, 0.5), 0.0)
    return np.where(peak < n // 2, peak, peak - n) + frac


def body_x(alpha: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Per-frame horizontal body position, robust to swinging limbs; NaN for empty frames.

    For each band of :data:`BODY_BANDS` the column profiles of all frames are matched against a
    reference frame's by cross-correlation, which gives each frame's displacement of that part
    of the body.  Jitter and travel move every part alike; a swinging arm moves one or two bands,
    so the per-frame median over the bands is the body's displacement.  A clip drawn in place
    thus gets (nearly) the same x in every frame, and feet that alternate do not drag the pivot.
    The reference is placed at its alpha-weighted median column, so the value is a real pixel
    position (the body centre).
    """
    present = np.flatnonzero(boxes[:, 0] >= 0)
    xs = np.full(alpha.shape[0], np.nan)
    heights = boxes[present, 3] - boxes[present, 1]
    ref = int(present[np.argsort(heights)[len(present) // 2]])  # a typical frame, not a crouch or a leap
    height = float(boxes[ref, 3] - boxes[ref, 1])
    lags = np.stack([match_lags(band_profiles(alpha, boxes, band, height), ref, present) for band in BODY_BANDS])
    profile = alpha[ref].sum(axis=0, dtype=np.float64)
    cum = np.cumsum(profile)
    centre = float(np.searchsorted(cum, cum[-1] / 2)) + 0.5
    xs[present] = centre + np.median(lags, axis=0)
    return xs


def head_x(alpha: np.ndarray, fraction: float = 0.2, threshold: float = 0.5) -> np.ndarray:
    """Per-frame x of the head: alpha-weighted centre of the top ``fraction`` of the opaque box.

    How far it travels over a clip (its span) says whether an in-place cycle stayed in place.
    """
    boxes = bounding_boxes(alpha, threshold)
    out = np.full(len(alpha), np.nan)
    columns = np.arange(alpha.shape[2], dtype=np.float64)
    for i in np.flatnonzero(boxes[:, 0] >= 0):
        y0, y1 = boxes[i, 1], boxes[i, 3]
        band = alpha[i, y0 : y0 + max(1, int(fraction * (y1 - y0)))].sum(axis=0)
        out[i] = band @ columns / band.sum()
    return out


def ground_y(alpha: np.ndarray, threshold: float = 0.5, min_pixels: int = 2) -> np.ndarray:
    """Per-frame ground line: the bottom edge of the lowest row with ``min_pixels`` opaque pixels.

    Counting a few pixels per row ignores a stray anti-aliased speck below the feet.
    """
    rows = (alpha > threshold).sum(axis=2) >= min_pixels
    h = alpha.shape[1]
    bottom = (h - np.argmax(rows[:, ::-1], axis=1)).astype(np.float64)
    bottom[~rows.any(axis=1)] = np.nan
    return bottom


def anchor_points(alpha: np.ndarray, anchor: str = "feet", threshold: float = 0.5) -> np.ndarray:
    """Per-frame pivot ``(x, y)`` in input pixels; NaN for frames with no opaque pixel.

    ``feet``: x is the body centre (:func:`body_x`: torso and hips, not the feet, which alternate
    in a walk), y the ground line (:func:`ground_y`).  ``centroid``: alpha-weighted centre.
    ``bbox_center``: centre of the opaque box.
    """
    if anchor not in ANCHORS:
        raise InputError(f"Unknown anchor {anchor!r}; choose one of {', '.join(ANCHORS)}.")
    t, h, w = alpha.shape
    boxes = bounding_boxes(alpha, threshold)
    points = np.full((t, 2), np.nan)
    empty = boxes[:, 0] < 0
    if empty.all():
        return points
    if anchor == "bbox_center":
        points[:, 0] = (boxes[:, 0] + boxes[:, 2]) / 2
        points[:, 1] = (boxes[:, 1] + boxes[:, 3]) / 2
    elif anchor == "centroid":
        mass = alpha.sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            points[:, 0] = (alpha.sum(axis=1) @ np.arange(w, dtype=np.float64)) / mass
            points[:, 1] = (alpha.sum(axis=2) @ np.arange(h, dtype=np.float64)) / mass
    else:
        points[:, 0] = body_x(alpha, boxes)
        points[:, 1] = ground_y(alpha, threshold)
    points[empty] = np.nan
    return points


def rig_root_track(estimate: np.ndarray, root_x: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Per-frame x from the rig root where it is known, elsewhere the body estimate shifted onto it.

    A frame whose hips are hidden falls back to ``estimate`` plus the median of ``root_x - estimate``
    over the frames that have both, so the fallback lands on the same point of the body instead of
    jumping between the hip and the body centre.
    """
    root = np.asarray(root_x, np.float64).reshape(-1)
    if root.shape != estimate.shape:
        raise InputError(
            f"The pose holds {root.size} frames but the clip has {estimate.size}; connect the pose the clip "
            "was rendered from (frame-count changes in between, such as timing holds, break the pairing)."
        )
    known = np.isfinite(root) & present
    if not known.any():
        raise InputError(
            "The pose shows the hips on no frame of the clip, so there is no rig root to anchor on; "
            "disconnect pose_keypoint to anchor on the body, or render the pose with the hips in view."
        )
    both = known & np.isfinite(estimate)
    bias = float(np.median(root[both] - estimate[both])) if both.any() else 0.0
    track = estimate + bias
    track[known] = root[known]
    track[~present] = np.nan
    return track


# Planted jitter up to this many pixels either way is levelled on the frames in contact: a frame
# shaken 4 px up must not be read as airborne next to one shaken 4 px down.
MAX_JITTER = 4


def contact_frames(ground: np.ndarray, height: float, fraction: float = 0.04) -> np.ndarray:
    """Frames whose feet touch the ground: ground line within a tolerance of the lowest.

    The tolerance is the span of :data:`MAX_JITTER` either way plus a pixel, so a frame shaken up
    still counts as standing next to one shaken down, plus ``fraction`` x height for the contact
    line a drawing or a render varies by itself (a foot rolling onto its toes, the far hoof of a
    perspective render standing higher on screen than the near one).  In a run or a jump the others
    are in the air; they keep their height above the ground.  A hop lower than the tolerance cannot
    be told from jitter and is levelled.
    """
    valid = ~np.isnan(ground)
    if not valid.any():
        return valid
    lowest = np.nanmax(ground)
    return valid & (ground >= lowest - (2 * MAX_JITTER + 1.0 + fraction * height))


def ground_row(ground: np.ndarray, contact: np.ndarray) -> tuple[float, np.ndarray]:
    """The row the feet are levelled onto, and the frames levelled onto it.

    The ground line of a frame in contact is an exact measurement, so ``lock`` puts it on one row:
    the median of the frames in contact.  A clip drawn in place stands on one row: when at least
    three quarters of the frames in contact, and four or more, share the lowest row exactly (shaken
    rows coincide like that once in hundreds of 8-frame clips), the frames a little above
    it are a lift the artist drew (every Kenney walk raises both feet on one frame), not jitter, and
    keep it.  Planted jitter scatters the rows, and shaken frames below the median row make the
    lowest row a minority, so a shaken clip is levelled in full.
    """
    lowest = np.nanmax(ground[contact])
    standing = (contact & (ground == lowest)).sum()
    if standing >= 4 and 4 * standing >= 3 * contact.sum():
        return float(lowest), contact & (ground == lowest)
    return float(np.rint(np.median(ground[contact]))), contact


def target_track(
    points: np.ndarray,
    mode: str = "lock",
    sigma: float = 2.0,
    contact: np.ndarray | None = None,
    row: float | None = None,
) -> np.ndarray:
    """Where each frame's pivot should go (input pixel coordinates), ignoring empty frames.

    With ``contact`` (feet pivot), frames in the air get the vertical shift of the frames in contact,
    so a jump keeps its height while the ground line is locked (onto ``row`` when given).
    """
    if mode not in MODES:
        raise InputError(f"Unknown stabilise mode {mode!r}; choose one of {', '.join(MODES)}.")
    valid = ~np.isnan(points[:, 0])
    if not valid.any():
        return points.copy()
    filled = points.copy()
    idx = np.arange(len(points))
    for k in range(2):
        filled[:, k] = np.interp(idx, idx[valid], points[valid, k])
    if mode == "none":
        return filled
    ref = contact if contact is not None and contact.any() else valid
    if mode == "lock":
        target = np.broadcast_to(np.median(points[ref], axis=0), points.shape).copy()
        if row is not None:
            target[:, 1] = row
    else:
        target = gaussian_filter1d(filled, sigma=max(sigma, 1e-3), axis=0, mode="nearest")
    if contact is not None and contact.any() and not contact[valid].all():
        # ``lock``: the shake of a frame in the air is unknown and independent of its neighbours', so
        # it gets the typical shift of the frames in contact; ``smooth``: the shift of the nearest
        # frames in contact, which follows a slow drift.
        shifts = (target - filled)[contact, 1]
        shift_y = np.full(len(idx), np.median(shifts)) if mode == "lock" else np.interp(idx, idx[contact], shifts)
        air = valid & ~contact
        target[air, 1] = filled[air, 1] + shift_y[air]
    return target


def stabilise(
    rgb: np.ndarray,
    alpha: np.ndarray,
    anchor: str = "feet",
    mode: str = "lock",
    sigma: float = 2.0,
    padding: int = 2,
    threshold: float = 0.5,
    progress: ProgressFn | None = None,
    deadband: int = 2,
    root_x: np.ndarray | None = None,
) -> Stabilised:
    """Shift frames so the pivot follows the target track, then crop to one fixed canvas.

    ``root_x`` (per-frame x of the rig root in input pixels, NaN where unknown) replaces the
    pivot's x; see :func:`rig_root_track`.
    """
    rgb = check_frames(rgb, "rgb")
    alpha = check_alpha(alpha, rgb, "alpha")
    if padding < 0:
        raise InputError(f"padding must be >= 0; got {padding}.")
    report = progress or no_progress
    t, h, w = alpha.shape
    boxes = bounding_boxes(alpha, threshold)
    if (boxes[:, 0] < 0).all():
        raise InputError(
            "Every frame is fully transparent, so there is nothing to anchor. Check the matte "
            "(Remove Background tolerances) or the mask you connected."
        )
    points = anchor_points(alpha, anchor, threshold)
    if root_x is not None:
        points[:, 0] = rig_root_track(points[:, 0], root_x, boxes[:, 0] >= 0)
    contact, row = None, None
    if anchor == "feet":
        heights = (boxes[:, 3] - boxes[:, 1]).astype(np.float64)
        contact = contact_frames(points[:, 1], float(np.median(heights[boxes[:, 0] >= 0])))
        if mode == "lock":
            row, contact = ground_row(points[:, 1], contact)
    target = target_track(points, mode, sigma, contact, row)
    shift = np.nan_to_num(np.rint(target - points), nan=0.0).astype(np.int64)
    # The body estimate of a clip drawn in place wanders by a pixel (limbs move); correcting that
    # would add motion the artist did not draw.  So an axis whose shifts all stay within
    # ``deadband`` px is left alone: an aligned clip comes out exactly as it went in.  The rig
    # root does not wander, so its x needs no dead band, and neither does a locked ground line:
    # it is an exact measurement, already level on a clip drawn in place (see :func:`ground_row`).
    band = np.array([0 if root_x is not None else deadband, 0 if row is not None else deadband])
    still = np.abs(shift).max(axis=0) <= band
    shift[:, still] = 0
    present = boxes[:, 0] >= 0
    moved = boxes[present] + np.concatenate([shift[present], shift[present]], axis=1)
    cx0, cy0 = moved[:, 0].min() - padding, moved[:, 1].min() - padding
    cx1, cy1 = moved[:, 2].max() + padding, moved[:, 3].max() + padding
    ch, cw = int(cy1 - cy0), int(cx1 - cx0)
    offsets = shift - np.array([cx0, cy0])
    out_rgb = np.zeros((t, ch, cw, 3), np.float32)
    out_a = np.zeros((t, ch, cw), np.float32)
    for i in range(t):
        dx, dy = offsets[i]
        # Destination window on the canvas, clipped, and the matching source window.
        x0, y0 = max(0, dx), max(0, dy)
        x1, y1 = min(cw, dx + w), min(ch, dy + h)
        if x1 > x0 and y1 > y0:
            out_rgb[i, y0:y1, x0:x1] = rgb[i, y0 - dy : y1 - dy, x0 - dx : x1 - dx]
            out_a[i, y0:y1, x0:x1] = alpha[i, y0 - dy : y1 - dy, x0 - dx : x1 - dx]
        report(i + 1, t)
    anchor_out = np.where(np.isnan(points), np.nan, points + offsets)
    return Stabilised(out_rgb, out_a, offsets.astype(np.int64), anchor_out, boxes)


def root_travel(offsets: np.ndarray, deadband: float = 2.0) -> np.ndarray:
    """``[T,2]`` float: the steady travel the offsets took out, from frame 0, for an engine to put back.

    The removed motion ``offsets[0] - offsets[t]`` is the character's travel plus the jitter the
    stabiliser removed; an engine moving the sprite by it would put the jitter back.  A locomotion
    cycle travels at a steady speed, so a straight line is fitted per axis (least squares: the
    jitter averages out) and that line is the root motion.  An axis is left at zero when its fitted
    travel over the whole clip stays within ``deadband`` px or its slope is within three standard
    errors of zero: that is an in-place cycle's jitter, not travel.
    """
    removed = (offsets[0] - offsets).astype(np.float64)
    t = len(removed)
    if t < 2:
        return np.zeros_like(removed)
    frames = np.arange(t, dtype=np.float64)
    slope, intercept = np.polyfit(frames, removed, 1)
    residuals = removed - (frames[:, None] * slope + intercept)
    spread = ((frames - frames.mean()) ** 2).sum()
    stderr = np.sqrt((residuals**2).sum(axis=0) / max(t - 2, 1) / spread)
    slope[(np.abs(slope) * (t - 1) <= deadband) | (np.abs(slope) <= 3 * stderr)] = 0.0
    return frames[:, None] * slope[None, :]
