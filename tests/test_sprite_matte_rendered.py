"""Remove Background on 3-D-rendered characters, against the true alpha Blender rendered with them.

Real rigged characters (assimp's test models, see ``support/rig_assets.py``) shaded by Workbench, their key
composited from the render's transparent film: clothing near the key (grey on grey, light on white, dark
on black), a chroma key, and the same frames GIF-dithered.  Gross error: the share of pixels whose
matte is off by more than half.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from gameanim import api
from support.rig_renders import pale_vest_clip, rendered_clip

# (key, shade, least IoU, most gross share): what the matte meets on both characters, PNG and GIF.  The
# character's own grey shading on a grey key is the hardest case: body pixels match the key in colour along
# lines through the shading (a noise-free key is matted on its exact colour, nodes/sprite/decide.py; before,
# the averaged key's tolerance made pockets and bands of that shading: IoU 0.79, gross share 3.4 %), and its
# rim pixels there are the key's colour whatever their alpha (decided by their place, matte.render_rim:
# IoU 0.962 / 0.981 -> 0.975 / 0.988, BCN_Epileptic / Testwuson).
CASES = {
    "on_green": ((0, 177, 64), 1.0, 0.985, 0.002),
    "light_on_white": ((255, 255, 255), 1.15, 0.965, 0.002),
    "dark_on_black": ((0, 0, 0), 0.15, 0.95, 0.002),
    "grey_on_grey": ((128, 128, 128), 1.0, 0.97, 0.002),
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


@pytest.mark.parametrize("gif", [False, True], ids=["png", "gif"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("character", ["BCN_Epileptic", "Testwuson"])
def test_gross_error_meets_the_issue_bound_on_rendered_characters(character, case, gif):
    """Issue 22's bound for 3-D-rendered characters: gross error <= 2 % in the median frame, <= 4 % in the
    worst (measured: <= 0.2 % / 0.9 %; before the noise-free key path, grey on grey 7-17 % / 13-18 %)."""
    key, shade, _, _ = CASES[case]
    frames, alpha = rendered_clip(character, key, shade, gif=gif)
    median, worst = gross_scores(frames, alpha)
    assert median <= 0.02 and worst <= 0.04, (character, case, gif, median, worst)


@pytest.mark.parametrize("character", ["BCN_Epileptic", "Testwuson", "mrfixit"])
def test_training_clip_render_matte_agrees_with_its_alpha_on_the_default_key(character):
    """Issue 23: the alpha saved beside a rendered training clip agrees with the matte of the frame on its
    default key (grey) with IoU >= 0.97 (8 frames at 320x320: 0.975 BCN_Epileptic, a flat-grey figure shaded
    through the key's grey with fingers and 1-px gaps between arm and body; 0.988 Testwuson; 0.993 the
    textured Mr. Fixit).  BCN_Epileptic met 0.962 when its rim was unmixed by colour alone."""
    frames, alpha = rendered_clip(character, (128, 128, 128))
    iou, _ = matte_scores(frames, alpha)
    assert iou >= 0.97, (character, iou)


def gross_scores(frames: np.ndarray, alpha: np.ndarray) -> tuple[float, float]:
    """Median and worst frame's gross error (wrong side farther than 1 px from the true contour, share of
    the character) of the matte of ``frames``."""
    from support.sprite_sources import clip_scores

    _, matte = api.remove_background(torch.from_numpy(frames).float() / 255.0)
    median, worst, _ = clip_scores(matte.numpy(), alpha)
    return median, worst


# Generated-look renders, GIF-dithered (vignette, gradient, noise σ 0.012, then the GIF's 256 colours): the
# dithering and the key's noise raise the key model's tolerance to ΔE 5 and it keys out most of a body shaded
# through the key.  A graph cut over colour models learnt from the sure pixels (nodes/sprite/decide.py,
# colour_cut_frames) gives it back, and the rim unmixed only as deep as the soft edge is wide, its place deciding
# where its colour cannot (render_rim), keeps the shaded silhouette: grey on grey 25.0 / 29.8 % -> 1.9 / 2.9 %
# (BCN_Epileptic, a flat-grey figure, within the issue's bound of 2 / 4 %) and 6.3 / 7.5 % -> 0.6 / 0.8 % (Testwuson);
# the textured Mr. Fixit darkened on black 34.6 / 40.5 % -> 1.7 / 2.0 %.  What the cut gained is opaque where its
# colour is the key's out to its outermost ring: unmixed there, where the cut stopped inside a body shaded through
# the key's grey, BCN_Epileptic kept 3.2 / 5.2 % and Testwuson 1.1 / 1.2 %.  The gap between BCN_Epileptic's legs,
# closed by his feet, is key behind an edge, not a part (nodes/sprite/edges.py, KEY_GAP): kept as one, 2.0 / 4.3 %.
# Bounds: the measured figures with a margin, BCN_Epileptic's the issue's.
GENERATED = {
    ("BCN_Epileptic", "grey"): ((128, 128, 128), 1.0, 0.02, 0.04),
    ("Testwuson", "grey"): ((128, 128, 128), 1.0, 0.008, 0.01),
    ("mrfixit", "black"): ((0, 0, 0), 0.35, 0.02, 0.023),
}


@pytest.mark.parametrize("character, key", sorted(GENERATED), ids=lambda v: str(v))
def test_matte_on_generated_look_renders(character, key):
    colour, shade, most_median, most_worst = GENERATED[(character, key)]
    frames, alpha = rendered_clip(character, colour, shade, gif=True, generated=True)
    median, worst = gross_scores(frames, alpha)
    assert median <= most_median and worst <= most_worst, (character, key, median, worst)


# Grey on grey saved as JPEG (quality 75, a render kept as JPEG frames): the key stays flat and rings only beside the
# character, so the matte takes it as a clean key after a codec (tolerance 2 ΔE), and the body's shading where it
# crosses the key's grey formed enclosed regions within the pockets' reach.  Their inside varies in lightness, a gap's
# does not (nodes/sprite/matte.py, SHADED): 21.7 / 32.6 % -> 6.5 / 8.8 % (BCN_Epileptic, a flat-grey figure) and 26.8 /
# 28.3 % -> 2.3 / 2.6 % (Testwuson).  Not yet the issue's bound; asserted with a margin over the measured figures.
JPEG_GREY = {"BCN_Epileptic": (0.075, 0.10), "Testwuson": (0.028, 0.032)}


@pytest.mark.parametrize("character", sorted(JPEG_GREY))
def test_matte_keeps_the_shading_of_a_grey_render_saved_as_jpeg(character):
    from support.sprite_sources import publish_as

    frames, alpha = rendered_clip(character, (128, 128, 128), 1.0)
    median, worst = gross_scores(publish_as(frames, "jpeg"), alpha)
    most_median, most_worst = JPEG_GREY[character]
    assert median <= most_median and worst <= most_worst, (character, median, worst)


def test_colour_models_give_the_same_matte_every_time():
    """GrabCut seeds its mixtures from OpenCV's random generator: the same clip gets the same matte on every
    call, whatever the caller's thread did with that generator before (the models are learnt in a thread of
    their own, whose generator starts from OpenCV's default state)."""
    frames, _ = rendered_clip("Testwuson", (128, 128, 128), gif=True, generated=True)
    clip = torch.from_numpy(frames).float() / 255.0
    first = api.remove_background(clip)[1]
    cv2.setRNGSeed(1234)
    again = api.remove_background(clip)[1]
    assert torch.equal(first, again)


def test_pale_vest_on_grey_meets_the_issue_bound():
    """Issue 22's clip, as near as assimp's characters come: a fighter whose vest is a pale grey 5-20 levels above
    a mid-grey key (ΔE 2-7, inside the tolerance the noise and the GIF's dithering give the key), generated look,
    GIF-dithered.  Gross error <= 2 % of the character in the median frame, <= 4 % in the worst (measured 1.1 /
    2.1 %; 26.9 / 29.9 % when the colour models were learnt from the whole seed mask, which took the vest into
    the key's model, and the key-coloured islands the cut left in the vest were unmixed, each with a rim of the
    vest)."""
    frames, alpha = pale_vest_clip()
    median, worst = gross_scores(frames, alpha)
    assert median <= 0.02 and worst <= 0.04, (median, worst)


@pytest.mark.parametrize("character, crf", [("mrfixit", 23), ("mrfixit", 28), ("vest", 23)])
def test_generated_look_through_h264_on_grey_meets_the_issue_bound(character, crf):
    """A video model's clip on grey published as H.264: the codec drops the key's chroma noise and codes what is
    left of its lightness noise in blocks, so the border measures a tolerance (1.0-1.2 ΔE) that leaves the codec's
    smear beside the character to it.  Recognised by its blocks, the key is matted as a key after a codec (measured:
    Mr. Fixit 0.15 / 0.21 % at CRF 23 and 0.11 / 0.68 % at CRF 28, the pale vest 0.49 / 0.79 %; 3.8 / 4.8, 3.0 /
    4.3 and 3.2 / 3.8 % without the block test)."""
    from support.sprite_sources import h264

    if character == "vest":
        frames, alpha = pale_vest_clip(form="png")
    else:
        frames, alpha = rendered_clip(character, (128, 128, 128), 1.0, generated=True)
    median, worst = gross_scores(h264(frames, crf), alpha)
    assert median <= 0.02 and worst <= 0.04, (character, crf, median, worst)
