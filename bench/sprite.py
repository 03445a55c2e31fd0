"""Benchmark of the sprite toolkit (not part of the test suite).

Run: ``python bench/sprite.py``.  Prints per-frame time of matte + stabilise at
512x320 (target <= 20 ms/frame on 2 CPU cores) against a baseline measured in the same run — a
plain hard key (one RGB distance threshold, no Lab, no unmixing, no cleanup), i.e. the cheapest
thing that could be called a matte — and the time to pack 64 frames on a sheet (grid and packed),
against a baseline that only copies the 64 frames into a grid with numpy.
"""

from __future__ import annotations

import sys

import numpy as np
from _common import ROOT, best_of, import_pack

sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    import_pack()
    import sprite_synth as synth
    from gameanim.nodes.sprite import anchor, matte, sheet

    t = 16
    rng = np.random.default_rng(0)
    # A sprite 3x the test size (~15% of a 512x320 frame), jittered by up to 4 px.
    pos = [(256 + rng.uniform(-4, 4), 300 + rng.uniform(-4, 4)) for _ in range(t)]
    big = [synth.draw_sprite(320, 512, x, y, scale=3.0) for x, y in pos]
    key = np.array([0.1, 0.8, 0.2], np.float32)
    frames = np.stack([a[..., None] * f + (1 - a[..., None]) * key for f, a in big]).astype(np.float32)
    truth = np.stack([a for _, a in big])

    def ours():
        rgb, alpha, _ = matte.remove_background(frames)
        anchor.stabilise(rgb, alpha)

    def baseline():
        a = (np.linalg.norm(frames - frames[:, :1, :1], axis=-1) > 0.1).astype(np.float32)
        anchor.bounding_boxes(a)

    ours()
    t_ours = best_of(ours) / t * 1000
    t_base = best_of(baseline) / t * 1000
    rgb, alpha, _ = matte.remove_background(frames)
    iou = min(synth.iou(alpha[i], truth[i]) for i in range(t))
    hard = (np.linalg.norm(frames - frames[:, :1, :1], axis=-1) > 0.1).astype(np.float32)
    iou_base = min(synth.iou(hard[i], truth[i]) for i in range(t))
    mae, mae_base = np.abs(alpha - truth).mean(), np.abs(hard - truth).mean()
    print(f"matte+stabilise 512x320, {t} frames: {t_ours:.1f} ms/frame (target <= 20)")
    print(f"  baseline hard key + bbox: {t_base:.1f} ms/frame  -> ratio {t_ours / t_base:.1f}x")
    print(f"  min IoU ours {iou:.4f} vs baseline {iou_base:.4f}; alpha MAE ours {mae:.4f} vs baseline {mae_base:.4f}")

    rgba64 = sheet.to_rgba8(np.repeat(rgb, 4, axis=0)[:64], np.repeat(alpha, 4, axis=0)[:64])
    crops = anchor.stabilise(rgb, alpha)
    small = sheet.to_rgba8(np.repeat(crops.rgb, 4, axis=0)[:64], np.repeat(crops.alpha, 4, axis=0)[:64])
    for label, data in (("512x320 frames", rgba64), (f"{small.shape[2]}x{small.shape[1]} stabilised", small)):
        t_grid = best_of(lambda d=data: sheet.build_sheet(d, layout="grid", padding=1)) * 1000
        t_pack = best_of(lambda d=data: sheet.build_sheet(d, layout="packed", padding=1, extrude=1)) * 1000

        def copy_grid(d=data):
            n, h, w = d.shape[:3]
            out = np.zeros((8 * h, 8 * w, 4), np.uint8)
            for i in range(n):
                out[(i // 8) * h : (i // 8 + 1) * h, (i % 8) * w : (i % 8 + 1) * w] = d[i]

        t_copy = best_of(copy_grid) * 1000
        packed = sheet.build_sheet(data, layout="packed", padding=1, extrude=1)
        print(
            f"sheet of 64 {label}: grid {t_grid:.1f} ms, packed {t_pack:.1f} ms "
            f"(sheet {packed.size[0]}x{packed.size[1]}); baseline numpy grid copy {t_copy:.1f} ms "
            f"-> ratios {t_grid / t_copy:.1f}x / {t_pack / t_copy:.1f}x"
        )


if __name__ == "__main__":
    main()
