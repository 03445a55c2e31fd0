"""The timing step on a list of clips (VC2 Action Set's path): each clip retimed on its own, one sheet.

ComfyUI runs Key Poses and Timing Chart once per clip of a list (OUTPUT_IS_LIST upstream) and hands
Save Sprite Sheet (INPUT_IS_LIST) the list of drawings, masks and timings; this test calls the node
classes the same way with two clips of different lengths (an eased attack and a looping swing).
"""

from __future__ import annotations

import json

import pytest
import torch
from gameanim.core.errors import InputError
from support import timing_synth as ts


@pytest.fixture(scope="module")
def clips():
    attack, _ = ts.eased_with_holds()
    swing, _ = ts.swing_cycle(phase=3)
    return {name: [torch.from_numpy(a) for a in ts.render(p)] for name, p in (("attack", attack), ("swing", swing))}


def test_each_clip_of_a_list_keeps_its_own_durations_on_one_sheet(clips, tmp_path, monkeypatch):
    from gameanim.core import host
    from gameanim.nodes.sprite.comfy_nodes import GameAnimSpriteExport, GameAnimSpriteSheet
    from gameanim.nodes.timing.comfy_nodes import GameAnimKeyPoses, GameAnimTimingChart

    monkeypatch.setattr(host, "output_dir", lambda: tmp_path / "output")
    monkeypatch.setattr(host, "temp_dir", lambda: tmp_path / "temp")
    (tmp_path / "output").mkdir()
    drawings, masks, timings = [], [], []
    for (image, mask), loop in zip(clips.values(), (False, True), strict=True):
        keys = GameAnimKeyPoses().run(image, 0, False, 0.5, 60.0, mask=mask, loop=loop)["result"][0]
        out, out_mask, timing, _, _ = GameAnimTimingChart().run(
            image, keys, 2, 3, "ease-in-out", 0.0, 0.0, "flow", mask=mask, loop=loop
        )["result"]
        drawings.append(out)
        masks.append(out_mask)
        timings.append(timing)
    lengths = [len(d) for d in drawings]
    assert lengths[0] != lengths[1] and all(3 in t["durations"] for t in timings)  # holds of 3 in both clips
    fps = 10.0
    sheet = GameAnimSpriteSheet().run(
        drawings,
        ["gameanim/actions"],
        ["packed"],
        [0],
        [2],
        [1],
        [False],
        [fps],
        [True],
        [True],
        ["godot4"],
        mask=masks,
        animation=list(clips),
        timing=timings,
        mask_is=["alpha"],
    )
    atlas = json.loads(sheet["result"][2])
    assert list(atlas["animations"]) == list(clips)
    for name, timing in zip(clips, timings, strict=True):
        got = [atlas["frames"][frame]["duration"] for frame in atlas["animations"][name]]
        assert got == [d * 1000 / fps for d in timing["durations"]], name
    aseprite = json.loads(next((tmp_path / "output" / "gameanim").glob("actions_*.aseprite.json")).read_text())
    tags = {t["name"]: (t["from"], t["to"]) for t in aseprite["meta"]["frameTags"]}
    assert [tags[n][1] - tags[n][0] + 1 for n in clips] == lengths
    from PIL import Image

    for (name, _), out, out_mask, timing in zip(clips.items(), drawings, masks, timings, strict=True):
        written = GameAnimSpriteExport().run(out, f"gameanim/{name}", "gif", fps, 0, mask=out_mask, timing=timing)
        with Image.open(tmp_path / "output" / written["result"][0]) as gif:
            delays = []
            for index in range(gif.n_frames):
                gif.seek(index)
                delays.append(gif.info["duration"])
        assert delays == [d * 1000 / fps for d in timing["durations"]], name
    with pytest.raises(InputError, match="2 clips arrived with 1 timings"):
        GameAnimSpriteSheet().run(
            drawings, ["x"], ["packed"], [0], [2], [1], [False], [fps], [True], [True], ["none"], timing=timings[:1]
        )
