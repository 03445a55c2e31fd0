"""Synthetic clips with known motion: a textured sprite translated by a fixed speed.

Used by the tests and the benchmark (the true flow is known exactly), by the example workflow (so it
runs with no input files) and by users who want to see which level a given speed lands in.
The sprite and the background are random but seeded textures; sub-pixel positions are rendered
with bilinear warping so any speed is exact.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from ...core.errors import InputError

BACKGROUNDS = ("plain", "textured")


def _texture(rng: np.random.Generator, height: int, width: int, sigma: float) -> np.ndarray:
    """Colour noise with detail at two scales (``sigma`` and 4x), normalised to 0..1.

    The coarse scale gives the flow pyramid something to lock onto at large speeds, the fine scale
    gives sub-pixel accuracy, as the shading and outlines of a real character do.
    """
    fine = cv2.GaussianBlur(rng.random((height, width, 3)).astype(np.float32), (0, 0), sigma)
    coarse = cv2.GaussianBlur(rng.random((height, width, 3)).astype(np.float32), (0, 0), 4.0 * sigma)
    mixed = (fine - fine.mean()) / max(float(fine.std()), 1e-6) + (coarse - coarse.mean()) / max(
        float(coarse.std()), 1e-6
    )
    low, high = mixed.min(), mixed.max()
    return (mixed - low) / max(high - low, 1e-6)


def _sprite(rng: np.random.Generator, height: int) -> tuple[np.ndarray, np.ndarray]:
    """A character-like sprite (body ellipse + head) with a colourful texture, and its alpha."""
    width = max(8, int(round(height * 0.55)))
    alpha = np.zeros((height, width), np.float32)
    cv2.ellipse(alpha, (width // 2, int(height * 0.62)), (width // 2 - 1, int(height * 0.37)), 0, 0, 360, 1.0, -1)
    cv2.circle(alpha, (width // 2, int(height * 0.17)), max(2, int(height * 0.15)), 1.0, -1)
    colour = rng.uniform(0.2, 0.9, 3).astype(np.float32)
    texture = 0.5 * colour + 0.5 * _texture(rng, height, width, max(1.0, height / 100.0))
    return texture, alpha


def moving_sprite_clip(
    frames: int = 16,
    height: int = 320,
    width: int = 512,
    speed: float = 4.0,
    angle_deg: float = 0.0,
    background: str = "plain",
    background_speed: float = 0.0,
    seed: int = 0,
    sprite_height: float = 0.45,
) -> tuple[np.ndarray, np.ndarray]:
    """A clip ``[T,H,W,3]`` (0..1) of a sprite moving ``speed`` px/frame at ``angle_deg`` and its MASK ``[T,H,W]``.

    The path is centred in the frame.  ``background_speed`` scrolls a textured background
    horizontally (px/frame, wrapping), to test that a mask keeps camera motion out of the scope.
    """
    if frames < 2 or height < 16 or width < 16:
        raise InputError(f"A synthetic clip needs at least 2 frames of 16x16 px; got {frames} of {height}x{width}.")
    if background not in BACKGROUNDS:
        raise InputError(f"background must be one of {', '.join(BACKGROUNDS)}; got {background!r}.")
    if not 0.05 <= sprite_height <= 0.9:
        raise InputError(f"sprite_height is a fraction of the frame height in [0.05, 0.9]; got {sprite_height}.")
    rng = np.random.default_rng(seed)
    texture, alpha = _sprite(rng, int(round(height * sprite_height)))
    sprite_h, sprite_w = alpha.shape
    if background == "plain" and background_speed == 0:
        back = np.full((height, width, 3), 0.35, np.float32)
    else:
        back = 0.25 + 0.5 * _texture(rng, height, width, max(1.5, height / 160.0))
    dx, dy = math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))
    travel = speed * (frames - 1)
    x0 = (width - sprite_w) / 2.0 - dx * travel / 2.0
    y0 = (height - sprite_h) / 2.0 - dy * travel / 2.0
    clip = np.empty((frames, height, width, 3), np.float32)
    masks = np.empty((frames, height, width), np.float32)
    for t in range(frames):
        if background_speed:
            shift = np.float32([[1, 0, background_speed * t], [0, 1, 0]])
            scene = cv2.warpAffine(back, shift, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)
        else:
            scene = back
        place = np.float32([[1, 0, x0 + dx * speed * t], [0, 1, y0 + dy * speed * t]])
        layer = cv2.warpAffine(texture, place, (width, height), flags=cv2.INTER_LINEAR)
        cover = cv2.warpAffine(alpha, place, (width, height), flags=cv2.INTER_LINEAR)[..., None]
        clip[t] = layer * cover + scene * (1.0 - cover)
        masks[t] = (cover[..., 0] > 0.5).astype(np.float32)
    return np.clip(clip, 0.0, 1.0), masks
