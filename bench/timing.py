"""Benchmark of the timing nodes: frames/s of key poses, retiming and smears against plain DIS flow.

Run: ``python bench/timing.py [--frames 24] [--repeat 3]``.  Clips are synthetic (the motion scope's
textured sprite moving 6 px/frame) at sprite sizes 128x128 and 256x256.  The baseline, measured in the
same run, is one forward DIS MEDIUM pass over the clip (what the motion scope pays); the timing nodes
measure both directions with centroid pre-alignment, so about 2x the baseline is expected for
``measure``.  Smears only look back: their flow step (backward only) is printed next to the both-ways
flows they computed before, and the whole smear against itself plus that unused forward pass.  Steps are
timed round-robin (best of ``--repeat``) so load on a shared machine hits them alike.  Printed:
seconds, frames/s and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import os

from _common import import_pack, interleaved_best


def bench_size(size: int, frames: int, repeat: int) -> None:
    """Time every step on one clip of ``size`` x ``size`` px and print it against the DIS baseline."""
    from gameanim.nodes.motion.flow import estimate_flow
    from gameanim.nodes.motion.synthetic import moving_sprite_clip
    from gameanim.nodes.timing.clip_motion import measure, pair_flows, subject_masks
    from gameanim.nodes.timing.keyposes import find_key_poses
    from gameanim.nodes.timing.retime import retime
    from gameanim.nodes.timing.smear import smear_frames

    rgb, mask = moving_sprite_clip(frames, size, size, 6.0, 0.0, "plain", 0.0, 0, 0.4)
    motion = measure(rgb, mask)
    keys = [k.frame for k in find_key_poses(motion)]
    masks = subject_masks(rgb, mask)

    steps = {
        "baseline: DIS forward": lambda: estimate_flow(rgb * mask[..., None], "dis_medium"),
        "measure (flow both ways)": lambda: measure(rgb, mask),
        "key poses (after measure)": lambda: find_key_poses(motion),
        "retime on 2s ease-in-out": lambda: retime(rgb, mask, motion, keys, 2, 2, "ease-in-out"),
        "smear flows: both ways": lambda: pair_flows(rgb, mask, masks, forward=True),
        "smear flows: backward only": lambda: pair_flows(rgb, mask, masks, forward=False),
        "smear (incl. its flow)": lambda: smear_frames(rgb, mask, threshold=4.0),
    }
    times = interleaved_best(steps, repeat)
    base = times["baseline: DIS forward"]
    for name, seconds in times.items():
        print(
            f"{size}x{size}  {name:28s} {seconds:7.3f} s  {frames / seconds:8.1f} frames/s  "
            f"x{seconds / base:5.2f} of baseline"
        )
    both, backward, smear = (
        times[k] for k in ("smear flows: both ways", "smear flows: backward only", "smear (incl. its flow)")
    )
    before = smear + both - backward  # the smear as it was: the same work plus the unused forward pass
    print(f"{size}x{size}  smear now/before: flow step x{backward / both:.2f}, whole smear x{smear / before:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=24, help="frames per clip (default 24)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per step; the best is shown (load noise)")
    args = parser.parse_args()
    import_pack()
    print(f"cores={os.cpu_count()} load={os.getloadavg()[0]:.1f} frames={args.frames}")
    for size in (128, 256):
        bench_size(size, args.frames, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
