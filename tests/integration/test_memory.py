"""Our models live under ComfyUI's memory manager: the real host loads, lists, frees and reloads them.

Runs the shipped VC2 sprite workflow (tiny weights of the real layout, reduced sizes) in a real
ComfyUI on the CPU with the loader's ``offload`` off, so the parts stay loaded after the run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import requests

from .comfy_server import describe_failure
from .workflow_models import WORKFLOW_REDUCTIONS

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = "vc2_sprite_t2v"


def _prompt() -> dict:
    prompt = json.loads((ROOT / "workflows" / "api" / f"{WORKFLOW}.json").read_text(encoding="utf-8"))
    for node_id, inputs in WORKFLOW_REDUCTIONS[WORKFLOW].items():
        prompt[node_id]["inputs"].update(inputs)
    loader = next(n for n in prompt.values() if n["class_type"] == "GameAnimVC2Loader")
    loader["inputs"]["offload"] = False
    return prompt


def _run(server) -> bytes:
    response = server.queue(_prompt())
    assert response.status_code == 200, response.text
    entry = server.wait_history(response.json()["prompt_id"])
    assert entry["status"]["status_str"] == "success", describe_failure(entry)
    files = [item for out in entry["outputs"].values() for item in out.get("images", [])]
    assert len(files) == 1, entry["outputs"]
    view = server.get("/view", params={k: files[0].get(k, "") for k in ("filename", "subfolder", "type")})
    assert view.status_code == 200
    return view.content


def _loaded(server) -> list[str]:
    return server.get("/gameanim/loaded_models").json()["loaded"]


def _wait_until(predicate, timeout: float = 60.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def test_vc2_parts_are_host_loaded_freed_and_reloaded(server):
    requests_before = server.log().count("Requested to load GameAnimModel")
    first = _run(server)
    loaded = _loaded(server)
    assert {"VC2 unet (model.ckpt)", "VC2 vae (model.ckpt)", "VC2 text_encoder (model.ckpt)"} <= set(loaded), loaded
    # The host's own loader logged the loads (independent of our route).
    assert server.log().count("Requested to load GameAnimModel") >= requests_before + 3

    response = requests.post(f"{server.url}/free", json={"unload_models": True, "free_memory": True}, timeout=30)
    assert response.status_code == 200
    assert _wait_until(lambda: not any(name.startswith("VC2 ") for name in _loaded(server))), _loaded(server)

    second = _run(server)
    assert {"VC2 unet (model.ckpt)", "VC2 vae (model.ckpt)"} <= set(_loaded(server))
    assert second == first
