"""The headless queue client: workflow loading, overrides, batch resume (offline parts)."""

from __future__ import annotations

import json
from pathlib import Path

import gameanim_client as client
import pytest
from gameanim.workflow_format import without_stages

ROOT = Path(__file__).resolve().parents[1]

PROMPT = {
    "1": {
        "inputs": {"steps": 4, "scale": 1.5, "text": "a", "flag": False, "mode": "x"},
        "class_type": "T",
        "_meta": {"title": "Sprite Prompt"},
    },
    "2": {"inputs": {"image": ["1", 0]}, "class_type": "Out", "_meta": {"title": "Save"}},
}
INFO = {
    "T": {
        "display_name": "Thing",
        "input": {
            "required": {"steps": ["INT", {}], "scale": ["FLOAT", {}], "text": ["STRING", {}], "flag": ["BOOLEAN", {}]},
            "optional": {"mode": [["x", "y"], {}]},
        },
    },
    "Out": {"display_name": "Out", "input": {"required": {"image": ["IMAGE"]}}},
}


def test_overrides_by_title_and_id_are_typed():
    overrides = client.parse_set_args(
        ["Sprite Prompt.steps=8", "1.scale=2", "Sprite Prompt.text=a knight, side view", "1.flag=true", "Thing.mode=y"]
    )
    result = client.apply_overrides(PROMPT, overrides, INFO)
    assert result["1"]["inputs"] == {"steps": 8, "scale": 2.0, "text": "a knight, side view", "flag": True, "mode": "y"}
    assert PROMPT["1"]["inputs"]["steps"] == 4, "the original prompt is not modified"


@pytest.mark.parametrize(
    "item,message",
    [
        ("Nope.steps=1", "no node with that id or title"),
        ("Sprite Prompt.stepz=1", "has no input 'stepz'"),
        ("Sprite Prompt.steps=many", "not a valid INT"),
        ("Sprite Prompt.flag=maybe", "not a valid BOOLEAN"),
        ("steps=1", "must look like"),
    ],
)
def test_bad_overrides_say_what_is_wrong(item, message):
    with pytest.raises(client.ClientError, match=message):
        client.apply_overrides(PROMPT, client.parse_set_args([item]), INFO)


def test_set_without_equals_is_rejected():
    with pytest.raises(client.ClientError, match="needs '='"):
        client.parse_set_args(["Sprite Prompt.steps"])


def test_shipped_ui_workflows_convert_to_their_api_twins(all_definitions):
    definitions = json.loads(json.dumps(all_definitions))
    for ui_path in sorted((ROOT / "workflows").glob("*.json")):
        api = json.loads((ROOT / "workflows" / "api" / ui_path.name).read_text(encoding="utf-8"))
        assert client.load_prompt(ui_path, lambda: definitions) == without_stages(api), ui_path.name
        assert (
            client.load_prompt(
                ROOT / "workflows" / "api" / ui_path.name, lambda: pytest.fail("API files need no /object_info")
            )
            == api
        )


def test_batch_resumes_after_interruption(tmp_path):
    rows = client.read_rows(
        _write_csv(
            tmp_path / "jobs.csv",
            ["Sprite Prompt.text", "Sprite Prompt.steps"],
            [["knight", "4"], ["mage", ""], ["rogue", "6"]],
        )
    )
    assert rows == [
        {"Sprite Prompt.text": "knight", "Sprite Prompt.steps": "4"},
        {"Sprite Prompt.text": "mage"},
        {"Sprite Prompt.text": "rogue", "Sprite Prompt.steps": "6"},
    ]
    state_path = tmp_path / "state.json"
    calls = []

    def crash_on_third(index, row):
        calls.append(index)
        if index == 2:
            raise KeyboardInterrupt
        return [f"row{index}.png"]

    with pytest.raises(KeyboardInterrupt):
        client.run_batch(rows, state_path, crash_on_third, log=lambda m: None)
    assert json.loads(state_path.read_text())["done"] == {"0": ["row0.png"], "1": ["row1.png"]}

    def fail_then_ok(index, row):
        calls.append(index)
        raise client.ClientError("server said no")

    state = client.run_batch(rows, state_path, fail_then_ok, log=lambda m: None)
    assert calls == [0, 1, 2, 2] and state["failed"] == {"2": "server said no"}
    state = client.run_batch(rows, state_path, lambda i, r: ["ok"], log=lambda m: None)
    assert set(state["done"]) == {"0", "1", "2"} and state["failed"] == {}


def test_rejection_text_names_node_and_problem():
    body = {
        "error": {
            "type": "prompt_outputs_failed_validation",
            "message": "Prompt outputs failed validation",
            "details": "",
        },
        "node_errors": {
            "3": {
                "class_type": "GameAnimX",
                "errors": [{"message": "Value smaller than min", "details": "steps: -1 < 1"}],
            }
        },
    }
    text = client.format_rejection(body)
    assert (
        "Prompt outputs failed validation" in text
        and "node 3 (GameAnimX): Value smaller than min — steps: -1 < 1" in text
    )


def _write_csv(path, header, rows):
    import csv

    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize(
    "workflow,overrides",
    [
        ("pose_from_rig", {"GameAnim Pose Camera.preset": "back"}),
        ("vc2_sprite_t2v", {"Sprite Prompt.action": "jumping", "Sprite Prompt.character": "a knight"}),
        ("animegamer_turn", {"Load Game.name": "demo", "Save Game.name": "demo", "Instruction.motion": "running"}),
    ],
)
def test_readme_override_examples_fit_the_shipped_workflows(workflow, overrides, all_definitions):
    prompt = json.loads((ROOT / "workflows" / "api" / f"{workflow}.json").read_text(encoding="utf-8"))
    result = client.apply_overrides(prompt, overrides, json.loads(json.dumps(all_definitions)))
    changed = {f"{n.get('_meta', {}).get('title')}.{k}": v for n in result.values() for k, v in n["inputs"].items()}
    for key, value in overrides.items():
        assert changed[key] == value


HISTORY = {
    "outputs": {
        "5": {
            "images": [{"filename": "knight_00001.png", "subfolder": "gameanim", "type": "output"}],
            "files": [
                {"filename": "knight_00001.json", "subfolder": "gameanim", "type": "output"},
                {"filename": "knight_00001.png.meta", "subfolder": "gameanim", "type": "output"},
            ],
            "text": ["knight_00001.png, knight_00001.json, knight_00001.png.meta"],
        },
        "6": {
            "images": [{"filename": "knight_00002.gif", "subfolder": "gameanim", "type": "output"}],
            "animated": [True],
            "gameanim_preview": [{"frames": [{"filename": "frame_0000.png", "subfolder": "p/1", "type": "temp"}]}],
        },
        "7": {"images": [{"filename": "ComfyUI_temp_abc_00001_.png", "subfolder": "", "type": "temp"}]},
        "8": {"files": [{"filename": "knight_00001.json", "subfolder": "other", "type": "output"}]},
    }
}


class FakeServer:
    """Answers ``/view`` with the requested path as the body, and records the queries."""

    def __init__(self):
        self.views = []

    def request(self, method, path, payload=None):
        from urllib.parse import parse_qs, urlparse

        query = {k: v[0] for k, v in parse_qs(urlparse(path).query, keep_blank_values=True).items()}
        self.views.append(query)
        return 200, f"{query['type']}/{query['subfolder']}/{query['filename']}".encode()


def test_client_saves_every_listed_file_and_previews_only_when_asked(tmp_path):
    server = FakeServer()
    saved = client.download_outputs(server, HISTORY, tmp_path / "out")
    rel = sorted(p.relative_to(tmp_path / "out").as_posix() for p in saved)
    assert rel == sorted(
        [
            "knight_00001.png",
            "knight_00001.json",
            "knight_00001.png.meta",
            "knight_00002.gif",
            "other/knight_00001.json",  # the same name from another folder keeps its folder
        ]
    )
    assert (tmp_path / "out" / "other" / "knight_00001.json").read_bytes() == b"output/other/knight_00001.json"
    assert all(v["type"] == "output" for v in server.views)
    with_previews = client.download_outputs(FakeServer(), HISTORY, tmp_path / "all", previews=True)
    extra = {p.relative_to(tmp_path / "all").as_posix() for p in with_previews} - set(rel)
    assert extra == {"previews/p/1/frame_0000.png", "previews/ComfyUI_temp_abc_00001_.png"}


def test_client_refuses_server_paths_that_leave_the_output_folder(tmp_path):
    bad = {"outputs": {"1": {"files": [{"filename": "x.json", "subfolder": "../..", "type": "output"}]}}}
    bad["outputs"]["2"] = {"files": [{"filename": "x.json", "subfolder": "", "type": "output"}]}
    with pytest.raises(client.ClientError, match="leaves the output folder"):
        client.download_outputs(FakeServer(), bad, tmp_path)


def test_server_address_without_a_scheme_is_http_and_another_scheme_is_refused(tmp_path, capsys):
    assert client.server_url("127.0.0.1:8188") == "http://127.0.0.1:8188"
    assert client.server_url(" localhost:8188/ ") == "http://localhost:8188"
    assert client.server_url("https://comfy.example:443/") == "https://comfy.example:443"
    for bad in ("ftp://127.0.0.1:8188", "localhost:port", "http://:8188", "127.0.0.1:99999"):
        with pytest.raises(client.ClientError, match="http:// or https:// address"):
            client.server_url(bad)
    workflow = tmp_path / "api.json"
    workflow.write_text(json.dumps(PROMPT))
    assert client.main(["--server", "ftp://x", "convert", str(workflow)]) == 1
    assert "error: --server must be ComfyUI's http:// or https:// address" in capsys.readouterr().err
