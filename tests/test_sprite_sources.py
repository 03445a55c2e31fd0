"""Sprite material of other games (``support/sprite_sources.py``): the material itself, the metric, and the
matte on it where it meets the issue-22 bounds (gross error <= 0.5 % of the character in the median frame,
<= 2 % in the worst, outside a 1-px band around the true contour).

``ceferino`` is held out: no matte decision was tuned on it (the chroma-bleed rule was found on his lasso after a
codec on a coloured key; its share was set on Kenney's walks; the lightness spread that tells shading from a gap
after a codec on a grey key, SHADED, was read off the pockets of all ten sources and three renders, his among
them).  On the near-key keys (white, greys, black) the bounds hold for the cases listed in ``NEAR_KEY``, not yet
everywhere (docs/sprite.md has the figures of every case, measured by ``bench/sprite.py``).
"""

from __future__ import annotations

import gameanim.nodes.sprite.matte as matte
import numpy as np
import pytest
from support import sprite_sources as sources

HAND_DRAWN = ["tuxmath_penguin", "tuxmath_tux", "pingus", "frozen_bubble", "ceferino", "raincat"]
SATURATED = ["green", "blue", "magenta"]


def small(name: str, frames: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """The first ``frames`` frames of a source (6: the tests stay fast)."""
    rgb, alpha = sources.sources()[name].load()
    return rgb[:frames], alpha[:frames]


def test_registry_holds_real_sprites_with_true_alpha_and_a_free_licence():
    registry = sources.sources()
    assert {"tuxmath_penguin", "tuxmath_tux", "frozen_bubble", "pingus", "ceferino", "raincat"} <= set(registry)
    assert set(sources.HELD_OUT) <= set(registry)
    for name, source in registry.items():
        rgb, alpha = source.load()
        assert rgb.shape[:3] == alpha.shape and rgb.shape[-1] == 3 and len(alpha) >= 6, name
        assert alpha.min() == 0.0 and alpha.max() == 1.0, name  # transparent around, opaque inside
        if source.pixel_art:
            assert set(np.unique(alpha)) == {0.0, 1.0}, name
        assert any(free in source.licence for free in ("GPL", "CC0", "CC-BY-SA")), name
    for name in ("tuxmath_penguin", "frozen_bubble", "raincat", "kenney_robot"):  # drawn with anti-aliased edges
        alpha = registry[name].load()[1]
        assert ((alpha > 0) & (alpha < 1)).mean() > 0.001, name


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear", "bicubic"])
def test_composite_is_the_sprite_over_the_key_with_its_alpha(interpolation):
    rgb, alpha = small("tuxmath_tux")
    key = sources.KEYS["green"]
    frames, truth = sources.composite(rgb, alpha, key, interpolation=interpolation)
    assert frames.shape[:3] == truth.shape and truth.shape[1] % 2 == 0 and truth.shape[2] % 2 == 0
    np.testing.assert_allclose(frames[truth == 0], np.broadcast_to(key, frames[truth == 0].shape), atol=0.5 / 255)
    area = (alpha > 0.5).sum(axis=(1, 2)) * 9
    assert np.abs((truth > 0.5).sum(axis=(1, 2)) / area - 1).max() < 0.05  # 3x the size, 9x the area


@pytest.mark.parametrize("form", ["gif", "jpeg", "h264"])
def test_published_forms_degrade_the_frames_as_files_do(form):
    rgb, alpha = small("tuxmath_penguin")
    clean, _ = sources.composite(rgb, alpha, sources.KEYS["mid_grey"], jitter=0)
    published, _ = sources.composite(rgb, alpha, sources.KEYS["mid_grey"], jitter=0, publish=form)
    assert published.shape == clean.shape
    error = np.abs(published - clean)
    assert 0.0005 < error.mean() < 0.03, error.mean()  # changed, and still the same picture
    if form == "gif":
        for frame in published:
            assert len(np.unique(frame.reshape(-1, 3), axis=0)) <= 256


def test_gross_error_forgives_the_contour_band_only():
    truth = np.zeros((40, 40), np.float32)
    truth[10:30, 10:30] = 1.0
    assert sources.gross_error(np.roll(truth, 1, axis=1), truth) == 0.0  # 1 px off everywhere: the band
    holed = truth.copy()
    holed[18:21, 18:21] = 0.0  # a hole deep inside
    assert sources.gross_error(holed, truth) == pytest.approx(9 / 400)
    assert sources.gross_error(np.roll(truth, 3, axis=1), truth) > 0.05


def test_key_coloured_sprites_are_not_fair_on_their_own_key():
    rgb, alpha = small("tuxmath_penguin")
    assert sources.key_share(alpha, rgb, sources.KEYS["black"]) > 0.05  # a black body on black
    assert sources.key_share(alpha, rgb, sources.KEYS["green"]) == 0.0


# Issue 22's bounds on other games' sprites: gross error in the median and in the worst frame of a clip.
MEDIAN_BOUND, WORST_BOUND = 0.005, 0.02


def assert_within_bounds(median: float, worst: float, *case: str) -> None:
    assert median <= MEDIAN_BOUND and worst <= WORST_BOUND, (*case, median, worst)


def matte_scores(
    name: str, key: str, look: str, interpolation: str | None = None, frames: int = 6
) -> tuple[float, float]:
    """``(median, worst)`` frame gross error of the matte on a source's first ``frames`` frames on ``key``, 3x
    bicubic (pixel art: 4x nearest; or 3x ``interpolation`` when given) with ±3 px jitter; ``look``: ``plain``,
    ``generated``, or ``gif``, ``jpeg``, ``h264``: the plain composite published in that form."""
    rgb, alpha = small(name, frames)
    pixel = sources.sources()[name].pixel_art and interpolation is None
    frames, truth = sources.composite(
        rgb,
        alpha,
        sources.KEYS[key],
        scale=4 if pixel else 3,
        interpolation="nearest" if pixel else interpolation or "bicubic",
        generated=look == "generated",
        publish=look if look in ("gif", "jpeg", "h264") else "png",
        seed=1,
    )
    _, found, _ = matte.remove_background(frames)
    median, worst, _ = sources.clip_scores(found, truth)
    return median, worst


@pytest.mark.parametrize("look", ["plain", "generated"])
@pytest.mark.parametrize("name", HAND_DRAWN)
def test_matte_meets_the_bounds_on_saturated_keys(name, look):
    """Hand-drawn sprites of other games on each saturated key, plain and with a generated look.  Measured:
    at most 0.31 % median and 0.58 % worst frame on every source, the held-out one included."""
    for key in SATURATED:
        median, worst = matte_scores(name, key, look)
        assert_within_bounds(median, worst, name, key)


# Near-key cases where an outline or a gap's inside, not the colour, tells the part from the key: a white belly
# or a pale face behind a dark outline whose averaged step passes through the key's grey.  (source, key, look)
NEAR_KEY = [
    ("tuxmath_penguin", "mid_grey", "generated"),
    ("pingus", "light_grey", "plain"),
    ("frozen_bubble", "light_grey", "generated"),
    ("frozen_bubble", "mid_grey", "plain"),
    ("frozen_bubble", "mid_grey", "gif"),
    # A drawing put on a key has no noise: the matte works on the exact key (nodes/sprite/decide.py), where the
    # averaged key's tolerance cut pale pixel-art parts and rim shading (before: 0.3-1.3 % / 0.3-4.5 %).
    ("tuxmath_tux", "light_grey", "plain"),
    ("tuxmath_tux", "mid_grey", "gif"),
    ("pingus", "mid_grey", "plain"),
    ("pingus", "light_grey", "gif"),
    ("frozen_bubble", "light_grey", "gif"),
    ("tuxmath_penguin", "light_grey", "gif"),
    # The white belly on light grey under a video model's noise: its lightness offset counts in the key's noise
    # units, not in a ΔE inflated by chroma noise (nodes/sprite/matte.py, noise_weights; before: 0.54 % / 1.00 %).
    ("tuxmath_penguin", "light_grey", "generated"),
    # Tux's white belly behind an outline of sparse dark dots on greys under noise: the 3x3 average takes the dots
    # for key, and across the key from the belly's white they unmixed to nothing; unmixed against their strongest
    # neighbour they stay (nodes/sprite/matte.py, OFF_KEY; before 0.61 / 0.67 % and 0.59 / 0.69 %).  Frozen-Bubble's
    # grey face on mid grey, an enclosed region whose inside is offset in lightness (before the
    # key's noise units 3.55 / 3.68 %).
    ("tuxmath_tux", "light_grey", "generated"),
    ("tuxmath_tux", "mid_grey", "generated"),
    ("frozen_bubble", "mid_grey", "generated"),
]


# A clean saturated key through JPEG or H.264: their 4:2:0 chroma fills the narrow gaps between thin parts (the
# gaucho's lasso coils and hair, Raincat's whiskers, Frozen-Bubble's flippers) with mixes of the key and the parts,
# too far from the key for the weak band and deeper than the rim, and those stayed opaque.  Nearer the key than
# BLEED x the character's own distance, and explained as such a mix, they are unmixed (nodes/sprite/matte.py, bled).
# Before, over the first 6 frames: 0.53 / 0.70 %, 0.80 / 0.96, 0.69 / 1.10, 0.53 / 0.73 and 0.61 / 0.79 %.
CHROMA_BLEED = [
    ("frozen_bubble", "blue", "jpeg"),
    ("ceferino", "magenta", "jpeg"),
    ("ceferino", "magenta", "h264"),
    ("raincat", "magenta", "jpeg"),
    ("raincat", "magenta", "h264"),
]


@pytest.mark.parametrize("name,key,look", NEAR_KEY + CHROMA_BLEED)
def test_matte_meets_the_bounds_on_near_key_and_chroma_bleed_cases(name, key, look):
    median, worst = matte_scores(name, key, look)
    assert_within_bounds(median, worst, name, key, look)


# The near-key cases under a bilinear upscale, whose softer steps pass through the key's grey over more pixels: Tux's
# white belly behind its broken outline of dark dots on light grey (a line of such steps joined the background through
# the outline's breaks: 0.65 / 0.81 % before nodes/sprite/edges.py's close_steps), the penguin's, and Frozen-Bubble's
# pale face.
NEAR_KEY_BILINEAR = [
    ("tuxmath_tux", "light_grey"),
    ("tuxmath_penguin", "light_grey"),
    ("frozen_bubble", "light_grey"),
]


@pytest.mark.parametrize("name,key", NEAR_KEY_BILINEAR)
def test_matte_meets_the_bounds_on_near_key_cases_upscaled_bilinear(name, key):
    median, worst = matte_scores(name, key, "generated", interpolation="bilinear")
    assert_within_bounds(median, worst, name, key)


@pytest.mark.parametrize("look", ["plain", "gif"])
@pytest.mark.parametrize("key", ["white", "black"])
def test_matte_keeps_parts_drawn_in_the_key_colour_over_the_clip(key, look):
    """Frozen-Bubble's parts drawn exactly in the key's colour, over the whole 8-frame clip (the rules' evidence is
    the clip).  On white its eye whites and belly highlight, enclosed and shaded, change shape as the penguin jumps
    (their areas vary 2x): matched at IoU >= SAME_POCKET (0.4) they are drawn parts (nodes/sprite/pockets.py): 0.05 /
    0.09 % plain, 0.05 / 0.44 % as GIF; at 0.45 1.06 and 1.14 % in the worst frame, at 0.6 3.1 / 4.2 %.  On
    black its pupils, drawn parts too, were steadied over the frames where the key lies at their pixels and came out
    0.2-0.3 opaque (0.53 % median); kept out of that average on a noise-free key (nodes/sprite/matte.py,
    steady_edges' fixed pixels), and matched at 0.4: 0.45 / 1.10 % plain, 0.44 / 1.04 % as GIF (at 0.45 1.58 and
    1.53 % in the worst frame).  Asserted with a margin over those figures."""
    median, worst = matte_scores("frozen_bubble", key, look, frames=8)
    assert_within_bounds(median, worst, "frozen_bubble", key, look)
    assert worst <= {"white": 0.007, "black": 0.013}[key], (key, look, worst)


def test_matte_keeps_drawn_parts_that_go_missing_in_some_frames():
    """A drawn part is kept when it reappears in a majority of the deforming frames (nodes/sprite/pockets.py,
    QUORUM), not two thirds: over its 8-frame turn Pingus's white belly faces away in two frames and, under the
    generated look on white, changes shape in a third (0.19 / 1.94 %, with two thirds 1.14 / 1.94 %); after JPEG on
    light grey Frozen-Bubble's largest pocket, a drawn part of about 500 px, is kept in 7 of its 8 frames, with two
    thirds in 4 (0.32 / 5.08 %, with two thirds 2.87 / 5.86 %; the worst frame is the one that loses it)."""
    median, worst = matte_scores("pingus", "white", "generated", frames=8)
    assert_within_bounds(median, worst, "pingus", "white", "generated")
    median, _ = matte_scores("frozen_bubble", "light_grey", "jpeg", frames=8)
    assert median <= 0.01, median


def test_matte_keeps_drawn_parts_that_shrink_below_a_pocket_in_some_frames():
    """A drawn part near a pocket's least size is a pocket in some frames and a smaller enclosed island, opaque, in
    the others; matched against those islands too (nodes/sprite/pockets.py), it reappears there.  Frozen-Bubble's
    right pupil on black under the generated look is a pocket in 3 of its 8 frames (before: 0.93 / 1.57 %, now 0.86
    / 1.04); the held-out gaucho's shirt highlights and teeth on white, exactly the key's colour (before: 1.94 /
    3.49 %, now 1.14 / 1.42: no rule was tuned on him, and his median frame is still over the bound)."""
    _, worst = matte_scores("frozen_bubble", "black", "generated", frames=8)
    assert worst <= 0.0125, worst
    median, worst = matte_scores("ceferino", "white", "generated", frames=8)
    assert median <= 0.0125 and worst <= 0.02, (median, worst)


def test_colour_cut_leaves_notches_of_the_key_to_the_key():
    """Pingus (pixel art, 4x nearest) with the generated look on white and light grey: the colour models' cut (a
    neutral key under noise) closed the notches of key beside his beak and flippers into the character (4.11 / 8.11 %
    and 2.11 / 6.03 %).  A region it gained whose mean key distance is as near the key as the key's own noise goes
    back (nodes/sprite/decide.py, KEY_LIKE): 0.57 / 1.96 % and 0.19 / 2.71 %.  The issue's bounds are not met here
    yet; these are the measured figures with a margin."""
    for key in ("white", "light_grey"):
        median, worst = matte_scores("pingus", key, "generated")
        assert median <= 0.01 and worst <= 0.03, (key, median, worst)


# Raincat's soft black outline around its white body, 3x bicubic or bilinear: the mean of the nearby opaque pixels and
# the inner colour mix the outline with the body or with its own falloff, and its outer pixels, 0.2-0.3 opaque, came
# out 0.5-1.  Against the purest colour on their line, the farthest from the key in the rim's reach
# (nodes/sprite/matte.py, PURE_MISS), they unmix to their alpha.  (key, interpolation, look); before, over the whole
# 10-frame clip, 0.53-0.85 % / 0.75-1.03 % and 0.67-0.69 % / 0.81-0.85 %.
SOFT_OUTLINE = [
    ("light_grey", "bicubic", "plain"),
    ("mid_grey", "bicubic", "plain"),
    ("mid_grey", "bicubic", "gif"),
    ("green", "bilinear", "plain"),
    ("magenta", "bilinear", "plain"),
]


@pytest.mark.parametrize("key,interpolation,look", SOFT_OUTLINE)
def test_matte_unmixes_a_soft_outline_against_its_purest_colour(key, interpolation, look):
    median, worst = matte_scores("raincat", key, look, interpolation=interpolation)
    assert_within_bounds(median, worst, "raincat", key, interpolation, look)


def test_matte_unmixes_a_soft_outline_under_noise_on_a_coloured_key():
    """The same outline with the generated look on the saturated keys: within the bounds either way, but its falloff
    came out opaque (0.22-0.28 % median over the first 6 frames); against the purest colour, which under noise counts
    on a coloured key only, 0.09-0.16 %.  The bound is that with a margin."""
    for key in SATURATED:
        median, _ = matte_scores("raincat", key, "generated")
        assert median <= 0.002, (key, median)


# A clean key through a lossy codec: the flat border encodes exactly while the blocks the sprite crosses ring, and at
# the smallest tolerance that halo (JPEG's 4:2:0 chroma bleed beside a saturated part) stayed as blocks of character
# (nodes/sprite/decide.py, key_kind and COMPRESSED_TOL).  Before: the penguin after JPEG up to 3.45 / 5.01 % (blue),
# Kenney's robot after H.264 up to 2.23 / 3.36 % (mid grey).  (source, form): every key fair on that source.
COMPRESSED = [
    ("tuxmath_penguin", "jpeg"),
    ("kenney_robot", "jpeg"),
    ("kenney_robot", "h264"),
]


@pytest.mark.parametrize("name,form", COMPRESSED)
def test_matte_meets_the_bounds_after_a_lossy_codec_on_a_clean_key(name, form):
    rgb, alpha = small(name)
    for key, colour in sources.KEYS.items():
        if sources.key_share(alpha, rgb, colour) > 0.05:
            continue
        median, worst = matte_scores(name, key, form)
        assert_within_bounds(median, worst, name, key, form)


def test_matte_keeps_pale_parts_beside_a_light_key_after_a_codec_kept_the_noise():
    """A generated-look clip published as H.264: the noise the codec kept sets the tolerance (ΔE 3.4 on light grey), and
    the weak band four times it takes in Kenney's pale shoes (ΔE 4-5 from the key, lighter, almost no chroma).  Their
    calm inside stays opaque (nodes/sprite/matte.py, ``calm_kept``); unmixed against the legs it goes to 0.1-0.2 alpha.
    Over 6 frames: 0.99 / 1.77 %, and 1.58 / 2.42 % with the calm part unmixed."""
    rgb, alpha = small("kenney_female_person")
    frames, truth = sources.composite(
        rgb, alpha, sources.KEYS["light_grey"], scale=2, generated=True, publish="h264", seed=1
    )
    median, worst, _ = sources.clip_scores(matte.remove_background(frames)[1], truth)
    assert median <= 0.012 and worst <= 0.02, (median, worst)


def test_matte_unmixes_the_middle_of_a_gap_between_hair_strands_on_a_coloured_key():
    """The middle of a gap between the gaucho's hair strands after JPEG on green is within the weak band and deeper
    than 6 px inside the character, where a weak pixel is opaque; explained as a mix it is unmixed too
    (nodes/sprite/matte.py, bled).  Over his 8 frames: 0.51 / 0.73 % before, 0.46 / 0.56 %."""
    median, worst = matte_scores("ceferino", "green", "jpeg", frames=8)
    assert_within_bounds(median, worst, "ceferino", "green", "jpeg")
