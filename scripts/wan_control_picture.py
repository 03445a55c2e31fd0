"""Draw ``docs/images/wan_pose_control.png``: the Wan control video the rig-to-sprites workflow renders.

``python scripts/wan_control_picture.py`` runs the same nodes as ``workflows/api/rig_to_sprites_wan.json``
(shipped run cycle, side view, Fit Motion to Wan at 16 fps) at 192x192 and saves every second frame in a strip.
"""

from __future__ import annotations

import numpy as np
from _pack import ROOT, import_pack
from PIL import Image

OUT = ROOT / "docs" / "images" / "wan_pose_control.png"


def main() -> None:
    import_pack()
    from gameanim.nodes.pose import comfy_nodes as nodes

    (pose,) = nodes.LoadMotion().load("sample:run_cycle.bvh", 0, -1, 1, "auto")
    (camera,) = nodes.PoseCamera().build("side_right", "orthographic", 200, 200, 0.1, True, 30.0)
    pose, cam, _, height, length, fps = nodes.FitPoseToWan().fit(pose, camera, 16.0, 81, "fit_whole_motion")
    images, _ = nodes.RenderPose().render(pose, cam, 3, False)["result"]
    frames = (images.numpy() * 255).round().astype(np.uint8)[::2]
    gap = np.full((height, 4, 3), 80, np.uint8)
    strip = np.concatenate([part for f in frames for part in (f, gap)][:-1], axis=1)
    Image.fromarray(strip).save(OUT, optimize=True)
    print(f"wrote {OUT} ({length} frames at {fps:g} fps, every second one shown)")


if __name__ == "__main__":
    main()
