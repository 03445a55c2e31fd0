"""Released AnimeGamer decoder checkpoints (SAT) -> our layout, and our compact converted file.

Sources we accept, detected by content:

* the SAT directory ``VDM_Decoder-<character>/`` (``latest`` names the step; ``<step>/mp_rank_00_model_states.pt``);
* that ``mp_rank_00_model_states.pt`` itself (the released one is ~26.6 GB and probably carries T5/VAE too: only
  ``model.diffusion_model.*`` tensors are read, memory-mapped with ``weights_only=True``);
* our converted ``.safetensors`` (metadata ``format = gameanim.animegamer_decoder``), written by
  :func:`convert_to_file` so later loads take seconds.

The SAT -> diffusers key map follows diffusers' ``convert_cogvideox_to_diffusers.py``; the SAT ``lora2`` LoRA
(r=64, lora_alpha 1, so scaling 1/r, on ``query_key_value`` in 3 partitions and on ``dense``) is merged first:
``W += cat_j(B_j @ A_j) / r``.  ``pos_embedding`` (recomputed by diffusers), ``freqs_*``, leftover SAT token/position embeddings, ``conditioner.*``,
``first_stage_model.*``, ``clip_img_encoder.*`` and the unused ``output_mix_layer_norm`` are dropped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ....core.errors import InputError, ModelFileError
from ....core.weights import read_state_dict, safetensors_metadata, save_safetensors_atomic
from .model import COND_TOKENS, AnimeGamerDecoder, DecoderConfig, build_decoder

SAT_PREFIX = "model.diffusion_model."
FORMAT = "gameanim.animegamer_decoder"
FORMAT_VERSION = "1"
HEAD_DIM = 64  # CogVideoX's head width; the qk-LayerNorm shape confirms it when present
_DROPPED = ("mixins.pos_embed.pos_embedding", "mixins.patch_embed.output_mix_layer_norm.")
_DROPPED_TOP = ("conditioner.", "first_stage_model.", "clip_img_encoder.", "model_ema.")

_RENAMES = (
    ("transformer.final_layernorm.", "dit.norm_final."),
    ("mixins.patch_embed.proj.", "dit.patch_embed.proj."),
    ("mixins.final_layer.norm_final.", "dit.norm_out.norm."),
    ("mixins.final_layer.linear.", "dit.proj_out."),
    ("mixins.final_layer.adaLN_modulation.1.", "dit.norm_out.linear."),
    ("time_embed.0.", "dit.time_embedding.linear_1."),
    ("time_embed.2.", "dit.time_embedding.linear_2."),
    ("flow_embed.0.", "dit.ofs_embedding.linear_1."),
    ("flow_embed.2.", "dit.ofs_embedding.linear_2."),
    ("mixins.patch_embed.text_proj.", "cond_encoder.text_proj."),
    ("mixins.patch_embed.ip_proj.", "cond_encoder.image_proj."),
    ("mixins.patch_embed.txt_mix_layer_norm.", "cond_encoder.text_norm."),
    ("mixins.patch_embed.ip_mix_layer_norm.", "cond_encoder.image_norm."),
)
_LAYER_RENAMES = (
    ("attention.dense.", "attn1.to_out.0."),
    ("mlp.dense_h_to_4h.", "ff.net.0.proj."),
    ("mlp.dense_4h_to_h.", "ff.net.2."),
    ("input_layernorm.", "norm1.norm."),
    ("post_attention_layernorm.", "norm2.norm."),
)


# ----------------------------------------------------------------------------- locating files


def resolve_sat_file(source: str | os.PathLike[str]) -> Path:
    """The ``mp_rank_00_model_states.pt`` of a SAT checkpoint directory (or the file itself)."""
    path = Path(source)
    if path.is_file():
        return path
    if not path.is_dir():
        raise ModelFileError(f"{path} does not exist.")
    latest = path / "latest"
    if latest.is_file():
        step = latest.read_text().strip()
        candidate = path / step / "mp_rank_00_model_states.pt"
        if candidate.is_file():
            return candidate
        raise ModelFileError(
            f"{path}/latest names step '{step}' but {candidate} is missing. The SAT checkpoint folder is incomplete: "
            "copy the whole VDM_Decoder-<character> folder (latest + <step>/mp_rank_00_model_states.pt)."
        )
    found = sorted(path.glob("*/mp_rank_00_model_states.pt"))
    if len(found) == 1:
        return found[0]
    listing = ", ".join(sorted(p.name for p in path.iterdir())[:10]) or "nothing"
    raise ModelFileError(
        f"{path} is not a SAT checkpoint folder: expected a 'latest' file and <step>/mp_rank_00_model_states.pt, "
        f"found {listing}. Point the loader at VDM_Decoder-<character>/ from huggingface.co/TencentARC/AnimeGamer, "
        "or at a file converted by the AnimeGamer Decoder Convert node."
    )


def is_converted_file(path: str | os.PathLike[str]) -> bool:
    try:
        return Path(path).is_file() and safetensors_metadata(path).get("format") == FORMAT
    except ModelFileError:
        return False


# ----------------------------------------------------------------------------- recognising content


def _describe_foreign(keys: list[str], shapes: Mapping[str, tuple[int, ...]]) -> str | None:
    """A sentence naming what a wrong file is, or None when it looks like the AnimeGamer decoder."""
    joined = "\n".join(keys[:2000])
    if "input_blocks." in joined or "middle_block." in joined:
        return (
            "It is a UNet checkpoint (input_blocks/middle_block keys), e.g. VideoCrafter2 / Stable Diffusion, not the "
            "AnimeGamer CogVideoX decoder. Load it with the VideoCrafter2 loader instead."
        )
    if "transformer_blocks.0.attn1.to_q.weight" in joined and not any(k.startswith("dit.") for k in keys):
        return (
            "It is a diffusers CogVideoX transformer, which lacks AnimeGamer's flow embedding and E_a condition "
            "encoder. Use the released SAT folder VDM_Decoder-<character>/ or a file made by the Convert node."
        )
    proj = shapes.get(SAT_PREFIX + "mixins.patch_embed.proj.weight")
    width = proj[0] if proj else None
    if width is not None and width != 1920 and not any("flow_embed" in k for k in keys):
        return (
            f"It is a CogVideoX SAT checkpoint of width {width} (CogVideoX-5B is 3072) without AnimeGamer's flow "
            "embedding. AnimeGamer's decoder is CogVideoX-2B (width 1920) with flow_embed and E_a weights."
        )
    if width is not None and not any("flow_embed" in k for k in keys):
        return (
            "It is a plain CogVideoX SAT checkpoint (no flow_embed, no E_a ip_proj): AnimeGamer's decoder adds both. "
            "Use VDM_Decoder-<character>/ from huggingface.co/TencentARC/AnimeGamer."
        )
    if width is None:
        sample = ", ".join(keys[:5]) or "no tensors"
        return f"It holds no AnimeGamer decoder tensors (expected keys under '{SAT_PREFIX}'); first keys: {sample}."
    return None


# ----------------------------------------------------------------------------- conversion


def _merge_lora(sd: dict[str, torch.Tensor], base: str) -> None:
    """Fold SAT lora2 matrices of linear ``base`` into ``base.weight`` (removing them)."""
    weight_key = base + ".original.weight" if base + ".original.weight" in sd else base + ".weight"
    bias_key = base + ".original.bias" if base + ".original.bias" in sd else base + ".bias"
    weight = sd.pop(weight_key)
    bias = sd.pop(bias_key, None)
    a_keys = sorted((k for k in sd if k.startswith(base + ".matrix_A.")), key=lambda k: int(k.rsplit(".", 1)[1]))
    if a_keys:
        a_list = [sd.pop(k) for k in a_keys]
        b_list = [sd.pop(k.replace(".matrix_A.", ".matrix_B.")) for k in a_keys]
        rank = a_list[0].shape[0]
        delta = torch.cat([b.float() @ a.float() for a, b in zip(a_list, b_list, strict=True)], dim=0) / rank
        if delta.shape != weight.shape:
            raise ModelFileError(
                f"LoRA of {base} merges to {tuple(delta.shape)} but the base weight is {tuple(weight.shape)}."
            )
        weight = weight.float() + delta
    sd[base + ".weight"] = weight
    if bias is not None:
        sd[base + ".bias"] = bias


def convert_sat_state_dict(
    sat: Mapping[str, torch.Tensor], *, dtype: torch.dtype | None = None
) -> dict[str, torch.Tensor]:
    """SAT decoder tensors (keys with or without ``model.diffusion_model.``) -> our ``AnimeGamerDecoder`` keys.

    Tensors stay on their device (``meta`` works, for layout checks); ``dtype`` casts floating tensors.
    """
    sd: dict[str, torch.Tensor] = {}
    for key, value in sat.items():
        if key.startswith(_DROPPED_TOP):
            continue
        short = key[len(SAT_PREFIX) :] if key.startswith(SAT_PREFIX) else key
        if short.startswith(_DROPPED) or any(
            part in short for part in ("freqs_", "embed_tokens", "position_embedding", "word_embeddings")
        ):
            continue
        sd[short] = value
    layer_ids = sorted({int(m.group(1)) for k in sd if (m := re.match(r"transformer\.layers\.(\d+)\.", k))})
    for i in layer_ids:
        for name in ("attention.query_key_value", "attention.dense"):
            base = f"transformer.layers.{i}.{name}"
            if any(k.startswith(base + ".") for k in sd):
                _merge_lora(sd, base)

    out: dict[str, torch.Tensor] = {}
    unknown: list[str] = []
    for key, value in sd.items():
        new = _rename(key, value, out)
        if new is False:
            unknown.append(key)
    if unknown:
        raise ModelFileError(f"The checkpoint has {len(unknown)} decoder tensors we do not know, e.g. {unknown[:5]}.")
    if dtype is not None:
        out = {k: v.to(dtype) if v.is_floating_point() else v for k, v in out.items()}
    return out


def _rename(key: str, value: torch.Tensor, out: dict[str, torch.Tensor]) -> bool | None:
    for old, new in _RENAMES:
        if key.startswith(old):
            out[new + key[len(old) :]] = value
            return None
    m = re.match(r"transformer\.layers\.(\d+)\.(.+)$", key)
    if m:
        i, rest = m.group(1), m.group(2)
        block = f"dit.transformer_blocks.{i}."
        if rest.startswith("attention.query_key_value."):
            suffix = rest.rsplit(".", 1)[1]
            for part, chunk in zip(("to_q", "to_k", "to_v"), value.chunk(3, dim=0), strict=True):
                out[f"{block}attn1.{part}.{suffix}"] = chunk
            return None
        for old, new in _LAYER_RENAMES:
            if rest.startswith(old):
                out[block + new + rest[len(old) :]] = value
                return None
        return False
    m = re.match(r"mixins\.adaln_layer\.(query|key)_layernorm_list\.(\d+)\.(weight|bias)$", key)
    if m:
        out[f"dit.transformer_blocks.{m.group(2)}.attn1.norm_{m.group(1)[0]}.{m.group(3)}"] = value
        return None
    m = re.match(r"mixins\.adaln_layer\.adaLN_modulations\.(\d+)\.1\.(weight|bias)$", key)
    if m:
        chunks = value.chunk(12, dim=0)
        block = f"dit.transformer_blocks.{m.group(1)}."
        out[f"{block}norm1.linear.{m.group(2)}"] = torch.cat(chunks[0:3] + chunks[6:9], dim=0)
        out[f"{block}norm2.linear.{m.group(2)}"] = torch.cat(chunks[3:6] + chunks[9:12], dim=0)
        return None
    return False


def infer_config(state: Mapping[str, torch.Tensor], override: Mapping[str, Any] | None = None) -> DecoderConfig:
    """Architecture from tensor shapes of our layout (head width 64 unless the qk-norm says otherwise)."""
    try:
        proj = state["dit.patch_embed.proj.weight"].shape
        width, in_channels, patch = proj[0], proj[1], proj[2]
        norm_q = state.get("dit.transformer_blocks.0.attn1.norm_q.weight")
        head_dim = norm_q.shape[0] if norm_q is not None else HEAD_DIM
        layers = len({k.split(".")[2] for k in state if k.startswith("dit.transformer_blocks.")})
        values: dict[str, Any] = {
            "num_attention_heads": width // head_dim,
            "attention_head_dim": head_dim,
            "in_channels": in_channels,
            "out_channels": state["dit.proj_out.weight"].shape[0] // (patch * patch),
            "time_embed_dim": state["dit.time_embedding.linear_1.weight"].shape[0],
            "num_layers": layers,
            "patch_size": patch,
            "text_embed_dim": state["cond_encoder.text_proj.0.weight"].shape[1],
            "image_embed_dim": state["cond_encoder.image_proj.0.weight"].shape[1],
        }
    except KeyError as exc:
        raise ModelFileError(
            f"The decoder weights lack {exc.args[0]}; the file is not a complete AnimeGamer decoder."
        ) from exc
    values.update(override or {})
    return DecoderConfig.from_mapping(values)


def read_sat_decoder(source: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """Stream only ``model.diffusion_model.*`` tensors of a SAT checkpoint (memory-mapped), with clear errors."""
    file = resolve_sat_file(source)
    sat = read_state_dict(file, select=lambda k: k.startswith(SAT_PREFIX))
    if not sat:
        everything = read_state_dict(file, select=lambda k: True)
        problem = _describe_foreign(list(everything), {k: tuple(v.shape) for k, v in everything.items()})
        raise ModelFileError(f"{file} is not an AnimeGamer decoder checkpoint. {problem}")
    problem = _describe_foreign(list(sat), {k: tuple(v.shape) for k, v in sat.items()})
    if problem:
        raise ModelFileError(f"{file} is not an AnimeGamer decoder checkpoint. {problem}")
    return sat


def load_state_and_config(
    source: str | os.PathLike[str], config: Mapping[str, Any] | None = None, dtype: torch.dtype | None = None
) -> tuple[dict[str, torch.Tensor], DecoderConfig, dict[str, str]]:
    """Our-layout tensors + architecture + provenance, from a SAT folder/file or our converted file."""
    path = Path(source)
    if is_converted_file(path):
        meta = safetensors_metadata(path)
        state = read_state_dict(path)
        values = json.loads(meta.get("config", "{}"))
        values.update(config or {})
        cfg = DecoderConfig.from_mapping(values) if values else infer_config(state)
        if dtype is not None:
            state = {k: v.to(dtype) for k, v in state.items()}
        return state, cfg, meta
    if path.is_file() and path.suffix == ".safetensors":
        state = read_state_dict(path)
        problem = _describe_foreign(list(state), {k: tuple(v.shape) for k, v in state.items()})
        raise ModelFileError(f"{path} is not a converted AnimeGamer decoder. {problem or ''}".strip())
    state = convert_sat_state_dict(read_sat_decoder(path), dtype=dtype)
    return state, infer_config(state, config), {"source": path.name}


def load_decoder(
    source: str | os.PathLike[str],
    config: Mapping[str, Any] | None = None,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> AnimeGamerDecoder:
    """Build the decoder and load weights with zero missing/unexpected keys (or a clear error)."""
    state, cfg, _ = load_state_and_config(source, config, dtype)
    model = build_decoder(cfg, device="meta")
    check_layout(model, state)
    model.load_state_dict(state, strict=True, assign=True)
    model.dit.patch_embed.pos_embedding = model.dit.patch_embed._get_positional_embeddings(
        cfg.sample_height, cfg.sample_width, cfg.sample_frames
    )
    return model.to(device=device, dtype=dtype).train(False).requires_grad_(False)


def check_layout(model: AnimeGamerDecoder, state: Mapping[str, torch.Tensor]) -> None:
    """Raise with the differing keys when ``state`` does not fit ``model`` exactly (names and shapes)."""
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = sorted(k for k in set(expected) & set(state) if tuple(state[k].shape) != expected[k])
    if missing or unexpected or wrong:
        detail = "; ".join(
            f"{name}: {items[:4]}"
            for name, items in (("missing", missing), ("unexpected", unexpected), ("wrong shape", wrong))
            if items
        )
        raise ModelFileError(
            f"The decoder weights do not fit the architecture inferred from them ({detail}). If the checkpoint is a "
            "variant, pass a config override; otherwise the file is damaged or not an AnimeGamer decoder."
        )


def convert_to_file(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    dtype: torch.dtype = torch.float16,
    overwrite: bool = False,
) -> Path:
    """Write the compact converted decoder (LoRA merged, fp16/bf16) with its config in the metadata."""
    if dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise InputError(f"dtype {dtype} is not supported for the converted file; use float16, bfloat16 or float32.")
    state, cfg, meta = load_state_and_config(source, None, dtype)
    check_layout(build_decoder(cfg, device="meta"), state)
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": cfg.to_json(),
        "dtype": str(dtype).removeprefix("torch."),
        "source": meta.get("source", Path(source).name),
        "cond_tokens": str(COND_TOKENS),
    }
    return save_safetensors_atomic(state, target, metadata=metadata, overwrite=overwrite)
