"""Tiny AnimeGamer MLLM files in the real layout, so ``animegamer_turn`` runs end to end in ComfyUI on CPU.

``models/LLM/Mistral-7B-Instruct-v0.1/`` gets a tiny Mistral (config.json + model.safetensors) with
the parity fixture's frozen weights; ``models/animegamer/MLLM-Qiqi/pytorch_model.bin`` gets only the
fine-tuned tensors (LoRA, saved norms, embeddings, lm_head, resamplers) in the released key layout;
the tokenizer folder is AnimeGamer's real one (committed under ``tests/data``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "animegamer_mllm"
TOKENIZER = Path(__file__).resolve().parents[1] / "data" / "animegamer_tokenizer"
PREFIX = "llm.base_model.model."


def write_tiny_animegamer_mllm(models_dir: Path, input_dir: Path, width: int | None = None) -> None:
    """Write the tiny MLLM; ``width`` swaps in seeded random resamplers of that representation width.

    The text pass (and so the parsed states) does not depend on the resamplers; a width that is a
    multiple of 16 lets a tiny CogVideoX decoder (3-D sin-cos positions) take the representation.
    """
    import torch
    from safetensors.torch import load_file, save_file

    state = load_file(str(FIXTURE / "tiny_mllm.safetensors"))
    if width is not None:
        generator = torch.Generator().manual_seed(0)
        old_width = state["output_resampler.proj.0.bias"].shape[0]
        for key, value in list(state.items()):
            if "resampler.proj" in key:
                shape = [width if size == old_width else size for size in value.shape]
                state[key] = 0.1 * torch.randn(shape, generator=generator)
    config = json.loads((FIXTURE / "reference.json").read_text())["config"]
    frozen = (".base_layer.", ".original_module.")
    base = {}
    for key, value in state.items():
        if key.startswith(PREFIX) and any(f in key for f in frozen):
            base[key[len(PREFIX) :].replace(".base_layer.", ".").replace(".original_module.", ".")] = value
    for name in ("model.embed_tokens.weight", "lm_head.weight"):
        base[name] = state[PREFIX + name][:32000].clone()
    llm = models_dir / "LLM" / "Mistral-7B-Instruct-v0.1"
    llm.mkdir(parents=True, exist_ok=True)
    hf_config = {**config, "vocab_size": 32000, "model_type": "mistral", "architectures": ["MistralForCausalLM"]}
    (llm / "config.json").write_text(json.dumps(hf_config))
    save_file({k: v.contiguous() for k, v in base.items()}, str(llm / "model.safetensors"), metadata={"format": "pt"})
    mllm = models_dir / "animegamer" / "MLLM-Qiqi"
    mllm.mkdir(parents=True, exist_ok=True)
    trained = {k: v for k, v in state.items() if not any(f in k for f in frozen)}
    torch.save(trained, mllm / "pytorch_model.bin")
    shutil.copytree(TOKENIZER, models_dir / "animegamer" / "animegamer_tokenizer", dirs_exist_ok=True)
