"""AnimeGamer decoder nodes in plain Python: the shipped API workflow on the tiny models, convert, representations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gameanim
import pytest
import torch
from gameanim.core.errors import InputError, ModelFileError, UnsafePathError
from gameanim.nodes.animegamer.decoder import comfy_nodes as dn
from gameanim.nodes.animegamer.decoder.representation import read_representation, save_representation
from integration.workflow_models import WORKFLOW_REDUCTIONS, write_decode_workflow_models

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "animegamer_decoder"


@pytest.fixture(scope="module")
def comfy_dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("agdec")

    folder = base / "models" / "animegamer"
    folder.mkdir(parents=True)
    write_decode_workflow_models(base / "models", base / "input")
    shutil.copytree(FIXTURE / "sat", folder / "VDM_Decoder-Tiny")
    return base


@pytest.fixture()
def base_dir(comfy_dirs, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(comfy_dirs))
    return comfy_dirs


def _run_api_workflow(prompt: dict) -> dict[str, tuple]:
    """Execute an API prompt with the node classes (links resolved in dependency order)."""
    results: dict[str, tuple] = {}

    def run(node_id: str) -> tuple:
        if node_id in results:
            return results[node_id]
        node = prompt[node_id]
        kwargs = {k: run(v[0])[v[1]] if isinstance(v, list) else v for k, v in node["inputs"].items()}
        if node["class_type"] == "SaveAnimatedWEBP":
            results[node_id] = (kwargs["images"],)
            return results[node_id]
        cls = gameanim.NODE_CLASS_MAPPINGS[node["class_type"]]
        out = getattr(cls(), cls.FUNCTION)(**kwargs)
        results[node_id] = out["result"] if isinstance(out, dict) else out
        return results[node_id]

    for node_id in prompt:
        run(node_id)
    return results


def test_shipped_api_workflow_runs_on_tiny_models(base_dir):
    prompt = json.loads((ROOT / "workflows" / "api" / "animegamer_decode.json").read_text())
    for node_id, inputs in WORKFLOW_REDUCTIONS["animegamer_decode"].items():
        prompt[node_id]["inputs"].update(inputs)
    lists = dn.AnimeGamerDecoderLoader.INPUT_TYPES()["required"]["decoder"][0]
    assert prompt["1"]["inputs"]["decoder"] in lists
    assert prompt["2"]["inputs"]["vae"] in dn.AnimeGamerVAELoader.INPUT_TYPES()["required"]["vae"][0]
    results = _run_api_workflow(prompt)
    frames, latent, flow = results["5"]
    assert frames.shape == (17, 64, 64, 3) and frames.dtype == torch.float32
    assert 0.0 <= float(frames.min()) and float(frames.max()) <= 1.0
    assert latent["samples"].shape == (1, 4, 5, 8, 8)
    assert flow == 15.0  # the turn's stored motion level 4 -> 15 (inference_Decoder.py table)
    again = _run_api_workflow(prompt)["5"][0]
    assert torch.equal(frames, again)  # seeded


def test_convert_node_writes_a_loadable_file(base_dir):
    source = "VDM_Decoder-Tiny/1/mp_rank_00_model_states.pt"
    assert source in dn.AnimeGamerDecoderLoader.INPUT_TYPES()["required"]["decoder"][0]
    out = dn.AnimeGamerDecoderConvert().convert(source, "tiny_fp16", "float16", overwrite=True)
    name = out["result"][0]
    assert name == "tiny_fp16.safetensors" and (base_dir / "models" / "animegamer" / name).is_file()
    (handle,) = dn.AnimeGamerDecoderLoader().load(name, "float32", "offload when idle")
    assert handle.model.config.num_layers == 2 and handle.model.dtype == torch.float32
    with pytest.raises(UnsafePathError):
        dn.AnimeGamerDecoderConvert().convert(source, "../escape", "float16", overwrite=True)


def test_load_representation_reads_released_mllm_output(base_dir):
    rep = torch.randn(1, 226, 64).to(torch.bfloat16)
    torch.save(
        {"ep_0_turn_0": [rep, "Character: Qiqi; ...", [4, 1, 0, -2]], "ep_0_turn_1": [rep * 2, "x", [1, 0, 0, 0]]},
        base_dir / "input" / "mllm-output.pt",
    )
    tokens, level = dn.AnimeGamerLoadRepresentation().load("mllm-output.pt", 1)
    assert level == 1 and tokens.dtype == torch.float32 and torch.equal(tokens, (rep * 2).float())
    with pytest.raises(InputError, match="out of range"):
        dn.AnimeGamerLoadRepresentation().load("mllm-output.pt", 5)


def test_representation_round_trip_and_bad_shape(tmp_path):
    path = save_representation(torch.ones(226, 64), tmp_path / "r.safetensors", motion_level=2)
    saved = read_representation(path)
    assert saved.tokens.shape == (1, 226, 64) and saved.motion_level == 2
    torch.save(torch.zeros(1, 77, 4096), tmp_path / "wrong.pt")
    with pytest.raises(InputError, match="226"):
        read_representation(tmp_path / "wrong.pt")


def test_vae_loader_errors(tmp_path):
    from gameanim.nodes.animegamer.decoder.vae import load_vae

    (tmp_path / "novae").mkdir()
    with pytest.raises(ModelFileError, match="config.json"):
        load_vae(tmp_path / "novae")
    torch.save({"state_dict": {"model.diffusion_model.x": torch.zeros(1)}}, tmp_path / "x.pt")
    with pytest.raises(ModelFileError, match="no VAE tensors"):
        load_vae(tmp_path / "x.pt")
