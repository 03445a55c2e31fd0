"""Timing charts: where each drawing sits between two keys and how long it stays on screen.

Between keys ``a`` and ``b`` (``L = b - a`` source frames) the chart shows key ``a`` for ``hold``
frames, then ``n = round((L - hold) / on)`` in-betweens for ``on`` frames each (ones, twos, threes),
so a segment keeps its length whenever ``L - hold`` divides by ``on``.  In-between ``j`` of ``n`` is
drawing ``u = j / (n + 1)`` of the way through the segment; the spacing curve maps ``u`` to the
fraction ``p`` of the *distance* travelled (not of source time), which the retimer turns into a
source time through the clip's cumulative motion.  Curves (``u`` in 0..1):

- ``even``: ``p = u``
- ``ease-in`` (slow out of the first key, speeding up): ``p = u²``
- ``ease-out`` (slowing into the second key): ``p = 1 - (1 - u)²``
- ``ease-in-out``: ``p = 2u²`` for ``u < ½``, else ``1 - 2(1 - u)²``

``anticipation`` adds ``-A · 6.75 u (1-u)²`` (a move against the motion, deepest at ``u = ⅓``) and
``overshoot`` adds ``+O · 6.75 u² (1-u)`` (past the key, furthest at ``u = ⅔``), both as fractions of
the key-to-key distance.  Durations are in source-frame units: at the clip's fps a duration ``d``
lasts ``d / fps`` seconds.  A looping clip (a walk or run cycle) is charted around the cycle: the
segment from the last key back to the first is timed too and the last key is not repeated at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import InputError

SPACINGS = ("even", "ease-in", "ease-out", "ease-in-out")


def spacing_curve(name: str, u: np.ndarray | float, anticipation: float = 0.0, overshoot: float = 0.0) -> np.ndarray:
    """Fraction of the key-to-key distance covered at drawing fraction ``u`` (see the module doc)."""
    u = np.asarray(u, np.float64)
    if name == "even":
        p = u.copy()
    elif name == "ease-in":
        p = u**2
    elif name == "ease-out":
        p = 1.0 - (1.0 - u) ** 2
    elif name == "ease-in-out":
        p = np.where(u < 0.5, 2.0 * u**2, 1.0 - 2.0 * (1.0 - u) ** 2)
    else:
        raise InputError(f"Unknown spacing {name!r}; choose one of {', '.join(SPACINGS)}.")
    return p - anticipation * 6.75 * u * (1.0 - u) ** 2 + overshoot * 6.75 * u**2 * (1.0 - u)


@dataclass(frozen=True)
class ChartFrame:
    """One drawing of the chart: its segment's keys, its place, its duration, whether it is a key."""

    key_a: int
    key_b: int
    drawing: float  # u: drawing fraction within the segment (0 for a key)
    position: float  # p: distance fraction within the segment (0 for a key)
    duration: int
    is_key: bool


def normalise_keys(keys: object, frame_count: int, loop: bool = False) -> list[int]:
    """Sorted unique keys within the clip, with its first and last frame added (a loop: frame 0 if none)."""
    try:
        values = [int(k) for k in keys]  # type: ignore[attr-defined]
    except (TypeError, ValueError) as exc:
        raise InputError(f"Keys must be frame indices (integers); got {keys!r}.") from exc
    bad = [k for k in values if not 0 <= k < frame_count]
    if bad:
        raise InputError(f"Key frames {bad} are outside the clip (frames 0..{frame_count - 1}).")
    if loop:
        return sorted(set(values)) or [0]
    return sorted({0, frame_count - 1, *values})


def parse_keys(text: str) -> list[int]:
    """Keys typed by a person: ``"0, 7, 15"`` or a JSON list ``[0, 7, 15]``."""
    cleaned = text.replace("[", " ").replace("]", " ").replace(",", " ").split()
    try:
        return [int(part) for part in cleaned]
    except ValueError as exc:
        raise InputError(f"Keys must be frame numbers separated by commas, e.g. '0, 7, 15'; got {text!r}.") from exc


def timing_chart(
    keys: list[int],
    on: int = 2,
    hold: int = 2,
    spacing: str = "ease-in-out",
    anticipation: float = 0.0,
    overshoot: float = 0.0,
    cycle: int | None = None,
) -> list[ChartFrame]:
    """The drawings of an animation rebuilt from ``keys`` (sorted, first and last frame included).

    ``cycle`` (the frame count of a looping clip) closes the loop instead: the last key's segment
    runs on to the first key one cycle later (``keys[0] + cycle``) and is timed like the others, and
    no closing key is appended, so the drawings repeat without showing the seam's pose twice.
    """
    if on < 1 or hold < 1:
        raise InputError(f"'on' and 'hold' must be at least 1 frame; got on={on}, hold={hold}.")
    if not 0.0 <= anticipation <= 1.0 or not 0.0 <= overshoot <= 1.0:
        raise InputError("anticipation and overshoot are fractions of the key distance between 0 and 1.")
    spacing_curve(spacing, 0.0)  # validates the name
    chart: list[ChartFrame] = []
    ends = [*keys[1:], keys[0] + cycle] if cycle else keys[1:]
    for a, b in zip(keys[: len(ends)], ends, strict=True):
        chart.append(ChartFrame(a, b, 0.0, 0.0, hold, True))
        count = max(0, int(np.floor((b - a - hold) / on + 0.5)))
        drawings = np.arange(1, count + 1) / (count + 1)
        positions = spacing_curve(spacing, drawings, anticipation, overshoot)
        chart += [ChartFrame(a, b, float(u), float(p), on, False) for u, p in zip(drawings, positions, strict=True)]
    if not cycle:
        chart.append(ChartFrame(keys[-1], keys[-1], 0.0, 0.0, hold, True))
    return chart


def source_time(chart_frame: ChartFrame, cumulative: np.ndarray, speed: np.ndarray) -> tuple[float, int]:
    """``(time, pair)``: the fractional source frame at which the subject has covered the drawing's
    distance, and the frame pair ``(pair, pair + 1)`` whose flow reaches it.

    ``cumulative[t]`` is the distance travelled up to frame ``t``.  A segment without motion falls
    back to even time.  Positions before the first key or past the second (anticipation, overshoot)
    extrapolate along the segment's first or last *moving* frame pair, so a key that is held in the
    source still anticipates.
    """
    a, b, p = chart_frame.key_a, chart_frame.key_b, chart_frame.position
    last_pair = len(speed) - 1
    if chart_frame.is_key or a == b:
        return float(a), min(a, last_pair)
    start, end = cumulative[a], cumulative[b]
    if end - start <= 1e-6:
        time = a + float(np.clip(p, 0.0, 1.0)) * (b - a)
        return time, int(min(np.floor(time), b - 1))
    moving = [i for i in range(a, b) if speed[i] > 1e-3]
    target = start + p * (end - start)
    if p < 0.0:
        first = moving[0]
        return first + (target - start) / float(speed[first]), first
    if p > 1.0:
        last = moving[-1]
        return last + 1 + (target - end) / float(speed[last]), last
    segment = cumulative[a : b + 1]
    # First frame at or past the target, then linear inside that frame pair (speed constant within a pair).
    i = int(np.searchsorted(segment, target - 1e-9))
    if i == 0:
        return float(a), a
    lo, hi = segment[i - 1], segment[i]
    time = a + i - 1 + (target - lo) / (hi - lo) if hi > lo else float(a + i)
    return time, int(min(np.floor(time), b - 1))
