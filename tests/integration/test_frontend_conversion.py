"""Our UI -> API conversion equals the real frontend's ``app.graphToPrompt()`` on workflows the frontend saved.

Oracle: ComfyUI's own frontend (the ``comfyui-frontend-package`` the server serves) in headless Chromium
loads each workflow with ``app.loadGraphData`` and converts it with ``app.graphToPrompt()``.  Corpus:

* every template of the ``comfyui-workflow-templates`` package (a ComfyUI requirement, read from the
  installed package, not copied here): files saved by frontends 1.18 to 1.28 and older ones without a
  version, with subgraphs, promoted widgets, bypassed subgraph instances, groups, primitives, reroutes;
* workflows the real frontend builds and saves in this test from a template: nested subgraphs, a legacy
  Reroute node, a native reroute, a PrimitiveNode on a widget, bypassed and muted nodes.

For every node both prompts must hold the same inputs the node declares (the server ignores the others,
such as LoadImage's ``upload``).  This module runs its own server with ComfyUI's API nodes defined (the
``api_*`` templates; nothing here executes them) and ComfyUI's audio nodes defined even without torchaudio
(the test-only ``standin_audio`` custom node registers ComfyUI's own classes), so those templates are
compared too, RecordAudio's DOM widget included.  Templates using nodes of other packs are left out and
listed; for those our converter refuses with the node named, where the frontend would queue
``class_type: null`` for the server to refuse.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gameanim.workflow_format import FRONTEND_ONLY_NODES, MUTED, WorkflowError, ui_to_api

LOAD_AND_CONVERT = """async wf => {
    await window.app.loadGraphData(wf, true, false, null,
        {showMissingNodesDialog: false, showMissingModelsDialog: false});
    return (await window.app.graphToPrompt()).output;
}"""

# Built with the frontend's own graph API on the default workflow, then saved with ``app.graph.serialize()``.
BUILD_VARIANTS = """async wf => {
    const opts = {showMissingNodesDialog: false, showMissingModelsDialog: false};
    const byType = (g, t) => g.nodes.filter(n => n.type === t);
    const saved = {};

    await window.app.loadGraphData(wf, true, false, null, opts);
    let g = window.app.graph;
    const encoders = byType(g, 'CLIPTextEncode');
    const inner = g.convertToSubgraph(new Set(encoders)).node;
    const sampler = byType(g, 'KSampler')[0];
    g.convertToSubgraph(new Set([inner, sampler]));
    saved.nested_subgraphs = JSON.parse(JSON.stringify(g.serialize()));

    await window.app.loadGraphData(wf, true, false, null, opts);
    g = window.app.graph;
    const ks = byType(g, 'KSampler')[0];
    const ckpt = byType(g, 'CheckpointLoaderSimple')[0];
    const reroute = LiteGraph.createNode('Reroute');
    g.add(reroute);
    ckpt.connect(0, reroute, 0);
    reroute.connect(0, ks, ks.inputs.findIndex(i => i.name === 'model'));
    const primitive = LiteGraph.createNode('PrimitiveNode');
    g.add(primitive);
    primitive.connect(0, ks, ks.inputs.findIndex(i => i.name === 'steps'));
    primitive.widgets[0].value = 7;
    const decode = byType(g, 'VAEDecode')[0];
    const vaeLink = g.links.get ? g.links.get(decode.inputs[1].link) : g.links[decode.inputs[1].link];
    g.createReroute([0, 0], vaeLink);
    saved.reroutes_and_primitive = JSON.parse(JSON.stringify(g.serialize()));

    byType(g, 'EmptyLatentImage')[0].mode = 2;
    byType(g, 'VAEDecode')[0].mode = 4;
    saved.muted_and_bypassed = JSON.parse(JSON.stringify(g.serialize()));
    return saved;
}"""


def _templates() -> list[Path]:
    templates = pytest.importorskip(
        "comfyui_workflow_templates", reason="needs ComfyUI's requirement comfyui-workflow-templates"
    )
    folder = Path(templates.__file__).parent / "templates"
    return sorted(p for p in folder.glob("*.json") if p.name != "index.json")


def _undefined_types(workflow: dict[str, Any], definitions: dict[str, Any]) -> set[str]:
    """Types of active nodes (root and subgraphs) that are neither server nodes, subgraphs nor frontend-only."""
    subgraphs = (workflow.get("definitions") or {}).get("subgraphs", [])
    known = set(definitions) | set(FRONTEND_ONLY_NODES) | {s["id"] for s in subgraphs}
    nodes = [*workflow["nodes"], *(n for s in subgraphs for n in s.get("nodes", []))]
    return {n["type"] for n in nodes if n.get("mode", 0) not in (MUTED, 4) and n["type"] not in known}


def prompt_differences(ours: dict, theirs: dict, definitions: dict) -> list[str]:
    """Differences between two API prompts, node by node, over the inputs each node declares."""
    problems = []
    for node_id in sorted(set(ours) | set(theirs)):
        if node_id not in ours or node_id not in theirs:
            where = "frontend" if node_id in theirs else "our conversion"
            problems.append(f"node {node_id} is only in the {where}'s prompt")
            continue
        declared = definitions[theirs[node_id]["class_type"]]["input"]
        names = set(declared.get("required", {})) | set(declared.get("optional", {}))
        for name in sorted(names):
            a, b = ours[node_id]["inputs"].get(name, "<absent>"), theirs[node_id]["inputs"].get(name, "<absent>")
            if a != b:
                problems.append(
                    f"node {node_id} {theirs[node_id]['class_type']}.{name}: ours {a!r:.60}, frontend {b!r:.60}"
                )
    return problems


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """This module's server: ComfyUI's API nodes defined too (for their templates' node definitions)."""
    from .conftest import serving

    yield from serving(tmp_path_factory.mktemp("comfy_api_nodes_base"), api_nodes=True)


@pytest.fixture(scope="module")
def object_info(server) -> dict[str, Any]:
    return server.get("/object_info").json()


def test_templates_convert_as_the_frontend_does(frontend, object_info):
    compared, with_subgraphs, mismatches, left_out, versions = 0, 0, {}, {}, set()
    recorders = []  # RecordAudio nodes compared: the frontend sends its empty DOM widget value as ""
    for path in _templates():
        workflow = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(workflow, dict) or "nodes" not in workflow:
            continue
        undefined = _undefined_types(workflow, object_info)
        if undefined:
            left_out[path.name] = sorted(undefined)
            with pytest.raises(WorkflowError, match="does not define"):
                ui_to_api(workflow, object_info)
            continue
        expected = frontend.evaluate(LOAD_AND_CONVERT, workflow)
        ours = ui_to_api(workflow, object_info)
        problems = prompt_differences(ours, expected, object_info)
        if problems:
            mismatches[path.name] = problems[:5]
        recorders += [(path.name, node["inputs"]) for node in ours.values() if node["class_type"] == "RecordAudio"]
        compared += 1
        versions.add(str((workflow.get("extra") or {}).get("frontendVersion", "none")))
        with_subgraphs += bool((workflow.get("definitions") or {}).get("subgraphs"))
    print(
        f"\n{compared} frontend-saved templates compared ({with_subgraphs} with subgraphs; saved by frontend "
        f"versions {sorted(versions)}); {len(left_out)} left "
        f"out for nodes this server does not define: {json.dumps(left_out)[:2000]}"
    )
    assert not mismatches, json.dumps(mismatches, indent=1)[:6000]
    assert compared >= 150 and with_subgraphs >= 4 and "none" in versions
    assert not [name for name in left_out if name.startswith("api_")], "API templates must be compared"
    assert recorders and all(inputs == {"audio": ""} for _, inputs in recorders), recorders


def test_workflows_the_frontend_builds_convert_as_it_does(frontend, object_info):
    default = next(p for p in _templates() if p.name == "default.json")
    saved = frontend.evaluate(BUILD_VARIANTS, json.loads(default.read_text(encoding="utf-8")))
    nested = saved["nested_subgraphs"]
    subgraphs = nested["definitions"]["subgraphs"]
    ids = {s["id"] for s in subgraphs}
    assert len(subgraphs) == 2 and any(n["type"] in ids for s in subgraphs for n in s["nodes"]), "not nested"
    assert saved["reroutes_and_primitive"]["extra"].get("reroutes") or saved["reroutes_and_primitive"].get("reroutes")
    for name, workflow in saved.items():
        expected = frontend.evaluate(LOAD_AND_CONVERT, workflow)
        ours = ui_to_api(workflow, object_info)
        assert not prompt_differences(ours, expected, object_info), (
            name,
            prompt_differences(ours, expected, object_info),
        )
    flat = ui_to_api(nested, object_info)
    assert any(node_id.count(":") == 2 for node_id in flat), sorted(flat)
    assert ui_to_api(saved["reroutes_and_primitive"], object_info)["3"]["inputs"]["steps"] == 7
