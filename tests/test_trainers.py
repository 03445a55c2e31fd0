"""VC2 LoRA trainer on a tiny VC2 with random weights: learning, LoRA files, exact resume, errors, nodes."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError, ModelFileError
from gameanim.core.progress import Cancelled
from gameanim.core.weights import safetensors_metadata
from gameanim.trainers import datasets as ds
from gameanim.trainers import loop
from gameanim.trainers import lora as lora_mod
from gameanim.trainers.lora_file import save_lora
from PIL import Image
from safetensors.torch import save_file
from support.trainers_tiny import tiny_model, write_concept_folder

FAST = {"rank": 4, "alpha": 4.0, "learning_rate": 1e-2, "caption_dropout": 0.0, "checkpoint_every": 0}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """2 shared cores: one intra-op thread is 30x faster for these tiny tensors than oversubscription."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def model():
    return tiny_model()


@pytest.fixture(scope="module")
def concept(tmp_path_factory):
    folder = tmp_path_factory.mktemp("concept")
    write_concept_folder(folder)
    return ds.TrainDataset(stills=ds.load_stills(folder, 64, 64, trigger="gmhero"), trigger="gmhero")


@pytest.fixture(scope="module")
def trained(model, concept):
    run = loop.start_training(model, concept, loop.TrainSettings(**FAST))
    before = loop.validation_loss(run, 8)
    loop.train(run, 30)
    return run, before


def _eps(model, seed=5, frames=2):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 4, frames, 8, 8, generator=gen)
    ctx = torch.randn(1, 77, 32, generator=gen)
    with torch.no_grad():
        return model.unet(x, torch.tensor([500]), ctx, 16)


# ----------------------------------------------------------------------------- datasets


def test_stills_captions_repeats_and_buckets(tmp_path):
    write_concept_folder(tmp_path)
    (tmp_path / "3_extra").mkdir()
    Image.new("RGBA", (40, 120), (0, 0, 0, 0)).save(tmp_path / "3_extra" / "tall.png")
    (tmp_path / "3_extra" / "tall.txt").write_text("  back view \n")
    items = ds.load_stills(tmp_path, 128, 128, trigger="gmhero", bucketing=True)
    assert len(items) == 5
    tall = next(i for i in items if i.source.endswith("tall.png"))
    assert tall.repeats == 3 and tall.caption == "Game character animation of gmhero, back view"
    assert tall.size[0] % 64 == 0 and tall.size[1] % 64 == 0 and tall.size[1] > tall.size[0]
    assert float(tall.frames.min()) == 1.0  # transparent pixels became white
    assert all(i.frames.shape[0] == 1 and i.frames.dtype == torch.float32 for i in items)
    dataset = ds.TrainDataset(stills=items)
    assert len(dataset) == 4 + 3
    plain = ds.load_stills(tmp_path, 128, 64, trigger="gmhero")
    assert {i.size for i in plain} == {(128, 64)}


def test_caption_template():
    template = ds.DEFAULT_TEMPLATE
    assert (
        ds.render_caption(template, "gmk", "red cape", "running") == "Game character running animation of gmk, red cape"
    )
    assert ds.render_caption(template, "gmk", "", "") == "Game character animation of gmk"


def test_clip_folders_and_videos(tmp_path):
    import av

    for c in range(2):
        clip = tmp_path / f"v_Run_g0{c}"
        clip.mkdir()
        for f in range(6):
            Image.new("RGB", (96, 64), (f * 40, 0, 0)).save(clip / f"{f:03d}.png")
    (tmp_path / "v_Run_g00" / "000.txt").write_text("knight jogging")
    short = tmp_path / "short"
    short.mkdir()
    Image.new("RGB", (64, 64)).save(short / "0.png")
    with av.open(str(tmp_path / "walk.mp4"), "w") as out:
        stream = out.add_stream("mpeg4", rate=8)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        for f in range(5):
            frame = av.VideoFrame.from_ndarray(np.full((64, 64, 3), f * 50, dtype=np.uint8), format="rgb24")
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
    items = ds.load_clips(tmp_path, frames=4, width=64, height=64, trigger="gmk", action="running")
    assert len(items) == 3  # the 1-frame clip is skipped
    assert all(i.frames.shape == (4, 64, 64, 3) and i.kind == "clip" for i in items)
    assert items[0].caption.startswith("Game character running animation of gmk")
    assert any("knight jogging" in i.caption for i in items)
    strided = ds.load_clips(tmp_path / "v_Run_g01", frames=3, width=64, height=64, frame_stride=2)
    assert len(strided) == 1 and float(strided[0].frames[1, 0, 0, 0]) == pytest.approx(80 / 255, abs=0.01)
    with pytest.raises(InputError, match="fewer than 8 frames"):
        ds.load_clips(tmp_path, frames=8, width=64, height=64)


def test_empty_or_bad_dataset_folders_raise(tmp_path):
    with pytest.raises(InputError, match="No images"):
        ds.load_stills(tmp_path, 64, 64)
    with pytest.raises(InputError, match="does not exist"):
        ds.load_stills(tmp_path / "missing", 64, 64)
    with pytest.raises(InputError, match="multiples of 64"):
        ds.load_stills(tmp_path, 100, 64)


# ----------------------------------------------------------------------------- training


def test_targets_split_spatial_and_temporal(model):
    concept = lora_mod.target_modules(model.unet, "concept")
    action = lora_mod.target_modules(model.unet, "action")
    assert concept and action and not set(concept) & set(action)
    assert all(".attentions." in n and not lora_mod.is_temporal(n) for n in concept)
    assert any("temp_convs" in n for n in action) and any("transformer_in" in n for n in action)
    assert all(lora_mod.is_temporal(n) for n in action)
    assert set(lora_mod.target_modules(model.unet, "concept+action")) == set(concept) | set(action)


def test_thirty_steps_lower_the_loss_and_leave_the_base_untouched(model, trained):
    run, before = trained
    after = loop.validation_loss(run, 8)
    assert run.step == 30 and len(run.losses) == 30
    assert after < 0.85 * before, (before, after)
    assert all(not p.requires_grad for p in model.unet.parameters())
    assert not any(".lora_" in n for n, _ in model.unet.named_parameters())


def test_gradient_checkpointing_gives_the_same_step(model, concept):
    losses = []
    for ckpt in (False, True):
        run = loop.start_training(model, concept, loop.TrainSettings(**FAST, gradient_checkpointing=ckpt))
        loop.train(run, 2)
        losses.append((run.losses, run.lora_state()))
    assert losses[0][0] == pytest.approx(losses[1][0], rel=1e-5)
    for key, value in losses[0][1].items():
        assert torch.allclose(value, losses[1][1][key], atol=1e-6)


def test_lora_file_roundtrip_strength_and_stacking(model, trained, tmp_path):
    run, _ = trained
    path = save_lora(run.lora_state(), tmp_path, "hero", run.metadata())
    meta = json.loads(json.dumps(safetensors_metadata(path)))
    assert meta["gameanim_key_format"] == lora_mod.KEY_FORMAT and meta["trigger"] == "gmhero"
    assert (
        meta["rank"] == "4" and meta["steps"] == "30" and meta["targets"] == "concept" and meta["dataset_size"] == "4"
    )
    base = _eps(model)
    applied = api.apply_lora(model, path, 1.0)
    out = _eps(applied)
    assert (out - base).abs().max() > 1e-3  # the LoRA changes the output
    assert torch.allclose(out, _eps(run.preview_model()), atol=1e-5)  # merged == trained adapters
    assert torch.equal(_eps(api.apply_lora(model, path, 1.0)), out)  # reload -> identical
    assert torch.equal(_eps(api.apply_lora(model, path, 0.0)), base)  # strength 0 == base
    assert torch.equal(_eps(model), base)  # the input model is unchanged
    stacked = api.apply_lora(api.apply_lora(model, path, 0.5), path, 0.5)
    assert torch.allclose(_eps(stacked), out, atol=1e-5)  # 0.5 + 0.5 == 1.0 (linear merge)
    second = save_lora(run.lora_state(), tmp_path, "hero", run.metadata())
    assert second != path and second.name == "hero_001.safetensors"  # never overwrites


def test_cancel_then_resume_matches_an_uninterrupted_run(model, concept, tmp_path):
    clips = [
        ds.TrainItem(torch.rand(4, 64, 64, 3, generator=torch.Generator().manual_seed(i)), f"clip {i}", "clip", str(i))
        for i in range(2)
    ]
    mixed = concept.merged(ds.TrainDataset(clips=clips, trigger="gmhero", clip_fps=12), still_ratio=0.5)
    settings = dict(
        FAST,
        targets="concept+action",
        batch_size=2,
        grad_accum=2,
        caption_dropout=0.3,
        lr_schedule="cosine",
        total_steps=10,
        warmup_steps=2,
        checkpoint_every=3,
    )
    full = loop.start_training(model, mixed, loop.TrainSettings(**settings))
    loop.train(full, 10)

    ckpt = tmp_path / "run" / "checkpoint.pt"

    def cancel_at_7(done, total):
        if done == 7:
            raise Cancelled("user pressed cancel")

    first = loop.start_training(model, mixed, loop.TrainSettings(**settings, checkpoint_path=str(ckpt)))
    with pytest.raises(Cancelled):
        loop.train(first, 10, cancel_at_7)
    assert ckpt.is_file() and not list(ckpt.parent.glob("*.tmp"))
    resumed = loop.start_training(model, mixed, loop.TrainSettings(**settings, checkpoint_path=str(ckpt)))
    assert resumed.step == 7
    loop.train(resumed, 3)
    assert resumed.losses == full.losses
    final, expected = resumed.lora_state(), full.lora_state()
    assert max(float((final[k] - expected[k]).abs().max()) for k in expected) <= 1e-6
    with pytest.raises(InputError, match="different settings"):
        loop.start_training(model, mixed, loop.TrainSettings(**{**settings, "rank": 8}, checkpoint_path=str(ckpt)))


def test_stills_do_not_train_temporal_layers(model, concept):
    run = loop.start_training(model, concept, loop.TrainSettings(**{**FAST, "targets": "concept+action"}))
    temporal = [p.detach().clone() for p in lora_mod.temporal_lora_params(run.unet)]
    loop.train(run, 3)
    assert all(torch.equal(a, b) for a, b in zip(temporal, lora_mod.temporal_lora_params(run.unet), strict=True))
    assert all(p.requires_grad for p in lora_mod.temporal_lora_params(run.unet))


# ----------------------------------------------------------------------------- errors


def test_foreign_corrupt_and_other_base_loras_are_refused(model, trained, tmp_path):
    run, _ = trained
    good = save_lora(run.lora_state(), tmp_path, "good", run.metadata())
    foreign = tmp_path / "kohya.safetensors"
    save_file({"lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight": torch.zeros(4, 32)}, str(foreign))
    with pytest.raises(ModelFileError, match="not a GameAnim VC2 LoRA"):
        api.apply_lora(model, foreign, 1.0)
    corrupt = tmp_path / "corrupt.safetensors"
    corrupt.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ModelFileError):
        api.apply_lora(model, corrupt, 1.0)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a weight file at all")
    with pytest.raises(ModelFileError, match="not a .safetensors"):
        api.apply_lora(model, junk, 1.0)
    other = tiny_model(seed_offset=0.05)
    with pytest.raises(ModelFileError, match="different base model"):
        api.apply_lora(other, good, 1.0)
    assert (_eps(api.apply_lora(other, good, 1.0, allow_other_base=True)) - _eps(other)).abs().max() > 1e-3


def test_empty_dataset_folder_writes_nothing(model, tmp_path):
    empty, out = tmp_path / "empty", tmp_path / "out"
    empty.mkdir()
    with pytest.raises(InputError, match="No images"):
        api.train_lora(model, empty, steps=2, output_dir=out, checkpoint_path=str(out / "ckpt.pt"), **FAST)
    assert not out.exists()


def test_api_train_lora_saves(model, tmp_path):
    data = tmp_path / "data"
    write_concept_folder(data, count=2)
    run = api.train_lora(
        model, data, steps=2, width=64, height=64, trigger="gmhero", output_dir=tmp_path / "loras", name="api", **FAST
    )
    assert run.step == 2 and run.saved_path.name == "api.safetensors"
    with pytest.raises(InputError, match="Unknown training settings"):
        api.train_lora(model, data, lerning_rate=1.0)


@pytest.mark.parametrize(
    "weights,precision,scaled",
    [("bf16", "fp32", False), ("fp16", "bf16", True), ("fp32", "bf16", False), ("fp32", "fp16", True)],
)
def test_mixed_precision_steps(concept, weights, precision, scaled):
    from gameanim.nodes.vc2.model import VC2Model, load_model
    from support.trainers_tiny import tiny_text_encoder, tiny_vae
    from support.vc2_fixtures import TINY_WEIGHTS

    base = load_model(str(TINY_WEIGHTS), dtype=weights)
    model = VC2Model(unet=base.unet, schedule=base.schedule, vae=tiny_vae(), text_encoder=tiny_text_encoder())
    run = loop.start_training(model, concept, loop.TrainSettings(**{**FAST, "precision": precision}))
    loop.train(run, 2)
    assert all(np.isfinite(run.losses)) and all(p.dtype == torch.float32 for p in run.params)
    assert run.scaler.is_enabled() == scaled  # fp16 compute (setting or fp16 base weights) uses a GradScaler


def test_api_cancel_keeps_a_checkpoint_and_saves_no_lora(model, tmp_path):
    from gameanim.core.progress import CancelToken

    data = tmp_path / "data"
    write_concept_folder(data, count=2)
    token = CancelToken()

    def cancel_after_two(done, total):
        if done == 2:
            token.cancel()

    ckpt = tmp_path / "ckpt.pt"
    common = dict(width=64, height=64, output_dir=tmp_path / "loras", checkpoint_path=str(ckpt), **FAST)
    with pytest.raises(Cancelled):
        api.train_lora(model, data, steps=5, progress=token.progress(cancel_after_two), **common)
    assert ckpt.is_file() and not (tmp_path / "loras").exists()
    run = api.train_lora(model, data, steps=5, **common)
    assert run.step == 5 and len(run.losses) == 5 and run.saved_path.is_file()


def test_repeat_still_mode_trains_static_clips(model, concept):
    run = loop.start_training(model, concept, loop.TrainSettings(**FAST, still_mode="repeat", frames=3))
    x0, _, kind = loop._draw(run)
    assert kind == "still" and x0.shape[2] == 3 and torch.equal(x0[:, :, 0], x0[:, :, 2])
    loop.train(run, 1)
    assert np.isfinite(run.losses[0])


def test_a_lora_fits_the_same_base_loaded_in_half_precision(trained, tmp_path):
    from gameanim.nodes.vc2.model import load_model
    from support.vc2_fixtures import TINY_WEIGHTS

    run, _ = trained
    path = save_lora(run.lora_state(), tmp_path, "hero", run.metadata())
    for dtype in ("bf16", "fp16"):
        half = load_model(str(TINY_WEIGHTS), dtype=dtype, vae=False, text_encoder=False)
        distance = lora_mod.signature_distance(
            lora_mod.base_signature(half.unet), lora_mod.base_signature(run.model.unet)
        )
        assert distance < lora_mod.SIGNATURE_TOLERANCE / 4
        assert api.apply_lora(half, path, 1.0).unet.dtype == half.unet.dtype
