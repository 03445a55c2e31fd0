"""A CPU stand-in for ``xformers`` so reference code that imports it (DynamiCrafter, ToonCrafter) runs here."""

from __future__ import annotations

import sys
import types

import torch


def install_xformers_standin() -> None:
    """``xformers.ops.memory_efficient_attention(q, k, v)`` (no bias, default scale) for a CPU-only run."""
    ops = types.ModuleType("xformers.ops")
    ops.memory_efficient_attention = lambda q, k, v, attn_bias=None, op=None: (
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
    )
    module = types.ModuleType("xformers")
    module.__version__, module.ops = "0.0.21", ops
    sys.modules["xformers"], sys.modules["xformers.ops"] = module, ops
