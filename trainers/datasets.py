"""Training data for VC2 LoRAs: still character art and action clips, resized to training buckets.

* **Stills**: a folder of images, each with an optional same-name ``.txt`` caption.  kohya-style
  sub-folders ``N_name`` repeat their images ``N`` times (``10_knight`` = ten repeats).
* **Clips**: the godmodeanimation / UCF-101 layout (``root/[train/]<video_dir>/<frames>.png|jpg``,
  optional per-frame ``.txt`` captions; the first one found is the clip caption) or video files
  (``.mp4``/``.webm``/``.mov``/``.gif``/``.mkv``) read with PyAV, with an optional same-name ``.txt``.

Every item is resized to cover its bucket and centre-cropped, so nothing is stretched.  Buckets are
multiples of 64 (VAE factor 8 x the UNet's downsampling) near the requested training area.  Captions go
through a template with a trigger word; the caption dropout for CFG happens in the training loop.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..core.errors import InputError

IMAGE_EXTS = frozenset({".png", ".jpg", ".jpeg", ".webp", ".bmp"})
VIDEO_EXTS = frozenset({".mp4", ".webm", ".mov", ".mkv", ".avi", ".gif"})
BUCKET_STEP = 64
DEFAULT_TEMPLATE = "Game character {action}animation of {trigger}, {caption}"
_REPEAT_DIR = re.compile(r"^(\d+)_(.+)$")


@dataclass
class TrainItem:
    """One training sample: ``frames`` IMAGE ``[T,H,W,3]`` float32 0..1 (T=1 for stills) and its caption."""

    frames: torch.Tensor
    caption: str
    kind: str  # "still" | "clip"
    source: str
    repeats: int = 1

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the item's bucket."""
        return int(self.frames.shape[2]), int(self.frames.shape[1])


@dataclass
class TrainDataset:
    """Stills and clips ready for the trainer, plus the settings that shaped them."""

    stills: list[TrainItem] = field(default_factory=list)
    clips: list[TrainItem] = field(default_factory=list)
    trigger: str = ""
    still_ratio: float = 0.5
    clip_fps: int = 16

    def __len__(self) -> int:
        return sum(i.repeats for i in self.stills) + sum(i.repeats for i in self.clips)

    def merged(self, other: TrainDataset, still_ratio: float | None = None) -> TrainDataset:
        """A dataset holding both item lists (``other``'s trigger wins when this one has none)."""
        return TrainDataset(
            stills=self.stills + other.stills,
            clips=self.clips + other.clips,
            trigger=self.trigger or other.trigger,
            still_ratio=self.still_ratio if still_ratio is None else still_ratio,
            clip_fps=other.clip_fps if other.clips else self.clip_fps,
        )

    def describe(self) -> str:
        return f"{len(self.stills)} stills and {len(self.clips)} clips ({len(self)} samples with repeats)"


def check_size(width: int, height: int) -> None:
    if width < BUCKET_STEP or height < BUCKET_STEP or width % BUCKET_STEP or height % BUCKET_STEP:
        raise InputError(
            f"Training width and height must be multiples of {BUCKET_STEP} (at least {BUCKET_STEP}), got "
            f"{width}x{height}; for example {max(1, round(width / 64)) * 64}x{max(1, round(height / 64)) * 64}."
        )


def bucket_for(src_w: int, src_h: int, width: int, height: int, bucketing: bool) -> tuple[int, int]:
    """The training size for a source of ``src_w x src_h``.

    Without bucketing every item trains at ``width x height``.  With bucketing the bucket keeps about
    the same pixel area but follows the source's aspect ratio (both sides multiples of 64), so tall
    character sheets are not cropped to a square.
    """
    if not bucketing:
        return width, height
    area = width * height
    aspect = src_w / max(1, src_h)
    w = max(BUCKET_STEP, round(math.sqrt(area * aspect) / BUCKET_STEP) * BUCKET_STEP)
    h = max(BUCKET_STEP, round(math.sqrt(area / aspect) / BUCKET_STEP) * BUCKET_STEP)
    return w, h


def fit_frames(frames: np.ndarray, width: int, height: int) -> torch.Tensor:
    """``[T,H,W,3]`` uint8 -> ``[T,height,width,3]`` float 0..1: cover-resize (area filter) then centre crop."""
    import cv2

    t, h, w = frames.shape[:3]
    scale = max(width / w, height / h)
    new_w, new_h = max(width, round(w * scale)), max(height, round(h * scale))
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC
    x0, y0 = (new_w - width) // 2, (new_h - height) // 2
    out = np.empty((t, height, width, 3), dtype=np.uint8)
    for i in range(t):
        resized = cv2.resize(frames[i], (new_w, new_h), interpolation=interp)
        out[i] = resized[y0 : y0 + height, x0 : x0 + width]
    return torch.from_numpy(out).float() / 255.0


def _read_image(path: Path) -> np.ndarray:
    """RGB uint8 ``[H,W,3]``; transparent pixels are composited on white (sprite art is often RGBA)."""
    from PIL import Image

    try:
        with Image.open(path) as img:
            img.load()
            if img.mode in ("RGBA", "LA", "P"):
                rgba = img.convert("RGBA")
                background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
                img = Image.alpha_composite(background, rgba)
            return np.asarray(img.convert("RGB"))
    except OSError as exc:
        raise InputError(f"{path} is not a readable image ({exc}). Remove it from the dataset folder.") from exc


def read_caption(path: Path) -> str:
    """The caption in ``path`` (one line, whitespace collapsed), or '' when there is no such file."""
    if not path.is_file():
        return ""
    return " ".join(path.read_text(encoding="utf-8", errors="replace").split())


def render_caption(template: str, trigger: str, caption: str, action: str = "") -> str:
    """Fill ``{trigger}``, ``{caption}`` and ``{action}``; empty parts leave no stray commas or spaces."""
    action_text = f"{action.strip()} " if action.strip() else ""
    text = template.replace("{trigger}", trigger.strip()).replace("{caption}", caption.strip())
    text = text.replace("{action}", action_text)
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"(\s*,\s*)+", ", ", text)
    return text.strip().strip(",").strip()


def _sorted_files(folder: Path, exts: Iterable[str]) -> list[Path]:
    wanted = set(exts)
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in wanted)


def _repeat_dirs(root: Path) -> list[tuple[Path, int]]:
    """``root`` itself (1 repeat) plus every kohya ``N_name`` sub-folder with its repeat count."""
    found = [(root, 1)]
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        match = _REPEAT_DIR.match(sub.name)
        if match:
            found.append((sub, max(1, int(match.group(1)))))
    return found


def _require_folder(folder: str | os.PathLike[str], what: str) -> Path:
    root = Path(folder)
    if not root.is_dir():
        raise InputError(f"The {what} folder {root} does not exist or is not a folder.")
    return root


def load_stills(
    folder: str | os.PathLike[str],
    width: int = 256,
    height: int = 256,
    trigger: str = "",
    template: str = DEFAULT_TEMPLATE,
    bucketing: bool = False,
) -> list[TrainItem]:
    """Every image of ``folder`` (and its ``N_name`` repeat sub-folders) as a single-frame item."""
    check_size(width, height)
    root = _require_folder(folder, "still images")
    items: list[TrainItem] = []
    for sub, repeats in _repeat_dirs(root):
        for path in _sorted_files(sub, IMAGE_EXTS):
            pixels = _read_image(path)
            w, h = bucket_for(pixels.shape[1], pixels.shape[0], width, height, bucketing)
            caption = render_caption(template, trigger, read_caption(path.with_suffix(".txt")))
            items.append(TrainItem(fit_frames(pixels[None], w, h), caption, "still", str(path), repeats))
    if not items:
        raise InputError(
            f"No images ({', '.join(sorted(IMAGE_EXTS))}) were found in {root} or its N_name sub-folders. "
            "Put the character art there (optionally with same-name .txt captions)."
        )
    return items


def _clip_window(frames: Sequence, count: int, stride: int) -> list:
    """The first ``count`` frames taken every ``stride`` (deterministic, so a dataset is reproducible)."""
    picked = list(frames)[:: max(1, stride)][:count]
    return picked


def _read_video(path: Path, count: int, stride: int) -> np.ndarray:
    import av

    frames: list[np.ndarray] = []
    try:
        with av.open(str(path)) as container:
            for i, frame in enumerate(container.decode(video=0)):
                if i % max(1, stride) == 0:
                    frames.append(frame.to_ndarray(format="rgb24"))
                if len(frames) >= count:
                    break
    except (av.error.FFmpegError, OSError) as exc:
        raise InputError(f"{path} could not be decoded as a video ({exc}).") from exc
    return np.stack(frames) if frames else np.empty((0, 1, 1, 3), dtype=np.uint8)


def load_clips(
    folder: str | os.PathLike[str],
    frames: int = 8,
    width: int = 256,
    height: int = 256,
    trigger: str = "",
    action: str = "",
    template: str = DEFAULT_TEMPLATE,
    frame_stride: int = 1,
    bucketing: bool = False,
) -> list[TrainItem]:
    """Action clips from frame folders (godmodeanimation/UCF layout) and video files under ``folder``.

    A clip shorter than ``frames`` (after the stride) is skipped, as the original ``VideoFrameDataset``
    skips videos with fewer than ``video_length`` frames; if every clip is too short that is an error.
    """
    check_size(width, height)
    if frames < 2:
        raise InputError(f"Action clips need at least 2 frames, got {frames}.")
    root = _require_folder(folder, "action clips")
    base = root / "train" if (root / "train").is_dir() else root
    items: list[TrainItem] = []
    skipped: list[str] = []
    candidates: list[tuple[Path, int]] = []
    for sub, repeats in _repeat_dirs(base):
        candidates += [(p, repeats) for p in _sorted_files(sub, VIDEO_EXTS)]
        frame_dirs = [d for d in sorted(p for p in sub.iterdir() if p.is_dir()) if not _REPEAT_DIR.match(d.name)]
        candidates += [(d, repeats) for d in frame_dirs]
        if sub is not base and not frame_dirs and _sorted_files(sub, IMAGE_EXTS):
            candidates.append((sub, repeats))
    if not candidates and _sorted_files(base, IMAGE_EXTS):
        candidates.append((base, 1))  # the folder itself is one clip's frames
    for path, repeats in candidates:
        if path.is_dir():
            files = _clip_window(_sorted_files(path, IMAGE_EXTS), frames, frame_stride)
            pixels = np.stack([_read_image(f) for f in files]) if len(files) == frames else None
            caption_files = sorted(path.glob("*.txt"))
            caption = read_caption(caption_files[0]) if caption_files else ""
        else:
            video = _read_video(path, frames, frame_stride)
            pixels = video if len(video) == frames else None
            caption = read_caption(path.with_suffix(".txt"))
        if pixels is None:
            skipped.append(path.name)
            continue
        w, h = bucket_for(pixels.shape[2], pixels.shape[1], width, height, bucketing)
        text = render_caption(template, trigger, caption, action)
        items.append(TrainItem(fit_frames(pixels, w, h), text, "clip", str(path), repeats))
    if not items:
        detail = f" ({len(skipped)} clips had fewer than {frames} frames at stride {frame_stride})" if skipped else ""
        raise InputError(
            f"No usable action clips were found in {base}{detail}. Expected sub-folders of frame images "
            f"(UCF/godmodeanimation layout) or video files ({', '.join(sorted(VIDEO_EXTS))})."
        )
    return items
