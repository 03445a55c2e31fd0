"""The real ComfyUI page in headless Chromium: a shipped workflow loads, runs, and our preview plays.

Needs, besides COMFYUI_DIR/COMFYUI_PYTHON: Chromium (Debian ``chromium``, or ``GAMEANIM_CHROMIUM``)
and the ``playwright`` Python package (its bundled driver only; no browser download). A screenshot
is saved to ``tests/artifacts/`` for people to look at.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import open_frontend

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
PREVIEW_WORKFLOW = "sprite_postprocess"
# Chromium and the frontend try to reach the internet (fonts, update checks, and the missing-models dialog asks
# the download host for file sizes), and a fresh user folder answers 404 for user.css and saved workflows; none
# is a fault of the page.
BENIGN_CONSOLE = ("net::ERR_", "Failed to load resource", "Error fetching file size")


@pytest.fixture(scope="module")
def page(browser, server):
    context, tab = open_frontend(browser, server)
    tab.wait_for_timeout(2000)
    tab.load_errors, tab.console_errors = tab.console_errors, []
    try:
        yield tab
    finally:
        context.close()


def test_our_extensions_load_in_the_page(page):
    names = page.evaluate("window.app.extensions.map(e => e.name)")
    assert {"GameAnim.Core", "GameAnim.AnimationPreview", "GameAnim.LossChart", "GameAnim.GameHud"} <= set(names)
    ours = [e for e in page.load_errors if "gameanim" in e.lower()]
    assert not ours, ours


def test_template_workflow_runs_and_preview_plays(page, server):
    listed = server.get("/workflow_templates").json()["gameanim"]
    assert PREVIEW_WORKFLOW in listed
    workflow = json.loads((ROOT / "workflows" / f"{PREVIEW_WORKFLOW}.json").read_text(encoding="utf-8"))
    page.evaluate("window.app.extensionManager.command.execute('Comfy.BrowseTemplates')")
    page.get_by_text("gameanim", exact=True).click()
    # The dialog renders the first cards only; search, as a user with many templates would.
    page.get_by_placeholder("Search templates").fill(PREVIEW_WORKFLOW)
    page.get_by_text(PREVIEW_WORKFLOW, exact=True).click()
    expected = sorted(n["type"] for n in workflow["nodes"])
    page.wait_for_function(
        "types => JSON.stringify(window.app.graph._nodes.map(n => n.type).sort()) === JSON.stringify(types)",
        arg=expected,
        timeout=30_000,
    )
    page.evaluate("window.app.queuePrompt(0, 1)")
    page.wait_for_function(
        "Number(document.querySelector('.gameanim-preview')?.dataset.frames || 0) > 1", timeout=300_000
    )
    frames = int(page.evaluate("document.querySelector('.gameanim-preview').dataset.frames"))
    first = page.evaluate("document.querySelector('.gameanim-preview').dataset.index")
    page.wait_for_function(f"document.querySelector('.gameanim-preview').dataset.index !== '{first}'", timeout=10_000)
    pixels = page.evaluate(
        "(() => { const c = document.querySelector('.gameanim-preview canvas');"
        " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; })()"
    )
    # Output nodes grow by what they show after a run (the sheet's image, the GIF, our player): the layout's
    # room below them (PREVIEW_H) must keep every node clear of its neighbours once the images are in.
    page.wait_for_function(
        "() => window.app.graph._nodes.filter(n => n.imgs && n.imgs.length && n.imgs.every(i => i.complete)).length"
        " >= 2",
        timeout=30_000,
    )
    page.evaluate("() => window.app.canvas.setDirty(true, true)")
    page.wait_for_timeout(1000)
    boxes = page.evaluate("() => window.app.graph._nodes.map(n => [n.title, ...Array.from(n.boundingRect)])")
    overlaps = [
        (a[0], b[0])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[1] < b[1] + b[3] and b[1] < a[1] + a[3] and a[2] < b[2] + b[4] and b[2] < a[2] + a[4]
    ]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"browser_{PREVIEW_WORKFLOW}.png"))
    assert not overlaps, (overlaps, boxes)
    (ARTIFACTS / "browser_console.json").write_text(
        json.dumps({"load": page.load_errors, "run": page.console_errors}, indent=1)
    )
    assert frames > 1 and pixels > 0
    errors = [e for e in page.console_errors if not any(b in e for b in BENIGN_CONSOLE)]
    assert not errors, errors


UI_WORKFLOWS = sorted((ROOT / "workflows").glob("*.json"))


@pytest.mark.parametrize("path", UI_WORKFLOWS, ids=[p.stem for p in UI_WORKFLOWS])
def test_shipped_workflow_loads_in_the_frontend_as_its_api_twin(page, path, all_definitions):
    """The real frontend loads the UI file (note, groups, download entries kept) and queues exactly the API twin."""
    from gameanim.workflow_format import without_stages

    workflow = json.loads(path.read_text(encoding="utf-8"))
    twin = json.loads((ROOT / "workflows" / "api" / path.name).read_text(encoding="utf-8"))
    page.console_errors.clear()
    page.evaluate("wf => window.app.loadGraphData(wf)", workflow)
    page.wait_for_function("n => window.app.graph._nodes.length === n", arg=len(workflow["nodes"]), timeout=30_000)
    loaded = page.evaluate(
        """() => ({
            groups: window.app.graph._groups.map(g => g.title).sort(),
            notes: window.app.graph._nodes.filter(n => n.type === 'MarkdownNote').length,
            models: Object.fromEntries(window.app.graph._nodes
                .filter(n => n.properties && n.properties.models)
                .map(n => [String(n.id), n.properties.models])),
        })"""
    )
    assert loaded["groups"] == sorted(g["title"] for g in workflow["groups"])
    assert loaded["notes"] == 1
    expected_models = {
        str(n["id"]): n["properties"]["models"] for n in workflow["nodes"] if "models" in n["properties"]
    }
    assert loaded["models"] == expected_models
    queued = page.evaluate("async () => (await window.app.graphToPrompt()).output")
    for entry in queued.values():  # frontend-only widgets (Preview Any's text box) are dropped by the server
        defined = all_definitions[entry["class_type"]]["input"]
        entry["inputs"] = {k: v for k, v in entry["inputs"].items() if any(k in defined.get(s, {}) for s in defined)}
    assert queued == without_stages(twin)
    if path.stem == "vc2_sprite_t2v":
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.evaluate(
            "() => { window.app.canvas.ds.scale = 0.7; window.app.canvas.ds.offset = [20, 40]; "
            "window.app.canvas.setDirty(true, true); }"
        )
        page.wait_for_timeout(500)
        page.screenshot(path=str(ARTIFACTS / "browser_vc2_sprite_t2v.png"))
    errors = [e for e in page.console_errors if not any(b in e for b in BENIGN_CONSOLE)]
    assert not errors, errors
