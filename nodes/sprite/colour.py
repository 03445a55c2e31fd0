"""Per-pixel colour arithmetic over a last axis of three channels, shared by the matte's stages.

numpy's reductions over a last axis of 3 are several times slower than combining the three channel planes by
hand, and the matte runs these over whole frames.
"""

from __future__ import annotations

import numpy as np


def distance(
    values: np.ndarray, model: np.ndarray, weights: np.ndarray | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Euclidean distance along the last axis of 3 (ΔE76 for Lab values), each channel scaled by ``weights``
    when given (a clip's :func:`.matte.noise_weights`), written into ``out`` when given."""
    d = values - model
    if weights is not None:
        d *= weights
    d *= d
    return np.sqrt(d[..., 0] + d[..., 1] + d[..., 2], out=out)


def channel_max(values: np.ndarray) -> np.ndarray:
    """The largest of the three channels of ``values [..., 3]``."""
    return np.maximum(np.maximum(values[..., 0], values[..., 1]), values[..., 2])
