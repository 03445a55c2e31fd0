"""Tiny / random Wan 2.1 VACE models under the released file names, for the rig-to-sprites workflow.

* The DiT is a tiny Wan 2.1 VACE in the released key layout (``blocks.N.self_attn.q.weight``,
  ``vace_blocks.N.before_proj``, ``head.modulation`` …): dim 128 (one 128-wide head, the smallest
  ComfyUI's detection accepts, since it derives ``num_heads = dim // 128``), 2 blocks, 1 VACE block.
  ComfyUI's ``UNETLoader`` detects it as ``WAN21_Vace`` from the keys and shapes alone.
* ComfyUI builds the Wan 2.1 VAE with fixed sizes (dim 96), so it cannot be made tiny: it is written
  at full size (127 M parameters, fp16, like the released file) with random weights, its key names and
  shapes taken from ComfyUI's own ``WanVAE`` module in a subprocess of ComfyUI's Python.
* UMT5-XXL (5.7 B parameters) cannot be made tiny either; :data:`STANDIN_DIR` is a test-only custom
  node that stands in for ``CLIPLoader`` and yields text embeddings of the real shape [1, 512, 4096].
"""

from __future__ import annotations

import subprocess
from pathlib import Path

DIT_NAME = "wan2.1_vace_1.3B_fp16.safetensors"
VAE_NAME = "wan_2.1_vae.safetensors"
TEXT_ENCODER_NAME = "umt5_xxl_fp8_e4m3fn_scaled.safetensors"
STANDIN_DIR = Path(__file__).resolve().parent / "standin_umt5"
STANDIN_NODE = "GameAnimTestStandInUMT5Loader"

TEXT_DIM = 4096  # UMT5-XXL width; ComfyUI's Wan config fixes it
FREQ_DIM = 256
LATENT_CHANNELS = 16
PATCH = (1, 2, 2)
VACE_IN_DIM = 96  # 16 inactive + 16 reactive latent channels + 64 mask channels (8x8 pixels folded)

_VAE_SCRIPT = """
import sys
sys.path.insert(0, ".")
import torch
from safetensors.torch import save_file
from comfy.cli_args import args

args.cpu = True  # before model_management is imported: no GPU probing
from comfy.ldm.wan.vae import WanVAE

model = WanVAE(dim=96, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
               temperal_downsample=[False, True, True], dropout=0.0)
gen = torch.Generator().manual_seed(0)
out = {}
for name, tensor in model.state_dict().items():
    if name.endswith("gamma"):
        value = torch.ones(tensor.shape)
    elif name.endswith("bias"):
        value = torch.zeros(tensor.shape)
    else:
        fan_in = max(1, tensor[0].numel())
        value = torch.randn(tensor.shape, generator=gen) / fan_in ** 0.5
    out[name] = value.to(torch.float16).contiguous()
save_file(out, sys.argv[1])
"""


def _linear(state: dict, gen, name: str, out_dim: int, in_dim: int) -> None:
    import torch

    state[f"{name}.weight"] = torch.randn((out_dim, in_dim), generator=gen) / in_dim**0.5
    state[f"{name}.bias"] = torch.zeros(out_dim)


def _attention(state: dict, gen, name: str, dim: int) -> None:
    import torch

    for part in ("q", "k", "v", "o"):
        _linear(state, gen, f"{name}.{part}", dim, dim)
    state[f"{name}.norm_q.weight"] = torch.ones(dim)
    state[f"{name}.norm_k.weight"] = torch.ones(dim)


def _block(state: dict, gen, name: str, dim: int, ffn_dim: int) -> None:
    import torch

    state[f"{name}.modulation"] = torch.randn((1, 6, dim), generator=gen) * 0.02
    _attention(state, gen, f"{name}.self_attn", dim)
    _attention(state, gen, f"{name}.cross_attn", dim)
    state[f"{name}.norm3.weight"] = torch.ones(dim)
    state[f"{name}.norm3.bias"] = torch.zeros(dim)
    _linear(state, gen, f"{name}.ffn.0", ffn_dim, dim)
    _linear(state, gen, f"{name}.ffn.2", dim, ffn_dim)


def tiny_wan_vace_state_dict(dim: int = 128, ffn_dim: int = 256, layers: int = 2, vace_layers: int = 1) -> dict:
    """A Wan 2.1 VACE DiT state dict in the released layout, random weights scaled by 1/sqrt(fan-in)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    state: dict = {}
    patch = PATCH[0] * PATCH[1] * PATCH[2]
    for name, channels in (("patch_embedding", LATENT_CHANNELS), ("vace_patch_embedding", VACE_IN_DIM)):
        state[f"{name}.weight"] = torch.randn((dim, channels, *PATCH), generator=gen) / (channels * patch) ** 0.5
        state[f"{name}.bias"] = torch.zeros(dim)
    _linear(state, gen, "text_embedding.0", dim, TEXT_DIM)
    _linear(state, gen, "text_embedding.2", dim, dim)
    _linear(state, gen, "time_embedding.0", dim, FREQ_DIM)
    _linear(state, gen, "time_embedding.2", dim, dim)
    _linear(state, gen, "time_projection.1", dim * 6, dim)
    for i in range(layers):
        _block(state, gen, f"blocks.{i}", dim, ffn_dim)
    for i in range(vace_layers):
        _block(state, gen, f"vace_blocks.{i}", dim, ffn_dim)
        if i == 0:
            _linear(state, gen, f"vace_blocks.{i}.before_proj", dim, dim)
        _linear(state, gen, f"vace_blocks.{i}.after_proj", dim, dim)
    state["head.modulation"] = torch.randn((1, 2, dim), generator=gen) * 0.02
    _linear(state, gen, "head.head", LATENT_CHANNELS * patch, dim)
    return {k: v.to(torch.float16).contiguous() for k, v in state.items()}


def write_rig_to_sprites_models(models_dir: Path, comfy_dir: Path, comfy_python: str) -> None:
    """The tiny DiT in ``diffusion_models/`` and the random full-size VAE in ``vae/``, under the released names."""
    from safetensors.torch import save_file

    dit = models_dir / "diffusion_models" / DIT_NAME
    dit.parent.mkdir(parents=True, exist_ok=True)
    save_file(tiny_wan_vace_state_dict(), str(dit))
    vae = models_dir / "vae" / VAE_NAME
    vae.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([comfy_python, "-c", _VAE_SCRIPT, str(vae)], cwd=comfy_dir, check=True, timeout=600)


def assert_only_the_text_encoder_is_missing(response, prompt: dict) -> None:
    """An unchanged Wan workflow is valid in real ComfyUI; only the UMT5 file nobody placed is reported."""
    import json

    assert response.status_code == 400
    errors = response.json()["node_errors"]
    (loader,) = [nid for nid, node in prompt.items() if node["class_type"] == "CLIPLoader"]
    assert set(errors) == {loader}, json.dumps(errors, indent=1)
    reasons = errors[loader]["errors"]
    assert [(e["type"], e["extra_info"]["input_name"]) for e in reasons] == [("value_not_in_list", "clip_name")]
    assert prompt[loader]["inputs"]["clip_name"] == TEXT_ENCODER_NAME
