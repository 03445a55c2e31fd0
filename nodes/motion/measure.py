"""Frames in, motion scope out: the flow and scope steps chained with one set of options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.progress import ProgressFn
from .flow import DEFAULT_METHOD, FlowSettings, flow_of_clip, grey_frames, resolve_method
from .frames import clip_array, flow_array, pair_masks
from .levels import DEFAULT_EDGES, level_of
from .scope import DEFAULT_QUANTILE, DEFAULT_R, ScopeResult, check_options, scope_of_arrays


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
    """Flow of ``frames`` with ``method``, then its scope (texture test on) and level.

    The clip is checked and turned grey once, for the flow and the texture test alike.
    """
    import torch

    name = resolve_method(method)
    check_options(r, DEFAULT_QUANTILE)
    clip = clip_array(frames)
    masks = None if mask is None else pair_masks(mask, clip.shape[0] - 1, clip.shape[1], clip.shape[2])
    if name.startswith("raft"):
        grey = None
        flow = flow_array(flow_of_clip(clip, name, raft_model, settings, progress))  # a network's output is checked
    else:
        grey = grey_frames(clip)
        flow = flow_of_clip(clip, name, raft_model, settings, progress, grey=grey)
    result = scope_of_arrays(flow, clip, grey, masks, r)
    return Measurement(result, level_of(result.scope, edges), torch.from_numpy(flow))
