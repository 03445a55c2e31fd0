"""Remove Background on 3-D-rendered characters, against the true alpha Blender rendered with them.

Real rigged characters (assimp's test models, see ``support/rig_assets.py``) shaded by Workbench, their key
composited from the render's transparent film: clothing near the key (grey on grey, light on white, dark
on black), a chroma key, and the same frames GIF-dithered.  Gross error: the share of pixels whose
matte is off by more than half.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gameanim import api
from support.rig_renders import rendered_clip

# (key, shade, least IoU, most gross share): what the matte meets on both characters, PNG and GIF.  The
# character's own grey shading on a grey key is the hardest case: body pixels match the key in colour.
CASES = {
    "on_green": ((0, 177, 64), 1.0, 0.98, 0.002),
    "light_on_white": ((255, 255, 255), 1.15, 0.965, 0.003),
    "dark_on_black": ((0, 0, 0), 0.15, 0.935, 0.006),
    "grey_on_grey": ((128, 128, 128), 1.0, 0.77, 0.04),
}


def matte_scores(frames: np.ndarray, alpha: np.ndarray) -> tuple[float, float]:
    """IoU of the matte (> 0.5) with the true alpha (> 0.5), and the share of grossly wrong pixels."""
    _, matte = api.remove_background(torch.from_numpy(frames).float() / 255.0)
    matte = matte.numpy()
    found, truth = matte > 0.5, alpha > 0.5
    iou = float((found & truth).sum() / max(1, (found | truth).sum()))
    return iou, float((np.abs(matte - alpha) > 0.5).mean())


@pytest.mark.parametrize("gif", [False, True], ids=["png", "gif"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("character", ["BCN_Epileptic", "Testwuson"])
def test_matte_on_rendered_characters(character, case, gif):
    key, shade, min_iou, max_gross = CASES[case]
    frames, alpha = rendered_clip(character, key, shade, gif=gif)
    iou, gross = matte_scores(frames, alpha)
    assert iou >= min_iou and gross <= max_gross, (character, case, gif, iou, gross)
