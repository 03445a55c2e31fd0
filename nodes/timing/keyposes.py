"""Key poses of a clip: the extremes an animator would draw first, found from how the clip moves.

A key is where motion stops or turns: a **hold** (consecutive frames that do not move; the key is
the frame the pose is reached), a **motion minimum** (the subject slows to a stop and goes on, the
extreme of a swing), a **direction change** (the subject turns sharply without slowing) or a
**contact** (a downward motion turns upward at the subject's lowest point: a bounce, a body's down
position; with a rig, the frame an ankle lands: its fall stops low in its range).  Steady motion, even along a curve, yields no key.  Breakdowns
(optional) are the fastest frame between two keys.  The first and last frames are always keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.errors import InputError
from .clip_motion import ClipMotion

HOLD_SPEED = 0.15  # px/frame below which a frame pair counts as not moving (flow noise on identical frames)
MIN_RATIO = 0.5  # a motion minimum is at most this fraction of the speed on both sides of it


@dataclass(frozen=True)
class KeyPose:
    """One key: frame index, ranking score (higher = more important) and why it is a key."""

    frame: int
    score: float
    reason: str


def _holds(speed: np.ndarray) -> list[tuple[int, int]]:
    """Runs of still frame pairs as frame ranges ``(first, last)``."""
    still = speed < HOLD_SPEED
    runs, start = [], None
    for i, s in enumerate(np.append(still, False)):
        if s and start is None:
            start = i
        elif not s and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _frame_speed(speed: np.ndarray) -> np.ndarray:
    padded = np.concatenate([[speed[0]], speed, [speed[-1]]])
    return (padded[:-1] + padded[1:]) / 2.0


def _side_peak(v: np.ndarray, t: int, direction: int) -> float:
    """Highest speed reached moving away from ``t`` before the speed drops below ``v[t]`` again."""
    peak, i = v[t], t + direction
    while 0 <= i < len(v) and v[i] >= v[t]:
        peak = max(peak, v[i])
        i += direction
    return float(peak)


def _minima(v: np.ndarray, min_motion: float, still: np.ndarray) -> list[KeyPose]:
    keys, top = [], max(float(v.max()), 1e-9)
    for t in range(1, len(v) - 1):
        if still[t] or not (v[t] < v[t - 1] and v[t] <= v[t + 1]):
            continue
        low = min(_side_peak(v, t, -1), _side_peak(v, t, 1))
        if v[t] <= MIN_RATIO * low and low - v[t] >= min_motion:
            keys.append(KeyPose(t, 0.5 + 0.5 * (low - v[t]) / top, "motion minimum"))
    return keys


def _turns(motion: ClipMotion, min_motion: float, turn_degrees: float) -> list[KeyPose]:
    keys, vel = [], motion.velocity
    norms = np.linalg.norm(vel, axis=1)
    for t in range(1, len(vel)):
        a, b = vel[t - 1], vel[t]
        if norms[t - 1] < min_motion or norms[t] < min_motion:
            continue
        angle = math.degrees(math.acos(float(np.clip(a @ b / (norms[t - 1] * norms[t]), -1.0, 1.0))))
        if angle < turn_degrees:
            continue
        lowest = motion.bottom[t] >= max(motion.bottom[t - 1], motion.bottom[t + 1])
        contact = a[1] > 0 and b[1] < 0 and lowest
        score = (0.9 if contact else 0.6) + 0.1 * angle / 180.0
        keys.append(KeyPose(t, score, "contact" if contact else "direction change"))
    return keys


def _foot_contacts(rows: np.ndarray, min_motion: float) -> list[KeyPose]:
    """Frames where a foot joint lands: it was falling and stops (at least halves its fall) low in its range."""
    keys = []
    for foot in rows.T:
        low, high = float(foot.min()), float(foot.max())
        if high - low < 4 * min_motion:
            continue
        fall = np.diff(foot)  # image y grows downward: positive = moving down
        for t in range(1, len(foot) - 1):
            landing = fall[t - 1] > 2 * min_motion and fall[t] < 0.5 * fall[t - 1]
            if landing and foot[t] >= low + 0.5 * (high - low):
                keys.append(KeyPose(t, 0.8, "contact"))
    return keys


def _breakdowns(v: np.ndarray, frames: list[int]) -> list[KeyPose]:
    out = []
    for a, b in zip(frames[:-1], frames[1:], strict=True):
        if b - a >= 3:
            inner = np.arange(a + 1, b)
            out.append(KeyPose(int(inner[np.argmax(v[inner])]), 0.1, "breakdown"))
    return out


def _merge(candidates: list[KeyPose], tolerance: int = 1) -> list[KeyPose]:
    """Keep the strongest candidate of each cluster closer than ``tolerance`` frames, naming every reason."""
    kept: list[KeyPose] = []
    for key in sorted(candidates, key=lambda k: -k.score):
        near = [i for i, k in enumerate(kept) if abs(key.frame - k.frame) <= tolerance]
        if not near:
            kept.append(key)
        elif key.reason not in kept[near[0]].reason.split(", "):
            strong = kept[near[0]]
            kept[near[0]] = KeyPose(strong.frame, strong.score, f"{strong.reason}, {key.reason}")
    return kept


def find_key_poses(
    motion: ClipMotion,
    max_keys: int | None = None,
    breakdowns: bool = False,
    min_motion: float = 0.5,
    turn_degrees: float = 60.0,
) -> list[KeyPose]:
    """Ranked key poses (strongest first; first and last frame always included).

    ``min_motion`` (px/frame) is the smallest speed change that counts; ``turn_degrees`` the
    smallest change of direction between two frame pairs that makes a key.  ``max_keys`` keeps the
    strongest keys only (at least 2).  ``breakdowns`` adds the fastest frame between each two keys.
    """
    if max_keys is not None and max_keys < 2:
        raise InputError(f"max_keys must be at least 2 (the first and last frame); got {max_keys}.")
    n = motion.frame_count
    last = n - 1
    ends = [KeyPose(0, math.inf, "first"), KeyPose(last, math.inf, "last")] if last else [KeyPose(0, math.inf, "first")]
    if n < 3:
        return ends
    v = _frame_speed(motion.speed)
    still = np.zeros(n, bool)
    candidates = []
    for first, end in _holds(motion.speed):
        still[first : end + 1] = True
        candidates.append(KeyPose(first, 1.0 + (end - first) / n, "hold"))
    candidates += _minima(v, min_motion, still) + _turns(motion, min_motion, turn_degrees)
    if motion.contact_rows is not None:
        candidates += _foot_contacts(motion.contact_rows, min_motion)
    inner = [k for k in candidates if 0 < k.frame < last]
    keys = _merge(ends + inner)
    if breakdowns:
        frames = sorted(k.frame for k in keys)
        keys = _merge(keys + _breakdowns(v, frames))
    ranked = sorted(keys, key=lambda k: (-k.score, k.frame))
    return ranked if max_keys is None else ranked[:max_keys]
