"""The OpenCLIP ViT-H image tower of DynamiCrafter, from the checkpoint's own ``embedder.model.visual.*``.

The network is open_clip's ``VisionTransformer`` (built from the shapes); what DynamiCrafter takes from it
is *not* open_clip's pooled output but every token after the last block, before ``ln_post``
(``FrozenOpenCLIPImageEmbedderV2.encode_with_vision_transformer``): ``[B, 257, 1280]`` for ViT-H/14 at 224.
Preprocessing as the original: bicubic antialiased resize to 224x224 (kornia, ``align_corners=True``), then
the CLIP mean/std normalisation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch
from torch import nn

from ...core.errors import InputError, ModelFileError

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HEAD_WIDTH = {1280: 80}  # ViT-H-14 uses 16 heads of 80; open_clip's default head width is 64


class ImageTokens(nn.Module):
    """``forward(images)``: IMAGE-like ``[B,3,H,W]`` in -1..1 -> tokens ``[B, 1 + grid^2, width]``."""

    def __init__(self, visual: nn.Module) -> None:
        super().__init__()
        self.visual = visual

    def preprocess(self, x: torch.Tensor) -> torch.Tensor:
        import kornia

        size = self.visual.image_size
        x = kornia.geometry.resize(x, tuple(size), interpolation="bicubic", align_corners=True, antialias=True)
        x = (x + 1.0) / 2.0
        mean = torch.tensor(CLIP_MEAN, device=x.device, dtype=x.dtype)
        std = torch.tensor(CLIP_STD, device=x.device, dtype=x.dtype)
        return kornia.enhance.normalize(x, mean, std)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.ndim != 4 or images.shape[1] != 3:
            raise InputError(f"The image encoder takes [B,3,H,W] images in -1..1, got {tuple(images.shape)}.")
        v = self.visual
        x = self.preprocess(images.to(v.conv1.weight.dtype))
        x = v.conv1(x).flatten(2).transpose(1, 2)
        cls = v.class_embedding.to(x.dtype).expand(x.shape[0], 1, -1)
        x = torch.cat([cls, x], dim=1) + v.positional_embedding.to(x.dtype)
        x = v.ln_pre(v.patch_dropout(x))
        return v.transformer(x)


def build_image_encoder(sd: Mapping[str, torch.Tensor], dtype: torch.dtype = torch.float32) -> ImageTokens:
    """open_clip ``VisionTransformer`` with ``embedder.model.visual.*`` weights (prefix removed)."""
    from open_clip.transformer import VisionTransformer

    try:
        width, _, patch, _ = sd["conv1.weight"].shape
        grid = int(round((sd["positional_embedding"].shape[0] - 1) ** 0.5))
        layers = len({m.group(1) for k in sd if (m := re.match(r"transformer\.resblocks\.(\d+)\.", k))})
        mlp = sd["transformer.resblocks.0.mlp.c_fc.weight"].shape[0] / width
        output_dim = sd["proj"].shape[1]
    except KeyError as exc:
        raise ModelFileError(
            f"The image encoder (embedder) weights have no {exc}: not an OpenCLIP image tower."
        ) from exc
    heads = max(1, width // HEAD_WIDTH.get(int(width), 64))
    with torch.device("meta"):
        visual = VisionTransformer(
            image_size=grid * patch,
            patch_size=patch,
            width=width,
            layers=layers,
            heads=heads,
            mlp_ratio=mlp,
            output_dim=output_dim,
        )
    result = visual.load_state_dict(dict(sd), strict=False, assign=True)
    if result.missing_keys or result.unexpected_keys:
        raise ModelFileError(
            f"The OpenCLIP image weights do not fit: missing {result.missing_keys[:3]}, "
            f"unexpected {result.unexpected_keys[:3]}."
        )
    return ImageTokens(visual).to(dtype=dtype).train(False).requires_grad_(False)
