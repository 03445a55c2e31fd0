"""A heads-up display for a played turn: stamina / social / entertainment bars and the turn text.

The overlay is drawn once with Pillow (RGBA) and alpha-composited onto every frame with torch, so a
17-frame shot costs one small drawing, not 17.
"""

from __future__ import annotations

import textwrap

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

from ....core.errors import InputError
from .game_state import STATE_NAMES

BAR_COLOURS = {"stamina": (90, 200, 90), "social": (80, 150, 235), "entertainment": (240, 180, 60)}


def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def hud_overlay(width: int, height: int, states: dict[str, int], caption: str, opacity: float = 0.75) -> torch.Tensor:
    """An ``(H, W, 4)`` float RGBA overlay in 0..1: three labelled bars (top left) and wrapped text (bottom)."""
    scale = max(0.5, min(width, height) / 480)
    font = _font(max(8, int(14 * scale)))
    layer = Image.new("RGBA", (width, height), (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    pad, bar_w, bar_h = int(8 * scale), int(150 * scale), int(12 * scale)
    label_w = int(max(draw.textlength(f"{name} 100", font=font) for name in STATE_NAMES)) + pad
    panel = (pad // 2, pad // 2, pad + label_w + bar_w + pad, pad + len(STATE_NAMES) * (bar_h + pad))
    draw.rectangle(panel, fill=(0, 0, 0, int(160 * opacity)))
    for row, name in enumerate(STATE_NAMES):
        value = max(0, min(100, int(states[name])))
        y = pad + row * (bar_h + pad)
        draw.text((pad, y - 1), f"{name} {value}", fill=(255, 255, 255, 255), font=font)
        x0 = pad + label_w
        draw.rectangle((x0, y, x0 + bar_w, y + bar_h), outline=(255, 255, 255, 220))
        draw.rectangle(
            (x0 + 1, y + 1, x0 + 1 + int((bar_w - 2) * value / 100), y + bar_h - 1), fill=(*BAR_COLOURS[name], 255)
        )
    if caption.strip():
        chars = max(10, int(width / (7.5 * scale)))
        lines = textwrap.wrap(caption.strip(), chars)[:3]
        line_h = int(17 * scale)
        top = height - pad - line_h * len(lines)
        draw.rectangle((0, top - pad // 2, width, height), fill=(0, 0, 0, int(160 * opacity)))
        for i, line in enumerate(lines):
            draw.text((pad, top + i * line_h), line, fill=(255, 255, 255, 255), font=font)
    return torch.from_numpy(np.asarray(layer, dtype=np.float32) / 255.0)


def draw_hud(images: torch.Tensor, states: dict[str, int], caption: str = "", opacity: float = 0.75) -> torch.Tensor:
    """``images`` ``[T,H,W,C]`` 0..1 with the HUD composited on every frame (same shape and dtype)."""
    if images.ndim != 4 or images.shape[-1] not in (3, 4):
        raise InputError(f"The HUD needs an IMAGE [frames, height, width, 3]; got shape {tuple(images.shape)}.")
    if not 0.0 <= opacity <= 1.0:
        raise InputError(f"The HUD opacity must be within 0..1 (got {opacity}).")
    overlay = hud_overlay(images.shape[2], images.shape[1], states, caption, opacity).to(images.device)
    alpha = overlay[..., 3:4]
    rgb = images[..., :3] * (1 - alpha) + overlay[..., :3] * alpha
    out = torch.cat([rgb, images[..., 3:]], dim=-1) if images.shape[-1] == 4 else rgb
    return out.clamp(0, 1).to(images.dtype)
