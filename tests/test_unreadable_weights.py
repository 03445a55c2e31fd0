"""Every loader turns a file that is not a checkpoint at all into a ModelFileError naming the file.

A text file saved under a weight file's name (a failed download that wrote an HTML error page, a
mis-copied README) must not surface as a ``KeyError`` from the unpickler or a Rust panic message.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gameanim import api
from gameanim.core.errors import ModelFileError
from gameanim.nodes.animegamer.decoder.representation import read_representation
from gameanim.nodes.animegamer.mllm.tokenizer import load_tokenizer
from gameanim.nodes.motion.flow import load_raft
from gameanim.trainers.lora_file import read_lora
from support.animegamer_mllm_fixtures import tokenizer_dir

# A download tool's error text saved as the model file (the unpickler raises KeyError on its first byte).
TEXT = "huggingface-cli download failed: 401 Client Error: Unauthorized for url\n" * 3


def _text_file(folder: Path, name: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEXT)
    return path


LOADERS = {
    "vc2 .ckpt": ("model.ckpt", api.load_vc2, "VideoCrafter2"),
    "vc2 .safetensors": ("model.safetensors", api.load_vc2, "VideoCrafter2"),
    "animegamer decoder": ("mp_rank_00_model_states.pt", api.load_animegamer_decoder, "PyTorch checkpoint"),
    "animegamer vae": ("3d-vae.pt", api.load_animegamer_vae, "PyTorch checkpoint"),
    "raft": ("raft_small.pth", lambda p: load_raft(p, "raft_small"), "PyTorch checkpoint"),
    "lora": ("concept.safetensors", read_lora, "safetensors"),
    "representation": ("turn.pt", read_representation, "PyTorch checkpoint"),
    "mllm": ("pytorch_model.bin", lambda p: api.load_animegamer_mllm(p, tokenizer_dir()), "PyTorch checkpoint"),
}


@pytest.mark.parametrize("name", list(LOADERS))
def test_text_file_under_a_weight_name_is_a_model_file_error(tmp_path, name):
    file_name, load, expected = LOADERS[name]
    path = _text_file(tmp_path, file_name)
    with pytest.raises(ModelFileError) as caught:
        load(path)
    message = str(caught.value)
    assert str(path) in message and expected in message


def test_vc2_text_ckpt_was_a_key_error_before(tmp_path):
    """The issue's case: the unpickler itself raises KeyError on text; the loader must not let it through."""
    import torch

    path = _text_file(tmp_path, "model.ckpt")
    with pytest.raises(KeyError):
        torch.load(path, weights_only=True)
    with pytest.raises(ModelFileError, match="not a checkpoint at all"):
        api.load_vc2(path)


def test_text_tokenizer_model_is_a_model_file_error(tmp_path):
    folder = tmp_path / "animegamer_tokenizer"
    shutil.copytree(tokenizer_dir(), folder)
    (folder / "tokenizer.model").write_text(TEXT)
    with pytest.raises(ModelFileError, match="tokenizer.model"):
        load_tokenizer(folder)


def test_text_mistral_base_weights_are_a_model_file_error(tmp_path):
    """The base model folder has a config.json but its model.safetensors is a text file."""
    from integration.animegamer_mllm_models import write_tiny_animegamer_mllm

    write_tiny_animegamer_mllm(tmp_path / "models", tmp_path / "input")
    base = tmp_path / "models" / "LLM" / "Mistral-7B-Instruct-v0.1"
    (base / "model.safetensors").write_text(TEXT)
    weights = tmp_path / "models" / "animegamer" / "MLLM-Qiqi" / "pytorch_model.bin"
    with pytest.raises(ModelFileError, match="Mistral"):
        api.load_animegamer_mllm(weights, tokenizer_dir(), base=base, config={"dtype": "float32"})


def test_text_weights_in_a_diffusers_vae_folder_are_a_model_file_error(tmp_path):
    from diffusers import AutoencoderKLCogVideoX

    folder = tmp_path / "vae"
    tiny = AutoencoderKLCogVideoX(
        block_out_channels=(8,),
        down_block_types=("CogVideoXDownBlock3D",),
        up_block_types=("CogVideoXUpBlock3D",),
        latent_channels=4,
        layers_per_block=1,
        norm_num_groups=4,
    )
    tiny.save_pretrained(folder)
    _text_file(folder, "diffusion_pytorch_model.safetensors")
    with pytest.raises(ModelFileError, match="AutoencoderKLCogVideoX"):
        api.load_animegamer_vae(folder)


def test_truncated_safetensors_is_reported_as_a_damaged_safetensors_file(tmp_path):
    import torch
    from gameanim.core.weights import read_state_dict
    from safetensors.torch import save_file

    path = tmp_path / "model.safetensors"
    save_file({"w": torch.zeros(64, 64)}, str(path))
    path.write_bytes(path.read_bytes()[:4000])
    with pytest.raises(ModelFileError, match="not a readable .safetensors file"):
        read_state_dict(path)
