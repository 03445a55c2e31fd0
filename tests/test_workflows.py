"""Shipped workflows: UI files load in the browser, API twins queue, and the two agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gameanim.core.workflow_format import absolute_paths, is_api_format, is_ui_format, ui_to_api, validate_api

ROOT = Path(__file__).resolve().parents[1]
UI = sorted((ROOT / "workflows").glob("*.json"))
API = sorted((ROOT / "workflows" / "api").glob("*.json"))


def _load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_ui_workflow_has_an_api_twin_and_back():
    assert {p.stem for p in UI} == {p.stem for p in API}


@pytest.mark.parametrize("path", UI, ids=[p.stem for p in UI])
def test_ui_workflow(path, all_definitions):
    ui = _load(path)
    assert is_ui_format(ui), f"{path.name} is not UI format (the template browser needs nodes + links)"
    assert not absolute_paths(ui), absolute_paths(ui)
    twin = _load(ROOT / "workflows" / "api" / path.name)
    assert ui_to_api(ui, all_definitions) == twin, "converting the UI file does not give its API twin"


@pytest.mark.parametrize("path", API, ids=[p.stem for p in API])
def test_api_workflow(path, all_definitions):
    prompt = _load(path)
    assert is_api_format(prompt), f"{path.name} is not API format"
    assert not absolute_paths(prompt), absolute_paths(prompt)
    assert validate_api(prompt, all_definitions) == []
