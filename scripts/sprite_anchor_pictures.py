"""Draw the pictures of the anchor modes in ``docs/sprite.md`` (``docs/images/sprite_anchor_*.png``).

Run: ``python scripts/sprite_anchor_pictures.py`` (needs the arcade wheel in ``.cache/test-assets``, see
``tests/sprite_real.py``).  Each picture overlays the 8 frames of Kenney's CC0 robot walk (onion
skin), marks every frame's head x (red ticks at the top) and ground line (blue ticks at the bottom),
before and after :func:`anchor.stabilise` in one mode.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from _pack import import_pack

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def overlay(alpha: np.ndarray, title: str, anchor) -> np.ndarray:
    """An RGB picture: onion skin of all frames, head-x ticks (red) and ground ticks (blue)."""
    import cv2

    pad = max(0, 240 - alpha.shape[2])
    alpha = np.pad(alpha, ((0, 0), (0, 0), (pad // 2, pad - pad // 2)))
    t, h, w = alpha.shape
    pic = np.full((h + 60, w, 3), 245, np.uint8)
    skin = alpha.mean(axis=0)
    pic[20 : 20 + h] = (245 - skin[..., None] * np.array([190, 150, 90])).clip(0, 255).astype(np.uint8)
    for x in anchor.head_x(alpha):
        cv2.line(pic, (int(round(x)), 0), (int(round(x)), 16), (220, 30, 30), 1)
    for y in anchor.ground_y(alpha):
        cv2.line(pic, (0, 20 + int(y)), (12, 20 + int(y)), (30, 60, 220), 1)
    span = np.ptp(anchor.head_x(alpha))
    cv2.putText(pic, title, (8, h + 36), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1)
    cv2.putText(pic, f"head span {span:.0f} px", (8, h + 54), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1)
    return pic


def main() -> None:
    import_pack()
    import sprite_real as real
    from gameanim.nodes.sprite import anchor
    from PIL import Image

    out = ROOT / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    _, jittered, _ = real.composite("robot", (0, 0, 0), size=(300, 260), jitter=4, seed=3)
    _, walk = real.walk_cycle("robot")
    travel = np.zeros((8, 128, 96 + 56), np.float32)
    for i in range(8):
        travel[i, :, 7 * i : 7 * i + 96] = walk[i]
    cases = {
        "input": (jittered, None),
        "feet_lock": (jittered, {"anchor": "feet", "mode": "lock"}),
        "feet_smooth": (jittered, {"anchor": "feet", "mode": "smooth"}),
        "none": (jittered, {"anchor": "feet", "mode": "none"}),
        "travel_input": (travel, None),
        "travel_lock": (travel, {"anchor": "feet", "mode": "lock"}),
    }
    for name, (alpha, options) in cases.items():
        if options is not None:
            alpha = anchor.stabilise(np.zeros((*alpha.shape, 3), np.float32), alpha, **options).alpha
        Image.fromarray(overlay(alpha, name, anchor)).save(out / f"sprite_anchor_{name}.png", optimize=True)
        print(out / f"sprite_anchor_{name}.png")


if __name__ == "__main__":
    main()
