"""Animation previews: frames land in the temp folder, listed the way the web player reads them."""

from __future__ import annotations

import pytest
import torch
from gameanim.core.errors import InputError
from gameanim.core.preview import PREVIEW_KEY, animation_preview
from PIL import Image


def test_preview_writes_rgba_frames_with_alpha(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    frames = torch.rand(3, 8, 6, 3)
    mask = torch.zeros(3, 8, 6)
    mask[:, 2:5, 1:4] = 1.0
    ui = animation_preview(frames, fps=12, mask=mask, pixel_art=True)
    (entry,) = ui[PREVIEW_KEY]
    assert (
        entry["fps"] == 12.0 and entry["alpha"] and entry["pixel_art"] and (entry["width"], entry["height"]) == (6, 8)
    )
    assert len(entry["frames"]) == 3
    first = entry["frames"][0]
    assert first["type"] == "temp" and first["subfolder"].startswith("gameanim_preview/")
    image = Image.open(tmp_path / "temp" / first["subfolder"] / first["filename"])
    assert image.mode == "RGBA" and image.size == (6, 8)
    assert image.getpixel((0, 0))[3] == 0 and image.getpixel((2, 3))[3] == 255


def test_preview_without_alpha_is_rgb_and_rejects_bad_shapes(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    entry = animation_preview(torch.rand(2, 4, 4, 3), fps=8)[PREVIEW_KEY][0]
    assert not entry["alpha"]
    with pytest.raises(InputError, match="preview frames"):
        animation_preview(torch.rand(2, 4, 4, 2), fps=8)
