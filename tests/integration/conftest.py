"""One real ComfyUI server and one headless Chromium for all integration tests (started once, always stopped).

Fixtures for every integration test file (issue-specific files only need to use them):

* ``server``: a :class:`ComfyServer` with this pack linked in and the tiny models of ``workflow_models``.
* ``rig_server``: one with the tiny Wan 2.1 VACE models and the UMT5 stand-in (the Wan workflows).
* ``browser``: a playwright Chromium (Debian's ``chromium`` or ``$GAMEANIM_CHROMIUM``; no browser download).
* ``frontend``: a page on ``server`` with the real ComfyUI frontend loaded (``window.app`` ready).

Without ``COMFYUI_DIR``/``COMFYUI_PYTHON`` every integration test is skipped with the reason printed; with
them, a missing browser or playwright is a skip that says what to install (CI installs both, so it has none).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .comfy_server import ComfyServer
from .wan_models import STANDIN_DIR, write_rig_to_sprites_models
from .workflow_models import WORKFLOW_MODELS

ROOT = Path(__file__).resolve().parents[2]
STANDIN_AUDIO = Path(__file__).resolve().parent / "standin_audio"
COMFYUI_DIR = os.environ.get("COMFYUI_DIR")
COMFYUI_PYTHON = os.environ.get("COMFYUI_PYTHON")
SKIP_REASON = (
    "integration with real ComfyUI skipped: set COMFYUI_DIR (a ComfyUI source tree) and COMFYUI_PYTHON "
    "(a Python with ComfyUI's requirements + requests) to run it"
)
CHROMIUM = os.environ.get("GAMEANIM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(config, items):
    if COMFYUI_DIR and COMFYUI_PYTHON:
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if "integration" in item.nodeid.split("::")[0]:
            item.add_marker(skip)


def started_server(base: Path, api_nodes: bool = False):
    """A started ComfyServer on ``base`` (our pack linked in), with ComfyUI's audio node definitions even
    without torchaudio (``standin_audio``); the caller stops it."""
    (base / "custom_nodes").mkdir(parents=True, exist_ok=True)
    (base / "custom_nodes" / "gameanim_test_standin_audio").symlink_to(STANDIN_AUDIO, target_is_directory=True)
    srv = ComfyServer(Path(COMFYUI_DIR), COMFYUI_PYTHON, ROOT, base, api_nodes=api_nodes)
    try:
        srv.start()
    except BaseException:
        srv.stop()
        raise
    return srv


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("comfy_base")
    for setup in WORKFLOW_MODELS.values():
        setup(base / "models", base / "input")
    yield from serving(base)


@pytest.fixture(scope="session")
def rig_server(tmp_path_factory):
    """A server of its own for the Wan workflows: tiny Wan 2.1 VACE models and the test-only UMT5 stand-in node."""
    base = tmp_path_factory.mktemp("comfy_rig_base")
    write_rig_to_sprites_models(base / "models", Path(COMFYUI_DIR), COMFYUI_PYTHON)
    (base / "custom_nodes").mkdir(parents=True, exist_ok=True)
    (base / "custom_nodes" / "gameanim_test_standin_umt5").symlink_to(STANDIN_DIR, target_is_directory=True)
    yield from serving(base)


def serving(base: Path, api_nodes: bool = False):
    """A fixture body: the started server on ``base`` (see :func:`started_server`), stopped whatever happens."""
    srv = started_server(base, api_nodes)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium driven by playwright (its bundled driver only)."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="browser test skipped: pip install playwright")
    if not CHROMIUM:
        pytest.skip("browser test skipped: no Chromium (apt-get install chromium, or set GAMEANIM_CHROMIUM)")
    with playwright_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def open_frontend(browser, server, viewport=(1600, 1000)):
    """A new page with the ComfyUI frontend loaded from ``server``; its console errors are collected."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    tab = context.new_page()
    tab.console_errors = []
    tab.on("console", lambda msg: msg.type == "error" and tab.console_errors.append(msg.text))
    tab.on("pageerror", lambda err: tab.console_errors.append(str(err)))
    tab.goto(server.url, wait_until="load")
    tab.wait_for_function("window.app && window.app.graph && window.app.extensionManager", timeout=120_000)
    return context, tab


@pytest.fixture(scope="module")
def frontend(browser, server):
    context, tab = open_frontend(browser, server)
    try:
        yield tab
    finally:
        context.close()
