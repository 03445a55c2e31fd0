"""The stable Python API of GameAnim, for headless scripts and outside checks.

Import the pack by path (see the README's "Python API") and call these functions; they never need
ComfyUI.  Signatures here are a contract: new parameters get defaults, nothing is renamed.
Long functions accept ``progress``: a callable ``(done, total)`` that may raise to cancel (for
example :meth:`CancelToken.progress`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import GameAnimError, InputError, ModelFileError, NumericalError, UnsafePathError
from .progress import Cancelled, CancelToken, ProgressFn

__version__ = "0.1.0"


def _pose_from_file(
    path: str | Path, camera: str, width: int, height: int, frames: Any, progress: ProgressFn | None
) -> tuple[Any, list[dict[str, Any]]]:
    import torch

    from .nodes.pose.render_motion import CameraSettings, render_motion_file

    settings = CameraSettings(preset=camera, width=width, height=height)
    result = render_motion_file(path, settings, frames, progress=progress, as_float=True)
    return torch.from_numpy(result.pose_maps), result.keypoints


def pose_from_bvh(
    path: str | Path,
    camera: str = "side_right",
    width: int = 512,
    height: int = 512,
    frames: Any = None,
    *,
    progress: ProgressFn | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """Render a BVH motion to orientation-true OpenPose maps, with no Blender and no weights.

    ``camera`` is a preset (front, back, side_left, side_right, three_quarter, top; orthographic,
    auto-fitted to the whole motion); ``frames`` is None (all), an int n (first n), a
    ``(start, stop, step)`` tuple or a list of frame indices.  The skeleton mapping is detected
    (Mixamo, CMU).  Returns ``(pose_images, pose_keypoint)``: a float32 tensor ``[T, H, W, 3]`` in
    0..1 (ComfyUI IMAGE) and the POSE_KEYPOINT list exactly as comfyui_controlnet_aux emits it.
    """
    return _pose_from_file(path, camera, width, height, frames, progress)


def pose_from_motion_json(
    path: str | Path,
    camera: str = "side_right",
    width: int = 512,
    height: int = 512,
    frames: Any = None,
    *,
    progress: ProgressFn | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """Like :func:`pose_from_bvh` for a GameAnim JSON motion file (written by the Blender worker or
    the in-Blender export script ``nodes/pose/blender/gameanim_export_motion.py``)."""
    return _pose_from_file(path, camera, width, height, frames, progress)


__all__ = [
    "CancelToken",
    "Cancelled",
    "GameAnimError",
    "InputError",
    "ModelFileError",
    "NumericalError",
    "UnsafePathError",
    "__version__",
    "pose_from_bvh",
    "pose_from_motion_json",
]
