"""Pixel art: nearest downscale, palettes (k-means, median cut, PICO-8, .hex/.gpl), outline."""

from __future__ import annotations

import gameanim.nodes.sprite.pixelart as px
import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError
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
