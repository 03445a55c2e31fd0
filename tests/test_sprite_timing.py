"""Timing: holds, counts, fps, ping-pong and loop closure on a planted loop."""

from __future__ import annotations

import gameanim.nodes.sprite.playback as playback
import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError
from support import sprite_synth as synth


def test_index_plans():
    assert playback.hold_indices(7, 2).tolist() == [0, 0, 2, 2, 4, 4, 6]
    assert playback.hold_indices(6, 3).tolist() == [0, 0, 0, 3, 3, 3]
    assert playback.repeat_indices(3, 2).tolist() == [0, 0, 1, 1, 2, 2]
    assert playback.resample_indices(8, 4).tolist() == [0, 2, 4, 6]
    assert playback.resample_indices(3, 6).tolist() == [0, 0, 1, 1, 2, 2]
    assert playback.retime_indices(16, 16, 8).tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    assert playback.retime_indices(4, 8, 12).tolist() == [0, 0, 1, 2, 2, 3]
    assert playback.ping_pong_indices(4).tolist() == [0, 1, 2, 3, 2, 1]
    assert playback.ping_pong_indices(1).tolist() == [0]


def test_bad_timing_inputs():
    with pytest.raises(InputError):
        playback.hold_indices(0, 2)
    with pytest.raises(InputError):
        playback.retime_indices(4, 0, 12)
    with pytest.raises(InputError):
        playback.resample_indices(4, 0)
    with pytest.raises(InputError, match="min_length"):
        playback.find_loop(np.zeros((3, 8, 8, 3), np.float32), None, 4)


@pytest.mark.parametrize(("start", "period"), [(2, 7), (0, 5), (3, 9)])
def test_loop_closure_finds_planted_loop(start, period):
    t = 16
    rng = np.random.default_rng(start)
    # A cycle of `period` poses; frames before `start` are a different lead-in; small noise everywhere.
    cycle = [
        (100 + 25 * np.cos(2 * np.pi * k / period), 110 + 10 * np.sin(2 * np.pi * k / period)) for k in range(period)
    ]
    lead = [(30 + 5 * k, 60.0) for k in range(start)]
    positions = lead + [cycle[k % period] for k in range(t - start)]
    frames, alpha, _ = synth.clip(t=t, h=160, w=256, positions=positions)
    frames = np.clip(frames + rng.normal(0, 0.01, frames.shape), 0, 1).astype(np.float32)
    s, e, score = playback.find_loop(frames, alpha, min_length=period - 1)
    assert (e - s) % period == 0 and s >= start
    assert score < 0.02


def test_collapse_holds_sums_durations():
    frames = np.zeros((6, 4, 4, 3), np.float32)
    frames[2:4] = 0.5
    frames[5] = 1.0
    keep, dur = playback.collapse_holds(frames, None, np.full(6, 50.0))
    assert keep.tolist() == [0, 2, 4, 5]
    assert dur.tolist() == [100, 100, 50, 50]


def test_api_timing_functions_on_tensors():
    frames = torch.arange(6, dtype=torch.float32).view(6, 1, 1, 1).expand(6, 2, 2, 3)
    assert api.hold_frames(frames, 2)[:, 0, 0, 0].tolist() == [0, 0, 2, 2, 4, 4]
    assert len(api.resample_frames(frames, 10)) == 10
    assert len(api.retime(frames, 24, 12)) == 3
    assert api.ping_pong(frames)[:, 0, 0, 0].tolist() == [0, 1, 2, 3, 4, 5, 4, 3, 2, 1]
    start, end, _ = api.find_loop(torch.cat([frames, frames[:1]]), min_length=3)
    assert (start, end) == (0, 6)
