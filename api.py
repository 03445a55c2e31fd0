"""The stable Python API of GameAnim, for headless scripts and outside checks.

Import the pack by path (see the README's "Python API") and call these functions; they never need
ComfyUI.  Signatures here are a contract: new parameters get defaults, nothing is renamed.
Long functions accept ``progress``: a callable ``(done, total)`` that may raise to cancel (for
example :meth:`CancelToken.progress`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .errors import GameAnimError, InputError, ModelFileError, NumericalError, UnsafePathError
from .progress import Cancelled, CancelToken

__version__ = "0.1.0"


class MotionScope(NamedTuple):
    """Result of :func:`motion_scope`.

    ``scope``: mean foreground flow magnitude per frame pair, in pixels of a 480x720 reference frame
    (resolution-independent); ``level``: 1..5 with the default edges (0.7, 3.5, 12, 28);
    ``per_frame``: the value of each of the T-1 frame pairs.
    """

    scope: float
    level: int
    per_frame: tuple[float, ...]


def _raft_for(method: str) -> Any:
    """The RAFT model a RAFT ``method`` needs, from the ``optical_flow`` model folder (never downloaded)."""
    from .host import folder_paths_for
    from .nodes.motion.flow import cached_raft, find_raft_weights, resolve_method

    name = resolve_method(method)
    if not name.startswith("raft"):
        return None
    return cached_raft(find_raft_weights(name, folder_paths_for("optical_flow")), name)


def motion_scope(frames: Any, method: str = "dis", r: float = 0.2, mask: Any = None) -> MotionScope:
    """Measure a clip's motion scope the way AnimeGamer labels action intensity, from optical flow.

    ``frames``: IMAGE-style ``[T,H,W,3]`` float 0..1 (torch or numpy), T >= 2, all frames one size.
    ``method``: ``"dis"`` (= ``"dis_medium"``, default), ``"dis_fast"``, ``"dis_ultrafast"``,
    ``"farneback"``, or ``"raft_small"`` / ``"raft_large"`` with weights placed in
    ``models/optical_flow/`` (see docs/motion.md).  ``r``: foreground cut as a fraction of the clip's
    99th-percentile speed.  ``mask``: optional MASK ``[T,H,W]``/``[H,W]`` (>0.5 = measured), e.g.
    the character matte, so camera or background motion is ignored.  A clip without motion (static,
    all black) gives scope 0 and level 1, never NaN.
    """
    from .nodes.motion.measure import measure_clip

    measured = measure_clip(frames, method=method, r=r, mask=mask, raft_model=_raft_for(method))
    return MotionScope(measured.result.scope, measured.level, measured.result.per_frame)


def evaluate_motion(
    clips: Sequence[Any],
    targets: Sequence[int],
    method: str = "dis",
    r: float = 0.2,
    edges: Sequence[float] | None = None,
    progress: Any = None,
) -> Any:
    """ACC-F / MAE-F of generated ``clips`` against their target motion levels (1..5).

    Each clip is measured with :func:`motion_scope`'s estimator and binned with ``edges`` (default
    0.7, 3.5, 12, 28).  Returns a ``MotionEvaluation`` with ``acc_f`` (fraction of exact level
    matches), ``mae_f`` (mean absolute level difference), ``levels``, ``targets`` and ``scopes``.
    """
    from .nodes.motion.evaluate import evaluate_scopes
    from .nodes.motion.levels import DEFAULT_EDGES
    from .nodes.motion.measure import measure_clip

    raft = _raft_for(method)
    bounds = tuple(edges) if edges is not None else DEFAULT_EDGES

    def measure(clip: Any) -> float:
        return measure_clip(clip, method=method, r=r, raft_model=raft).result.scope

    return evaluate_scopes(clips, targets, measure, bounds, progress)


__all__ = [
    "CancelToken",
    "Cancelled",
    "GameAnimError",
    "InputError",
    "ModelFileError",
    "MotionScope",
    "NumericalError",
    "UnsafePathError",
    "__version__",
    "evaluate_motion",
    "motion_scope",
]
