"""The attention kernel our diffusers-based models call, and the diffusers processor that calls it.

Every attention of the VC2 / DynamiCrafter UNets, the Resampler, the VAEs, ToonCrafter's keyframe attention and
the AnimeGamer decoder goes through one function with ComfyUI's calling convention,
``attend(q, k, v, heads, mask=None)`` on ``[B, N, heads * dim]`` tensors.  Library code uses :func:`sdpa`
(PyTorch's fused kernel); when a node hands a model to the host's memory manager
(``core.host.manage``) it installs ``core.host.attention`` with :func:`use_attention`, so inside ComfyUI the user's
choice of kernel (xformers, sage, flash, PyTorch, split, sub-quadratic) runs our models too.
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


def attend_shared(attend: Attend, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int) -> torch.Tensor:
    """Attention of ``q`` ``[B*T, N, inner]`` over keys/values of ``B`` rows: each row's keys serve its ``T``
    consecutive query rows (a clip's frames and the clip's context), so the frames are folded into one query
    sequence per clip (attention is per query) instead of repeating keys and values ``T`` times."""
    rows, length, inner = q.shape
    if k.shape[0] == rows:
        return attend(q, k, v, heads)
    return attend(q.reshape(k.shape[0], -1, inner), k, v, heads).reshape(rows, length, inner)


class AttnProcessor(Attends):
    """diffusers ``Attention`` processor: what ``AttnProcessor2_0`` computes, on our kernel.

    Covers the self- and cross-attention of the UNets and the Resampler and the VAEs' mid-block attention over a
    feature map (group norm first, pixels as tokens, residual).  A cross-attention context may hold one row per
    clip for ``T`` query rows per clip (:func:`attend_shared`).  No mask: :func:`plain_processors` refuses the
    kinds this does not compute (norms on queries/keys or context, spatial norm), so nothing is silently wrong.
    """

    def __call__(
        self,
        attn: Any,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        temb: torch.Tensor | None = None,
    ) -> torch.Tensor:
        residual = hidden_states
        if hidden_states.ndim == 4:  # a feature map [B, C, H, W]: its pixels are the tokens
            hidden_states = hidden_states.flatten(2).transpose(1, 2)
        if attn.group_norm is not None:
            hidden_states = attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        q, k, v = attn.to_q(hidden_states), attn.to_k(context), attn.to_v(context)
        out = attn.to_out[0](attend_shared(self.attend, q, k, v, attn.heads))  # to_out[1]: inference dropout
        if residual.ndim == 4:
            out = out.transpose(1, 2).reshape(residual.shape)
        if attn.residual_connection:
            out = out + residual
        return out if attn.rescale_output_factor == 1.0 else out / attn.rescale_output_factor


def is_plain(attn: Any) -> bool:
    """True for a diffusers ``Attention`` that :class:`AttnProcessor` computes exactly (as ``AttnProcessor2_0``
    would: default 1/sqrt(dim) scale, no spatial norm, no norms on queries, keys or context)."""
    return (
        attn.scale_qk
        and attn.spatial_norm is None
        and attn.norm_q is None
        and attn.norm_k is None
        and not attn.norm_cross
        and not attn.only_cross_attention
    )


def plain_processors(module: nn.Module) -> None:
    """Give every plain diffusers ``Attention`` in ``module`` an :class:`AttnProcessor` (others keep theirs)."""
    from diffusers.models.attention_processor import Attention

    for sub in module.modules():
        if isinstance(sub, Attention) and not isinstance(sub.processor, Attends):
            if not is_plain(sub):
                raise ValueError(f"{type(sub).__name__} with norms on queries, keys or context: not a plain attention")
            sub.set_processor(AttnProcessor())


def use_attention(module: nn.Module, attend: Attend | Callable[..., torch.Tensor]) -> None:
    """Make every attention of ``module`` (our processors and :class:`Attends` modules) call ``attend``."""
    for sub in module.modules():
        for target in (sub, getattr(sub, "processor", None)):
            if isinstance(target, Attends):
                target.attend = attend
