"""E_a, AnimeGamer's condition encoder: T5 motion-text features + CLIP patches of the first frame -> 226 tokens.

The released decoder was trained with these tokens in CogVideoX's projected-text slot; at inference the MLLM's
226x1920 representation replaces them in the conditional half, and E_a applied to zeros is the unconditional half
(a constant per checkpoint, so :meth:`ConditionEncoder.unconditional` caches it).  Users who condition from a
motion text and a first frame (no MLLM) call :meth:`ConditionEncoder.forward` on real features.

Layout (SAT ``ImagePatchEmbeddingMixin`` with ``ip_hidden_size == 768``): ``text_proj`` and ``ip_proj`` are
Linear -> GELU (exact) -> Linear, each followed by its own LayerNorm (PyTorch default eps 1e-5, as in the
original), then the text tokens (30) and image tokens (196) are concatenated.  ``output_mix_layer_norm`` exists in
the checkpoint but is unused on this path, so it is not part of this module.
"""

from __future__ import annotations

import torch
from torch import nn

from ....core.errors import InputError

TEXT_TOKENS = 30
IMAGE_TOKENS = 196


def _mlp(in_dim: int, width: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_dim, width), nn.GELU(), nn.Linear(width, width))


class ConditionEncoder(nn.Module):
    """E_a: ``forward(t5_feats [B,30,text_dim], clip_patches [B,196,image_dim]) -> [B,226,width]``."""

    def __init__(self, text_dim: int, image_dim: int, width: int) -> None:
        super().__init__()
        self.text_proj = _mlp(text_dim, width)
        self.image_proj = _mlp(image_dim, width)
        self.text_norm = nn.LayerNorm(width)
        self.image_norm = nn.LayerNorm(width)
        self._uncond: torch.Tensor | None = None

    @property
    def text_dim(self) -> int:
        return self.text_proj[0].in_features

    @property
    def image_dim(self) -> int:
        return self.image_proj[0].in_features

    def forward(self, t5_feats: torch.Tensor, clip_patches: torch.Tensor) -> torch.Tensor:
        self._check(t5_feats, self.text_dim, "t5_feats", "T5-XXL encoder features of the motion text (30 tokens)")
        self._check(
            clip_patches,
            self.image_dim,
            "clip_patches",
            "OpenCLIP ViT-B-16 penultimate patch tokens (196, CLS dropped)",
        )
        if t5_feats.shape[0] != clip_patches.shape[0]:
            raise InputError(
                f"t5_feats has batch {t5_feats.shape[0]} but clip_patches has batch {clip_patches.shape[0]}; give one of each per shot."
            )
        dtype = self.text_proj[0].weight.dtype
        text = self.text_norm(self.text_proj(t5_feats.to(dtype)))
        image = self.image_norm(self.image_proj(clip_patches.to(dtype)))
        return torch.cat((text, image), dim=1)

    @staticmethod
    def _check(tensor: torch.Tensor, dim: int, name: str, what: str) -> None:
        if tensor.ndim != 3 or tensor.shape[-1] != dim:
            raise InputError(f"{name} has shape {tuple(tensor.shape)}; expected [batch, tokens, {dim}] ({what}).")

    @torch.no_grad()
    def unconditional(self, batch: int = 1) -> torch.Tensor:
        """E_a on all-zero features: the CFG unconditional tokens of the released sampler, computed once."""
        weight = self.text_proj[0].weight
        if self._uncond is None or self._uncond.device != weight.device or self._uncond.dtype != weight.dtype:
            zeros_t = torch.zeros(1, TEXT_TOKENS, self.text_dim, device=weight.device, dtype=weight.dtype)
            zeros_i = torch.zeros(1, IMAGE_TOKENS, self.image_dim, device=weight.device, dtype=weight.dtype)
            self._uncond = self.forward(zeros_t, zeros_i)
        return self._uncond.expand(batch, -1, -1)
