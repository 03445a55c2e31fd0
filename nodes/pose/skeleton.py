"""Rig bones → the 18 OpenPose (COCO) body points in 3-D, with face points from the head bone.

OpenPose's right/left are the *person's* right/left, and rig bone names (Mixamo ``RightArm``, CMU
``RightArm`` / ``rhumerus``) name the *character's* side, so sides map directly: the colours
always follow the rig's true sides, never a guess from the image.

Nose, eyes and ears are placed on the head in the rest pose (a frame built from the head bone and
the shoulders), stored in the head joint's rest space and carried by its world rotation every
frame, which is independent of bone-roll conventions.  Each face point keeps an outward normal so
the renderer can hide points that face away from the camera.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import InputError
from .joint_tracks import Motion, read_json_file

OPENPOSE_18 = (
    "nose", "neck", "r_shoulder", "r_elbow", "r_wrist", "l_shoulder", "l_elbow", "l_wrist",
    "r_hip", "r_knee", "r_ankle", "l_hip", "l_knee", "l_ankle", "r_eye", "l_eye", "r_ear", "l_ear",
)  # fmt: skip
BODY_POINTS = OPENPOSE_18[1:14]
FACE_POINTS = ("nose", "r_eye", "l_eye", "r_ear", "l_ear")
FACE_INDEX = tuple(OPENPOSE_18.index(n) for n in FACE_POINTS)
MAPPING_KEYS = frozenset(BODY_POINTS) | {"head", "head_top", "nose", "r_eye", "l_eye"}

_BODY_SHARED = {
    "neck": ["RightArm", "LeftArm"],
    "r_shoulder": "RightArm", "r_elbow": "RightForeArm", "r_wrist": "RightHand",
    "l_shoulder": "LeftArm", "l_elbow": "LeftForeArm", "l_wrist": "LeftHand",
    "r_hip": "RightUpLeg", "r_knee": "RightLeg", "r_ankle": "RightFoot",
    "l_hip": "LeftUpLeg", "l_knee": "LeftLeg", "l_ankle": "LeftFoot",
    "head": "Head",
}  # fmt: skip

BUILTIN_MAPPINGS: dict[str, dict[str, Any]] = {
    # Mixamo: the neck point is the shoulder midpoint (COCO convention), not Neck.head.
    "mixamo": {**_BODY_SHARED, "head_top": "HeadTop_End", "r_eye": "RightEye", "l_eye": "LeftEye"},
    # CMU mocap BVH as converted by cgspeed / Bruce Hahne (Mixamo-like names, head tip is an End Site).
    "cmu": {**_BODY_SHARED, "head_top": "Head_End"},
    # CMU ASF/AMC names (amc2bvh conversions).
    "cmu_asf": {
        "neck": ["rhumerus", "lhumerus"],
        "r_shoulder": "rhumerus",
        "r_elbow": "rradius",
        "r_wrist": "rwrist",
        "l_shoulder": "lhumerus",
        "l_elbow": "lradius",
        "l_wrist": "lwrist",
        "r_hip": "rfemur",
        "r_knee": "rtibia",
        "r_ankle": "rfoot",
        "l_hip": "lfemur",
        "l_knee": "ltibia",
        "l_ankle": "lfoot",
        "head": "head",
        "head_top": "head_End",
    },  # fmt: skip
}
REQUIRED_KEYS = (*BODY_POINTS, "head")
OPTIONAL_KEYS = ("head_top", "nose", "r_eye", "l_eye")

# Face layout in head lengths L (head joint → head top) and R = 0.45 L, relative to the head joint.
_FACE_LAYOUT = {  # (up, forward, left) coefficients
    "nose": (0.40, 1.0 * 0.45, 0.0),
    "r_eye": (0.52, 0.85 * 0.45, -0.35 * 0.45),
    "l_eye": (0.52, 0.85 * 0.45, 0.35 * 0.45),
    "r_ear": (0.45, 0.0, -0.95 * 0.45),
    "l_ear": (0.45, 0.0, 0.95 * 0.45),
}
_HEAD_CENTRE_UP = 0.45
FINGERS = ("Thumb", "Index", "Middle", "Ring", "Pinky")
_PREFIX = re.compile(r"^(?:.*:|mixamorig\d*_)")


@dataclass
class Pose3D:
    """The 18 OpenPose points in 3-D per frame, plus what cameras and renderers need.

    ``points`` (F, 18, 3) Y-up world; ``normals`` (F, 18, 3) outward normals of face points (zero
    for body points); ``head_centre`` (F, 3); ``root`` (F, 3) for camera follow; ``forward`` and
    ``up`` the rig's facing and up directions in the rest pose; ``head_radius`` and ``height`` in
    world units (for capsules and fitting).
    """

    points: np.ndarray
    normals: np.ndarray
    head_centre: np.ndarray
    root: np.ndarray
    forward: np.ndarray
    up: np.ndarray
    head_radius: float
    height: float
    fps: float
    frame_numbers: np.ndarray
    mapping: str
    hands: np.ndarray | None = None  # (F, 2, 21, 3): left hand, right hand (OpenPose hand order)

    @property
    def frame_count(self) -> int:
        return int(self.points.shape[0])


def bare_name(name: str) -> str:
    """A bone name without its namespace (``mixamorig:Hips`` → ``Hips``, ``mixamorig1_Hips`` → ``Hips``)."""
    return _PREFIX.sub("", name)


def _index(names: list[str]) -> dict[str, int]:
    table: dict[str, int] = {}
    for i, name in enumerate(names):
        for key in (name, bare_name(name), bare_name(name).lower()):
            table.setdefault(key, i)
    return table


def _lookup(table: dict[str, int], joint: str) -> int | None:
    for key in (joint, bare_name(joint), bare_name(joint).lower()):
        if key in table:
            return table[key]
    return None


def _missing(table: dict[str, int], mapping: dict[str, Any]) -> list[str]:
    missing: list[str] = []
    for key in REQUIRED_KEYS:
        joints = mapping.get(key)
        for joint in [joints] if isinstance(joints, str) else list(joints or [None]):
            if joint is None or _lookup(table, joint) is None:
                missing.append(f"{key}←{joint}")
    return missing


def validate_mapping(mapping: Any, source: str) -> dict[str, Any]:
    """Check a user mapping: keys from :data:`MAPPING_KEYS`, values a joint name or a list of two."""
    if isinstance(mapping, dict) and isinstance(mapping.get("joints"), dict):
        mapping = mapping["joints"]
    if not isinstance(mapping, dict):
        raise InputError(
            f'{source}: a skeleton mapping must be a JSON object {{"joints": {{"r_shoulder": "RightArm", ...}}}}'
        )
    unknown = sorted(set(mapping) - MAPPING_KEYS)
    if unknown:
        raise InputError(f"{source}: unknown mapping keys {unknown}; allowed keys are {sorted(MAPPING_KEYS)}")
    absent = [k for k in REQUIRED_KEYS if k not in mapping]
    if absent:
        raise InputError(
            f"{source}: the mapping lacks required keys {absent} (every body point and 'head' must be mapped)"
        )
    for key, value in mapping.items():
        ok = isinstance(value, str) or (
            isinstance(value, list) and 1 <= len(value) <= 2 and all(isinstance(v, str) for v in value)
        )
        if not ok:
            raise InputError(
                f"{source}: mapping value for {key!r} must be a joint name or a list of one or two joint names, got {value!r}"
            )
    return dict(mapping)


def load_mapping(path: str | Path) -> dict[str, Any]:
    """Read a user skeleton mapping JSON file (see docs/pose.md)."""
    path = Path(path)
    return validate_mapping(read_json_file(path, f"Skeleton mapping file not found: {path}"), path.name)


def resolve_mapping(names: list[str], mapping: str | dict[str, Any] = "auto") -> tuple[str, dict[str, Any]]:
    """Pick the mapping for a rig: a built-in by name, ``auto`` (the fitting built-in that finds most
    optional joints) or a dict.

    Raises an :class:`InputError` naming, per mapping tried, the joints the rig lacks.
    """
    table = _index(names)
    if isinstance(mapping, dict):
        candidates = {"custom": validate_mapping(mapping, "custom mapping")}
    elif mapping == "auto":
        candidates = BUILTIN_MAPPINGS
    elif mapping in BUILTIN_MAPPINGS:
        candidates = {mapping: BUILTIN_MAPPINGS[mapping]}
    else:
        raise InputError(
            f"Unknown skeleton mapping {mapping!r}; choose auto, {', '.join(BUILTIN_MAPPINGS)} or give a mapping JSON file."
        )
    report = []
    fitting: list[tuple[int, str]] = []
    for name, candidate in candidates.items():
        missing = _missing(table, candidate)
        if missing:
            report.append(f"mapping '{name}' is missing {', '.join(missing)}")
            continue
        optional = [candidate.get(k) for k in OPTIONAL_KEYS]
        fitting.append((sum(isinstance(j, str) and _lookup(table, j) is not None for j in optional), name))
    if fitting:  # the fitting mapping that also finds most optional joints (head top, eyes) wins
        best = max(fitting, key=lambda t: t[0])[1]
        return best, candidates[best]
    shown = ", ".join(bare_name(n) for n in names[:40]) + (" …" if len(names) > 40 else "")
    raise InputError(
        "The rig's bone names do not fit the skeleton mapping: "
        + "; ".join(report)
        + f". The rig has joints: {shown}. Pick another mapping or supply a mapping JSON file for this rig (docs/pose.md, 'Skeleton mappings')."
    )


def _joint_points(arr: np.ndarray, table: dict[str, int], value: str | list[str]) -> np.ndarray:
    joints = [value] if isinstance(value, str) else value
    idx = [_lookup(table, j) for j in joints]
    return arr[..., idx, :].mean(axis=-2)


def hand_joints(names: list[str], side: str) -> list[int] | None:
    """Joint indices of the 21 OpenPose hand points from Mixamo finger names, or None if any is missing.

    Point 0 is ``<Side>Hand``; each finger takes ``<Side>Hand<Finger>1..4`` (Mixamo's ``…4`` are
    fingertip end bones; without them the tip of ``…3`` is used: its BVH End Site or Blender tail).
    """
    table = _index(names)
    wrist = _lookup(table, f"{side}Hand")
    if wrist is None:
        return None
    found = [wrist]
    for finger in FINGERS:
        for k in range(1, 5):
            j = _lookup(table, f"{side}Hand{finger}{k}")
            if j is None and k == 4:
                j = _lookup(table, f"{side}Hand{finger}3_End")
            if j is None:
                return None
            found.append(j)
    return found


def _normalise(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(norm, 1e-12)


def pose3d_from_motion(motion: Motion, mapping: str | dict[str, Any] = "auto", hands: bool = True) -> Pose3D:
    """Map a motion's joints to the 18 OpenPose points (see the module docstring).

    With ``hands`` and a rig that has all Mixamo-named finger bones on both hands, the 21-point
    OpenPose hands are added too (:func:`hand_joints`).
    """
    name, spec = resolve_mapping(motion.names, mapping)
    table = _index(motion.names)
    n_frames = motion.frame_count
    points = np.zeros((n_frames, 18, 3))
    for key in BODY_POINTS:
        points[:, OPENPOSE_18.index(key)] = _joint_points(motion.positions, table, spec[key])

    head_i = _lookup(table, spec["head"])
    head_rest = motion.rest_positions[head_i]
    top_name = spec.get("head_top")
    top_i = _lookup(table, top_name) if isinstance(top_name, str) else None
    if top_i is None:  # fall back to the head's first child, then to the neck → head direction
        children = [i for i, p in enumerate(motion.parents) if p == head_i]
        top_i = children[0] if children else None
    if top_i is not None and np.linalg.norm(motion.rest_positions[top_i] - head_rest) > 1e-9:
        up_vec = motion.rest_positions[top_i] - head_rest
    else:
        parent = motion.parents[head_i]
        up_vec = head_rest - motion.rest_positions[parent] if parent >= 0 else np.array([0.0, 1.0, 0.0])
    head_len = float(np.linalg.norm(up_vec))
    up = _normalise(up_vec)
    left = _joint_points(motion.rest_positions, table, spec["l_shoulder"]) - _joint_points(
        motion.rest_positions, table, spec["r_shoulder"]
    )
    left = _normalise(left - up * np.dot(left, up))
    forward = np.cross(left, up)

    rest_rot_t = motion.rest_rotations[head_i].T
    head_pos = motion.positions[:, head_i]
    head_rot = motion.rotations[:, head_i]
    for key, (cu, cf, cl) in _FACE_LAYOUT.items():
        explicit = spec.get(key)
        idx = OPENPOSE_18.index(key)
        offset = head_len * (cu * up + cf * forward + cl * left)
        if isinstance(explicit, str) and _lookup(table, explicit) is not None:
            points[:, idx] = _joint_points(motion.positions, table, explicit)
        else:
            local = rest_rot_t @ offset
            points[:, idx] = head_pos + np.einsum("fij,j->fi", head_rot, local)
    centre_local = rest_rot_t @ (head_len * _HEAD_CENTRE_UP * up)
    head_centre = head_pos + np.einsum("fij,j->fi", head_rot, centre_local)
    normals = np.zeros_like(points)
    for idx in FACE_INDEX:
        normals[:, idx] = _normalise(points[:, idx] - head_centre)

    world_up = np.array([0.0, 1.0, 0.0])
    ground_forward = forward - world_up * np.dot(forward, world_up)
    forward_flat = _normalise(ground_forward) if np.linalg.norm(ground_forward) > 1e-6 else np.array([0.0, 0.0, 1.0])
    rest_body = motion.rest_positions
    height = float(np.ptp(rest_body[:, 1])) or head_len * 8.0
    root = motion.positions[:, 0]
    hand_points = None
    if hands:
        sides = [hand_joints(motion.names, side) for side in ("Left", "Right")]
        if all(idx is not None for idx in sides):
            hand_points = np.stack([motion.positions[:, idx] for idx in sides], axis=1)
    return Pose3D(
        points,
        normals,
        head_centre,
        root,
        forward_flat,
        world_up,
        0.5 * head_len,
        height,
        motion.fps,
        motion.frame_numbers,
        name,
        hand_points,
    )
