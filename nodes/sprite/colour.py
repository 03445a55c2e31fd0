"""Per-pixel colour arithmetic over a last axis of three channels, shared by the matte's stages.

numpy's reductions over a last axis of 3 are several times slower than combining the three channel planes by
hand, and the matte runs these over whole frames; on a whole image OpenCV's per-pixel arithmetic is faster still,
with the same bits.
"""

from __future__ import annotations

import cv2
import numpy as np

SUM = np.ones((1, 3), np.float32)  # OpenCV's transform with this matrix: a pixel's three channels added in order


def distance(
    values: np.ndarray, model: np.ndarray, weights: np.ndarray | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Euclidean distance along the last axis of 3 (ΔE76 for Lab values), each channel scaled by ``weights``
    when given (a clip's :func:`.matte.noise_weights`), written into ``out`` when given."""
    if weights is None and is_image(values) and is_image(model) and values.shape == model.shape:
        d = cv2.subtract(values, model)
        return root_sum(cv2.multiply(d, d, dst=d), out)
    d = values - model
    if weights is not None:
        d *= weights
    d *= d
    return np.sqrt(d[..., 0] + d[..., 1] + d[..., 2], out=out)


def channel_sum(values: np.ndarray) -> np.ndarray:
    """``np.sum(values, axis=-1)`` over a last axis of three: the same additions in the same order, to numpy's bits but
    for the sign of a zero (numpy starts from +0, so three negative zeros sum to +0 there and to -0 here)."""
    return values[..., 0] + values[..., 1] + values[..., 2]


def channel_max(values: np.ndarray) -> np.ndarray:
    """The largest of the three channels of ``values [..., 3]``."""
    return np.maximum(np.maximum(values[..., 0], values[..., 1]), values[..., 2])


def is_image(values: np.ndarray) -> bool:
    """Whether ``values`` is a float32 ``[H,W,3]`` image OpenCV takes as is (rows contiguous)."""
    return values.ndim == 3 and values.shape[2] == 3 and values.dtype == np.float32 and values.strides[1:] == (12, 4)


def root_sum(squares: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The square root of the sum of the three channels of a float32 ``[H,W,3]`` image (written into ``out`` when
    given): OpenCV adds them in the order numpy's ``a[..., 0] + a[..., 1] + a[..., 2]`` does, to the same bits,
    without that expression's two strided passes and temporaries."""
    return cv2.sqrt(cv2.transform(squares, SUM), dst=out)
