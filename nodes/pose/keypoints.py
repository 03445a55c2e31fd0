"""POSE_KEYPOINT exactly as comfyui_controlnet_aux emits it, and the reader the timing and sprite nodes share.

One dict per frame: ``{"people": [{"pose_keypoints_2d": [x, y, c] * 18, "face_keypoints_2d": None,
"hand_left_keypoints_2d": None, "hand_right_keypoints_2d": None}], "canvas_height": H,
"canvas_width": W}`` with x, y divided by W and H.  A drawn point has c = 1.0; a hidden one is
``0, 0, 0`` (controlnet_aux's readers drop anything with c < 1).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ...core.errors import InputError


def _flat(points: np.ndarray, visible: np.ndarray, scale: np.ndarray) -> list[float]:
    flat: list[float] = []
    for (x, y), v in zip(points / scale, visible, strict=True):
        flat.extend((float(x), float(y), 1.0) if v else (0.0, 0.0, 0.0))
    return flat


def pose_keypoint_frames(
    xy: np.ndarray,
    visible: np.ndarray,
    width: int,
    height: int,
    hands_xy: np.ndarray | None = None,
    hands_visible: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """Pixel points (F, 18, 2) and visibility (F, 18) → the POSE_KEYPOINT list.

    ``hands_xy`` (F, 2, 21, 2) with ``hands_visible`` (left, right) fill the hand lists (63 values).
    """
    frames: list[dict[str, Any]] = []
    scale = np.array([float(width), float(height)])
    for f, (pts, vis) in enumerate(zip(xy, visible, strict=True)):
        hands = [None, None]
        if hands_xy is not None and hands_visible is not None:
            hands = [_flat(hands_xy[f, side], hands_visible[f, side], scale) for side in range(2)]
        person = {
            "pose_keypoints_2d": _flat(pts, vis, scale),
            "face_keypoints_2d": None,
            "hand_left_keypoints_2d": hands[0],
            "hand_right_keypoints_2d": hands[1],
        }
        frames.append({"people": [person], "canvas_height": int(height), "canvas_width": int(width)})
    return frames


def joints_from_pose(pose: Any, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """POSE_KEYPOINT (first person per frame) → pixel points ``[T,J,2]`` and visibility ``[T,J]``."""
    if not isinstance(pose, list | tuple) or not pose:
        raise InputError("The pose input must be a POSE_KEYPOINT list with one entry per frame.")
    points, visible = [], []
    for frame in pose:
        people = frame.get("people") or [] if isinstance(frame, dict) else []
        flat = (people[0].get("pose_keypoints_2d") or []) if people else []
        array = np.asarray(flat, np.float64).reshape(-1, 3) if flat else np.zeros((18, 3))
        points.append(array[:, :2] * (width, height))
        visible.append(array[:, 2] > 0)
    joints = max(len(p) for p in points)
    pts = np.zeros((len(points), joints, 2))
    vis = np.zeros((len(points), joints), bool)
    for i, (p, v) in enumerate(zip(points, visible, strict=True)):
        pts[i, : len(p)], vis[i, : len(v)] = p, v
    return pts, vis


def keypoints_json(pose_keypoint: Any) -> str:
    """``pose_keypoint`` as JSON text; numpy arrays and numbers (some packs' keypoints hold them) as plain lists and
    numbers.  NaN and infinities are refused (InputError): JSON has no such values, and OpenPose readers refuse the
    file that holds them."""

    def plain(value: Any) -> Any:
        if isinstance(value, np.ndarray | np.generic):
            return value.tolist()
        raise InputError(
            f"pose_keypoint holds a value of type {type(value).__name__}, which is no keypoint data: connect the "
            "POSE_KEYPOINT output of an OpenPose or GameAnim pose node."
        )

    try:
        return json.dumps(pose_keypoint, allow_nan=False, default=plain)
    except InputError:  # an InputError is a ValueError too
        raise
    except ValueError:
        raise InputError(
            "pose_keypoint holds NaN or infinite coordinates, which a JSON file cannot store: the node before this "
            "one produced broken keypoints. Fix that node, or mark a missing keypoint as OpenPose does (x = y = 0, "
            "confidence 0)."
        ) from None
