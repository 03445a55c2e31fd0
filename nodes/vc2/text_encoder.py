"""OpenCLIP ViT-H-14 text conditioning from the checkpoint's own ``cond_stage_model`` weights.

VC2's ``FrozenOpenCLIPEmbedder(layer="penultimate")``: ``open_clip.tokenize`` (77 ids, SOT/EOT, pad 0,
truncation with the last id forced to EOT), token + positional embedding, every residual block but
the last, then ``ln_final``; output ``[B, 77, width]`` with no pooling or projection.  The model is
open_clip's own ``TextTransformer`` built from the tensor shapes, so no weights are downloaded and the
tokenizer is the BPE vocabulary bundled with ``open_clip_torch``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ...core.errors import InputError, ModelFileError

HEAD_WIDTH = 64  # OpenCLIP text towers use 64-wide heads (ViT-H-14: 1024 / 16)
CONTEXT_LENGTH = 77


@dataclass(frozen=True)
class TokenReport:
    """What the tokenizer did with one prompt: the token count (with SOT/EOT) and the words cut."""

    tokens: int
    limit: int
    cut_text: str

    @property
    def truncated(self) -> bool:
        return self.tokens > self.limit


def _tokenizer() -> Any:
    from open_clip.tokenizer import SimpleTokenizer

    return SimpleTokenizer()


def token_report(text: str, context_length: int = CONTEXT_LENGTH) -> TokenReport:
    """Count the BPE tokens of ``text`` and name what falls past the 77-token window."""
    tok = _tokenizer()
    ids = tok.encode(text)
    keep = context_length - 2
    cut = tok.decode(ids[keep:]).strip() if len(ids) > keep else ""
    return TokenReport(tokens=len(ids) + 2, limit=context_length, cut_text=cut)


def tokenize(texts: Sequence[str], context_length: int = CONTEXT_LENGTH) -> torch.Tensor:
    """``open_clip.tokenize``: the exact ids VC2 used (77 per prompt, zero padded, truncated)."""
    import open_clip

    return open_clip.tokenize(list(texts), context_length=context_length)


class OpenCLIPPenultimate(nn.Module):
    """The OpenCLIP text tower run to its penultimate block plus the final LayerNorm."""

    def __init__(self, width: int, layers: int, heads: int, vocab: int, context_length: int, proj_dim: int) -> None:
        super().__init__()
        from open_clip.transformer import TextTransformer

        self.model = TextTransformer(
            context_length=context_length,
            vocab_size=vocab,
            width=width,
            heads=heads,
            layers=layers,
            output_dim=proj_dim,
        )

    @property
    def device(self) -> torch.device:
        return self.model.token_embedding.weight.device

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        m = self.model
        x = m.token_embedding(tokens.to(self.device)) + m.positional_embedding
        mask = m.attn_mask.to(device=x.device, dtype=x.dtype)
        for block in m.transformer.resblocks[:-1]:
            x = block(x, attn_mask=mask)
        return m.ln_final(x)

    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        """``[B, 77, width]`` conditioning for ``texts`` (``""`` gives VC2's unconditional context)."""
        with torch.no_grad():
            return self(tokenize(texts, self.model.context_length))


def build_text_encoder(
    sd: Mapping[str, torch.Tensor], dtype: torch.dtype = torch.float32, heads: int | None = None
) -> OpenCLIPPenultimate:
    """The encoder from ``cond_stage_model.model.*`` tensors (prefix removed), shapes read from them."""
    try:
        vocab, width = sd["token_embedding.weight"].shape
        context_length = sd["positional_embedding"].shape[0]
        proj_dim = sd["text_projection"].shape[1]
    except KeyError as exc:
        raise ModelFileError(f"The checkpoint's text encoder has no {exc}: it is not an OpenCLIP text tower.") from exc
    layers = len({k.split(".")[2] for k in sd if k.startswith("transformer.resblocks.")})
    if layers < 2:
        raise ModelFileError(f"The OpenCLIP text tower has {layers} blocks; the penultimate layer needs at least 2.")
    with torch.device("meta"):
        encoder = OpenCLIPPenultimate(
            width, layers, heads or max(1, width // HEAD_WIDTH), vocab, context_length, proj_dim
        )
    wanted = {f"model.{k}": v for k, v in sd.items() if k != "logit_scale"}
    result = encoder.load_state_dict(wanted, strict=False, assign=True)
    if result.missing_keys or result.unexpected_keys:
        raise ModelFileError(
            f"The OpenCLIP text weights do not fit: missing {result.missing_keys[:3]}, unexpected {result.unexpected_keys[:3]}."
        )
    encoder.model.attn_mask = encoder.model.build_causal_mask()
    return encoder.to(dtype=dtype).train(False).requires_grad_(False)


def context_from_conditioning(conditioning: Any, width: int | None = None) -> torch.Tensor:
    """The ``[B, N, width]`` tensor of a ComfyUI ``CONDITIONING`` (SD2 CLIPLoader: the same encoder)."""
    if isinstance(conditioning, torch.Tensor):
        tensor = conditioning
    else:
        try:
            tensor = conditioning[0][0]
        except (TypeError, IndexError, KeyError) as exc:
            raise InputError("Expected a CONDITIONING (list of [tensor, dict]) or a [B,77,1024] tensor.") from exc
    if not isinstance(tensor, torch.Tensor) or tensor.ndim != 3:
        raise InputError(
            f"Conditioning must be a [B,tokens,width] tensor, got {getattr(tensor, 'shape', type(tensor))}."
        )
    if width is not None and tensor.shape[-1] != width:
        raise InputError(
            f"Conditioning width is {tensor.shape[-1]} but the VC2 UNet expects {width}: use an SD 2.x / OpenCLIP-H "
            "text encoder (ComfyUI CLIPLoader type 'stable_diffusion') or this pack's VC2 Text Encode node."
        )
    return tensor
