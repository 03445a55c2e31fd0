"""Frames in, motion scope out: the flow and scope steps chained with one set of options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.progress import ProgressFn
from .flow import DEFAULT_METHOD, FlowSettings, estimate_flow
from .levels import DEFAULT_EDGES, level_of
from .scope import DEFAULT_R, ScopeResult, scope_from_flow


@dataclass(frozen=True)
class Measurement:
    """Scope, level and the flow they came from."""

    result: ScopeResult
    level: int
    flow: Any


def measure_clip(
    frames: Any,
    method: str = DEFAULT_METHOD,
    r: float = DEFAULT_R,
    mask: Any = None,
    edges: tuple[float, ...] = DEFAULT_EDGES,
    raft_model: Any = None,
    settings: FlowSettings | None = None,
    progress: ProgressFn | None = None,
) -> Measurement:
    """Flow of ``frames`` with ``method``, then its scope (texture test on) and level."""
    flow = estimate_flow(frames, method, raft_model=raft_model, settings=settings, progress=progress)
    result = scope_from_flow(flow, frames=frames, r=r, mask=mask)
    return Measurement(result, level_of(result.scope, edges), flow)
