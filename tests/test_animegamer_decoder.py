"""AnimeGamer shot decoder: parity with the original SAT code, key layout at real size, loading errors, sampler."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import gameanim.nodes.animegamer.decoder.convert as dc
import gameanim.nodes.animegamer.decoder.sampler as ds
import pytest
import torch
from gameanim import api
from gameanim.core.errors import InputError, ModelFileError
from gameanim.core.progress import Cancelled, CancelToken
from gameanim.core.weights import safetensors_metadata
from gameanim.nodes.motion.levels import released_flow
from safetensors.torch import load_file

FIXTURE = Path(__file__).parent / "fixtures" / "animegamer_decoder"
MANIFEST = FIXTURE / "manifest_decoder_lora.tsv"  # decoder rows of the reference manifest
TINY_SIZE = {"sample_height": 8, "sample_width": 8, "sample_frames": 5}
TOL = 1e-4


@pytest.fixture(scope="module")
def parity() -> dict[str, torch.Tensor]:
    return load_file(str(FIXTURE / "parity.safetensors"))


@pytest.fixture(scope="module")
def decoder():
    return api.load_animegamer_decoder(FIXTURE / "sat", config=TINY_SIZE)


def _encoder_tokens(decoder, parity):
    t5, clip = parity["t5"], parity["clip"]
    return decoder.encode_conditions(torch.cat([torch.zeros_like(t5), t5]), torch.cat([torch.zeros_like(clip), clip]))


# ----------------------------------------------------------------------------- parity with the SAT original


def test_transformer_matches_sat_with_flow_and_ea(decoder, parity):
    with torch.no_grad():
        out = decoder.transformer(parity["x"], parity["timesteps"], _encoder_tokens(decoder, parity), parity["flows"])
    assert out.shape == parity["out_encoder"].shape
    assert (out - parity["out_encoder"]).abs().max() < TOL
    assert parity["out_encoder"].abs().max() > 1.0  # the reference is not trivially small


def test_transformer_matches_sat_with_mllm_representation(decoder, parity):
    with torch.no_grad():
        tokens = _encoder_tokens(decoder, parity)
        tokens[1] = parity["representation"][0]
        out = decoder.transformer(parity["x"], parity["timesteps"], tokens, parity["flows"])
        other_flow = decoder.transformer(parity["x"], parity["timesteps"], tokens, parity["flows"] * 4)
    assert (out - parity["out_mllm"]).abs().max() < TOL
    assert (other_flow - out).abs().max() > 1e-3  # the flow embedding really is in the path


def test_three_step_sampler_matches_sat(decoder, parity):
    cfg = json.loads((FIXTURE / "config.json").read_text())
    shape = tuple(parity["sampler_noise"].shape[1:])
    with torch.no_grad():
        out = ds.sample(
            decoder.transformer, parity["representation"], decoder.unconditional_tokens(), cfg["flow"], shape,
            steps=cfg["sampler_steps"], seed=cfg["sampler_seed"],
        )  # fmt: skip
        assert torch.equal(
            torch.randn(shape, generator=torch.Generator().manual_seed(cfg["sampler_seed"])), parity["sampler_noise"][0]
        )
        intended = ds.sample(
            decoder.transformer, parity["representation"], decoder.unconditional_tokens(), cfg["flow"], shape,
            steps=cfg["sampler_steps"], seed=cfg["sampler_seed"], cfg_mode="intended",
        )  # fmt: skip
    assert (out - parity["sampler_out"]).abs().max() < TOL
    assert (intended - parity["sampler_out"]).abs().max() > 1e-2


def test_released_dynamic_cfg_schedule():
    sched = ds.make_schedule(50)
    assert sched.timesteps[:3] == [999, 979, 959] and sched.timesteps[-1] == 19
    released = [ds.cfg_scale("released", 6, i, t, 50) for i, t in enumerate(sched.timesteps)]
    assert [round(s, 2) for s in released[:5]] == [2.29, 2.54, 6.97, 6.42, 2.79]
    assert abs(sum(released) / 50 - 3.82) < 0.01
    intended = [ds.cfg_scale("intended", 6, i, t, 50) for i, t in enumerate(sched.timesteps)]
    assert intended == sorted(intended) and intended[0] == 1.0
    assert sched.alpha_sqrt[0] == 0.0 and sched.alpha_sqrt[-1] == 1.0


def test_flow_tables():
    assert [released_flow(level) for level in (1, 2, 3, 4, 5, 0)] == [0.5, 2.5, 10.0, 15.0, 40.0, 40.0]
    assert released_flow(4, "app") == 20.0


# ----------------------------------------------------------------------------- layout and conversion


def _real_sat_meta_state() -> dict[str, torch.Tensor]:
    """The real decoder's SAT keys: SAT model on meta (no LoRA) + the manifest's LoRA/base rows."""
    with open(FIXTURE / "real_sat_keys.tsv") as handle:
        rows = {r["key"]: r["shape"] for r in csv.DictReader(handle, delimiter="\t")}
    with open(MANIFEST) as handle:
        lines = [line for line in handle if not line.startswith("#")]
    manifest = {
        r["key"]: r["shape"] for r in csv.DictReader(lines, delimiter="\t") if r["key"].startswith(dc.SAT_PREFIX)
    }
    assert len(manifest) == 360  # 240 LoRA matrices + 120 base qkv/dense tensors
    for key in manifest:
        if ".original." in key:
            plain = key.replace(".original.", ".")
            assert rows.pop(plain) == manifest[key], plain
    rows.update(manifest)
    return {k: torch.empty([int(d) for d in shape.split("x")], device="meta") for k, shape in rows.items()}


def test_real_sat_layout_converts_with_zero_missing_or_unexpected():
    state = dc.convert_sat_state_dict(_real_sat_meta_state())
    cfg = dc.infer_config(state)
    assert (cfg.width, cfg.num_layers, cfg.num_attention_heads, cfg.time_embed_dim, cfg.in_channels) == (
        1920,
        30,
        30,
        512,
        16,
    )
    assert (cfg.text_embed_dim, cfg.image_embed_dim) == (4096, 768)
    model = dc.build_decoder(cfg, device="meta")
    dc.check_layout(model, state)  # raises with the differing keys
    assert set(model.state_dict()) == set(state)
    assert not any("lora" in k or "matrix_" in k or "pos_embedding" in k for k in state)


def test_lora_is_merged_into_qkv():
    sat = torch.load(FIXTURE / "sat" / "1" / "mp_rank_00_model_states.pt", weights_only=True)["module"]
    base = dc.SAT_PREFIX + "transformer.layers.0.attention.query_key_value."
    a = [sat[base + f"matrix_A.{j}"] for j in range(3)]
    b = [sat[base + f"matrix_B.{j}"] for j in range(3)]
    expected = sat[base + "original.weight"] + torch.cat([bj @ aj for aj, bj in zip(a, b, strict=True)]) / a[0].shape[0]
    state = dc.convert_sat_state_dict(sat)
    q, k, v = (state[f"dit.transformer_blocks.0.attn1.{n}.weight"] for n in ("to_q", "to_k", "to_v"))
    assert torch.allclose(torch.cat([q, k, v]), expected, atol=1e-6)
    assert not any(k.startswith(("conditioner", "first_stage_model")) for k in state)


def test_converted_file_loads_directly_and_matches(tmp_path, decoder, parity):
    target = api.convert_animegamer_decoder(FIXTURE / "sat", tmp_path / "ag.safetensors", dtype="float32")
    meta = safetensors_metadata(target)
    assert meta["format"] == dc.FORMAT and json.loads(meta["config"])["num_layers"] == 2
    loaded = api.load_animegamer_decoder(target, config=TINY_SIZE)
    with torch.no_grad():
        tokens = _encoder_tokens(loaded, parity)
        out = loaded.transformer(parity["x"], parity["timesteps"], tokens, parity["flows"])
    assert (out - parity["out_encoder"]).abs().max() < TOL
    half = api.convert_animegamer_decoder(FIXTURE / "sat", tmp_path / "ag16.safetensors")
    assert safetensors_metadata(half)["dtype"] == "float16"
    assert half.stat().st_size < target.stat().st_size * 0.6
    with pytest.raises(FileExistsError):
        api.convert_animegamer_decoder(FIXTURE / "sat", half)


def test_config_override_and_unknown_key():
    with pytest.raises(InputError, match="Unknown decoder config keys"):
        api.load_animegamer_decoder(FIXTURE / "sat", config={"num_layer": 3})


# ----------------------------------------------------------------------------- bad inputs


def test_truncated_pt_is_a_clear_error(tmp_path):
    data = (FIXTURE / "sat" / "1" / "mp_rank_00_model_states.pt").read_bytes()
    bad = tmp_path / "truncated.pt"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="truncated or corrupt"):
        api.load_animegamer_decoder(bad)


def test_vc2_checkpoint_is_recognised(tmp_path):
    path = tmp_path / "model.ckpt"
    torch.save({"state_dict": {"model.diffusion_model.input_blocks.0.0.weight": torch.zeros(4, 4, 3, 3)}}, path)
    with pytest.raises(ModelFileError, match="UNet checkpoint"):
        api.load_animegamer_decoder(path)


def test_cogvideox_5b_checkpoint_is_recognised(tmp_path):
    folder = tmp_path / "CogVideoX-5b-sat"
    (folder / "1000").mkdir(parents=True)
    (folder / "latest").write_text("1000")
    state = {
        dc.SAT_PREFIX + "mixins.patch_embed.proj.weight": torch.zeros(3072, 16, 2, 2),
        dc.SAT_PREFIX + "mixins.patch_embed.text_proj.weight": torch.zeros(3072, 4096),
        dc.SAT_PREFIX + "mixins.pos_embed.freqs_sin": torch.zeros(2, 2),
    }
    torch.save({"module": state}, folder / "1000" / "mp_rank_00_model_states.pt")
    with pytest.raises(ModelFileError, match="CogVideoX-5B is 3072"):
        api.load_animegamer_decoder(folder)


def test_incomplete_sat_folder_and_foreign_safetensors(tmp_path):
    (tmp_path / "sat").mkdir()
    (tmp_path / "sat" / "latest").write_text("10000")
    with pytest.raises(ModelFileError, match="incomplete"):
        api.load_animegamer_decoder(tmp_path / "sat")
    from safetensors.torch import save_file

    save_file({"transformer_blocks.0.attn1.to_q.weight": torch.zeros(2, 2)}, str(tmp_path / "cog.safetensors"))
    with pytest.raises(ModelFileError, match="diffusers CogVideoX transformer"):
        api.load_animegamer_decoder(tmp_path / "cog.safetensors")


def test_wrong_representation_shape(decoder, parity):
    with pytest.raises(InputError, match=r"\[batch, 226, 128\]"):
        decoder.transformer(parity["x"], parity["timesteps"], torch.zeros(2, 226, 4096), parity["flows"])
    with pytest.raises(InputError, match="226"):
        decoder.decode_shot(torch.zeros(1, 200, 128), steps=1, height=64, width=64, num_frames=5)
    with pytest.raises(InputError, match="t5_feats"):
        decoder.encode_conditions(torch.zeros(1, 30, 4096), torch.zeros(1, 196, 768))


def test_sat_file_is_a_zip_so_it_is_memory_mapped():
    assert zipfile.is_zipfile(FIXTURE / "sat" / "1" / "mp_rank_00_model_states.pt")


# ----------------------------------------------------------------------------- shot, progress, cancel


def test_decode_shot_is_seeded_and_cancellable(decoder, parity):
    rep = parity["representation"]
    seen: list[tuple[int, int]] = []
    a = decoder.decode_shot(
        rep,
        steps=3,
        seed=5,
        num_frames=5,
        height=64,
        width=64,
        motion_level=2,
        progress=lambda d, t: seen.append((d, t)),
    )
    b = decoder.decode_shot(rep, steps=3, seed=5, num_frames=5, height=64, width=64, motion_level=2)
    c = decoder.decode_shot(rep, steps=3, seed=6, num_frames=5, height=64, width=64, motion_level=2)
    assert a.latents.shape == (1, 2, 4, 8, 8) and a.flow == 2.5 and a.frames is None
    assert torch.equal(a.latents, b.latents) and not torch.equal(a.latents, c.latents)
    assert seen == [(1, 3), (2, 3), (3, 3)]
    token = CancelToken()

    def cancel_after_first(done: int, total: int) -> None:
        token.cancel()

    with pytest.raises(Cancelled):
        decoder.decode_shot(
            rep, steps=3, num_frames=5, height=64, width=64, progress=token.progress(cancel_after_first)
        )
    with pytest.raises(InputError, match="4k\\+1"):
        decoder.decode_shot(rep, steps=1, num_frames=6, height=64, width=64)


# ----------------------------------------------------------------------------- VAE


def test_sat_vae_converts_and_decodes_like_the_original():
    from gameanim.nodes.animegamer.decoder.vae import decode_latents, load_vae

    vae_cfg = json.loads((FIXTURE / "config.json").read_text())["vae"]
    width = vae_cfg["ch"]
    config = {
        "block_out_channels": (width,) * 4,
        "latent_channels": vae_cfg["z_channels"],
        "layers_per_block": vae_cfg["num_res_blocks"],
    }
    vae = load_vae(FIXTURE / "3d-vae.pt", config=config)
    ref = load_file(str(FIXTURE / "vae_parity.safetensors"))
    with torch.no_grad():
        video = vae.decode(ref["z"]).sample
    assert video.shape == ref["video"].shape == (1, 3, 17, 32, 32)
    assert (video - ref["video"]).abs().max() < TOL * ref["video"].abs().max()
    latents = (ref["z"] * vae.config.scaling_factor).permute(0, 2, 1, 3, 4)  # sampler layout [B,T,C,H,W]
    frames = decode_latents(vae, latents)
    expected = ((ref["video"].clamp(-1, 1) + 1) / 2).permute(0, 2, 3, 4, 1)
    assert frames.shape == (1, 17, 32, 32, 3) and (frames - expected).abs().max() < 1e-4
    with pytest.raises(ModelFileError, match="does not match"):
        load_vae(FIXTURE / "3d-vae.pt")  # the default (real 2B) layout


def test_unconditional_tokens_are_ea_on_zeros_and_cached(decoder):
    first = decoder.unconditional_tokens()
    zeros = decoder.encode_conditions(torch.zeros(1, 30, 32), torch.zeros(1, 196, 768))
    assert torch.equal(first, zeros) and first.shape == (1, 226, 128)
    assert decoder.unconditional_tokens(2).data_ptr() == first.data_ptr()  # cached, expanded without copying


def test_sequential_offload_and_bf16_paths(parity):
    from accelerate import cpu_offload

    options = {"steps": 2, "seed": 1, "num_frames": 5, "height": 64, "width": 64}
    reference = api.load_animegamer_decoder(FIXTURE / "sat").decode_shot(parity["representation"], **options).latents
    offloaded = api.load_animegamer_decoder(FIXTURE / "sat")
    cpu_offload(offloaded.dit, execution_device=torch.device("cpu"))
    assert offloaded.device.type == "meta"  # weights stream in per module
    streamed = offloaded.decode_shot(parity["representation"], device="cpu", **options).latents
    assert torch.equal(streamed, reference)
    half = api.load_animegamer_decoder(FIXTURE / "sat").to(torch.bfloat16)
    low = half.decode_shot(parity["representation"], **options).latents
    assert low.dtype == torch.float32 and (low - reference).abs().max() < 0.05 * reference.abs().max()
