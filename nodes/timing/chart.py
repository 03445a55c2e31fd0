"""A picture of the timing chart, shown on the node: spacing ticks above, exposure bar below.

Top row: each segment between two keys is a line with the keys as tall ticks (labelled with their
source frame) and the in-betweens as short ticks at their spacing (the distance fraction, so an ease
bunches the ticks near the keys).  Bottom row: the exposure sheet, one cell per output drawing, as
wide as its duration (keys orange, in-betweens grey, numbered in output order).
"""

from __future__ import annotations

import cv2
import numpy as np

from .spacing import ChartFrame

KEY = (235, 140, 40)
INBETWEEN = (150, 150, 160)
INK = (30, 30, 30)
FONT = cv2.FONT_HERSHEY_SIMPLEX


def draw_chart(chart: list[ChartFrame], title: str, width: int = 640, cycle: int | None = None) -> np.ndarray:
    """RGB float image ``[H, width, 3]`` (0..1) of ``chart``; ``cycle``: a loop's frame count (labels wrap)."""
    height, margin = 170, 24
    image = np.full((height, width, 3), 250, np.uint8)
    cv2.putText(image, title, (margin, 18), FONT, 0.45, INK, 1, cv2.LINE_AA)
    segments = sorted({(c.key_a, c.key_b) for c in chart if c.key_b > c.key_a})
    span = max(sum(b - a for a, b in segments), 1)
    usable = width - 2 * margin
    x0, line_y = float(margin), 62
    for a, b in segments:
        x1 = x0 + usable * (b - a) / span
        cv2.line(image, (int(x0), line_y), (int(x1), line_y), INK, 1, cv2.LINE_AA)
        for frame in (a, b):
            x = int(x0 if frame == a else x1)
            cv2.line(image, (x, line_y - 14), (x, line_y + 14), KEY, 3)
            label = str(frame % cycle if cycle else frame)
            cv2.putText(image, label, (x - 6, line_y - 18), FONT, 0.38, INK, 1, cv2.LINE_AA)
        for c in chart:
            if not c.is_key and (c.key_a, c.key_b) == (a, b):
                x = int(round(x0 + (x1 - x0) * c.position))
                cv2.line(image, (x, line_y - 7), (x, line_y + 7), INBETWEEN, 2)
        x0 = x1
    total = max(sum(c.duration for c in chart), 1)
    cell_x, top, bottom = float(margin), 110, 140
    for index, c in enumerate(chart):
        right = cell_x + usable * c.duration / total
        cv2.rectangle(image, (int(cell_x), top), (int(right) - 1, bottom), KEY if c.is_key else INBETWEEN, -1)
        cv2.rectangle(image, (int(cell_x), top), (int(right) - 1, bottom), INK, 1)
        if right - cell_x >= 14:
            cv2.putText(image, str(index), (int(cell_x) + 2, bottom - 9), FONT, 0.33, INK, 1, cv2.LINE_AA)
        cell_x = right
    cv2.putText(image, f"{len(chart)} drawings, {total} frames", (margin, height - 10), FONT, 0.38, INK, 1, cv2.LINE_AA)
    return image.astype(np.float32) / 255.0
