"""Real consumers read our atlases: Phaser 3 in headless Chromium, Godot 3 headless for the .tres.

These tests skip (with the reason printed) when the consumer is not installed.  Install with:
``apt-get install -y chromium godot3-server`` and ``npm install --prefix tests/js`` (Phaser is
pinned in ``tests/js/package.json``).
"""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from gameanim import api
from support import sprite_synth as synth

HERE = Path(__file__).resolve().parent
PHASER = HERE / "js" / "node_modules" / "phaser" / "dist" / "phaser.min.js"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def skip_because(reason: str) -> None:
    print(f"SKIP: {reason}")
    pytest.skip(reason)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def sample_sheet(directory: Path, layout: str) -> tuple[list[Path], np.ndarray]:
    rng = np.random.default_rng(5)
    pos = [(48 + rng.uniform(-6, 6), 80 + rng.uniform(-4, 4)) for _ in range(6)]
    frames, alpha, _ = synth.clip(t=6, h=112, w=96, positions=pos)
    paths = api.save_sprite_sheet(
        torch.from_numpy(frames),
        torch.from_numpy(alpha),
        directory,
        "sheet",
        formats=("texturepacker_hash", "aseprite_hash", "godot3"),
        layout=layout,
        padding=2,
        extrude=1 if layout == "packed" else 0,
        durations_ms=[100, 100, 200, 100, 150, 100],
    )
    return paths, alpha


class _Handler(http.server.SimpleHTTPRequestHandler):
    results: list[dict] = []
    ready = threading.Event()

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).results.append(json.loads(body))
        type(self).ready.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def run_phaser(directory: Path) -> dict:
    """Serve ``directory`` (sheet.png + atlases) to Phaser in headless Chromium; its report."""
    chromium = find_chromium()
    if chromium is None:
        skip_because("chromium is not installed (apt-get install -y chromium)")
    if not PHASER.is_file():
        skip_because("phaser is not installed (npm install --prefix tests/js)")
    shutil.copy(PHASER, directory / "phaser.min.js")
    shutil.copy(HERE / "js" / "atlas_check.html", directory / "index.html")
    handler = type("Handler", (_Handler,), {"results": [], "ready": threading.Event()})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a, **k: handler(*a, directory=str(directory), **k)
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    proc = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={directory / 'profile'}", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert handler.ready.wait(90), "Phaser page did not report within 90 s"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        server.shutdown()
    result = handler.results[0]
    assert "error" not in result, result
    return result


def run_godot3(directory: Path) -> dict:
    """Import ``directory``'s sheet.png in a throw-away Godot 3 project and load sheet.godot3.tres."""
    godot = shutil.which("godot3-server") or shutil.which("godot3")
    if godot is None:
        skip_because("Godot 3 is not installed (apt-get install -y godot3-server)")
    (directory / "project.godot").write_text('config_version=4\n\n[application]\nconfig/name="atlas_check"\n')
    shutil.copy(HERE / "js" / "godot3_check.gd", directory / "check.gd")
    env = {"HOME": str(directory), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    # The editor run imports sheet.png (creates .import/); then the script loads the .tres.
    subprocess.run([godot, "--path", str(directory), "--editor", "--quit"], env=env, timeout=120, capture_output=True)
    run = subprocess.run(
        [godot, "--path", str(directory), "-s", "check.gd"], env=env, timeout=120, capture_output=True, text=True
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, run.stdout + run.stderr
    result = json.loads(lines[0][len("RESULT ") :])
    assert result["class"] == "SpriteFrames"
    return result


@pytest.mark.parametrize("layout", ["grid", "packed"])
def test_phaser_loads_texturepacker_and_aseprite(tmp_path, layout):
    paths, alpha = sample_sheet(tmp_path, layout)
    result = run_phaser(tmp_path)
    atlas = json.loads(paths[1].read_text())
    assert result["source"] == atlas["meta"]["size"]
    assert result["names"] == list(atlas["frames"])  # same names, same order, same count
    for name, entry in atlas["frames"].items():
        got = result["frames"][name]
        assert (got["x"], got["y"], got["w"], got["h"]) == tuple(entry["frame"][k] for k in "xywh")
        assert (got["realWidth"], got["realHeight"]) == (96, 112)
        assert got["trimmed"] == (layout == "packed")
        assert (got["spriteSourceX"], got["spriteSourceY"]) == (
            entry["spriteSourceSize"]["x"],
            entry["spriteSourceSize"]["y"],
        )
        assert got["centerAlpha"] > 0  # the body of the character is opaque in the loaded texture
    assert result["animation"]["key"] == "sheet"
    assert result["animation"]["frames"] == 6
    # Phaser keeps the per-frame duration it read from the Aseprite data.
    assert result["animation"]["durations"] == [100, 100, 200, 100, 150, 100]


def test_godot3_loads_spriteframes(tmp_path):
    paths, _ = sample_sheet(tmp_path, "packed")
    result = run_godot3(tmp_path)
    (anim,) = result["animations"]
    assert anim["name"] == "sheet" and anim["loop"] and anim["speed"] == 10
    atlas = json.loads(paths[1].read_text())
    rects = [tuple(v["frame"][k] for k in "xywh") for v in atlas["frames"].values()]
    # Godot 3 has no per-frame durations: 200 ms and 150 ms frames repeat (rounded to 2 x 100 ms).
    order = [0, 1, 2, 2, 3, 4, 4, 5]
    assert [tuple(r[:4]) for r in anim["regions"]] == [rects[i] for i in order]
    # The AtlasTexture margin restores the untrimmed frame size; the atlas is the whole sheet.
    assert all((r[4], r[5]) == (96, 112) for r in anim["regions"])
    assert all(r[6] == atlas["meta"]["size"]["w"] for r in anim["regions"])


ACTIONS = {"run": (6, 96, 80), "jump": (4, 112, 96), "idle": (3, 96, 96)}  # frames, height, width


def action_set_sheet(directory: Path, layout: str) -> dict:
    """One sheet of three actions with different frame counts, sizes and rates, through the node.

    The clips come as ComfyUI hands a list to Save Sprite Sheet (VC2 Action Set's clips and
    action_names); returns the TexturePacker atlas the node wrote.
    """
    from gameanim.nodes.sprite import comfy_nodes

    clips, masks = [], []
    for seed, (t, h, w) in enumerate(ACTIONS.values()):
        frames, alpha, _ = synth.clip(t=t, h=h, w=w, seed=seed)
        clips.append(torch.from_numpy(frames))
        masks.append(torch.from_numpy(alpha))
    node = comfy_nodes.GameAnimSpriteSheet()
    out = node.run(
        image=clips, mask=masks, animation=list(ACTIONS), fps=[10.0, 8.0, 5.0], filename_prefix=["sheet"],
        layout=[layout], columns=[0], padding=[2], extrude=[1 if layout == "packed" else 0],
        power_of_two=[False], merge_holds=[False], aseprite_json=[True], godot=["godot3"],
    )  # fmt: skip
    written = out["ui"]["text"][0].split(", ")
    for name in written:  # the consumers load fixed names: sheet.png, sheet.json, ...
        (directory / name).rename(directory / name.replace("sheet_00001", "sheet"))
    return json.loads((directory / "sheet.json").read_text())


def _rects_by_animation(atlas: dict) -> dict[str, list[list[int]]]:
    return {
        name: [[atlas["frames"][f]["frame"][k] for k in "xywh"] for f in frames]
        for name, frames in atlas["animations"].items()
    }


@pytest.mark.parametrize("layout", ["grid", "packed"])
def test_phaser_plays_each_animation_of_an_action_set(tmp_path, monkeypatch, layout):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    out_dir = tmp_path / "output"
    atlas = action_set_sheet(out_dir, layout)
    expected = _rects_by_animation(atlas)
    assert {k: len(v) for k, v in expected.items()} == {k: v[0] for k, v in ACTIONS.items()}
    result = run_phaser(out_dir)
    # One Phaser animation per Aseprite tag and per TexturePacker animation, each showing its own frames.
    assert result["played"]["aseprite"] == expected
    assert result["played"]["texturepacker"] == expected
    all_rects = [r for rects in expected.values() for r in rects]
    assert len({tuple(r) for r in all_rects}) == len(all_rects), "no two frames share a rectangle"


def test_godot3_plays_each_animation_of_an_action_set(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    out_dir = tmp_path / "output"
    atlas = action_set_sheet(out_dir, "packed")
    result = run_godot3(out_dir)
    got = {a["name"]: a for a in result["animations"]}
    assert set(got) == set(ACTIONS)
    for name, rects in _rects_by_animation(atlas).items():
        assert [r[:4] for r in got[name]["regions"]] == rects, name
        assert got[name]["speed"] == {"run": 10, "jump": 8, "idle": 5}[name]
        assert got[name]["loop"]


def travelling_sheet(directory: Path) -> dict:
    """A clip walking 5 px per frame, stabilised in place (lock), saved with its root motion; the atlas."""
    from gameanim.nodes.sprite import comfy_nodes

    frames, alpha, _ = synth.clip(t=6, h=112, w=140, positions=[(40 + 5 * i, 80) for i in range(6)])
    image, mask, info = comfy_nodes.GameAnimSpriteStabilise().run(
        torch.from_numpy(frames), "bbox_center", "lock", 2.0, 2, mask=torch.from_numpy(alpha)
    )
    paths = api.save_sprite_sheet(
        image,
        mask,
        directory,
        "sheet",
        formats=("texturepacker_hash", "aseprite_hash", "godot3"),
        durations_ms=[100, 100, 200, 100, 100, 100],
        root_motion=info,
    )
    return json.loads(paths[1].read_text())


def test_phaser_moves_the_sprite_by_the_root_motion(tmp_path):
    atlas = travelling_sheet(tmp_path)
    roots = [[entry["root"]["x"], entry["root"]["y"]] for entry in atlas["frames"].values()]
    # The steady travel Stabilise measured (4.91 px/frame from the box of the anti-aliased synthetic sprite).
    np.testing.assert_allclose(roots, [[5 * i, 0] for i in range(6)], atol=0.5)
    result = run_phaser(tmp_path)
    # Phaser keeps the extra frame key in frame.customData; the page moves a sprite by it per frame.
    assert list(result["moved"]) == ["sheet"]
    np.testing.assert_allclose(result["moved"]["sheet"], roots, atol=1e-6)


def test_godot3_reads_the_root_motion(tmp_path):
    atlas = travelling_sheet(tmp_path)
    roots = [[entry["root"]["x"], entry["root"]["y"]] for entry in atlas["frames"].values()]
    result = run_godot3(tmp_path)
    # One point per frame entry of the animation: the 200 ms frame is listed twice in Godot 3.
    assert result["root_motion"] == {"sheet": [roots[i] for i in (0, 1, 2, 2, 3, 4, 5)]}
