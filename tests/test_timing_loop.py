"""Timing a cycle (walk, run, idle) as a loop: keys found across the seam, the seam timed like the rest.

The clip is one cycle of a textured ball swinging side to side (tests/support/timing_synth.py): frame 0
follows the last frame, so a loop must step from its last drawing to its first as evenly as inside.
"""

from __future__ import annotations

import numpy as np
import pytest
from gameanim import api
from support import timing_synth as ts


def _x(frames) -> np.ndarray:
    return np.array([ts.centroid(np.asarray(f)[..., 3])[0] for f in frames])


@pytest.mark.parametrize("phase", [0, 3])
def test_loop_keys_are_the_extremes_without_forced_ends(phase):
    positions, extremes = ts.swing_cycle(phase=phase)
    rgb, alpha = ts.render(positions)
    found = api.key_poses(rgb, alpha, loop=True)
    assert len(found) == len(extremes) and all(abs(f - e) <= 1 for f, e in zip(found, extremes, strict=True)), found
    report = api.key_pose_report(rgb, alpha, loop=True)
    # frame 0 is found by its motion (the swing's turn), not put in as the clip's "first" frame
    assert all(r["reason"].startswith("motion minimum") for r in report), report
    # As a plain clip the two ends are always keys (the old behaviour, kept when loop is off).
    assert {0, len(rgb) - 1} <= set(api.key_poses(rgb, alpha))


def test_loop_output_steps_across_the_seam_like_inside_the_cycle():
    positions, extremes = ts.swing_cycle()
    rgb, alpha = ts.render(positions)
    clip = np.concatenate([rgb, alpha[..., None]], axis=-1)
    out, durations = api.time_animation(clip, extremes, on=2, hold=2, spacing="even", loop=True)
    assert sum(durations) == len(rgb)  # the cycle keeps its length: the last key is not shown again at the end
    assert np.array_equal(out[0].numpy(), clip[extremes[0]]) and out[0] is not out[-1]
    steps = np.abs(np.diff(_x(np.concatenate([out, out[:1]]))))  # ... last drawing -> first drawing
    # even spacing: every step is 1/(n+1) of the 100 px between the extremes, the seam step included
    assert steps[-1] == pytest.approx(100.0 / 6, abs=1.0) and np.abs(steps - 100.0 / 6).max() < 1.0, steps
    plain, _ = api.time_animation(clip, extremes, on=2, hold=2, spacing="even")
    assert abs(_x(plain[-1:])[0] - _x(plain[:1])[0]) < 2.0  # without loop the last frame repeats the first pose


def test_loop_eased_seam_segment_mirrors_the_others():
    positions, extremes = ts.swing_cycle(phase=5)
    rgb, alpha = ts.render(positions)
    clip = np.concatenate([rgb, alpha[..., None]], axis=-1)
    out, durations = api.time_animation(clip, extremes, on=2, hold=2, spacing="ease-in-out", loop=True)
    x = _x(out)
    keys = [i for i, frame in enumerate(out) if any(np.array_equal(frame.numpy(), clip[k]) for k in extremes)]
    assert len(keys) == 2 and sum(durations) == len(rgb)
    first = np.abs(np.diff(x[keys[0] : keys[1] + 1]))
    seam = np.abs(np.diff(np.concatenate([x[keys[1] :], x[:1]])))  # second key -> around the seam -> first key
    assert len(first) == len(seam) and np.abs(first - seam).max() < 1.0, (first, seam)
