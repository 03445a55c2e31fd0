"""AnimeGamer's MLLM as transformers ``MistralForCausalLM`` + peft LoRA + two small resampler MLPs.

The released ``MLLM-<char>/pytorch_model.bin`` is the state dict of ``ContinuousLVLM_Video``: the
peft-wrapped LLM under ``llm.base_model.model.…`` and ``input_resampler.proj.*`` /
``output_resampler.proj.*``.  :class:`AnimeGamerMLLM` has exactly those module names, so the file
loads onto it key for key.  Unlike the released loader (``strict=False``, missing keys only
printed) every key we need must be present with the right shape; the frozen base weights may come
from a Mistral-7B-Instruct-v0.1 folder instead.  Keys we do not know are reported on
``unexpected_keys`` and in the log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ....core.errors import InputError, ModelFileError
from ....core.weights import read_state_dict
from .tokenizer import VOCAB_SIZE, TokenIds, load_tokenizer

logger = logging.getLogger("gameanim")

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
SAVED_NORMS = ("input_layernorm", "post_attention_layernorm", "norm")
LLM_PREFIX = "llm.base_model.model."
BASE_FILES = ("config.json", "model-*.safetensors or pytorch_model-*.bin", "tokenizer.model")


class ProjectionLayer(nn.Module):
    """Linear → GELU → Linear under ``proj`` (the released resampler; its other arguments are unused)."""

    def __init__(self, input_dim: int, output_dim: int) -> None:
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(input_dim, output_dim), nn.GELU(), nn.Linear(output_dim, output_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class AnimeGamerMLLM(nn.Module):
    """The peft-wrapped LLM, the resamplers, and the tokenizer they were trained with."""

    def __init__(self, llm: nn.Module, width: int, hidden: int, tokenizer: Any, token_ids: TokenIds) -> None:
        super().__init__()
        self.llm = llm
        self.input_resampler = ProjectionLayer(width, hidden)
        self.output_resampler = ProjectionLayer(hidden, width)
        self.tokenizer = tokenizer
        self.token_ids = token_ids
        self.width = width
        self.unexpected_keys: list[str] = []

    @property
    def dtype(self) -> torch.dtype:
        return self.output_resampler.proj[0].weight.dtype

    @property
    def device(self) -> torch.device:
        return self.output_resampler.proj[0].weight.device

    def embed(self, ids: list[int]) -> torch.Tensor:
        """Input embeddings ``(1, L, hidden)`` of ``ids``."""
        table = self.llm.get_input_embeddings()
        return table(torch.tensor([ids], device=self.device))

    def decoder(self) -> nn.Module:
        """The bare ``MistralModel`` (its output is the final-norm hidden state)."""
        return self.llm.base_model.model.model

    def causal_lm(self) -> nn.Module:
        """The peft-wrapped causal LM whose forward returns logits (LoRA active)."""
        return self.llm


def _dtype(value: Any) -> torch.dtype:
    if isinstance(value, torch.dtype):
        return value
    found = getattr(torch, str(value).removeprefix("torch."), None)
    if not isinstance(found, torch.dtype) or not found.is_floating_point:
        raise InputError(f"Unknown compute dtype {value!r}; use bfloat16 (released), float16 or float32.")
    return found


def _lora_rank(state: Mapping[str, torch.Tensor]) -> int:
    ranks = {v.shape[0] for k, v in state.items() if k.endswith("lora_A.default.weight")}
    if len(ranks) != 1:
        found = "none" if not ranks else ", ".join(str(r) for r in sorted(ranks))
        raise ModelFileError(
            f"The AnimeGamer MLLM weights should hold LoRA matrices of one rank (lora_A.default.weight); found {found}. "
            "Is this MLLM-<character>/pytorch_model.bin from huggingface.co/TencentARC/AnimeGamer?"
        )
    return ranks.pop()


def _resampler_dims(state: Mapping[str, torch.Tensor]) -> tuple[int, int]:
    needed = ("input_resampler.proj.0.weight", "output_resampler.proj.2.weight")
    missing = [k for k in needed if k not in state]
    if missing:
        raise ModelFileError(
            f"The AnimeGamer MLLM weights lack {', '.join(missing)}: this is not an MLLM-<character>/pytorch_model.bin."
        )
    hidden, width = state["input_resampler.proj.0.weight"].shape
    return int(width), int(hidden)


def _check_base_folder(base: str | os.PathLike[str]) -> Path:
    folder = Path(base)
    weights = list(folder.glob("*.safetensors")) + list(folder.glob("pytorch_model*.bin")) if folder.is_dir() else []
    if not folder.is_dir() or not (folder / "config.json").is_file() or not weights:
        raise ModelFileError(
            f"The base model folder {folder} is missing or incomplete: it needs {', '.join(BASE_FILES)}. "
            "Download mistralai/Mistral-7B-Instruct-v0.1 from huggingface.co into models/LLM/Mistral-7B-Instruct-v0.1/."
        )
    return folder


def _base_model(state: Mapping[str, torch.Tensor], base: Any, config: Mapping[str, Any] | None, dtype: torch.dtype):
    from safetensors import SafetensorError
    from transformers import MistralConfig, MistralForCausalLM

    overrides = dict(config or {})
    overrides.pop("dtype", None)
    if base is not None:
        folder = _check_base_folder(base)
        try:
            model = MistralForCausalLM.from_pretrained(str(folder), dtype=dtype, **overrides)
        except (OSError, ValueError, KeyError, RuntimeError, SafetensorError) as exc:
            raise ModelFileError(
                f"The Mistral base model in {folder} could not be read ({type(exc).__name__}: {exc}). Expected "
                f"mistralai/Mistral-7B-Instruct-v0.1 ({', '.join(BASE_FILES)})."
            ) from exc
    else:
        if not any(k.endswith("base_layer.weight") for k in state):
            raise ModelFileError(
                "The AnimeGamer MLLM weights hold only the fine-tuned parts (no base_layer weights), so the base "
                "model is needed: pass the Mistral-7B-Instruct-v0.1 folder (models/LLM/Mistral-7B-Instruct-v0.1/ "
                f"with {', '.join(BASE_FILES)})."
            )
        model = MistralForCausalLM._from_config(MistralConfig(**overrides), dtype=dtype)
    embed = state.get(LLM_PREFIX + "model.embed_tokens.weight")
    if embed is None or embed.shape[0] != VOCAB_SIZE:
        found = "no embed_tokens" if embed is None else f"{embed.shape[0]} rows"
        raise ModelFileError(
            f"The AnimeGamer MLLM weights have {found} in llm.base_model.model.model.embed_tokens.weight; "
            f"expected a vocabulary of {VOCAB_SIZE}."
        )
    model.resize_token_embeddings(VOCAB_SIZE, mean_resizing=False)
    return model


def _wrap_lora(model: nn.Module, rank: int) -> nn.Module:
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=rank,
        lora_alpha=rank,
        lora_dropout=0.0,
        target_modules=list(LORA_TARGETS),
        modules_to_save=list(SAVED_NORMS),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def _required(key: str, from_base: bool) -> bool:
    """Whether the weights file must hold ``key`` (frozen base weights may come from the base folder)."""
    if key.startswith(("input_resampler.", "output_resampler.")):
        return True
    trained = ("lora_A.default.", "lora_B.default.", "modules_to_save.default.", "embed_tokens.", "lm_head.")
    return True if any(t in key for t in trained) else not from_base


def load_animegamer_mllm(
    weights: str | os.PathLike[str] | Mapping[str, torch.Tensor],
    tokenizer: str | os.PathLike[str],
    base: str | os.PathLike[str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> AnimeGamerMLLM:
    """Build the MLLM from AnimeGamer's weights (path or mapping), its tokenizer folder and optionally the base.

    ``config`` holds ``MistralConfig`` keyword overrides (tests build tiny models); its ``dtype`` entry
    picks the compute dtype (default bfloat16, the released one).  The LoRA rank is read from the
    ``lora_A`` shapes with alpha = rank (scaling 1.0, as released); the representation width and the
    LLM width from the resampler shapes.
    """
    dtype = _dtype((config or {}).get("dtype", "bfloat16"))
    tok, token_ids = load_tokenizer(tokenizer)
    state = dict(weights) if isinstance(weights, Mapping) else read_state_dict(weights)
    rank = _lora_rank(state)
    width, hidden = _resampler_dims(state)
    llm = _wrap_lora(_base_model(state, base, config, dtype), rank)
    model = AnimeGamerMLLM(llm, width, hidden, tok, token_ids).to(dtype)
    expected = model.state_dict()
    missing = [k for k in expected if k not in state and _required(k, base is not None)]
    if missing:
        raise ModelFileError(
            f"The AnimeGamer MLLM weights lack {len(missing)} tensors we need, e.g. {', '.join(missing[:5])}. "
            "Use the complete MLLM-<character>/pytorch_model.bin (and the base folder if it holds only LoRA weights)."
        )
    wrong = [
        f"{k} {tuple(v.shape)} (expected {tuple(expected[k].shape)})"
        for k, v in state.items()
        if k in expected and v.shape != expected[k].shape
    ]
    if wrong:
        raise ModelFileError(
            f"{len(wrong)} AnimeGamer MLLM tensors have the wrong shape, e.g. {'; '.join(wrong[:3])}. "
            "The base model and the MLLM weights do not belong together (AnimeGamer uses Mistral-7B-Instruct-v0.1)."
        )
    model.unexpected_keys = sorted(k for k in state if k not in expected)
    if model.unexpected_keys:
        logger.warning(
            "AnimeGamer MLLM: %d unexpected keys ignored, e.g. %s",
            len(model.unexpected_keys),
            model.unexpected_keys[:5],
        )
    with torch.no_grad():
        model.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=False)
    return model.train(False).requires_grad_(False)
