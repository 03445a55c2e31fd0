"""Shipped workflows: UI files load in the browser, API twins queue, and the two agree.

The UI files are documents for people: each carries its note, a group per stage, nodes that do
not overlap, and download entries (``properties.models``) on every loader, with real file names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gameanim.core.model_folders import LOADER_INPUTS, MODEL_FOLDERS, expected_file
from gameanim.workflow_format import (
    absolute_paths,
    group_members,
    is_api_format,
    is_ui_format,
    overlapping_nodes,
    stage_of,
    ui_to_api,
    validate_api,
    without_stages,
)

ROOT = Path(__file__).resolve().parents[1]
UI = sorted((ROOT / "workflows").glob("*.json"))
API = sorted((ROOT / "workflows" / "api").glob("*.json"))
NOTES = ROOT / "workflows" / "notes"
FIXTURE_MARK = "gameanim_tiny"  # the prefix of every tiny test model and input we generate


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
    assert ui_to_api(ui, all_definitions) == without_stages(twin), "converting the UI file does not give its API twin"


@pytest.mark.parametrize("path", API, ids=[p.stem for p in API])
def test_api_workflow(path, all_definitions):
    prompt = _load(path)
    assert is_api_format(prompt), f"{path.name} is not API format"
    assert not absolute_paths(prompt), absolute_paths(prompt)
    assert validate_api(prompt, all_definitions) == []
    assert all(entry.get("_meta", {}).get("title") for entry in prompt.values()), "every node needs a _meta.title"


@pytest.mark.parametrize("path", UI, ids=[p.stem for p in UI])
def test_ui_workflow_carries_its_note(path):
    note_file = NOTES / f"{path.stem}.md"
    assert note_file.is_file(), f"{path.stem} has no workflows/notes/{path.stem}.md"
    notes = [n for n in _load(path)["nodes"] if n["type"] == "MarkdownNote"]
    assert len(notes) == 1 and notes[0]["widgets_values"] == [note_file.read_text(encoding="utf-8").strip()]
    text = notes[0]["widgets_values"][0]
    assert "models/" in text or "no model" in text.lower(), "the note says which files go into which folder"
    assert "VRAM" in text or "GPU" in text, "the note says what GPU memory the workflow needs"


@pytest.mark.parametrize("path", UI, ids=[p.stem for p in UI])
def test_every_loader_offers_its_downloads(path):
    """Each file a loader reads has {name, url, directory}, unless a shipped workflow's node writes it."""
    ui = _load(path)
    writers = {n["type"] for p in UI for n in _load(p)["nodes"]}
    api = _load(ROOT / "workflows" / "api" / path.name)
    for node in ui["nodes"]:
        loads = LOADER_INPUTS.get(node["type"], {})
        if not loads:
            continue
        entries = {m["name"]: m for m in node["properties"].get("models", [])}
        for entry in entries.values():
            assert set(entry) == {"name", "url", "directory"} and all(entry.values()), entry
            assert entry["url"].startswith("https://"), entry
            assert entry["directory"] in MODEL_FOLDERS, entry
        for input_name, key in loads.items():
            value = api[str(node["id"])]["inputs"].get(input_name)
            if not isinstance(value, str):
                continue
            known = expected_file(key, value)
            assert known is not None, f"node {node['id']}: {value!r} is not a released file the model table lists"
            if known.written_by:
                assert known.written_by in writers, f"{value!r} is written by {known.written_by}, in no workflow"
                continue
            if known.folder:  # the frontend cannot fetch folders: the note must link them
                assert known.url in (NOTES / f"{path.stem}.md").read_text(encoding="utf-8"), value
                continue
            assert entries.get(value, {}).get("directory") == key, f"node {node['id']} offers no download of {value}"
            assert value in node["widgets_values"], "the frontend matches models to widget values by name"


@pytest.mark.parametrize("path", UI, ids=[p.stem for p in UI])
def test_no_test_fixture_names(path):
    text = path.read_text(encoding="utf-8") + (ROOT / "workflows" / "api" / path.name).read_text(encoding="utf-8")
    assert FIXTURE_MARK not in text


@pytest.mark.parametrize("path", UI, ids=[p.stem for p in UI])
def test_layout_is_readable(path, all_definitions):
    """No two nodes overlap, and each group holds exactly the nodes of its stage."""
    ui = _load(path)
    assert overlapping_nodes(ui) == []
    api = _load(ROOT / "workflows" / "api" / path.name)
    stages = {stage_of(entry) for entry in api.values()} - {None}
    assert {g["title"] for g in ui["groups"]} == stages
    for group in ui["groups"]:
        expected = {int(k) for k, entry in api.items() if stage_of(entry) == group["title"]}
        assert group_members(ui, group) == expected, group["title"]


def test_every_pack_loader_is_in_the_loader_table(definitions):
    """A new loader node must say which folder it reads, or its workflows would offer no download."""
    loaders = {name for name in definitions if name.endswith(("Loader", "Convert", "ApplyLora"))}
    assert loaders <= set(LOADER_INPUTS), loaders - set(LOADER_INPUTS)
    for class_type, inputs in LOADER_INPUTS.items():
        if class_type in definitions:
            assert set(inputs) <= set(definitions[class_type]["input"]["required"]), class_type
