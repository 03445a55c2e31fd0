"""Remake ``docs/images/matte_wiring.png``: an outside MASK wired into Remove Background, in the real ComfyUI page.

Starts the real ComfyUI (``COMFYUI_DIR``, run by ``COMFYUI_PYTHON``) with this pack linked in, opens its
frontend in headless Chromium (Debian's ``chromium`` or ``$GAMEANIM_CHROMIUM``, driven by playwright), builds
the graph in the page the way a user would (core Load Image, whose MASK is 1 = transparent, into GameAnim
Remove Background's ``mask`` with ``mask_is`` = ``transparency``; the RGBA output into a Preview Image),
and takes a screenshot.  Any segmentation node's MASK connects the same way (``mask_is`` = ``alpha`` when
its MASK is 1 = opaque, as most background removers' are).

Run: ``COMFYUI_DIR=... COMFYUI_PYTHON=... python scripts/matte_wiring_picture.py [--out PATH]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.comfy_server import ComfyServer  # noqa: E402 - the tests' own way of starting ComfyUI
from tests.integration.conftest import CHROMIUM, CHROMIUM_ARGS, COMFYUI_DIR, COMFYUI_PYTHON  # noqa: E402

SAMPLE = ROOT / "sample_data" / "sprite_frames" / "frame_000.png"

# Nodes placed and wired in the page through LiteGraph, as dragging them in would.
BUILD = """
([sample]) => {
  const graph = window.app.graph;
  graph.clear();
  const add = (type, x, y) => {
    const node = LiteGraph.createNode(type);
    node.pos = [x, y];
    graph.add(node);
    return node;
  };
  const load = add("LoadImage", 40, 60);
  load.widgets.find(w => w.name === "image").value = sample;
  const remove = add("GameAnimSpriteRemoveBackground", 420, 60);
  remove.widgets.find(w => w.name === "mask_is").value = "transparency";
  const preview = add("PreviewImage", 860, 60);
  const slot = (node, name, outputs) => (outputs ? node.outputs : node.inputs).findIndex(s => s.name === name);
  load.connect(slot(load, "IMAGE", true), remove, slot(remove, "image", false));
  load.connect(slot(load, "MASK", true), remove, slot(remove, "mask", false));
  remove.connect(slot(remove, "RGBA", true) >= 0 ? slot(remove, "RGBA", true) : 2, preview, 0);
  window.app.canvas.ds.offset = [20, 40];
  window.app.canvas.ds.scale = 1.0;
  window.app.canvas.setDirty(true, true);
  return remove.inputs.map(i => [i.name, i.link !== null && i.link !== undefined]);
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "matte_wiring.png")
    args = parser.parse_args()
    if not (COMFYUI_DIR and COMFYUI_PYTHON and CHROMIUM):
        sys.exit("set COMFYUI_DIR and COMFYUI_PYTHON, and install chromium (or set GAMEANIM_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "input").mkdir()
        shutil.copy(SAMPLE, base / "input" / "sprite.png")
        server = ComfyServer(Path(COMFYUI_DIR), COMFYUI_PYTHON, ROOT, base)
        server.start()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1240, "height": 560})
                page.goto(server.url, wait_until="load")
                page.wait_for_function("window.app && window.app.graph && window.app.extensionManager", timeout=120_000)
                page.wait_for_timeout(2000)
                # A fresh user folder opens the template browser on start: close it, as a user would.
                page.keyboard.press("Escape")
                page.evaluate("document.querySelectorAll('.p-dialog-mask').forEach(e => e.remove())")
                page.evaluate("window.app.extensionManager.setting.set('Comfy.Minimap.Visible', false)")
                linked = dict(page.evaluate(BUILD, ["sprite.png"]))
                if not (linked.get("image") and linked.get("mask")):
                    sys.exit(f"the wiring did not take: {linked}")
                page.wait_for_timeout(1500)
                page.locator("#graph-canvas").screenshot(path=str(args.out))
                browser.close()
        finally:
            server.stop()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
