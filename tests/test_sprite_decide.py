"""The matte's decisions beyond the key colour (nodes/sprite/decide.py): a noise-free key is recognised as
such, the soft edge's width is measured from the rim, and the graph cut gives the character a pale part the
noisy key's tolerance swallowed, without filling a gap between the legs."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from gameanim.core import processes
from gameanim.nodes.sprite import decide, matte
from support.sprite_sources import gif_dithered, publish_as


def disc_clip(key: float, part: float, scale: int, noise: float = 0.0, t: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A grey disc (``part``) drawn at 1/``scale`` size with anti-aliasing, upscaled ``scale``x bilinear on a
    flat ``key``: ``(frames [T,H,W,3], truth alpha [T,H,W])``."""
    small = np.zeros((48, 64), np.float32)
    cv2.circle(small, (32, 24), 14, 1.0, -1, lineType=cv2.LINE_AA)
    alpha = np.clip(cv2.resize(small, None, fx=scale, fy=scale, interpolation=cv2.INTER_LINEAR), 0, 1)
    frame = alpha[..., None] * part + (1 - alpha[..., None]) * key
    rng = np.random.default_rng(0)
    frames = np.stack([frame + rng.normal(0, noise, frame.shape) for _ in range(t)]).astype(np.float32)
    frames = np.clip(np.rint(np.repeat(frames, 3, axis=-1) * 255) / 255, 0, 1).astype(np.float32)
    return frames, np.repeat(alpha[None], t, axis=0)


def test_key_kinds_are_recognised():
    frames, _ = disc_clip(0.5, 0.9, 1)
    band = matte.border_mask(*frames.shape[1:3], 4)
    assert decide.key_kind(frames, band) == "exact"
    noisy, _ = disc_clip(0.5, 0.9, 1, noise=0.004)
    assert decide.key_kind(noisy, band) == "noisy"
    # A dark key hides noise in Lab (L is nearly flat near black); the test is on RGB.
    dark, _ = disc_clip(0.0, 0.9, 1, noise=0.01)
    assert decide.key_kind(np.clip(dark, 0, 1), band) == "noisy"
    # Through JPEG the flat border stays exact and the disc rings: faint pixels around it.
    published = publish_as(np.rint(frames * 255).astype(np.uint8), "jpeg").astype(np.float32) / 255
    assert decide.key_kind(published, band) == "compressed"


@pytest.mark.parametrize("key", [(128, 128, 128), (204, 204, 204), (255, 255, 255)], ids=str)
def test_block_codec_is_recognised_in_the_keys_noise(key):
    """A video model's noise on the key (a render's generated look) is coded in blocks after JPEG or H.264 (at the
    usual and at a strong setting) and not as drawn or GIF-dithered; scaled after decoding it is not on the grid."""
    from support.rig_renders import rendered_clip
    from support.sprite_sources import h264

    frames, _ = rendered_clip("mrfixit", key, 1.0, generated=True)
    as_float = {form: publish_as(frames, form).astype(np.float32) / 255 for form in ("png", "gif", "jpeg", "h264")}
    as_float["crf28"] = h264(frames, 28).astype(np.float32) / 255
    assert not decide.block_coded(as_float["png"], 4) and not decide.block_coded(as_float["gif"], 4)
    assert all(decide.block_coded(as_float[form], 4) for form in ("jpeg", "h264", "crf28"))
    shifted = np.ascontiguousarray(as_float["h264"][:, 2:, 2:])
    assert not decide.block_coded(shifted, 4)
    assert not decide.block_coded(np.zeros((2, 3, 3, 3), np.float32), 4)  # no block in reach


def test_a_black_key_is_not_taken_for_a_coded_grey():
    """A video model's black key after a codec: its noise clips at zero (H.264 codes it flat), and the codec's floor
    would take a dark character's shading into the key; the matte keeps it a noisy key."""
    from support.rig_renders import rendered_clip

    frames, _ = rendered_clip("mrfixit", (0, 0, 0), 0.35, generated=True)
    h264 = publish_as(frames, "h264").astype(np.float32) / 255
    assert not decide.block_coded(h264, 4)
    jpeg = publish_as(frames, "jpeg").astype(np.float32) / 255
    black = matte.Background(np.zeros(3, np.float32), 1.0, True)
    grey = matte.Background(np.full(3, 0.5, np.float32), 1.0, True)
    assert decide.block_coded(jpeg, 4)  # its blocks show
    assert not matte.coded_grey(black, jpeg, 4) and matte.coded_grey(grey, jpeg, 4)


def test_soft_edge_width_follows_the_upscale():
    widths = {}
    for scale in (1, 3):
        frames, _ = disc_clip(0.5, 0.95, scale)
        lab = matte.to_lab(frames)
        key = lab[:, :1, :1]
        dists = [matte.distance(f, key[i]) for i, f in enumerate(lab)]
        bgs = [matte.background_region(d, decide.EXACT_TOL) for d in dists]
        widths[scale] = decide.soft_edge_width(dists, bgs)
    assert widths[1] == 1 and widths[3] >= 2, widths  # a render's 1-px anti-aliasing; an upscale's wider ramp


def test_an_empty_noise_free_clip_is_all_background():
    """Frames of the bare key (no character yet, or a cut between actions): no rim to measure, nothing kept."""
    frames, _ = disc_clip(0.5, 0.5, 1)
    rgb, alpha, _ = matte.remove_background(frames)
    assert not alpha.any()
    assert rgb.shape == frames.shape


def pale_square_clip() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(frames, pale, inner gap)``: a pale square (ΔE ~4.5 above a mid-grey key, in lightness) joined to a
    dark body, under noise and GIF dithering whose tolerance covers it, and a key-coloured gap inside the body;
    ``pale`` and ``inner gap`` are masks of their insides."""
    h, w = 120, 160
    truth = np.zeros((h, w), np.float32)
    truth[30:90, 40:80] = 1  # dark body
    truth[40:80, 80:120] = 1  # pale part beside it
    gap = np.zeros((h, w), bool)
    gap[50:70, 52:68] = True
    truth[gap] = 0
    colour = np.where(truth[..., None] > 0, 0.15, 0.5).astype(np.float32) * np.ones(3, np.float32)
    colour[40:80, 80:120] = 0.56
    rng = np.random.default_rng(3)
    noisy = np.stack([np.clip(colour + rng.normal(0, 0.012, colour.shape), 0, 1) for _ in range(3)])
    frames = gif_dithered(np.rint(noisy * 255).astype(np.uint8)).astype(np.float32) / 255
    pale = np.zeros((h, w), bool)
    pale[43:77, 83:117] = True
    return frames, pale, cv2.erode(gap.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)


def no_colour_cut(*args):
    """``colour_cut_frames`` that decides nothing: the key model's backgrounds, no gains."""
    return args[6], [np.zeros_like(b) for b in args[6]]


@pytest.fixture
def threads_only(monkeypatch):
    """The matte on this process's threads: a function patched here is not patched in the worker processes."""
    monkeypatch.setattr(processes, "ENABLED", False)


@pytest.mark.usefixtures("threads_only")
@pytest.mark.parametrize("cut", ["colour models", "denoised distance"])
def test_cut_gives_back_a_pale_part_under_dithering_and_keeps_gaps(monkeypatch, cut):
    """Either cut keeps the pale square (the key model alone, judged in ΔE, keys it out) and leaves the gap
    open: over colour models (what a neutral key under noise gets) or over the denoised distance."""
    frames, pale, inner_gap = pale_square_clip()
    called = []
    colour_cut = decide.colour_cut_frames
    monkeypatch.setattr(matte, "colour_cut_frames", lambda *args: called.append(1) or colour_cut(*args))
    if cut == "denoised distance":
        monkeypatch.setattr(matte, "colour_cut_frames", no_colour_cut)
        monkeypatch.setattr(matte, "grey_key", lambda model: False)  # takes the other path
    _, alpha, _ = matte.remove_background(frames)
    assert bool(called) == (cut == "colour models")
    assert (alpha[:, pale] > 0.5).mean() >= 0.95
    assert (alpha[:, inner_gap] < 0.5).mean() >= 0.99
    with monkeypatch.context() as patch:  # the key model alone, in ΔE: its noise-widened tolerance swallows the part
        patch.setattr(matte, "decide_frames", lambda *args: args[6])
        patch.setattr(matte, "colour_cut_frames", no_colour_cut)
        patch.setattr(matte, "noise_weights", lambda resid: None)
        _, alone, _ = matte.remove_background(frames)
    assert (alone[:, pale] > 0.5).mean() <= 0.05


def test_gaps_between_edges_are_found_in_rows_and_columns():
    """A pixel between two edges within the reach (left and right, or above and below) is in a gap; beside one
    edge, or between edges farther apart than the reach, it is not."""
    edges = np.zeros((20, 30), bool)
    edges[:, 5] = edges[:, 10] = True  # a 4-px gap between two vertical edges
    edges[:, 25] = True  # 15 px on from the second
    gap = decide.between_edges(edges, 6)
    assert gap[10, 6:10].all() and not gap[10, 12:25].any() and not gap[10, 0:5].any()
    assert (decide.between_edges(edges.T, 6).T == gap).all()


@pytest.mark.usefixtures("threads_only")
def test_key_model_in_noise_units_keeps_a_pale_part_offset_in_lightness(monkeypatch):
    """Without the cut, the key model judging the enclosed pocket's inside in the key's noise units (chroma
    noise scaled to the lightness noise, matte.noise_weights) keeps the pale square, which is offset in
    lightness only, and still opens the key-coloured gap."""
    frames, pale, inner_gap = pale_square_clip()
    monkeypatch.setattr(matte, "decide_frames", lambda *args: args[6])
    monkeypatch.setattr(matte, "colour_cut_frames", no_colour_cut)
    _, alone, _ = matte.remove_background(frames)
    assert (alone[:, pale] > 0.5).mean() >= 0.95
    assert (alone[:, inner_gap] < 0.5).mean() >= 0.99
