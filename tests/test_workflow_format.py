"""UI ↔ API conversion follows the frontend's rules (widgets, seeds, links, reroutes, primitives, bypass, mute)."""

from __future__ import annotations

import pytest
from gameanim.workflow_format import (
    WorkflowError,
    absolute_paths,
    api_to_ui,
    group_members,
    overlapping_nodes,
    ui_to_api,
    validate_api,
    widget_slots,
    without_stages,
)

DEFS = {
    "Src": {
        "input": {"required": {"seed": ["INT", {"default": 0, "min": 0}], "mode": [["a", "b"], {"default": "a"}]}},
        "input_order": {"required": ["seed", "mode"]},
        "output": ["IMAGE", "INT"],
        "output_name": ["image", "count"],
        "display_name": "Source",
        "output_node": False,
    },
    "Mid": {
        "input": {
            "required": {"image": ["IMAGE"], "scale": ["FLOAT", {"default": 1.0, "min": 0.0, "max": 4.0}]},
            "optional": {"label": ["STRING", {"default": ""}], "steps": ["INT", {"default": 2, "forceInput": True}]},
        },
        "input_order": {"required": ["image", "scale"], "optional": ["label", "steps"]},
        "output": ["IMAGE"],
        "output_name": ["image"],
        "display_name": "Middle",
        "output_node": False,
    },
    "Sink": {
        "input": {"required": {"image": ["IMAGE"], "prefix": ["STRING", {"default": "x"}]}},
        "input_order": {"required": ["image", "prefix"]},
        "output": [],
        "output_name": [],
        "display_name": "Sink",
        "output_node": True,
    },
}

PROMPT = {
    "1": {"inputs": {"seed": 5, "mode": "b"}, "class_type": "Src", "_meta": {"title": "Source"}},
    "2": {
        "inputs": {"image": ["1", 0], "scale": 2.0, "label": "hi", "steps": ["1", 1]},
        "class_type": "Mid",
        "_meta": {"title": "My mid"},
    },
    "3": {"inputs": {"image": ["2", 0], "prefix": "out"}, "class_type": "Sink", "_meta": {"title": "Sink"}},
}


def test_widget_slots_add_control_value_after_seed():
    assert widget_slots(DEFS["Src"]) == ["seed", None, "mode"]
    assert widget_slots(DEFS["Mid"]) == ["scale", "label"]


def test_api_to_ui_round_trips():
    ui = api_to_ui(PROMPT, DEFS)
    src = next(n for n in ui["nodes"] if n["id"] == 1)
    assert src["widgets_values"] == [5, "fixed", "b"]
    assert next(n for n in ui["nodes"] if n["id"] == 2)["title"] == "My mid"
    assert ui_to_api(ui, DEFS) == PROMPT
    assert validate_api(PROMPT, DEFS) == []


def _ui_with(extra_nodes, rewire):
    ui = api_to_ui(PROMPT, DEFS)
    ui["nodes"].extend(extra_nodes)
    rewire(ui)
    return ui


def test_reroute_and_primitive_are_resolved():
    ui = api_to_ui(PROMPT, DEFS)
    mid = next(n for n in ui["nodes"] if n["id"] == 2)
    link_into_mid = next(s for s in mid["inputs"] if s["name"] == "image")["link"]
    ui["nodes"].append(
        {
            "id": 9,
            "type": "Reroute",
            "mode": 0,
            "inputs": [{"name": "", "type": "*", "link": 100}],
            "outputs": [{"links": [link_into_mid]}],
        }
    )
    for link in ui["links"]:
        if link[0] == link_into_mid:
            link[1], link[2] = 9, 0
    ui["links"].append([100, 1, 0, 9, 0, "IMAGE"])
    ui["nodes"].append(
        {"id": 10, "type": "PrimitiveNode", "mode": 0, "widgets_values": [3.5], "outputs": [{"links": [101]}]}
    )
    mid["inputs"].append({"name": "scale", "type": "FLOAT", "link": 101, "widget": {"name": "scale"}})
    ui["links"].append([101, 10, 0, 2, 2, "FLOAT"])
    api = ui_to_api(ui, DEFS)
    assert api["2"]["inputs"]["image"] == ["1", 0]
    assert api["2"]["inputs"]["scale"] == 3.5
    assert "9" not in api and "10" not in api


def test_bypassed_node_passes_its_input_through_and_muted_node_is_dropped():
    ui = api_to_ui(PROMPT, DEFS)
    next(n for n in ui["nodes"] if n["id"] == 2)["mode"] = 4
    api = ui_to_api(ui, DEFS)
    assert "2" not in api and api["3"]["inputs"]["image"] == ["1", 0]
    next(n for n in ui["nodes"] if n["id"] == 2)["mode"] = 2
    api = ui_to_api(ui, DEFS)
    assert "2" not in api and "image" not in api["3"]["inputs"]
    assert any("required input 'image'" in p for p in validate_api(api, DEFS))


def test_validation_reports_what_comfyui_would():
    bad = {
        "1": {"inputs": {"seed": -1, "mode": "z"}, "class_type": "Src"},
        "2": {"inputs": {"image": ["1", 1], "scale": "big", "oops": 1}, "class_type": "Mid"},
        "3": {"inputs": {"image": ["7", 0], "prefix": "x"}, "class_type": "Sink"},
        "4": {"inputs": {}, "class_type": "Nope"},
    }
    problems = "\n".join(validate_api(bad, DEFS))
    for expected in (
        "below the minimum",
        "not one of",
        "INT does not connect to IMAGE",
        "not a number",
        "unknown input 'oops'",
        "missing node 7",
        "unknown node type 'Nope'",
    ):
        assert expected in problems
    assert validate_api({"1": PROMPT["1"]}, DEFS) == [
        "the workflow has no output node, so ComfyUI would refuse it (prompt_no_outputs)"
    ]


def test_unknown_node_type_in_ui_is_an_error():
    ui = api_to_ui(PROMPT, DEFS)
    ui["nodes"][0]["type"] = "Missing"
    with pytest.raises(WorkflowError, match="Missing"):
        ui_to_api(ui, DEFS)


def test_absolute_paths_are_found():
    assert absolute_paths({"a": ["/home/x.png", "rel/x.png", {"b": "C:\\x"}], "c": "~/m"}) == [
        "/home/x.png",
        "C:\\x",
        "~/m",
    ]


def test_missing_widget_values_take_the_defaults_as_in_the_frontend():
    """A file saved before ``Mid`` gained ``label`` (and one saved with no values at all)."""
    ui = api_to_ui(PROMPT, DEFS)
    mid = next(n for n in ui["nodes"] if n["type"] == "Mid")
    sink = next(n for n in ui["nodes"] if n["type"] == "Sink")
    mid["widgets_values"], sink["widgets_values"] = [2.0], []
    api = ui_to_api(ui, DEFS)
    assert api["2"]["inputs"]["label"] == "" and api["2"]["inputs"]["scale"] == 2.0
    assert api["3"]["inputs"]["prefix"] == "x"


def _subgraph_workflow() -> dict:
    """Src -> [instance 10 of subgraph S: Mid (scale promoted) -> [instance 20 of T: Mid]] -> Sink.

    The layout of frontend 1.27 files: ``definitions.subgraphs`` with object links, the subgraph's input
    node -10 and output node -20, instance inputs matched by name, promoted widget values on the instance.
    """
    inner_t = {
        "id": "T",
        "nodes": [
            {"id": 1, "type": "Mid", "mode": 0, "inputs": [{"name": "image", "link": 1}], "widgets_values": [3.0, "t"]}
        ],
        "links": [
            {"id": 1, "origin_id": -10, "origin_slot": 0, "target_id": 1, "target_slot": 0, "type": "IMAGE"},
            {"id": 2, "origin_id": 1, "origin_slot": 0, "target_id": -20, "target_slot": 0, "type": "IMAGE"},
        ],
        "inputs": [{"name": "image", "type": "IMAGE", "linkIds": [1]}],
        "outputs": [{"name": "image", "type": "IMAGE", "linkIds": [2]}],
    }
    inner_s = {
        "id": "S",
        "nodes": [
            {
                "id": 1,
                "type": "Mid",
                "mode": 0,
                "inputs": [{"name": "image", "link": 1}, {"name": "scale", "widget": {"name": "scale"}, "link": 2}],
                "widgets_values": [1.0, "s"],
            },
            {"id": 2, "type": "T", "mode": 0, "inputs": [{"name": "image", "link": 3}]},
        ],
        "links": [
            {"id": 1, "origin_id": -10, "origin_slot": 0, "target_id": 1, "target_slot": 0, "type": "IMAGE"},
            {"id": 2, "origin_id": -10, "origin_slot": 1, "target_id": 1, "target_slot": 1, "type": "FLOAT"},
            {"id": 3, "origin_id": 1, "origin_slot": 0, "target_id": 2, "target_slot": 0, "type": "IMAGE"},
            {"id": 4, "origin_id": 2, "origin_slot": 0, "target_id": -20, "target_slot": 0, "type": "IMAGE"},
        ],
        "inputs": [
            {"name": "image", "type": "IMAGE", "linkIds": [1]},
            {"name": "scale", "type": "FLOAT", "linkIds": [2]},
        ],
        "outputs": [{"name": "image", "type": "IMAGE", "linkIds": [4]}],
    }
    return {
        "nodes": [
            {"id": 1, "type": "Src", "mode": 0, "widgets_values": [5, "fixed", "b"]},
            {
                "id": 10,
                "type": "S",
                "mode": 0,
                "inputs": [{"name": "image", "type": "IMAGE", "link": 1}],
                "outputs": [{"name": "image", "type": "IMAGE", "links": [2]}],
                "widgets_values": [2.5],
            },
            {"id": 3, "type": "Sink", "mode": 0, "inputs": [{"name": "image", "link": 2}], "widgets_values": ["out"]},
        ],
        "links": [[1, 1, 0, 10, 0, "IMAGE"], [2, 10, 0, 3, 0, "IMAGE"]],
        "definitions": {"subgraphs": [inner_s, inner_t]},
    }


def test_nested_subgraphs_expand_with_execution_ids_and_promoted_widgets():
    api = ui_to_api(_subgraph_workflow(), DEFS)
    assert sorted(api) == ["1", "10:1", "10:2:1", "3"]
    assert api["10:1"]["inputs"] == {"image": ["1", 0], "scale": 2.5, "label": "s"}
    assert api["10:2:1"]["inputs"] == {"image": ["10:1", 0], "scale": 3.0, "label": "t"}
    assert api["3"]["inputs"]["image"] == ["10:2:1", 0]


def test_bypassed_subgraph_instance_passes_its_input_through_and_muted_source_drops_the_link():
    workflow = _subgraph_workflow()
    workflow["nodes"][1]["mode"] = 4
    api = ui_to_api(workflow, DEFS)
    assert sorted(api) == ["1", "3"] and api["3"]["inputs"]["image"] == ["1", 0]
    workflow["nodes"][0]["mode"] = 2
    assert "image" not in ui_to_api(workflow, DEFS)["3"]["inputs"]


def test_subgraph_containing_itself_is_an_error():
    workflow = _subgraph_workflow()
    workflow["definitions"]["subgraphs"][1]["nodes"][0]["type"] = "S"
    with pytest.raises(WorkflowError, match="contains itself"):
        ui_to_api(workflow, DEFS)


def test_legacy_group_node_is_refused_with_what_to_do():
    ui = api_to_ui(PROMPT, DEFS)
    ui["nodes"][1]["type"] = "workflow>my group"
    with pytest.raises(WorkflowError, match="legacy group node .*convert the group node to a subgraph"):
        ui_to_api(ui, DEFS)


STAGED = {
    "1": {"inputs": {"seed": 5, "mode": "b"}, "class_type": "Src", "_meta": {"title": "Source", "group": "Make"}},
    "2": {
        "inputs": {"image": ["1", 0], "scale": 2.0, "label": "hi", "steps": ["1", 1]},
        "class_type": "Mid",
        "_meta": {"title": "My mid", "group": "Make"},
    },
    "3": {"inputs": {"image": ["2", 0], "prefix": "out"}, "class_type": "Sink", "_meta": {"title": "Sink"}},
    "4": {"inputs": {"image": ["2", 0], "prefix": "b"}, "class_type": "Sink", "_meta": {"title": "B", "group": "Save"}},
}


def test_stages_become_groups_around_their_nodes_and_the_note_a_markdown_node():
    models = {"1": [{"name": "m.safetensors", "url": "https://huggingface.co/x/m.safetensors", "directory": "vae"}]}
    ui = api_to_ui(STAGED, DEFS, note="# Hello\nPut m.safetensors in models/vae.", models=models)
    assert ui_to_api(ui, DEFS) == without_stages(STAGED)
    assert {g["title"] for g in ui["groups"]} == {"Make", "Save"}
    by_title = {g["title"]: g for g in ui["groups"]}
    assert group_members(ui, by_title["Make"]) == {1, 2}
    assert group_members(ui, by_title["Save"]) == {4}
    assert overlapping_nodes(ui) == []
    note = next(n for n in ui["nodes"] if n["type"] == "MarkdownNote")
    assert note["widgets_values"] == ["# Hello\nPut m.safetensors in models/vae."]
    assert note["id"] == 5 and ui["last_node_id"] == 5
    assert next(n for n in ui["nodes"] if n["id"] == 1)["properties"]["models"] == models["1"]
    assert "models" not in next(n for n in ui["nodes"] if n["id"] == 2)["properties"]


def test_nodes_are_sized_to_their_widgets():
    ui = api_to_ui(PROMPT, DEFS)
    src, mid = (next(n for n in ui["nodes"] if n["id"] == i) for i in (1, 2))
    # Src: 2 output rows + 3 widget rows (seed, its control value, mode); Mid: 2 socket rows + 2 widgets.
    assert src["size"][1] == 30 + 2 * 20 + 10 + 3 * 24
    assert mid["size"][1] == 30 + 2 * 20 + 10 + 2 * 24


def test_overlap_is_detected():
    ui = api_to_ui(PROMPT, DEFS)
    ui["nodes"][1]["pos"] = list(ui["nodes"][0]["pos"])
    assert overlapping_nodes(ui) == [(1, 2)]


def test_recorder_dom_widget_is_sent_empty_as_the_frontend_does():
    """RecordAudio's AUDIO_RECORD input is a DOM widget (recorder + button: two widgets_values entries); the
    frontend sends its serializeValue(), "" for a loaded file, and the widgets after it keep their positions."""
    defs = {
        "RecordAudio": {
            "input": {"required": {"audio": ["AUDIO_RECORD", {}]}},
            "input_order": {"required": ["audio"]},
            "output": ["AUDIO"],
        },
        "Recorder2": {
            "input": {"required": {"audio": ["AUDIO_RECORD", {}], "gain": ["FLOAT", {"default": 1.0}]}},
            "input_order": {"required": ["audio", "gain"]},
            "output": ["AUDIO"],
        },
    }
    assert widget_slots(defs["Recorder2"]) == ["audio", None, "gain"]
    ui = {
        "nodes": [
            {"id": 1, "type": "RecordAudio", "mode": 0, "widgets_values": ["", ""], "inputs": [], "outputs": []},
            {"id": 2, "type": "Recorder2", "mode": 0, "widgets_values": ["blob:x", "", 0.5], "outputs": []},
            {"id": 3, "type": "RecordAudio", "mode": 0, "outputs": []},
        ],
        "links": [],
    }
    prompt = ui_to_api(ui, defs)
    assert prompt["1"]["inputs"] == {"audio": ""} and prompt["3"]["inputs"] == {"audio": ""}
    assert prompt["2"]["inputs"] == {"audio": "", "gain": 0.5}


def test_seed_without_control_widget_when_the_spec_says_so():
    """Frontend: an INT named seed gets the control combo unless its spec sets control_after_generate False
    (ComfyUI's Moonvalley node); a COMBO gets one only when asked."""
    spec = {
        "input": {
            "required": {
                "seed": ["INT", {"default": 9, "control_after_generate": False}],
                "noise_seed": ["INT", {"default": 0}],
                "mode": [["a", "b"], {}],
                "pick": ["COMBO", {"options": ["x", "y"], "control_after_generate": True}],
            }
        },
        "input_order": {"required": ["seed", "noise_seed", "mode", "pick"]},
    }
    assert widget_slots(spec) == ["seed", "noise_seed", None, "mode", "pick", None]
