"""Make rig renders meet Wan 2.1 VACE's control-video conventions.

Wan's VAE compresses time by 4 (the first frame alone, then groups of 4), so a clip it can encode
without padding has ``4n + 1`` frames; sizes must be multiples of 16 (VAE stride 8 times the DiT's 2x2
patches); the models were trained on 16 fps video.  ComfyUI's ``WanVaceToVideo`` pads a short control
video with grey (0.5), which VACE reads as "no control here", so the control video must have exactly
the ``length`` it is given.  VACE's own pose/depth annotators draw on black, and its reference images
are placed on a white canvas (``prepare_source`` in the VACE code pads with ones), which this module
follows for the character reference.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ...core.errors import InputError
from .conditions import CameraSettings
from .skeleton import Pose3D

WAN_FPS = 16.0
WAN_SIZE_MULTIPLE = 16
WAN_TIME_STRIDE = 4
WAN_MAX_FRAMES = 81  # 5 s at 16 fps: what Wan 2.1 was trained on and what the ComfyUI templates use
LENGTH_RULES = ("fit_whole_motion", "keep_speed")


def snap_size(value: int, multiple: int = WAN_SIZE_MULTIPLE) -> int:
    """The nearest multiple of ``multiple`` (at least one multiple)."""
    return max(multiple, int(round(value / multiple)) * multiple)


def wan_frame_count(frames: float, max_frames: int = WAN_MAX_FRAMES) -> int:
    """The nearest ``4n + 1`` count to ``frames``, at least 5 and at most the largest ``4n + 1`` <= ``max_frames``."""
    if max_frames < WAN_TIME_STRIDE + 1:
        raise InputError(f"max_frames must be at least {WAN_TIME_STRIDE + 1} (one Wan latent group), got {max_frames}.")
    top = (max_frames - 1) // WAN_TIME_STRIDE
    groups = int(math.floor((frames - 1) / WAN_TIME_STRIDE + 0.5))
    return WAN_TIME_STRIDE * min(max(groups, 1), top) + 1


def sample_times(source_times: np.ndarray, fps: float, max_frames: int, length_rule: str) -> np.ndarray:
    """Times (seconds from the first frame) at which to sample a motion for a Wan control video.

    ``fit_whole_motion`` spreads the whole motion over the nearest ``4n + 1`` frames, so a loop cycle
    stays a whole cycle (its speed changes by at most half a group, under 3 % for a 5-second clip);
    ``keep_speed`` samples at exactly ``fps`` and drops the tail that does not fill a group.  A motion
    longer than ``max_frames`` at ``fps`` is cut to that length in both rules, at its own speed.
    """
    if length_rule not in LENGTH_RULES:
        raise InputError(f"Unknown length rule {length_rule!r}; choose one of {', '.join(LENGTH_RULES)}.")
    if fps <= 0:
        raise InputError(f"fps must be positive, got {fps}.")
    duration = float(source_times[-1] - source_times[0])
    natural = duration * fps + 1.0
    if length_rule == "keep_speed" or natural > max_frames:
        groups = math.floor((min(natural, max_frames) - 1) / WAN_TIME_STRIDE + 1e-9)
        return np.arange(WAN_TIME_STRIDE * max(groups, 1) + 1) / fps
    count = wan_frame_count(natural, max_frames)
    return np.linspace(0.0, duration, count)


def _interpolate(values: np.ndarray, source: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Per-frame linear interpolation of an (F, ...) array at ``times`` (held at both ends)."""
    index = np.clip(np.searchsorted(source, times, side="right") - 1, 0, len(source) - 1)
    upper = np.minimum(index + 1, len(source) - 1)
    span = np.where(upper > index, source[upper] - source[index], 1.0)
    weight = np.clip((times - source[index]) / span, 0.0, 1.0).reshape(-1, *([1] * (values.ndim - 1)))
    return values[index] * (1.0 - weight) + values[upper] * weight


def resample_pose(pose: Pose3D, fps: float, max_frames: int, length_rule: str) -> Pose3D:
    """The motion resampled for Wan: ``4n + 1`` frames at ``fps`` (see :func:`sample_times`).

    Points are interpolated linearly between neighbouring frames; face normals are interpolated and
    re-normalised.  ``frame_numbers`` become the nearest source frames so Blender-based renders
    (Render Rig Mesh) pick the frames that match.
    """
    source = pose.frame_numbers.astype(np.float64) / pose.fps
    source = source - source[0]
    if np.any(np.diff(source) <= 0):
        raise InputError("The motion's frame numbers must increase to resample it in time.")
    times = sample_times(source, fps, max_frames, length_rule)  # a single frame is held for one group
    normals = _interpolate(pose.normals, source, times)
    length = np.linalg.norm(normals, axis=-1, keepdims=True)
    normals = np.divide(normals, length, out=np.zeros_like(normals), where=length > 1e-9)
    right = np.clip(np.searchsorted(source, times), 0, pose.frame_count - 1)
    left = np.maximum(right - 1, 0)
    nearest = np.where(np.abs(times - source[left]) <= np.abs(source[right] - times), left, right)
    return replace(
        pose,
        points=_interpolate(pose.points, source, times),
        normals=normals,
        head_centre=_interpolate(pose.head_centre, source, times),
        root=_interpolate(pose.root, source, times),
        hands=None if pose.hands is None else _interpolate(pose.hands, source, times),
        fps=float(fps),
        frame_numbers=pose.frame_numbers[nearest],
    )


def fit_camera(settings: CameraSettings) -> CameraSettings:
    """The same camera with width and height snapped to multiples of 16."""
    return replace(settings, width=snap_size(settings.width), height=snap_size(settings.height))


def reference_on_canvas(image: Any, width: int, height: int, mask: Any = None, margin: float = 0.05) -> Any:
    """The first frame of an IMAGE batch scaled to fit ``width`` x ``height`` whole, centred on white.

    ``WanVaceToVideo`` centre-crops a reference of another shape, which can cut off a character's head
    or feet; letterboxing keeps all of it.  Transparent pixels (from ``mask`` = alpha, 1 = opaque, or an
    RGBA image) become white, as VACE expects of a subject reference.  Returns a [1, H, W, 3] tensor.
    """
    import torch
    import torch.nn.functional as F

    if image.ndim != 4 or image.shape[-1] not in (3, 4):
        raise InputError(f"The reference must be an IMAGE [frames, height, width, 3 or 4], got {tuple(image.shape)}.")
    frame = image[:1].float()
    alpha = frame[..., 3:] if frame.shape[-1] == 4 else torch.ones_like(frame[..., :1])
    if mask is not None:
        m = mask[:1].float()
        m = m if m.ndim == 4 else m[..., None]
        if m.shape[1:3] != frame.shape[1:3]:
            raise InputError(f"The reference mask is {tuple(m.shape[1:3])} but the image is {tuple(frame.shape[1:3])}.")
        alpha = alpha * m
    rgb = frame[..., :3] * alpha + (1.0 - alpha)
    src_h, src_w = rgb.shape[1:3]
    scale = min(width * (1 - 2 * margin) / src_w, height * (1 - 2 * margin) / src_h)
    new_w, new_h = max(1, round(src_w * scale)), max(1, round(src_h * scale))
    scaled = F.interpolate(
        rgb.movedim(-1, 1), size=(new_h, new_w), mode="bilinear", antialias=True, align_corners=False
    )
    canvas = torch.ones((1, 3, height, width), dtype=scaled.dtype)
    top, left = (height - new_h) // 2, (width - new_w) // 2
    canvas[:, :, top : top + new_h, left : left + new_w] = scaled.clamp(0.0, 1.0)
    return canvas.movedim(1, -1)
