"""One real ComfyUI server for all integration tests (started once, always stopped)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .comfy_server import ComfyServer
from .workflow_models import WORKFLOW_MODELS

ROOT = Path(__file__).resolve().parents[2]
COMFYUI_DIR = os.environ.get("COMFYUI_DIR")
COMFYUI_PYTHON = os.environ.get("COMFYUI_PYTHON")
SKIP_REASON = (
    "integration with real ComfyUI skipped: set COMFYUI_DIR (a ComfyUI source tree) and COMFYUI_PYTHON "
    "(a Python with ComfyUI's requirements + requests) to run it"
)


def pytest_collection_modifyitems(config, items):
    if COMFYUI_DIR and COMFYUI_PYTHON:
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if "integration" in item.nodeid.split("::")[0]:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("comfy_base")
    for setup in WORKFLOW_MODELS.values():
        if callable(setup):
            setup(base / "models", base / "input")
    srv = ComfyServer(Path(COMFYUI_DIR), COMFYUI_PYTHON, ROOT, base)
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
