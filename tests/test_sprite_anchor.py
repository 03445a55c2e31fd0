"""Anchor and stabilise: injected jitter removed to <= 1 px, fixed canvas, offsets, the rig-root anchor."""

from __future__ import annotations

import copy

import gameanim.nodes.sprite.anchor as anchor
import gameanim.nodes.sprite.operations as operations
import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError
from support import sprite_synth as synth
from support.sprite_rig import run_cycle_clip


def jittered(t=10, seed=1, amp=4.0, amp_y=None):
    rng = np.random.default_rng(seed)
    amp_y = amp if amp_y is None else amp_y
    pos = [(128 + rng.uniform(-amp, amp), 110 + rng.uniform(-amp_y, amp_y)) for _ in range(t)]
    return synth.clip(t=t, h=160, w=256, positions=pos)


@pytest.mark.parametrize("mode_anchor", ["feet", "centroid", "bbox_center"])
def test_jitter_removed_to_one_pixel(mode_anchor):
    frames, truth, _ = jittered()
    before = anchor.anchor_points(truth, mode_anchor)
    assert np.ptp(before, axis=0).max() > 3  # the jitter is really there
    result = anchor.stabilise(frames, truth, anchor=mode_anchor, mode="lock")
    after = anchor.anchor_points(result.alpha, mode_anchor)
    assert np.ptp(after, axis=0).max() <= 1.0
    # The whole sprite (not just its pivot) lines up: boxes agree within a pixel.
    boxes = anchor.bounding_boxes(result.alpha)
    assert np.ptp(boxes, axis=0).max() <= 1


def test_fixed_canvas_and_offsets_map_pixels():
    frames, truth, _ = jittered(t=5)
    result = anchor.stabilise(frames, truth, padding=3)
    t, h, w = result.alpha.shape
    assert t == 5 and h < 160 and w < 256  # cropped to the union box
    boxes = anchor.bounding_boxes(result.alpha)
    assert boxes[:, :2].min() >= 3 and (w - boxes[:, 2]).min() >= 3 and (h - boxes[:, 3]).min() >= 3
    for i, (dx, dy) in enumerate(result.offsets):
        ys, xs = np.nonzero(truth[i] > 0.5)
        np.testing.assert_array_equal(result.alpha[i, ys + dy, xs + dx], truth[i, ys, xs])


def test_smooth_mode_keeps_slow_motion_and_removes_jitter():
    t = 24
    rng = np.random.default_rng(3)
    planned = [(60 + 6 * k + rng.uniform(-2, 2), 110.0) for k in range(t)]  # walk right with jitter
    frames, truth, _ = synth.clip(t=t, h=160, w=256 + 32, positions=planned)
    result = anchor.stabilise(frames, truth, anchor="bbox_center", mode="smooth", sigma=2.0)
    xs = anchor.anchor_points(result.alpha, "bbox_center")[:, 0]
    steps = np.diff(xs)
    assert steps.mean() > 4  # the walk survives
    assert np.abs(np.diff(steps)).mean() < np.abs(np.diff(np.diff([p[0] for p in planned]))).mean()


def test_api_stabilise_returns_offsets_list():
    frames, truth, _ = jittered(t=4)
    rgb, alpha, offsets = api.stabilise(torch.from_numpy(frames), torch.from_numpy(truth))
    assert rgb.shape[0] == 4 and alpha.shape == rgb.shape[:3]
    assert len(offsets) == 4 and all(isinstance(v, int) for o in offsets for v in o)


def test_stabilise_errors():
    frames, truth, _ = jittered(t=2)
    with pytest.raises(InputError, match="transparent"):
        anchor.stabilise(frames, np.zeros_like(truth))
    with pytest.raises(InputError, match="match"):
        anchor.stabilise(frames, truth[:, :10])
    with pytest.raises(InputError, match="anchor"):
        anchor.stabilise(frames, truth, anchor="head")
    with pytest.raises(InputError, match="empty"):
        api.stabilise(torch.zeros(0, 8, 8, 3), torch.zeros(0, 8, 8))


def test_empty_frame_in_the_middle_is_tolerated():
    frames, truth, _ = jittered(t=4)
    truth = truth.copy()
    truth[2] = 0
    result = anchor.stabilise(frames, truth)
    assert result.alpha[2].max() == 0 and result.alpha[1].max() > 0


def test_rig_root_anchor_removes_planted_jitter():
    alpha, pose, planted = run_cycle_clip(shake=4, seed=2)
    assert np.ptp(planted[:, 0]) >= 6  # the jitter is really there
    rgb = np.repeat(alpha[..., None], 3, axis=-1)
    _, _, offsets = api.stabilise(torch.from_numpy(rgb), torch.from_numpy(alpha), pose_keypoint=pose)
    offsets = np.asarray(offsets)
    root = operations.rig_root_x(pose, alpha.shape[2], alpha.shape[1])
    assert np.ptp(root + offsets[:, 0]) <= 1.0  # the hips sit on one canvas column
    assert np.ptp(offsets[:, 0] + planted[:, 0]) <= 1  # the planted jitter is undone
    # Hidden hips on two frames: those frames fall back to the body estimate, calibrated on the hips.
    for i in (3, 7):
        pose[i]["people"][0]["pose_keypoints_2d"][3 * 8 : 3 * 8 + 3] = [0.0, 0.0, 0.0]
    result = operations.stabilise(rgb, alpha, pose_keypoint=pose)
    assert np.ptp(result.offsets[:, 0] + planted[:, 0]) <= 1


def test_rig_root_anchor_takes_out_the_travel_exactly():
    """A run that crosses the frame (camera not following): in place on the hips, travel = the rig's."""
    alpha, pose, _ = run_cycle_clip(follow_root=False)
    rgb = np.repeat(alpha[..., None], 3, axis=-1)
    root = operations.rig_root_x(pose, alpha.shape[2], alpha.shape[1])
    assert np.ptp(root) > 100  # it really travels
    by_rig = operations.stabilise(rgb, alpha, pose_keypoint=pose)
    by_body = operations.stabilise(rgb, alpha)
    assert np.ptp(root + by_rig.offsets[:, 0]) <= 0.5  # measured 0.28
    assert np.ptp(root + by_body.offsets[:, 0]) > 1.5  # the body estimate alone: 2.1 px of wander
    np.testing.assert_allclose(by_rig.offsets[0, 0] - by_rig.offsets[:, 0], root - root[0], atol=0.5)


def test_rig_root_errors():
    alpha, pose, _ = run_cycle_clip()
    rgb = np.repeat(alpha[..., None], 3, axis=-1)
    with pytest.raises(InputError, match="frames"):
        operations.stabilise(rgb, alpha, pose_keypoint=pose[:-1])
    hidden = copy.deepcopy(pose)
    for frame in hidden:
        frame["people"] = []
    with pytest.raises(InputError, match="hips"):
        operations.stabilise(rgb, alpha, pose_keypoint=hidden)
