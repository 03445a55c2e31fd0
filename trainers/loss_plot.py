"""The loss curve as an IMAGE (Pillow only): raw step losses in grey, a moving average in blue."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

MARGIN = 32


def moving_average(values: Sequence[float], window: int) -> list[float]:
    """Trailing mean over up to ``window`` values (same length as ``values``)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def loss_curve_image(losses: Sequence[float], width: int = 512, height: int = 256) -> torch.Tensor:
    """IMAGE ``[1,height,width,3]`` 0..1 of the loss per step (an empty chart when there are none)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    left, top, right, bottom = MARGIN, 12, width - 8, height - MARGIN
    draw.rectangle((left, top, right, bottom), outline=(160, 160, 160))
    if losses:
        lo, hi = min(losses), max(losses)
        span = hi - lo or 1.0
        n = len(losses)

        def point(i: int, v: float) -> tuple[float, float]:
            x = left + (right - left) * (i / max(1, n - 1))
            return x, bottom - (bottom - top) * (v - lo) / span

        for series, colour in ((losses, (190, 190, 190)), (moving_average(losses, max(1, n // 20)), (30, 90, 200))):
            pts = [point(i, v) for i, v in enumerate(series)]
            if len(pts) == 1:
                pts = pts * 2
            draw.line(pts, fill=colour, width=2)
        draw.text((left + 4, top + 2), f"max {hi:.4f}", fill=(0, 0, 0))
        draw.text((left + 4, bottom - 14), f"min {lo:.4f}", fill=(0, 0, 0))
        draw.text((left, bottom + 6), f"step 1 .. {n}   last {losses[-1]:.4f}", fill=(0, 0, 0))
    else:
        draw.text((left + 8, top + 8), "no training steps yet", fill=(0, 0, 0))
    return torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0)[None]
