"""Draw ``docs/images/direction_set_pose.png``: the eight control videos of the direction-set workflow.

``python scripts/direction_set_picture.py`` runs the nodes of ``workflows/api/rig_to_direction_set.json`` up to
Render Pose (shipped run cycle, Pose Camera at 30° elevation, Direction Set with 8 directions, Fit Motion to
Wan) at 160x160 and saves one frame of each direction in sheet order, labelled with its animation name.
"""

from __future__ import annotations

import numpy as np
from _pack import ROOT, import_pack
from PIL import Image, ImageDraw

OUT = ROOT / "docs" / "images" / "direction_set_pose.png"
FRAME = 3  # mid-stride, so both legs and arms are apart


def main() -> None:
    import_pack()
    from gameanim.nodes.pose import comfy_nodes as nodes

    (pose,) = nodes.LoadMotion().load("sample:run_cycle.bvh", 0, -1, 1, "auto")
    (camera,) = nodes.PoseCamera().build("side_right", "orthographic", 160, 160, 0.08, True, 30.0, elevation=30.0)
    poses, cameras, names, _ = nodes.DirectionSet().expand(pose, camera, "run", "8")
    tiles = []
    for clip_pose, clip_camera, name in zip(poses, cameras, names, strict=True):
        fitted, cam, *_ = nodes.FitPoseToWan().fit(clip_pose, clip_camera, 16.0, 81, "fit_whole_motion")
        images, _ = nodes.RenderPose().render(fitted, cam, 3, False)["result"]
        tile = Image.fromarray((images[FRAME].numpy() * 255).round().astype(np.uint8))
        ImageDraw.Draw(tile).text((4, 2), name, fill=(255, 255, 255))
        tiles.append(np.asarray(tile))
    gap = np.full((tiles[0].shape[0], 4, 3), 80, np.uint8)
    strip = np.concatenate([part for t in tiles for part in (t, gap)][:-1], axis=1)
    Image.fromarray(strip).save(OUT, optimize=True)
    print(f"wrote {OUT} ({', '.join(names)})")


if __name__ == "__main__":
    main()
