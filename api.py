"""The stable Python API of GameAnim, for headless scripts and outside checks.

Import the pack by path (see the README's "Python API") and call these functions; they never need
ComfyUI.  Signatures here are a contract: new parameters get defaults, nothing is renamed.
Long functions accept ``progress``: a callable ``(done, total)`` that may raise to cancel (for
example :meth:`CancelToken.progress`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .errors import GameAnimError, InputError, ModelFileError, NumericalError, UnsafePathError
from .progress import Cancelled, CancelToken

__version__ = "0.1.0"

__all__ = [
    "CancelToken",
    "Cancelled",
    "GameAnimError",
    "InputError",
    "ModelFileError",
    "NumericalError",
    "UnsafePathError",
    "__version__",
    "convert_animegamer_decoder",
    "load_animegamer_decoder",
    "load_animegamer_vae",
]


def load_animegamer_decoder(source: str | os.PathLike[str], config: dict[str, Any] | None = None) -> Any:
    """Load the AnimeGamer shot decoder (CogVideoX-2B + flow embedding + E_a) on the CPU in float32.

    ``source``: the released SAT folder ``VDM_Decoder-<character>/`` (or its ``mp_rank_00_model_states.pt``; only
    the transformer tensors are streamed, the LoRA is merged), or a file written by
    :func:`convert_animegamer_decoder`.  ``config``: optional overrides in diffusers ``CogVideoXTransformer3DModel``
    names (the architecture is otherwise inferred from the tensor shapes).

    The returned module has ``transformer(latents [B,T,C,H,W], timestep [B] (0..999), cond_tokens [B,226,1920],
    flow [B]) -> v-prediction``, ``encode_conditions(t5_feats [B,30,4096], clip_patches [B,196,768]) -> tokens``
    (E_a) and ``decode_shot(representation, vae=None, motion_level=3, flow=None, steps=50, cfg_mode="released",
    cfg=6.0, seed=0, num_frames=17, height=480, width=720, vae_tiling=False, progress=None) -> Shot``.
    Move it with ``.to(device, dtype)``.
    """
    from .nodes.animegamer.decoder_convert import load_decoder

    return load_decoder(source, config)


def convert_animegamer_decoder(
    source: str | os.PathLike[str], target: str | os.PathLike[str], dtype: str = "float16", overwrite: bool = False
) -> Path:
    """Write the compact converted decoder (``dtype`` float16/bfloat16/float32, LoRA merged, config in metadata)."""
    import torch

    from .nodes.animegamer.decoder_convert import convert_to_file

    if dtype not in ("float16", "bfloat16", "float32"):
        raise InputError(f"dtype '{dtype}' is not supported; use float16, bfloat16 or float32.")
    return convert_to_file(source, target, dtype=getattr(torch, dtype), overwrite=overwrite)


def load_animegamer_vae(source: str | os.PathLike[str]) -> Any:
    """The CogVideoX VAE (diffusers ``AutoencoderKLCogVideoX``) from a diffusers ``vae/`` folder or SAT ``3d-vae.pt``."""
    from .nodes.animegamer.decoder_vae import load_vae

    return load_vae(source)
