"""Planted camera shake on any sprite clip, and a jump clip of real art, for the stabiliser tests.

``shaken`` moves each frame of a clip (with its true alpha) by a whole-pixel offset, so the offsets
the stabiliser finds can be checked against the planted ones.  ``kenney_jump`` builds a jump from
Kenney's own idle / jump / fall sprites (CC0, see :mod:`support.sprite_real`) placed on a drawn arc:
the frames on the ground stand on one row, the airborne ones are lifted by known heights.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np

from . import sprite_real as real

# Height of the feet above the ground per frame (unscaled pixels): two frames standing, a 40 px arc, landing.
JUMP_POSES = ("idle", "idle", "jump", "jump", "jump", "fall", "fall", "idle", "idle")
JUMP_LIFT = (0, 0, 14, 30, 40, 30, 14, 0, 0)


def shaken(
    rgb: np.ndarray, alpha: np.ndarray, amp: int = 4, seed: int = 0, axes: tuple[bool, bool] = (True, True)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rgb, alpha, planted [T,2])``: every frame moved by whole pixels in ``[-amp, amp]`` per axis.

    The canvas grows by ``amp`` on every side so nothing is cut; ``planted[t] = (dx, dy)``.
    """
    t, h, w = alpha.shape
    rng = np.random.default_rng(seed)
    planted = rng.integers(-amp, amp + 1, (t, 2)) * np.asarray(axes, int)
    out_rgb = np.zeros((t, h + 2 * amp, w + 2 * amp, 3), np.float32)
    out_a = np.zeros((t, h + 2 * amp, w + 2 * amp), np.float32)
    for i, (dx, dy) in enumerate(planted):
        out_rgb[i, amp + dy : amp + dy + h, amp + dx : amp + dx + w] = rgb[i]
        out_a[i, amp + dy : amp + dy + h, amp + dx : amp + dx + w] = alpha[i]
    return out_rgb, out_a, planted


def kenney_jump(character: str = "robot", scale: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rgb, alpha, lift [T])`` of a drawn-in-place jump: Kenney's poses on the :data:`JUMP_LIFT` arc.

    The poses are scaled (premultiplied, bilinear, as :func:`support.sprite_real.composite` does); each
    pose's own feet line is put on one ground row and raised by its lift, so ``lift`` (scaled pixels)
    is the true height of the feet above the ground in every frame.
    """
    import cv2
    from gameanim.nodes.sprite.anchor import ground_y
    from PIL import Image

    poses = {}
    with zipfile.ZipFile(real.require_wheel()) as z:
        for pose in set(JUMP_POSES):
            name = f"{real.BASE}{character}/{real.CHARACTERS[character]}_{pose}.png"
            rgba = np.asarray(Image.open(io.BytesIO(z.read(name))).convert("RGBA")).astype(np.float32) / 255.0
            size = (rgba.shape[1] * scale, rgba.shape[0] * scale)
            a = np.clip(cv2.resize(rgba[..., 3], size, interpolation=cv2.INTER_LINEAR), 0, 1)
            premul = cv2.resize(rgba[..., :3] * rgba[..., 3:], size, interpolation=cv2.INTER_LINEAR)
            poses[pose] = (np.where(a[..., None] > 0, premul / np.maximum(a, 1e-6)[..., None], 0.0), a)
    lift = np.asarray(JUMP_LIFT, np.float64) * scale
    h, w = poses["idle"][1].shape
    margin = 8 * scale
    top = int(lift.max()) + margin
    feet = {pose: int(ground_y(a[None])[0]) for pose, (_, a) in poses.items()}
    below = max(h - f for f in feet.values())  # room under the ground for a pose drawn high in its image
    rgb = np.zeros((len(JUMP_POSES), top + h + below + margin, w, 3), np.float32)
    alpha = np.zeros(rgb.shape[:3], np.float32)
    for i, pose in enumerate(JUMP_POSES):
        colour, a = poses[pose]
        y0 = top + h - feet[pose] - int(lift[i])  # the pose's feet land on row top + h - lift
        rgb[i, y0 : y0 + h] = colour
        alpha[i, y0 : y0 + h] = a
    return rgb, alpha, lift
