"""ToonCrafter's dual-reference VAE decoder (``AutoencoderKL_Dualref``) on diffusers' SVD temporal decoder.

ToonCrafter decodes a clip with Stable Video Diffusion's temporal ``VideoDecoder`` ("conv-only": every res
block gets a temporal (3,1,1) res block mixed in by a learned ``sigmoid(mix_factor)``, the output conv a (3,1,1)
time conv) - that is diffusers' ``TemporalDecoder`` - and adds one step after each resolution level and after
the output norm: the decoder reads the two keyframes back.  At the two coarsest levels every frame
cross-attends to the keyframes' encoder features (:class:`KeyframeAttention`); at the finer levels and at the
end a 1x1 conv of the first (last) keyframe's features is added to the clip's first (last) frame
(:class:`KeyframeAdd`).  The keyframe features are the LDM encoder's activations: each level's last res block
output and the ``conv_in`` output (:func:`keyframe_hidden_states`).

Quirks kept from the original (``lvdm/models/ddpm3d.py::decode_core`` and the released inference scripts):

* ``post_quant_conv`` is never applied (``AutoencoderKL.decode`` skips it whenever decode kwargs are given,
  and ToonCrafter always gives them);
* the clip is decoded in windows of ``temporal_length`` (16) frames, each window with its own keyframe
  additions at its ends; a 16-frame clip is one window, so the temporal convolutions see every frame;
* the released scripts decode a second time without frames 1 and T-2 and take that decode's two middle frames
  for frames T/2-1 and T/2 (:func:`decode_dual_reference`, ``redecode_middle``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from diffusers.models.autoencoders.autoencoder_kl_temporal_decoder import TemporalDecoder
from torch import nn

from ...core.attention import Attends, plain_processors
from ...core.errors import InputError, ModelFileError
from ...core.progress import ProgressFn, no_progress
from ..vc2.vae import SCALE_FACTOR, build_vae

WINDOW = 16  # the original decodes min(T, temporal_length) frames per call (en_and_decode_n_samples_a_time unset)
HEAD_DIM = 64  # the keyframe attention's head width (the original's MemoryEfficientCrossAttention default)
MIDDLE_FIX_MIN_FRAMES = 6  # below this the scripts' middle re-decode would copy the wrong frames
# what the VideoDecoder adds to the LDM decoder's keys: keyframe steps and temporal mixing
DUAL_REFERENCE_PARTS = ("attn_refinement.", "time_stack.", "mix_factor", "time_mix_conv.")


class KeyframeAttention(Attends, nn.Module):
    """Every frame's pixels attend to both keyframes' pixels (first frame's tokens, then the last's).

    Queries come from the group-normalised frame, keys and values from the raw keyframe features; the
    output projection is added to the frame.  Keys and values are computed once per clip and shared by its
    frames, so the frames are folded into the query sequence (attention per query is independent).
    """

    def __init__(self, channels: int, inner_dim: int, head_dim: int = HEAD_DIM) -> None:
        super().__init__()
        self.heads = inner_dim // head_dim
        self.group_norm = nn.GroupNorm(32, channels, eps=1e-6)
        self.to_q = nn.Linear(channels, inner_dim, bias=False)
        self.to_k = nn.Linear(channels, inner_dim, bias=False)
        self.to_v = nn.Linear(channels, inner_dim, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, channels))

    def forward(self, x: torch.Tensor, keyframes: torch.Tensor, frames: int) -> torch.Tensor:
        bt, c, h, w = x.shape
        b = bt // frames
        q = self.to_q(self.group_norm(x).flatten(2).transpose(1, 2))  # [BT, HW, inner]
        ref = keyframes.to(x.dtype).permute(0, 2, 3, 4, 1).reshape(b, -1, c)  # [B, 2*h*w, C]: first, then last
        out = self.attend(q.reshape(b, frames * h * w, -1), self.to_k(ref), self.to_v(ref), self.heads)
        out = out.reshape(bt, h * w, -1)
        return x + self.to_out(out).transpose(1, 2).reshape(bt, c, h, w)


class KeyframeAdd(nn.Module):
    """Adds a 1x1 conv of the first (last) keyframe's features to each clip's first (last) frame."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor, keyframes: torch.Tensor, frames: int) -> torch.Tensor:
        b = x.shape[0] // frames
        ref = self.conv(keyframes.to(x.dtype).transpose(1, 2).flatten(0, 1)).unflatten(0, (b, 2))
        x = x.unflatten(0, (b, frames))
        x = x.clone() if x.requires_grad else x  # in place when decoding: saves a full-resolution copy
        x[:, 0] += ref[:, 0]
        x[:, -1] += ref[:, 1]
        return x.flatten(0, 1)


class DualReferenceDecoder(TemporalDecoder):
    """diffusers' SVD ``TemporalDecoder`` plus one keyframe step per level (``refinement[level]``) and at the end.

    ``refinement`` is indexed like the original's ``attn_refinement``: level 0 is the finest, the last entry
    runs after the output norm.  ``attention_levels`` maps a level to its attention width (``inner_dim``).
    """

    def __init__(
        self,
        block_out_channels: Sequence[int],
        layers_per_block: int,
        attention_levels: Mapping[int, int],
        in_channels: int = 4,
        out_channels: int = 3,
    ) -> None:
        super().__init__(in_channels, out_channels, tuple(block_out_channels), layers_per_block)
        steps: list[nn.Module] = [
            KeyframeAttention(ch, attention_levels[i]) if i in attention_levels else KeyframeAdd(ch)
            for i, ch in enumerate(block_out_channels)
        ]
        self.refinement = nn.ModuleList([*steps, KeyframeAdd(block_out_channels[0])])

    def forward(  # type: ignore[override]
        self,
        z: torch.Tensor,
        keyframes: Sequence[torch.Tensor],
        frames: int,
        on_stage: Callable[[], None] | None = None,
    ) -> torch.Tensor:
        """``z`` ``[B*T,4,h,w]`` (unscaled), ``keyframes`` per level ``[B,C,2,H,W]`` -> ``[B*T,3,8h,8w]``."""
        indicator = torch.zeros(z.shape[0] // frames, frames, device=z.device)  # only its frame count is read
        stage = on_stage or (lambda: None)
        h = self.mid_block(self.conv_in(z), image_only_indicator=indicator)
        levels = len(self.up_blocks)
        for j, block in enumerate(self.up_blocks):
            level = levels - 1 - j
            for resnet in block.resnets:
                h = resnet(h, image_only_indicator=indicator)
            h = self.refinement[level](h, keyframes[level], frames)
            for upsampler in block.upsamplers or ():
                h = upsampler(h)
            stage()
        h = self.conv_act(self.conv_norm_out(h))
        h = self.conv_out(self.refinement[-1](h, keyframes[-1], frames))
        bt, c, height, width = h.shape
        h = self.time_conv_out(h.reshape(bt // frames, frames, c, height, width).transpose(1, 2))
        return h.transpose(1, 2).reshape(bt, c, height, width)


# ----------------------------------------------------------------------------- loading


_TEMPORAL = {  # VideoResBlock -> diffusers SpatioTemporalResBlock, past "...block.N."
    "time_stack.in_layers.0.": "temporal_res_block.norm1.",
    "time_stack.in_layers.2.": "temporal_res_block.conv1.",
    "time_stack.out_layers.0.": "temporal_res_block.norm2.",
    "time_stack.out_layers.3.": "temporal_res_block.conv2.",
    "mix_factor": "time_mixer.mix_factor",
}
_MID_ATTENTION = {"norm": "group_norm", "q": "to_q", "k": "to_k", "v": "to_v", "proj_out": "to_out.0"}
_TOP = {
    "conv_in.": "conv_in.",
    "norm_out.": "conv_norm_out.",
    "conv_out.time_mix_conv.": "time_conv_out.",
    "conv_out.": "conv_out.",
    "attn_refinement.": "refinement.",
}


def _renamed(key: str, table: Mapping[str, str]) -> str | None:
    """``key`` with the first matching prefix of ``table`` replaced, or None."""
    old = next((p for p in table if key.startswith(p)), None)
    return None if old is None else table[old] + key[len(old) :]


def _resnet_key(rest: str) -> str:
    return _renamed(rest, _TEMPORAL) or "spatial_res_block." + rest.replace("nin_shortcut.", "conv_shortcut.")


def convert_decoder(sd: Mapping[str, torch.Tensor], levels: int) -> dict[str, torch.Tensor]:
    """The original ``decoder.*`` tensors (prefix removed) -> :class:`DualReferenceDecoder` names."""
    out: dict[str, torch.Tensor] = {}
    for key, value in sd.items():
        parts = key.split(".")
        if parts[0] == "mid" and parts[1].startswith("block_"):
            new = f"mid_block.resnets.{int(parts[1][-1]) - 1}." + _resnet_key(".".join(parts[2:]))
        elif parts[0] == "mid" and parts[1] == "attn_1":
            new = f"mid_block.attentions.0.{_MID_ATTENTION[parts[2]]}.{parts[3]}"
            value = value.flatten(1) if value.ndim == 4 else value  # 1x1 conv -> linear
        elif parts[0] == "up" and parts[2] == "block":
            new = f"up_blocks.{levels - 1 - int(parts[1])}.resnets.{parts[3]}." + _resnet_key(".".join(parts[4:]))
        elif parts[0] == "up" and parts[2] == "upsample":
            new = f"up_blocks.{levels - 1 - int(parts[1])}.upsamplers.0." + ".".join(parts[3:])
        else:
            renamed = _renamed(key, _TOP)
            if renamed is None:
                raise ModelFileError(f"Unexpected key in ToonCrafter's VAE decoder: decoder.{key}")
            new = renamed.replace(".norm.", ".group_norm.") if key.startswith("attn_refinement.") else renamed
        out[new] = value
    return out


def decoder_config(sd: Mapping[str, torch.Tensor]) -> dict[str, Any]:
    """:class:`DualReferenceDecoder` arguments read from the original ``decoder.*`` shapes."""
    try:
        levels = sorted({int(k.split(".")[1]) for k in sd if k.startswith("up.")})
        blocks = {int(k.split(".")[3]) for k in sd if k.startswith("up.0.block.")}
        attention = {
            int(k.split(".")[1]): int(v.shape[0]) for k, v in sd.items() if k.startswith("attn_refinement.")
            and k.endswith(".to_q.weight")
        }  # fmt: skip
        return {
            "block_out_channels": tuple(int(sd[f"up.{i}.block.0.conv2.weight"].shape[0]) for i in levels),
            "layers_per_block": len(blocks) - 1,
            "attention_levels": attention,
            "in_channels": int(sd["conv_in.weight"].shape[1]),
            "out_channels": int(sd["conv_out.weight"].shape[0]),
        }
    except (KeyError, IndexError, ValueError) as exc:
        raise ModelFileError(f"ToonCrafter's VAE decoder (first_stage_model.decoder) is incomplete ({exc}).") from exc


def build_dual_reference_decoder(
    sd: Mapping[str, torch.Tensor], dtype: torch.dtype = torch.float32
) -> DualReferenceDecoder:
    """:class:`DualReferenceDecoder` from ``first_stage_model.decoder.*`` tensors (prefix ``decoder.`` removed)."""
    config = decoder_config(sd)
    if config["layers_per_block"] != 2:  # diffusers' mid block has layers_per_block res blocks; LDM has 2
        raise ModelFileError(
            f"ToonCrafter's VAE decoder with {config['layers_per_block'] + 1} res blocks per level is not supported "
            "(the released model has 3)."
        )
    with torch.device("meta"):
        decoder = DualReferenceDecoder(**config)
    result = decoder.load_state_dict(convert_decoder(sd, len(config["block_out_channels"])), strict=False, assign=True)
    if result.missing_keys or result.unexpected_keys:
        raise ModelFileError(
            "ToonCrafter's VAE decoder weights do not fit: "
            f"missing {result.missing_keys[:3]}, unexpected {result.unexpected_keys[:3]}."
        )
    return decoder.to(dtype=dtype).train(False).requires_grad_(False)


def build_dual_reference_vae(sd: Mapping[str, torch.Tensor], dtype: torch.dtype = torch.float32) -> Any:
    """ToonCrafter's ``first_stage_model.*`` (prefix removed) -> diffusers ``AutoencoderKL`` whose ``decoder``
    is the :class:`DualReferenceDecoder` (its encoder is the plain LDM one; ``post_quant_conv`` stays unused).

    The LDM part of the decoder's keys fills diffusers' plain decoder first (``build_vae`` checks every key),
    which is then replaced.
    """
    plain = {
        k: v for k, v in sd.items() if not (k.startswith("decoder.") and any(p in k for p in DUAL_REFERENCE_PARTS))
    }
    vae = build_vae(plain, dtype)
    vae.decoder = build_dual_reference_decoder({k[8:]: v for k, v in sd.items() if k.startswith("decoder.")}, dtype)
    plain_processors(vae.decoder)
    return vae


# ----------------------------------------------------------------------------- keyframes and decoding


def keyframe_hidden_states(vae: Any, first: torch.Tensor, last: torch.Tensor) -> list[torch.Tensor]:
    """The encoder features the decoder reads: per level ``[B,C,2,H,W]`` (first, last), then ``conv_in``'s.

    ``first``/``last`` are IMAGE ``[B,H,W,3]`` 0..1; ``vae`` the diffusers ``AutoencoderKL`` holding the LDM
    encoder.  Level i's feature is its last res block's output (before downsampling), as the original
    ``Encoder.forward(return_hidden_states=True)``; the mid block and ``conv_out`` are not needed.
    """
    if first.shape != last.shape or first.ndim != 4:
        raise InputError(f"The two keyframes must be IMAGE batches of one size, got {first.shape} and {last.shape}.")
    encoder = vae.encoder
    param = encoder.conv_in.weight
    x = torch.stack([first, last], 1).flatten(0, 1)[..., :3].permute(0, 3, 1, 2)
    with torch.no_grad():
        h = encoder.conv_in(x.to(param.device, param.dtype) * 2 - 1)
        features = []
        first_conv = h
        for block in encoder.down_blocks:
            for resnet in block.resnets:
                h = resnet(h, None)
            features.append(h)
            for down in block.downsamplers or ():
                h = down(h)
        features.append(first_conv)
    return [f.unflatten(0, (-1, 2)).transpose(1, 2) for f in features]


def _decode_windows(
    decoder: DualReferenceDecoder, z: torch.Tensor, keyframes: list[torch.Tensor], stage: Callable[[], None]
) -> torch.Tensor:
    """One clip's latents ``[4,T,h,w]`` (scaled) -> ``[T,3,H,W]``, ``WINDOW`` frames per decoder call."""
    param = decoder.conv_in.weight
    frames = (z.transpose(0, 1) / SCALE_FACTOR).to(param.device, param.dtype)
    out = [
        decoder(frames[s : s + WINDOW], keyframes, len(frames[s : s + WINDOW]), stage).float()
        for s in range(0, len(frames), WINDOW)
    ]
    return torch.cat(out)


def decode_clip(
    decoder: DualReferenceDecoder,
    latents: torch.Tensor,
    keyframes: list[torch.Tensor],
    redecode_middle: bool = True,
    progress: ProgressFn | None = None,
) -> torch.Tensor:
    """Latents ``[B,4,T,h,w]`` + :func:`keyframe_hidden_states` -> raw decoder output ``[B,3,T,H,W]`` (about -1..1).

    ``redecode_middle`` repeats the released scripts' second decode for frames T/2-1 and T/2 (clips of at
    least 6 frames; it doubles the decoding time).
    """
    if latents.ndim != 5:
        raise InputError(f"DynamiCrafter latents must be [B,4,T,H,W], got {tuple(latents.shape)}.")
    b, _, t = latents.shape[:3]
    if keyframes[0].shape[0] not in (1, b):
        raise InputError(f"{keyframes[0].shape[0]} keyframe pairs for {b} clips.")
    middle = redecode_middle and t >= MIDDLE_FIX_MIN_FRAMES
    windows = -(-t // WINDOW) + (-(-(t - 2) // WINDOW) if middle else 0)
    total, done = b * windows * len(decoder.up_blocks), [0]
    report = progress or no_progress

    def stage() -> None:
        done[0] += 1
        report(done[0], total)

    clips = []
    with torch.no_grad():
        for i in range(b):
            refs = [k[min(i, k.shape[0] - 1)].unsqueeze(0) for k in keyframes]
            clip = _decode_windows(decoder, latents[i], refs, stage)
            if middle:
                keep = [f for f in range(t) if f not in (1, t - 2)]
                again = _decode_windows(decoder, latents[i][:, keep], refs, stage)
                clip[t // 2 - 1 : t // 2 + 1] = again[t // 2 - 2 : t // 2]
            clips.append(clip.transpose(0, 1).cpu())
    return torch.stack(clips)


def decode_dual_reference(
    vae: Any,
    latents: torch.Tensor,
    first: torch.Tensor,
    last: torch.Tensor,
    redecode_middle: bool = True,
    progress: ProgressFn | None = None,
) -> torch.Tensor:
    """Latents ``[B,4,T,h,w]`` + keyframe IMAGEs ``[B or 1,8h,8w,3]`` -> IMAGE ``[B*T,8h,8w,3]`` 0..1 on the CPU."""
    size = (latents.shape[-2] * 8, latents.shape[-1] * 8)
    for name, image in (("first", first), ("last", last)):
        if image.ndim != 4 or tuple(image.shape[1:3]) != size:
            raise InputError(
                f"The {name} keyframe must be an IMAGE of the clip's size {size[1]}x{size[0]}, "
                f"got shape {tuple(image.shape)}."
            )
    keyframes = keyframe_hidden_states(vae, first.float(), last.float())
    video = decode_clip(vae.decoder, latents, keyframes, redecode_middle, progress)
    return ((video.clamp(-1, 1) + 1) / 2).permute(0, 2, 3, 4, 1).flatten(0, 1)
