"""Write the shipped demo motion ``nodes/pose/motions/run_cycle.bvh`` procedurally.

A 24-frame, 30 fps run cycle on a 25-joint Mixamo-named skeleton (``mixamorig:*``), Y-up, facing
+Z, centimetres, moving forward along +Z.  Written by us from sine curves, so the pack ships motion
data with no third-party licence.  Run: ``python scripts/make_run_cycle.py [output.bvh]``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

FRAMES = 24
FPS = 30
ROT = "Zrotation Xrotation Yrotation"
ARM_ROT = "Xrotation Zrotation Yrotation"  # lower the arm about Z first, then swing it about world X

# (name, parent, offset, channel order or None for a joint without motion channels of its own)
JOINTS: list[tuple[str, str | None, tuple[float, float, float], str]] = [
    ("Hips", None, (0.0, 100.0, 0.0), ROT),
    ("Spine", "Hips", (0.0, 10.0, 0.0), ROT),
    ("Spine1", "Spine", (0.0, 12.0, 0.0), ROT),
    ("Spine2", "Spine1", (0.0, 12.0, 0.0), ROT),
    ("Neck", "Spine2", (0.0, 14.0, 0.0), ROT),
    ("Head", "Neck", (0.0, 10.0, 0.0), ROT),
    ("HeadTop_End", "Head", (0.0, 20.0, 0.0), ROT),
    ("LeftShoulder", "Spine2", (6.0, 10.0, 0.0), ROT),
    ("LeftArm", "LeftShoulder", (12.0, 0.0, 0.0), ARM_ROT),
    ("LeftForeArm", "LeftArm", (28.0, 0.0, 0.0), ROT),
    ("LeftHand", "LeftForeArm", (25.0, 0.0, 0.0), ROT),
    ("RightShoulder", "Spine2", (-6.0, 10.0, 0.0), ROT),
    ("RightArm", "RightShoulder", (-12.0, 0.0, 0.0), ARM_ROT),
    ("RightForeArm", "RightArm", (-28.0, 0.0, 0.0), ROT),
    ("RightHand", "RightForeArm", (-25.0, 0.0, 0.0), ROT),
    ("LeftUpLeg", "Hips", (9.0, -5.0, 0.0), ROT),
    ("LeftLeg", "LeftUpLeg", (0.0, -45.0, 0.0), ROT),
    ("LeftFoot", "LeftLeg", (0.0, -42.0, 0.0), ROT),
    ("LeftToeBase", "LeftFoot", (0.0, -8.0, 12.0), ROT),
    ("RightUpLeg", "Hips", (-9.0, -5.0, 0.0), ROT),
    ("RightLeg", "RightUpLeg", (0.0, -45.0, 0.0), ROT),
    ("RightFoot", "RightLeg", (0.0, -42.0, 0.0), ROT),
    ("RightToeBase", "RightFoot", (0.0, -8.0, 12.0), ROT),
]
END_SITES = {"HeadTop_End": (0.0, 5.0, 0.0), "LeftHand": (10.0, 0.0, 0.0), "RightHand": (-10.0, 0.0, 0.0),
             "LeftToeBase": (0.0, 0.0, 6.0), "RightToeBase": (0.0, 0.0, 6.0)}  # fmt: skip


def pose(frame: int) -> dict[str, tuple[float, float, float]]:
    """Euler angles in degrees per joint, keyed by axis order (Z, X, Y) of each joint's channels."""
    phi = 2.0 * math.pi * frame / FRAMES
    s = math.sin(phi)
    angles: dict[str, dict[str, float]] = {name: {} for name, *_ in JOINTS}
    angles["Spine"]["X"] = 8.0
    angles["Spine2"]["Y"] = 10.0 * s  # shoulders counter-rotate
    angles["Hips"]["Y"] = -6.0 * s
    angles["Head"]["X"] = -6.0
    angles["LeftUpLeg"]["X"] = -38.0 * s
    angles["RightUpLeg"]["X"] = 38.0 * s
    c = math.cos(phi)
    angles["LeftLeg"]["X"] = 20.0 + 75.0 * max(0.0, c)  # knee folds while the leg swings forward
    angles["RightLeg"]["X"] = 20.0 + 75.0 * max(0.0, -c)
    angles["LeftFoot"]["X"] = -10.0 * s
    angles["RightFoot"]["X"] = 10.0 * s
    angles["LeftArm"]["Z"] = -72.0
    angles["RightArm"]["Z"] = 72.0
    angles["LeftArm"]["X"] = 40.0 * s
    angles["RightArm"]["X"] = -40.0 * s
    angles["LeftForeArm"]["Y"] = -80.0
    angles["RightForeArm"]["Y"] = 80.0
    return {name: (a.get("Z", 0.0), a.get("X", 0.0), a.get("Y", 0.0)) for name, a in angles.items()}


def write(path: Path) -> None:
    lines = ["HIERARCHY"]
    children: dict[str | None, list[int]] = {}
    for i, (_, parent, _, _) in enumerate(JOINTS):
        children.setdefault(parent, []).append(i)

    def emit(i: int, depth: int) -> None:
        name, parent, offset, order = JOINTS[i]
        pad = "  " * depth
        lines.append(f"{pad}{'ROOT' if parent is None else 'JOINT'} mixamorig:{name}")
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  OFFSET {offset[0]:.6f} {offset[1]:.6f} {offset[2]:.6f}")
        channels = f"6 Xposition Yposition Zposition {order}" if parent is None else f"3 {order}"
        lines.append(f"{pad}  CHANNELS {channels}")
        for c in children.get(name, []):
            emit(c, depth + 1)
        if name in END_SITES:
            end = END_SITES[name]
            lines.extend(
                [
                    f"{pad}  End Site",
                    f"{pad}  {{",
                    f"{pad}    OFFSET {end[0]:.6f} {end[1]:.6f} {end[2]:.6f}",
                    f"{pad}  }}",
                ]
            )
        lines.append(f"{pad}}}")

    emit(0, 0)
    lines += ["MOTION", f"Frames: {FRAMES}", f"Frame Time: {1.0 / FPS:.7f}"]
    for frame in range(FRAMES):
        phi = 2.0 * math.pi * frame / FRAMES
        values = [0.0, 100.0 + 3.0 * abs(math.sin(phi)), 9.0 * frame]  # forward along +Z, bobbing
        angles = pose(frame)
        for name, _, _, order in JOINTS:
            z, x, y = angles[name]
            by_axis = {"Z": z, "X": x, "Y": y}
            values += [by_axis[ch[0]] for ch in order.split()]
        lines.append(" ".join(f"{v:.4f}" for v in values))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[1] / "nodes" / "pose" / "motions" / "run_cycle.bvh"
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
