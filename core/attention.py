"""The attention kernel our diffusers-based models call, and the diffusers processor that calls it.

Every attention of the VC2 / DynamiCrafter UNets, the Resampler, ToonCrafter's keyframe attention and the
AnimeGamer decoder goes through one function with ComfyUI's calling convention,
``attend(q, k, v, heads, mask=None)`` on ``[B, N, heads * dim]`` tensors.  Library code uses :func:`sdpa`
(PyTorch's fused kernel); the node adapters install ``core.host.attention`` with :func:`use_attention`, so inside
ComfyUI the user's choice of kernel (xformers, sage, flash, PyTorch, sub-quadratic) runs our models too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import nn


class Attend(Protocol):
    def __call__(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int, mask: torch.Tensor | None = None
    ) -> torch.Tensor: ...


def sdpa(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Softmax attention of ``[B, N, heads*dim]`` queries over ``[B, M, heads*dim]`` keys/values -> ``[B, N, heads*dim]``.

    ``mask`` is added to the logits (broadcast to ``[B, heads, N, M]``), as ComfyUI's kernels take it.
    """
    batch, length, inner = q.shape
    q, k, v = (t.unflatten(-1, (heads, -1)).transpose(1, 2) for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return out.transpose(1, 2).reshape(batch, length, inner)


class Attends:
    """A module or processor whose attention kernel :func:`use_attention` may replace (``self.attend``)."""

    attend: Attend = staticmethod(sdpa)  # type: ignore[assignment]


class AttnProcessor(Attends):
    """diffusers ``Attention`` processor: the projections of ``attn`` around our kernel.

    Covers the plain self- and cross-attention of the UNets and the Resampler (no norms inside the attention,
    no residual, no mask: :func:`use_attention` refuses any other kind, so nothing is silently computed wrong).
    """

    def __call__(
        self,
        attn: Any,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        temb: torch.Tensor | None = None,
    ) -> torch.Tensor:
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        out = self.attend(attn.to_q(hidden_states), attn.to_k(context), attn.to_v(context), attn.heads)
        return attn.to_out[0](out)  # to_out[1] is inference-time dropout: the identity


def is_plain(attn: Any) -> bool:
    """True for a diffusers ``Attention`` that :class:`AttnProcessor` computes exactly."""
    return (
        attn.spatial_norm is None
        and attn.group_norm is None
        and attn.norm_q is None
        and attn.norm_k is None
        and not attn.norm_cross
        and not attn.residual_connection
        and attn.rescale_output_factor == 1.0
        and not attn.only_cross_attention
        and getattr(attn, "scale", attn.dim_head**-0.5 if hasattr(attn, "dim_head") else None)
        in (None, (attn.inner_dim // attn.heads) ** -0.5)
    )


def plain_processors(module: nn.Module) -> None:
    """Give every plain diffusers ``Attention`` in ``module`` an :class:`AttnProcessor` (others keep theirs)."""
    from diffusers.models.attention_processor import Attention

    for sub in module.modules():
        if isinstance(sub, Attention) and not isinstance(sub.processor, Attends):
            if not is_plain(sub):
                raise ValueError(f"{type(sub).__name__} with norms or residual inside: not a plain attention")
            sub.set_processor(AttnProcessor())


def use_attention(module: nn.Module, attend: Attend | Callable[..., torch.Tensor]) -> None:
    """Make every attention of ``module`` (our processors and :class:`Attends` modules) call ``attend``."""
    for sub in module.modules():
        for target in (sub, getattr(sub, "processor", None)):
            if isinstance(target, Attends):
                target.attend = attend
