"""Pixel-art conversion: nearest downscale, one shared palette, optional 1-px outline.

A palette is computed once for the whole clip (not per frame) so colours do not flicker between
frames, and by default once for all the clips of a character (:func:`pixelate_clips`: its walk,
attack and idle are fitted together), so the armour keeps its colour from one animation to the
next.  Colours are matched in CIE Lab so "nearest colour" means nearest to the eye.  Alpha is made
binary (pixel-art sprites have no partial transparency).
"""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from ...core.errors import InputError
from ...core.progress import ProgressFn, no_progress
from .matte import to_lab
from .options import PALETTE_METHODS

PICO8 = (
    "000000 1d2b53 7e2553 008751 ab5236 5f574f c2c3c7 fff1e8 ff004d ffa300 ffec27 00e436 29adff 83769c ff77a8 ffccaa"
).split()


def hex_palette(codes: list[str]) -> np.ndarray:
    """``["rrggbb", ...]`` to a float32 ``[K,3]`` palette in 0..1."""
    out = []
    for code in codes:
        code = code.strip().lstrip("#")
        if not re.fullmatch(r"[0-9a-fA-F]{6}([0-9a-fA-F]{2})?", code):
            raise InputError(f"{code!r} is not a hex colour; expected RRGGBB (e.g. ff004d).")
        out.append([int(code[k : k + 2], 16) for k in (0, 2, 4)])
    if not out:
        raise InputError("The palette is empty; give at least one colour.")
    return np.asarray(out, np.float32) / 255.0


def parse_palette(text: str, name: str = "palette") -> np.ndarray:
    """Parse a Lospec ``.hex`` (one RRGGBB per line) or a GIMP ``.gpl`` palette."""
    lines = [line.strip() for line in text.splitlines()]
    if lines and lines[0].upper().startswith("GIMP PALETTE"):
        colours = []
        for line in lines[1:]:
            if not line or line.startswith("#") or ":" in line.split()[0]:
                continue
            parts = line.split()
            try:
                colours.append([int(p) for p in parts[:3]])
            except ValueError as exc:
                raise InputError(f"{name}: cannot read the .gpl line {line!r}; expected 'R G B [name]'.") from exc
        if not colours:
            raise InputError(f"{name} has no colours.")
        arr = np.asarray(colours, np.float32)
        if arr.min() < 0 or arr.max() > 255:
            raise InputError(f"{name}: colour values must be 0..255.")
        return arr / 255.0
    return hex_palette([line for line in lines if line and not line.startswith((";", "//"))])


def load_palette(path: str | Path) -> np.ndarray:
    """Read a ``.hex`` or ``.gpl`` palette file (the caller confines ``path`` to an allowed folder)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(
            f"Palette file {path.name!r} was not found; put a .hex or .gpl file in ComfyUI's input folder."
        )
    return parse_palette(path.read_text(encoding="utf-8", errors="replace"), path.name)


def downscale(rgb: np.ndarray, alpha: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Nearest-neighbour resize of every frame to ``width x height`` (crisp pixels, no new colours)."""
    if width < 1 or height < 1:
        raise InputError(f"The pixel-art size must be at least 1x1; got {width}x{height}.")
    t = rgb.shape[0]
    out_rgb = np.empty((t, height, width, 3), np.float32)
    out_a = np.empty((t, height, width), np.float32)
    for i in range(t):
        out_rgb[i] = cv2.resize(rgb[i], (width, height), interpolation=cv2.INTER_NEAREST_EXACT)
        out_a[i] = cv2.resize(alpha[i], (width, height), interpolation=cv2.INTER_NEAREST_EXACT)
    return out_rgb, out_a


def opaque_pixels(clips: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The opaque pixels ``[N,3]`` of every frame of every ``(rgb, alpha)`` clip (sizes may differ)."""
    parts = [rgb[alpha > 0.5] for rgb, alpha in clips]
    pixels = np.concatenate(parts) if parts else np.zeros((0, 3), np.float32)
    if len(pixels) == 0:
        raise InputError("No opaque pixels to build a palette from; check the matte or the mask.")
    return np.ascontiguousarray(pixels, np.float32)


def kmeans_palette(pixels: np.ndarray, colours: int, seed: int = 0) -> np.ndarray:
    """``colours`` cluster centres (in Lab, returned as RGB) of opaque ``pixels`` ``[N,3]``."""
    rng = np.random.default_rng(seed)
    if len(pixels) > 20000:
        pixels = pixels[rng.choice(len(pixels), 20000, replace=False)]
    unique = np.unique(pixels, axis=0)
    if len(unique) <= colours:
        return unique
    cv2.setRNGSeed(seed)
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 20, 0.1)
    _, _, centres = cv2.kmeans(to_lab(pixels), colours, None, criteria, 3, cv2.KMEANS_PP_CENTERS)
    back = cv2.cvtColor(centres.reshape(-1, 1, 3).astype(np.float32), cv2.COLOR_Lab2RGB).reshape(-1, 3)
    return np.clip(back, 0.0, 1.0)


def median_cut_palette(pixels: np.ndarray, colours: int) -> np.ndarray:
    """Pillow's median cut over opaque ``pixels`` ``[N,3]``."""
    pixels = (pixels * 255 + 0.5).astype(np.uint8)
    strip = Image.fromarray(pixels.reshape(1, -1, 3), "RGB")
    quant = strip.quantize(colors=max(1, min(colours, 256)), method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    used = sorted({int(v) for v in np.asarray(quant).ravel()})
    pal = np.asarray(quant.getpalette()[: 3 * 256], np.float32).reshape(-1, 3)
    return pal[used] / 255.0


def fit_palette(
    clips: list[tuple[np.ndarray, np.ndarray]],
    palette: str,
    colours: int,
    palette_colours: np.ndarray | None = None,
    seed: int = 0,
) -> np.ndarray | None:
    """The palette of ``palette`` method for the opaque pixels of all ``clips`` together (None for ``none``)."""
    if palette not in PALETTE_METHODS:
        raise InputError(f"Unknown palette method {palette!r}; choose one of {', '.join(PALETTE_METHODS)}.")
    if colours < 1:
        raise InputError(f"colours must be >= 1; got {colours}.")
    if palette == "kmeans":
        return kmeans_palette(opaque_pixels(clips), colours, seed)
    if palette == "median_cut":
        return median_cut_palette(opaque_pixels(clips), colours)
    if palette == "pico8":
        return hex_palette(PICO8)
    if palette == "file":
        if palette_colours is None:
            raise InputError("palette='file' needs a palette file (.hex or .gpl).")
        return np.asarray(palette_colours, np.float32)
    return None


def map_to_palette(rgb: np.ndarray, palette: np.ndarray, progress: ProgressFn | None = None) -> np.ndarray:
    """Replace every pixel by its nearest palette colour in Lab (frame by frame, vectorised)."""
    report = progress or no_progress
    pal_lab = to_lab(palette)
    out = np.empty_like(rgb)
    t = rgb.shape[0]
    for i in range(t):
        lab = to_lab(rgb[i]).reshape(-1, 1, 3)
        nearest = np.argmin(((lab - pal_lab[None]) ** 2).sum(axis=-1), axis=1)
        out[i] = palette[nearest].reshape(rgb.shape[1:])
        report(i + 1, t)
    return out


def outline(
    rgb: np.ndarray, alpha: np.ndarray, colour: np.ndarray, diagonal: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Add a 1-px outline of ``colour`` on the transparent pixels touching the sprite."""
    kernel = np.ones((3, 3), np.uint8) if diagonal else cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
    out_rgb, out_a = rgb.copy(), alpha.copy()
    for i in range(rgb.shape[0]):
        solid = (alpha[i] > 0.5).astype(np.uint8)
        ring = (cv2.dilate(solid, kernel) > 0) & (solid == 0)
        out_rgb[i][ring] = colour
        out_a[i][ring] = 1.0
    return out_rgb, out_a


def pixelate_clips(
    clips: list[tuple[np.ndarray, np.ndarray]],
    width: int,
    height: int,
    palette: str = "kmeans",
    colours: int = 16,
    palette_colours: np.ndarray | None = None,
    outline_colour: np.ndarray | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
    shared: bool = True,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Downscale, quantise, binarise alpha and outline every ``(rgb, alpha)`` clip: ``[(rgb, alpha, palette)]``.

    ``shared`` fits one palette over the opaque pixels of all clips (a character's animations keep
    the same colours); otherwise each clip gets its own.  ``palette``: ``none``, ``kmeans``,
    ``median_cut`` (``colours`` entries), ``pico8``, or ``file`` (then ``palette_colours`` holds
    the loaded colours); the fixed palettes are the same for every clip either way.
    """
    if palette not in PALETTE_METHODS:
        raise InputError(f"Unknown palette method {palette!r}; choose one of {', '.join(PALETTE_METHODS)}.")
    if not clips:
        raise InputError("No clips to convert to pixel art.")
    small = []
    for rgb, alpha in clips:
        small_rgb, small_a = downscale(rgb, alpha, width, height)
        small.append((small_rgb, (small_a > 0.5).astype(np.float32)))
    common = fit_palette(small, palette, colours, palette_colours, seed) if shared else None
    report = progress or no_progress
    total, done = sum(len(r) for r, _ in small), 0
    out = []
    for small_rgb, small_a in small:
        pal = common if shared else fit_palette([(small_rgb, small_a)], palette, colours, palette_colours, seed)
        if pal is not None:
            small_rgb = map_to_palette(small_rgb, pal, lambda i, _t, before=done: report(before + i, total))
        done += len(small_rgb)
        report(done, total)
        small_rgb = small_rgb * small_a[..., None]
        if outline_colour is not None:
            small_rgb, small_a = outline(small_rgb, small_a, np.asarray(outline_colour, np.float32))
        out.append((small_rgb.astype(np.float32), small_a, pal))
    return out


def pixelate(
    rgb: np.ndarray,
    alpha: np.ndarray,
    width: int,
    height: int,
    palette: str = "kmeans",
    colours: int = 16,
    palette_colours: np.ndarray | None = None,
    outline_colour: np.ndarray | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One clip through :func:`pixelate_clips`: ``(rgb, alpha, palette)``."""
    return pixelate_clips(
        [(rgb, alpha)], width, height, palette, colours, palette_colours, outline_colour, seed, progress
    )[0]
