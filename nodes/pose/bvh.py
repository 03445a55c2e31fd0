"""BVH reading and forward kinematics (numpy, vectorised over frames).

Why our own parser rather than ``pybvh`` (the maintained one, checked: 0.9.0): pybvh declares
matplotlib as a hard requirement (a large install into every user's ComfyUI), rejects position
channels on non-root joints (some exporters write 6 channels per joint), reports MOTION-section
errors without a file line number, and returns joint positions only, while the face points need
each joint's world rotation, so we would run our own kinematics anyway.  The tests check our
positions against pybvh when it is installed (a dev-only dependency).

BVH conventions: a joint's local transform is ``T(offset) · R`` where ``R`` is
the product of its rotation channels in file order (``Zrotation Xrotation Yrotation`` →
``Rz · Rx · Ry``), angles in degrees; position channels (the root's, or any joint's in 6-channel
files) replace the offset on their axis, as Blender's importer and pybvh do; world transforms
chain parent → child.  End sites become
extra joints named ``<parent>_End`` so a leaf bone's tip is addressable by the skeleton mappings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...core.errors import InputError

_AXES = {"x": 0, "y": 1, "z": 2}


@dataclass
class BvhSkeleton:
    """Hierarchy and motion of one BVH file, as read (file units and axes)."""

    names: list[str]
    parents: list[int]
    offsets: np.ndarray  # (N, 3)
    channels: list[list[str]]  # per joint, e.g. ["Xposition", "Zrotation", ...]; [] for end sites
    motion: np.ndarray  # (F, C) channel values in file order
    frame_time: float
    source: str

    @property
    def frame_count(self) -> int:
        return int(self.motion.shape[0])


class _Lines:
    """Line cursor that remembers the 1-based line number for error messages."""

    def __init__(self, text: str, source: str) -> None:
        self.lines = text.splitlines()
        self.index = 0
        self.source = source

    def error(self, message: str, line: int | None = None) -> InputError:
        number = self.index if line is None else line
        return InputError(f"{self.source}, line {number}: {message}")

    def next_tokens(self, at_end: str = "unexpected end of file (is it truncated?)") -> list[str]:
        """Tokens of the next non-empty line; ``at_end`` becomes the error at end of file."""
        while self.index < len(self.lines):
            self.index += 1
            tokens = self.lines[self.index - 1].split()
            if tokens:
                return tokens
        raise self.error(at_end)


def parse_bvh(text: str, source: str = "<bvh>") -> BvhSkeleton:
    """Parse BVH text; every error names ``source`` and the line number."""
    cur = _Lines(text, source)
    tokens = cur.next_tokens()
    if tokens[0].upper() != "HIERARCHY":
        raise cur.error(f"expected 'HIERARCHY' as the first word of a BVH file, found {tokens[0]!r}")
    names: list[str] = []
    parents: list[int] = []
    offsets: list[list[float]] = []
    channels: list[list[str]] = []
    stack: list[int] = []
    end_sites: set[int] = set()
    pending: str | None = None  # "joint" or "end" after a ROOT/JOINT/End line, until its '{'
    expect_offset = False
    tokens = cur.next_tokens()
    while True:
        word = tokens[0]
        upper = word.upper()
        if upper in ("ROOT", "JOINT"):
            if upper == "ROOT" and names:
                raise cur.error("a second ROOT was found; only one skeleton per file is supported")
            if upper == "JOINT" and not stack:
                raise cur.error("JOINT outside of any ROOT block")
            if len(tokens) < 2:
                raise cur.error(f"{word} has no name")
            names.append(" ".join(tokens[1:]))
            parents.append(stack[-1] if stack else -1)
            offsets.append([0.0, 0.0, 0.0])
            channels.append([])
            pending = "joint"
        elif upper == "END":
            if not stack:
                raise cur.error("End Site outside of any joint block")
            end_sites.add(len(names))
            names.append(f"{names[stack[-1]]}_End")
            parents.append(stack[-1])
            offsets.append([0.0, 0.0, 0.0])
            channels.append([])
            pending = "end"
        elif word == "{":
            if pending is None:
                raise cur.error("'{' without a ROOT, JOINT or End Site before it")
            stack.append(len(names) - 1)
            pending = None
            expect_offset = True
        elif word == "}":
            if not stack:
                raise cur.error("unmatched '}'")
            stack.pop()
        elif upper == "OFFSET":
            if not stack or not expect_offset:
                raise cur.error("OFFSET outside of a joint block")
            if len(tokens) != 4:
                raise cur.error(f"OFFSET needs 3 numbers, found {len(tokens) - 1}")
            offsets[stack[-1]] = [_number(cur, t) for t in tokens[1:]]
            expect_offset = False
        elif upper == "CHANNELS":
            if not stack:
                raise cur.error("CHANNELS outside of a joint block")
            if stack[-1] in end_sites:
                raise cur.error("an End Site cannot have CHANNELS")
            channels[stack[-1]] = _parse_channels(cur, tokens)
        elif upper == "MOTION":
            break
        else:
            raise cur.error(f"unexpected word {word!r} in the HIERARCHY section")
        tokens = cur.next_tokens()
    if stack:
        raise cur.error(f"'MOTION' reached with {len(stack)} unclosed '{{' block(s)")
    if not names:
        raise cur.error("no ROOT joint before MOTION")
    frame_time, motion = _parse_motion(cur, sum(len(c) for c in channels))
    return BvhSkeleton(names, parents, np.asarray(offsets, dtype=np.float64), channels, motion, frame_time, source)


def _number(cur: _Lines, token: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise cur.error(f"{token!r} is not a number") from None
    if not np.isfinite(value):
        raise cur.error(f"{token!r} is not a finite number")
    return value


def _parse_channels(cur: _Lines, tokens: list[str]) -> list[str]:
    if len(tokens) < 2 or not tokens[1].isdigit():
        raise cur.error("CHANNELS must be followed by a count, e.g. 'CHANNELS 3 Zrotation Xrotation Yrotation'")
    count = int(tokens[1])
    names = tokens[2:]
    if len(names) != count:
        raise cur.error(f"CHANNELS declares {count} channels but lists {len(names)}")
    for name in names:
        low = name.lower()
        if len(low) < 2 or low[0] not in _AXES or low[1:] not in ("position", "rotation"):
            raise cur.error(f"unknown channel {name!r} (expected Xposition..Zposition or Xrotation..Zrotation)")
    return names


def _parse_motion(cur: _Lines, n_channels: int) -> tuple[float, np.ndarray]:
    tokens = cur.next_tokens()
    if tokens[0] != "Frames:" or len(tokens) != 2 or not tokens[1].isdigit():
        raise cur.error(f"expected 'Frames: <count>' after MOTION, found {' '.join(tokens)!r}")
    frames = int(tokens[1])
    if frames < 1:
        raise cur.error("the file declares 0 frames; a motion needs at least one")
    tokens = cur.next_tokens()
    if tokens[:2] != ["Frame", "Time:"] or len(tokens) != 3:
        raise cur.error(f"expected 'Frame Time: <seconds>', found {' '.join(tokens)!r}")
    frame_time = _number(cur, tokens[2])
    if frame_time <= 0:
        raise cur.error(f"Frame Time must be positive, found {frame_time}")
    motion = np.empty((frames, n_channels), dtype=np.float64)
    for row in range(frames):
        tokens = cur.next_tokens(f"the file declares {frames} frames but ends after {row} motion lines (truncated?)")
        if len(tokens) != n_channels:
            raise cur.error(
                f"motion line for frame {row} has {len(tokens)} values; the HIERARCHY declares {n_channels} channels"
            )
        try:
            motion[row] = np.asarray(tokens, dtype=np.float64)
        except ValueError:
            bad = next(t for t in tokens if not _is_float(t))
            raise cur.error(f"{bad!r} in the motion line for frame {row} is not a number") from None
        if not np.isfinite(motion[row]).all():
            raise cur.error(f"the motion line for frame {row} contains nan or inf")
    return frame_time, motion


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def read_bvh(path: str | Path) -> BvhSkeleton:
    """Read a BVH file (UTF-8 or Latin-1 text)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"BVH file not found: {path}. Give the path of an existing .bvh file.")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return parse_bvh(text, source=path.name)


def _axis_rotations(axis: int, degrees: np.ndarray) -> np.ndarray:
    """(F, 3, 3) rotation matrices about one axis."""
    rad = np.deg2rad(degrees)
    c, s = np.cos(rad), np.sin(rad)
    out = np.zeros((len(rad), 3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    out[:, axis, axis] = 1.0
    out[:, i, i] = c
    out[:, j, j] = c
    out[:, i, j] = -s
    out[:, j, i] = s
    return out


def forward_kinematics(skel: BvhSkeleton, frames: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """World positions ``(F, N, 3)`` and rotations ``(F, N, 3, 3)`` of every joint and end site.

    ``frames`` selects motion rows (default: all).  Rotations of end sites equal their parent's.
    """
    motion = skel.motion if frames is None else skel.motion[np.asarray(frames, dtype=np.int64)]
    n_frames, n_joints = motion.shape[0], len(skel.names)
    positions = np.zeros((n_frames, n_joints, 3))
    rotations = np.zeros((n_frames, n_joints, 3, 3))
    column = 0
    for j in range(n_joints):
        local_t = np.broadcast_to(skel.offsets[j], (n_frames, 3)).copy()
        local_r = np.broadcast_to(np.eye(3), (n_frames, 3, 3)).copy()
        for name in skel.channels[j]:
            values = motion[:, column]
            column += 1
            axis = _AXES[name[0].lower()]
            if name[1:].lower() == "position":
                local_t[:, axis] = values  # position channels replace the offset (Blender, pybvh)
            else:
                local_r = local_r @ _axis_rotations(axis, values)
        parent = skel.parents[j]
        if parent < 0:
            positions[:, j] = local_t
            rotations[:, j] = local_r
        else:
            positions[:, j] = positions[:, parent] + np.einsum("fij,fj->fi", rotations[:, parent], local_t)
            rotations[:, j] = rotations[:, parent] @ local_r
    return positions, rotations


def rest_pose(skel: BvhSkeleton) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(N, 3)`` and rotations ``(N, 3, 3)`` of the bind pose: offsets only, no rotation."""
    positions = np.zeros((len(skel.names), 3))
    for j, parent in enumerate(skel.parents):
        positions[j] = skel.offsets[j] + (positions[parent] if parent >= 0 else 0.0)
    return positions, np.broadcast_to(np.eye(3), (len(skel.names), 3, 3)).copy()
