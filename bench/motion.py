"""Benchmark of the motion-scope estimator: frame pairs/s and scope accuracy per flow method.

Run: ``python bench/motion.py [--pairs 30] [--raft [--device cuda]] [--base c1c5bc4] [--default-only]``.  Clips are synthetic
(a textured sprite moving at a known speed), rendered at 320x512 and 480x720.

First the default (DIS medium flow + scope step at 320x512): today's code against the code of ``--base``
(git) loaded beside it, runs interleaved, medians of pairs/s and pairs per CPU-second, today's code also
on one thread, and whether both give the same scope.  Then for each method: flow pairs/s, pairs/s
including the scope step (texture test, quantile, means), the ratio to Farneback (the baseline,
measured in the same run) and the measured scope / true speed on a plain and a textured background.
``--raft`` adds torchvision RAFT small/large with random weights (speed only: random weights say
nothing about accuracy); expect seconds per pair on a CPU.  ``--device cuda`` runs RAFT on the GPU
and prints its peak VRAM (``torch.cuda.max_memory_allocated``); DIS and Farneback always run on the CPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

from _common import import_pack, interleaved_medians, modules_at, one_thread

# The pack before frame pairs and the scope step ran on threads.
BASE = "c1c5bc4"


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
    parser.add_argument("--device", default="cpu", help="device for RAFT (cuda: GPU timing and peak VRAM)")
    parser.add_argument("--base", default=BASE, help="git commit whose motion scope is the baseline")
    parser.add_argument("--default-only", action="store_true", help="only the default's old/new comparison")
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
    old_vs_new(args)
    if args.default_only:
        return 0
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
            cuda = str(args.device).startswith("cuda")
            for variant in ("raft_small", "raft_large"):
                model = _build_raft(variant).train(False)
                pairs = 3
                frames = clips["plain"][: pairs + 1]
                settings = FlowSettings(batch_size=pairs, device=args.device)
                estimate_flow(frames, variant, model, settings)  # warm-up: kernels, allocator
                if cuda:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                rate, cpu = best_rate(
                    lambda v=variant, f=frames, mm=model, st=settings: estimate_flow(f, v, mm, st), pairs, 1
                )
                vram = f", peak VRAM {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB" if cuda else ""
                print(
                    f"{variant:14s} {rate:12.2f} {cpu:12.2f} {'':>15s} {rate / baseline:12.3f}   "
                    f"(random weights, {pairs} pairs, batch {pairs}, {args.device}{vram})"
                )
    return 0


def old_vs_new(args) -> None:
    """The default at 320x512 (DIS medium + scope step), today's code against ``args.base``'s, interleaved."""
    import torch
    from gameanim.nodes.motion.flow import estimate_flow
    from gameanim.nodes.motion.measure import measure_clip
    from gameanim.nodes.motion.scope import reference_scale, scope_from_flow
    from gameanim.nodes.motion.synthetic import moving_sprite_clip

    px = args.speed / reference_scale(320, 512)
    clip = torch.from_numpy(moving_sprite_clip(args.pairs + 1, 320, 512, px, 0.0, "textured", 0.0, 0)[0])
    variants = {
        "new": lambda: scope_from_flow(estimate_flow(clip), clip),
        "new, 1 thread": one_thread(lambda: scope_from_flow(estimate_flow(clip), clip)),
        "new measure_clip": lambda: measure_clip(clip),
    }
    old = modules_at(args.base, "nodes/motion", ["frames", "flow", "scope", "levels", "measure"])
    if old is not None:
        variants["old"] = lambda: old["scope"].scope_from_flow(old["flow"].estimate_flow(clip), clip)
        variants["old measure_clip"] = lambda: old["measure"].measure_clip(clip)
    else:
        print(f"commit {args.base} not available (shallow clone?): old/new comparison skipped")
    medians = interleaved_medians(variants, max(args.repeat, 5))
    print(
        f"\ndefault: dis_medium flow + scope step (estimate_flow + scope_from_flow; measure_clip = api.motion_scope), "
        f"320x512, {args.pairs} pairs, textured; medians"
    )
    for name, (wall, cpu) in medians.items():
        print(f"  {name:18s} {args.pairs / wall:8.1f} pairs/s   {args.pairs / cpu:8.1f} pairs per CPU-second")
    if old is not None:
        same = dataclasses.astuple(variants["new"]()) == dataclasses.astuple(variants["old"]())
        same_measure = dataclasses.astuple(variants["new measure_clip"]().result) == dataclasses.astuple(
            variants["old measure_clip"]().result
        )
        for new, base in (("new", "old"), ("new measure_clip", "old measure_clip")):
            print(
                f"  ratio {new}/{base} speed: {medians[base][0] / medians[new][0]:.2f}x wall, "
                f"{medians[base][1] / medians[new][1]:.2f}x CPU"
            )
        print(f"  same scope, threshold and per-pair values: flow + scope {same}, measure_clip {same_measure}")


if __name__ == "__main__":
    raise SystemExit(main())
