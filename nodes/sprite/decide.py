"""Deciding the matte's uncertain pixels with a graph cut: colour under the noise, and edges.

The key model (:mod:`.matte`) is right about most of a frame: the flat key far from the character is
background, colours far from the key are character.  It is wrong where the character's own colours come
within the key's tolerance: pale clothing on a grey key under GIF dithering (the dithering inflates the
tolerance to ΔE 5-8, more than the vest's offset), a body shaded through the key's grey.  Two kinds of
evidence that colour-per-pixel misses decide those pixels here:

- **Colour under the noise**: dithering and per-pixel noise are high-frequency, so on a further-averaged
  image (a 5x5 box over the 3x3-averaged Lab) the key's noise shrinks several times while a part's offset
  from the key stays.  Its distance to the background model, in units of the same figure measured on the
  border band, is the unary term: below 1 background, above 1 character, in proportion.
- **Edges**: a part is separated from the key by a visible step.  Neighbouring pixels pay to be cut apart
  in proportion to ``exp(-(gradient / edge level)²)`` (the fine 3x3 gradient, the clip's edge level), so the
  cut follows the silhouette's step, not the blur's halo, and closes over a part's shading where there is
  no step.

Only the uncertain pixels are decided: those of the background region near the character, and the
character's own near-key pixels.  Background far from anything off the key, and the character's clearly
off-key pixels (and the parts the matte already kept for reasons of shape or time: drawn pockets, parts
behind an edge) are fixed terminals of the graph.  PyMaxflow's Boykov–Kolmogorov solver cuts the graph of
the sprite's box: a few ms per frame.

On a neutral key under noise (:func:`colour_cut_frames`) the evidence is colour models instead: a body shaded
through the key's grey is the key's colour over whole bands, which no denoised distance tells from the key,
while mixtures of Gaussians learnt from the key model's sure pixels tell a tight cloud of key noise from a
body's spread of shades (OpenCV's GrabCut, models learnt once per clip and frozen per frame).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import cv2
import maxflow
import numpy as np

from ...core.processes import Ranks
from .colour import channel_max, distance
from .edges import edge_band, lab_gradient
from .points import gather, pick, scatter
from .quantiles import median, medians, quantile
from .regions import around, band_width, border_connected, region_means

# The further average over the 3x3-averaged Lab (px): dithering's error diffusion averages out within it.
HEAVY = 5
# Cost of cutting two calm neighbours apart, in units of a pixel one noise unit off the threshold.
SMOOTH = 2.0
# The unary term saturates at this many noise units (a clear part needs no more).
CAP = 3.0
# A part the cut adds to the character survives an opening by this many px and has this mean evidence (noise units).
OPEN = 3
CLEAR = 6.0


def denoised(lab: np.ndarray, near_key: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """A frame's Lab ``[H,W,3]`` averaged once more over ``HEAVY`` x ``HEAVY`` px, over the ``near_key`` pixels
    only (normalised convolution): a clear part's colour does not spill into the key around it.  Where no
    near-key pixel is in reach (inside a clear part) the frame's own colour.  Written into ``out`` when given.

    OpenCV's masked copy, not ``lab * weight``, zeroes the far pixels, and OpenCV divides by the count (both
    several times faster than numpy's broadcast over the channels, with the same IEEE results up to the sign
    of a zero, which the key distance squares away); the frame's own colour goes back by a masked copy too."""
    mask = near_key.view(np.uint8)
    total = cv2.blur(cv2.copyTo(lab, mask), (HEAVY, HEAVY), dst=out)
    count = cv2.blur(mask.astype(np.float32), (HEAVY, HEAVY))
    none = (count < 1e-3).view(np.uint8)
    np.maximum(count, 1e-3, out=count)
    cv2.divide(total, cv2.merge([count, count, count]), dst=total)
    return cv2.copyTo(lab, none, total)


def denoised_tolerance(resid: np.ndarray, low: float = 0.75) -> float:
    """The ΔE on the denoised image at which a pixel stops looking like the key: twice the border residuals'
    median ``resid`` (about 3σ of Gaussian noise; the cut's smoothness, not a wide margin, absorbs the
    tail), at least ``low``."""
    return max(low, 2.0 * float(median(resid))) if len(resid) else low


def decide(z: np.ndarray, grad: np.ndarray, level: float, bg: np.ndarray) -> np.ndarray:
    """The background of one frame after the cut (bool ``[H,W]``, a subset of ``bg``).

    ``z`` is the denoised key distance in noise units, ``grad`` the fine Lab gradient and ``level`` the clip's
    edge level; ``bg`` the key model's background region (enclosed pockets included, drawn parts not):
    everything else is character and stays so.  Of the background, the cut may give the character the clear
    parts it finds (:func:`clear_parts`).
    """
    if not (bg & (z >= CLEAR)).any():
        return bg.copy()  # no background pixel clearly off the key: no part to gain (clear_parts' mean)
    # The graph's nodes: the background's regions of evidence against the key that touch the character (a
    # part lost to the key's tolerance is attached to the character; a misfit of the key model far from it is
    # not) and hold clear evidence somewhere, and a pixel around them.  Every other pixel keeps the key model's
    # decision and enters the cut as a terminal beside its neighbours.
    doubt = (bg & (z > 1.0)).view(np.uint8)
    n, labels = cv2.connectedComponents(doubt, connectivity=8)
    touching = np.zeros(n, bool)
    touching[pick(labels, (cv2.dilate((~bg).view(np.uint8), np.ones((3, 3), np.uint8)) > 0) & (doubt > 0))] = True
    clear = np.zeros(n, bool)
    clear[pick(labels, bg & (z >= CLEAR))] = True
    touching &= clear
    touching[0] = False
    seeds = touching.take(labels).view(np.uint8)
    x, y, bw, bh = cv2.boundingRect(seeds)
    if not (bw and bh):
        return bg.copy()
    # Work inside the seeds' box plus the pixel around them and one more for their neighbours.
    hh, ww = bg.shape
    box = (slice(max(0, y - 2), min(hh, y + bh + 2)), slice(max(0, x - 2), min(ww, x + bw + 2)))
    bgc, zc = bg[box], z[box]
    free = bgc & (cv2.dilate(seeds[box], np.ones((3, 3), np.uint8)) > 0)
    ys, xs = np.nonzero(free)
    ids = np.full(bgc.shape, -1, np.int64)
    scatter(ids, ys, xs, np.arange(len(ys)))
    score = np.clip(gather(zc, ys, xs) - 1.0, -1.0, CAP)
    source = np.maximum(score, 0.0)  # paid when labelled background
    sink = np.maximum(-score, 0.0)  # paid when labelled character
    calm = SMOOTH * np.exp(-((grad[box] / level) ** 2))
    graph = maxflow.Graph[float]()
    graph.add_nodes(len(ys))
    h, w = bgc.shape
    for dy, dx in ((0, 1), (1, 0)):
        a_ids, b_ids = ids[: h - dy, : w - dx], ids[dy:, dx:]
        weight = np.minimum(calm[: h - dy, : w - dx], calm[dy:, dx:])
        a_bg, b_bg = bgc[: h - dy, : w - dx], bgc[dy:, dx:]
        both = (a_ids >= 0) & (b_ids >= 0)
        graph.add_edges(a_ids[both], b_ids[both], weight[both], weight[both])
        for mine, other, other_bg in ((a_ids, b_ids, b_bg), (b_ids, a_ids, a_bg)):
            edge = (mine >= 0) & (other < 0)
            # A fixed character neighbour is paid for when this node goes to the background, a fixed background
            # neighbour when it goes to the character.
            part, back = edge & ~other_bg, edge & other_bg
            source += np.bincount(mine[part], weights=weight[part], minlength=len(ys))
            sink += np.bincount(mine[back], weights=weight[back], minlength=len(ys))
    nodes = np.arange(len(ys))
    graph.add_grid_tedges(nodes, source, sink)
    graph.maxflow()
    cut = np.zeros(bgc.shape, bool)  # taken from the background by the cut
    scatter(cut, ys, xs, ~graph.get_grid_segments(nodes))
    out_bg = bg.copy()
    out_bg[box] &= ~clear_parts(cut, zc)
    return out_bg


def clear_parts(gained: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The pixels the cut took from the key model's background that form parts: what survives an opening
    by ``OPEN`` px (a soft edge's faint fringe and a thin gap's blurred sides do not), in connected regions
    whose mean denoised evidence ``z`` is at least ``CLEAR`` noise units."""
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * OPEN + 1, 2 * OPEN + 1))
    opened = cv2.morphologyEx(gained.view(np.uint8), cv2.MORPH_OPEN, kernel)
    labels, mean = region_means(opened, z, connectivity=4)
    keep = mean >= CLEAR
    keep[0] = False
    return keep.take(labels)


def decide_frames(
    pool: Ranks,
    lab: np.ndarray,
    grads: list[np.ndarray],
    level: float,
    models: list[np.ndarray],
    dists: list[np.ndarray],
    bgs: list[np.ndarray],
    strong: float,
    band: np.ndarray,
    heavy: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Per frame the background after the cut (see :func:`decide`), from the key model's per-frame
    ``models``, key distances ``dists`` and background regions ``bgs``; ``strong`` is the key distance (ΔE)
    beyond which a pixel is clearly off the key (left out of the denoising average), ``band`` the border
    band where the denoised key's noise is measured (its outer ``HEAVY // 2`` px left out: the box filter
    reflects there).  The denoised frames go into ``heavy`` when given (an array of ``lab``'s shape: on processes
    one from ``pool.empty``, whose frames travel as their place), and each frame's noise with them."""
    if heavy is None:
        heavy = np.empty_like(lab)
    inner = edge_band(band, HEAVY // 2)
    inner = inner if inner.any() else band
    at = np.flatnonzero(inner)  # the band's pixels by flat index, taken: numpy's indexing of [H,W,3] is slower

    def smooth(i: int) -> np.ndarray:
        denoised(lab[i], dists[i] < strong, out=heavy[i])
        return distance(heavy[i].reshape(-1, 3).take(at, axis=0), models[i].reshape(-1, 3).take(at, axis=0))

    resid = np.concatenate(list(pool.map(smooth, range(len(lab)))))
    heavy_tol = denoised_tolerance(resid[resid <= 6.0 * median(resid) + 1.0])  # the character touching the border

    def cut(i: int) -> np.ndarray:
        z = distance(heavy[i], models[i])
        z /= heavy_tol
        return decide(z, grads[i], level, bgs[i])

    return list(pool.map(cut, range(len(lab))))


# The colour-model cut.  Background farther than REACH px from the key model's character is sure background,
# and the background's colour model is learnt from it alone.  A gained near-key pixel with a strong edge
# within GAP px on both sides (left and right, or above and below) and flat (its 5x5-averaged Lab's slope below
# FLAT x the border's median slope, at least FLAT_FLOOR ΔE/px) is a gap between two parts, not a part: GrabCut's
# fixed smoothness closes such gaps (an arm beside a body), while a body shaded through the key slopes.
REACH = 15.0
# Gaussians in each of GrabCut's colour mixtures (OpenCV's fixed count): k-means needs as many samples.
MIXTURE = 5
GAP = 6
FLAT = 6.0
FLAT_FLOOR = 0.375
# A region the cut gained whose mean key distance is at most KEY_LIKE x the key's own (the median distance of the
# border band's pixels from the key model, as the edge cut's KEY_GAP reads it) is the key itself:
# GrabCut's smoothness closed a notch of it beside the character (under Pingus's beak, beside his flippers).  Measured
# on the gains of 13 generated-look clips (hand-drawn sprites and renders on greys, white and black): notches
# 0.7-1.8x, the parts it rightly gained 2.3x and more (a grey body shaded through a grey key: Testwuson, BCN_Epileptic,
# Mr. Fixit dark on black).
KEY_LIKE = 2.0


def slope(lab: np.ndarray) -> np.ndarray:
    """Per pixel the Lab slope (ΔE/px) of ``lab`` averaged over 5x5 px: flat on a key under noise, a ramp on a
    shaded part."""
    return lab_gradient(cv2.blur(lab, (5, 5)))


def between_edges(edges: np.ndarray, reach: int) -> np.ndarray:
    """Pixels with an ``edges`` pixel within ``reach`` px on both sides, left and right or above and below."""
    row = np.ones((1, reach + 1), np.uint8)
    col = row.T
    edges = edges.view(np.uint8)
    after = cv2.dilate(edges, row, anchor=(0, 0)) > 0
    before = cv2.dilate(edges, row, anchor=(reach, 0)) > 0
    below = cv2.dilate(edges, col, anchor=(0, 0)) > 0
    above = cv2.dilate(edges, col, anchor=(0, reach)) > 0
    return (after & before) | (below & above)


def colour_cut_frames(
    pool: Ranks,
    frames: np.ndarray,
    lab: np.ndarray,
    grads: np.ndarray,
    level: float,
    dists: list[np.ndarray],
    bgs: list[np.ndarray],
    tol: float,
    strong: float,
    band: np.ndarray,
    key_noise: float,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``(backgrounds, gained)`` per frame after a graph cut over colour models learnt from the key model's sure
    pixels (OpenCV's GrabCut): for a neutral key under a video model's noise or a GIF's dithering.  ``gained``:
    the pixels the cut took from the key model's background.

    There a body shaded through the key's grey (a flat-grey figure, a pale vest) is the key's colour over bands
    and patches that reach its outline, and the denoised distance of :func:`decide_frames` keeps them
    background (gross error 25 % of such a figure in the median frame).  Mixtures of Gaussians over the raw
    colours (``frames``), learnt from the key model's character and the sure background (``REACH`` px from it),
    see what the averaged distance cannot:
    the key's noise is a tight cloud around one grey, the body's shading a spread of greys, and the cut's
    contrast term closes a band between two shaded sides.  Seeds: the key model's character is probably
    character (sure where its key distance is ``strong`` or more), the rest of its background near the character
    probably background.  The models are learnt once, on the frame with the most sure character (OpenCV's k-means
    initialisation of GrabCut's mixtures), and each frame is cut with them frozen:
    the clip's character and key are the same in every frame.  The cut only gives pixels to the character (as
    :func:`decide` does), and not flat near-key gaps between two edges (``GAP``; ``grads`` and ``level`` tell
    the edges, ``tol`` the key's tolerance, ``band`` the border band where the key's slope is measured), nor
    regions as near the key as its own noise (``KEY_LIKE`` times ``key_noise``, the key's median distance from
    its model).
    """

    def sure_background(bg: np.ndarray) -> np.ndarray:
        return cv2.distanceTransform(bg.view(np.uint8), cv2.DIST_L2, 3) > REACH

    def seeds(i: int) -> np.ndarray:
        bg = bgs[i]
        mask = np.full(bg.shape, cv2.GC_PR_BGD, np.uint8)
        mask[~bg] = cv2.GC_PR_FGD
        mask[~bg & (dists[i] >= strong)] = cv2.GC_FGD
        mask[sure_background(bg)] = cv2.GC_BGD
        return mask

    def image(i: int) -> np.ndarray:
        return np.clip(np.rint(frames[i] * 255.0), 0, 255).astype(np.uint8)

    sure = [int(np.count_nonzero(~b & (d >= strong))) for b, d in zip(bgs, dists, strict=True)]
    first = int(np.argmax(sure))
    # The models are learnt from the sure pixels only: the background farther than REACH from the character,
    # and the key model's character.  Learnt from the whole seed mask, the background mixture took in the
    # character's own near-key parts (a pale vest within the key's tolerance, probably background there) and
    # the cut gave them to the key.
    far = sure_background(bgs[first])
    if not sure[first] or min(np.count_nonzero(far), np.count_nonzero(~bgs[first])) < MIXTURE:  # nothing to learn
        return [b.copy() for b in bgs], [np.zeros_like(b) for b in bgs]
    back_model, fore_model = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)

    def learn() -> None:
        img = image(first)
        samples = np.concatenate([pick(img, far), pick(img, ~bgs[first])])[:, None]
        labels = np.full((len(samples), 1), cv2.GC_PR_FGD, np.uint8)
        labels[: np.count_nonzero(far)] = cv2.GC_BGD
        cv2.grabCut(samples, labels, None, back_model, fore_model, 0, cv2.GC_INIT_WITH_MASK)

    # GrabCut seeds its mixtures by k-means on OpenCV's per-thread random generator: in a thread of its own,
    # whose generator starts from OpenCV's fixed default state, the same clip gets the same models every time
    # (on the caller's thread they would depend on what ran there before), and nobody else's generator moves.
    with ThreadPoolExecutor(1, thread_name_prefix="gameanim-colour-models") as own_thread:
        own_thread.submit(learn).result()

    def cut(i: int) -> tuple[np.ndarray, np.ndarray]:
        mask = seeds(i)
        cv2.grabCut(image(i), mask, None, back_model.copy(), fore_model.copy(), 1, cv2.GC_EVAL_FREEZE_MODEL)
        gained = bgs[i] & ((mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD))
        if gained.any():
            steep = slope(lab[i])
            flat = steep < max(FLAT * float(median(pick(steep, band))), FLAT_FLOOR)
            gained &= ~(between_edges(grads[i] >= level, GAP) & flat & (dists[i] < tol))
            labels, mean = region_means(gained, dists[i], connectivity=8)
            key = mean <= KEY_LIKE * key_noise
            key[0] = False
            gained &= ~key.take(labels)
        return bgs[i] & ~gained, gained

    results = list(pool.map(cut, range(len(frames))))
    return [r[0] for r in results], [r[1] for r in results]


# A key is noise-free when 99 % of its border pixels are within this (RGB, 0..1) of the border's median colour in
# every channel and frame: a render or a drawing composited on one solid colour (8-bit rounding aside).  RGB, not
# Lab: Lab squeezes the noise of a dark key (a video model's black) below any threshold.
EXACT_NOISE = 1.5 / 255
# Off the key by at most this (RGB): faint.  Around a noise-free key most pixels are a rim's mix with the
# character (measured: at most 38 % faint on renders and on plain or GIF sprites; 60-100 % after JPEG or H.264).
FAINT = 6 / 255
# The tolerance on such a key (unaveraged Lab: nothing to average away, and the 3x3 average would smear the
# character's 1-px anti-aliased rim over the key around it).
EXACT_TOL = 0.3
# The least tolerance (ΔE) on a clean key after a lossy codec (see key_kind): the border measures no noise, and
# at the smallest tolerance (1) the ringing around the sprite (4:2:0 chroma bleed, ΔE 6 median and 14 at the 90th
# percentile beside Pingus's beak after JPEG) was kept as blocks of character.  Calibrated on JPEG quality 75
# (at 1.5-1.75, 9-10 of the tuning sources' 23 clips stayed over the issue's bounds, at 2-3, 3-5), validated on
# H.264 CRF 23 and other qualities (see docs/sprite.md).
COMPRESSED_TOL = 2.0
# A ring of the character's rim is a soft edge (a mix of key and part) while its key distance is below this
# share of the next ring's, inward; the widest soft edge looked for.
MIXED = 0.9
MAX_RIM = 4
WIDTH_FRAMES = 4
# Rim pixels whose next ring inward is at least this far from the key (ΔE) measure the soft edge: the share
# is noise on a part close to the key.
CONTRAST = 10.0


def spread(count: int) -> np.ndarray:
    """Indices of up to ``WIDTH_FRAMES`` frames spread evenly over a clip of ``count`` frames (first and last
    included): what the clip-wide measures of a noise-free key look at."""
    return np.unique(np.linspace(0, count - 1, min(count, WIDTH_FRAMES)).round().astype(int))


def key_kind(frames: np.ndarray, band: np.ndarray, map_: Callable = map) -> Literal["exact", "compressed", "noisy"]:
    """What the clip's key is: ``"exact"`` (one noise-free colour: the matte then works on the unaveraged Lab),
    ``"compressed"`` (a clean key through a lossy codec: the tolerance is at least ``COMPRESSED_TOL``) or
    ``"noisy"``.  The pixels around the key are looked at on up to ``WIDTH_FRAMES`` frames spread over the clip.

    Exact: 99 % of the border's pixels within ``EXACT_NOISE`` of its median colour in every channel and frame,
    and the pixels just around that exact key mostly a visible step off it (a render's anti-aliased rim), not
    faint (``FAINT``).  On such a key the evidence is exact: every pixel off the key by more than rounding is
    the character or its rim.  A part shaded through the key's colour (a grey body on a grey key) is the key's
    colour only along a line, not over the pockets and bands that the tolerance of an averaged, noisy key would
    make of it.  Compressed: the same flat border with mostly faint pixels around the exact key.  JPEG and
    H.264 encode a flat key exactly and ring only in the blocks the sprite crosses, so the border, where the
    tolerance is measured, shows no noise at all while the sprite wears a halo of the codec's ringing (a sprite
    drawn up to the key in colours within ``FAINT`` of it, Tux's black body on black, reads so too).  The frames
    are looked at through ``map_`` (a thread pool's map).
    """
    at = np.flatnonzero(band)
    counted = set(spread(len(frames)).tolist())

    def frame_key(i: int) -> tuple[float, int, int]:
        """Frame ``i``'s border noise (the 99th percentile of its pixels' offsets from their median colour) and, on the
        frames the ring is counted on whose border is exact, the (faint, all) pixels of the ring around the key."""
        # By flat index (a boolean pick is several times slower).
        border = frames[i].reshape(-1, 3).take(at, axis=0)
        key = medians(border.T)
        noise = float(quantile(channel_max(np.abs(border - key)), 0.99))
        if noise > EXACT_NOISE or i not in counted:
            return noise, 0, 0
        near = cv2.inRange(frames[i], key - EXACT_NOISE, key + EXACT_NOISE) > 0  # every channel within
        exact = border_connected(near)
        box = around(~exact)  # the ring lies inside it, and so do its pixels' neighbours
        if box is None:
            return noise, 0, 0
        exact = exact[box]
        ring = (cv2.dilate(exact.view(np.uint8), np.ones((3, 3), np.uint8)) > 0) & ~exact
        off = channel_max(np.abs(pick(frames[i][box], ring) - key))
        return noise, int(np.count_nonzero(off <= FAINT)), len(off)

    if not at.size:
        return "noisy"
    # One pass over the frames: the ring is counted where a frame's own border is exact, and counts when all are.
    noise, faint, total = (list(v) for v in zip(*map_(frame_key, range(len(frames))), strict=True))
    if max(noise) > EXACT_NOISE:
        return "noisy"
    faint, total = sum(faint), sum(total)
    return "compressed" if total and faint > 0.5 * total else "exact"


# A noisy key whose noise a codec coded in blocks (JPEG's 8 px, H.264's 4 px transforms): the mean step between
# neighbouring border pixels across the 4-px grid lines is at least this many times the step within the blocks
# (measured: 1.6-3 after JPEG quality 75-90 or H.264 CRF 23, up to 20 at CRF 28 where the blocks are flat inside;
# 1.00-1.01 for a video model's noise as drawn or GIF-dithered) ...
BLOCK_STEP = 1.3
# ... and at least this (RGB, 0..1): steps to measure (0.12-0.85 levels of 255 on grey, light grey and white keys
# after the codecs above; 0.001-0.009 for a video model's black key after H.264, its noise clipped at zero and coded
# flat).
BLOCK_NOISE = 0.075 / 255


def block_coded(frames: np.ndarray, border: int) -> bool:
    """Whether the key's noise in the ``border``-px band of ``frames`` [T,H,W,3] went through a block codec.

    A video model's noise that survives JPEG or H.264 is flat within the codec's blocks and steps at their
    edges, all on a grid every 4 px from the frame's corner; drawn or dithered noise steps alike everywhere.
    The codec's ringing around the character is then no longer in the border's noise, which is what
    the tolerance is measured on (see ``COMPRESSED_TOL``).  A clip scaled after decoding moves the
    grid off the 4-px lines and reads as not coded."""
    b = band_width(frames.shape[1], frames.shape[2], border)
    rows = np.concatenate([frames[:, :b], frames[:, -b:]], axis=1).mean(axis=-1)  # [T,2b,W]
    cols = np.concatenate([frames[:, :, :b], frames[:, :, -b:]], axis=2).mean(axis=-1).transpose(0, 2, 1)  # [T,2b,H]
    on, within = [], []
    for band in (rows, cols):  # the step between pixels x-1 and x lies on the grid when x is a multiple of 4
        steps = np.abs(np.diff(band, axis=2))
        grid = np.arange(1, band.shape[2]) % 4 == 0
        on.append(steps[..., grid].ravel())
        within.append(steps[..., ~grid].ravel())
    on, within = np.concatenate(on), np.concatenate(within)
    if not on.size or not within.size:  # a frame too small to hold a block
        return False
    on, within = float(on.mean()), float(within.mean())
    return bool(on >= BLOCK_NOISE and on >= BLOCK_STEP * within)


def soft_edge_width(dists: list[np.ndarray], bgs: list[np.ndarray], map_: Callable = map) -> int:
    """How many px wide the character's soft edge is (1 for a render's anti-aliasing, 3-4 for a 2-3x upscale):
    the number of rings of the rim, counted inward from the background ``bgs``, whose key distance ``dists``
    stays below ``MIXED`` x that of the next ring (a mix of key and part gets stronger inward; a part's own
    colour does not).  ``MAX_RIM`` when no rim has contrast enough to tell.  Measured on up to ``WIDTH_FRAMES``
    frames spread over the clip (the width is the clip's: its upscale or renderer), through ``map_`` (a thread
    pool's map)."""
    rings = range(1, MAX_RIM + 1)

    def frame_ratios(i: int) -> list[np.ndarray]:
        """Per ring of frame ``i``'s rim, the ratios of its pixels' key distance to the next ring's."""
        # Inside the character's box and 3 px of background around it (every ring and 3x3 window within): the
        # same rings and sums as over the whole frame.
        box = around(~bgs[i], 3)
        if box is None:
            return [np.empty(0, np.float32) for _ in rings]
        dist, bg = dists[i][box], bgs[i][box]
        ring = np.ceil(cv2.distanceTransform((~bg).view(np.uint8), cv2.DIST_L2, 3)).astype(np.int32)
        out = []
        for k in rings:
            nxt = (ring == k + 1).astype(np.float32)
            count = cv2.boxFilter(nxt, -1, (3, 3), normalize=False)
            inner = cv2.boxFilter(dist * nxt, -1, (3, 3), normalize=False) / np.maximum(count, 1e-6)
            pick = (ring == k) & (count > 0) & (inner >= CONTRAST)
            out.append(dist[pick] / inner[pick])
        return out

    ratios = dict(zip(rings, zip(*map_(frame_ratios, spread(len(dists))), strict=True), strict=True))
    width = 0
    for k in ratios:
        values = np.concatenate(ratios[k])
        if len(values) < 16:
            return MAX_RIM if width == 0 else width
        if float(median(values)) >= MIXED:
            break
        width = k
    return max(width, 1)
