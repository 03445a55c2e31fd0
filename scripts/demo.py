"""GameAnim's one-command demo: render the shipped run cycle to pose frames, with no downloaded weights.

    python scripts/demo.py --out demo_out

Writes ``demo_out/pose/pose_0000.png …`` (orientation-true OpenPose maps), ``pose_keypoints.json``
(POSE_KEYPOINT, the comfyui_controlnet_aux format), ``pose_sheet.png`` + ``pose_sheet.json`` (a
sprite sheet with its TexturePacker atlas, via ``api.save_sprite_sheet``) and ``pose.gif``.  Other GameAnim features extend this demo (motion scope, sprite sheet from generated
frames) once they land.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def import_pack():
    """Import the pack by path as ``gameanim`` (the same way ComfyUI and the tests do)."""
    if "gameanim" in sys.modules:
        return sys.modules["gameanim"]
    spec = importlib.util.spec_from_file_location(
        "gameanim", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["gameanim"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("gameanim_demo"), help="output folder (created)")
    parser.add_argument(
        "--motion", type=Path, default=None, help="a .bvh or .json motion (default: the shipped run cycle)"
    )
    parser.add_argument(
        "--camera", default="side_right", help="front, back, side_left, side_right, three_quarter or top"
    )
    parser.add_argument("--size", type=int, default=512, help="square canvas size in pixels")
    parser.add_argument("--step", type=int, default=2, help="use every n-th frame")
    args = parser.parse_args(argv)

    import_pack()
    import torch
    from gameanim import api
    from gameanim.nodes.pose.render_motion import SAMPLE_RUN_CYCLE, CameraSettings, render_motion_file
    from PIL import Image

    motion = args.motion or SAMPLE_RUN_CYCLE
    step = max(1, args.step)
    start = time.perf_counter()
    settings = CameraSettings(preset=args.camera, width=args.size, height=args.size, follow_root=True)
    result = render_motion_file(motion, settings, (0, None, step))
    elapsed = time.perf_counter() - start

    pose_dir = args.out / "pose"
    pose_dir.mkdir(parents=True, exist_ok=True)
    for i, frame in enumerate(result.pose_maps):
        Image.fromarray(frame).save(pose_dir / f"pose_{i:04d}.png")
    (args.out / "pose_keypoints.json").write_text(json.dumps(result.keypoints), encoding="utf-8")
    rgb = torch.from_numpy(result.pose_maps).float() / 255.0
    alpha = torch.ones(rgb.shape[:3])
    written = api.save_sprite_sheet(rgb, alpha, args.out, "pose_sheet", formats=("texturepacker_hash",))
    written += api.export_animation(rgb, None, args.out, "pose", "gif", fps=result.pose.fps / step)
    print(
        f"{len(result.pose_maps)} pose frames ({args.camera}, {args.size}px, mapping {result.pose.mapping}) in {elapsed:.2f} s"
    )
    for path in [pose_dir, args.out / "pose_keypoints.json", *written]:
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
