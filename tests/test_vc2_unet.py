"""VC2 UNet: real key layout (meta device), format detection, and parity with the original code."""

from __future__ import annotations

import gameanim.nodes.vc2.checkpoint as ckpt
import gameanim.nodes.vc2.unet as unet_mod
import pytest
import torch
from gameanim.core.errors import ModelFileError
from safetensors.torch import load_file
from support.vc2_fixtures import PARITY, TINY_WEIGHTS, manifest_state_dict


@pytest.fixture(scope="module")
def real_sd():
    return manifest_state_dict()


def _load_meta(unet_sd):
    layout = unet_mod.infer_layout(unet_sd)
    converted = unet_mod.convert_vc2_unet(unet_sd, layout)
    with torch.device("meta"):
        model = unet_mod.VC2UNet(layout)
    result = model.load_state_dict(converted, strict=True, assign=True)
    return layout, model, result


def test_real_layout_loads_with_no_missing_or_unexpected_keys(real_sd):
    parts = ckpt.read_vc2(real_sd)
    assert len(parts.unet) == 1484
    layout, model, result = _load_meta(parts.unet)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert layout.block_out_channels == (320, 640, 1280, 1280)
    assert layout.attention_levels == (True, True, True, False)
    assert layout.layers_per_block == 2 and layout.cross_attention_dim == 1024 and layout.attention_head_dim == 64
    assert sum(p.numel() for p in model.parameters()) == 1_413_284_420
    assert model.unet.down_blocks[0].attentions[0].transformer_blocks[0].attn1.heads == 5


def test_godmodeanimation_layout_ignores_optimizer_state(real_sd):
    lightning = {
        "epoch": 38,
        "global_step": 2145,
        "pytorch-lightning_version": "2.1.0",
        "state_dict": real_sd,
        "optimizer_states": [{"state": {0: {"exp_avg": torch.empty(3, device="meta")}}, "param_groups": []}],
        "lr_schedulers": [],
        "callbacks": {"ModelCheckpoint": {"best_model_path": ""}},
    }
    parts = ckpt.read_vc2(lightning)
    assert len(parts.unet) == 1484 and len(parts.vae) == 248 and len(parts.text) == 294
    assert set(parts.buffers) == {"alphas_cumprod", "scale_arr"}
    _, _, result = _load_meta(parts.unet)
    assert result.missing_keys == [] and result.unexpected_keys == []


def test_key_map_rejects_a_wrong_shape(real_sd):
    parts = ckpt.read_vc2(real_sd)
    bad = dict(parts.unet)
    bad["input_blocks.1.1.proj_in.weight"] = torch.empty(320, 321, device="meta")
    with pytest.raises(RuntimeError, match="size mismatch"):
        _load_meta(bad)


def _shapes(sd):
    return {k: tuple(v.shape) for k, v in sd.items()}


def test_foreign_checkpoints_are_named(real_sd):
    sd15 = {
        "model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight": torch.empty(320, 768),
        "model.diffusion_model.input_blocks.0.0.weight": torch.empty(320, 4, 3, 3),
        "first_stage_model.encoder.down.0.block.0.conv1.weight": torch.empty(1),
    }
    with pytest.raises(ModelFileError, match=r"Stable Diffusion 1\.x image checkpoint.*Expected a VideoCrafter2"):
        ckpt.read_vc2(sd15)
    dynami = {k: v for k, v in real_sd.items()}
    dynami["model.diffusion_model.input_blocks.0.0.weight"] = torch.empty(320, 8, 3, 3, device="meta")
    dynami["image_proj_model.latents"] = torch.empty(1, 16, 1024, device="meta")
    dynami["embedder.model.visual.conv1.weight"] = torch.empty(1, device="meta")
    with pytest.raises(ModelFileError, match="DynamiCrafter"):
        ckpt.read_vc2(dynami)
    eight = dict(real_sd)
    eight["model.diffusion_model.input_blocks.0.0.weight"] = torch.empty(320, 8, 3, 3, device="meta")
    with pytest.raises(ModelFileError, match="8 input channels"):
        ckpt.read_vc2(eight)
    with pytest.raises(ModelFileError, match="a VAE only"):
        ckpt.read_vc2({k: v for k, v in real_sd.items() if k.startswith("first_stage_model.")})


def test_truncated_and_missing_files(tmp_path):
    data = TINY_WEIGHTS.read_bytes()
    cut = tmp_path / "model.safetensors"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError):
        ckpt.read_vc2(cut)
    pickle_file = tmp_path / "model.ckpt"
    torch.save({"state_dict": load_file(TINY_WEIGHTS)}, pickle_file)
    raw = pickle_file.read_bytes()
    pickle_file.write_bytes(raw[: len(raw) // 3])
    with pytest.raises(ModelFileError, match="truncated or corrupt"):
        ckpt.read_vc2(pickle_file)
    with pytest.raises(ModelFileError, match="does not exist"):
        ckpt.read_vc2(tmp_path / "nope.ckpt")


def test_lightning_pickle_reads_only_the_state_dict(tmp_path):
    weights = load_file(TINY_WEIGHTS)
    path = tmp_path / "swordwield.ckpt"
    torch.save(
        {
            "epoch": 38,
            "state_dict": weights,
            "optimizer_states": [{"state": {0: {"exp_avg": torch.zeros(1000)}}, "param_groups": [{"lr": 6e-5}]}],
            "lr_schedulers": [],
        },
        path,
    )
    parts = ckpt.read_vc2(path)
    assert set(parts.buffers) == {"alphas_cumprod", "scale_arr"}
    assert len(parts.unet) == sum(k.startswith("model.diffusion_model.") for k in weights)


def test_unet_matches_original_videocrafter():
    parts = ckpt.read_vc2(TINY_WEIGHTS)
    model = unet_mod.build_unet(parts.unet)
    ref = load_file(PARITY)
    with torch.no_grad():
        eps = model(ref["unet_x"], ref["unet_t"], ref["unet_context"], ref["unet_fps"])
    assert eps.shape == ref["unet_eps"].shape
    assert (eps - ref["unet_eps"]).abs().max() < 1e-4
    with torch.no_grad():
        other_fps = model(ref["unet_x"], ref["unet_t"], ref["unet_context"], 8)
    assert (other_fps - ref["unet_eps"]).abs().max() > 1e-2  # fps conditioning is live


def test_unprefixed_unet_only_mapping_loads():
    weights = load_file(TINY_WEIGHTS)
    bare = {k.removeprefix("model.diffusion_model."): v for k, v in weights.items() if k.startswith("model.")}
    parts = ckpt.read_vc2(bare)
    assert parts.buffers == {} and len(parts.unet) == len(bare)
    unet_mod.build_unet(parts.unet)


class _HyperParams:
    """Stands for an OmegaConf object that Lightning may pickle next to the state dict."""

    def __init__(self, values):
        self.values = values


def test_lightning_pickle_with_config_objects_loads_without_importing_them(tmp_path, monkeypatch):
    import sys
    import types

    fake = types.ModuleType("fake_omegaconf_for_test")
    _HyperParams.__module__ = fake.__name__
    fake._HyperParams = _HyperParams
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    path = tmp_path / "runjump.ckpt"
    weights = load_file(TINY_WEIGHTS)
    torch.save({"state_dict": weights, "hyper_parameters": _HyperParams({"lr": 6e-5}), "optimizer_states": []}, path)
    monkeypatch.delitem(sys.modules, fake.__name__)
    parts = ckpt.read_vc2(path)
    assert len(parts.unet) == sum(k.startswith("model.diffusion_model.") for k in weights)


def test_channels_last_layout_computes_the_same(monkeypatch):
    """Latents from 16x16 up run in channels-last memory on the CPU; the fixture's 8x8 runs in the default layout."""
    import gameanim.nodes.vc2.unet_forward as forward

    model = unet_mod.build_unet(ckpt.read_vc2(TINY_WEIGHTS).unet)
    gen = torch.Generator().manual_seed(3)
    x, ctx = torch.randn(1, 4, 3, 16, 16, generator=gen), torch.randn(1, 77, 32, generator=gen)
    with torch.no_grad():
        wide = model(x, 981, ctx, 16)
        monkeypatch.setattr(forward, "CHANNELS_LAST_MIN_PIXELS", 10**9)
        plain = model(x, 981, ctx, 16)
    torch.testing.assert_close(wide, plain, atol=1e-5, rtol=1e-5)
