"""Real game art for the sprite tests: Kenney's animated characters, shipped in the ``arcade`` wheel.

The sprites are CC0 (Kenney, www.kenney.nl; the wheel's ``arcade/resources/assets/images/License.txt``
says "Everything in this package is licensed CC0"). We read the PNGs straight from the wheel
(``arcade==3.3.3``, ``pip download --no-deps``; ``.ci/run`` puts it in ``.cache/test-assets``), so
none of arcade's dependencies are needed.  Composites put the anti-aliased sprites on the keys VC2
produces, optionally with what a video model adds (gradient/vignette, per-frame noise, JPEG blocks).
"""

from __future__ import annotations

import io
import os
import zipfile
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
WHEEL = "arcade-3.3.3-py3-none-any.whl"
BASE = "arcade/resources/assets/images/animated_characters/"
CHARACTERS = {
    "robot": "robot",
    "female_adventurer": "femaleAdventurer",
    "female_person": "femalePerson",
    "male_adventurer": "maleAdventurer",
    "male_person": "malePerson",
    "zombie": "zombie",
}
KEYS = {
    "white": (1.0, 1.0, 1.0),
    "light_grey": (0.8, 0.8, 0.8),
    "mid_grey": (0.5, 0.5, 0.5),
    "black": (0.0, 0.0, 0.0),
    "green": (0.0, 0.8, 0.25),
    "blue": (0.1, 0.2, 0.9),
    "magenta": (1.0, 0.0, 1.0),
}


def wheel_path() -> Path | None:
    """The arcade wheel: ``$GAMEANIM_TEST_ASSETS`` or ``<repo>/.cache/test-assets``."""
    folder = Path(os.environ.get("GAMEANIM_TEST_ASSETS", ROOT / ".cache" / "test-assets"))
    path = folder / WHEEL
    return path if path.is_file() else None


def require_wheel() -> Path:
    """The wheel, or a skip locally / a failure in CI (where ``.ci/run`` must have fetched it)."""
    path = wheel_path()
    if path is None:
        message = f"{WHEEL} not found; run: pip download --no-deps arcade==3.3.3 -d .cache/test-assets"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@lru_cache(maxsize=16)
def walk_cycle(character: str = "robot") -> tuple[np.ndarray, np.ndarray]:
    """The 8-frame walk cycle as straight ``(rgb [8,128,96,3], alpha [8,128,96])`` float32."""
    from PIL import Image

    with zipfile.ZipFile(require_wheel()) as z:
        rgba = [
            np.asarray(
                Image.open(io.BytesIO(z.read(f"{BASE}{character}/{CHARACTERS[character]}_walk{i}.png"))).convert("RGBA")
            )
            for i in range(8)
        ]
    arr = np.stack(rgba).astype(np.float32) / 255.0
    return np.ascontiguousarray(arr[..., :3]), np.ascontiguousarray(arr[..., 3])


ACTIONS = {"walk": [f"walk{i}" for i in range(8)], "climb": ["climb0", "climb1"], "air": ["idle", "jump", "fall"]}


@lru_cache(maxsize=16)
def action_clips(character: str = "robot") -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A character's actions as clips: walk (8 frames), climb (2), idle/jump/fall (3), ``(rgb, alpha)`` each."""
    from PIL import Image

    clips = {}
    with zipfile.ZipFile(require_wheel()) as z:
        for action, frames in ACTIONS.items():
            rgba = [
                np.asarray(
                    Image.open(io.BytesIO(z.read(f"{BASE}{character}/{CHARACTERS[character]}_{f}.png"))).convert("RGBA")
                )
                for f in frames
            ]
            arr = np.stack(rgba).astype(np.float32) / 255.0
            clips[action] = (np.ascontiguousarray(arr[..., :3]), np.ascontiguousarray(arr[..., 3]))
    return clips


def composite(
    character: str,
    key: tuple[float, float, float],
    size: tuple[int, int] = (320, 384),
    scale: float = 2.0,
    jitter: float = 0.0,
    generated: bool = False,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(frames [8,H,W,3], truth alpha [8,H,W], planted offsets [8,2])`` of a walk cycle on ``key``.

    The sprite is scaled (premultiplied, bilinear, like a generated clip's soft edges), placed at the
    frame centre plus whole-pixel ``jitter`` per frame, and composited. ``generated`` adds a vignette
    and a horizontal gradient, Gaussian noise per frame and JPEG (quality 80) blocks.
    """
    rgb, alpha = walk_cycle(character)
    h, w = size
    rng = np.random.default_rng(seed)
    sw, sh = round(96 * scale), round(128 * scale)
    offsets = np.rint(rng.uniform(-jitter, jitter, (8, 2))).astype(int) if jitter else np.zeros((8, 2), int)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((xx - w / 2) / (w / 2)) ** 2 + ((yy - h / 2) / (h / 2)) ** 2
    frames, truth = [], []
    for i in range(8):
        premul = cv2.resize(rgb[i] * alpha[i][..., None], (sw, sh), interpolation=cv2.INTER_LINEAR)
        a = np.clip(cv2.resize(alpha[i], (sw, sh), interpolation=cv2.INTER_LINEAR), 0, 1)
        canvas_a = np.zeros((h, w), np.float32)
        canvas_p = np.zeros((h, w, 3), np.float32)
        x0 = (w - sw) // 2 + offsets[i, 0]
        y0 = (h - sh) // 2 + offsets[i, 1]
        canvas_a[y0 : y0 + sh, x0 : x0 + sw] = a
        canvas_p[y0 : y0 + sh, x0 : x0 + sw] = premul
        bg = np.broadcast_to(np.asarray(key, np.float32), (h, w, 3)).copy()
        if generated:
            shade = 0.06 * (1 - r2) + 0.03 * (xx / w - 0.5)
            bg = np.clip(bg * (0.94 + shade[..., None]) + 0.03 * shade[..., None], 0, 1)
        frame = canvas_p + (1 - canvas_a[..., None]) * bg
        if generated:
            frame = np.clip(frame + rng.normal(0, 0.012, frame.shape), 0, 1)
            ok, jpg = cv2.imencode(
                ".jpg", (frame[..., ::-1] * 255 + 0.5).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 80]
            )
            frame = cv2.imdecode(jpg, cv2.IMREAD_COLOR)[..., ::-1].astype(np.float32) / 255.0
        frames.append(frame.astype(np.float32))
        truth.append(canvas_a)
    return np.stack(frames), np.stack(truth), offsets
