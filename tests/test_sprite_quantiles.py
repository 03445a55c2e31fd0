"""The matte's medians and quantiles (nodes/sprite/quantiles.py) are numpy's, to the bit and of the same type."""

from __future__ import annotations

import numpy as np
import pytest
from gameanim.nodes.sprite import quantiles


def samples() -> list[np.ndarray]:
    """Values as the matte meets them (distances, residuals, many ties), odd and even counts, short and long."""
    rng = np.random.default_rng(7)
    out = []
    for n in (1, 2, 3, 4, 5, 8, 63, 64, 65, 1000, 3301, 26368):
        out += [
            rng.normal(size=n).astype(np.float32),
            np.abs(rng.normal(size=n)).astype(np.float32) ** 3,
            rng.integers(0, 4, n).astype(np.float32),
            rng.random(n) * 1e3,
        ]
    return out


@pytest.mark.parametrize("values", samples(), ids=lambda v: f"{v.dtype}x{v.size}")
def test_medians_and_quantiles_are_numpys(values):
    ours, theirs = quantiles.median(values), np.median(values)
    assert ours == theirs and type(ours) is type(theirs)
    for q in (0.0, 0.3, 0.5, 0.75, 0.9, 0.99, 0.995, 1.0):
        ours, theirs = quantiles.quantile(values, q), np.quantile(values, q)
        assert ours == theirs and type(ours) is type(theirs), q
    columns = np.stack([values, values[::-1] * 2, np.sort(values)], axis=1)  # [N,3], as pixels' channels come
    ours, theirs = quantiles.medians(columns.T), np.median(columns, axis=0)
    assert np.array_equal(ours, theirs) and ours.dtype == theirs.dtype and ours.shape == theirs.shape
