"""Draw one picture per anchor and track mode for ``docs/sprite.md`` (``docs/images/anchor_<mode>.png``).

Run: ``python scripts/sprite_anchor_pictures.py`` (needs the arcade wheel in ``.cache/test-assets``, see
``tests/support/sprite_real.py``).  Each picture puts the clip before (left) and after (right)
:func:`anchor.stabilise` side by side as onion skins: every frame tinted by its time (blue = first,
orange = last), a red tick per frame at the head's x (top), a blue line per frame at the ground line
(bottom) and, for the rig root, a green tick per frame at the hips (mid-hip from the POSE_KEYPOINT).
The clips are Kenney's CC0 robot walk with ±4 px planted jitter (or made to travel), and the
README demo's run cycle rendered from the shipped rig motion.
"""

from __future__ import annotations

import sys

import numpy as np
from _pack import ROOT, import_pack

RED, BLUE, GREEN = (215, 30, 30), (30, 70, 225), (20, 150, 60)
TOP, BOTTOM = 22, 44  # room for the head ticks above and the captions below a panel


def tints(count: int) -> np.ndarray:
    """One colour per frame, blue (first) to orange (last)."""
    f = np.linspace(0.0, 1.0, count)[:, None]
    return (1 - f) * np.array([40, 90, 200]) + f * np.array([235, 140, 30])


def panel(alpha: np.ndarray, caption: str, anchor, width: int, hips: np.ndarray | None = None) -> np.ndarray:
    """An onion-skin panel ``width`` px wide (the clip centred) with the head, ground and hip marks."""
    import cv2

    t, h, w = alpha.shape
    left = (width - w) // 2
    pic = np.full((h + TOP + BOTTOM, width, 3), 250.0)
    ink = np.zeros((h, w, 3))
    for a, colour in zip(alpha, tints(t), strict=True):
        ink += a[..., None] * (250.0 - colour) / t
    pic[TOP : TOP + h, left : left + w] -= 1.15 * ink
    pic = pic.clip(0, 255).astype(np.uint8)
    heads, grounds = anchor.head_x(alpha), anchor.ground_y(alpha)
    for x in heads[np.isfinite(heads)]:
        cv2.line(pic, (left + int(round(x)), 2), (left + int(round(x)), TOP - 4), RED, 1)
    for y in grounds[np.isfinite(grounds)]:
        cv2.line(pic, (left, TOP + int(y) - 1), (left + w - 1, TOP + int(y) - 1), BLUE, 1)
    if hips is not None:
        for x in hips[np.isfinite(hips)]:
            cv2.line(pic, (left + int(round(x)), TOP + h + 2), (left + int(round(x)), TOP + h + 8), GREEN, 1)
    lines = [caption, f"head span {np.nanmax(heads) - np.nanmin(heads):.0f} px, ground {np.ptp(grounds):.0f} px"]
    for k, text in enumerate(lines):
        cv2.putText(pic, text, (6, TOP + h + 22 + 16 * k), cv2.FONT_HERSHEY_SIMPLEX, 0.42, (0, 0, 0), 1, cv2.LINE_AA)
    return pic


def pair(before: np.ndarray, after: np.ndarray, title: str, anchor, hips=(None, None)) -> np.ndarray:
    """Before and after panels side by side, the same height, with a thin divider."""
    width = max(before.shape[2], after.shape[2], 220) + 16
    panels = [panel(before, "input", anchor, width, hips[0]), panel(after, title, anchor, width, hips[1])]
    height = max(p.shape[0] for p in panels)
    panels = [np.pad(p, ((height - p.shape[0], 0), (0, 0), (0, 0)), constant_values=250) for p in panels]
    return np.concatenate([panels[0], np.full((height, 2, 3), 180, np.uint8), panels[1]], axis=1)


def main() -> None:
    import_pack()
    sys.path.append(str(ROOT))  # for ``tests.support``: the real art and the rig clip the tests use too
    from gameanim.nodes.sprite import anchor, operations
    from PIL import Image

    from tests.support import sprite_real as real
    from tests.support.sprite_rig import run_cycle_clip

    out = ROOT / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    _, jittered, _ = real.composite("robot", (0, 0, 0), size=(300, 260), jitter=4, seed=3)
    _, walk = real.walk_cycle("robot")
    rng = np.random.default_rng(7)
    travel = np.zeros((8, 140, 96 + 8 * 7 + 12), np.float32)
    shaky = np.zeros_like(travel)
    for i, (dx, dy) in enumerate(rng.integers(-3, 4, (8, 2))):
        travel[i, 6:134, 6 + 8 * i : 6 + 8 * i + 96] = walk[i]
        shaky[i, 6 + dy : 134 + dy, 6 + 8 * i + dx : 6 + 8 * i + dx + 96] = walk[i]
    cases = {
        "feet": (jittered, {"anchor": "feet"}, "feet + lock"),
        "centroid": (jittered, {"anchor": "centroid"}, "centroid + lock"),
        "bbox_center": (jittered, {"anchor": "bbox_center"}, "bbox_center + lock"),
        "none": (jittered, {"mode": "none"}, "none (canvas only)"),
        "smooth": (shaky, {"mode": "smooth"}, "feet + smooth (travel kept)"),
        "travel_lock": (travel, {}, "lock: in place, travel = root_motion"),
    }
    for name, (alpha, options, title) in cases.items():
        after = anchor.stabilise(np.zeros((*alpha.shape, 3), np.float32), alpha, **options).alpha
        path = out / f"anchor_{name}.png"
        Image.fromarray(pair(alpha, after, title, anchor)).save(path, optimize=True)
        print(path, f"{path.stat().st_size // 1024} KB")
    alpha, pose, _ = run_cycle_clip(320, 200, step=3, follow_root=False, shake=4, seed=1, pad=4)
    hips = operations.rig_root_x(pose, alpha.shape[2], alpha.shape[1])
    result = operations.stabilise(np.zeros((*alpha.shape, 3), np.float32), alpha, pose_keypoint=pose)
    path = out / "anchor_rig_root.png"
    picture = pair(alpha, result.alpha, "rig root (mid-hip) + lock", anchor, (hips, hips + result.offsets[:, 0]))
    Image.fromarray(picture).save(path, optimize=True)
    print(path, f"{path.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
