"""Exports read back with Pillow: frame count, durations, alpha; names confined to the folder."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError, UnsafePathError
from PIL import Image
from support import sprite_synth as synth

DURATIONS = [100, 80, 120, 60, 100]


@pytest.fixture(scope="module")
def clip():
    rng = np.random.default_rng(0)
    pos = [(40 + 6 * k + rng.uniform(-1, 1), 70.0) for k in range(5)]
    frames, alpha, _ = synth.clip(t=5, h=96, w=128, positions=pos)
    return torch.from_numpy(frames), torch.from_numpy(alpha)


def read_back(path):
    frames, durations = [], []
    with Image.open(path) as im:
        for k in range(im.n_frames):
            im.seek(k)
            im.load()
            durations.append(im.info.get("duration"))
            frames.append(np.asarray(im.convert("RGBA")))
    return np.stack(frames), durations


@pytest.mark.parametrize(("fmt", "suffix"), [("gif", ".gif"), ("apng", ".png"), ("webp", ".webp")])
def test_animation_round_trip(tmp_path, clip, fmt, suffix):
    rgb, alpha = clip
    (path,) = api.export_animation(rgb, alpha, tmp_path, "anim/walk", format=fmt, durations_ms=DURATIONS)
    assert path == tmp_path / "anim" / f"walk{suffix}"
    got, durations = read_back(path)
    assert len(got) == 5
    assert [int(d) for d in durations] == DURATIONS
    want_a = (alpha.numpy() * 255 + 0.5).astype(np.uint8)
    if fmt == "gif":  # 1-bit alpha at 50%
        np.testing.assert_array_equal(got[..., 3] > 127, want_a > 127)
        assert set(np.unique(got[..., 3])) <= {0, 255}
    else:  # full alpha, lossless
        np.testing.assert_array_equal(got[..., 3], want_a)
        opaque = want_a > 0
        want_rgb = (rgb.numpy() * 255 + 0.5).astype(np.uint8)
        np.testing.assert_array_equal(got[..., :3][opaque], want_rgb[opaque])
    # Transparent corners really are transparent, opaque body really opaque.
    assert (got[:, 0, 0, 3] == 0).all()


def test_gif_colours_close(tmp_path, clip):
    rgb, alpha = clip
    (path,) = api.export_animation(rgb, alpha, tmp_path, "walk", format="gif", fps=10)
    got, durations = read_back(path)
    assert durations == [100] * 5
    opaque = alpha.numpy() > 0.99
    err = np.abs(got[..., :3][opaque].astype(int) - (rgb.numpy()[opaque] * 255).astype(int)).mean()
    assert err < 4


def test_png_sequence(tmp_path, clip):
    rgb, alpha = clip
    paths = api.export_animation(rgb, alpha, tmp_path, "seq/walk", format="png_sequence")
    assert [p.name for p in paths] == [f"walk_{i:05d}.png" for i in range(5)]
    with Image.open(paths[2]) as im:
        assert im.mode == "RGBA"
        np.testing.assert_array_equal(np.asarray(im)[..., 3], (alpha[2].numpy() * 255 + 0.5).astype(np.uint8))


def test_export_errors(tmp_path, clip):
    rgb, alpha = clip
    with pytest.raises(UnsafePathError):
        api.export_animation(rgb, alpha, tmp_path, "../../etc/x", format="gif")
    with pytest.raises(UnsafePathError):
        api.export_animation(rgb, alpha, tmp_path, "/tmp/x", format="gif")
    with pytest.raises(InputError, match="format"):
        api.export_animation(rgb, alpha, tmp_path, "x", format="mp4")
    with pytest.raises(InputError, match="duration"):
        api.export_animation(rgb, alpha, tmp_path, "x", durations_ms=[100])
    with pytest.raises(InputError, match="empty"):
        api.export_animation(torch.zeros(0, 8, 8, 3), None, tmp_path, "x")
