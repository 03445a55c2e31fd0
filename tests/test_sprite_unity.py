"""Unity's sprite-sheet import settings (``.png.meta``) and the Aseprite pivot slice, on Kenney's real walk cycles.

Unity cannot run here, so the ``.meta`` is read back with a YAML parser (Unity writes ``.meta`` files as
plain YAML, without the ``%YAML``/``--- !u!`` headers of scene and asset files) and checked against the
fields Unity's ``TextureImporter`` / ``SpriteMetaData`` documentation names: sprite mode Multiple (2),
texture type Sprite (8), Point filtering (0), no compression (0), no mip maps, one sprite per atlas frame
whose ``rect`` is the atlas rectangle with y counted from the bottom of the texture, ``alignment`` 9
(Custom) and a ``pivot`` normalised to the rect from its bottom-left corner, at the frame's anchor.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from gameanim.nodes.sprite import comfy_nodes
from PIL import Image
from support import sprite_real as real

yaml = pytest.importorskip("yaml", reason="PyYAML reads the .meta back (requirements-dev.txt)")

SPRITE_KEYS = {"serializedVersion", "name", "rect", "alignment", "pivot", "border", "spriteID", "internalID"}


def _stabilised(character: str, scale: float = 1.0):
    """Kenney's walk composited on white, keyed and anchored at the feet by the nodes (offsets_json)."""
    frames, _, _ = real.composite(character, real.KEYS["white"], size=(200, 160), scale=scale, jitter=3, seed=2)
    rgb, alpha, _ = comfy_nodes.GameAnimSpriteRemoveBackground().run(torch.from_numpy(frames), 1.0, 16.0, 4, 1)
    return comfy_nodes.GameAnimSpriteStabilise().run(rgb, "feet", "lock", 2.0, 2, mask=alpha)


def _save(tmp_path, monkeypatch, clips, layout, names=None):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    widgets = ([layout], [0], [1], [0], [False], [10.0], [False], [True], ["none"])
    out = comfy_nodes.GameAnimSpriteSheet().run(
        [c[0] for c in clips],
        ["unity/hero"],
        *widgets,
        mask=[c[1] for c in clips],
        root_motion=[c[2] for c in clips],
        animation=names or [],
    )
    folder = tmp_path / "output" / "unity"
    written = {name: folder / name for name in out["ui"]["text"][0].split(", ")}
    png = next(p for n, p in written.items() if n.endswith(".png"))
    return png, written


def _read_meta(path):
    text = path.read_text(encoding="utf-8")
    assert not text.startswith(("%YAML", "---")), "Unity .meta files are plain YAML"
    return yaml.safe_load(text)


@pytest.mark.parametrize("layout", ["grid", "packed"])
@pytest.mark.parametrize("character", ["robot", "female_person", "zombie"])
def test_unity_meta_slices_the_sheet_at_the_atlas_rects_with_the_feet_as_pivot(
    tmp_path, monkeypatch, layout, character
):
    clip = _stabilised(character)
    png, written = _save(tmp_path, monkeypatch, [clip], layout)
    meta_path = png.with_name(png.name + ".meta")
    assert meta_path in written.values()
    meta = _read_meta(meta_path)
    atlas = json.loads(png.with_suffix(".json").read_text())
    sheet = np.asarray(Image.open(png))
    height = sheet.shape[0]

    assert meta["fileFormatVersion"] == 2 and len(meta["guid"]) == 32 and int(meta["guid"], 16) >= 0
    importer = meta["TextureImporter"]
    assert importer["textureType"] == 8 and importer["spriteMode"] == 2
    assert importer["textureSettings"]["filterMode"] == 0 and importer["mipmaps"]["enableMipMap"] == 0
    assert importer["alphaIsTransparency"] == 1 and importer["nPOTScale"] == 0
    assert importer["maxTextureSize"] >= max(sheet.shape[:2])
    (platform,) = importer["platformSettings"]
    assert platform["textureCompression"] == 0 and platform["maxTextureSize"] >= max(sheet.shape[:2])

    sprites = importer["spriteSheet"]["sprites"]
    assert [s["name"] for s in sprites] == list(atlas["frames"])
    ids = importer["spriteSheet"]["nameFileIdTable"]
    assert len(set(ids.values())) == len(sprites) and all(ids[s["name"]] == s["internalID"] for s in sprites)
    assert {e["second"]: e["first"][213] for e in importer["internalIDToNameTable"]} == ids
    pivot_canvas = json.loads(clip[2])["pivot"]
    for sprite, (name, frame) in zip(sprites, atlas["frames"].items(), strict=True):
        assert SPRITE_KEYS <= set(sprite)
        rect, box = sprite["rect"], frame["frame"]
        assert (rect["x"], rect["width"], rect["height"]) == (box["x"], box["w"], box["h"])
        assert rect["y"] == height - box["y"] - box["h"], "Unity's rect y counts from the bottom"
        assert sprite["alignment"] == 9 and 0.0 <= sprite["pivot"]["x"] <= 1.0 and 0.0 <= sprite["pivot"]["y"] <= 1.0
        # The pivot, back in the frame's pixels (y down), is Stabilise's anchor for that frame...
        source = frame["spriteSourceSize"]
        px = source["x"] + sprite["pivot"]["x"] * rect["width"]
        py = source["y"] + (1.0 - sprite["pivot"]["y"]) * rect["height"]
        index = int(name.rsplit("_", 1)[1])
        np.testing.assert_allclose([px, py], pivot_canvas[index], atol=0.01)
        # ...which is the ground line: the bottom of the lowest opaque row of the sprite in the sheet.
        cell = sheet[box["y"] : box["y"] + box["h"], box["x"] : box["x"] + box["w"], 3]
        lowest = np.nonzero((cell > 127).sum(axis=1) >= 2)[0].max() + 1
        ground_in_rect = (1.0 - sprite["pivot"]["y"]) * rect["height"]
        assert abs(ground_in_rect - lowest) <= 1.0, (name, ground_in_rect, lowest)

    # The Aseprite JSON carries the same pivots as a slice, one key per frame (whole pixels).
    aseprite = json.loads(png.with_suffix(".aseprite.json").read_text())
    (slice_,) = aseprite["meta"]["slices"]
    assert slice_["name"] == "pivot" and [k["frame"] for k in slice_["keys"]] == list(range(len(sprites)))
    for key, frame in zip(slice_["keys"], atlas["frames"].values(), strict=True):
        size = frame["sourceSize"]
        assert key["bounds"] == {"x": 0, "y": 0, "w": size["w"], "h": size["h"]}
        pivot = pivot_canvas[key["frame"]]
        assert (key["pivot"]["x"], key["pivot"]["y"]) == (int(np.floor(pivot[0])), int(np.floor(pivot[1])))


def test_unity_json_holds_durations_and_root_motion_with_y_up(tmp_path, monkeypatch):
    walk = _stabilised("male_adventurer")
    small = _stabilised("robot", scale=0.75)  # a smaller canvas: padded to the shared frame size
    png, _ = _save(tmp_path, monkeypatch, [walk, small], "grid", names=["walk", "robot walk: 2"])
    data = json.loads(png.with_suffix(".unity.json").read_text())
    atlas = json.loads(png.with_suffix(".json").read_text())
    assert data["texture"] == png.name and data["pixels_per_unit"] == 100
    assert data["texture_guid"] == _read_meta(png.with_name(png.name + ".meta"))["guid"]
    assert [a["name"] for a in data["animations"]] == list(atlas["animations"])
    for animation in data["animations"]:
        names = atlas["animations"][animation["name"]]
        assert [f["sprite"] for f in animation["frames"]] == names
        for entry, name in zip(animation["frames"], names, strict=True):
            frame = atlas["frames"][name]
            assert entry["duration_ms"] == frame["duration"]
            assert entry["root"] == {"x": frame["root"]["x"], "y": -frame["root"]["y"]}
    # A name YAML would misread is quoted, and the padded clip's pivot moved with it to the shared frame.
    meta = _read_meta(png.with_name(png.name + ".meta"))
    sprites = {s["name"]: s for s in meta["TextureImporter"]["spriteSheet"]["sprites"]}
    assert set(sprites) == set(atlas["frames"]) and "robot walk: 2_000" in sprites
    first = atlas["frames"]["robot walk: 2_000"]
    own = json.loads(small[2])
    canvas_w, canvas_h = own["canvas"]["w"], own["canvas"]["h"]
    shift = ((first["sourceSize"]["w"] - canvas_w) // 2, first["sourceSize"]["h"] - canvas_h)
    sprite = sprites["robot walk: 2_000"]
    px = sprite["pivot"]["x"] * sprite["rect"]["width"]
    py = (1 - sprite["pivot"]["y"]) * sprite["rect"]["height"]
    np.testing.assert_allclose([px, py], np.add(own["pivot"][0], shift), atol=0.01)


def test_sheet_without_offsets_pivots_at_the_bottom_centre(tmp_path, monkeypatch):
    rgb, alpha = real.walk_cycle("female_adventurer")
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    widgets = (["packed"], [0], [1], [0], [False], [10.0], [False], [True], ["none"])
    out = comfy_nodes.GameAnimSpriteSheet().run(
        [torch.from_numpy(rgb)], ["u/b"], *widgets, mask=[torch.from_numpy(alpha)]
    )
    folder = tmp_path / "output" / "u"
    png = folder / out["ui"]["text"][0].split(", ")[0]
    meta = _read_meta(png.with_name(png.name + ".meta"))
    atlas = json.loads(png.with_suffix(".json").read_text())
    for sprite, frame in zip(meta["TextureImporter"]["spriteSheet"]["sprites"], atlas["frames"].values(), strict=True):
        source, size = frame["spriteSourceSize"], frame["sourceSize"]
        px = source["x"] + sprite["pivot"]["x"] * sprite["rect"]["width"]
        py = source["y"] + (1.0 - sprite["pivot"]["y"]) * sprite["rect"]["height"]
        np.testing.assert_allclose([px, py], [size["w"] / 2, size["h"]], atol=1e-3)
