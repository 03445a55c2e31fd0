"""Shared helpers for the pose tests: a BVH with known geometry and its analytic joint positions."""

from __future__ import annotations

import numpy as np

# name, parent, offset (cm, Y-up, facing +Z, character's left = +X)
JOINTS = [
    ("Hips", None, (0, 0, 0)),
    ("Spine", "Hips", (0, 20, 0)),
    ("Neck", "Spine", (0, 30, 0)),
    ("Head", "Neck", (0, 10, 0)),
    ("HeadTop_End", "Head", (0, 20, 0)),
    ("LeftShoulder", "Spine", (5, 25, 0)),
    ("LeftArm", "LeftShoulder", (15, 0, 0)),
    ("LeftForeArm", "LeftArm", (30, 0, 0)),
    ("LeftHand", "LeftForeArm", (25, 0, 0)),
    ("RightShoulder", "Spine", (-5, 25, 0)),
    ("RightArm", "RightShoulder", (-15, 0, 0)),
    ("RightForeArm", "RightArm", (-30, 0, 0)),
    ("RightHand", "RightForeArm", (-25, 0, 0)),
    ("LeftUpLeg", "Hips", (10, -5, 0)),
    ("LeftLeg", "LeftUpLeg", (0, -45, 0)),
    ("LeftFoot", "LeftLeg", (0, -45, 0)),
    ("RightUpLeg", "Hips", (-10, -5, 0)),
    ("RightLeg", "RightUpLeg", (0, -45, 0)),
    ("RightFoot", "RightLeg", (0, -45, 0)),
]
LEAVES = {"HeadTop_End", "LeftHand", "RightHand", "LeftFoot", "RightFoot"}
FINGER_NAMES = ("Thumb", "Index", "Middle", "Ring", "Pinky")


def finger_joints() -> list:
    """Mixamo-named finger chains (1..3 plus a …4 tip joint) spread along z, for both hands."""
    joints = []
    for side, sign in (("Left", 1), ("Right", -1)):
        for i, finger in enumerate(FINGER_NAMES):
            parent = f"{side}Hand"
            for k in range(1, 5):
                offset = (sign * 4.0, 0, 5.0 * (i - 2)) if k == 1 else (sign * 7.0, 0, 0)
                joints.append((f"{side}Hand{finger}{k}", parent, offset))
                parent = f"{side}Hand{finger}{k}"
    return joints


OPENPOSE_SOURCES = {  # index → joint(s) whose mean is the point
    1: ("RightArm", "LeftArm"), 2: ("RightArm",), 3: ("RightForeArm",), 4: ("RightHand",),
    5: ("LeftArm",), 6: ("LeftForeArm",), 7: ("LeftHand",), 8: ("RightUpLeg",), 9: ("RightLeg",),
    10: ("RightFoot",), 11: ("LeftUpLeg",), 12: ("LeftLeg",), 13: ("LeftFoot",),
}  # fmt: skip
HEAD_LENGTH = 20.0


def write_bvh(
    path,
    frames,
    prefix: str = "mixamorig:",
    rename: dict | None = None,
    head_end_site: bool = False,
    fingers: bool = False,
) -> None:
    """Write the skeleton; ``frames`` is a list of (root_xyz, yaw_degrees) with all other joints at rest.

    ``head_end_site`` replaces the HeadTop_End joint by an End Site of Head (CMU style).
    """
    rename = rename or {}
    joints = [j for j in JOINTS if not (head_end_site and j[0] == "HeadTop_End")] + (finger_joints() if fingers else [])
    children: dict = {}
    for name, parent, _ in joints:
        children.setdefault(parent, []).append(name)
    offsets = {name: off for name, _, off in joints}
    lines = ["HIERARCHY"]

    def emit(name: str, depth: int) -> None:
        pad = "  " * depth
        kind = "ROOT" if depth == 0 else "JOINT"
        lines.append(f"{pad}{kind} {prefix}{rename.get(name, name)}")
        lines.append(pad + "{")
        ox, oy, oz = offsets[name]
        lines.append(f"{pad}  OFFSET {ox} {oy} {oz}")
        chans = (
            "6 Xposition Yposition Zposition Zrotation Xrotation Yrotation"
            if depth == 0
            else "3 Zrotation Xrotation Yrotation"
        )
        lines.append(f"{pad}  CHANNELS {chans}")
        for child in children.get(name, []):
            emit(child, depth + 1)
        if (
            (name in LEAVES and not (fingers and name.endswith("Hand")))
            or (head_end_site and name == "Head")
            or name.endswith("4")
        ):
            end = "0 20 0" if name == "Head" else "0 1 0"
            lines.extend([f"{pad}  End Site", pad + "  {", f"{pad}    OFFSET {end}", pad + "  }"])
        lines.append(pad + "}")

    emit("Hips", 0)
    n_channels = 6 + 3 * (len(joints) - 1)
    lines += ["MOTION", f"Frames: {len(frames)}", "Frame Time: 0.0333333"]
    for (x, y, z), yaw in frames:
        values = [x, y, z, 0.0, 0.0, yaw] + [0.0] * (n_channels - 6)
        lines.append(" ".join(f"{v:.6f}" for v in values))
    path.write_text("\n".join(lines) + "\n")


def rest_positions() -> dict[str, np.ndarray]:
    every = JOINTS + finger_joints()
    parent = {name: p for name, p, _ in every}
    offsets = {name: np.array(off, dtype=float) for name, _, off in every}
    out: dict[str, np.ndarray] = {}
    for name, _, _ in every:
        out[name] = offsets[name] + (out[parent[name]] if parent[name] else 0.0)
    return out


def yaw_matrix(degrees: float) -> np.ndarray:
    a = np.deg2rad(degrees)
    return np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])


def analytic_points(root, yaw: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 18 OpenPose points, the head centre and the head-top fit point for one frame.

    Face points follow the documented layout: head length L (Head → HeadTop_End), R = 0.45 L;
    nose 0.40L up + R forward; eyes 0.52L up + 0.85R forward ± 0.35R left; ears 0.45L up ± 0.95R left.
    """
    rest = rest_positions()
    rot = yaw_matrix(yaw)
    root = np.asarray(root, dtype=float)

    def world(p):
        return root + rot @ p

    pts = np.zeros((18, 3))
    for idx, names in OPENPOSE_SOURCES.items():
        pts[idx] = np.mean([world(rest[n]) for n in names], axis=0)
    L, R = HEAD_LENGTH, 0.45 * HEAD_LENGTH
    up, fwd, left = np.array([0, 1.0, 0]), np.array([0, 0, 1.0]), np.array([1.0, 0, 0])
    head = rest["Head"]
    face = {
        0: 0.40 * L * up + R * fwd,
        14: 0.52 * L * up + 0.85 * R * fwd - 0.35 * R * left,
        15: 0.52 * L * up + 0.85 * R * fwd + 0.35 * R * left,
        16: 0.45 * L * up - 0.95 * R * left,
        17: 0.45 * L * up + 0.95 * R * left,
    }
    for idx, off in face.items():
        pts[idx] = world(head + off)
    centre = world(head + 0.45 * L * up)
    top = centre + 0.5 * L * up
    return pts, centre, top
