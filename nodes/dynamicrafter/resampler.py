"""DynamiCrafter's ``Resampler`` image projection as diffusers' ``IPAdapterPlusImageProjection``.

The original (``lvdm/modules/encoders/resampler.py``, from IP-Adapter) and diffusers' class are the same
Perceiver resampler: learned latents attend to ``cat(LN(x), LN(latents))`` with a fused ``to_kv``, then a
LayerNorm-first GELU MLP, ``proj_out`` and ``norm_out``.  DynamiCrafter gives each frame its own
``num_queries`` latents, so the learned latents are ``num_queries x video_length`` rows; diffusers just
sees that many queries.  We map the keys (splitting ``to_kv`` into ``to_k``/``to_v``) and let diffusers run it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ...core.attention import plain_processors
from ...core.errors import InputError, ModelFileError

NAMES = ("dim", "depth", "dim_head", "heads", "num_queries", "embedding_dim", "output_dim", "ff_mult", "video_length")
DEFAULT_HEAD_WIDTH = 64  # every released DynamiCrafter Resampler: dim_head 64 (heads 12 at dim 1024)
DEFAULT_QUERIES = 16


def infer_config(sd: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> dict[str, int]:
    """The Resampler hyper-parameters, in the original's names, from shapes; ``config`` overrides them.

    Shapes fix ``dim``, ``depth``, ``embedding_dim``, ``output_dim``, ``ff_mult`` and the total query count;
    the head split and the per-frame count are not visible in the weights, so they default to the released
    models' 64-wide heads and 16 queries per frame (``video_length = rows / 16``).
    """
    config = dict(config or {})
    unknown = set(config) - set(NAMES)
    if unknown:
        raise InputError(f"Unknown Resampler config keys {sorted(unknown)}; known: {', '.join(NAMES)}.")
    if "latents" not in sd or "proj_in.weight" not in sd:
        raise ModelFileError("The image projection has no 'latents'/'proj_in': not a DynamiCrafter Resampler.")
    rows, dim = sd["latents"].shape[1:]
    inner = sd["layers.0.0.to_q.weight"].shape[0]
    out = {
        "dim": dim,
        "depth": len({int(m.group(1)) for k in sd if (m := re.match(r"layers\.(\d+)\.", k))}),
        "embedding_dim": sd["proj_in.weight"].shape[1],
        "output_dim": sd["proj_out.weight"].shape[0],
        "ff_mult": sd["layers.0.1.1.weight"].shape[0] // dim,
    }
    out["dim_head"] = config.get("dim_head", DEFAULT_HEAD_WIDTH if inner % DEFAULT_HEAD_WIDTH == 0 else inner)
    out["heads"] = config.get("heads", inner // out["dim_head"])
    out["num_queries"] = config.get("num_queries", DEFAULT_QUERIES if rows % DEFAULT_QUERIES == 0 else rows)
    out["video_length"] = config.get("video_length", rows // out["num_queries"])
    out.update({k: v for k, v in config.items() if k in ("dim", "depth", "embedding_dim", "output_dim", "ff_mult")})
    if out["heads"] * out["dim_head"] != inner:
        raise InputError(f"Resampler heads x dim_head must be {inner}, got {out['heads']} x {out['dim_head']}.")
    if out["num_queries"] * out["video_length"] != rows:
        raise InputError(
            f"Resampler num_queries x video_length must be the {rows} learned latents, "
            f"got {out['num_queries']} x {out['video_length']}."
        )
    return out


def convert_resampler(sd: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Original ``image_proj_model.*`` (prefix removed) -> diffusers ``IPAdapterPlusImageProjection`` keys."""
    out: dict[str, torch.Tensor] = {}
    for key, tensor in sd.items():
        m = re.match(r"layers\.(\d+)\.(\d)\.(.+)", key)
        if not m:
            out[key] = tensor
            continue
        layer, part, rest = m.groups()
        base = f"layers.{layer}"
        if part == "0":
            if rest == "to_kv.weight":
                k, v = tensor.chunk(2, dim=0)
                out[f"{base}.attn.to_k.weight"], out[f"{base}.attn.to_v.weight"] = k, v
            elif rest.startswith("norm1."):
                out[f"{base}.ln0.{rest[6:]}"] = tensor
            elif rest.startswith("norm2."):
                out[f"{base}.ln1.{rest[6:]}"] = tensor
            elif rest.startswith("to_q."):
                out[f"{base}.attn.{rest}"] = tensor
            elif rest.startswith("to_out."):
                out[f"{base}.attn.to_out.0.{rest[7:]}"] = tensor
            else:
                raise ModelFileError(f"Unexpected Resampler weight 'image_proj_model.{key}'.")
        else:  # FeedForward: 0 LayerNorm, 1 Linear, 2 GELU, 3 Linear
            sub, name = rest.split(".", 1)
            target = {"0": "ff.0", "1": "ff.1.net.0.proj", "3": "ff.1.net.2"}.get(sub)
            if target is None:
                raise ModelFileError(f"Unexpected Resampler weight 'image_proj_model.{key}'.")
            out[f"{base}.{target}.{name}"] = tensor
    return out


def build_resampler(
    sd: Mapping[str, torch.Tensor], config: Mapping[str, Any] | None = None, dtype: torch.dtype = torch.float32
) -> nn.Module:
    """diffusers ``IPAdapterPlusImageProjection`` with the original Resampler's weights (strict)."""
    from diffusers.models.embeddings import IPAdapterPlusImageProjection

    cfg = infer_config(sd, config)
    with torch.device("meta"):
        model = IPAdapterPlusImageProjection(
            embed_dims=cfg["embedding_dim"],
            output_dims=cfg["output_dim"],
            hidden_dims=cfg["dim"],
            depth=cfg["depth"],
            dim_head=cfg["dim_head"],
            heads=cfg["heads"],
            num_queries=cfg["num_queries"] * cfg["video_length"],
            ffn_ratio=cfg["ff_mult"],
        )
    converted = convert_resampler(sd)
    try:
        result = model.load_state_dict(converted, strict=False, assign=True)
    except RuntimeError as exc:
        raise ModelFileError(f"The Resampler weights do not fit {cfg}: {str(exc).splitlines()[-1].strip()}") from exc
    if result.missing_keys or result.unexpected_keys:
        raise ModelFileError(
            f"The Resampler weights do not fit {cfg} ({len(result.missing_keys)} missing, e.g. "
            f"{result.missing_keys[:3]}; {len(result.unexpected_keys)} unexpected, e.g. {result.unexpected_keys[:3]})."
        )
    plain_processors(model)
    model.config_original = cfg
    return model.to(dtype=dtype).train(False).requires_grad_(False)
