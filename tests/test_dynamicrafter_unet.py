"""DynamiCrafter family: real key layouts (meta device), format detection, UNet and Resampler parity."""

from __future__ import annotations

import gameanim.nodes.dynamicrafter.checkpoint as ckpt
import pytest
import torch
from gameanim.core.errors import InputError, ModelFileError
from gameanim.nodes.dynamicrafter.image_encoder import build_image_encoder
from gameanim.nodes.dynamicrafter.resampler import build_resampler
from gameanim.nodes.dynamicrafter.unet import build_dc_unet
from gameanim.nodes.vc2.text_encoder import build_text_encoder
from safetensors.torch import load_file
from support.dynamicrafter_fixtures import PARITY, TINY_WEIGHTS, fixture_meta, manifest_state_dict

UNET_PARAMS = 1_438_854_980  # manifest group model.diffusion_model
RESAMPLER_PARAMS = 48_787_456  # manifest group image_proj_model
VISUAL_PARAMS = 632_076_800  # ViT-H/14 visual tower inside the embedder group


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.fixture(scope="module")
def dc512():
    return manifest_state_dict("dynamicrafter_512")


@pytest.fixture(scope="module")
def toon():
    return manifest_state_dict("tooncrafter_512_interp")


@pytest.fixture(scope="module")
def tiny():
    weights = load_file(TINY_WEIGHTS)
    parity = load_file(PARITY)
    return ckpt.read_dynamicrafter(weights), parity, fixture_meta()


def _check_real(parts: ckpt.DCParts) -> None:
    unet = build_dc_unet(parts.unet)  # strict: raises on any missing or unexpected key
    assert _count(unet) == UNET_PARAMS
    layout = unet.layout
    assert layout.in_channels == 8 and layout.block_out_channels == (320, 640, 1280, 1280)
    assert layout.attention_levels == (True, True, True, False) and layout.cross_attention_dim == 1024
    assert len(unet.image_processors) == 16  # every spatial transformer: 6 down, 1 mid, 9 up
    assert unet.unet.down_blocks[0].attentions[0].transformer_blocks[0].attn2.heads == 5
    proj = build_resampler(parts.image_proj)
    assert _count(proj) == RESAMPLER_PARAMS
    assert proj.config_original == {
        "dim": 1024, "depth": 4, "embedding_dim": 1280, "output_dim": 1024, "ff_mult": 4,
        "dim_head": 64, "heads": 12, "num_queries": 16, "video_length": 16,
    }  # fmt: skip
    assert _count(build_image_encoder(parts.image_encoder)) == VISUAL_PARAMS
    assert _count(build_text_encoder(parts.text)) == 354_032_640  # logit_scale is not part of the tower
    assert set(parts.buffers) == {"alphas_cumprod", "scale_arr"}


def test_dynamicrafter_512_layout_loads_with_no_missing_or_unexpected_keys(dc512):
    parts = ckpt.read_dynamicrafter(dc512)
    assert (len(parts.unet), len(parts.image_proj), len(parts.image_encoder)) == (1516, 51, 392)
    assert len(parts.text) == 294 and len(parts.vae) == 248 and not parts.dual_reference_vae
    assert parts.description.startswith("DynamiCrafter")
    _check_real(parts)


def test_tooncrafter_layout_is_recognised_with_its_dual_reference_vae(toon):
    parts = ckpt.read_dynamicrafter(toon)
    assert len(parts.vae) == 396 and parts.dual_reference_vae and parts.description.startswith("ToonCrafter")
    _check_real(parts)


def test_godmodeanimation_run_lightning_checkpoint_reads_only_the_state_dict(dc512):
    lightning = {
        "epoch": 19,
        "global_step": 1080,
        "pytorch-lightning_version": "2.1.0",
        "state_dict": dc512,
        "optimizer_states": [{"state": {0: {"exp_avg": torch.empty(3, device="meta")}}, "param_groups": []}],
        "lr_schedulers": [],
        "callbacks": {"ModelCheckpoint": {"best_model_path": ""}},
    }
    parts = ckpt.read_dynamicrafter(lightning)
    assert len(parts.unet) == 1516 and len(parts.image_proj) == 51
    assert _count(build_dc_unet(parts.unet)) == UNET_PARAMS


def test_old_framestride_embed_name_is_renamed(tiny):
    parts, parity, meta = tiny
    old = {k.replace("fps_embedding.", "framestride_embed."): v for k, v in parts.unet.items()}
    assert any(k.startswith("framestride_embed.") for k in old)
    unet = build_dc_unet(old)
    out = unet(parity["unet_x"], parity["unet_t"], parity["unet_context"], parity["unet_fs"])
    torch.testing.assert_close(out, parity["unet_out"], atol=1e-4, rtol=1e-4)


def test_wrong_checkpoints_are_named(dc512):
    vc2_like = {k: v for k, v in dc512.items() if not k.startswith(("image_proj_model.", "embedder."))}
    vc2_like = {k: v for k, v in vc2_like.items() if "to_k_ip" not in k and "to_v_ip" not in k}
    vc2_like["model.diffusion_model.input_blocks.0.0.weight"] = torch.empty(320, 4, 3, 3, device="meta")
    with pytest.raises(ModelFileError, match="VideoCrafter2 text-to-video.*VC2 loader"):
        ckpt.read_dynamicrafter(vc2_like)
    sd15 = {
        "model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight": torch.empty(320, 768),
        "first_stage_model.encoder.down.0.block.0.conv1.weight": torch.empty(1),
    }
    with pytest.raises(ModelFileError, match=r"Stable Diffusion 1\.x.*Expected a DynamiCrafter"):
        ckpt.read_dynamicrafter(sd15)


def test_missing_file_is_a_model_file_error(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        ckpt.read_dynamicrafter(tmp_path / "model.ckpt")


@pytest.mark.parametrize(
    ("context", "fs", "expected"),
    [
        ("unet_context", "unet_fs", "unet_out"),  # 77 + T*16 tokens: each frame its own image tokens
        ("unet_context_shared", "unet_fs", "unet_out_shared"),  # any other length: every frame sees all
        ("unet_context", None, "unet_out_default_fs"),  # fs absent: the config's default_fs (24)
    ],
)
def test_unet_matches_the_original(tiny, context, fs, expected):
    parts, parity, meta = tiny
    unet = build_dc_unet(parts.unet, {"default_fs": meta["unet"]["default_fs"]})
    with torch.no_grad():
        out = unet(parity["unet_x"], parity["unet_t"], parity[context], parity[fs] if fs else None)
    assert out.shape == (2, 4, 3, 8, 8)
    torch.testing.assert_close(out, parity[expected], atol=1e-4, rtol=1e-4)


def test_per_frame_and_shared_image_tokens_are_different_paths(tiny):
    """The two context layouts of the fixture really exercise different code (else the parity proves less)."""
    _, parity, _ = tiny
    assert not torch.allclose(parity["unet_out"], parity["unet_out_shared"], atol=1e-3)


def test_resampler_matches_the_original(tiny):
    parts, parity, meta = tiny
    cfg = meta["resampler"]
    proj = build_resampler(parts.image_proj, {"heads": cfg["heads"], "dim_head": cfg["dim_head"]})
    assert proj.config_original == cfg
    with torch.no_grad():
        out = proj(parity["resampler_in"])
    assert out.shape == (2, 16 * cfg["video_length"], cfg["output_dim"])
    torch.testing.assert_close(out, parity["resampler_out"], atol=1e-4, rtol=1e-4)


def test_resampler_rejects_an_impossible_head_split(tiny):
    parts, _, _ = tiny
    with pytest.raises(InputError, match="heads x dim_head"):
        build_resampler(parts.image_proj, {"heads": 3, "dim_head": 8})


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_unet_stays_close(tiny, dtype):
    parts, parity, _ = tiny
    unet = build_dc_unet(parts.unet, dtype=dtype)
    assert unet.dtype == dtype
    with torch.no_grad():
        out = unet(parity["unet_x"], parity["unet_t"], parity["unet_context"], parity["unet_fs"]).float()
    assert torch.isfinite(out).all()
    assert (out - parity["unet_out"]).abs().max() < 0.1 * parity["unet_out"].abs().max()


def test_unet_rejects_wrong_inputs(tiny):
    parts, parity, _ = tiny
    unet = build_dc_unet(parts.unet)
    with pytest.raises(InputError, match=r"\[B,8,T,H,W\]"):
        unet(parity["unet_x"][:, :4], parity["unet_t"], parity["unet_context"])
    with pytest.raises(InputError, match="context"):
        unet(parity["unet_x"], parity["unet_t"], parity["unet_context"][:, :10])


def test_image_tower_matches_the_original_embedder(tiny):
    """``FrozenOpenCLIPImageEmbedderV2`` (resize, normalise, tokens before ``ln_post``) around a tiny open_clip."""
    parts, parity, _ = tiny
    encoder = build_image_encoder(parts.image_encoder)
    with torch.no_grad():
        out = encoder(parity["embedder_in"])
    assert out.shape == (2, 257, 24)
    torch.testing.assert_close(out, parity["embedder_out"], atol=1e-4, rtol=1e-4)
