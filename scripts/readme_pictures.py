"""Draw the README's pictures from real material with the pack's own nodes (no weights needed).

Run: ``python scripts/readme_pictures.py`` (writes ``docs/images/``).  The material is Kenney's CC0 male adventurer
walk in ``sample_data/sprite_frames/`` (see its ``LICENSE.txt``), the clip the sprite workflows ship with.

* ``first_sheet_stages.png`` — the clean-up stages of the sprite workflows on that clip: the frames on their solid
  background, alpha from Remove Background (on a checkerboard), the feet-anchored canvas, the packed sheet;
* ``dynamicrafter_input.png`` — what Animate Image gives the Run model: a picture as it comes (Kenney's female
  adventurer, read from the arcade wheel in ``.cache/test-assets``), and the 512x320 conditioning image the node
  makes of it (scaled and centre-cropped, never stretched);
* ``animegamer_hud.png`` — the AnimeGamer HUD node's overlay (stamina / social / entertainment and the turn's
  instruction) on frames of the clip standing in for a decoded shot.
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
from _pack import ROOT, import_pack
from PIL import Image, ImageDraw

OUT = ROOT / "docs" / "images"
GAP, LABEL = 8, 22


def checker(h: int, w: int, cell: int = 8) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    return np.where(((yy // cell + xx // cell) % 2)[..., None] == 0, 0.86, 0.7).repeat(3, -1).astype(np.float32)


def over(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    return rgb * alpha[..., None] + checker(*alpha.shape) * (1 - alpha[..., None])


def strip(frames: list[np.ndarray]) -> np.ndarray:
    h = max(f.shape[0] for f in frames)
    padded = [np.pad(f, ((h - f.shape[0], 0), (0, 2), (0, 0)), constant_values=1.0) for f in frames]
    return np.concatenate(padded, axis=1)


def labelled(panels: list[tuple[str, np.ndarray]], scale: int = 1) -> Image.Image:
    """Panels side by side, each scaled by ``scale`` (nearest: pixels stay pixels) under its caption."""
    images = [Image.fromarray((np.clip(p, 0, 1) * 255 + 0.5).astype(np.uint8)) for _, p in panels]
    images = [im.resize((im.width * scale, im.height * scale), Image.NEAREST) for im in images]
    width = sum(im.width for im in images) + GAP * (len(images) + 1)
    height = max(im.height for im in images) + LABEL + 2 * GAP
    canvas = Image.new("RGB", (width, height), (250, 250, 250))
    draw = ImageDraw.Draw(canvas)
    x = GAP
    for (title, _), im in zip(panels, images, strict=True):
        draw.text((x, GAP // 2), title, fill=(40, 40, 40))
        canvas.paste(im, (x, LABEL + GAP))
        x += im.width + GAP
    return canvas


def main() -> None:
    import_pack()
    import torch
    from gameanim.nodes.animegamer.mllm.hud import draw_hud
    from gameanim.nodes.dynamicrafter.model import fit_image
    from gameanim.nodes.sprite.comfy_nodes import (
        GameAnimSpriteLoadFrames,
        GameAnimSpriteRemoveBackground,
        GameAnimSpriteSheet,
        GameAnimSpriteStabilise,
    )

    OUT.mkdir(parents=True, exist_ok=True)
    image, _, _ = GameAnimSpriteLoadFrames().load("pack_sample", "sprite_frames", 0)
    with tempfile.TemporaryDirectory() as base:
        os.environ["GAMEANIM_BASE_DIR"] = base
        rgb, alpha, _ = GameAnimSpriteRemoveBackground().run(image, 1.0, 16.0, 4, 1, mask_is="alpha")
        anchored = GameAnimSpriteStabilise().run(rgb, "feet", "lock", 2.0, 2, mask=alpha)
        sheet = GameAnimSpriteSheet().run(
            [anchored[0]],
            ["gameanim/readme"],
            ["packed"],
            [0],
            [2],
            [1],
            [False],
            [12.0],
            [True],
            [False],
            ["none"],
            mask=[anchored[1]],
        )["result"]
    picks = [0, 3, 6]
    frames, a = image.numpy(), alpha.numpy()
    canvas_rgb, canvas_a = anchored[0].numpy(), anchored[1].numpy()
    stages = labelled(
        scale=1,
        panels=[
            ("frames on their background", strip([frames[i] for i in picks])),
            ("Remove Background: alpha", strip([over(rgb.numpy()[i], a[i]) for i in picks])),
            ("Anchor (feet): one canvas", strip([over(canvas_rgb[i], canvas_a[i]) for i in picks])),
            ("Save Sprite Sheet (packed)", over(sheet[0].numpy()[0], sheet[1].numpy()[0])),
        ],
    )
    stages.save(OUT / "first_sheet_stages.png", optimize=True)

    sys.path.append(str(ROOT))  # ``tests.support``: Kenney's art straight from the arcade wheel
    from tests.support.sprite_real import KEYS, composite

    picture, _, _ = composite("female_adventurer", KEYS["light_grey"], size=(240, 320), scale=1.5)
    still = torch.from_numpy(picture[:1])
    conditioning = fit_image(still, 320, 512)
    labelled(
        [
            ("your picture (320x240)", still.numpy()[0]),
            ("Animate Image's input to the model (512x320)", conditioning[0].numpy()),
        ]
    ).save(OUT / "dynamicrafter_input.png", optimize=True)

    shot = torch.from_numpy(np.ascontiguousarray(canvas_rgb * canvas_a[..., None] + (1 - canvas_a[..., None]) * 0.95))
    shot = torch.nn.functional.interpolate(shot.permute(0, 3, 1, 2), scale_factor=3, mode="nearest").permute(0, 2, 3, 1)
    hud = draw_hud(
        shot[::2].contiguous(), {"stamina": 62, "social": 48, "entertainment": 71}, "quickly walking in the meadow"
    )
    labelled([("AnimeGamer HUD on a turn's frames", strip(list(hud.numpy())))], scale=1).save(
        OUT / "animegamer_hud.png", optimize=True
    )
    for name in ("first_sheet_stages.png", "dynamicrafter_input.png", "animegamer_hud.png"):
        print(OUT / name)


if __name__ == "__main__":
    main()
