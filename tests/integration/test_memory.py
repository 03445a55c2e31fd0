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
    files = [item for out in entry["outputs"].values() for item in out.get("images", []) if item["type"] == "output"]
    assert files, entry["outputs"]
    contents = []
    for item in files:  # the sheet and the GIF
        view = server.get("/view", params={k: item.get(k, "") for k in ("filename", "subfolder", "type")})
        assert view.status_code == 200
        contents.append(view.content)
    return b"".join(contents)


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

    # ComfyUI handles /free between prompts: let anything an earlier test left in the queue finish first.
    idle = lambda: not any(server.get("/queue").json().values())  # noqa: E731
    assert _wait_until(idle, timeout=600), server.get("/queue").json()
    response = requests.post(f"{server.url}/free", json={"unload_models": True, "free_memory": True}, timeout=30)
    assert response.status_code == 200
    unloaded = _wait_until(lambda: not any(name.startswith("VC2 ") for name in _loaded(server)), timeout=180)
    assert unloaded, f"{_loaded(server)}\n{server.log()[-3000:]}"

    second = _run(server)
    assert {"VC2 unet (model.ckpt)", "VC2 vae (model.ckpt)"} <= set(_loaded(server))
    assert second == first


# In-process check of the previewer path with the user's preview method switched on (the server above runs
# with ComfyUI's default, no previews): ComfyUI's own latent_preview turns our latents into JPEG previews on
# the progress bar, for SD latents (host factors) and for a fitted 16-channel map, and nothing when off.
_PREVIEW_SCRIPT = r"""
import importlib.util, json, sys
sys.path.insert(0, ".")
import comfy.cli_args
comfy.cli_args.args.cpu = True  # as --cpu: read when comfy.model_management is first imported
import comfy.utils, latent_preview
from comfy.cli_args import LatentPreviewMethod
spec = importlib.util.spec_from_file_location("gameanim", sys.argv[1] + "/__init__.py",
                                              submodule_search_locations=[sys.argv[1]])
pack = importlib.util.module_from_spec(spec); sys.modules["gameanim"] = pack; spec.loader.exec_module(pack)
import torch
from gameanim.core import host
seen = []
comfy.utils.set_progress_bar_global_hook(lambda value, total, preview, node_id=None: seen.append(
    [value, total, None if preview is None else [preview[0], list(preview[1].size)]]))
out = {}
for method in ("none", "latent2rgb"):
    latent_preview.args.preview_method = LatentPreviewMethod(method)
    seen.clear()
    sd = host.preview_progress(2, "sd")
    sd.preview(torch.randn(1, 4, 3, 8, 12)); sd(1, 2)
    cog = host.preview_progress(2, "cogvideox", rgb=lambda: ([[0.1, 0.0, 0.0]] * 16, [0.0, 0.0, 0.0]))
    cog.preview(torch.randn(1, 16, 6, 10)); cog(1, 2)
    out[method] = list(seen)
module = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GroupNorm(2, 4))
handle = host.manage(module, "probe")
with host.on_device(handle) as device:
    out["loaded"] = host.loaded_model_names()
    out["castable"] = [type(m).__module__ for m in module]
host.unload(handle)
out["after_unload"] = host.loaded_model_names()
print(json.dumps(out))
"""


def test_previews_and_patcher_in_process():
    import os
    import subprocess

    from .conftest import COMFYUI_DIR, COMFYUI_PYTHON

    result = subprocess.run(
        [COMFYUI_PYTHON, "-c", _PREVIEW_SCRIPT, str(ROOT)],
        cwd=COMFYUI_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert all(preview is None for _, _, preview in out["none"]), out["none"]
    previews = [p for _, _, p in out["latent2rgb"] if p is not None]
    assert [p[1] for p in previews] == [[12, 8], [10, 6]], out["latent2rgb"]  # first frame, latent size
    assert all(p[0] == "JPEG" for p in previews)
    assert out["loaded"] == ["probe"] and out["after_unload"] == []
    assert out["castable"] == ["comfy.ops", "comfy.ops"]
