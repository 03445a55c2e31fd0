"""The sprite nodes: declarations, and the shipped API workflow run in-process through the node classes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gameanim.core.errors import InputError, UnsafePathError
from gameanim.nodes.sprite import comfy_nodes
from PIL import Image

WORKFLOW = "workflows/api/sprite_postprocess.json"


def run_workflow(pack, path):
    graph = json.loads(path.read_text())
    outputs, ui = {}, {}
    order: list[str] = []
    while len(order) < len(graph):  # dependencies first, as ComfyUI runs them
        order += [
            n
            for n in sorted(graph, key=int)
            if n not in order and all(v[0] in order for v in graph[n]["inputs"].values() if isinstance(v, list))
        ][:1]
    listed: set[tuple[str, int]] = set()  # outputs of OUTPUT_IS_LIST slots (one clip each here)
    for node_id in order:
        node = graph[node_id]
        instance = pack.NODE_CLASS_MAPPINGS[node["class_type"]]()
        links = {k: tuple(v) for k, v in node["inputs"].items() if isinstance(v, list)}
        kwargs = {k: outputs[links[k][0]][links[k][1]] if k in links else v for k, v in node["inputs"].items()}
        if getattr(instance, "INPUT_IS_LIST", False):  # ComfyUI hands such nodes every input as a list
            kwargs = {k: v if links.get(k) in listed else [v] for k, v in kwargs.items()}
        else:
            for name, link in links.items():
                if link in listed:
                    (kwargs[name],) = kwargs[name]  # one clip: ComfyUI runs the node once with it
        listed |= {(node_id, i) for i, is_list in enumerate(getattr(instance, "OUTPUT_IS_LIST", ())) if is_list}
        result = getattr(instance, instance.FUNCTION)(**kwargs)
        if isinstance(result, dict):
            ui[node_id] = result["ui"]
            result = result["result"]
        outputs[node_id] = result
    return outputs, ui


def test_nodes_declare_tooltips_and_categories(pack):
    for node_id, cls in comfy_nodes.NODE_CLASS_MAPPINGS.items():
        assert node_id in pack.NODE_CLASS_MAPPINGS and node_id.startswith("GameAnimSprite")
        assert cls.CATEGORY.startswith("GameAnim/Sprite/") and cls.DESCRIPTION
        for section in cls.INPUT_TYPES().values():
            for spec in section.values():
                assert spec[1]["tooltip"]
        assert len(cls.RETURN_TYPES) == len(cls.RETURN_NAMES) == len(cls.OUTPUT_TOOLTIPS)


def test_api_workflow_runs_through_the_nodes(pack, pack_root, tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    outputs, ui = run_workflow(pack, pack_root / WORKFLOW)
    assert outputs["1"][2] == 8
    alpha = outputs["2"][1].numpy()
    assert 0.05 < alpha.mean() < 0.5 and alpha[:, 0, 0].max() == 0  # keyed, not passed through
    info = json.loads(outputs["3"][2])
    assert len(info["offsets"]) == 8
    out = tmp_path / "output" / "gameanim"
    sheet_png = out / ui["5"]["images"][0]["filename"]
    atlas = json.loads(sheet_png.with_suffix(".json").read_text())
    keys = [int(k) for k in outputs["9"][0].split(",")]
    timing = outputs["10"][2]
    assert keys[0] == 0 and keys[-1] == 7 and timing["source_keys"] == keys
    # the Timing Chart's drawings, each lasting its duration (in source frames at 12 fps)
    assert len(atlas["frames"]) == len(timing["durations"])
    assert [f["duration"] for f in atlas["frames"].values()] == [round(d * 1000 / 12) for d in timing["durations"]]
    assert sheet_png.with_suffix(".tres").is_file() and sheet_png.with_suffix(".aseprite.json").is_file()
    gif = out / ui["6"]["images"][0]["filename"]
    preview = ui["6"]["gameanim_preview"][0]
    assert len(preview["frames"]) == len(timing["durations"]) and preview["alpha"] and preview["fps"] == 12.0
    with Image.open(gif) as im:
        assert im.n_frames == len(timing["durations"])
        assert "transparency" in im.info


def test_prefix_traversal_is_rejected(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    node = comfy_nodes.GameAnimSpriteExport()
    import torch

    img, mask = torch.zeros(2, 8, 8, 3), torch.ones(2, 8, 8)
    with pytest.raises(UnsafePathError):
        node.run(img, "../outside", "gif", 12.0, 0, mask=mask)
    result = node.run(img, "ok/name", "apng", 12.0, 0, mask=mask)
    assert result["result"][0] == "ok/name_00001.png"
    assert node.run(img, "ok/name", "apng", 12.0, 0, mask=mask)["result"][0] == "ok/name_00002.png"


def test_loader_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    node = comfy_nodes.GameAnimSpriteLoadFrames()
    with pytest.raises(InputError, match="not found"):
        node.load("input", "nothing_here", 0)
    with pytest.raises(UnsafePathError):
        node.load("pack_sample", "../../..", 0)
    folder = tmp_path / "input" / "mixed"
    folder.mkdir(parents=True)
    Image.fromarray(np.zeros((8, 8, 4), np.uint8)).save(folder / "a.png")
    Image.fromarray(np.zeros((9, 8, 4), np.uint8)).save(folder / "b.png")
    with pytest.raises(InputError, match="one size"):
        node.load("input", "mixed", 0)


def test_timing_node_loop_trim_reports_indices():
    import torch

    base = torch.rand(5, 16, 16, 3, generator=torch.Generator().manual_seed(0))
    frames = torch.cat([base, base[:1]])
    img, _, info = comfy_nodes.GameAnimSpriteTiming().run(frames, "loop_trim", 2, 8, 24.0, 12.0, 3)
    data = json.loads(info)
    assert (data["start"], data["end"]) == (0, 5) and data["indices"] == [0, 1, 2, 3, 4]
    assert img.shape[0] == 5


def test_any_image_connects_and_mask_polarity_is_explicit(tmp_path, monkeypatch):
    """Stabilise, Pixel Art, Save Sprite Sheet and Save Sprite Animation take a plain IMAGE (opaque), a
    4-channel IMAGE (4th channel = alpha) or a MASK of either polarity, with the same result."""
    import torch
    from support import sprite_synth as synth

    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    frames, truth, _ = synth.clip(t=3, h=96, w=128)
    rgb, alpha = torch.from_numpy(frames), torch.from_numpy(truth)
    rgba = torch.cat([rgb, alpha[..., None]], dim=-1)
    node = comfy_nodes.GameAnimSpriteStabilise()
    by_mask = node.run(rgb, "feet", "lock", 2.0, 2, mask=alpha)
    by_channel = node.run(rgba, "feet", "lock", 2.0, 2)
    by_transparency = node.run(rgb, "feet", "lock", 2.0, 2, mask=1 - alpha, mask_is="transparency")
    for other in (by_channel, by_transparency):
        torch.testing.assert_close(other[1], by_mask[1])
        assert json.loads(other[2])["offsets"] == json.loads(by_mask[2])["offsets"]
    info = json.loads(by_mask[2])
    assert info["root_motion"][0] == [0, 0] and len(info["root_motion"]) == 3
    # No alpha at all: the frames are opaque.
    opaque = node.run(rgb, "feet", "none", 2.0, 0)
    assert float(opaque[1].min()) == 1.0
    # Pixel Art is a list node (one palette over all clips): every input arrives as a list.
    pixel_widgets = ([32], [24], ["none"], [8], [""], [False], ["000000"], [0])
    _, (pix_alpha,) = comfy_nodes.GameAnimSpritePixelArt().run([rgb], *pixel_widgets)
    assert float(pix_alpha.min()) == 1.0
    # Save Sprite Sheet is a list node (one animation per clip): every input arrives as a list.
    widgets = (["grid"], [0], [1], [0], [False], [12.0], [False], [False], ["none"])
    sheet = comfy_nodes.GameAnimSpriteSheet().run([rgba], ["s/x"], *widgets)
    assert float(sheet["result"][1].max()) == 1.0 and float(sheet["result"][1].min()) == 0.0
    inverted = comfy_nodes.GameAnimSpriteSheet().run(
        [rgb], ["s/z"], *widgets, mask=[1 - alpha], mask_is=["transparency"]
    )
    torch.testing.assert_close(inverted["result"][1], sheet["result"][1])
    files = comfy_nodes.GameAnimSpriteExport().run(rgb, "s/y", "apng", 12.0, 0, mask=1 - alpha, mask_is="transparency")
    assert files["result"][0].endswith(".png")
    with pytest.raises(InputError, match="polarity"):
        node.run(rgb, "feet", "lock", 2.0, 2, mask=alpha, mask_is="inverted")


def test_remove_background_node_refuses_a_scene():
    import torch

    scene = torch.rand(2, 64, 96, 3, generator=torch.Generator().manual_seed(0))
    with pytest.raises(InputError, match="not a solid colour"):
        comfy_nodes.GameAnimSpriteRemoveBackground().run(scene, 2.0, 16.0, 4, 1)


def test_remove_background_keeps_a_scene_opaque_when_asked():
    """``if_not_solid = keep opaque``: the same not-solid finding, shown as a warning, frames kept whole."""
    import torch

    scene = torch.rand(2, 64, 96, 3, generator=torch.Generator().manual_seed(0))
    node = comfy_nodes.GameAnimSpriteRemoveBackground()
    rgb, alpha, rgba = node.run(scene, 2.0, 16.0, 4, 1, if_not_solid="keep opaque")
    torch.testing.assert_close(rgb, scene)
    assert float(alpha.min()) == 1.0 and rgba.shape == (2, 64, 96, 4)
    with pytest.raises(InputError, match="not a solid colour"):
        node.run(scene, 2.0, 16.0, 4, 1)
