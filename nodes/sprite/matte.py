"""Background to alpha for sprites rendered on a (nearly) solid background.

VideoCrafter2 sprites are prompted with "solid color background", and what comes out is a key
colour with a gentle gradient or vignette, per-frame noise and compression blocks.  White and grey
keys are the common ones, and real characters are full of colours close to them (skin on white,
steel on grey), so no fixed colour distance can separate sprite from background.  The matte
therefore decides *where* the background is, not only *what colour* it is:

1. **Model** the background of every frame as a smooth surface (a quadratic in x and y per CIE Lab
   channel, so gradients and vignettes are part of the key), fitted robustly to a border band and
   refitted on every pixel the first pass called background.
2. **Measure** the tolerance from the clip's own background noise (the spread of the border's
   residuals, pooled over the clip so the edge does not flicker), never below ``low``.  If the
   border does not fit a smooth surface within ``high`` the clip has no solid background and we
   say so (InputError) instead of keying out half a scene.  A clean key through a lossy codec measures no noise
   on its border while the sprite rings: there the tolerance is at least ``COMPRESSED_TOL`` (see
   :func:`.decide.key_kind`).  On a neutral key a video model's noise is
   mostly chroma; the weak band, the outline test and enclosed pockets' insides are judged in the key's
   noise units, chroma scaled down to the lightness noise (:func:`noise_weights`).
3. **Background = connected to the frame border**: pixels within tolerance of the model that touch
   the border through other such pixels.  Pockets enclosed by the sprite (between arm and body,
   between the legs) of at least ``min_hole`` px whose mean colour is the key's are background,
   unless over the clip they behave as a part drawn in the key's colour (a white visor on white:
   it moves with the body and keeps its shape, see :mod:`.pockets`); smaller key-coloured islands
   and pale parts (light shoes on grey) stay part of the character.  Opaque specks smaller than
   ``(2·cleanup+3)²`` px, and islands with no pixel clearly off the key, are dropped.
4. **Unmix** the rim: an edge pixel is ``C = a·F + (1 - a)·B`` with ``B`` the background model
   there and ``F`` the mean of nearby interior pixels; ``a`` is the projection of ``C - B`` onto
   ``F - B`` and ``(C - (1 - a)·B)/a`` is the despilled colour.
5. **Steady** the edges over time: a soft pixel's alpha is averaged over the frames in which the
   pixel keeps its colour, so a still edge stops flickering under fresh noise while a moving edge
   keeps its own alpha (on a noise-free key a drawn part in the key's colour keeps its own).

Everything is vectorised numpy/OpenCV on the CPU, frames shared out over the pack's worker processes (threads where there
are none; see :mod:`...core.processes`).  kornia was considered (to keep a GPU clip on
the GPU) and dropped: the matte needs exact connected components and a distance transform, which
OpenCV computes in one pass, while kornia's connected components iterate; at sprite sizes the
copy from the GPU costs less than that.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

import cv2
import numpy as np

from ...core import processes, threads
from ...core.errors import InputError
from ...core.frames import check_alpha
from ...core.processes import Ranks
from ...core.progress import ProgressFn, no_progress
from .colour import channel_sum, distance
from .decide import (
    COMPRESSED_TOL,
    EXACT_TOL,
    block_coded,
    colour_cut_frames,
    decide_frames,
    key_kind,
    soft_edge_width,
)
from .edges import close_steps, edge_band, edge_cut, edge_level, lab_gradient
from .pockets import MIN_FRAMES, Measures, drawn_pockets, pocket_measures
from .points import gather, pick, scatter
from .quantiles import median, medians, quantile
from .regions import as_bytes, band_width, border_connected, components, sprite_box

# Largest colour change (ΔE across the frame) of a background we still call "solid": a gentle
# gradient or vignette, not a scene or a sky.
MAX_GRADIENT = 30.0
# Pixels within WEAK x the tolerance may be background tinted by compression (chroma bleed).
WEAK = 4.0
# Weak pixels deeper than this (px) inside the sprite are part of it: compression tints only a narrow band.
DEEP = 6.0
# A rim pixel this many tolerances closer to the key than the outline it lies behind is the part's own colour.
PAST = 4.0
# On a grey key (chroma below GREY_CHROMA), an enclosed pocket needs this share of inside pixels (see pocket_labels).
CORE = 0.25
GREY_CHROMA = 20.0
# On a noise-free key with a soft edge at most this wide (a render's anti-aliasing), a rim pixel is unmixed
# against the nearest opaque pixel's colour; a wider edge (an upscale's) is a mix deeper in, and there the
# nearest opaque pixel is a mix too: the mean of the nearby ones.
NEAREST_RIM = 2
# On an edge at most NEAREST_RIM px wide, on any key (see render_rim): a colour within CALM (ΔE) of the key, in a
# part whose opaque pixels come as near, says nothing of its alpha; |F - B| of at least TOLD (RGB 0..1) unmixes a
# pixel well.
CALM = 15.0
TOLD = 0.2
# Behind a wide soft edge a rim pixel is unmixed against the colour farthest from the key within the rim's reach where
# that explains it within PURE_MISS (RGB 0..1) as well as the F it had: on a noise-free key whose lightness (L*) is
# within MIX_LIGHTNESS (on black and white a part's darker or lighter shade is its mix with the key; on black without
# that bound Mr. Fixit shaded dark went 2.2 -> 5.0 % gross error, Frozen-Bubble 0.5 -> 0.7 %), and on a coloured key
# (chroma at least GREY_CHROMA) under noise or a codec.
PURE_MISS = 0.02
MIX_LIGHTNESS = (8.0, 92.0)
# A rim pixel at least this far from the key (RGB 0..1) is clearly off it: farther than an upscale's ringing or a
# video model's noise takes a mix (at 0.08 the tuxmath penguin's bicubic ringing beside its white belly counted,
# 0.17 -> 0.37 % gross error; at 0.25 half of Tux's dark outline dots did not).
OFF_KEY = 0.15
# The colour-model cut decides a clip when the parts it gives the character beyond the key model, with the pockets
# the clip keeps as drawn parts, counted where they are at least PART px thick (left by a PART x PART erosion), are at
# least GAINED of the character (Frozen-Bubble's eye whites on mid grey under noise, kept by time, no longer counted
# as the cut's gain: 0.43 / 0.48 -> 1.10 / 1.27 % gross error without them): measured
# 0.06-20 % where the key's grey swallowed shaded parts (Pingus's belly, Frozen-Bubble's face, the renders' bodies),
# up to 0.048 % where it mostly added fringes and closed gaps (Kenney's walks sliding under noise, the tuxmath
# penguin) and the denoised cut decides as well or better: at 0.01 % three of the four walks in that range lost
# 0.005-0.014 of their least IoU and one gained 0.015, and the pale vest 5-20 levels below the key (0.03 %) would have
# gained 2.4 -> 0.3 % gross error in its median frame (docs/sprite.md).
GAINED = 0.0005
PART = 5
# A pixel whose distance from its best mix of the key and a colour (the miss) is above OFF_LINE x its distance from
# the key is not explained as that mix: off the line from the key to the colour.
OFF_LINE = 0.5
# On a coloured key (chroma at least GREY_CHROMA) a pixel of the character nearer the key than BLEED x the character's
# median distance from it, explained as a mix of the key and a part, is unmixed wherever it lies: JPEG's and H.264's
# chroma subsampling fills the narrow gaps between thin parts (a lasso's coils, hair strands) with such mixes, deeper
# than the rim and farther from the key than the weak band, and they stayed opaque (the gaucho after JPEG on blue
# 1.0 / 1.9 -> 0.7 / 1.1 % gross error; over 150 clips of ten games' sprites on green, blue and magenta, 120 better,
# none worse: docs/sprite.md).  At 0.35 Kenney's female person's green parts on green began to go (worst frame 0.08 ->
# 0.11 %), at 0.45 the male adventurer's green shirt (0.04 -> 0.81 %).
BLEED = 0.3
# The weak band's chroma noise is scaled down to the lightness noise by at most this factor, and only when it is
# above MIN_NOISE (ΔE, robust σ of the 3x3-averaged border): see noise_weights.
MAX_WHITEN = 3.0
MIN_NOISE = 0.1
# An enclosed pocket's mean offset from the key must also be within this many weak-band tolerances (noise units).
POCKET_NOISE = 2.0
# On a clean grey key (chroma below GREY_CHROMA) after a lossy codec (flat, its ringing beside the character only) an
# enclosed region whose inside varies in lightness by more than this (ΔE, standard deviation of L*) is shading, not
# the key seen through a gap (a grey render on grey saved as JPEG: 26.8 / 28.3 -> 2.3 / 2.6 % gross error;
# docs/sprite.md, "A clean key through a lossy codec").
SHADED = 0.75
# On a noisy grey key whose noise a codec coded in blocks (see .decide.block_coded) a gap's inside varies too: the
# codec's ringing in a narrow gap grows with the noise it kept.  There the shading must vary by more than SHADED
# combined with this many times the key's noise (median border residual, ΔE): at SHADED alone Kenney's walks with the
# generated look (JPEG quality 80) kept gaps between arm and body (inside spread up to 1.5 ΔE, key noise 0.15-0.19; the
# female person's least IoU on light grey 0.957 -> 0.938), at 6 that gap stayed, at 9 the walks' least IoU is at or above
# the matte's before the block test; the flat-grey BCN_Epileptic on grey keeps less of its shading at 9 than at 6 (after
# JPEG 6.1 / 9.2 -> 9.8 / 26.4 % gross error; 17.1 / 29.4 before the block test).
SHADED_NOISE = 9.0


class NotSolidError(InputError):
    """The clip's background is not a solid key (the message has the numbers and what to do)."""


@dataclass(frozen=True)
class Weak:
    """The weak band in the key's noise units: pixels within ``WEAK·tolerance`` of the key once each Lab
    channel is scaled by ``weights`` (see :func:`noise_weights`)."""

    weights: np.ndarray  # float32 [3]
    tolerance: float


@dataclass(frozen=True)
class Background:
    """What the matte learned about a clip's background.

    ``rgb`` is the mean key colour; ``tolerance`` the ΔE below which a pixel matches the per-frame
    background model; ``solid_fraction`` the share of border pixels within that tolerance.
    """

    rgb: np.ndarray  # float32 [3] in 0..1
    solid_fraction: float
    solid: bool
    tolerance: float = 0.0
    gradient: float = 0.0  # ΔE range of the background model across the frame (max over frames)


def check_frames(frames: np.ndarray, name: str = "frames") -> np.ndarray:
    """Validate an ``[T,H,W,3]`` float batch (the IMAGE layout) and return it as float32."""
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise InputError(f"{name} must be an RGB batch [T,H,W,3]; got shape {tuple(frames.shape)}.")
    if frames.shape[0] == 0:
        raise InputError(f"{name} is an empty batch (0 frames); connect a node that outputs at least one frame.")
    if frames.shape[1] < 2 or frames.shape[2] < 2:
        raise InputError(f"The frames are {frames.shape[2]}x{frames.shape[1]} px; sprites need at least 2x2 px.")
    frames = np.ascontiguousarray(frames, dtype=np.float32)
    # A frame's least and largest values are finite exactly when all of its values are (NaN and inf propagate):
    # two passes over the clip, by two threads, and no array of its size, whose fresh pages a host process that freed
    # its memory (ComfyUI between nodes) paid for in page faults before every clip.
    finite = np.empty(len(frames), bool)

    def check(start: int, stop: int) -> None:
        part = frames[start:stop]
        finite[start:stop] = np.isfinite(part.min(axis=(1, 2, 3))) & np.isfinite(part.max(axis=(1, 2, 3)))

    threads.halves(check, len(frames))
    if not finite.all():
        bad = np.flatnonzero(~finite).tolist()
        raise InputError(
            f"{name} hold NaN or infinite values in frame(s) {bad[:8]}{' …' if len(bad) > 8 else ''}; the node "
            "before this one produced broken pixels (e.g. a VAE decode in fp16 overflowing); fix or drop those frames."
        )
    return frames


def to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB float 0..1 (any leading shape, last dim 3) to CIE Lab (L 0..100) via OpenCV."""
    flat = np.ascontiguousarray(rgb.reshape(-1, 1, 3), dtype=np.float32)
    return cv2.cvtColor(flat, cv2.COLOR_RGB2Lab).reshape(rgb.shape)


def from_lab(lab: np.ndarray) -> np.ndarray:
    """CIE Lab (any leading shape, last dim 3) back to sRGB float 0..1 via OpenCV (the inverse of :func:`to_lab`)."""
    flat = np.ascontiguousarray(lab.reshape(-1, 1, 3), dtype=np.float32)
    return cv2.cvtColor(flat, cv2.COLOR_Lab2RGB).reshape(lab.shape)


def border_mask(h: int, w: int, border: int) -> np.ndarray:
    """A boolean ``[h,w]`` mask of the ``border``-wide band around a frame."""
    b = band_width(h, w, border)
    band = np.zeros((h, w), bool)
    band[:b], band[-b:], band[:, :b], band[:, -b:] = True, True, True, True
    return band


def frame_lab(frame: np.ndarray, out: np.ndarray | None = None, blur: bool = True) -> np.ndarray:
    """CIE Lab of one frame ``[H,W,3]``, box-filtered 3x3 (unless ``blur`` is False: a noise-free key).

    Averaging nine pixels cuts per-pixel noise by 3x, so the tolerance can be tight and pockets of
    noisy background stay connected.  Converted frame by frame: OpenCV converts an ``[H,W,3]`` image
    several times faster than the same pixels stacked as one ``[N,1,3]`` column, with identical values.
    Written into ``out`` when given (a frame of the clip's array).
    """
    if not blur:
        return cv2.cvtColor(frame, cv2.COLOR_RGB2Lab, dst=out)
    return cv2.blur(cv2.cvtColor(frame, cv2.COLOR_RGB2Lab), (3, 3), dst=out)


@dataclass(frozen=True)
class Surface:
    """A quadratic in x and y (1, u, v, u², uv, v², coordinates scaled to -1..1) over an ``h x w`` frame.

    Evaluating ``[h*w,6] @ [6,3]`` at full resolution was the matte's largest cost; the surface is
    smooth, so :meth:`render` evaluates it on a grid every ``STEP`` px and lets OpenCV interpolate.
    """

    h: int
    w: int
    STEP = 8

    def basis(self, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
        """``[..., 6]`` basis at pixel coordinates (float arrays of any matching shape)."""
        u = np.asarray(xs, np.float32) / max(self.w - 1, 1) * 2 - 1
        v = np.asarray(ys, np.float32) / max(self.h - 1, 1) * 2 - 1
        return np.stack([np.ones_like(u), u, v, u * u, u * v, v * v], axis=-1)

    def render(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``[h,w,C]`` values of the surface ``coef [6,C]`` (bilinear between grid nodes), written into ``out`` (of
        three channels) when given."""
        return cv2.resize(self.grid() @ coef, (self.w, self.h), dst=out, interpolation=cv2.INTER_LINEAR).reshape(
            self.h, self.w, -1
        )

    @lru_cache(maxsize=8)  # noqa: B019 - a handful of frame sizes per session; Surface is a frozen value
    def grid(self) -> np.ndarray:
        """``[gh,gw,6]`` basis at the nodes :meth:`render` evaluates, where cv2.resize samples them:
        ``(i + 0.5) * scale - 0.5``."""
        gh, gw = -(-self.h // self.STEP), -(-self.w // self.STEP)
        ys = (np.arange(gh, dtype=np.float32) + 0.5) * (self.h / gh) - 0.5
        xs = (np.arange(gw, dtype=np.float32) + 0.5) * (self.w / gw) - 0.5
        return frozen(self.basis(*np.meshgrid(ys, xs, indexing="ij")))

    @lru_cache(maxsize=8)  # noqa: B019
    def coarse(self, step: int = 6) -> np.ndarray:
        """``[gh,gw,6]`` basis at every ``step``-th pixel in x and y (``frame[::step, ::step]``)."""
        return frozen(self.basis(*np.mgrid[0 : self.h : step, 0 : self.w : step]))

    @lru_cache(maxsize=8)  # noqa: B019
    def border(self, border: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ys, xs, basis [N,6])`` of every other pixel (a checkerboard) of the ``border``-wide band."""
        h, w = self.h, self.w
        ys, xs = np.nonzero(border_mask(h, w, border) & ((np.add.outer(np.arange(h), np.arange(w)) % 2) == 0))
        return frozen(ys), frozen(xs), frozen(self.basis(ys, xs))


def frozen(array: np.ndarray) -> np.ndarray:
    """``array`` made read-only: cached arrays are shared by every call and every thread."""
    array.setflags(write=False)
    return array


def solve(basis: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Least-squares coefficients ``[6,C]`` by the normal equations (6x6; the basis is in -1..1)."""
    gram = basis.T @ basis + 1e-4 * np.eye(basis.shape[1], dtype=np.float32)
    return np.linalg.solve(gram, basis.T @ values).astype(np.float32)


def fit_surface(basis: np.ndarray, values: np.ndarray, floor: float, rounds: int = 1) -> np.ndarray:
    """Least-squares coefficients ``[6,C]`` of ``values [N,C]``, refitted without outliers.

    Outliers (sprite pixels touching the border, compression blocks) are those farther than
    3x the median residual (at least ``floor``) from the previous fit.  Too few points for a
    quadratic (a frame a few px wide): a flat surface at their median.
    """
    keep = np.ones(len(values), bool)
    coef = np.zeros((basis.shape[1], values.shape[1]), np.float32)
    if len(values) < basis.shape[1] * 4:
        coef[0] = medians(values.T)  # basis[:, 0] is the constant 1
    for refit in range(rounds + 1):
        if keep.sum() < basis.shape[1] * 4:
            break
        if keep.all():
            coef = solve(basis, values)
        else:  # taken by index: a boolean pick of rows is several times slower
            at = np.flatnonzero(keep)
            coef = solve(basis.take(at, axis=0), values.take(at, axis=0))
        if refit == rounds:
            break
        resid = distance(values, basis @ coef)
        kept = resid <= max(3.0 * float(median(resid)), floor)
        if np.array_equal(kept, keep):
            break  # no outlier left out or taken back: the refit would solve the same system again
        keep = kept
    return coef


def remove_background(
    frames: np.ndarray,
    low: float = 1.0,
    high: float = 16.0,
    border: int = 4,
    cleanup: int = 1,
    min_solid_fraction: float = 0.8,
    min_hole: int = 24,
    progress: ProgressFn | None = None,
) -> tuple[np.ndarray, np.ndarray, Background]:
    """Matte a clip on a solid background: ``(rgb [T,H,W,3], alpha [T,H,W], background)``.

    ``low`` is the smallest tolerance (ΔE) ever used, ``high`` the largest background noise the
    clip may have before it no longer counts as solid; see the module docstring for the method.
    Raises InputError when the background is not solid (with the numbers and what to do).
    The frames are shared out over the pack's worker processes (see :mod:`...core.processes`).
    """
    frames = check_frames(frames)
    if not 0 <= low < high:
        raise InputError(f"The tolerances must satisfy 0 <= low < high; got low={low}, high={high}.")
    # Taken from the ranks' shared arrays: the Lab clip, the gradients, the background models, the key distances,
    # the pocket labels twice, the colours, alpha (14 floats a pixel) and the soft pixels (a byte).
    arrays = frames.nbytes // 3 * 14 + frames.nbytes // 12 + 9 * processes.ALIGN
    return processes.run(
        matte_clip, frames, low, high, border, cleanup, min_solid_fraction, min_hole, arrays=arrays, progress=progress
    )


def matte_clip(
    pool: Ranks,
    frames: np.ndarray,
    low: float,
    high: float,
    border: int,
    cleanup: int,
    min_solid_fraction: float,
    min_hole: int,
    progress: ProgressFn | None = None,
) -> tuple[np.ndarray, np.ndarray, Background]:
    """:func:`remove_background` of checked ``frames``, run on every rank of ``pool`` (OpenCV and numpy release the
    GIL, so on threads too)."""
    report = progress or no_progress
    t, h, w = frames.shape[:3]
    surface = Surface(h, w)
    band = border_mask(h, w, border)
    lab = pool.empty(frames.shape, np.float32)
    grads = pool.empty((t, h, w), np.float32)
    # A noise-free key is decided on the unaveraged colours (see :func:`.decide.key_kind`).
    kind = key_kind(frames, band, pool.map)
    exact = kind == "exact"

    inner = np.flatnonzero(edge_band(band))  # where the edge level reads each frame's gradients, by flat index

    def colour(i: int) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        frame_lab(frames[i], out=lab[i], blur=not exact)
        lab_gradient(lab[i], out=grads[i])
        return border_fit(lab[i], surface, border, low), grads[i].reshape(-1).take(inner)

    fits, border_grads = zip(*pool.map(colour, range(t)), strict=True)
    coefs, tol, resid, weak = fit_backgrounds(lab, surface, border, low, pool.map, list(fits))
    try:
        background = describe(surface, coefs, tol, resid, high, min_solid_fraction)
    except NotSolidError:
        if not band.all():
            raise
        # The border band is the whole frame: the character is in it, and the key's numbers say nothing.
        raise NotSolidError(
            f"The frames are {w}x{h} px: a border band of {border} px covers all of them, so no key can be measured "
            "around the character. Lower 'border' (the band must leave the character inside it) or use larger "
            "frames."
        ) from None
    if exact:
        tol, weak = EXACT_TOL, None
        background = replace(background, tolerance=tol)
    # A noisy grey key with no chroma noise left (JPEG and H.264 drop it) whose noise steps on the codec's block
    # grid is a key after a codec too: its ringing beside the character is not in the border's noise.
    codec = kind == "compressed" or (kind == "noisy" and weak is None and coded_grey(background, frames, border))
    if codec and tol < COMPRESSED_TOL:  # the codec's ringing is beside the sprite only
        tol = COMPRESSED_TOL
        background = replace(background, tolerance=tol)
    level = edge_level(list(border_grads))
    key_noise = None if exact else float(median(resid))  # the key's own distance from its model
    shaded = None
    if codec:  # a gap's inside varies with the noise the codec kept (see SHADED_NOISE)
        shaded = SHADED if kind == "compressed" else float(np.hypot(SHADED, SHADED_NOISE * key_noise))
    # Written in place, so they travel between processes as their place (see processes.ProcessRanks.pack).
    models = pool.empty(frames.shape, np.float32)
    dists = pool.empty((t, h, w), np.float32)
    pockets = pool.empty((t, h, w), np.int32)
    numbers = pool.empty((t, h, w), np.int32) if t >= MIN_FRAMES else None  # the pockets renumbered (pocket_measures)

    def pockets_of(i: int) -> tuple[tuple, Measures | None]:
        """Frame ``i``'s :func:`find_pockets`, and what the clip's pocket matching looks at in it."""
        found = find_pockets(
            lab[i],
            grads[i],
            surface,
            coefs[i],
            tol,
            min_hole,
            level,
            weak,
            key_noise,
            shaded,
            out=(models[i], dists[i], pockets[i]),
        )
        if t < MIN_FRAMES:
            return found, None
        return found, pocket_measures(~found[2], found[3], found[5], out=numbers[i])

    found, measures = (list(v) for v in zip(*pool.map(pockets_of, range(t)), strict=True))
    sprite = [~f[2] for f in found]  # not connected to the border background (one pass a frame: no map's exchange)
    drawn = drawn_pockets(
        lab, sprite, [f[3] for f in found], map_=pool.map, regions=[f[5] for f in found], measures=measures
    )
    # Pockets that are no drawn part: background seen through.
    bgs = [bg | ((labels > 0) & ~drawn[i]) for i, (_, _, bg, labels, _, _) in enumerate(found)]
    gained: list[np.ndarray | None] = [None] * t
    # On a noisy key a graph cut decides the uncertain pixels (see :mod:`.decide`): over colour models on a
    # neutral key under noise when they give the character parts of its own (see GAINED; the character it
    # decides has no weak band, and what it gained, and its calm pixels, below the edge level, are opaque where
    # their colour is near the key's: shading, not a soft edge's mix, which is a step); else over the denoised
    # key distance.
    neutral = grey_key(found[t // 2][0])
    if not exact and weak is not None and neutral:
        cut, gains = colour_cut_frames(
            pool, frames, lab, grads, level, [f[1] for f in found], bgs, tol, WEAK * tol, band, key_noise
        )
        solid = np.ones((PART, PART), np.uint8)  # a part at least PART px thick somewhere, not a fringe
        # The drawn pockets count too: parts in the key's colour that the clip keeps by time are swallowed by the
        # key's colour as much as the parts the cut gains.
        parts = sum(
            np.count_nonzero(cv2.erode((g | d).view(np.uint8), solid)) for g, d in zip(gains, drawn, strict=True)
        )
        if parts >= GAINED * sum(np.count_nonzero(~b) for b in cut):
            # Islands of key colour the cut left inside the character, smaller than a pocket, are the
            # character's own (a vest's shading under the key's noise): unmixed, each would take a rim's
            # width of the part around it.
            bgs = list(pool.map(lambda i: fill_holes(cut[i], bgs[i], min_hole), range(t)))
            gained = gains
    rgb = pool.empty(frames.shape, np.float32)  # the matte's colours; before them, the cut's denoised frames
    if not exact and gained[0] is None:
        bgs = decide_frames(
            pool, lab, grads, level, [f[0] for f in found], [f[1] for f in found], bgs, WEAK * tol, band, rgb
        )
    # A step between two parts through a neutral key's grey is no background (see close_steps).  Not after JPEG or
    # H.264 (no noise units there): their ringing beside the character makes edges in the background, and the
    # closing joined ringing islands to the character (Kenney's JPEG-compressed walks lost up to 0.011 IoU).
    if neutral and (exact or weak is not None):
        bgs = list(pool.map(lambda i: close_steps(bgs[i], grads[i], level), range(t)))
    rim = soft_edge_width([f[1] for f in found], bgs, pool.map)
    alpha = pool.empty((t, h, w), np.float32)
    softs = pool.empty((t, h, w), np.bool_)
    speck = (2 * cleanup + 3) ** 2 if cleanup > 0 else 0  # +2: the 3x3 Lab blur
    # The calm part of the character is opaque where its colour is within the weak band (unmix's ``kept``) where
    # a colour-model cut decided it, and on a noisy key after a block codec: there the weak band, four times a
    # tolerance measured on the noise the codec kept (ΔE 3.4 on Kenney's sprites after H.264), takes in pale parts
    # beside the key (the pale shoes and claws on light grey, unmixed to 0.1-0.5 alpha).  Not on a clean key
    # through a codec, where the ringing beside the character is calm in blocks and would be kept with them.
    calm_kept = codec and kind == "noisy"

    def matte(i: int) -> None:
        model, dist, _, _, seen, _ = found[i]
        matte_frame(
            frames[i],
            dist,
            model,
            bgs[i],
            tol,
            speck,
            seen & ~bgs[i] if gained[i] is None else ~bgs[i],
            rim,
            out=(rgb[i], alpha[i]),
            weak=weak,
            lab=lab[i],
            exact=exact,
            kept=~bgs[i] & (grads[i] < level) if gained[i] is not None or calm_kept else None,
            gained=gained[i],
            coloured=not neutral,
        )
        np.copyto(softs[i], soft_pixels(alpha[i]))

    pool.for_each(matte, t, report)
    # On a noise-free key a part drawn in the key's colour has the background's colour exactly, and steadied it
    # took the background's alpha from the frames where the key lies there: its own alpha stays.  Not under
    # noise: there the borrowing also softens gaps wrongly kept as drawn parts in a frame or two (Frozen-Bubble
    # with the generated look on light grey went 0.5 -> 0.8 % in its worst frame).
    fixed = np.stack(drawn) if exact and any(d.any() for d in drawn) else None
    ys, xs = steady_edges(alpha, lab, tol, map_=pool.map, fixed=fixed, softs=softs)

    basis = surface.basis(ys, xs)  # of the touched pixels, once for the clip

    def despill(i: int) -> None:  # the despilled colour follows the steadied alpha
        own = gather(alpha[i], ys, xs)
        soft = soft_pixels(own)
        if soft.any():
            behind = from_lab(basis[soft] @ coefs[i])
            py, px = ys[soft], xs[soft]
            scatter(rgb[i], py, px, despilled(gather(frames[i], py, px), behind, own[soft]))

    list(pool.map(despill, range(t)))
    return rgb, alpha, background


def describe(
    surface: Surface, coefs: list, tol: float, resid: np.ndarray, high: float, min_solid_fraction: float
) -> Background:
    """The clip's :class:`Background` from its fitted surfaces, or NotSolidError (with the numbers and what to do)."""
    h, w = surface.h, surface.w
    fraction = float(np.mean(resid <= tol))
    corners = surface.basis(np.array([0, 0, h - 1, h - 1, h // 2]), np.array([0, w - 1, 0, w - 1, w // 2]))
    gradient = max(float(np.ptp(distance(corners @ c, corners[-1] @ c))) for c in coefs)
    key_lab = np.mean([corners[-1] @ c for c in coefs], axis=0).astype(np.float32)
    key = from_lab(key_lab)
    # Only the tests that failed are named, each with its number and its limit: a share of matching pixels measured at
    # a tolerance above ``high`` says nothing.
    failed = []
    if fraction < min_solid_fraction:
        failed.append(
            f"only {100 * fraction:.0f}% of the border pixels match a smooth background "
            f"(need {100 * min_solid_fraction:.0f}%)"
        )
    if tol > high:
        failed.append(f"its noise needs a tolerance of ΔE {tol:.1f} (allowed: high = {high:g})")
    if gradient > MAX_GRADIENT:
        failed.append(f"it changes by ΔE {gradient:.0f} across the frame (allowed {MAX_GRADIENT:g})")
    if failed:
        raise NotSolidError(
            f"The background is not a solid colour: {'; '.join(failed)}. Regenerate on a plain background "
            "('solid color background' in the prompt), raise 'high' for a noisy key, or connect a MASK from a "
            "segmentation node instead."
        )
    return Background(np.clip(key, 0, 1).astype(np.float32), fraction, True, tol, gradient)


def noise_weights(resid: np.ndarray) -> np.ndarray | None:
    """Per Lab channel weights ``[3]`` that bring the key's chroma noise down to its lightness noise, from the
    border's residual vectors ``resid [N,3]`` (Lab minus the background model); None when there is nothing
    to whiten.

    On a neutral key a video model's per-channel RGB noise lands mostly in a* and b* (measured on grey keys:
    σ 0.3 in L, 0.7 in a* and b* after the 3x3 average), so the tolerance, a Euclidean ΔE, is inflated by
    chroma noise, and four times it (the weak band, :data:`WEAK`) swallows parts offset from the key in
    lightness alone: a white belly on a light grey key (ΔE 18), whose rim was then unmixed against a mean
    mixed with the dark body around it and went transparent.  In noise units that offset counts in full.
    Only chroma is scaled down, by at most ``MAX_WHITEN``: where the lightness is the noisier channel (H.264
    keeps luma noise and drops chroma) nothing is.
    """
    if len(resid) < 16:
        return None
    spread = 1.4826 * medians(np.abs(resid - medians(resid.T)).T)  # robust σ per channel
    chroma = float(np.sqrt(0.5 * (spread[1] ** 2 + spread[2] ** 2)))
    if chroma < MIN_NOISE or chroma <= spread[0]:
        return None
    scale = max(float(spread[0]) / chroma, 1.0 / MAX_WHITEN)
    return np.array([1.0, scale, scale], np.float32)


def border_fit(
    frame: np.ndarray, surface: Surface, border: int, low: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(coefficients, residuals, pixels)`` of pass 1 of :func:`fit_backgrounds` on one Lab frame: its surface
    fitted to the ``border``-wide band (every other pixel of it)."""
    by, bx, edge = surface.border(border)
    # The band's pixels by flat index: indexing a frame with two index arrays is several times slower.
    px = frame.reshape(-1, 3).take(by * frame.shape[1] + bx, axis=0)
    coef = fit_surface(edge, px, max(low, 1.0))
    return coef, distance(px, edge @ coef), px


def fit_backgrounds(
    lab: np.ndarray,
    surface: Surface,
    border: int,
    low: float,
    map_: Callable = map,
    border_fits: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
) -> tuple[list, float, np.ndarray, Weak | None]:
    """``(surface coefficients per frame, tolerance, border residuals, weak band in noise units)`` of a clip's
    Lab frames (the weak band: see :func:`noise_weights`; None where the noise needs no whitening).

    Pass 1 fits each frame's surface to the border band (every other pixel of it) and measures the
    tolerance from the residuals, pooled over the clip.  Pass 2 refits on everything pass 1 calls
    background (every 6th pixel in x and y: the surface is smooth), so a vignette's centre fits too.
    Each pass runs frame by frame through ``map_`` (a thread pool's map); pass 1's results are ``border_fits``
    when given (:func:`border_fit` of each frame, taken with the frames' Lab: one exchange between processes less).
    """
    _, _, edge = surface.border(border)
    if border_fits is None:
        border_fits = list(map_(lambda frame: border_fit(frame, surface, border, low), lab))
    tol = noise_tolerance(np.concatenate([resid for _, resid, _ in border_fits]), low)
    coarse = surface.coarse()

    def second(i: int) -> tuple[np.ndarray, np.ndarray]:
        small, coef = np.ascontiguousarray(lab[i, ::6, ::6]), border_fits[i][0]
        sample = np.flatnonzero(background_region(distance(small, coarse @ coef), tol))
        if len(sample) > 64:
            coef = fit_surface(
                coarse.reshape(-1, 6).take(sample, axis=0), small.reshape(-1, 3).take(sample, axis=0), tol
            )
        return coef, border_fits[i][2] - edge @ coef

    fits = list(map_(second, range(len(lab))))
    offsets = np.concatenate([off for _, off in fits])
    resid = distance(offsets, np.float32(0))
    weights = noise_weights(offsets)
    weak = None if weights is None else Weak(weights, noise_tolerance(distance(offsets, np.float32(0), weights), low))
    return [coef for coef, _ in fits], noise_tolerance(resid, low), resid, weak


def find_pockets(
    lab: np.ndarray,
    grad: np.ndarray,
    surface: Surface,
    coef: np.ndarray,
    tol: float,
    min_hole: int,
    level: float,
    weak: Weak | None = None,
    key_noise: float | None = None,
    shaded: float | None = None,
    out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(model, dist, border background, pocket labels, seen, pocket regions)`` of one frame (the regions as
    :func:`pocket_labels` gives them): the first half of the matte, before the clip decides which pockets are drawn
    parts.  ``seen``: near-key parts that an edge (a gradient
    ``grad`` of at least ``level`` ΔE/px) separates from the background (:func:`.edges.edge_cut`; under noise,
    ``key_noise``: the key's own median distance from its model, no nearer the key than ``KEY_GAP`` times that).
    The model, distance and labels are written into ``out`` when given (frames of the clip's arrays)."""
    model_out, dist_out, labels_out = out or (None, None, None)
    model = surface.render(coef, out=model_out)
    dist = distance(lab, model, out=dist_out)
    bg = background_region(dist, tol)
    seen = edge_cut(bg, grad, level, min_hole, dist, key_noise)
    bg &= ~seen
    labels, regions = pocket_labels(dist, tol, bg, min_hole, lab, model, grad < level, weak, shaded, out=labels_out)
    return model, dist, bg, labels, seen, regions


def fill_holes(bg: np.ndarray, before: np.ndarray, min_hole: int) -> np.ndarray:
    """``bg`` without its enclosed islands smaller than ``min_hole`` px (as :func:`pocket_labels` counts a
    pocket) that were not enclosed in the background ``before`` it: those were pockets the clip decided."""
    inside = bg & ~border_connected(bg)
    box = sprite_box(inside)
    if box is None:
        return bg
    _, labels, area = components(inside[box], connectivity=4)
    small = area < min_hole
    small[pick(labels, (before & ~border_connected(before))[box])] = False
    small[0] = False
    out = bg.copy()
    out[box] &= ~small.take(labels)
    return out


def matte_frame(
    frame: np.ndarray,
    dist: np.ndarray,
    model: np.ndarray,
    bg: np.ndarray,
    tol: float,
    speck: int,
    seen: np.ndarray | None = None,
    rim: int = 4,
    out: tuple[np.ndarray, np.ndarray] | None = None,
    weak: Weak | None = None,
    lab: np.ndarray | None = None,
    exact: bool = False,
    kept: np.ndarray | None = None,
    gained: np.ndarray | None = None,
    coloured: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """``(rgb, alpha)`` of one frame given its distance map, background ``model`` and background region ``bg``
    (``seen``: near-key parts behind an edge, opaque inside the rim though their colour is the key's; ``rim``:
    how deep the soft edge unmixed is; ``weak``, with the frame's ``lab``: the weak band in noise units; ``exact``:
    the key is noise-free; ``kept``: the calm part of the character a colour-model cut decided, or all of it after a
    block codec that kept the key's noise, opaque deeper than 1.5 px where its colour is near the key's; ``gained``:
    what that cut gained, opaque there out to its outermost ring; ``coloured``: the key is a colour, not a grey, see
    :data:`BLEED`), written into ``out`` when given (a frame of the clip's arrays)."""
    fg = remove_specks(~bg, speck, dist >= WEAK * tol)
    rgb, alpha = unmix(
        frame,
        fg,
        dist,
        tol,
        model,
        rim=rim,
        seen=seen,
        out=out,
        weak=weak,
        lab=lab,
        exact=exact,
        kept=kept,
        gained=gained,
        coloured=coloured,
    )
    if speck:  # unmixing can leave compression blocks next to the sprite more opaque than not
        opaque = alpha >= 0.5
        np.copyto(alpha, 0.0, where=opaque & ~remove_specks(opaque, speck))  # half the time of a boolean setitem
    return rgb, alpha


def soft_pixels(alpha: np.ndarray) -> np.ndarray:
    """Where ``alpha`` is semi-transparent."""
    return (alpha > 0) & (alpha < 1)


def steady_edges(
    alpha: np.ndarray,
    lab: np.ndarray,
    tol: float,
    reach: int = 8,
    map_: Callable = map,
    fixed: np.ndarray | None = None,
    softs: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Average, in place, each soft pixel's alpha over the frames in which it has the same colour;
    return the coordinates ``(ys, xs)`` of the pixels it touched.

    Where sprite and background stand still a pixel's colour repeats from frame to frame up to
    noise, and so should its alpha; unmixed per frame, fresh noise makes the edge flicker.  A frame
    only borrows from frames (up to ``reach`` away, which bounds the work on long clips) whose
    blurred Lab colour at that pixel is within ``tol/2`` of its own, so a moving edge, whose colour
    changes, keeps its own alpha (with the full ``tol`` a light sprite sliding 1 px per frame on a
    light key borrowed enough to blur its edge).  Only pixels that are semi-transparent in some
    frame are touched.  A pixel that is ``fixed`` (bool ``[T,H,W]``) in a frame neither lends its alpha there nor
    borrows: a part drawn in the key's colour on a noise-free key has the colour the key has where the part is not
    (Frozen-Bubble's pupils on black came out 0.2-0.3 opaque).  Frames, then groups of pixels, go through ``map_``
    (a thread pool's map); ``softs`` (bool ``[T,H,W]``), when given, are each frame's semi-transparent pixels.
    """
    t = len(alpha)
    soft = np.zeros(alpha.shape[1:], bool)
    for frame in map_(soft_pixels, alpha) if softs is None else softs:
        soft |= frame
    ys, xs = np.nonzero(soft)
    if t < 2 or not len(ys):
        return ys, xs

    # The pixels' colours and alphas are read and written by flat index: several times faster than indexing the
    # clip with two index arrays.
    if not alpha.flags.c_contiguous:
        raise ValueError("steady_edges averages alpha in place through a flat view: pass a C-contiguous array")
    flat, lab_flat, alpha_flat = ys * alpha.shape[2] + xs, lab.reshape(t, -1, 3), alpha.reshape(t, -1)

    def steady(part: np.ndarray) -> None:
        at = flat[part]
        colour, own = np.take(lab_flat, at, axis=1), np.take(alpha_flat, at, axis=1)  # [T,N,3], [T,N]
        total, count = own.copy(), np.ones_like(own)
        free = None if fixed is None else ~np.take(fixed.reshape(t, -1), at, axis=1)
        for k in range(1, min(reach, t - 1) + 1):
            same = (distance(colour[:-k], colour[k:]) <= 0.5 * tol).astype(np.float32)  # frame i vs frame i + k
            if free is not None:
                same *= free[:-k] & free[k:]
            total[:-k] += same * own[k:]
            total[k:] += same * own[:-k]
            count[:-k] += same
            count[k:] += same
        alpha_flat[:, at] = total / count

    list(map_(steady, np.array_split(np.arange(len(ys)), 4)))
    return ys, xs


def noise_tolerance(resid: np.ndarray, low: float) -> float:
    """The ΔE that separates background noise from content, from residuals of border pixels.

    For Gaussian noise the residual norm's median is ~1.5σ, so 3x the median is ~4.5σ; the 99th
    percentile of the inliers, doubled, covers heavier tails (compression ringing next to the sprite is
    stronger than in the border band).  Never below ``low``.
    """
    med = float(median(resid))
    inliers = resid[resid <= 6.0 * med + max(low, 1.0)]
    q99 = float(quantile(inliers, 0.99)) if len(inliers) else 0.0
    return max(low, 3.5 * med, 2.0 * q99)


def background_region(dist: np.ndarray, tol: float) -> np.ndarray:
    """Background pixels of one frame from its distance map ``dist`` (ΔE to the background model):
    everything within ``tol`` that is connected to the frame border."""
    return border_connected(dist <= tol)


def pocket_labels(
    dist: np.ndarray,
    tol: float,
    bg: np.ndarray,
    min_hole: int,
    lab: np.ndarray,
    model: np.ndarray,
    calm: np.ndarray | None = None,
    weak: Weak | None = None,
    shaded: float | None = None,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, regions)``: a label image ``[H,W]`` (int32, 0 = none; written into ``out`` when given) of the
    key-coloured pockets the sprite encloses (``1..P``) and of its other enclosed regions within ``3·tol``
    (``-1..-S``: smaller than a pocket or offset from the key, they stay opaque, and over the clip they show where a
    drawn part is still there, see :func:`.pockets.drawn_pockets`), and per region its label, box and area ``[R,6]``
    (label, y, x, height, width, area; OpenCV's component statistics, which :func:`.pockets.drawn_pockets` would
    otherwise count again).

    A pocket is a region, not connected to the border background ``bg``, of at least ``min_hole`` px
    within ``3·tol`` (compression rings harder in a small pocket) whose *mean* colour offset from the
    ``model`` (``lab - model``, both ``[H,W,3]``) is within ``1.5·tol``: noise and ringing average out
    over a pocket, while a pale part of the character (light shoes on grey) is offset the same way
    everywhere.  Given ``weak``, the mean of the pocket's inside (left by a 3x3 erosion) must also be within
    ``POCKET_NOISE`` weak-band tolerances in the key's noise units (see :func:`noise_weights`): on a neutral
    key under a video model's noise the ΔE tolerance is inflated by chroma noise, and a pale part shaded
    towards the key (a grey face, a pale square beside a dark body) is offset in lightness, where the noise is
    small.  The inside, because a gap's rim is mixed with the dark body around it and offset in lightness too
    (the whole pocket's mean kept arm-body gaps opaque).  Smaller key-coloured islands (a highlight, white teeth on
    white) are no pockets: the negative labels.
    Whether a pocket is background or a part drawn in the key colour is decided over the clip
    (:func:`.pockets.drawn_pockets`).
    """
    if out is None:
        out = np.zeros(dist.shape, np.int32)
    else:
        out[...] = 0
    box = sprite_box(~bg)
    if min_hole <= 0 or box is None:
        return out, np.zeros((0, 6), np.int64)
    loose = (dist[box] <= 3.0 * tol) & ~bg[box]
    n, labels, stats, _ = cv2.connectedComponentsWithStats(as_bytes(loose), connectivity=4)
    area = np.maximum(stats[:, cv2.CC_STAT_AREA], 1)
    flat = pick(labels, loose)
    off = pick(cv2.subtract(lab[box], model[box]), loose)  # one pick of [h,w,3], not two
    mean = np.stack([np.bincount(flat, weights=off[:, c], minlength=n) for c in range(3)], -1)
    offset = mean / area[:, None]
    pocket = (area >= min_hole) & (np.linalg.norm(offset, axis=-1) <= 1.5 * tol)
    grey = (calm is not None or shaded is not None) and grey_key(model[box])
    if not grey:
        shaded = None  # the lightness spread tells shading from a gap on a grey key only
    if weak is not None or shaded is not None:  # the inside (left by a 3x3 erosion; a pocket with none passes)
        core = loose & (cv2.erode(loose.view(np.uint8), np.ones((3, 3), np.uint8)) > 0)
        inside, off_core = pick(labels, core), pick(lab[box], core) - pick(model[box], core)
        count = np.maximum(np.bincount(inside, minlength=n), 1)  # no inside: bincount gives ints
        inner = np.stack([np.bincount(inside, weights=off_core[:, c], minlength=n) for c in range(3)], -1)
        inner = inner / count[:, None]
    if weak is not None:  # the inside's mean, in noise units
        pocket &= np.linalg.norm(inner * weak.weights, axis=-1) <= POCKET_NOISE * weak.tolerance
    if shaded is not None:  # the inside's lightness spread: on a flat grey key, shading
        spread = np.bincount(inside, weights=off_core[:, 0].astype(np.float64) ** 2, minlength=n) / count
        pocket &= spread - inner[:, 0] ** 2 <= shaded**2
    if calm is not None and grey:
        pocket &= pocket_inside(loose, labels, n, calm[box]) >= CORE * area
    pocket[0] = False
    other = ~pocket
    other[0] = False
    ids = np.where(pocket, np.cumsum(pocket), -np.cumsum(other) * other).astype(np.int32)
    out[box] = ids.take(labels)
    top, left = stats[1:, cv2.CC_STAT_TOP] + box[0].start, stats[1:, cv2.CC_STAT_LEFT] + box[1].start
    size = stats[1:, [cv2.CC_STAT_HEIGHT, cv2.CC_STAT_WIDTH, cv2.CC_STAT_AREA]]
    return out, np.column_stack([ids[1:], top, left, size]).astype(np.int64)


def grey_key(model: np.ndarray) -> bool:
    """Whether the mean chroma of a crop of the Lab background ``model`` is below GREY_CHROMA.

    Taken from OpenCV's mean (summed in float64), several times faster than numpy's mean over two axes
    of a 3-channel crop, which adds pixel by pixel in float32.  Within that float32 sum's error bound of
    the threshold the two could disagree, and there numpy's mean decides, as it always did.
    """
    chroma = float(np.hypot(*cv2.mean(model)[1:3]))
    bound = model.shape[0] * model.shape[1] * 2.0**-23 * sum(cv2.mean(np.abs(model))[1:3]) + 1e-4
    if abs(chroma - GREY_CHROMA) > bound:
        return chroma < GREY_CHROMA
    return float(np.linalg.norm(model[..., 1:].mean(axis=(0, 1)))) < GREY_CHROMA


def coded_grey(background: Background, frames: np.ndarray, border: int) -> bool:
    """Whether a clip's key is a grey (see :func:`grey_key`) whose noise a block codec coded (see
    :func:`.decide.block_coded`; ``border``: the band's width in px), and not black: on black a character's dark
    shading comes within the codec's floor of the key (Mr. Fixit darkened on black after JPEG went 5.3 -> 26.8 %
    gross error at 2 ΔE), as it does for the mixes of :data:`MIX_LIGHTNESS`."""
    key = cv2.cvtColor(background.rgb.reshape(1, 1, 3), cv2.COLOR_RGB2Lab)
    return grey_key(key) and float(key[0, 0, 0]) > MIX_LIGHTNESS[0] and block_coded(frames, border)


def remove_specks(
    fg: np.ndarray, min_area: int, strong: np.ndarray | None = None, relative: float = 0.005
) -> np.ndarray:
    """``fg`` without islands smaller than ``min_area`` px or ``relative`` x the largest island, and
    (given ``strong``, the pixels clearly off the key) without islands holding no strong pixel.

    Noise and compression blocks leave small detached islands; a character's detached parts
    (a thrown sword, a hand drawn apart) are much larger than 0.5% of its body.  A large island made
    only of near-key pixels is background the model missed (a vignette's corner under noise).
    """
    box = sprite_box(fg)
    if min_area <= 1 or box is None:
        return fg
    n, labels, area = components(fg[box], connectivity=8)
    largest = area[1:].max() if n > 1 else 0
    keep = area >= max(min_area, relative * largest)
    if strong is not None:
        holds = np.zeros(n, bool)
        holds[pick(labels, strong[box])] = True
        keep &= holds
    keep[0] = False
    out = np.zeros_like(fg)
    out[box] = keep.take(labels)
    return out


def unmix(
    frame: np.ndarray,
    fg: np.ndarray,
    dist: np.ndarray,
    tol: float,
    model: np.ndarray,
    rim: int = 4,
    seen: np.ndarray | None = None,
    out: tuple[np.ndarray, np.ndarray] | None = None,
    weak: Weak | None = None,
    lab: np.ndarray | None = None,
    exact: bool = False,
    kept: np.ndarray | None = None,
    gained: np.ndarray | None = None,
    coloured: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Despilled colour and alpha ``(rgb, alpha)`` of one frame given its foreground region and Lab background
    ``model``, written into ``out`` when given.

    Opaque: foreground deeper than ``rim`` px whose colour is clearly not the key.  Unmixed: the
    rim (soft, anti-aliased or upscaled edges) and weak pixels (within ``WEAK·tol`` of the key:
    compression and chroma bleed in narrow pockets; in the key's noise units when ``weak`` and the frame's
    ``lab`` are given), against the background model at that pixel, with ``F`` the mean of the nearby
    opaque pixels (on a noise-free key, ``exact``, with a soft edge of at most ``NEAREST_RIM`` px: the
    nearest one's colour, and where that colour cannot tell a pixel's alpha its place does, see
    :func:`render_rim`; behind a wider edge, and under noise on a coloured key, also the colour farthest from the key
    in reach where it explains a pixel as well, see ``PURE_MISS``).  A pixel that is not on the line from the key
    to ``F`` is tried against the inner colour of its own part (a dark leg next to a red body); if that does not
    explain it either and it lies deeper than the rim, it is a colour of its own (skin or a white sleeve on white)
    and stays opaque.  So do the pixels of ``kept`` (the calm part of the character a colour-model cut decided, or
    all of it after a block codec that kept the key's noise) deeper than 1.5 px where their colour is within the weak
    band: the key's colour cannot tell them, the colour models or their calm did.  What the cut ``gained`` is so out
    to its outermost ring: where the cut stopped inside a body shaded through a grey key that ring, unmixed against a
    colour like the key's, went transparent (BCN_Epileptic's generated look on grey, GIF, 3.2 -> 2.0 % gross error in
    the median frame).  The calm part's outer ring stays
    unmixed: opaque there, a still sprite's edge flickered under noise (0.0049 against the 0.004 bound).  On a
    ``coloured`` key the character's pixels much nearer the key than its own colours are unmixed wherever they lie
    (:func:`bled`).  Work stays inside the sprite's box plus the filter reach.
    """
    h, w = fg.shape
    if out is None:
        rgb, alpha = frame.copy(), np.zeros((h, w), np.float32)
    else:
        rgb, alpha = out
        rgb[...], alpha[...] = frame, 0.0
    x, y, bw, bh = cv2.boundingRect(as_bytes(fg))
    if bw == 0 or bh == 0:
        return rgb, alpha
    window = 2 * rim + 3
    x0, y0 = max(0, x - window), max(0, y - window)
    x1, y1 = min(w, x + bw + window), min(h, y + bh + window)
    crop, fg_c, dist_c = frame[y0:y1, x0:x1], fg[y0:y1, x0:x1], dist[y0:y1, x0:x1]
    # Nearness to the key, in the key's noise units where they differ from ΔE (see noise_weights).
    near_c, near_tol = dist_c, tol
    if weak is not None and lab is not None:
        near_c, near_tol = distance(lab[y0:y1, x0:x1], model[y0:y1, x0:x1], weak.weights), weak.tolerance
    weak_c = near_c < WEAK * near_tol
    if seen is not None:
        weak_c &= ~seen[y0:y1, x0:x1]
    depth = cv2.distanceTransform(as_bytes(fg_c), cv2.DIST_L2, 3)
    fine_edge = exact and rim <= NEAREST_RIM  # a render's anti-aliasing on a noise-free key
    solid = (depth > rim) & (~weak_c | (depth > DEEP))
    if coloured:
        seen_c = None if seen is None else seen[y0:y1, x0:x1]
        solid &= ~bled(crop, model[y0:y1, x0:x1], fg_c, weak_c, dist_c, depth > rim, solid, window, seen_c)
    solid = solid.astype(np.float32)
    alpha[y0:y1, x0:x1] = solid
    ys, xs = np.nonzero(fg_c & (solid == 0))
    if len(ys):
        at_key = gather(model, ys + y0, xs + x0)  # the key's Lab at each pixel
        key = from_lab(at_key)
        c = gather(crop, ys, xs)
        deep = gather(depth, ys, xs)
        # F from the opaque pixels nearby (the nearest on a noise-free key); on parts thinner than the rim from
        # its inner half.
        inner = ((depth > rim / 2) & ~weak_c).astype(np.float32)
        fore_of = nearest_colour if fine_edge else local_mean
        fore, found = fore_of(crop, solid, window, ys, xs)
        near, near_found = fore_of(crop, inner, 2 * (rim // 2) + 3, ys, xs)
        fore = np.where(found[:, None], fore, near)
        thin = np.flatnonzero(~found & ~near_found)
        fore[thin] = strongest_neighbour(crop, ys[thin], xs[thin], key.take(thin, axis=0))
        norm2, proj, miss = mix_line(c, key, fore)
        to_key = distance(c, key)

        def explain_better(at: np.ndarray, fore_of: Callable[[np.ndarray], np.ndarray], purer: bool = False) -> None:
            """Unmix the pixels ``at`` against the colours ``fore_of(at)`` instead, where those explain them better
            (``purer``: as well, within ``PURE_MISS``, and to a lower alpha)."""
            if len(at):
                # Rows by take: numpy's indexing of [N,3] with an index array is four times slower.
                norm2_at, proj_at, miss_at = mix_line(c.take(at, axis=0), key.take(at, axis=0), fore_of(at))
                if purer:
                    chosen = (miss_at <= miss[at] + PURE_MISS) & (proj_at < proj[at]) & (norm2_at >= 0.05**2)
                else:
                    chosen = miss_at < miss[at]
                better = at[chosen]
                norm2[better], proj[better], miss[better] = norm2_at[chosen], proj_at[chosen], miss_at[chosen]

        # A pixel the nearby opaque colour does not explain may lie on a thin part of another colour
        # (a dark leg next to a red body): try the inner colour of its own part.
        explain_better(
            np.flatnonzero((miss > OFF_LINE * to_key) & near_found & (deep > 1.5)), lambda at: near.take(at, axis=0)
        )
        # A rim pixel clearly off the key that unmixes to nothing lies across the key from its part's colour: no
        # mix of the two but a colour of its own (a dark outline dot between a white belly and a grey key, which
        # the 3x3 average had taken for key): try its strongest neighbour.
        explain_better(
            np.flatnonzero((miss > OFF_LINE * to_key) & (deep <= rim) & (proj < 0.05) & (to_key >= OFF_KEY)),
            lambda at: strongest_neighbour(crop, ys[at], xs[at], key.take(at, axis=0)),
        )
        if not fine_edge:
            # Behind an upscale's wide edge the mean of the nearby opaque pixels mixes a thin outline with the body
            # inside it, and the inner colour takes in the edge's own mixes: Raincat's soft black outline around a
            # white body unmixed to 0.5-1 where it was 0.2-0.3 opaque.  A mix's part is the purest colour on its
            # line: the colour farthest from the key within the rim's reach unmixes the pixels it explains as well,
            # to a lower alpha.  On a noise-free key but a black or white one (see MIX_LIGHTNESS); under noise or a
            # codec on a coloured key only: on a neutral one a grey part's shading lies on the key's line too, and
            # there the noise decided (shaded renders and Frozen-Bubble on greys lost 0.1-0.7 points).
            if exact:
                mixes = (at_key[:, 0] > MIX_LIGHTNESS[0]) & (at_key[:, 0] < MIX_LIGHTNESS[1])
            else:
                mixes = np.hypot(at_key[:, 1], at_key[:, 2]) >= GREY_CHROMA
            explain_better(
                np.flatnonzero((deep <= rim) & (proj >= 0.05) & mixes),
                lambda at: farthest_colour(crop, dist_c, rim, ys[at], xs[at]),
                purer=True,
            )
        off_line = miss > OFF_LINE * to_key
        own_colour = off_line & (deep > rim)
        # Foreground too close to the key to unmix, or a colour of its own: known foreground.
        # Closer to the key than the outline between it and the background: a pale part behind a dark line.
        near_at = gather(near_c, ys, xs)
        behind = (deep > 1.5) & (gather(outline_peak(near_c, depth, rim), ys, xs) - near_at > PAST * max(near_tol, 1.0))
        if kept is not None:  # the colour models, or the calm, decided where the key's colour cannot tell
            near_key = near_at < WEAK * near_tol
            behind |= gather(kept, ys + y0, xs + x0) & (deep > 1.5) & near_key
            if gained is not None:
                behind |= gather(gained, ys + y0, xs + x0) & near_key
        untold = norm2 < 0.05**2
        if rim <= NEAREST_RIM:  # where the colour cannot tell the alpha, the place does (under noise too)
            behind |= render_rim(dist_c, solid, depth, window, ys, xs, proj, norm2)
        a = np.where(untold | own_colour | behind, 1.0, proj).astype(np.float32)
        if fine_edge:
            # A pixel next to the key whose nearest opaque colour is too near the key to unmix against is
            # unmixed against its strongest neighbour (the silhouette's own colour: a render shades a body's
            # outline darker or lighter than its inside); when that is near the key too, it is the part's
            # own colour and stays opaque (a white belly drawn up to a white key).
            outer = np.flatnonzero((deep <= 1.0) & untold & ~own_colour & ~behind)
            key_outer = key.take(outer, axis=0)
            strong = strongest_neighbour(crop, ys[outer], xs[outer], key_outer)
            norm2_s, proj_s, _ = mix_line(c.take(outer, axis=0), key_outer, strong)
            told = norm2_s >= 0.05**2
            a[outer[told]] = proj_s[told]
        a[a < 0.05] = 0.0  # below noise: no semi-transparent dust around the sprite
        unmixed = despilled(c, key, a)
        scatter(alpha, ys + y0, xs + x0, a)
        scatter(rgb, ys + y0, xs + x0, np.where(a[:, None] >= 1.0, c, np.where(a[:, None] > 0, unmixed, key)))
    return rgb, alpha


def bled(
    image: np.ndarray,
    model: np.ndarray,
    fg: np.ndarray,
    weak: np.ndarray,
    dist: np.ndarray,
    inner: np.ndarray,
    solid: np.ndarray,
    window: int,
    seen: np.ndarray | None,
) -> np.ndarray:
    """The pixels of a character ``fg`` on a coloured key that are mixes of the key and a part (see :data:`BLEED`):
    those not ``seen`` behind an edge whose key distance ``dist`` is below ``BLEED`` x the median of its ``inner``
    (deeper than the rim) pixels outside the ``weak`` band, and which a mix explains: they lie on the line from the
    key (the Lab ``model``) to the mean of the other ``solid`` pixels in a ``window`` box, within ``OFF_LINE`` as the
    unmixing asks of a rim pixel.  Weak pixels count too: deeper than ``DEEP`` they were opaque (a gap's middle
    between the gaucho's hair strands).  A dark blue leg on a blue key is nearer the key than a red body but on no
    such line (without that test the synthetic sprite's legs, RGB 0.2 0.25 0.6 on 0.2 0.3 0.9, lost 0.007 IoU)."""
    body = fg & inner & ~weak
    if not body.any():
        return np.zeros_like(fg)
    mixed = solid & (dist < BLEED * float(median(pick(dist, body))))  # the others are unmixed anyway
    if seen is not None:
        mixed &= ~seen
    ys, xs = np.nonzero(mixed)
    if len(ys):
        fore, found = local_mean(image, (solid & ~mixed).astype(np.float32), window, ys, xs)
        key = from_lab(gather(model, ys, xs))
        colour = gather(image, ys, xs)
        _, _, miss = mix_line(colour, key, fore)
        unexplained = ~found | (miss > OFF_LINE * distance(colour, key))
        scatter(mixed, ys[unexplained], xs[unexplained], False)
    return mixed


def pocket_inside(loose: np.ndarray, labels: np.ndarray, n: int, calm: np.ndarray) -> np.ndarray:
    """Per label of ``labels`` (``n`` of them, over the mask ``loose``), how many pixels lie inside a
    region rather than on a line, by the more generous of two counts: those left by a 3x3 erosion of the
    (3x3-median-cleaned) mask, and those ``calm`` (below the clip's edge gradient).

    On a grey or white key the 3x3-averaged colour of a step from a dark to a light part (Tux's black
    outline around his white belly) passes through the key's grey: a thin, key-coloured loop enclosed by
    the sprite that would count as a pocket.  A gap between the legs has an inside: it is wider than the
    step, or its middle is as flat as the key (a noisy gap is ragged under erosion but calm).
    """
    filled = cv2.medianBlur(loose.astype(np.uint8) * 255, 3)
    wide = np.bincount(pick(labels, loose & (cv2.erode(filled, np.ones((3, 3), np.uint8)) > 0)), minlength=n)
    return np.maximum(wide, np.bincount(pick(labels, loose & calm), minlength=n))


def outline_peak(dist: np.ndarray, depth: np.ndarray, rim: int) -> np.ndarray:
    """Per rim pixel (``depth`` up to ``rim + 1`` px), the largest key distance ``dist`` on the way in from
    the background: ring by ring of ``depth``, a pixel's own or its outer 3x3 neighbours' peak."""
    peak = cv2.copyTo(dist, (depth > 0).view(np.uint8))  # OpenCV's masked copies zero the rest: numpy's are slower
    ring = np.ceil(depth)
    kernel = np.ones((3, 3), np.uint8)
    outer = cv2.copyTo(peak, (ring == 1).view(np.uint8))  # the peaks of the rings done so far
    for r in range(2, rim + 2):
        inner = (ring == r).view(np.uint8)
        grown = cv2.max(peak, cv2.dilate(outer, kernel))
        cv2.copyTo(grown, inner, peak)
        cv2.copyTo(grown, inner, outer)
    return peak


def local_mean(
    image: np.ndarray, source: np.ndarray, window: int, ys: np.ndarray, xs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(mean colour [N,3], found [N])`` of the ``source`` pixels (a 0/1 float mask) of ``image`` in a ``window``
    box around each point.  The other pixels are zeroed by OpenCV's masked copy: several times faster than
    numpy's ``image * source[..., None]``, with the same sums (up to the sign of a zero sum)."""
    weight = gather(cv2.boxFilter(source, -1, (window, window), normalize=False), ys, xs)
    picked = cv2.copyTo(image, (source > 0).view(np.uint8))
    total = gather(cv2.boxFilter(picked, -1, (window, window), normalize=False), ys, xs)
    found = weight > 0
    return total / np.maximum(weight, 1e-6)[:, None], found


def nearest_colour(
    image: np.ndarray, source: np.ndarray, window: int, ys: np.ndarray, xs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(colour [N,3], found [N])`` like :func:`local_mean`, but the colour of the nearest ``source`` pixel,
    found when one lies in the ``window`` box.

    For a noise-free key: a shaded part's colour changes towards its silhouette (a body lit from above is
    darker, or nearer the key, at its outline than inside), and the rim is a mix of the key and the part's
    colour *there*.  Against the mean of a 7x7 window a rim pixel of a grey body on a grey key unmixed to a
    third of its true alpha.  Under noise one pixel's noise would go into the alpha, and behind an upscale's
    wide soft edge the nearest opaque pixel is still a mix (see :data:`NEAREST_RIM`): there the mean.
    """
    found = gather(cv2.boxFilter(source, -1, (window, window), normalize=False), ys, xs) > 0
    src = (source > 0).view(np.uint8)
    at = np.flatnonzero(src)  # the source pixels by flat index
    if not len(at):
        return np.zeros((len(ys), 3), image.dtype), found
    # Each source pixel and the pixels nearest to it share a label (1..N); which label is which source pixel
    # is read back from the labels image, not assumed.
    _, labels = cv2.distanceTransformWithLabels(1 - src, cv2.DIST_L2, 5, labelType=cv2.DIST_LABEL_PIXEL)
    owner = np.zeros(len(at) + 1, np.int64)
    owner[np.take(labels, at)] = at
    nearest = owner[gather(labels, ys, xs)]
    return np.take(image.reshape(-1, image.shape[-1]), nearest, axis=0), found


def render_rim(
    near: np.ndarray,
    solid: np.ndarray,
    depth: np.ndarray,
    window: int,
    ys: np.ndarray,
    xs: np.ndarray,
    alpha: np.ndarray,
    norm2: np.ndarray,
) -> np.ndarray:
    """Which rim pixels ``ys, xs`` of an edge at most :data:`NEAREST_RIM` px wide (a render's anti-aliasing, on a
    noise-free key or under a video model's noise) are opaque by their place.

    A grey body shaded through a grey key's own grey: there its rim pixels are the key's colour within a few
    ΔE whatever their alpha, and against the nearest opaque pixel (brighter or darker, 2 px in) they unmix
    to a third of it.  Where the frame's rim pixels of a ring (a step of ``depth``) that do unmix well
    (``norm2``: |F - B|² at least :data:`TOLD`²) have a median ``alpha`` above one half, that ring lies past
    the edge's middle (a render's anti-aliasing: the second ring; a 3x upscale's wider ramp: not yet).  There
    a pixel whose colour, and that of an opaque pixel in its ``window``, are both within :data:`CALM` of
    the key (``near``: the key distance) is the part's own colour: opaque.  A faint mix of a far colour lies
    nearer the key, or has no near-key opaque colour beside it (a green key's rim).
    """
    # The steps of OpenCV's 3x3 distance tell the rings apart: 4 is next to the key by a side (0.955 px, never
    # past the middle), 5 by a corner (1.369), 8 two sides in (1.91) …
    ring = np.rint(gather(depth, ys, xs) * 4).astype(np.int32)
    told = norm2 >= TOLD**2
    past = np.zeros(int(ring.max(initial=0)) + 1, bool)
    for k in np.unique(ring[told & (ring > 4)]):
        sure = told & (ring == k)
        past[k] = float(median(alpha[sure])) > 0.5
    far = np.float32(np.inf)
    nearby = gather(cv2.erode(np.where(solid > 0, near, far), np.ones((window, window), np.uint8)), ys, xs)
    return past[ring] & (gather(near, ys, xs) < CALM) & (nearby < CALM)


def strongest_neighbour(image: np.ndarray, ys: np.ndarray, xs: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The colour farthest from ``key`` in each point's 3x3 neighbourhood: ``F`` for a line too thin
    to have an inside (a 1-px sword), whose blurred-in neighbours would otherwise count as opaque."""
    h, w = image.shape[:2]
    dy, dx = np.mgrid[-1:2, -1:2].reshape(2, -1)
    cand = gather(image, np.clip(ys[:, None] + dy, 0, h - 1), np.clip(xs[:, None] + dx, 0, w - 1))  # [N,9,3]
    off = cand - key[:, None]
    off *= off
    far = np.argmax(channel_sum(off), axis=1)
    return cand.reshape(-1, 3).take(np.arange(len(ys)) * 9 + far, axis=0)


def farthest_colour(image: np.ndarray, dist: np.ndarray, reach: int, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """The colour of ``image`` where the key distance ``dist`` is largest within ``reach`` px of each point ``ys, xs``.

    One dilation of the distance and the pixel's index packed into a float64 (the distance in 1/64 ΔE, exact
    below 2**53), not a gather of every window's pixels: that cost 10 ms per frame at a 4-px reach."""
    n = dist.size
    packed = np.floor(dist.astype(np.float64) * 64.0) * n + np.arange(n, dtype=np.float64).reshape(dist.shape)
    top = gather(cv2.dilate(packed, np.ones((2 * reach + 1, 2 * reach + 1), np.uint8)), ys, xs)
    return image.reshape(-1, image.shape[-1])[np.fmod(top, n).astype(np.int64)]


def mix_line(c: np.ndarray, key: np.ndarray, fore: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(|F - B|², alpha, miss)`` of pixels ``c`` seen as mixes of ``key`` and ``fore`` ([N,3] each).

    ``alpha`` is the projection of ``C - B`` onto ``F - B``, clipped to 0..1 (a projection of exactly zero may be -0,
    see :func:`.colour.channel_sum`: it only meets comparisons, and :func:`unmix` sets alphas below 0.05 to +0);
    ``miss`` the distance from ``C`` to that mix: how badly the pair explains the pixel.
    """
    d = fore - key
    norm2 = channel_sum(d * d)
    proj = np.clip(channel_sum((c - key) * d) / np.maximum(norm2, 1e-6), 0.0, 1.0)
    return norm2, proj, distance(c, key + proj[:, None] * d)


def despilled(colour: np.ndarray, key: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``F`` of ``colour = a·F + (1 - a)·key``: the sprite's own colour under a soft pixel, clipped to 0..1
    (``a`` is taken as at least 0.05, so near-transparent pixels do not blow noise up)."""
    safe = np.maximum(alpha, 0.05)[..., None]
    return np.clip((colour - (1.0 - safe) * key) / safe, 0.0, 1.0)


def apply_mask(
    frames: np.ndarray, mask: np.ndarray, despill: bool = True, border: int = 4, low: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """Use an external MASK (alpha, 1 = opaque) as alpha; despill its edges against the border's key.

    Despill only runs when the border is one colour (there is then a known tint to remove).
    """
    frames = check_frames(frames)
    alpha = check_alpha(mask, frames)
    rgb = frames.copy()
    if despill:
        band = border_mask(*frames.shape[1:3], border)
        pixels = frames[:, band]
        key = medians(pixels.reshape(-1, 3).T).astype(np.float32)
        dist = np.linalg.norm(to_lab(pixels) - to_lab(key[None]), axis=-1)
        if float(np.mean(dist <= max(low, 8.0))) >= 0.8:
            unmixed = despilled(frames, key, alpha)
            edge = ((alpha > 0) & (alpha < 1))[..., None]
            rgb = np.where(edge, unmixed, frames).astype(np.float32)
    return rgb, alpha
