"""The pack inside a real ComfyUI: import, node listing, web files, templates, and API workflows run.

Runs when ``COMFYUI_DIR`` (a ComfyUI source tree) and ``COMFYUI_PYTHON`` (a Python with ComfyUI's
requirements) are set; otherwise every test here is skipped with the reason printed (``-rs``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .comfy_server import PACK_DIR_NAME, describe_failure
from .workflow_checks import API_CHECKS, CLIENT_CHECKS
from .workflow_models import OWN_TEST_WORKFLOWS, WORKFLOW_REDUCTIONS, WORKFLOW_WRITES_MODEL

ROOT = Path(__file__).resolve().parents[2]

API_WORKFLOWS = sorted(p for p in (ROOT / "workflows" / "api").glob("*.json") if p.stem not in OWN_TEST_WORKFLOWS)


def test_pack_imports_without_errors(server):
    log = server.log()
    import_lines = [line for line in log.splitlines() if line.rstrip().endswith(f"custom_nodes/{PACK_DIR_NAME}")]
    assert import_lines, f"our pack was not in the import summary:\n{log[-3000:]}"
    assert not any("IMPORT FAILED" in line for line in import_lines), log[-5000:]
    assert "Cannot import" not in log or PACK_DIR_NAME not in log.split("Cannot import", 1)[1][:300]


def test_object_info_lists_every_node_as_defined_offline(server, pack, monkeypatch):
    from gameanim.workflow_format import node_definitions

    # Our file lists outside ComfyUI read $GAMEANIM_BASE_DIR/models: point it at the server's folders
    # (filled with tiny models by the workflow setups) so both sides list the same files.
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(server.base))
    definitions = node_definitions(pack.NODE_CLASS_MAPPINGS, pack.NODE_DISPLAY_NAME_MAPPINGS)
    info = server.get("/object_info").json()
    ours = {k: v for k, v in info.items() if v.get("python_module") == f"custom_nodes.{PACK_DIR_NAME}"}
    assert set(ours) == set(pack.NODE_CLASS_MAPPINGS)
    for node_id in pack.NODE_CLASS_MAPPINGS:
        offline = json.loads(json.dumps(definitions[node_id]))
        for key in ("input", "output", "output_name", "category", "description", "output_node", "display_name"):
            assert ours[node_id][key] == offline[key], (node_id, key)


def _matches_snapshot(live: dict, offline: dict) -> bool:
    """Input specs equal, except that an empty combo in the snapshot (a file list) matches any list."""
    if set(live) != set(offline):
        return False
    for section, specs in offline.items():
        if set(live[section]) != set(specs):
            return False
        for name, spec in specs.items():
            got = live[section][name]
            if isinstance(spec, list) and spec and spec[0] == [] and isinstance(got[0], list):
                got = [[], *got[1:]]
            if got != spec:
                return False
    return True


def test_core_node_snapshot_is_current(server, core_definitions):
    info = server.get("/object_info").json()
    for node_id, offline in core_definitions.items():
        assert node_id in info, f"core node {node_id} is gone from this ComfyUI"
        assert _matches_snapshot(info[node_id]["input"], offline["input"]), node_id
        assert info[node_id]["output"] == offline["output"], node_id


def test_web_extensions_are_served(server, pack_root):
    urls = [u for u in server.get("/extensions").json() if u.startswith(f"/extensions/{PACK_DIR_NAME}/")]
    expected = {
        f"/extensions/{PACK_DIR_NAME}/{p.relative_to(pack_root / 'web').as_posix()}"
        for p in (pack_root / "web").rglob("*.js")
    }
    assert set(urls) == expected
    for url in urls:
        assert server.get(url).status_code == 200, url


def test_workflow_templates_are_listed(server, pack_root):
    listed = server.get("/workflow_templates").json().get(PACK_DIR_NAME, [])
    assert sorted(listed) == sorted(p.stem for p in (pack_root / "workflows").glob("*.json"))
    for name in listed:
        response = server.get(f"/api/workflow_templates/{PACK_DIR_NAME}/{name}.json")
        assert response.status_code == 200 and "nodes" in response.json()


@pytest.mark.parametrize("workflow", API_WORKFLOWS, ids=[p.stem for p in API_WORKFLOWS])
def test_api_workflow_runs(server, workflow):
    prompt = json.loads(workflow.read_text(encoding="utf-8"))
    for node_id, inputs in WORKFLOW_REDUCTIONS.get(workflow.stem, {}).items():
        prompt[node_id]["inputs"].update(inputs)
    server.wait_idle()
    before = _output_files(server)
    response = server.queue(prompt)
    body = response.json()
    assert response.status_code == 200, json.dumps(body, indent=1)
    assert body.get("node_errors") == {}, json.dumps(body["node_errors"], indent=1)
    entry = server.wait_history(body["prompt_id"])
    assert entry["status"]["status_str"] == "success", describe_failure(entry)
    files = [
        item
        for outputs in entry["outputs"].values()
        for items in outputs.values()
        if isinstance(items, list)
        for item in items
        if isinstance(item, dict) and "filename" in item
    ]
    # Every file the nodes wrote into output/ (new or rewritten) is listed in the history, fetchable by /view.
    listed = {"/".join(p for p in (i.get("subfolder"), i["filename"]) if p) for i in files if i.get("type") == "output"}
    written = {rel for rel, (_, stamp) in _output_files(server).items() if before.get(rel, (None, 0))[1] != stamp}
    assert written <= listed, f"written but not in the history: {sorted(written - listed)}"
    for item in files:
        view = server.get("/view", params={k: item.get(k, "") for k in ("filename", "subfolder", "type")})
        assert view.status_code == 200 and view.content, item
    if workflow.stem in API_CHECKS:
        API_CHECKS[workflow.stem](server, prompt, entry)


def test_bad_prompt_is_rejected_with_readable_error(server, pack):
    node_id = sorted(pack.NODE_CLASS_MAPPINGS)[0]
    response = server.queue(
        {"1": {"class_type": node_id, "inputs": {}}, "2": {"class_type": "GameAnimNoSuchNode", "inputs": {}}}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_prompt" and "GameAnimNoSuchNode" in error["message"]


UI_WORKFLOWS = sorted(p for p in (ROOT / "workflows").glob("*.json") if p.stem not in OWN_TEST_WORKFLOWS)


@pytest.mark.parametrize("workflow", UI_WORKFLOWS, ids=[p.stem for p in UI_WORKFLOWS])
def test_client_runs_ui_workflow(server, workflow, tmp_path):
    reductions = [
        f"{n}.{k}={json.dumps(v)}"
        for n, ins in WORKFLOW_REDUCTIONS.get(workflow.stem, {}).items()
        for k, v in ins.items()
    ]
    sets = [a for r in reductions for a in ("--set", r)]
    server.wait_idle()
    before = _output_files(server)
    result = _client(server, "run", str(workflow), "--out", str(tmp_path), *sets)
    assert result.returncode == 0, result.stderr[-3000:]
    # Every file the workflow's nodes wrote into output/ (new or rewritten) was saved, byte for byte, and no
    # temporary preview (PreviewImage's ComfyUI_temp_*, animation preview frames) was.
    written = {
        rel: path for rel, (path, stamp) in _output_files(server).items() if before.get(rel, (None, 0))[1] != stamp
    }
    saved = {p.name: p for p in tmp_path.rglob("*") if p.is_file()}
    assert not [n for n in saved if n.startswith("ComfyUI_temp") or n.startswith("frame_")], sorted(saved)
    missing = sorted(rel for rel, path in written.items() if path.name not in saved)
    assert not missing, f"written by the workflow but not saved by the client: {missing}; saved: {sorted(saved)}"
    for path in written.values():
        assert saved[path.name].read_bytes() == path.read_bytes(), path.name
    if workflow.stem in WORKFLOW_WRITES_MODEL:
        assert (server.base / "models" / WORKFLOW_WRITES_MODEL[workflow.stem]).is_file()
        return
    if not written:  # a workflow that only previews (motion_scope): its previews come with --previews
        again = _client(server, "run", str(workflow), "--out", str(tmp_path / "with_previews"), "--previews", *sets)
        assert again.returncode == 0, again.stderr[-3000:]
        assert any((tmp_path / "with_previews" / "previews").rglob("*.png")), "no preview saved with --previews"
    if workflow.stem in CLIENT_CHECKS:
        prompt = json.loads((ROOT / "workflows" / "api" / workflow.name).read_text(encoding="utf-8"))
        CLIENT_CHECKS[workflow.stem](server, prompt, tmp_path)


def _output_files(server) -> dict[str, tuple[Path, int]]:
    """Every file under the server's output folder: relative path -> (path, modification time in ns)."""
    out = server.base / "output"
    return {p.relative_to(out).as_posix(): (p, p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}


def test_client_reports_bad_override(server):
    workflow = next(iter(UI_WORKFLOWS))
    prompt = json.loads((ROOT / "workflows" / "api" / workflow.name).read_text(encoding="utf-8"))
    node_id = next(iter(prompt))
    result = _client(server, "run", str(workflow), "--set", f"{node_id}.no_such_input=1")
    assert result.returncode != 0
    assert "has no input 'no_such_input'" in result.stderr


def _client(server, *args):
    import subprocess
    import sys

    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "gameanim_client.py"),
        "--server",
        server.url,
        "--timeout",
        "600",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)
