"""Our widgets in the real ComfyUI page (headless Chromium): previews stay inside their nodes, each node
shows one preview, previews come back when the saved workflow is reopened, and a cut VC2 prompt raises
a toast.  The page comes from the session browser of conftest.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import open_frontend
from .test_browser import BENIGN_CONSOLE
from .workflow_models import WORKFLOW_REDUCTIONS

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
LONG_PROMPT = ", ".join(f"ornate golden helmet number {i} with engraved dragon scales" for i in range(12))

# Screen rectangles of every node that has our player, and of the player's parts (CSS pixels).
_RECTS = """() => {
  const canvasRect = app.canvas.canvas.getBoundingClientRect();
  const ds = app.canvas.ds;
  const title = LiteGraph.NODE_TITLE_HEIGHT;
  const rect = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return app.graph._nodes.filter((n) => n.gameanimPlayer).map((n) => ({
    type: n.type,
    node: [canvasRect.left + (n.pos[0] + ds.offset[0]) * ds.scale,
           canvasRect.top + (n.pos[1] - title + ds.offset[1]) * ds.scale,
           canvasRect.left + (n.pos[0] + n.size[0] + ds.offset[0]) * ds.scale,
           canvasRect.top + (n.pos[1] + n.size[1] + ds.offset[1]) * ds.scale],
    preview: rect(n.gameanimPlayer.root),
    canvas: rect(n.gameanimPlayer.canvas),
    frames: Number(n.gameanimPlayer.root.dataset.frames || 0),
    builtin: Boolean(n.imgs?.length) || Boolean(app.nodeOutputs?.[String(n.id)]?.images?.length),
  }));
}"""


@pytest.fixture(scope="module")
def page(browser, server):
    """The frontend in the session's Chromium (conftest's ``open_frontend``), at a size the screenshots read."""
    context, tab = open_frontend(browser, server)
    tab.errors = tab.console_errors
    tab.wait_for_timeout(2000)
    # A fresh user folder makes the frontend itself throw once while it registers settings at start-up;
    # errors from here on come from what the tests do (our extensions' load errors are checked below).
    tab.load_errors = list(tab.errors)
    tab.errors.clear()
    tab.keyboard.press("Escape")  # the first-run template dialog would cover the canvas in screenshots
    tab.wait_for_timeout(500)
    try:
        yield tab
    finally:
        context.close()


def _on_screen(rects: list[dict], viewport=(1600, 1000)) -> list[dict]:
    """The nodes wholly inside the viewport: the frontend hides DOM widgets of nodes scrolled off screen."""
    return [
        r
        for r in rects
        if r["node"][0] >= 0 and r["node"][1] >= 0 and r["node"][2] <= viewport[0] and r["node"][3] <= viewport[1]
    ]


def _inside(inner, outer, tolerance=2.0) -> bool:
    return (
        inner[0] >= outer[0] - tolerance
        and inner[1] >= outer[1] - tolerance
        and inner[2] <= outer[2] + tolerance
        and inner[3] <= outer[3] + tolerance
    )


def _real_errors(page) -> list[str]:
    errors = [e for e in page.errors if not any(b in e for b in BENIGN_CONSOLE)]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "browser_widgets_errors.json").write_text(json.dumps(errors, indent=1), encoding="utf-8")
    return errors


def test_our_extensions_load_without_errors(page):
    ours = [e for e in page.load_errors if "gameanim" in e.lower()]
    assert not ours, ours


def test_previews_fit_their_nodes_are_single_and_come_back_on_reopen(page):
    workflow = json.loads((ROOT / "workflows" / "sprite_postprocess.json").read_text(encoding="utf-8"))
    page.evaluate("wf => app.loadGraphData(wf)", workflow)
    page.evaluate("window.app.queuePrompt(0, 1)")
    page.wait_for_function(
        "app.graph._nodes.some((n) => Number(n.gameanimPlayer?.root.dataset.frames || 0) > 1)", timeout=300_000
    )
    page.wait_for_timeout(1500)  # let the frontend lay out and draw (a duplicate image preview would load now)
    page.evaluate(  # zoom 1:1 on the last two nodes, where the previews are
        "(() => { const n = app.graph._nodes.find((x) => x.gameanimPlayer); app.canvas.ds.scale = 1;"
        " app.canvas.ds.offset = [500 - n.pos[0], 120 - n.pos[1]]; app.canvas.setDirty(true, true); })()"
    )
    page.wait_for_timeout(1000)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser_widgets.png"))
    rects = _on_screen(page.evaluate(_RECTS))
    assert rects, "no node on screen shows our preview"
    for item in rects:
        assert _inside(item["preview"], item["node"]), item
        assert _inside(item["canvas"], item["preview"]), item
        assert item["preview"][3] - item["preview"][1] > 40, item  # a real, visible widget
        assert not item["builtin"], f"{item['type']} shows the frontend's image preview beside ours"

    # Nodes left with the frontend's own image preview got room for it (the image is drawn below the widgets).
    room = page.evaluate(
        "app.graph._nodes.filter((n) => n.type.startsWith('GameAnim') && n.imgs?.length).map((n) => ({type: n.type,"
        " size: n.size[1], layout: n.computeSize()[1],"
        " image_top: n.widgets?.find((w) => w.name === '$$canvas-image-preview')?.y ?? null,"
        " image_height: Math.min(640, n.size[0] * n.imgs[0].naturalHeight / n.imgs[0].naturalWidth)}))"
    )
    for item in room:
        assert item["size"] >= item["layout"] - 1, item
        if item["image_top"] is not None:
            assert item["size"] - item["image_top"] >= item["image_height"] - 2, item

    # Save and reopen the workflow the way a file round trip does (JSON text), in a fresh graph.
    page.evaluate(
        "(async () => { const saved = JSON.stringify(app.graph.serialize()); app.graph.clear();"
        " await app.loadGraphData(JSON.parse(saved)); })()"
    )
    page.wait_for_function(
        "app.graph._nodes.some((n) => Number(n.gameanimPlayer?.root.dataset.frames || 0) > 1)", timeout=30_000
    )
    for item in _on_screen(page.evaluate(_RECTS)):
        assert _inside(item["preview"], item["node"]), item
    assert page.locator(".p-toast-message", has_text="Invalid workflow").count() == 0
    page.screenshot(path=str(ARTIFACTS / "browser_widgets_reopened.png"))
    assert not _real_errors(page), _real_errors(page)


def test_cut_prompt_raises_a_toast(page, server):
    prompt = json.loads((ROOT / "workflows" / "api" / "vc2_sprite_t2v.json").read_text(encoding="utf-8"))
    for node_id, inputs in WORKFLOW_REDUCTIONS["vc2_sprite_t2v"].items():
        prompt[node_id]["inputs"].update(inputs)
    encoder = next(
        k for k, n in prompt.items() if n["class_type"] == "GameAnimVC2TextEncode" and n["inputs"]["text"] == ""
    )
    prompt[encoder]["inputs"]["text"] = LONG_PROMPT  # the negative prompt, now far over 77 tokens
    response = server.queue(prompt)
    assert response.status_code == 200, response.text
    toast = page.locator(".p-toast-message", has_text="77 tokens")
    toast.first.wait_for(timeout=300_000)
    assert "dragon scales" in toast.first.inner_text()
    page.screenshot(path=str(ARTIFACTS / "browser_toast.png"))
    assert not _real_errors(page), _real_errors(page)
