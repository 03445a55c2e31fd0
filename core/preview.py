"""Animation previews for the browser: frames written to ComfyUI's temp folder, listed in the node's ``ui``.

Output nodes add ``animation_preview(...)`` to their ``{"ui": ...}`` dict; ``web/js/animation_preview.js``
plays the frames on the node (play/pause, scrub, onion skin, checkerboard behind alpha, pixel-exact
zoom).  Frames are small PNGs in ``temp/gameanim_preview/<id>/`` (ComfyUI clears temp at start), so
previews never clutter the output folder.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from . import host
from .errors import InputError

PREVIEW_KEY = "gameanim_preview"
MAX_PREVIEW_FRAMES = 256


def _frames_rgba(images: Any, mask: Any | None) -> np.ndarray:
    frames = np.asarray(
        images.detach().cpu().float().numpy() if hasattr(images, "detach") else images, dtype=np.float32
    )
    if frames.ndim == 3:
        frames = frames[None]
    if frames.ndim != 4 or frames.shape[-1] not in (3, 4):
        raise InputError(f"preview frames must be [T,H,W,3] or [T,H,W,4]; got shape {tuple(frames.shape)}")
    if mask is not None:
        alpha = np.asarray(mask.detach().cpu().float().numpy() if hasattr(mask, "detach") else mask, dtype=np.float32)
        alpha = np.broadcast_to(alpha if alpha.ndim == 3 else alpha[None], frames.shape[:3])
        frames = np.concatenate([frames[..., :3], alpha[..., None]], axis=-1)
    return (np.clip(frames, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def animation_preview(
    images: Any, fps: float, mask: Any | None = None, pixel_art: bool = False, caption: str = ""
) -> dict[str, list[dict[str, Any]]]:
    """Write preview frames and return ``{"gameanim_preview": [...]}`` to merge into a node's ``ui``.

    ``images`` is an IMAGE batch ``[T,H,W,3|4]`` (a 4th channel is alpha) and ``mask`` an optional
    alpha ``[T,H,W]`` (1 = opaque); ``caption`` is shown beside the frame counter (e.g. the pose
    camera preset).  At most :data:`MAX_PREVIEW_FRAMES` frames are written.
    """
    from PIL import Image

    rgba = _frames_rgba(images, mask)[:MAX_PREVIEW_FRAMES]
    subfolder = f"gameanim_preview/{uuid.uuid4().hex[:12]}"
    folder = host.temp_dir() / subfolder
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for index, frame in enumerate(rgba):
        name = f"frame_{index:04d}.png"
        mode = "RGBA" if frame.shape[-1] == 4 else "RGB"
        Image.fromarray(frame, mode).save(folder / name, compress_level=1)
        entries.append({"filename": name, "subfolder": subfolder, "type": "temp"})
    height, width = rgba.shape[1:3]
    return {
        PREVIEW_KEY: [
            {
                "frames": entries,
                "fps": float(fps),
                "alpha": rgba.shape[-1] == 4,
                "pixel_art": bool(pixel_art),
                "caption": caption,
                "width": int(width),
                "height": int(height),
            }
        ]
    }
