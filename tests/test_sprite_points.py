"""Reading and writing images at lists of points by flat index gives numpy's own indexing's values."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from gameanim.nodes.sprite.points import gather, pick, scatter

_rng = np.random.default_rng(3)
BASES = {
    "frame": _rng.random((40, 56, 3), dtype=np.float32),
    "plane": _rng.random((40, 56), dtype=np.float32),
    "labels": _rng.integers(-5, 9, (40, 56)).astype(np.int32),
    "mask": _rng.random((40, 56)) > 0.5,
    "float64": _rng.random((40, 56, 3)),
}
# (the array cut from, how it is cut): whole arrays, crops (rows apart in memory) and layouts taken the slow way.
CASES: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    "frame": ("frame", lambda a: a),
    "plane": ("plane", lambda a: a),
    "labels": ("labels", lambda a: a),
    "mask": ("mask", lambda a: a),
    "float64": ("float64", lambda a: a),
    "crop of a frame": ("frame", lambda a: a[5:31, 7:40]),
    "crop of a plane": ("plane", lambda a: a[3:, 11:50]),
    "crop of a mask": ("mask", lambda a: a[2:30, 1:41]),
    "every other column": ("plane", lambda a: a[:, ::2]),  # rows no whole number of pixels apart
    "channels reversed": ("frame", lambda a: a[..., ::-1]),  # channels apart
    "one row": ("plane", lambda a: a[7:8]),
}


@pytest.mark.parametrize("case", CASES)
def test_gather_reads_what_two_index_arrays_read(case: str):
    base, cut = CASES[case]
    image = cut(BASES[base])
    rng = np.random.default_rng(7)
    h, w = image.shape[:2]
    ys, xs = rng.integers(0, h, 500), rng.integers(0, w, 500)
    got = gather(image, ys, xs)
    assert got.dtype == image.dtype and np.array_equal(got, image[ys, xs])
    # Index arrays of another shape (a 3x3 neighbourhood's row per point), and none at all.
    yy, xx = np.clip(ys[:, None] + [-1, 0, 1], 0, h - 1), np.clip(xs[:, None] + [1, 0, -1], 0, w - 1)
    assert np.array_equal(gather(image, yy, xx), image[yy, xx])
    empty = np.zeros(0, np.int64)
    assert gather(image, empty, empty).shape == image[empty, empty].shape


@pytest.mark.parametrize("case", CASES)
def test_pick_takes_what_a_boolean_mask_takes_in_its_order(case: str):
    base, cut = CASES[case]
    image = cut(BASES[base])
    rng = np.random.default_rng(5)
    for share in (0.0, 0.03, 0.5, 1.0):
        mask = rng.random(image.shape[:2]) < share
        got = pick(image, mask)
        assert got.dtype == image.dtype and np.array_equal(got, image[mask])


@pytest.mark.parametrize("case", CASES)
def test_scatter_writes_what_two_index_arrays_write(case: str):
    base, cut = CASES[case]
    ours, numpys = BASES[base].copy(), BASES[base].copy()
    h, w = cut(ours).shape[:2]
    rng = np.random.default_rng(11)
    ys, xs = rng.integers(0, h, 300), rng.integers(0, w, 300)
    values = np.zeros_like(cut(numpys)[ys, xs])
    scatter(cut(ours), ys, xs, values)
    cut(numpys)[ys, xs] = values
    assert np.array_equal(ours, numpys)
    assert not np.array_equal(ours, BASES[base])  # something was written
