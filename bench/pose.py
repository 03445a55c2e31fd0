"""Benchmark pose-from-rig: BVH → 512x512 OpenPose maps, and capsule depth/normal maps.

    python bench/pose.py [--frames 480] [--size 512]

Prints frames/s for each stage and ratios against baselines measured in the same run:
pybvh's parser + kinematics (when installed) for BVH reading, and a plain annotator-order
drawing loop (fixed limb order, no depth sort, no visibility) for the pose maps.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from _common import ROOT, import_pack


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


def annotator_baseline(projected, width: int, height: int):
    """Fixed-order drawing like the ControlNet annotator: limbs in list order, then joints."""
    import cv2
    import numpy as np
    from gameanim.nodes.pose.render import COLORS, LIMBS

    out = np.empty((projected.xy.shape[0], height, width, 3), dtype=np.uint8)
    for f, pts in enumerate(projected.xy):
        canvas = np.zeros((height, width, 3), dtype=np.uint8)
        for k, (a, b) in enumerate(LIMBS):
            (x0, y0), (x1, y1) = pts[a], pts[b]
            length = math.hypot(x1 - x0, y1 - y0)
            angle = math.degrees(math.atan2(y0 - y1, x0 - x1))
            poly = cv2.ellipse2Poly(
                (int((x0 + x1) / 2), int((y0 + y1) / 2)), (int(length / 2), 4), int(angle), 0, 360, 1
            )
            cv2.fillConvexPoly(canvas, poly, [int(c) for c in COLORS[k] * 0.6])
        for i in range(18):
            cv2.circle(canvas, (int(pts[i, 0]), int(pts[i, 1])), 4, [int(c) for c in COLORS[i]], thickness=-1)
        out[f] = canvas
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=480)
    parser.add_argument("--size", type=int, default=512)
    args = parser.parse_args()
    import_pack()
    import cv2
    import torch
    from gameanim.nodes.pose.bvh import forward_kinematics, read_bvh
    from gameanim.nodes.pose.conditions import CameraSettings
    from gameanim.nodes.pose.joint_tracks import load_motion
    from gameanim.nodes.pose.maps import project_pose, render_capsule_maps, render_pose_maps
    from gameanim.nodes.pose.skeleton import pose3d_from_motion

    n, size = args.frames, args.size
    print(f"cv2 threads {cv2.getNumThreads()}, torch threads {torch.get_num_threads()}, {n} frames, {size}x{size}")
    with tempfile.TemporaryDirectory() as tmp:
        path = long_bvh(n, Path(tmp))
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

        settings = CameraSettings(preset="three_quarter", width=size, height=size, follow_root=True)

        def full():
            pose = pose3d_from_motion(load_motion(path))
            projected = project_pose(pose, settings.fit(pose))
            maps = render_pose_maps(projected, size, size, as_float=True)
            return pose, projected, torch.from_numpy(maps)

        t_full, (pose, projected, _) = timed(full)
        print(
            f"BVH -> IMAGE pose maps (full)   {n / t_full:10.0f} frames/s  (parse, FK, map, fit, draw, float32 IMAGE)"
        )
        maps = render_pose_maps(projected, size, size)
        t_tensor, _ = timed(lambda: torch.from_numpy(maps).float().div_(255.0), repeats=2)
        print(f"  baseline: uint8 batch then .float()/255: {1000 * t_tensor / n:.2f} ms/frame extra")
        t_draw, _ = timed(lambda: render_pose_maps(projected, size, size))
        t_base, _ = timed(lambda: annotator_baseline(projected, size, size))
        print(f"draw only, depth-ordered (ours) {n / t_draw:10.0f} frames/s")
        print(
            f"draw only, annotator order      {n / t_base:10.0f} frames/s  ratio ours/baseline time {t_draw / t_base:.2f}"
        )
        m = min(n, 96)
        sub = pose3d_from_motion(load_motion(path, m))
        camera = settings.fit(sub)
        t_caps, _ = timed(lambda: render_capsule_maps(sub, camera), repeats=2)
        print(f"capsule depth + normal maps     {m / t_caps:10.0f} frames/s  ({1000 * t_caps / m:.1f} ms/frame)")
        blender_timings(Path(tmp))


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
