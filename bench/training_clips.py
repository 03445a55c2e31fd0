"""Benchmark training-clip rendering: seconds per frame at 512x320 with Workbench, Eevee and Cycles (CPU).

    GAMEANIM_BLENDER=... python bench/training_clips.py [--character .cache/test-assets/Testwuson.glb]
        [--frames 4] [--engines workbench,eevee,cycles] [--samples 16]

Each engine renders a 2-frame and an N-frame clip of the same action; the per-frame time is the
difference over N-2 frames (file loading, scene set-up and the first shader compile fall in the fixed
part, which is printed too).  Ratios are against Workbench measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _common import ROOT, import_pack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--character", type=Path, default=ROOT / ".cache" / "test-assets" / "Testwuson.glb")
    parser.add_argument("--action", default="Wuson_Run")
    parser.add_argument("--frames", type=int, default=6)
    parser.add_argument("--engines", default="workbench,eevee,cycles")
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2, help="best of this many runs of each clip")
    args = parser.parse_args()
    import_pack()
    from gameanim.nodes.pose.training_clips import ActionSpec, ClipSettings, render_training_clips

    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs; {args.character.name} {args.action}")
    per_frame: dict[str, float] = {}
    for engine in args.engines.split(","):
        times = []
        for count in (2, args.frames):
            settings = ClipSettings(frames=count, width=512, height=320, engine=engine, samples=args.samples)
            best = float("inf")
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory() as out:
                    start = time.perf_counter()
                    spec = [ActionSpec(args.action, None, "running")]
                    render_training_clips(args.character, out, "bull", spec, settings=settings)
                    best = min(best, time.perf_counter() - start)
            times.append(best)
        per_frame[engine] = (times[1] - times[0]) / (args.frames - 2)
        fixed = times[0] - 2 * per_frame[engine]
        print(
            f"{engine:10s} {per_frame[engine]:7.2f} s/frame  fixed {fixed:6.1f} s  "
            f"16-frame clip ≈ {fixed + 16 * per_frame[engine]:6.1f} s"
        )
    base = per_frame.get("workbench")
    if base:
        for engine, value in per_frame.items():
            print(f"{engine:10s} {value / base:7.1f}x Workbench per frame")


if __name__ == "__main__":
    main()
