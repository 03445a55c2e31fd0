"""One motion representation for every source: world joint positions and rotations per frame.

BVH files, our JSON motion files (written by the Blender worker and the in-Blender export script)
and anything else end up as a :class:`Motion` in a Y-up world, so the skeleton mapping and cameras
never care where the motion came from.  Rotations are world-space 3×3 matrices; only their change
from the rest pose is used (for the face points), so a rig's bone-roll convention does not matter.

JSON motion format (``"format": "gameanim-motion"``, ``"version": 1``)::

    {"format": "gameanim-motion", "version": 1, "up": "Z", "fps": 30.0, "source": "run.fbx",
     "joints": ["mixamorig:Hips", ...], "parents": [-1, 0, ...],
     "rest": {"positions": [[x, y, z], ...], "rotations": [[[...3x3...]], ...]},
     "frames": [{"frame": 1, "positions": [[x, y, z], ...], "rotations": [[[...]], ...]}, ...]}

``up`` is the source's up axis (``"Y"`` or ``"Z"``; Blender is Z-up); units are free (the cameras
auto-fit).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import InputError
from .bvh import forward_kinematics, read_bvh, rest_pose

MOTION_FORMAT = "gameanim-motion"
MOTION_VERSION = 1

# Z-up (Blender) → Y-up: (x, y, z) → (x, z, -y); a proper rotation, so handedness is kept.
_Z_TO_Y = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


@dataclass
class Motion:
    """Joint world positions ``(F, N, 3)`` and rotations ``(F, N, 3, 3)`` in a Y-up world."""

    names: list[str]
    parents: list[int]
    positions: np.ndarray
    rotations: np.ndarray
    rest_positions: np.ndarray
    rest_rotations: np.ndarray
    fps: float
    source: str
    frame_numbers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def frame_count(self) -> int:
        return int(self.positions.shape[0])


def select_frames(total: int, frames: Any) -> np.ndarray:
    """Frame indices chosen by ``frames``.

    ``None`` → all; an ``int`` n → the first n; a ``(start, stop, step)`` tuple or a ``slice`` →
    that range (stop exclusive, ``None`` or -1 = to the end); a list of ints → those frames.
    """
    if frames is None:
        picked = np.arange(total)
    elif isinstance(frames, bool):
        raise InputError(f"frames must be None, an int, (start, stop, step) or a list of ints, got {frames!r}")
    elif isinstance(frames, int):
        picked = np.arange(min(max(frames, 0), total))
    elif isinstance(frames, slice):
        picked = np.arange(total)[frames]
    elif isinstance(frames, tuple) and len(frames) == 3 and all(v is None or isinstance(v, int) for v in frames):
        start, stop, step = frames
        stop = None if stop is None or stop < 0 else stop
        if step is not None and step < 1:
            raise InputError(f"frame step must be >= 1, got {step}")
        picked = np.arange(total)[slice(start, stop, step)]
    else:
        try:
            picked = np.asarray(list(frames), dtype=np.int64)
        except (TypeError, ValueError):
            raise InputError(
                f"frames must be None, an int, (start, stop, step) or a list of ints, got {frames!r}"
            ) from None
        if picked.size and (picked.min() < 0 or picked.max() >= total):
            raise InputError(f"frame indices must lie in 0..{total - 1}, got {picked.min()}..{picked.max()}")
    if picked.size == 0:
        raise InputError(f"the frame selection {frames!r} picks no frame of a {total}-frame motion")
    return picked


def motion_from_bvh(path: str | Path, frames: Any = None) -> Motion:
    """Read a BVH file (Y-up by convention) and run forward kinematics on the selected frames."""
    skel = read_bvh(path)
    picked = select_frames(skel.frame_count, frames)
    positions, rotations = forward_kinematics(skel, picked)
    rest_p, rest_r = rest_pose(skel)
    return Motion(
        skel.names, skel.parents, positions, rotations, rest_p, rest_r, 1.0 / skel.frame_time, skel.source, picked
    )


def _array(data: Any, shape_tail: tuple[int, ...], what: str, source: str) -> np.ndarray:
    try:
        arr = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{source}: {what} must be a list of numbers arrays") from None
    if arr.shape[-len(shape_tail) :] != shape_tail or not np.isfinite(arr).all():
        raise InputError(
            f"{source}: {what} must have shape (..., {', '.join(map(str, shape_tail))}) with finite values, got {arr.shape}"
        )
    return arr


def motion_from_dict(data: dict[str, Any], source: str = "<motion>", frames: Any = None) -> Motion:
    """Build a :class:`Motion` from the JSON motion format (see the module docstring)."""
    if not isinstance(data, dict) or data.get("format") != MOTION_FORMAT:
        raise InputError(
            f'{source} is not a GameAnim motion file: expected a JSON object with "format": "{MOTION_FORMAT}". Export one with the Blender script (docs/pose.md).'
        )
    if data.get("version") != MOTION_VERSION:
        raise InputError(
            f"{source}: motion format version {data.get('version')!r} is not supported (expected {MOTION_VERSION})."
        )
    names = [str(n) for n in data.get("joints", [])]
    parents = [int(p) for p in data.get("parents", [-1] * len(names))]
    if not names or len(parents) != len(names):
        raise InputError(f"{source}: 'joints' and 'parents' must be non-empty lists of the same length")
    raw_frames = data.get("frames") or []
    if not raw_frames:
        raise InputError(f"{source}: the motion has no frames")
    picked = select_frames(len(raw_frames), frames)
    n = len(names)
    positions = _array([raw_frames[i]["positions"] for i in picked], (n, 3), "frames[*].positions", source)
    rotations = _array([raw_frames[i]["rotations"] for i in picked], (n, 3, 3), "frames[*].rotations", source)
    rest = data.get("rest") or {}
    rest_p = _array(rest.get("positions", raw_frames[0]["positions"]), (n, 3), "rest.positions", source)
    rest_r = _array(rest.get("rotations", raw_frames[0]["rotations"]), (n, 3, 3), "rest.rotations", source)
    up = str(data.get("up", "Y")).upper()
    if up not in ("Y", "Z"):
        raise InputError(f'{source}: \'up\' must be "Y" or "Z", got {up!r}')
    if up == "Z":
        positions, rest_p = positions @ _Z_TO_Y.T, rest_p @ _Z_TO_Y.T
        rotations, rest_r = _Z_TO_Y @ rotations, _Z_TO_Y @ rest_r
    numbers = np.asarray([int(raw_frames[i].get("frame", i)) for i in picked], dtype=np.int64)
    fps = float(data.get("fps", 30.0))
    return Motion(names, parents, positions, rotations, rest_p, rest_r, fps, str(data.get("source", source)), numbers)


def read_json_file(path: Path, missing: str) -> Any:
    """Parse a user's JSON file; ``missing`` is the error when it does not exist, bad JSON names the line."""
    if not path.is_file():
        raise InputError(missing)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path.name}, line {exc.lineno}: not valid JSON ({exc.msg})") from None


def motion_from_json(path: str | Path, frames: Any = None) -> Motion:
    """Read a JSON motion file written by the Blender worker or the in-Blender export script."""
    path = Path(path)
    missing = f"Motion file not found: {path}. Give the path of an existing .json motion file."
    return motion_from_dict(read_json_file(path, missing), path.name, frames)


def load_motion(path: str | Path, frames: Any = None) -> Motion:
    """Load a motion by file extension: ``.bvh`` in-process, ``.json`` motion files."""
    suffix = Path(path).suffix.lower()
    if suffix == ".bvh":
        return motion_from_bvh(path, frames)
    if suffix == ".json":
        return motion_from_json(path, frames)
    raise InputError(
        f"{Path(path).name}: unsupported motion file type {suffix!r}. Use .bvh or a .json motion file; .fbx/.blend go through the Blender worker."
    )
