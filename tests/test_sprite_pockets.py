"""Which enclosed key-coloured pockets the clip keeps as drawn parts of the character."""

from __future__ import annotations

import numpy as np
from gameanim.nodes.sprite import edges, matte, pockets
from support import sprite_real as real

KEY, BODY = 50.0, 20.0  # Lab lightness of the key and of the character's body


def clip(frames: int = 6) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """``(lab, sprite, pocket labels)`` of a dark body on a grey key whose right side grows frame by frame (the
    silhouette deforms, so every frame pair is evidence) with two key-coloured regions that keep their place on it:
    an eye inside the body (label 1) and a notch against its left side that the outside background surrounds on
    three sides (label 2).  Both reappear in every frame."""
    lab = np.full((frames, 64, 72, 3), KEY, np.float32)
    lab[..., 1:] = 0.0
    sprite, labels = [], []
    for i in range(frames):
        body = np.zeros((64, 72), bool)
        body[10:50, 20 : 40 + 3 * i] = True
        notch = np.zeros_like(body)
        notch[14:22, 13:20] = True
        lab[i, body, 0] = BODY
        eye = np.zeros_like(body)
        eye[24:32, 25:33] = True
        lab[i, eye, 0] = KEY
        label = np.zeros((64, 72), np.int32)
        label[eye], label[notch] = 1, 2
        sprite.append(body | notch)
        labels.append(label)
    return lab, sprite, labels


def test_a_pocket_enclosed_by_the_character_that_persists_is_a_drawn_part():
    lab, sprite, labels = clip()
    drawn = pockets.drawn_pockets(lab, sprite, labels)
    for kept, label in zip(drawn, labels, strict=True):
        assert kept[label == 1].all()


def test_a_region_the_outside_background_mostly_surrounds_is_no_drawn_part_however_it_persists():
    """Under a video model's noise the background beside the silhouette breaks into such regions; however steady,
    they are not enclosed by the character."""
    lab, sprite, labels = clip()
    drawn = pockets.drawn_pockets(lab, sprite, labels)
    for kept, label in zip(drawn, labels, strict=True):
        assert not kept[label == 2].any()
    # Enclosed on three sides by the body instead, the same region is an enclosed part.
    for s in sprite:
        s[13:23, 12:20] = True
    drawn = pockets.drawn_pockets(lab, sprite, labels)
    for kept, label in zip(drawn, labels, strict=True):
        assert kept[label == 2].all()


def test_the_regions_statistics_measure_the_pockets_as_their_pixels_do():
    """The matte hands the pocket matching each region's box and area from the labelling itself; they must be what
    counting the label image gives, on a real sprite's pockets and islands (Kenney's robot on grey under noise)."""
    frames, _, _ = real.composite("robot", real.KEYS["mid_grey"], size=(320, 512), jitter=4, generated=True, seed=1)
    lab = matte.frame_lab(frames[0])
    grad = edges.lab_gradient(lab)
    surface = matte.Surface(*frames.shape[1:3])
    band = matte.border_mask(*frames.shape[1:3], 4)
    coefs, tol, resid, weak = matte.fit_backgrounds(lab[None], surface, 4, 1.0)
    level = edges.edge_level([grad[edges.edge_band(band)]])
    *_, labels, _, regions = matte.find_pockets(
        lab, grad, surface, coefs[0], tol, 24, level, weak, float(np.median(resid))
    )
    assert (labels > 0).any() and (labels < 0).any()  # pockets and islands both
    numbered, _ = pockets.numbered(labels)
    areas, found = pockets.region_measures(regions, labels.size)
    expected = pockets.label_areas(numbered)
    assert np.array_equal(areas, expected)
    assert np.array_equal(found, np.array(pockets.boxes(numbered, len(expected)), np.float32).reshape(-1, 4))
    assert np.count_nonzero(labels) == int(regions[:, 5].sum())
