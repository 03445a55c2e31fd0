"""The training nodes chained as in the shipped workflow, on a tiny complete VC2 checkpoint (no ComfyUI)."""

from __future__ import annotations

import gameanim.nodes.vc2.comfy_nodes as vc2n
import gameanim.trainers.comfy_nodes as tn
import pytest
import torch
from gameanim.core.errors import InputError, UnsafePathError
from safetensors.torch import save_file
from support.vc2_fixtures import tiny_full_checkpoint

INIT = {
    "run_name": "knight",
    "targets": "concept",
    "rank": 4,
    "alpha": 4.0,
    "learning_rate": 1e-2,
    "lr_schedule": "constant",
    "warmup_steps": 0,
    "total_steps": 100,
    "batch_size": 1,
    "grad_accum": 1,
    "gradient_checkpointing": True,
    "precision": "fp32",
    "caption_dropout": 0.1,
    "checkpoint_every": 2,
    "resume": True,
    "seed": 0,
}


@pytest.fixture(scope="module", autouse=True)
def env(tmp_path_factory):
    base = tmp_path_factory.mktemp("comfy")
    folder = base / "models" / "videocrafter"
    folder.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in tiny_full_checkpoint().items()}, str(folder / "tiny_vc2.safetensors"))
    mp = pytest.MonkeyPatch()
    mp.setenv("GAMEANIM_BASE_DIR", str(base))
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield base
    torch.set_num_threads(previous)
    mp.undo()


def test_train_validate_save_apply_chain(env, monkeypatch):
    events = []
    monkeypatch.setattr(tn.host, "send_ui_event", lambda event, data: events.append((event, data)))
    with torch.inference_mode():  # as ComfyUI's executor runs every node
        run = _chain(env)
    training = [data for event, data in events if event == "gameanim.training"]
    assert [d["step"] for d in training[:3]] == [1, 2, 3] and all(d["node"] == "7" for d in training[:3])
    assert [d["loss"] for d in training[:3]] == run.losses[:3] and all(d["lr"] > 0 for d in training)


def _chain(env):
    (loaded,) = vc2n.VC2Loader().load("tiny_vc2.safetensors", "fp32", True)
    (dataset,) = tn.StillImagesDataset().load("knight_concept", "gmknight", tn.ds_template(), 64, 64, False)
    assert len(dataset.stills) == 4 and all("gmknight" in i.caption for i in dataset.stills)
    (run,) = tn.LoraTrainInit().init(loaded, dataset, **INIT)
    trained = tn.LoraTrain().train(run, 3, unique_id="7")
    run, curve, last = trained["result"]
    assert run.step == 3 and curve.shape[0] == 1 and curve.shape[-1] == 3 and last == run.losses[-1]
    assert (env / "output" / "gameanim_training" / "knight" / "checkpoint.pt").is_file()
    # the checkpoint is listed for /view, so a headless client downloads it with the rest
    assert trained["ui"]["files"] == [
        {"filename": "checkpoint.pt", "subfolder": "gameanim_training/knight", "type": "output"}
    ]
    run, preview = tn.LoraValidate().validate(run, "running gmknight", 64, 64, 2, 2, 4.0, 1)
    assert preview.shape == (2, 64, 64, 3) and 0 <= float(preview.min()) and float(preview.max()) <= 1
    result = tn.LoraSave().save(run, "knight")
    assert result["result"] == ("knight.safetensors",)
    assert (env / "models" / "loras" / "gameanim" / "knight.safetensors").is_file()
    names = tn.ApplyLora.INPUT_TYPES()["required"]["lora_name"][0]
    assert names == ["knight.safetensors"]
    (applied,) = tn.ApplyLora().apply(loaded, "knight.safetensors", 1.0, False)
    assert applied.model is not loaded.model and applied.offload == loaded.offload
    (stacked,) = tn.ApplyLora().apply(applied, "knight.safetensors", 0.0, False)
    sd_a, sd_s = applied.model.unet.state_dict(), stacked.model.unet.state_dict()
    assert all(torch.equal(sd_a[k], sd_s[k]) for k in sd_a)
    # A workflow that trains and applies in one queue: lora_name may not exist yet, saved_lora names the file.
    assert tn.ApplyLora.VALIDATE_INPUTS("not_trained_yet.safetensors") is True
    assert "'..' is not allowed" in tn.ApplyLora.VALIDATE_INPUTS("../escape.safetensors")
    (linked,) = tn.ApplyLora().apply(loaded, "not_trained_yet.safetensors", 1.0, False, saved_lora="knight.safetensors")
    sd_l = linked.model.unet.state_dict()
    assert all(torch.equal(sd_a[k], sd_l[k]) for k in sd_a)
    # re-running Init with resume continues the checkpoint
    (again,) = tn.LoraTrainInit().init(loaded, dataset, **INIT)
    assert again.step == 3 and again.losses == run.losses
    return run


def test_dataset_folder_is_confined(env):
    with pytest.raises(UnsafePathError):
        tn.StillImagesDataset().load("../../etc", "x", tn.ds_template(), 64, 64, False)
    with pytest.raises(InputError, match="neither"):
        tn.StillImagesDataset().load("no_such_folder", "x", tn.ds_template(), 64, 64, False)


def test_action_clips_node_merges_with_stills(env):
    from PIL import Image

    clip = env / "input" / "clips" / "v_Run_g01"
    clip.mkdir(parents=True)
    for f in range(4):
        Image.new("RGB", (64, 64), (f * 60, 10, 10)).save(clip / f"{f:02d}.png")
    (stills,) = tn.StillImagesDataset().load("knight_concept", "gmknight", tn.ds_template(), 64, 64, False)
    (mixed,) = tn.ActionClipsDataset().load(
        "clips", "running", "gmknight", tn.ds_template(), 4, 1, 12, 64, 64, 0.25, stills
    )
    assert len(mixed.stills) == 4 and len(mixed.clips) == 1 and mixed.still_ratio == 0.25 and mixed.clip_fps == 12
    assert mixed.clips[0].caption == "Game character running animation of gmknight"
