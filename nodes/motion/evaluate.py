"""ACC-F / MAE-F: does a generated clip show the motion level it was asked for?

As in AnimeGamer's motion metric (inferred from the paper's summaries; no evaluation code was
released): each clip's motion scope is measured with the same estimator used for labelling,
quantised to the five levels and compared with its target level.  ACC-F = fraction of exact
matches, MAE-F = mean absolute level difference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...core.errors import InputError
from ...core.progress import ProgressFn, no_progress
from .levels import DEFAULT_EDGES, LEVELS, check_edges, level_of


@dataclass(frozen=True)
class MotionEvaluation:
    """ACC-F (0..1), MAE-F (levels) and the per-clip measured levels and scopes."""

    acc_f: float
    mae_f: float
    levels: tuple[int, ...]
    targets: tuple[int, ...]
    scopes: tuple[float, ...]


def check_targets(targets: Sequence[int]) -> tuple[int, ...]:
    values = tuple(int(t) for t in targets)
    if any(t != float(s) for t, s in zip(values, targets, strict=True)) or any(not 1 <= t <= LEVELS for t in values):
        raise InputError(f"Target levels must be integers from 1 to {LEVELS}; got {list(targets)}.")
    return values


def level_metrics(levels: Sequence[int], targets: Sequence[int]) -> tuple[float, float]:
    """``(ACC-F, MAE-F)`` of measured ``levels`` against ``targets`` (same length, at least one)."""
    wanted = check_targets(targets)
    got = check_targets(levels)
    if len(got) != len(wanted) or not wanted:
        raise InputError(f"Need one target level per clip: {len(got)} clips but {len(wanted)} targets.")
    accuracy = sum(a == b for a, b in zip(got, wanted, strict=True)) / len(wanted)
    error = sum(abs(a - b) for a, b in zip(got, wanted, strict=True)) / len(wanted)
    return accuracy, error


def evaluate_scopes(
    clips: Sequence[Any],
    targets: Sequence[int],
    measure: Callable[[Any], float],
    edges: Sequence[float] = DEFAULT_EDGES,
    progress: ProgressFn | None = None,
) -> MotionEvaluation:
    """Measure each clip's scope with ``measure(clip)`` and score the levels against ``targets``."""
    wanted = check_targets(targets)
    bounds = check_edges(edges)
    if len(clips) != len(wanted) or not wanted:
        raise InputError(f"Need one target level per clip: {len(clips)} clips but {len(wanted)} targets.")
    report = progress or no_progress
    scopes: list[float] = []
    for index, clip in enumerate(clips, start=1):
        scopes.append(float(measure(clip)))
        report(index, len(wanted))
    levels = tuple(level_of(s, bounds) for s in scopes)
    accuracy, error = level_metrics(levels, wanted)
    return MotionEvaluation(accuracy, error, levels, wanted, tuple(scopes))


def split_clips(frames: Any, frames_per_clip: int) -> list[Any]:
    """Cut one IMAGE batch of equally long clips laid end to end into its clips."""
    total = int(frames.shape[0])
    if frames_per_clip < 2 or total % frames_per_clip:
        raise InputError(
            f"{total} frames cannot be split into clips of {frames_per_clip} frames; "
            "frames_per_clip must be at least 2 and divide the batch size."
        )
    return [frames[i : i + frames_per_clip] for i in range(0, total, frames_per_clip)]


def parse_targets(text: str) -> tuple[int, ...]:
    """Target levels from a string such as ``"1, 3, 5"``."""
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        values = [int(p) for p in parts]
    except ValueError as exc:
        raise InputError(f"Could not read target levels from {text!r}; write integers 1-5 like '1, 3, 5'.") from exc
    return check_targets(values)
