"""Animated exports with alpha via Pillow: GIF, APNG, animated WebP and PNG sequences.

Every file name is confined to the given output folder (:func:`...paths.confined`) and written
atomically.  GIF has 1-bit transparency and 256 colours: one palette is built for the whole clip
(so colours do not flicker) with the last index reserved for "transparent", and frames are
disposed to background so transparent pixels do not show the previous frame.  Pillow merges
identical consecutive frames into one longer frame in GIF/APNG/WebP, so read-back frame counts can
be lower than the input when frames repeat (durations still add up).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ...core.atomic import atomic_target
from ...core.errors import InputError
from ...core.paths import confined
from ...core.progress import ProgressFn, no_progress

FORMATS = {"gif": ".gif", "apng": ".png", "webp": ".webp", "png_sequence": ""}


def _check(rgba: np.ndarray, durations_ms: list[int]) -> None:
    if rgba.ndim != 4 or rgba.shape[-1] != 4 or rgba.dtype != np.uint8:
        raise InputError(f"Export needs uint8 RGBA frames [T,H,W,4]; got {rgba.dtype} {tuple(rgba.shape)}.")
    if rgba.shape[0] == 0:
        raise InputError("Nothing to export: the batch is empty (0 frames).")
    if len(durations_ms) != rgba.shape[0] or min(durations_ms) <= 0:
        raise InputError(
            f"Give one positive duration (ms) per frame: {rgba.shape[0]} frames, got {list(durations_ms)}."
        )


def _target(base: str | os.PathLike[str], name: str, suffix: str) -> Path:
    rel = name if name.lower().endswith(suffix) else name + suffix
    path = confined(base, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def gif_frames(rgba: np.ndarray, alpha_threshold: int = 128) -> list[Image.Image]:
    """Palette frames sharing one adaptive palette; index 255 is transparent."""
    t, h, w = rgba.shape[:3]
    opaque = rgba[..., 3] >= alpha_threshold
    mosaic = Image.fromarray(np.ascontiguousarray(rgba[..., :3].reshape(t * h, w, 3)), "RGB")
    # Palette from opaque pixels only: transparent areas must not waste palette entries.
    pixels = rgba[..., :3][opaque]
    if len(pixels) == 0:
        pixels = np.zeros((1, 3), np.uint8)
    palette_img = Image.fromarray(pixels.reshape(1, -1, 3), "RGB").quantize(colors=255, method=Image.Quantize.MEDIANCUT)
    palette = palette_img.getpalette()[: 255 * 3]
    palette += [0, 0, 0] * (256 - len(palette) // 3)
    palette_img.putpalette(palette)
    indexed = np.asarray(mosaic.quantize(palette=palette_img, dither=Image.Dither.NONE)).reshape(t, h, w).copy()
    indexed[~opaque] = 255
    frames = []
    for i in range(t):
        frame = Image.fromarray(indexed[i], "P")
        frame.putpalette(palette)
        frame.info["transparency"] = 255
        frames.append(frame)
    return frames


def _save_animated(images: list[Image.Image], durations_ms: list[int], path: Path, **options: Any) -> Path:
    """Write ``images`` as one animated file atomically; ``options`` are Pillow's for the format."""
    with atomic_target(path) as tmp:
        images[0].save(tmp, save_all=True, append_images=images[1:], duration=[int(d) for d in durations_ms], **options)
    return path


def save_gif(rgba: np.ndarray, durations_ms: list[int], base: str | os.PathLike[str], name: str, loop: int = 0) -> Path:
    """Animated GIF with 1-bit transparency (alpha >= 50% is opaque)."""
    _check(rgba, durations_ms)
    return _save_animated(
        gif_frames(rgba),
        durations_ms,
        _target(base, name, ".gif"),
        format="GIF",
        loop=loop,
        transparency=255,
        disposal=2,
        optimize=False,
    )


def _rgba_images(rgba: np.ndarray) -> list[Image.Image]:
    return [Image.fromarray(np.ascontiguousarray(f), "RGBA") for f in rgba]


def save_apng(
    rgba: np.ndarray, durations_ms: list[int], base: str | os.PathLike[str], name: str, loop: int = 0
) -> Path:
    """Animated PNG with full 8-bit alpha; each frame replaces the previous (disposal to background)."""
    _check(rgba, durations_ms)
    path = _target(base, name, ".png")
    return _save_animated(_rgba_images(rgba), durations_ms, path, format="PNG", loop=loop, disposal=1, blend=0)


def save_webp(
    rgba: np.ndarray,
    durations_ms: list[int],
    base: str | os.PathLike[str],
    name: str,
    loop: int = 0,
    lossless: bool = True,
    quality: int = 90,
) -> Path:
    """Animated WebP with alpha (lossless by default: sprites have hard edges and flat colours)."""
    _check(rgba, durations_ms)
    path = _target(base, name, ".webp")
    options = {"loop": loop, "lossless": lossless, "quality": quality, "exact": True}
    return _save_animated(_rgba_images(rgba), durations_ms, path, format="WEBP", **options)


def save_png_sequence(
    rgba: np.ndarray, base: str | os.PathLike[str], name: str, progress: ProgressFn | None = None
) -> list[Path]:
    """One RGBA PNG per frame: ``<name>_00000.png`` ... (``name`` may contain sub-folders)."""
    if rgba.ndim != 4 or rgba.shape[0] == 0:
        raise InputError(f"Export needs a non-empty RGBA batch [T,H,W,4]; got {tuple(rgba.shape)}.")
    report = progress or no_progress
    paths = []
    for i, image in enumerate(_rgba_images(rgba)):
        path = _target(base, f"{name}_{i:05d}", ".png")
        with atomic_target(path) as tmp:
            image.save(tmp, format="PNG")
        paths.append(path)
        report(i + 1, len(rgba))
    return paths


def save_png(rgba: np.ndarray, base: str | os.PathLike[str], name: str) -> Path:
    """One RGBA image (a sprite sheet) as PNG."""
    path = _target(base, name, ".png")
    with atomic_target(path) as tmp:
        Image.fromarray(np.ascontiguousarray(rgba), "RGBA").save(tmp, format="PNG")
    return path


def save_animation(
    fmt: str,
    rgba: np.ndarray,
    durations_ms: list[int],
    base: str | os.PathLike[str],
    name: str,
    loop: int = 0,
    progress: ProgressFn | None = None,
) -> list[Path]:
    """Dispatch on ``fmt`` (a key of :data:`FORMATS`); returns the written files.

    Animated formats are encoded in one Pillow call, so progress is reported once at the end
    (a Cancel lands before the next node); PNG sequences report every frame.
    """
    report = progress or no_progress
    if fmt == "png_sequence":
        return save_png_sequence(rgba, base, name, progress)
    if fmt == "gif":
        paths = [save_gif(rgba, durations_ms, base, name, loop)]
    elif fmt == "apng":
        paths = [save_apng(rgba, durations_ms, base, name, loop)]
    elif fmt == "webp":
        paths = [save_webp(rgba, durations_ms, base, name, loop)]
    else:
        raise InputError(f"Unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    report(len(rgba), len(rgba))
    return paths
