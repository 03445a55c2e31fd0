"""Benchmark pose-from-rig: BVH → 512x512 OpenPose maps, and capsule depth/normal maps.

    python bench/pose.py [--frames 480] [--size 512] [--repeat 5] [--base c1c5bc4]

Prints maps/s (wall) and maps per CPU-second for the whole path (parse, FK, mapping, camera fit,
drawing, float32 IMAGE tensor), today's code against the code of ``--base`` (git) loaded beside
it, runs interleaved, medians; the same path on one thread; then drawing alone (new/old), pybvh's
parser + kinematics as the BVH-reading baseline (when installed) and the capsule maps.  With a CUDA
device it also prints the peak VRAM of the whole path (the maps are drawn on the CPU: 0 is expected).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path

from _common import ROOT, import_pack, interleaved_medians, modules_at, one_thread

# The pack before the OpenPose drawing was planned with numpy and painted on threads.
BASE = "c1c5bc4"


def timed(fn, repeats: int = 3):
    best, result = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def long_bvh(frames: int, folder: Path) -> Path:
    """The shipped run cycle repeated to ``frames`` frames."""
    from gameanim.nodes.pose.conditions import SAMPLE_RUN_CYCLE

    text = SAMPLE_RUN_CYCLE.read_text()
    head, motion = text.split("MOTION\n")
    rows = motion.strip().splitlines()[2:]
    body = [rows[i % len(rows)] for i in range(frames)]
    path = folder / "long.bvh"
    path.write_text(head + f"MOTION\nFrames: {frames}\nFrame Time: 0.0333333\n" + "\n".join(body) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=480)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved runs per variant; medians are shown")
    parser.add_argument("--base", default=BASE, help="git commit whose pose drawing is the baseline")
    args = parser.parse_args()
    import_pack()
    import cv2
    import torch
    from gameanim.core.threads import WORKERS
    from gameanim.nodes.pose.bvh import forward_kinematics, read_bvh
    from gameanim.nodes.pose.conditions import CameraSettings
    from gameanim.nodes.pose.joint_tracks import load_motion
    from gameanim.nodes.pose.maps import project_pose, render_capsule_maps, render_pose_maps
    from gameanim.nodes.pose.skeleton import pose3d_from_motion

    n, size = args.frames, args.size
    print(
        f"cv2 threads {cv2.getNumThreads()}, torch threads {torch.get_num_threads()}, drawing threads up to {WORKERS}, "
        f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; {n} frames, {size}x{size}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = long_bvh(n, Path(tmp))
        settings = CameraSettings(preset="three_quarter", width=size, height=size, follow_root=True)

        def whole_path(render):
            def run():
                pose = pose3d_from_motion(load_motion(path))
                projected = project_pose(pose, settings.fit(pose))
                return torch.from_numpy(render(projected, size, size, as_float=True))

            return run

        old = modules_at(args.base, "nodes/pose", ["render", "maps"])
        paths = {
            "new": whole_path(render_pose_maps),
            "new, 1 thread": one_thread(whole_path(render_pose_maps)),
        }
        if old is not None:
            paths["old"] = whole_path(old["maps"].render_pose_maps)
        else:
            print(f"commit {args.base} not available (shallow clone?): old/new comparison skipped")
        medians = interleaved_medians(paths, args.repeat)
        print("BVH -> IMAGE pose maps, whole path (parse, FK, map, fit, draw, float32 IMAGE); medians:")
        for name, (wall, cpu) in medians.items():
            print(
                f"  {name:14s} {n / wall:8.0f} maps/s   {n / cpu:8.0f} maps per CPU-second   ({1000 * cpu / n:.3f} ms CPU/map)"
            )
        if "old" in medians:
            print(
                f"  ratio new/old speed: {medians['old'][0] / medians['new'][0]:.2f}x wall, "
                f"{medians['old'][1] / medians['new'][1]:.2f}x CPU"
            )
            pose = pose3d_from_motion(load_motion(path))
            projected = project_pose(pose, settings.fit(pose))
            draw = interleaved_medians(
                {
                    "new": lambda: render_pose_maps(projected, size, size),
                    "old": lambda: old["maps"].render_pose_maps(projected, size, size),
                },
                args.repeat,
            )
            same = (
                render_pose_maps(projected, size, size) == old["maps"].render_pose_maps(projected, size, size)
            ).all()
            print(
                f"draw only (uint8): new {n / draw['new'][0]:.0f} maps/s, old {n / draw['old'][0]:.0f} maps/s, "
                f"ratio {draw['old'][0] / draw['new'][0]:.2f}x; maps identical: {bool(same)}"
            )
        kernel_share(paths["new"], n)
        t_ours, _ = timed(lambda: forward_kinematics(read_bvh(path)))
        print(f"BVH read + FK (ours)            {n / t_ours:10.0f} frames/s  ({1000 * t_ours:.1f} ms)")
        try:
            import pybvh

            t_pybvh, _ = timed(lambda: pybvh.frames_to_node_positions(pybvh.read_bvh_file(path, world_up="+y")))
            print(
                f"BVH read + FK (pybvh baseline)  {n / t_pybvh:10.0f} frames/s  ratio ours/pybvh speed {t_pybvh / t_ours:.2f}x"
            )
        except ImportError:
            print("pybvh not installed: parser baseline skipped")
        m = min(n, 96)
        sub = pose3d_from_motion(load_motion(path, m))
        camera = settings.fit(sub)
        t_caps, _ = timed(lambda: render_capsule_maps(sub, camera), repeats=2)
        print(f"capsule depth + normal maps     {m / t_caps:10.0f} frames/s  ({1000 * t_caps / m:.1f} ms/frame)")
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
            paths["new"]()
            print(
                f"peak VRAM of the whole path: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB (drawn on the CPU)"
            )
        else:
            print("no CUDA device: VRAM not measured (the pose maps are drawn on the CPU)")
        blender_timings(Path(tmp))


def kernel_share(run, n: int) -> None:
    """User and system CPU of one whole-path run and its page faults: a batch of float maps is 12 bytes
    per pixel of fresh memory, and on a virtual machine the kernel's first-touch cost of it can
    outweigh the drawing (docs/pose.md)."""
    try:
        import resource
    except ImportError:  # Windows
        print("resource module not available: user/system split skipped")
        return
    before = resource.getrusage(resource.RUSAGE_SELF)
    run()
    after = resource.getrusage(resource.RUSAGE_SELF)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    faults = after.ru_minflt - before.ru_minflt
    print(
        f"one whole-path run: user {1000 * user / n:.3f} ms/map, system {1000 * system / n:.3f} ms/map, "
        f"{faults / n:.0f} page faults/map (Linux getrusage)"
    )


def blender_timings(folder: Path) -> None:
    """Worker start, FBX load, motion read-out and Workbench mesh render, when GAMEANIM_BLENDER is set."""
    import os
    import subprocess

    from gameanim.nodes.pose.blender_client import ENV_VAR, BlenderWorker, render_rig_maps, worker_command
    from gameanim.nodes.pose.conditions import SAMPLE_RUN_CYCLE, CameraSettings
    from gameanim.nodes.pose.joint_tracks import motion_from_dict
    from gameanim.nodes.pose.skeleton import pose3d_from_motion

    blender = os.environ.get(ENV_VAR, "")
    if not blender:
        print(f"{ENV_VAR} not set: Blender worker timings skipped")
        return
    fbx = folder / "run_cycle.fbx"
    maker = ROOT / "tests" / "fixtures" / "pose" / "make_mixamo_fbx.py"
    subprocess.run(
        worker_command(blender, maker, [str(SAMPLE_RUN_CYCLE), str(fbx), "--head-sphere"]),
        check=True,
        capture_output=True,
    )
    start = time.perf_counter()
    with BlenderWorker(blender) as worker:
        t_start = time.perf_counter() - start
        worker.request("load", path=str(fbx))
        t_load = time.perf_counter() - start - t_start
        data = worker.request("motion")["motion"]
        t_motion = time.perf_counter() - start - t_start - t_load
    n = len(data["frames"])
    print(f"Blender worker: start {t_start:.2f} s, FBX load {t_load:.2f} s, motion {n / t_motion:.0f} frames/s")
    pose = pose3d_from_motion(motion_from_dict(data))
    camera = CameraSettings(preset="three_quarter", width=256, height=256).fit(pose)
    t_render, _ = timed(lambda: render_rig_maps(fbx, pose, camera, blender), repeats=1)
    print(f"mesh maps (Workbench, 256x256, incl. worker start) {n / t_render:.1f} frames/s ({t_render:.1f} s for {n})")


if __name__ == "__main__":
    main()
