"""Key poses of a clip: the extremes an animator would draw first, found from how the clip moves.

A key is where motion stops or turns: a **hold** (consecutive frames that do not move; the key is
the frame the pose is reached), a **motion minimum** (the subject slows to a stop and goes on, the
extreme of a swing), a **direction change** (the subject turns sharply without slowing) or a
**contact** (a downward motion turns upward at the subject's lowest point: a bounce, a body's down
position; with a rig, the frame an ankle lands: its fall stops low in its range).  Steady motion,
even along a curve, yields no key.  Breakdowns (optional) are the fastest frame between two keys.
The first and last frames are always keys, unless the clip is a loop (a cycle): then the seam
between its last and first frame is searched like any other moment and no end is forced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.errors import InputError
from .clip_motion import ClipMotion, frame_steps

HOLD_SPEED = 0.15  # px/frame below which a frame pair counts as not moving (flow noise on identical frames)
MIN_RATIO = 0.5  # a motion minimum is at most this fraction of the speed on both sides of it


@dataclass(frozen=True)
class KeyPose:
    """One key: frame index, ranking score (higher = more important) and why it is a key."""

    frame: int
    score: float
    reason: str


def _holds(speed: np.ndarray, loop: bool) -> list[tuple[int, int]]:
    """Runs of still frame pairs as ``(first frame, pairs still)``; in a loop a run may cross the seam."""
    still = speed < HOLD_SPEED
    if loop and still.all():
        return [(0, len(still))]
    offset = int(np.argmin(still)) if loop else 0  # a loop is read from a moving pair, so no run is cut in two
    runs, start = [], None
    for i, s in enumerate(np.append(np.roll(still, -offset), False)):
        if s and start is None:
            start = i
        elif not s and start is not None:
            runs.append(((start + offset) % len(still) if loop else start, i - start))
            start = None
    return runs


def _frames_to_check(n: int, loop: bool) -> range:
    """Frames that have a neighbour on both sides: all of a loop, the inner ones of a clip."""
    return range(n) if loop else range(1, n - 1)


def _frame_speed(speed: np.ndarray, loop: bool) -> np.ndarray:
    """Speed at each frame: the mean of the pairs into and out of it (a clip's ends use their one pair)."""
    if loop:
        return (np.roll(speed, 1) + speed) / 2.0
    padded = np.concatenate([[speed[0]], speed, [speed[-1]]])
    return (padded[:-1] + padded[1:]) / 2.0


def _side_peak(v: np.ndarray, t: int, direction: int, loop: bool) -> float:
    """Highest speed reached moving away from ``t`` before the speed drops below ``v[t]`` again."""
    n, peak, i = len(v), v[t], t + direction
    for _ in range(n - 1):
        if loop:
            i %= n
        if not 0 <= i < n or v[i] < v[t]:
            break
        peak = max(peak, v[i])
        i += direction
    return float(peak)


def _minima(v: np.ndarray, min_motion: float, still: np.ndarray, loop: bool) -> list[KeyPose]:
    keys, top, n = [], max(float(v.max()), 1e-9), len(v)
    for t in _frames_to_check(n, loop):
        if still[t] or not (v[t] < v[t - 1] and v[t] <= v[(t + 1) % n]):
            continue
        low = min(_side_peak(v, t, -1, loop), _side_peak(v, t, 1, loop))
        if v[t] <= MIN_RATIO * low and low - v[t] >= min_motion:
            keys.append(KeyPose(t, 0.5 + 0.5 * (low - float(v[t])) / top, "motion minimum"))
    return keys


def _turns(motion: ClipMotion, min_motion: float, turn_degrees: float) -> list[KeyPose]:
    keys, vel, n = [], motion.velocity, motion.frame_count
    norms = np.linalg.norm(vel, axis=1)
    for t in _frames_to_check(n, motion.loop):
        a, b = vel[t - 1], vel[t]
        if norms[t - 1] < min_motion or norms[t] < min_motion:
            continue
        angle = math.degrees(math.acos(float(np.clip(a @ b / (norms[t - 1] * norms[t]), -1.0, 1.0))))
        if angle < turn_degrees:
            continue
        lowest = motion.bottom[t] >= max(motion.bottom[t - 1], motion.bottom[(t + 1) % n])
        contact = a[1] > 0 and b[1] < 0 and lowest
        score = (0.9 if contact else 0.6) + 0.1 * angle / 180.0
        keys.append(KeyPose(t, score, "contact" if contact else "direction change"))
    return keys


def _foot_contacts(rows: np.ndarray, min_motion: float, loop: bool) -> list[KeyPose]:
    """Frames where a foot joint lands: it was falling and stops (at least halves its fall) low in its range."""
    keys = []
    for foot in rows.T:
        low, high = float(foot.min()), float(foot.max())
        if high - low < 4 * min_motion:
            continue
        fall = frame_steps(foot, loop)  # image y grows downward: positive = moving down
        for t in _frames_to_check(len(foot), loop):
            landing = fall[t - 1] > 2 * min_motion and fall[t] < 0.5 * fall[t - 1]
            if landing and foot[t] >= low + 0.5 * (high - low):
                keys.append(KeyPose(t, 0.8, "contact"))
    return keys


def _breakdowns(v: np.ndarray, frames: list[int], loop: bool) -> list[KeyPose]:
    n, out = len(v), []
    segments = list(zip(frames[:-1], frames[1:], strict=True)) + ([(frames[-1], frames[0] + n)] if loop else [])
    for a, b in segments:
        if b - a >= 3:
            inner = np.arange(a + 1, b) % n
            out.append(KeyPose(int(inner[np.argmax(v[inner])]), 0.1, "breakdown"))
    return out


def _merge(candidates: list[KeyPose], n: int, loop: bool, tolerance: int = 1) -> list[KeyPose]:
    """Keep the strongest candidate of each cluster closer than ``tolerance`` frames, naming every reason."""

    def apart(a: int, b: int) -> int:
        return min(abs(a - b), n - abs(a - b)) if loop else abs(a - b)

    kept: list[KeyPose] = []
    for key in sorted(candidates, key=lambda k: -k.score):
        near = [i for i, k in enumerate(kept) if apart(key.frame, k.frame) <= tolerance]
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
    """Ranked key poses (strongest first; first and last frame always included unless the clip loops).

    ``min_motion`` (px/frame) is the smallest speed change that counts; ``turn_degrees`` the
    smallest change of direction between two frame pairs that makes a key.  ``max_keys`` keeps the
    strongest keys only (at least 2, or 1 in a loop).  ``breakdowns`` adds the fastest frame between
    each two keys.  A ``motion.loop`` clip is a cycle: the seam is searched like any other frame, the
    ends are not forced, and a cycle without any key gets frame 0.
    """
    loop, n = motion.loop, motion.frame_count
    least = 1 if loop else 2
    if max_keys is not None and max_keys < least:
        raise InputError(
            f"max_keys must be at least {least} (the {'cycle start' if loop else 'first and last frame'}); got {max_keys}."
        )
    last = n - 1
    first = [KeyPose(0, math.inf, "first")]
    ends = [] if loop else first + ([KeyPose(last, math.inf, "last")] if last else [])
    if n < 3:
        return ends or first
    v = _frame_speed(motion.speed, loop)
    still = np.zeros(n, bool)
    candidates = []
    for start, pairs in _holds(motion.speed, loop):
        still[np.arange(start, start + pairs + 1) % n] = True
        candidates.append(KeyPose(start, 1.0 + pairs / n, "hold"))
    candidates += _minima(v, min_motion, still, loop) + _turns(motion, min_motion, turn_degrees)
    if motion.contact_rows is not None:
        candidates += _foot_contacts(motion.contact_rows, min_motion, loop)
    inner = [k for k in candidates if loop or 0 < k.frame < last]
    keys = _merge(ends + inner, n, loop) or first
    if breakdowns:
        frames = sorted(k.frame for k in keys)
        keys = _merge(keys + _breakdowns(v, frames, loop), n, loop)
    ranked = sorted(keys, key=lambda k: (-k.score, k.frame))
    return ranked if max_keys is None else ranked[:max_keys]
