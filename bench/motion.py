"""Benchmark of the motion-scope estimator: frame pairs/s and scope accuracy per flow method.

Run: ``python bench/motion.py [--pairs 30] [--raft [--device cuda]] [--base 721caed] [--default-only]``.  Clips are synthetic
(a textured sprite moving at a known speed), rendered at 320x512 and 480x720.

First the default (DIS medium flow + scope step at 320x512): today's code against the code of ``--base``
(git) loaded beside it, runs interleaved, medians of pairs/s and pairs per CPU-second, today's code also
on one thread and with full-frame flow; then the scope
and level old and new code measure on the same clips (synthetic at known speeds, real sprites as
published) and their ACC-F / MAE-F.  Then for each method: flow pairs/s, pairs/s
including the scope step (texture test, quantile, means), the ratio to Farneback (the baseline,
measured in the same run) and the measured scope / true speed on a plain and a textured background.
``--raft`` adds torchvision RAFT small/large with random weights (speed only: random weights say
nothing about accuracy); expect seconds per pair on a CPU.  ``--device cuda`` runs RAFT on the GPU
and prints its peak VRAM (``torch.cuda.max_memory_allocated``); DIS and Farneback always run on the CPU.
"""

from __future__ import annotations

import argparse
import os
import time

from _common import import_pack, interleaved_medians, modules_at, one_thread

# The pack before flow and the scope step were computed only in the box where a pair's frames differ.
BASE = "721caed"


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
    from gameanim.nodes.motion.flow import FlowSettings, estimate_flow
    from gameanim.nodes.motion.measure import measure_clip
    from gameanim.nodes.motion.scope import reference_scale, scope_from_flow
    from gameanim.nodes.motion.synthetic import moving_sprite_clip

    px = args.speed / reference_scale(320, 512)
    clip = torch.from_numpy(moving_sprite_clip(args.pairs + 1, 320, 512, px, 0.0, "textured", 0.0, 0)[0])
    full_frame = FlowSettings(still_tolerance=None)
    variants = {
        "new": lambda: scope_from_flow(estimate_flow(clip), clip),
        "new, 1 thread": one_thread(lambda: scope_from_flow(estimate_flow(clip), clip)),
        "new, full frame": lambda: scope_from_flow(estimate_flow(clip, settings=full_frame), clip),
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
        for new, base in (("new", "old"), ("new measure_clip", "old measure_clip")):
            print(
                f"  ratio {new}/{base} speed: {medians[base][0] / medians[new][0]:.2f}x wall, "
                f"{medians[base][1] / medians[new][1]:.2f}x CPU"
            )
        accuracy(old)


def accuracy_clips() -> dict[str, tuple[object, float | None]]:
    """Clips whose scope old and new code both measure: ``name -> (frames, true scope or None)``.

    Synthetic sprites at known speeds (16 frames, 320x512, plain and textured background) and, when
    the test assets are present, real animated sprites walking in place (Kenney CC0 from the arcade
    wheel, Tux4Kids and Frozen-Bubble art from Debian) on a key or a still textured backdrop,
    published as PNG and as H.264 (``tests/support/sprite_sources.py``)."""
    import numpy as np
    from gameanim.nodes.motion.scope import reference_scale
    from gameanim.nodes.motion.synthetic import moving_sprite_clip

    clips: dict[str, tuple[object, float | None]] = {}
    for background in ("plain", "textured"):
        for speed in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0):
            frames = moving_sprite_clip(16, 320, 512, speed, background=background)[0]
            clips[f"{background} {speed:g} px/frame"] = (frames, speed * reference_scale(320, 512))
    try:
        from tests.support import sprite_sources

        for index, name in enumerate(["kenney_robot", "kenney_zombie", "tuxmath_penguin", "frozen_bubble"]):
            rgb, alpha = sprite_sources.sources()[name].load()
            key = (0.5, 0.5, 0.5) if index % 2 else (0.0, 0.8, 0.25)
            frames, _ = sprite_sources.composite(rgb, alpha, key, scale=2.0, jitter=4, seed=index)
            if index >= 2:
                backdrop = moving_sprite_clip(2, *frames.shape[1:3], 0.0, background="textured", seed=index)[0][0]
                is_key = (np.abs(frames - np.rint(np.asarray(key) * 255) / 255) < 0.5 / 255).all(axis=-1)
                frames = np.where(is_key[..., None], backdrop[None], frames)
            for form in ("png", "h264"):
                published = sprite_sources.publish_as(np.rint(frames * 255).astype(np.uint8), form)
                clips[f"{name} {form}"] = (published.astype(np.float32) / 255, None)
    except Exception as error:  # noqa: BLE001 - assets or PyAV missing: the synthetic clips still compare
        print(f"real sprites skipped: {error}")
    return clips


def accuracy(old) -> None:
    """Scope and level of each :func:`accuracy_clips` clip, old code and new, and ACC-F / MAE-F of both
    on the synthetic clips against their true levels."""
    from gameanim.nodes.motion.evaluate import level_metrics
    from gameanim.nodes.motion.levels import level_of
    from gameanim.nodes.motion.measure import measure_clip

    print("\naccuracy, old vs new (measure_clip = api.motion_scope); truth for the synthetic clips")
    print(f"  {'clip':26s} {'truth':>7s} {'old':>7s} {'new':>7s} {'new/old':>8s} {'levels old/new':>15s}")
    targets, levels_old, levels_new = [], [], []
    for name, (frames, truth) in accuracy_clips().items():
        before = old["measure"].measure_clip(frames)
        after = measure_clip(frames)
        ratio = after.result.scope / before.result.scope if before.result.scope else float("nan")
        shown = f"{truth:7.3f}" if truth is not None else f"{'':>7s}"
        print(
            f"  {name:26s} {shown} {before.result.scope:7.3f} {after.result.scope:7.3f} {ratio:8.3f} "
            f"{before.level:>7d}/{after.level}"
        )
        if truth is not None:
            targets.append(level_of(truth))
            levels_old.append(before.level)
            levels_new.append(after.level)
    acc_old, mae_old = level_metrics(levels_old, targets)
    acc_new, mae_new = level_metrics(levels_new, targets)
    print(
        f"  ACC-F / MAE-F on the synthetic clips: old {acc_old:.3f} / {mae_old:.3f}, new {acc_new:.3f} / {mae_new:.3f}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
