"""POSE_KEYPOINT exactly as comfyui_controlnet_aux emits it, and its reader's acceptance rules.

One dict per frame: ``{"people": [{"pose_keypoints_2d": [x, y, c] * 18, "face_keypoints_2d": None,
"hand_left_keypoints_2d": None, "hand_right_keypoints_2d": None}], "canvas_height": H,
"canvas_width": W}`` with x, y divided by W and H.  A drawn point has c = 1.0; a hidden one is
``0, 0, 0`` (controlnet_aux's readers drop anything with c < 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def pose_keypoint_frames(xy: np.ndarray, visible: np.ndarray, width: int, height: int) -> list[dict[str, Any]]:
    """Pixel points (F, 18, 2) and visibility (F, 18) → the POSE_KEYPOINT list."""
    frames: list[dict[str, Any]] = []
    scale = np.array([float(width), float(height)])
    for pts, vis in zip(xy, visible, strict=True):
        flat: list[float] = []
        for (x, y), v in zip(pts / scale, vis, strict=True):
            flat.extend((float(x), float(y), 1.0) if v else (0.0, 0.0, 0.0))
        person = {
            "pose_keypoints_2d": flat,
            "face_keypoints_2d": None,
            "hand_left_keypoints_2d": None,
            "hand_right_keypoints_2d": None,
        }
        frames.append({"people": [person], "canvas_height": int(height), "canvas_width": int(width)})
    return frames
