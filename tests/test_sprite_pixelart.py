"""Pixel art: nearest downscale, palettes (k-means, median cut, PICO-8, .hex/.gpl), outline."""

from __future__ import annotations

import gameanim.nodes.sprite.pixelart as px
import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError
from support import sprite_real as real
from support import sprite_synth as synth


def test_palette_parsers(tmp_path):
    assert px.parse_palette("ff0000\n00ff00\n#0000ff\n").tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    gpl = "GIMP Palette\nName: test\nColumns: 2\n#\n255 0 0 red\n  0 128 255\tblue\n"
    np.testing.assert_allclose(px.parse_palette(gpl), [[1, 0, 0], [0, 128 / 255, 1]])
    path = tmp_path / "p.hex"
    path.write_text("000000\nffffff\n")
    assert api.load_palette(path).shape == (2, 3)
    with pytest.raises(InputError, match="hex colour"):
        px.parse_palette("zz0000")
    with pytest.raises(InputError, match="not found"):
        px.load_palette(tmp_path / "missing.gpl")
    assert len(px.PICO8) == 16


@pytest.mark.parametrize("method", ["kmeans", "median_cut", "pico8"])
def test_pixelate_uses_only_palette_colours(method):
    frames, alpha, _ = synth.clip(t=3)
    rgb, a, pal = px.pixelate(frames, alpha, 64, 40, palette=method, colours=6)
    assert rgb.shape == (3, 40, 64, 3) and a.shape == (3, 40, 64)
    assert set(np.unique(a).tolist()) <= {0.0, 1.0}
    used = np.unique(rgb[a > 0].round(4), axis=0)
    pal_set = {tuple(c) for c in pal.round(4)}
    assert {tuple(c) for c in used} <= pal_set
    assert len(used) <= (16 if method == "pico8" else 6)


def test_nearest_downscale_creates_no_new_colours():
    frames = np.zeros((1, 8, 8, 3), np.float32)
    frames[0, :, :4] = (1, 0, 0)
    frames[0, :, 4:] = (0, 0, 1)
    rgb, _ = px.downscale(frames, np.ones((1, 8, 8), np.float32), 4, 4)
    assert {tuple(c) for c in rgb.reshape(-1, 3)} == {(1, 0, 0), (0, 0, 1)}


def test_outline_is_one_pixel_ring():
    alpha = np.zeros((1, 9, 9), np.float32)
    alpha[0, 3:6, 3:6] = 1
    rgb = np.ones((1, 9, 9, 3), np.float32)
    out_rgb, out_a = px.outline(rgb * alpha[..., None], alpha, np.array([0, 0, 0], np.float32))
    assert out_a[0].sum() == 9 + 12  # 3x3 block plus its 4-connected ring
    assert out_a[0, 2, 4] == 1 and out_a[0, 2, 2] == 0
    assert (out_rgb[0, 2, 4] == 0).all()


def test_api_pixelate_with_file_palette_and_outline():
    frames, alpha, _ = synth.clip(t=2)
    pal = torch.tensor([[0.85, 0.2, 0.15], [0.2, 0.25, 0.6], [0.95, 0.8, 0.6]])
    rgb, a = api.pixelate(
        torch.from_numpy(frames),
        torch.from_numpy(alpha),
        32,
        20,
        palette="file",
        palette_colours=pal,
        outline_colour=(0.0, 0.0, 0.0),
    )
    colours = {tuple(c) for c in rgb[a > 0].numpy().round(4)}
    assert colours <= {tuple(c) for c in pal.numpy().round(4)} | {(0.0, 0.0, 0.0)}
    assert (0.0, 0.0, 0.0) in colours
    with pytest.raises(InputError, match="palette"):
        api.pixelate(torch.from_numpy(frames), torch.from_numpy(alpha), 32, 20, palette="file")


def _opaque_colours(rgb: np.ndarray, alpha: np.ndarray) -> set[tuple[float, ...]]:
    return {tuple(c) for c in rgb[alpha > 0].round(4)}


@pytest.mark.parametrize("character", ["robot", "female_adventurer", "zombie"])
@pytest.mark.parametrize("method", ["kmeans", "median_cut"])
@pytest.mark.parametrize("noisy", [False, True], ids=["clean", "noisy"])
def test_one_palette_locked_across_a_characters_actions(character, method, noisy):
    """Kenney's walk, climb and idle/jump/fall: with one palette every action uses the same <= K colours;
    one palette per clip (the per-clip option) gives each action its own colours."""
    clips = list(real.action_clips(character).values())
    if noisy:  # video-compressed material: every pixel a slightly different colour
        rng = np.random.default_rng(1)
        clips = [(np.clip(r + rng.normal(0, 0.02, r.shape), 0, 1).astype(np.float32), a) for r, a in clips]
    shared = px.pixelate_clips(clips, 48, 64, method, 8, seed=3)
    palette = {tuple(c) for c in shared[0][2].round(4)}
    assert len(palette) <= 8 and all(p is shared[0][2] for _, _, p in shared)
    used = [_opaque_colours(r, a) for r, a, _ in shared]
    assert all(colours <= palette for colours in used)
    assert len(set().union(*used)) <= 8
    per_clip = px.pixelate_clips(clips, 48, 64, method, 8, seed=3, shared=False)
    assert len(set().union(*(_opaque_colours(r, a) for r, a, _ in per_clip))) > 8
    # One clip alone gives the same result as before: its own palette.
    alone = px.pixelate(*clips[0], 48, 64, method, 8, seed=3)
    np.testing.assert_array_equal(alone[0], per_clip[0][0])


def test_pixel_art_node_fits_one_palette_over_the_list_of_clips(tmp_path, monkeypatch):
    from gameanim.nodes.sprite import comfy_nodes

    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    clips = real.action_clips("male_person")
    images = [torch.from_numpy(np.concatenate([r, a[..., None]], axis=-1)) for r, a in clips.values()]
    widgets = ([40], [52], ["kmeans"], [6], [""], [False], ["000000"], [0])
    node = comfy_nodes.GameAnimSpritePixelArt()
    assert node.INPUT_IS_LIST and node.OUTPUT_IS_LIST == (True, True)
    rgbs, masks = node.run(images, *widgets)
    assert [tuple(r.shape) for r in rgbs] == [(len(c[0]), 52, 40, 3) for c in clips.values()]
    colours = [_opaque_colours(r.numpy(), m.numpy()) for r, m in zip(rgbs, masks, strict=True)]
    assert len(set().union(*colours)) <= 6
    rgbs, masks = node.run(images, *widgets, palette_scope=["each_clip"])
    assert len(set().union(*(_opaque_colours(r.numpy(), m.numpy()) for r, m in zip(rgbs, masks, strict=True)))) > 6
    with pytest.raises(InputError, match="3 clips arrived with 1 masks"):
        node.run(images, *widgets, mask=[masks[0]])


def test_api_pixelate_clips_shares_one_palette():
    clips = [(torch.from_numpy(r), torch.from_numpy(a)) for r, a in real.action_clips("female_person").values()]
    out = api.pixelate_clips(clips, 48, 64, "median_cut", 5)
    assert [tuple(r.shape[:3]) for r, _ in out] == [(len(r), 64, 48) for r, _ in clips]
    assert len(set().union(*(_opaque_colours(r.numpy(), a.numpy()) for r, a in out))) <= 5
