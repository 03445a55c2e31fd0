"""Regions labelled inside a box give what labelling the whole frame gives (the matte's speed rests on it)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from gameanim.nodes.sprite import edges, matte, regions


def whole_frame_border_connected(mask: np.ndarray) -> np.ndarray:
    """The plain definition: label the whole frame, keep the labels on its border."""
    n, labels = cv2.connectedComponents(mask.astype(np.uint8), connectivity=4)
    keep = np.zeros(n, bool)
    for edge in (labels[0], labels[-1], labels[:, 0], labels[:, -1]):
        keep[edge] = True
    keep[0] = False
    return keep[labels]


def masks(seed: int) -> list[np.ndarray]:
    """Masks with holes, rings, enclosed islands, parts touching the border, and the empty and full cases."""
    rng = np.random.default_rng(seed)
    out = [np.ones((9, 13), bool), np.zeros((9, 13), bool), np.ones((1, 1), bool)]
    for _ in range(20):
        h, w = rng.integers(2, 60, size=2)
        mask = rng.random((h, w)) > rng.uniform(0.05, 0.6)
        y, x = rng.integers(0, h), rng.integers(0, w)
        mask[max(0, y - 5) : y + 5, max(0, x - 5) : x + 5] = False  # a blob, maybe on the border
        mask[max(0, y - 2) : y + 2, max(0, x - 2) : x + 2] = True  # an island inside it
        out.append(mask)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_border_connected_matches_the_whole_frame(seed):
    for mask in masks(seed):
        np.testing.assert_array_equal(regions.border_connected(mask), whole_frame_border_connected(mask))


@pytest.mark.parametrize("seed", range(3))
def test_components_are_opencvs_labels_with_its_areas(seed):
    for mask in masks(seed):
        for connectivity in (4, 8):
            count, labels, stats, _ = cv2.connectedComponentsWithStats(mask.view(np.uint8), connectivity=connectivity)
            got = regions.components(mask, connectivity)
            assert got[0] == count
            np.testing.assert_array_equal(got[1], labels)
            np.testing.assert_array_equal(got[2], stats[:, cv2.CC_STAT_AREA])
    crop = masks(seed)[5][1:-1, 2:]  # a crop: rows apart in memory
    count, labels, stats, _ = cv2.connectedComponentsWithStats(np.ascontiguousarray(crop).view(np.uint8))
    np.testing.assert_array_equal(regions.components(crop, 8)[2], stats[:, cv2.CC_STAT_AREA])


def test_around_is_the_box_grown_by_one_within_the_frame():
    mask = np.zeros((10, 12), bool)
    assert regions.around(mask) is None
    mask[0, 3] = mask[4, 5] = True
    assert regions.around(mask) == (slice(0, 6), slice(2, 7))
    mask[9, 11] = True
    assert regions.around(mask) == (slice(0, 10), slice(2, 12))


def test_background_region_is_the_border_connected_part_within_tolerance():
    rng = np.random.default_rng(3)
    dist = rng.uniform(0, 4, (40, 50)).astype(np.float32)
    dist[10:30, 10:30] = 9.0  # a ring-shaped sprite around a key-coloured pocket
    dist[15:25, 15:25] = 0.5
    bg = matte.background_region(dist, 3.0)
    np.testing.assert_array_equal(bg, whole_frame_border_connected(dist <= 3.0))
    assert not bg[20, 20]  # the enclosed pocket is no border background


def test_edge_cut_finds_a_part_behind_an_edge_anywhere_in_the_frame():
    """A calm region fenced by edges is a part even far from everything else (the box holds all restless
    pixels); of a 2-px edge ring the inner half is nearer the part and goes with it, the outer half stays."""
    bg = np.ones((60, 80), bool)
    grad = np.zeros((60, 80), np.float32)
    grad[4:16, 59:76] = 5.0
    grad[6:14, 61:74] = 0.0  # an 8x13 calm inside a two-pixel edge ring, near the corner
    cut = edges.edge_cut(bg, grad, level=2.0, min_area=24)
    assert cut[6:14, 61:74].all()
    assert cut[5, 62:73].all() and cut[14, 62:73].all()  # inner ring
    assert not cut[4, :].any() and not cut[15, :].any()  # outer ring
    assert not cut[30:, :].any()


def test_edge_cut_leaves_a_region_as_near_the_key_as_its_noise_to_the_key():
    """Under noise a calm region fenced by edges whose mean key distance is within KEY_GAP x the key's own is key seen
    through a gap; one offset from the key further is a part.  Without the key's noise both are parts."""
    bg = np.ones((40, 40), bool)
    grad = np.zeros((40, 40), np.float32)
    grad[8:32, 8:32] = 5.0
    grad[10:30, 10:30] = 0.0  # a 20x20 calm inside a two-pixel edge ring
    for inside, part in ((1.4, False), (1.6, True)):
        dist = np.full((40, 40), 1.0, np.float32)
        dist[10:30, 10:30] = inside
        assert edges.edge_cut(bg, grad, 2.0, 24, dist, key_noise=1.0)[20, 20] == part, inside
        assert edges.edge_cut(bg, grad, 2.0, 24)[20, 20]


def test_close_steps_gives_the_character_its_narrow_edge_channels_only():
    """A one-pixel line of background on an edge between two parts (a dark outline's step to a light part, through
    the key's grey) goes to the character; the same channel off the edges, a three-pixel gap and the background
    outside the silhouette stay background."""
    bg = np.ones((40, 60), bool)
    bg[10:30, 10:20] = False  # a part
    bg[10:30, 21:31] = False  # another, one pixel to its right
    bg[10:30, 34:44] = False  # a third, three pixels right of the second
    grad = np.zeros(bg.shape, np.float32)
    grad[10:20, 20] = 5.0  # the upper half of the one-pixel channel is a step
    grad[10:30, 31:34] = 5.0  # so is the three-pixel gap (too wide to be a step)
    grad[5, :] = 5.0  # an edge out in the background, no channel
    closed = edges.close_steps(bg, grad, level=2.0)
    assert not closed[10:20, 20].any()  # the step: character
    assert closed[20:30, 20].all()  # the calm half of the channel: background
    assert closed[10:30, 31:34].all()  # the three-pixel gap
    assert closed[5, :].all() and closed[:10].all() and closed[30:].all()
    np.testing.assert_array_equal(closed & ~bg, np.zeros_like(bg))  # it only takes background away


@pytest.mark.parametrize("shape", [(320, 512), (37, 53), (1, 7), (5, 1)])
def test_opencv_channel_arithmetic_gives_numpys_bits(shape):
    """The key distance and the Lab gradient on whole images (and on crops of them) through OpenCV are, to the bit,
    numpy's ``sqrt(d[..., 0] + d[..., 1] + d[..., 2])``: the thresholds downstream see the same numbers."""
    from gameanim.nodes.sprite import colour

    rng = np.random.default_rng(shape[0])
    lab = cv2.cvtColor(rng.random((*shape, 3), np.float32) ** 2.2, cv2.COLOR_RGB2Lab)
    model = lab + rng.normal(0, 4, lab.shape).astype(np.float32)

    def plain(values: np.ndarray, key: np.ndarray) -> np.ndarray:
        d = values - key
        d *= d
        return np.sqrt(d[..., 0] + d[..., 1] + d[..., 2])

    crop = (slice(0, max(1, shape[0] - 1)), slice(min(1, shape[1] - 1), shape[1]))
    for values, key in ((lab, model), (lab[crop], model[crop])):
        assert colour.is_image(values) and np.array_equal(colour.distance(values, key), plain(values, key))
    gx = cv2.Sobel(lab, cv2.CV_32F, 1, 0, ksize=3, scale=0.125)
    gy = cv2.Sobel(lab, cv2.CV_32F, 0, 1, ksize=3, scale=0.125)
    assert np.array_equal(edges.lab_gradient(lab), np.sqrt(np.sum(gx * gx + gy * gy, axis=-1, dtype=np.float32)))


def test_channel_sum_is_numpys_sum_over_three_channels_up_to_the_sign_of_zero():
    from gameanim.nodes.sprite import colour

    rng = np.random.default_rng(2)
    values = (rng.standard_normal((20000, 3)) * 10.0 ** rng.uniform(-30, 30, (20000, 3))).astype(np.float32)
    values[:50] = -0.0
    for v in (values, values.reshape(-1, 8, 3)[:, :5], values[::3]):  # rows, neighbourhoods, strided
        ours, numpys = colour.channel_sum(v), np.sum(v, axis=-1)
        assert np.array_equal(ours, numpys)  # equal as numbers (-0 == +0) ...
        nonzero = numpys != 0
        assert np.array_equal(ours[nonzero].view(np.uint32), numpys[nonzero].view(np.uint32))  # ... and to the bit
