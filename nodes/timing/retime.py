"""Rebuild an animation from its keys with a timing chart (see :mod:`.spacing`).

Keys pass through bit-identical.  Every in-between is the source frame at the time its spacing
asks for when one sits within ``snap`` frames of it ("choosing which source in-betweens to keep");
otherwise it is warped along the optical flow between the two source frames around that time
(``inbetween="flow"``), or the nearest source frame is used (``inbetween="nearest"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.errors import InputError
from ...core.frames import image_alpha
from ...core.progress import ProgressFn, no_progress
from .clip_motion import ClipMotion
from .inbetween import interpolate
from .spacing import ChartFrame, normalise_keys, source_time, timing_chart

INBETWEEN_MODES = ("flow", "nearest")
SNAP = 0.05


@dataclass
class Retimed:
    """The retimed clip: frames, alpha (None if the input had none), durations and the chart."""

    rgb: np.ndarray
    alpha: np.ndarray | None
    durations: list[int]
    chart: list[ChartFrame]
    source_times: list[float]
    key_outputs: list[int] = field(default_factory=list)

    def timing_info(self) -> dict:
        """JSON-ready description (the GAMEANIM_TIMING value and the node's text output)."""
        return {
            "durations": self.durations,
            "keys": self.key_outputs,
            "source_keys": [c.key_a for c in self.chart if c.is_key],
            "source_times": [round(s, 4) for s in self.source_times],
            "positions": [round(c.position, 4) for c in self.chart],
        }


def retime(
    frames: object,
    alpha: object | None,
    motion: ClipMotion,
    keys: list[int],
    on: int = 2,
    hold: int = 2,
    spacing: str = "ease-in-out",
    anticipation: float = 0.0,
    overshoot: float = 0.0,
    inbetween: str = "flow",
    progress: ProgressFn | None = None,
) -> Retimed:
    """Apply a timing chart to a measured clip (``motion`` from :func:`.clip_motion.measure`).

    A ``motion.loop`` clip is retimed as a cycle: the last key's segment runs across the seam back to
    the first key, reading source times past the last frame from the start of the clip again.
    """
    if inbetween not in INBETWEEN_MODES:
        raise InputError(f"Unknown in-between mode {inbetween!r}; choose one of {', '.join(INBETWEEN_MODES)}.")
    rgb, a = image_alpha(frames, alpha)
    n = len(rgb)
    if motion.frame_count != n:
        raise InputError(f"The motion was measured on {motion.frame_count} frames but the clip has {n}.")
    cycle = n if motion.loop else None
    chart = timing_chart(normalise_keys(keys, n, motion.loop), on, hold, spacing, anticipation, overshoot, cycle)
    # A loop is read over two cycles so the seam segment (last key -> first key + n) is continuous.
    speed = np.tile(motion.speed, 2) if motion.loop else motion.speed
    cumulative = np.concatenate([[0.0], np.cumsum(speed)])
    opacity = a if a is not None else np.ones(rgb.shape[:3], np.float32)
    rgba = np.concatenate([rgb, opacity[..., None], motion.masks[..., None].astype(np.float32)], axis=-1)
    report = progress or no_progress
    out, times, key_outputs = [], [], []
    for index, frame in enumerate(chart):
        s, pair = source_time(frame, cumulative, speed)
        nearest = int(np.clip(round(s), frame.key_a, frame.key_b)) % n
        beyond = not frame.key_a <= s <= frame.key_b  # anticipation / overshoot: no source frame shows it
        if frame.is_key:
            out.append(rgba[frame.key_a, ..., :4])
            key_outputs.append(index)
        elif (abs(s - round(s)) <= SNAP and not beyond) or inbetween == "nearest":
            out.append(rgba[nearest, ..., :4])
        else:
            t, pair = s - pair, pair % n
            following = (pair + 1) % n
            out.append(interpolate(rgba[pair], rgba[following], motion.forward[pair], motion.backward[pair], t))
        times.append(float(s) % n if motion.loop else float(s))
        report(index + 1, len(chart))
    stacked = np.stack(out)
    return Retimed(
        stacked[..., :3].copy(),
        stacked[..., 3].copy() if a is not None else None,
        [c.duration for c in chart],
        chart,
        times,
        key_outputs,
    )
