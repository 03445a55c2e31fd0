"""The docs picture of rendered training clips and their true alpha (docs/images/training_clips.png).

    GAMEANIM_BLENDER=... python scripts/training_clip_pictures.py [--assets .cache/test-assets]

Renders assimp's test characters (see tests/support/rig_assets.py) with Workbench: the bull's run from the side on
grey (4 of 16 frames), the textured Mr. Fixit's idle from the front-right on white (8 of 16 frames, narrower);
each clip's frames above its alpha.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _pack import ROOT, import_pack


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assets", type=Path, default=ROOT / ".cache" / "test-assets")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "training_clips.png")
    args = parser.parse_args()
    import_pack()
    import numpy as np
    from gameanim.nodes.pose.training_clips import ActionSpec, ClipSettings, read_clip, render_training_clips
    from PIL import Image

    rows = []
    jobs = [  # file, action, words, view, key, facing, frame width, frames shown (each row 1024 px wide)
        ("Testwuson.glb", "Wuson_Run", "running", "side_right", "grey", "-Y", 256, range(0, 16, 4)),
        ("mrfixit.glb", "idle", "standing", "front_right", "white", "+X", 128, range(0, 16, 2)),
    ]
    for file, action, words, view, key, facing, width, picked in jobs:
        with tempfile.TemporaryDirectory() as out:
            settings = ClipSettings(frames=16, width=width, height=160, facing=facing)
            (clip,) = render_training_clips(
                args.assets / file,
                out,
                "character",
                [ActionSpec(action, None, words)],
                [view],
                [key],
                settings=settings,
            )
            frames, alpha, _ = read_clip(clip.folder)
        rows.append(np.concatenate([frames[i] for i in picked], axis=1))
        rows.append(np.concatenate([np.repeat(alpha[i][..., None], 3, axis=2) for i in picked], axis=1))
    Image.fromarray(np.concatenate(rows, axis=0)).save(args.out, optimize=True)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
