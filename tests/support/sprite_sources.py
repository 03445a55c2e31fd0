"""Sprite material nobody here made, composited and published the ways generated clips arrive.

A small registry of real game sprites with their true alpha (:func:`sources`), one way to put them on a
key (:func:`composite`: upscale, key, optional "generated" look, then published as PNG, GIF, JPEG or H.264)
and the two figures the matte is judged by (:func:`iou`, :func:`gross_error`).  The tests and the
benchmarks share it (``tests/test_sprite_sources.py``, ``bench/sprite.py``).

Sources, each read straight from the package a registry ships (nothing is installed; ``.ci/run`` fetches
them into ``.cache/test-assets``; the tests fail in CI without them and skip locally with the command):

- ``kenney_*``: Kenney's CC0 walk cycles from the ``arcade==3.3.3`` wheel (see :mod:`.sprite_real`).
- ``tuxmath_penguin``, ``tuxmath_tux``: Debian ``tuxmath-data`` 2.0.3-9 (GPL-3+, Tux4Kids; the Tux drawings
  derive from Larry Ewing's Tux): a hand-drawn penguin's walk (black body, white belly, dark outlines) and
  Tux's "egypt" dance.
- ``frozen_bubble``: Debian ``frozen-bubble-data`` 2.212-11 (GPL-2, the Frozen-Bubble team): the
  rendered, shaded purple penguin's victory animation.
- ``pingus``: Debian ``pingus-data`` 0.7.6-5.1 (GPL-2+, Ingo Ruhnke and others): the Pingu's 32x32
  walk, pixel art (composited with nearest-neighbour upscales).
- ``ceferino``: Debian ``ceferino-data`` 0.97.8+svn37-2.2 (GPL-2+, Hugo Ruscitti, Walter Velazquez): the
  gaucho's sheet, hand-drawn with hard edges (white shirt, black hair, dark trousers, a thin lasso), its
  first row of eight 110x110 cells in order (standing, running, turning, throwing).
- ``raincat``: Debian ``raincat-data`` 1.1.1.2-4 (CC-BY-SA-3.0, Garrick Chin): the cat's 10-frame walk, 128x128,
  drawn with dark outlines (a white body with orange patches, thin whiskers).

Which are tuning material and which are held out to validate is the tests' choice (``HELD_OUT``).
"""

from __future__ import annotations

import io
import lzma
import os
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
import pytest

from . import sprite_real

ROOT = Path(__file__).resolve().parents[2]
# Tested with 2.0.3-9, 2.212-11, 0.7.6-5.1, 0.97.8+svn37-2.2 and 1.1.1.2-4.
DEBS = ("tuxmath-data", "frozen-bubble-data", "pingus-data", "ceferino-data", "raincat-data")
KEYS = sprite_real.KEYS
# Sources kept out of every tuning decision: they only validate.
HELD_OUT = ("ceferino",)
INTERPOLATION = {"nearest": cv2.INTER_NEAREST, "bilinear": cv2.INTER_LINEAR, "bicubic": cv2.INTER_CUBIC}


@dataclass(frozen=True)
class Source:
    """A character's frames with true alpha: ``load() -> (rgb [T,h,w,3], alpha [T,h,w])`` straight float32."""

    name: str
    load: Callable[[], tuple[np.ndarray, np.ndarray]]
    licence: str
    package: str
    pixel_art: bool = False


def assets_dir() -> Path:
    return Path(os.environ.get("GAMEANIM_TEST_ASSETS", ROOT / ".cache" / "test-assets"))


def require_deb(package: str) -> Path:
    """The package's ``.deb``, or a skip locally / a failure in CI (where ``.ci/run`` must have fetched it)."""
    found = sorted(assets_dir().glob(f"{package}_*_all.deb"))
    if not found:
        message = (
            f"{package}_*_all.deb not in {assets_dir()}; run: (cd .cache/test-assets && apt-get download {package})"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found[-1]


@lru_cache(maxsize=4)
def deb_files(package: str, folder: str) -> dict[str, bytes]:
    """``{name: bytes}`` of the files directly in ``folder`` of a ``.deb``'s data archive (an ``ar`` file
    holding ``data.tar.xz``), read without unpacking the package anywhere."""
    blob = require_deb(package).read_bytes()
    assert blob[:8] == b"!<arch>\n", f"{package}'s .deb is not a Debian package"
    at, data = 8, None
    while at < len(blob):
        name, size = blob[at : at + 16].decode().strip().rstrip("/"), int(blob[at + 48 : at + 58])
        if name.startswith("data.tar"):
            data = blob[at + 60 : at + 60 + size]
            break
        at += 60 + size + size % 2
    assert data is not None and name.endswith(".xz"), f"{package}'s .deb: no data.tar.xz"
    out = {}
    prefix = "./" + folder.strip("/") + "/"
    with tarfile.open(fileobj=io.BytesIO(lzma.decompress(data))) as tar:
        for member in tar:
            if member.isfile() and member.name.startswith(prefix) and "/" not in member.name[len(prefix) :]:
                out[member.name[len(prefix) :]] = tar.extractfile(member).read()
    return out


def rgba_frames(
    images: list[bytes], crop: list[tuple[int, int, int, int]] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """PNG files (or ``crop`` boxes ``(x, y, w, h)`` of one strip) placed bottom-centre on one canvas,
    as straight ``(rgb, alpha)`` float32."""
    from PIL import Image

    if crop is not None:
        strip = np.asarray(Image.open(io.BytesIO(images[0])).convert("RGBA"))
        arrays = [strip[y : y + h, x : x + w] for x, y, w, h in crop]
    else:
        arrays = [np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")) for png in images]
    h = max(a.shape[0] for a in arrays)
    w = max(a.shape[1] for a in arrays)
    out = np.zeros((len(arrays), h, w, 4), np.float32)
    for i, a in enumerate(arrays):
        x0 = (w - a.shape[1]) // 2
        out[i, h - a.shape[0] :, x0 : x0 + a.shape[1]] = a / 255.0
    rgb = np.where(out[..., 3:] > 0, out[..., :3], 0.0)
    return np.ascontiguousarray(rgb), np.ascontiguousarray(out[..., 3])


def tuxmath_penguin() -> tuple[np.ndarray, np.ndarray]:
    files = deb_files("tuxmath-data", "usr/share/tuxmath/images/penguins")
    order = ["walk-on1", "walk-on2", "walk-on3", "walk-on2", "walk-off1", "walk-off2", "walk-off3", "walk-off2"]
    return rgba_frames([files[f"{n}.png"] for n in order])


def tuxmath_tux() -> tuple[np.ndarray, np.ndarray]:
    files = deb_files("tuxmath-data", "usr/share/tuxmath/images/tux")
    return rgba_frames([files[f"tux-egypt{i}.png"] for i in (1, 2, 3, 4, 3, 2)])


def frozen_bubble() -> tuple[np.ndarray, np.ndarray]:
    files = deb_files("frozen-bubble-data", "usr/share/games/frozen-bubble/gfx/pinguins")
    return rgba_frames([files[f"win_p1_{i:04d}.png"] for i in range(1, 65, 8)])


def pingus() -> tuple[np.ndarray, np.ndarray]:
    files = deb_files("pingus-data", "usr/share/games/pingus/data/images/pingus/player0")
    return rgba_frames([files["walker.png"]], crop=[(32 * i, 0, 32, 32) for i in range(8)])


def ceferino() -> tuple[np.ndarray, np.ndarray]:
    files = deb_files("ceferino-data", "usr/share/games/ceferino/ima")
    return rgba_frames([files["gaucho.png"]], crop=[(110 * i, 0, 110, 110) for i in range(8)])


def raincat() -> tuple[np.ndarray, np.ndarray]:
    files = deb_files("raincat-data", "usr/share/games/raincat/data/cat/cat-walk")
    return rgba_frames([files[f"cat-walk{i}.png"] for i in range(1, 11)])


@lru_cache(maxsize=1)
def sources() -> dict[str, Source]:
    """The registry: every source by name (loading happens on ``Source.load()``, cached)."""
    out = {
        f"kenney_{c}": Source(
            f"kenney_{c}", lru_cache(1)(lambda c=c: sprite_real.walk_cycle(c)), "CC0 (Kenney)", "arcade==3.3.3 (PyPI)"
        )
        for c in ("robot", "female_person", "male_adventurer", "zombie")
    }
    debian = [
        ("tuxmath_penguin", tuxmath_penguin, "GPL-3+ (Tux4Kids)", "tuxmath-data (Debian)", False),
        ("tuxmath_tux", tuxmath_tux, "GPL-3+ (Tux4Kids, after Larry Ewing)", "tuxmath-data (Debian)", False),
        ("frozen_bubble", frozen_bubble, "GPL-2 (Frozen-Bubble team)", "frozen-bubble-data (Debian)", False),
        ("pingus", pingus, "GPL-2+ (Pingus team)", "pingus-data (Debian)", True),
        ("ceferino", ceferino, "GPL-2+ (Hugo Ruscitti and others)", "ceferino-data (Debian)", False),
        ("raincat", raincat, "CC-BY-SA-3.0 (Garrick Chin)", "raincat-data (Debian)", False),
    ]
    for name, load, licence, package, pixel in debian:
        out[name] = Source(name, lru_cache(1)(load), licence, package, pixel)
    return out


def key_share(alpha: np.ndarray, rgb: np.ndarray, key: tuple[float, float, float], within: float = 8 / 255) -> float:
    """Share of the character's opaque pixels drawn in the key's own colour (every channel within ``within``).

    Such pixels on the silhouette cannot be told from the key by anything in the frame; a sprite with more
    than 5 % of them (a black-bodied penguin on black) is not a fair case for that key.
    """
    opaque = alpha >= 0.99
    same = (np.abs(rgb - np.asarray(key, np.float32)) <= within).all(axis=-1)
    return float((same & opaque).sum() / max(int(opaque.sum()), 1))


def composite(
    rgb: np.ndarray,
    alpha: np.ndarray,
    key: tuple[float, float, float],
    scale: float = 3.0,
    interpolation: str = "bicubic",
    margin: tuple[int, int] = (32, 48),
    jitter: int = 3,
    generated: bool = False,
    publish: str = "png",
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(frames float32 [T,H,W,3], truth alpha float32 [T,H,W])`` of a character composited on ``key``.

    The straight frames are upscaled by ``scale`` (premultiplied, with ``interpolation``; bicubic
    overshoot is clipped), placed on a canvas ``margin`` (y, x) px wider on each side with whole-pixel
    ``jitter``, and composited on ``key``.  ``generated`` adds what a video model adds to a key: a vignette,
    a horizontal gradient and per-frame Gaussian noise (σ 0.012).  ``publish``: ``png`` (8-bit),
    ``gif`` (256 colours per frame, Floyd–Steinberg), ``jpeg`` (quality 75, 4:2:0), ``h264`` (libx264,
    CRF 23, yuv420p, one stream).
    """
    rng = np.random.default_rng(seed)
    t, h, w = alpha.shape
    sh, sw = round(h * scale), round(w * scale)
    my, mx = margin
    H, W = sh + 2 * my + 2 * jitter, sw + 2 * mx + 2 * jitter
    H, W = H + H % 2, W + W % 2  # H.264's 4:2:0 needs even sizes
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    r2 = ((xx - W / 2) / (W / 2)) ** 2 + ((yy - H / 2) / (H / 2)) ** 2
    frames = np.empty((t, H, W, 3), np.float32)
    truth = np.zeros((t, H, W), np.float32)
    flag = INTERPOLATION[interpolation]
    for i in range(t):
        a = np.clip(cv2.resize(alpha[i], (sw, sh), interpolation=flag), 0, 1)
        premul = np.clip(cv2.resize(rgb[i] * alpha[i][..., None], (sw, sh), interpolation=flag), 0, a[..., None])
        dy, dx = rng.integers(-jitter, jitter + 1, 2) if jitter else (0, 0)
        y0, x0 = my + jitter + dy, mx + jitter + dx
        bg = np.broadcast_to(np.asarray(key, np.float32), (H, W, 3)).copy()
        if generated:
            shade = 0.06 * (1 - r2) + 0.03 * (xx / W - 0.5)
            bg = np.clip(bg * (0.94 + shade[..., None]) + 0.03 * shade[..., None], 0, 1)
        frame = bg
        frame[y0 : y0 + sh, x0 : x0 + sw] = premul + (1 - a[..., None]) * bg[y0 : y0 + sh, x0 : x0 + sw]
        if generated:
            frame = frame + rng.normal(0, 0.012, frame.shape).astype(np.float32)
        frames[i] = np.clip(frame, 0, 1)
        truth[i, y0 : y0 + sh, x0 : x0 + sw] = a
    return publish_as(np.rint(frames * 255).astype(np.uint8), publish).astype(np.float32) / 255.0, truth


def publish_as(frames: np.ndarray, form: str) -> np.ndarray:
    """uint8 frames ``[T,H,W,3]`` as they come back from a published file of ``form`` (see :func:`composite`)."""
    if form == "png":
        return frames
    if form == "gif":
        return gif_dithered(frames)
    if form == "jpeg":
        out = []
        for f in frames:
            ok, jpg = cv2.imencode(".jpg", f[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, 75])
            assert ok
            out.append(cv2.imdecode(jpg, cv2.IMREAD_COLOR)[..., ::-1])
        return np.stack(out)
    if form == "h264":
        return h264(frames)
    raise ValueError(f"unknown form {form!r}")


def gif_dithered(frames: np.ndarray) -> np.ndarray:
    """The frames as a GIF stores them: a 256-colour palette per frame, Floyd–Steinberg dithered."""
    from PIL import Image

    out = []
    for frame in frames:
        buffer = io.BytesIO()
        Image.fromarray(frame).quantize(256, dither=Image.Dither.FLOYDSTEINBERG).save(buffer, "GIF")
        buffer.seek(0)
        with Image.open(buffer) as img:
            out.append(np.asarray(img.convert("RGB")))
    return np.stack(out)


def h264(frames: np.ndarray, crf: int = 23) -> np.ndarray:
    """The frames through an H.264 (libx264, yuv420p) MP4 in memory and back, as a published video is."""
    import av

    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=12)
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": str(crf), "preset": "fast"}
        for f in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    buffer.seek(0)
    with av.open(buffer) as src:
        decoded = [f.to_ndarray(format="rgb24") for f in src.decode(video=0)]
    assert len(decoded) == len(frames), (len(decoded), len(frames))
    return np.stack(decoded)


def iou(alpha: np.ndarray, truth: np.ndarray) -> float:
    """IoU of ``alpha > 0.5`` and ``truth > 0.5`` (one frame or a clip)."""
    a, b = alpha > 0.5, truth > 0.5
    return float((a & b).sum() / max(int((a | b).sum()), 1))


def gross_error(alpha: np.ndarray, truth: np.ndarray, band: float = 1.0) -> float:
    """Pixels of one frame on the wrong side of 0.5 farther than ``band`` px from the true contour, as a
    share of the character's area (``truth > 0.5``).

    A pixel's distance to the contour is its distance to the nearest pixel of the other side of the
    truth, less half a pixel (the contour runs between them); so ``band=1`` forgives the pixels next to
    the contour, diagonal neighbours included, where a soft edge's 0.5 crossing is a matter of rounding.
    """
    inside = (truth > 0.5).astype(np.uint8)
    to_out = cv2.distanceTransform(inside, cv2.DIST_L2, 5)
    to_in = cv2.distanceTransform(1 - inside, cv2.DIST_L2, 5)
    far = np.where(inside > 0, to_out, to_in) - 0.5 > band
    wrong = (alpha > 0.5) != (inside > 0)
    return float((wrong & far).sum() / max(int(inside.sum()), 1))


def clip_scores(alpha: np.ndarray, truth: np.ndarray, band: float = 1.0) -> tuple[float, float, float]:
    """``(median frame's gross error, worst frame's gross error, min IoU)`` of a matted clip."""
    gross = [gross_error(a, t, band) for a, t in zip(alpha, truth, strict=True)]
    return float(np.median(gross)), float(max(gross)), min(iou(a, t) for a, t in zip(alpha, truth, strict=True))
