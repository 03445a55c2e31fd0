"""Read a folder of frame images (sorted by name) into float RGB + alpha arrays."""

from __future__ import annotations

import os

import numpy as np
from PIL import Image

from ...core.errors import InputError
from ...core.paths import confined
from ...core.progress import ProgressFn, no_progress

EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".bmp")


def load_frame_folder(
    base: str | os.PathLike[str], folder: str, max_frames: int = 0, progress: ProgressFn | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(rgb [T,H,W,3], alpha [T,H,W])`` float32 from ``base/folder`` (confined to ``base``)."""
    directory = confined(base, folder)
    if not directory.is_dir():
        raise InputError(f"Frame folder {folder!r} was not found in {base}; create it and put the frames (PNG) inside.")
    files = sorted(p for p in directory.iterdir() if p.suffix.lower() in EXTENSIONS and p.is_file())
    if max_frames > 0:
        files = files[:max_frames]
    if not files:
        raise InputError(f"Frame folder {folder!r} holds no images ({', '.join(EXTENSIONS)}).")
    report = progress or no_progress
    frames = []
    for i, path in enumerate(files):
        with Image.open(path) as im:
            frames.append(np.asarray(im.convert("RGBA"), np.float32) / 255.0)
        if frames[-1].shape != frames[0].shape:
            raise InputError(
                f"{path.name} is {frames[-1].shape[1]}x{frames[-1].shape[0]} px but {files[0].name} is "
                f"{frames[0].shape[1]}x{frames[0].shape[0]} px; all frames of a clip must have one size."
            )
        report(i + 1, len(files))
    stack = np.stack(frames)
    return np.ascontiguousarray(stack[..., :3]), np.ascontiguousarray(stack[..., 3])
