"""Background to alpha: IoU against known coverage, despill, bad input, non-solid backgrounds."""

from __future__ import annotations

import cv2
import gameanim.nodes.sprite.matte as matte
import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError
from support import sprite_synth as synth

KEYS = [(0.1, 0.8, 0.2), (1.0, 1.0, 1.0), (0.0, 0.0, 0.0), (0.2, 0.3, 0.9), (0.9, 0.3, 0.8)]


@pytest.mark.parametrize("key", KEYS)
def test_matte_iou_against_truth(key):
    frames, truth, _ = synth.clip(t=3, bg=key)
    rgb, alpha, background = matte.remove_background(frames)
    assert background.solid
    np.testing.assert_allclose(background.rgb, key, atol=1 / 255)
    for i in range(3):
        assert synth.iou(alpha[i], truth[i]) >= 0.98
    # Soft edges are recovered, not just the binary shape.
    assert np.abs(alpha - truth).mean() < 0.005
    assert alpha.min() >= 0 and alpha.max() <= 1
    assert rgb.shape == frames.shape


def test_despill_removes_key_tint_from_edges():
    key = np.array([0.1, 0.8, 0.2], np.float32)
    frames, truth, _ = synth.clip(t=1, bg=tuple(key))
    rgb, alpha, _ = matte.remove_background(frames)
    edge = (truth[0] > 0.2) & (truth[0] < 0.8) & (alpha[0] > 0.2)
    assert edge.sum() > 20
    # The raw edge pixels are strongly green; the despilled ones must not be.
    raw_green = (frames[0][edge][:, 1] - frames[0][edge][:, [0, 2]].mean(axis=1)).mean()
    out_green = (rgb[0][edge][:, 1] - rgb[0][edge][:, [0, 2]].mean(axis=1)).mean()
    assert raw_green > 0.1
    assert out_green < raw_green - 0.1


def test_noisy_background_still_keys_cleanly():
    frames, truth, _ = synth.clip(t=2, bg=(0.2, 0.3, 0.9))
    noisy = np.clip(frames + np.random.default_rng(0).normal(0, 0.01, frames.shape), 0, 1).astype(np.float32)
    _, alpha, background = matte.remove_background(noisy)
    assert background.solid
    assert min(synth.iou(alpha[i], truth[i]) for i in range(2)) >= 0.98
    assert (alpha[truth < 0.01] > 0).mean() < 0.001  # no semi-transparent dust in the background


def test_specks_in_background_are_removed():
    frames, truth, _ = synth.clip(t=1, bg=(0.5, 0.5, 0.5))
    frames[0, 5, 5] = (1.0, 0.0, 0.0)  # a single bright pixel of noise
    _, alpha, _ = matte.remove_background(frames, cleanup=1)
    assert alpha[0, 5, 5] == 0.0


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("strong_gradient", r"it changes by ΔE \d+ across the frame \(allowed 30\)"),
        ("texture", r"its noise needs a tolerance of ΔE [\d.]+ \(allowed: high = 16\)"),
    ],
)
def test_non_solid_background_is_a_clear_error(kind, reason):
    h, w = 96, 128
    if kind == "strong_gradient":
        scene = np.stack([*np.meshgrid(np.linspace(0, 1, w), np.linspace(0, 1, h)), np.full((h, w), 0.5)], -1)
    else:  # a scene-like texture: no smooth surface fits its border
        scene = np.random.default_rng(0).uniform(0, 1, (h, w, 3))
    frames = np.repeat(scene[None].astype(np.float32), 2, axis=0)
    with pytest.raises(InputError, match="not a solid colour: .*" + reason) as err:
        matte.remove_background(frames)
    assert "MASK" in str(err.value)  # says what to do
    assert "% of the border" not in str(err.value)  # a test that passed is not named


def test_frames_smaller_than_the_border_band_say_so():
    """Frames the border band covers entirely: the error names the size and the band, not a key's noise."""
    frames = np.full((3, 8, 8, 3), 0.5, np.float32)
    frames[:, 2:6, 3:5] = (0.9, 0.2, 0.1)
    with pytest.raises(matte.NotSolidError, match=r"8x8 px: a border band of 4 px covers all of them") as err:
        matte.remove_background(frames)
    assert "Lower 'border'" in str(err.value)
    # A 1-px band leaves the character inside (no speck removal: it is smaller than a speck).
    _, alpha, _ = matte.remove_background(frames, border=1, cleanup=0)
    assert alpha[:, 2:6, 3:5].min() > 0.5 and alpha[:, 0].max() == 0.0
    # A key alone fills such frames without an error: nothing to matte.
    _, alpha, _ = matte.remove_background(np.full((2, 8, 8, 3), 0.5, np.float32))
    assert alpha.max() == 0.0


def test_frames_narrower_than_two_pixels_are_refused():
    with pytest.raises(InputError, match=r"The frames are 1x50 px; sprites need at least 2x2 px"):
        matte.remove_background(np.full((2, 50, 1, 3), 0.5, np.float32))


def test_nan_frames_are_refused():
    frames, _, _ = synth.clip(t=3)
    frames[1, 10, 10, 0] = np.nan
    with pytest.raises(InputError, match=r"NaN or infinite values in frame\(s\) \[1\]"):
        api.remove_background(torch.from_numpy(frames))


def test_the_finite_check_names_every_broken_frame_and_lets_huge_values_pass():
    """Infinities are named like NaN, and values that are large but finite pass."""
    frames = np.full((4, 8, 8, 3), 0.5, np.float32)
    frames[0] = 3e38  # finite, though a row's sum overflows
    frames[2, 7, 7, 2] = np.inf
    frames[3, 0, 0, 0] = -np.inf
    with pytest.raises(InputError, match=r"NaN or infinite values in frame\(s\) \[2, 3\]"):
        matte.check_frames(frames)
    frames[2:] = 0.5
    assert matte.check_frames(frames)[0, 0, 0, 0] == np.float32(3e38)


def test_api_remove_background_tensors_and_mask():
    frames, truth, _ = synth.clip(t=2)
    rgb, alpha = api.remove_background(torch.from_numpy(frames))
    assert isinstance(rgb, torch.Tensor) and rgb.dtype == torch.float32
    assert rgb.shape == (2, *frames.shape[1:]) and alpha.shape == truth.shape
    # External mask: used as alpha as given.
    rgb2, alpha2 = api.remove_background(torch.from_numpy(frames), mask=torch.from_numpy(truth))
    torch.testing.assert_close(alpha2, torch.from_numpy(truth))
    # A single [H,W] mask is broadcast to every frame.
    _, alpha3 = api.remove_background(torch.from_numpy(frames), mask=torch.from_numpy(truth[0]))
    assert alpha3.shape == truth.shape


def test_bad_inputs_raise_clear_errors():
    frames, truth, _ = synth.clip(t=2)
    with pytest.raises(InputError, match="empty batch"):
        api.remove_background(torch.zeros(0, 16, 16, 3))
    with pytest.raises(InputError, match="match"):
        api.remove_background(torch.from_numpy(frames), mask=torch.ones(2, 10, 10))
    with pytest.raises(InputError, match="frames"):
        api.remove_background(torch.from_numpy(frames), mask=torch.ones(3, *truth.shape[1:]))
    with pytest.raises(InputError, match="IMAGE"):
        api.remove_background(torch.zeros(2, 16, 16))
    with pytest.raises(InputError, match="low < high"):
        api.remove_background(torch.from_numpy(frames), low=40, high=30)


def test_progress_reports_every_frame_and_can_cancel():
    frames, _, _ = synth.clip(t=4, h=64, w=96)
    calls = []
    api.remove_background(torch.from_numpy(frames), progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]
    token = api.CancelToken()
    token.cancel()
    with pytest.raises(api.Cancelled):
        api.remove_background(torch.from_numpy(frames), progress=token.progress())


def test_despilled_colour_recomposes_the_frame_with_the_steadied_alpha():
    """Edge alpha is steadied over time; the despilled colour must follow it, so that compositing
    the output on the key gives the input back (a colour left from the unsteadied alpha would not)."""
    key = (0.1, 0.8, 0.2)
    frames, _, _ = synth.clip(t=4, bg=key)
    still = np.repeat(frames[:1], 4, axis=0)
    noisy = np.clip(still + np.random.default_rng(1).normal(0, 0.01, still.shape), 0, 1).astype(np.float32)
    rgb, alpha, _ = matte.remove_background(noisy)
    soft = (alpha > 0.1) & (alpha < 0.9)
    assert soft.sum() > 100
    recomposed = alpha[..., None] * rgb + (1 - alpha[..., None]) * np.asarray(key, np.float32)
    # Measured 0.0003; with the colour left from the unsteadied alpha 0.0035.
    assert np.abs(recomposed - noisy)[soft].mean() < 0.001


def test_hard_edged_sprite_has_no_soft_pixels_and_keys_exactly():
    """Pixel art has no anti-aliased edge: nothing to unmix or steady, and the square comes out exact."""
    frames = np.empty((3, 64, 64, 3), np.float32)
    frames[...] = (0.1, 0.8, 0.2)
    frames[:, 20:40, 20:40] = (0.9, 0.1, 0.1)
    rgb, alpha, _ = matte.remove_background(frames)
    expected = np.zeros((64, 64), np.float32)
    expected[20:40, 20:40] = 1.0
    np.testing.assert_array_equal(alpha, np.broadcast_to(expected, alpha.shape))
    np.testing.assert_array_equal(rgb[:, 20:40, 20:40], frames[:, 20:40, 20:40])


def test_one_pixel_line_stays_one_pixel_wide():
    """A line too thin to have an inside (a 1-px sword): the 3x3 Lab blur spreads it over its
    neighbours, which must unmix to transparent instead of counting as opaque."""
    frames = np.full((2, 64, 64, 3), 0.5, np.float32)
    frames[:, 10:50, 30] = (1.0, 0.0, 0.0)
    _, alpha, _ = matte.remove_background(frames)
    expected = np.zeros((64, 64), np.float32)
    expected[10:50, 30] = 1.0
    np.testing.assert_array_equal(alpha, np.broadcast_to(expected, alpha.shape))


def test_frames_a_few_pixels_wide_key_a_flat_background():
    """Too few border pixels for a quadratic surface: a plain 5x7 grey is keyed as a flat background."""
    frames = np.full((2, 5, 7, 3), 0.5, np.float32)
    frames[:, 2, 3] = (1.0, 0.0, 0.0)
    _, alpha, background = matte.remove_background(frames, cleanup=0)
    np.testing.assert_allclose(background.rgb, 0.5, atol=1 / 255)
    assert alpha[:, 2, 3].tolist() == [1.0, 1.0] and alpha.sum() == 2.0


def walker(t: int = 8, deform: bool = True, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A hard-edged figure on white, ``(frames, visor, gap)``: a dark body and head holding a white
    visor (the key's colour, enclosed), an arm that encloses a gap against the body, two legs.

    ``deform``: the legs swing and the arm's gap changes width and opens in some frames, as in a
    walk; otherwise every frame is the first one, slid by whole pixels.
    """
    rng = np.random.default_rng(seed)
    frames = np.ones((t, 96, 128, 3), np.float32)
    visor = np.zeros((t, 96, 128), bool)
    gap = np.zeros((t, 96, 128), bool)
    dark = (0.1, 0.1, 0.4)
    for i in range(t):
        k = i if deform else 0
        y, x = 20 + int(rng.integers(-3, 4)), 50 + int(rng.integers(-3, 4))
        f = frames[i]
        f[y : y + 16, x + 4 : x + 24] = dark  # head
        f[y + 16 : y + 50, x : x + 28] = dark  # body
        swing = [-8, -4, 0, 4, 8, 4, 0, -4][k % 8]
        f[y + 50 : y + 70, x + 2 + swing : x + 10 + swing] = dark  # legs
        f[y + 50 : y + 70, x + 18 - swing : x + 26 - swing] = dark
        width = [6, 9, 12, 14, 12, 9, 6, 8][k % 8]  # the arm's gap
        f[y + 20 : y + 24, x + 28 : x + 32 + width] = dark
        f[y + 20 : y + 46, x + 28 + width : x + 32 + width] = dark
        if k % 8 not in (3, 4):  # open in two frames: the forearm lifted away
            f[y + 42 : y + 46, x + 28 : x + 32 + width] = dark
        gap[i, y + 24 : y + 42, x + 28 : x + 28 + width] = True
        f[y + 5 : y + 11, x + 7 : x + 21] = 1.0  # the white visor
        visor[i, y + 5 : y + 11, x + 7 : x + 21] = True
    return frames, visor, gap


def test_key_coloured_part_that_moves_with_the_body_is_kept_and_gaps_are_not():
    frames, visor, gap = walker()
    _, alpha, _ = matte.remove_background(frames)
    assert (alpha[visor] == 1).all()  # the visor reappears, same shape, where the head went
    assert (alpha[gap] == 0).all()  # the arm's gap changes width and opens: background


def test_without_temporal_evidence_enclosed_key_colour_is_background():
    """One frame, or a figure that only slides (its gaps persist as well as its visor): no evidence,
    so the per-frame rule holds and enclosed key-coloured pockets are keyed out."""
    frames, visor, gap = walker(deform=False)
    for clip, v, g in ((frames[:1], visor[:1], gap[:1]), (frames, visor, gap)):
        _, alpha, _ = matte.remove_background(clip)
        inner_gap = g & (alpha >= 0)
        assert (alpha[v] == 0).mean() > 0.9
        assert (alpha[inner_gap] == 0).all()


def synthetic_parts(key: float, inner: float, shape: tuple[int, int] = (96, 96)) -> tuple[np.ndarray, np.ndarray]:
    """One frame: a disc of ``inner`` grey inside a 3-px black outline on a ``key`` grey, anti-aliased by a
    3x3 blur; ``(frame [1,H,W,3], part mask)`` where the part is the disc inside the outline."""
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    r = np.hypot(yy - h / 2, xx - w / 2)
    img = np.full((h, w), key, np.float32)
    img[r <= 30] = 0.0
    img[r <= 27] = inner
    img = cv2.blur(img, (3, 3))
    return np.repeat(img[None, ..., None], 3, axis=-1), r <= 26


@pytest.mark.parametrize("key,inner", [(0.5, 1.0), (1.0, 0.98), (0.8, 0.82)], ids=["white_on_grey", "white", "pale"])
def test_part_behind_an_outline_stays_opaque_on_its_own_key_grey(key, inner):
    """A part drawn near the key's colour behind a dark outline (a white belly on white or grey, a pale
    vest on light grey): the averaged step from black to the part passes through the key's grey and must
    not make a key-coloured loop that keys the part out."""
    frames, part = synthetic_parts(key, inner)
    _, alpha, _ = matte.remove_background(frames)
    assert (alpha[0][part] > 0.5).mean() > 0.99
    assert alpha[0][0:10].max() == 0.0  # the key itself stays transparent


def test_noise_weights_scale_chroma_noise_down_to_lightness_noise_on_a_neutral_key():
    rng = np.random.default_rng(0)
    size = (64, 4096, 3)

    def border_offsets(rgb: np.ndarray) -> np.ndarray:
        lab = matte.to_lab(rgb)
        return (lab - np.median(lab.reshape(-1, 3), axis=0)).reshape(-1, 3)

    grey = np.full(size, 0.8, np.float32)
    noisy = np.clip(grey + rng.normal(0, 1 / 255, size), 0, 1).astype(np.float32)  # RGB noise: large a*, b* noise
    weights = matte.noise_weights(border_offsets(noisy))
    assert weights is not None and weights[0] == 1.0
    assert 1 / matte.MAX_WHITEN <= weights[1] == weights[2] < 0.6
    whitened = np.std(border_offsets(noisy) * weights, axis=0)
    assert whitened[1] == pytest.approx(whitened[0], rel=0.2)  # chroma noise now as large as lightness noise
    luma = matte.from_lab(matte.to_lab(grey) + rng.normal(0, 1.0, size) * np.float32([1, 0, 0]))
    assert matte.noise_weights(border_offsets(luma.astype(np.float32))) is None  # lightness the noisier: as it is
    assert matte.noise_weights(border_offsets(grey)) is None  # no noise: nothing to whiten


def test_fill_holes_gives_the_character_only_the_cuts_small_new_islands():
    """After the colour-model cut, an island of key colour enclosed by the character and smaller than a pocket
    is the character's; a pocket enclosed before the cut (one the clip decided is background) and a larger
    enclosed island stay background, and so does everything connected to the border."""
    before = np.ones((40, 60), bool)
    before[5:35, 5:55] = False  # the character
    before[10:14, 10:14] = True  # a pocket decided background before the cut (16 px)
    before[20:30, 20:40] = True  # background reaching the border through a channel ...
    before[25:27, 40:55] = True  # ... that the cut closes
    cut = before.copy()
    cut[25:27, 40:55] = False
    cut[20:30, 20:40] = False
    cut[22:25, 22:26] = True  # a small island the cut left (12 px)
    cut[26:30, 30:40] = True  # a large one (40 px)
    filled = matte.fill_holes(cut, before, min_hole=24)
    assert not filled[22:25, 22:26].any()
    assert filled[10:14, 10:14].all() and filled[26:30, 30:40].all()
    assert np.count_nonzero(filled != cut) == 12  # nothing else changes


def test_steady_edges_leave_fixed_pixels_out_of_the_average():
    """A pixel of the key's colour in three frames: opaque in the first, where a part drawn in the key's colour lies
    (fixed), soft in the others.  Unfixed, all three share one mean; fixed, the first keeps its alpha and lends none."""
    lab = np.zeros((3, 1, 1, 3), np.float32)
    start = np.array([1.0, 0.2, 0.4], np.float32).reshape(3, 1, 1)
    shared = start.copy()
    matte.steady_edges(shared, lab, tol=1.0)
    np.testing.assert_allclose(shared.ravel(), [0.5333333] * 3, rtol=1e-6)
    alpha = start.copy()
    matte.steady_edges(alpha, lab, tol=1.0, fixed=np.array([True, False, False]).reshape(3, 1, 1))
    np.testing.assert_allclose(alpha.ravel(), [1.0, 0.3, 0.3], rtol=1e-6)


def test_farthest_colour_is_the_colour_farthest_from_the_key_within_reach():
    dist = np.zeros((9, 9), np.float32)
    image = np.zeros((9, 9, 3), np.float32)
    dist[4, 4], image[4, 4] = 50.0, (0.1, 0.2, 0.3)
    dist[0, 8], image[0, 8] = 80.0, (0.9, 0.8, 0.7)  # farther from the key, but 4 px away from (2, 4) in x
    ys, xs = np.array([4, 2, 6, 2]), np.array([6, 4, 4, 6])
    found = matte.farthest_colour(image, dist, 2, ys, xs)
    np.testing.assert_array_equal(found[:3], np.broadcast_to(image[4, 4], (3, 3)))
    np.testing.assert_array_equal(found[3], image[0, 8])  # (2, 6) reaches both; the farther wins
