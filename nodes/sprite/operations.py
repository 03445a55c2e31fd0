"""Tensor-level entry points shared by :mod:`...api` and the node adapter.

They take IMAGE/MASK-style torch tensors (or numpy arrays), validate them, call the pure numpy
modules and convert back, so the API and the nodes cannot drift apart.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import InputError
from ...core.frames import as_alpha, rgb_alpha, split_image, to_numpy, to_tensor
from ...core.progress import ProgressFn
from ..pose.keypoints import joints_from_pose
from ..pose.skeleton import OPENPOSE_18
from . import anchor, export, matte, pixelart, playback, sheet


def remove_background(
    frames: Any,
    mask: Any | None = None,
    low: float = 1.0,
    high: float = 16.0,
    border: int = 4,
    cleanup: int = 1,
    progress: ProgressFn | None = None,
    min_hole: int = 24,
    mask_is: str = "alpha",
) -> tuple[Any, Any, matte.Background | None]:
    """See :func:`...api.remove_background`; also returns the estimated background (None with a mask)."""
    rgb, _ = split_image(frames, "frames")
    if mask is not None:
        out_rgb, alpha = matte.apply_mask(rgb, as_alpha(to_numpy(mask, "mask"), mask_is))
        if progress is not None:
            progress(len(rgb), len(rgb))
        return to_tensor(out_rgb), to_tensor(alpha), None
    out_rgb, alpha, background = matte.remove_background(
        rgb, low, high, border, cleanup, min_hole=min_hole, progress=progress
    )
    return to_tensor(out_rgb), to_tensor(alpha), background


def durations_for(n: int, fps: float, durations_ms: Any | None) -> np.ndarray:
    """Per-frame durations: explicit ``durations_ms`` or ``1000 / fps`` each."""
    if durations_ms is None:
        return playback.uniform_durations(n, fps)
    d = np.asarray(durations_ms, np.float64).reshape(-1)
    if d.shape != (n,) or (d <= 0).any():
        raise InputError(f"durations_ms must hold one positive value per frame ({n}); got {d.tolist()}.")
    return d


def build_sheet(
    rgb: Any,
    alpha: Any | None,
    columns: int | None = None,
    layout: str = "grid",
    padding: int = 1,
    extrude: int = 0,
    power_of_two: bool = False,
    fps: float = 12.0,
    durations_ms: Any | None = None,
    merge_holds: bool = False,
    name: str = "sprite",
    progress: ProgressFn | None = None,
    mask_is: str = "alpha",
    root_motion: Any | None = None,
) -> sheet.Sheet:
    """Pack a clip onto a :class:`.sheet.Sheet` (optionally merging held frames into durations).

    ``root_motion``: Stabilise's offsets_json (text or dict), written per frame (see :func:`root_motion_px`).
    """
    return build_animation_sheet(
        [(rgb, alpha)],
        [name],
        [fps],
        columns,
        layout,
        padding,
        extrude,
        power_of_two,
        merge_holds,
        name,
        progress,
        [durations_ms],
        mask_is,
        [root_motion],
        named=False,
    )


def _offsets_track(
    info: Any, key: str, frames: int, width: int, height: int, source_times: Any | None
) -> np.ndarray | None:
    """Track ``key`` (``[T,2]`` canvas px) of Stabilise's offsets_json in pixels of ``width`` x ``height`` frames.

    Stabilise measures on its canvas; nodes in between may rescale the frames (Pixel Art), so the
    track is scaled by the frames' size over that canvas.  A Timing Chart in between changes the
    frame count: its ``source_times`` (the source frame each output frame shows, fractional for
    in-betweens) resample the track onto the retimed frames.  None when the JSON has no ``key``.
    """
    try:
        data = json.loads(info) if isinstance(info, str) else info
        if key not in data:
            return None
        motion = np.asarray([[np.nan, np.nan] if v is None else v for v in data[key]], np.float64)
        canvas_w, canvas_h = float(data["canvas"]["w"]), float(data["canvas"]["h"])
    except (ValueError, TypeError, KeyError) as exc:
        raise InputError(
            "root_motion must be the offsets_json text of Sprite Anchor & Stabilise "
            f"(with root_motion and canvas); could not read it: {exc}."
        ) from exc
    if source_times is not None and len(source_times) == frames and motion.ndim == 2 and 0 < len(motion) != frames:
        times = np.asarray(source_times, np.float64)
        index = np.arange(len(motion), dtype=np.float64)
        motion = np.stack([np.interp(times, index, motion[:, k]) for k in range(motion.shape[1])], axis=1)
    if motion.shape != (frames, 2) or min(canvas_w, canvas_h) <= 0:
        raise InputError(
            f"root_motion holds {motion.shape[0] if motion.ndim else 0} frames but the clip has {frames}: connect "
            "the offsets_json of the Stabilise node this clip came from; a frame-count change in between needs "
            "the Timing Chart's timing connected to the sheet too, else put the timing before Stabilise."
        )
    return motion * np.array([width / canvas_w, height / canvas_h])


def root_motion_px(info: Any, frames: int, width: int, height: int, source_times: Any | None = None) -> np.ndarray:
    """``[T,2]`` root motion in pixels of ``width`` x ``height`` frames, from Stabilise's offsets_json.

    Scaled and resampled as :func:`_offsets_track` says (with equal frame counts it is taken as
    already per output frame).
    """
    motion = _offsets_track(info, "root_motion", frames, width, height, source_times)
    if motion is None or not np.isfinite(motion).all():
        raise InputError(
            "root_motion must be the offsets_json text of Sprite Anchor & Stabilise (with a finite root_motion "
            "per frame and canvas)."
        )
    return motion


def pivot_px(info: Any, frames: int, width: int, height: int, source_times: Any | None = None) -> np.ndarray:
    """``[T,2]`` anchor of each frame (px, y down) from Stabilise's offsets_json ``pivot``; NaN where unknown."""
    pivot = _offsets_track(info, "pivot", frames, width, height, source_times)
    return np.full((frames, 2), np.nan) if pivot is None else pivot


def _pad_to(rgba: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Frames placed on a larger transparent canvas, bottom edge and horizontal centre kept; and the shift.

    The feet of an anchored clip sit at its canvas bottom, so clips of different canvas sizes
    keep a common ground line and centre when they share one frame size.  Returns the padded
    frames and where the clip's top-left pixel moved to (``(dx, dy)``, for pivots).
    """
    t, h, w = rgba.shape[:3]
    out = np.zeros((t, height, width, 4), np.uint8)
    x0 = (width - w) // 2
    out[:, height - h :, x0 : x0 + w] = rgba
    return out, np.array([x0, height - h], np.float64)


def build_animation_sheet(
    clips: list[tuple[Any, Any | None]],
    names: list[str],
    fps: list[float],
    columns: int | None = None,
    layout: str = "grid",
    padding: int = 1,
    extrude: int = 0,
    power_of_two: bool = False,
    merge_holds: bool = False,
    name: str = "sprite",
    progress: ProgressFn | None = None,
    durations_ms: list[Any | None] | None = None,
    mask_is: str = "alpha",
    root_motion: list[Any | None] | None = None,
    named: bool = True,
    source_times: list[Any | None] | None = None,
) -> sheet.Sheet:
    """One sheet holding several named animations (a character's actions), one per ``(rgb, alpha)`` clip.

    Each clip keeps its own frame rate (``fps[i]``) or per-frame ``durations_ms[i]`` (e.g. from the
    Timing Chart node) and its held frames are merged within the clip;
    clips of different sizes share the largest frame size (see :func:`_pad_to`).  ``root_motion[i]``
    is clip ``i``'s Stabilise offsets_json (or None), resampled at ``source_times[i]`` when a Timing
    Chart retimed the clip after Stabilise (see :func:`root_motion_px`); merged holds keep their first
    frame's root.  Each frame's pivot is its anchor from the same offsets_json (:func:`pivot_px`),
    else the bottom centre of the clip's frames, moved with the clip when it is padded.
    ``named=False`` (one clip) leaves the sheet's single animation unnamed, called after the sheet.
    """
    if not clips:
        raise InputError("No clips to put on the sheet.")
    if len(fps) != len(clips):
        raise InputError(f"Give one fps per clip (or one for all): {len(clips)} clips, {len(fps)} rates.")
    prepared = []
    timed = durations_ms if durations_ms is not None else [None] * len(clips)
    roots = root_motion if root_motion is not None else [None] * len(clips)
    if len(roots) != len(clips):
        raise InputError(f"{len(clips)} clips arrived with {len(roots)} root motions; give one per clip or none.")
    times = source_times if source_times is not None else [None] * len(clips)
    for (rgb, alpha), rate, clip_durations, info, clip_times in zip(clips, fps, timed, roots, times, strict=True):
        arr, a = rgb_alpha(rgb, alpha, mask_is)
        durations = durations_for(len(arr), rate, clip_durations)
        t, h, w = a.shape
        root = np.full((t, 2), np.nan) if info is None else root_motion_px(info, t, w, h, clip_times)
        pivot = np.full((t, 2), np.nan) if info is None else pivot_px(info, t, w, h, clip_times)
        pivot[np.isnan(pivot).any(axis=1)] = (w / 2.0, float(h))  # unknown: the bottom centre (the feet)
        if merge_holds:
            keep, durations = playback.collapse_holds(arr, a, durations)
            arr, a, root, pivot = arr[keep], a[keep], root[keep], pivot[keep]
        prepared.append((sheet.to_rgba8(arr, a), durations, root, pivot))
    height = max(p[0].shape[1] for p in prepared)
    width = max(p[0].shape[2] for p in prepared)
    padded = [_pad_to(p[0], height, width) for p in prepared]
    rgba = np.concatenate([frames for frames, _ in padded])
    pivots = np.concatenate([p[3] + shift for p, (_, shift) in zip(prepared, padded, strict=True)])
    durations = np.concatenate([p[1] for p in prepared])
    runs = sheet.animation_runs(names, [len(p[0]) for p in prepared]) if named else ()
    return sheet.build_sheet(
        rgba,
        durations,
        columns,
        layout,
        padding,
        extrude,
        power_of_two,
        name,
        progress,
        animations=runs,
        root_motion=np.concatenate([p[2] for p in prepared]),
        pivots=pivots,
    )


def write_sheet(
    built: sheet.Sheet, directory: str | os.PathLike[str], name: str, formats: tuple[str, ...]
) -> list[Path]:
    """Save the sheet PNG and one atlas file per format under ``directory`` (names confined)."""
    from ...core.atomic import write_text_atomic
    from ...core.paths import confined, sanitize_relative

    rel = sanitize_relative(name)
    png = export.save_png(built.rgba, directory, rel)
    image = png.name
    written = [png]
    for fmt in formats:
        if fmt not in sheet.ATLAS_FORMATS:
            raise InputError(f"Unknown atlas format {fmt!r}; choose from {', '.join(sheet.ATLAS_FORMATS)}.")
        target = confined(directory, rel + sheet.ATLAS_SUFFIX[fmt])
        written.append(write_text_atomic(target, sheet.atlas_text(built, fmt, image)))
    return written


HIPS = (OPENPOSE_18.index("r_hip"), OPENPOSE_18.index("l_hip"))


def rig_root_x(pose: Any, width: int, height: int) -> np.ndarray:
    """Per-frame x of the rig root (mid-hip of the first person) in pixels of a ``width`` x ``height`` frame.

    POSE_KEYPOINT coordinates are fractions of the pose canvas, so they scale to any frame size.
    NaN where either hip is hidden (or the frame holds nobody).
    """
    points, visible = joints_from_pose(pose, width, height)
    if points.shape[1] <= max(HIPS):
        return np.full(len(points), np.nan)
    hips = visible[:, HIPS].all(axis=1)
    return np.where(hips, points[:, HIPS, 0].mean(axis=1), np.nan)


def stabilise(
    rgb: Any, alpha: Any, mask_is: str = "alpha", pose_keypoint: Any | None = None, **kwargs: Any
) -> anchor.Stabilised:
    """:func:`.anchor.stabilise` on tensors (alpha from ``alpha``, a 4th channel, or opaque).

    With ``pose_keypoint`` (the POSE_KEYPOINT the clip was rendered from) x is the rig root's.
    """
    arr, a = rgb_alpha(rgb, alpha, mask_is)
    if pose_keypoint is not None:
        kwargs["root_x"] = rig_root_x(pose_keypoint, arr.shape[2], arr.shape[1])
    return anchor.stabilise(arr, a, **kwargs)


def pixelate_clips(
    clips: list[tuple[Any, Any | None]], width: int, height: int, mask_is: str = "alpha", **kwargs: Any
) -> list[tuple[np.ndarray, np.ndarray, Any]]:
    """:func:`.pixelart.pixelate_clips` on ``(image, mask)`` tensor pairs; numpy ``[(rgb, alpha, palette)]``."""
    return pixelart.pixelate_clips([rgb_alpha(rgb, alpha, mask_is) for rgb, alpha in clips], width, height, **kwargs)


def export_animation(
    rgb: Any,
    alpha: Any | None,
    directory: str | os.PathLike[str],
    name: str,
    fmt: str = "gif",
    fps: float = 12.0,
    durations_ms: Any | None = None,
    loop: int = 0,
    progress: ProgressFn | None = None,
    mask_is: str = "alpha",
) -> list[Path]:
    """Encode tensors with :func:`.export.save_animation` (durations from ``fps`` or ``durations_ms``)."""
    arr, a = rgb_alpha(rgb, alpha, mask_is)
    durations = [int(round(d)) for d in durations_for(len(arr), fps, durations_ms)]
    return export.save_animation(fmt, sheet.to_rgba8(arr, a), durations, directory, name, loop, progress)
