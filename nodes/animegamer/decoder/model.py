"""The AnimeGamer shot decoder: diffusers' CogVideoX-2B transformer plus the pieces AnimeGamer added.

What differs from a stock ``CogVideoXTransformer3DModel`` (all checked against the original SAT code):

* ``patch_embed.text_proj`` is the identity: the 226 conditioning tokens arrive already at the model width (from
  the MLLM, or from :class:`ConditionEncoder` = E_a), where stock CogVideoX projects 4096-d T5 features.
* The motion-scope ("flow") scalar goes through the timestep sinusoid (width = model width, [cos | sin]) and a
  Linear -> SiLU -> Linear to the time-embedding width, and is **added** to the time embedding.  diffusers already
  has exactly that hook for CogVideoX-1.5's ``ofs`` input (``ofs_proj`` + ``ofs_embedding``, added to ``emb``);
  only its widths differ, so we install modules of AnimeGamer's widths in that slot instead of wrapping forward.
* Every LayerNorm uses eps 1e-6 like SAT (stock CogVideoX-2b config says 1e-5; measured 4.5e-6 vs 1.6e-6 max
  error at tiny size).
* E_a lives next to the transformer as ``cond_encoder``.
* The joint text+video attention runs through :class:`JointAttnProcessor`, i.e. the kernel
  :func:`core.attention.use_attention` installs (ComfyUI's choice inside ComfyUI).

Our converted file stores this module's ``state_dict`` (prefixes ``dit.`` and ``cond_encoder.``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch import nn

from ....core.attention import Attends
from ....core.errors import InputError
from .condition_encoder import ConditionEncoder

COND_TOKENS = 226


@dataclass(frozen=True)
class DecoderConfig:
    """Architecture of the decoder, in diffusers' ``CogVideoXTransformer3DModel`` config names where one exists.

    Defaults are the released AnimeGamer decoder (CogVideoX-2B, 17 frames at 480x720 -> latents 5x60x90).
    ``text_embed_dim``/``image_embed_dim`` are E_a's input widths (T5-XXL 4096, OpenCLIP ViT-B-16 768).
    """

    num_attention_heads: int = 30
    attention_head_dim: int = 64
    in_channels: int = 16
    out_channels: int = 16
    time_embed_dim: int = 512
    num_layers: int = 30
    patch_size: int = 2
    sample_height: int = 60
    sample_width: int = 90
    sample_frames: int = 17
    temporal_compression_ratio: int = 4
    max_text_seq_length: int = COND_TOKENS
    norm_eps: float = 1e-6
    spatial_interpolation_scale: float = 1.875
    temporal_interpolation_scale: float = 1.0
    text_embed_dim: int = 4096
    image_embed_dim: int = 768

    @property
    def width(self) -> int:
        return self.num_attention_heads * self.attention_head_dim

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> DecoderConfig:
        """Build from a dict, rejecting names we do not know (a typo would otherwise be ignored silently)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InputError(
                f"Unknown decoder config keys {unknown}; known keys are {sorted(known)} (diffusers CogVideoX names)."
            )
        return cls(**values)


class JointAttnProcessor(Attends):
    """diffusers' ``CogVideoXAttnProcessor2_0`` on our kernel: text and video tokens attend jointly.

    The per-head LayerNorms of queries and keys run on the ``[B, N, heads, dim]`` view of the projections, so the
    kernel gets ``[B, N, heads*dim]`` without transposes.  CogVideoX-2B has no rotary embedding and no mask.
    """

    def __call__(
        self,
        attn: Any,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        image_rotary_emb: Any = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if attention_mask is not None or image_rotary_emb is not None:
            raise InputError("The AnimeGamer decoder (CogVideoX-2B) attends without a mask or rotary embedding.")
        text = encoder_hidden_states.shape[1]
        tokens = torch.cat([encoder_hidden_states, hidden_states], dim=1)
        q, k, v = attn.to_q(tokens), attn.to_k(tokens), attn.to_v(tokens)
        if attn.norm_q is not None:
            q = attn.norm_q(q.unflatten(-1, (attn.heads, -1))).flatten(2)
            k = attn.norm_k(k.unflatten(-1, (attn.heads, -1))).flatten(2)
        out = attn.to_out[0](self.attend(q, k, v, attn.heads))  # to_out[1] is inference-time dropout
        return out[:, text:], out[:, :text]


class AnimeGamerDecoder(nn.Module):
    """CogVideoX-2B DiT with AnimeGamer's flow embedding and E_a.

    ``transformer(latents, timestep, cond_tokens, flow)`` is the network call the sampler makes: latents
    ``[B,T,C,H,W]``, timestep the discrete index 0..999 ``[B]``, cond_tokens ``[B,226,width]``, flow the raw
    motion-scope scalar ``[B]``; it returns the v-prediction with the latents' shape.
    """

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        from diffusers import CogVideoXTransformer3DModel
        from diffusers.models.embeddings import TimestepEmbedding, Timesteps

        self.config = config
        width = config.width
        self.dit = CogVideoXTransformer3DModel(
            num_attention_heads=config.num_attention_heads,
            attention_head_dim=config.attention_head_dim,
            in_channels=config.in_channels,
            out_channels=config.out_channels,
            time_embed_dim=config.time_embed_dim,
            text_embed_dim=width,
            num_layers=config.num_layers,
            sample_width=config.sample_width,
            sample_height=config.sample_height,
            sample_frames=config.sample_frames,
            patch_size=config.patch_size,
            temporal_compression_ratio=config.temporal_compression_ratio,
            max_text_seq_length=config.max_text_seq_length,
            norm_eps=config.norm_eps,
            spatial_interpolation_scale=config.spatial_interpolation_scale,
            temporal_interpolation_scale=config.temporal_interpolation_scale,
        )
        self.dit.patch_embed.text_proj = nn.Identity()
        self.dit.ofs_proj = Timesteps(width, flip_sin_to_cos=True, downscale_freq_shift=0)
        self.dit.ofs_embedding = TimestepEmbedding(width, config.time_embed_dim, "silu")
        self.cond_encoder = ConditionEncoder(config.text_embed_dim, config.image_embed_dim, width)
        for block in self.dit.transformer_blocks:
            block.attn1.set_processor(JointAttnProcessor())

    @property
    def dtype(self) -> torch.dtype:
        return self.dit.proj_out.weight.dtype

    @property
    def device(self) -> torch.device:
        return self.dit.proj_out.weight.device

    def check_tokens(self, cond_tokens: torch.Tensor, name: str = "representation") -> None:
        """A clear error for a representation of the wrong shape (the most likely user mistake)."""
        width = self.config.width
        if cond_tokens.ndim != 3 or cond_tokens.shape[1:] != (self.config.max_text_seq_length, width):
            raise InputError(
                f"The {name} has shape {tuple(cond_tokens.shape)}; this decoder expects "
                f"[batch, {self.config.max_text_seq_length}, {width}] (the AnimeGamer MLLM's output for one turn, "
                "or E_a tokens). A 4096-wide tensor is raw T5/LLM hidden states: pass it through the MLLM's "
                "output resampler or through encode_conditions first."
            )

    def transformer(
        self, latents: torch.Tensor, timestep: torch.Tensor, cond_tokens: torch.Tensor, flow: torch.Tensor
    ) -> torch.Tensor:
        self.check_tokens(cond_tokens)
        cfg = self.config
        if latents.ndim != 5 or latents.shape[2] != cfg.in_channels:
            raise InputError(
                f"latents have shape {tuple(latents.shape)}; expected [batch, frames, {cfg.in_channels}, height, width]."
            )
        if latents.shape[-2] % cfg.patch_size or latents.shape[-1] % cfg.patch_size:
            raise InputError(
                f"latent height/width {tuple(latents.shape[-2:])} must be multiples of the patch size {cfg.patch_size}."
            )
        batch = latents.shape[0]
        timestep = torch.as_tensor(timestep, device=latents.device).reshape(-1).expand(batch)
        flow = torch.as_tensor(flow, device=latents.device, dtype=torch.float32).reshape(-1).expand(batch)
        out = self.dit(
            hidden_states=latents.to(self.dtype),
            encoder_hidden_states=cond_tokens.to(device=latents.device, dtype=self.dtype),
            timestep=timestep,
            ofs=flow,
            return_dict=False,
        )[0]
        return out

    def encode_conditions(self, t5_feats: torch.Tensor, clip_patches: torch.Tensor) -> torch.Tensor:
        """E_a: T5 features [B,30,4096] + CLIP patches [B,196,768] -> tokens [B,226,width] for :meth:`transformer`."""
        param = self.cond_encoder.text_proj[0].weight
        return self.cond_encoder(t5_feats.to(param.device), clip_patches.to(param.device))

    def unconditional_tokens(self, batch: int = 1) -> torch.Tensor:
        """The released sampler's CFG negative: E_a on zeros (cached)."""
        return self.cond_encoder.unconditional(batch)

    def decode_shot(self, representation: torch.Tensor, **options: Any) -> Any:
        """One shot from a representation: see :func:`.shot.decode_shot` for the options and defaults."""
        from .shot import decode_shot

        return decode_shot(self, representation, **options)


def build_decoder(config: DecoderConfig, device: str | torch.device = "cpu") -> AnimeGamerDecoder:
    """An uninitialised decoder of ``config`` (use ``device="meta"`` to check key layouts without memory)."""
    with torch.device(device):
        return AnimeGamerDecoder(config)
