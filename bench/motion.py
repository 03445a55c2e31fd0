"""Benchmark of the motion-scope estimator: frame pairs/s and scope accuracy per flow method.

Run: ``python bench/motion.py [--pairs 30] [--raft]``.  Clips are synthetic (a
textured sprite moving at a known speed), rendered at 320x512 and 480x720.  For each method it prints
flow pairs/s, pairs/s including the scope step (texture test, quantile, means), the ratio to
Farneback (the baseline, measured in the same run) and the measured scope / true speed on a plain and
a textured background.  ``--raft`` adds torchvision RAFT small/large with random weights (speed
only: random weights say nothing about accuracy); expect seconds per pair on a CPU.
"""

from __future__ import annotations

import argparse
import os
import time

from _common import import_pack


def best_rate(work, units: int, repeat: int) -> tuple[float, float]:
    """Units per wall second and per CPU second of the fastest of ``repeat`` runs of ``work()``.

    Other sessions share the cores, so wall time varies with their load; CPU time (this process,
    all threads) barely does: on an idle 2-core machine the wall rate lies between 1x and 2x the
    per-CPU-second rate, depending on how well the method uses both cores.
    """
    best_wall, best_cpu = float("inf"), float("inf")
    for _ in range(max(1, repeat)):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return units / best_wall, units / max(best_cpu, 1e-9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30, help="frame pairs per timing (default 30)")
    parser.add_argument("--speed", type=float, default=6.0, help="sprite speed in px/frame at 480x720")
    parser.add_argument("--repeat", type=int, default=3, help="timings per method; the best is shown (load noise)")
    parser.add_argument("--raft", action="store_true", help="also time RAFT small/large (random weights, slow)")
    args = parser.parse_args()
    import_pack()
    import cv2
    import torch
    from gameanim.nodes.motion.flow import FlowSettings, _build_raft, estimate_flow
    from gameanim.nodes.motion.scope import reference_scale, scope_from_flow
    from gameanim.nodes.motion.synthetic import moving_sprite_clip

    torch.set_num_threads(os.cpu_count() or 1)
    print(
        f"cv2 {cv2.__version__} threads={cv2.getNumThreads()}  torch {torch.__version__}  cores={os.cpu_count()}  "
        f"load={os.getloadavg()[0]:.1f}  pairs={args.pairs}  speed={args.speed} px/frame @480x720"
    )
    methods = ["farneback", "dis_ultrafast", "dis_fast", "dis_medium"]
    for height, width in ((320, 512), (480, 720)):
        px = args.speed / reference_scale(height, width)
        clips = {
            bg: torch.from_numpy(moving_sprite_clip(args.pairs + 1, height, width, px, 0.0, bg, 0.0, 0)[0])
            for bg in ("plain", "textured")
        }
        print(f"\n{height}x{width}")
        print(
            f"{'method':14s} {'flow pairs/s':>12s} {'pairs/CPU-s':>12s} {'+scope pairs/s':>15s} {'x farneback':>12s} "
            f"{'scope/true plain':>17s} {'textured':>9s}"
        )
        baseline = None
        for method in methods:
            flow_rate, flow_cpu = best_rate(
                lambda m=method, c=clips["textured"]: estimate_flow(c, m), args.pairs, args.repeat
            )
            full_rate, _ = best_rate(
                lambda m=method, c=clips["textured"]: scope_from_flow(estimate_flow(c, m), c),
                args.pairs,
                args.repeat,
            )
            textured = scope_from_flow(estimate_flow(clips["textured"], method), clips["textured"]).scope
            plain = scope_from_flow(estimate_flow(clips["plain"], method), clips["plain"]).scope
            baseline = baseline or flow_rate
            print(
                f"{method:14s} {flow_rate:12.1f} {flow_cpu:12.1f} {full_rate:15.1f} {flow_rate / baseline:12.2f} "
                f"{plain / args.speed:17.3f} {textured / args.speed:9.3f}"
            )
        if args.raft:
            for variant in ("raft_small", "raft_large"):
                model = _build_raft(variant).train(False)
                pairs = 3
                frames = clips["plain"][: pairs + 1]
                settings = FlowSettings(batch_size=pairs)
                rate, cpu = best_rate(
                    lambda v=variant, f=frames, mm=model, st=settings: estimate_flow(f, v, mm, st), pairs, 1
                )
                print(
                    f"{variant:14s} {rate:12.2f} {cpu:12.2f} {'':>15s} {rate / baseline:12.3f}   "
                    f"(random weights, {pairs} pairs)"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
