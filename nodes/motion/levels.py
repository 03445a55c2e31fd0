"""Five motion levels and AnimeGamer's level -> decoder "flow" scalar tables.

AnimeGamer's decoder is conditioned on a raw flow-magnitude scalar per level, and its two scripts
disagree (``inference_Decoder.py``: 0.5 / 2.5 / 10 / 15 / 40, ``app.py``: 0.5 / 1 / 5 / 20 / 40).
The paper's bin edges are unpublished.  Our default edges are the geometric midpoints (rounded)
between the neighbouring representative values that both tables must separate:

* level 1 | 2 between 0.5 and 1 (app's level 2)   -> 0.7
* level 2 | 3 between 2.5 and 5                    -> 3.5
* level 3 | 4 between 10 and 15                    -> 12
* level 4 | 5 between 20 and 40                    -> 28

so every representative value of both tables falls in its own level (checked by the tests).
Geometric midpoints because perceived motion is roughly logarithmic in speed.  A scope equal to an
edge belongs to the upper level.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from ...core.errors import InputError

DECODER_TABLES: dict[str, tuple[float, ...]] = {
    "inference_decoder": (0.5, 2.5, 10.0, 15.0, 40.0),
    "app": (0.5, 1.0, 5.0, 20.0, 40.0),
}
DEFAULT_TABLE = "inference_decoder"
DEFAULT_EDGES: tuple[float, float, float, float] = (0.7, 3.5, 12.0, 28.0)
LEVELS = 5


def check_edges(edges: Sequence[float]) -> tuple[float, ...]:
    """``edges`` as a tuple of four finite, non-negative, strictly increasing numbers, or an InputError."""
    values = tuple(float(e) for e in edges)
    if len(values) != LEVELS - 1:
        raise InputError(f"Five levels need four edges; got {len(values)}: {values}.")
    if not all(math.isfinite(v) and v >= 0 for v in values) or any(
        b <= a for a, b in zip(values[:-1], values[1:], strict=True)
    ):
        raise InputError(f"Level edges must be finite, non-negative and strictly increasing; got {values}.")
    return values


def parse_edges(text: str) -> tuple[float, ...]:
    """Edges from a comma- or space-separated string such as ``"0.7, 3.5, 12, 28"``."""
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        values = [float(p) for p in parts]
    except ValueError as exc:
        raise InputError(
            f"Could not read level edges from {text!r}; write four numbers like '0.7, 3.5, 12, 28'."
        ) from exc
    return check_edges(values)


def level_of(scope: float, edges: Sequence[float] = DEFAULT_EDGES) -> int:
    """The level 1..5 of a motion ``scope`` (reference px/frame)."""
    if not math.isfinite(scope) or scope < 0:
        raise InputError(f"A motion scope must be a finite non-negative number; got {scope}.")
    return 1 + bisect.bisect_right(check_edges(edges), scope)


def decoder_value(level: int, table: str = DEFAULT_TABLE) -> float:
    """AnimeGamer's decoder scalar for ``level`` from the ``table`` of ``inference_decoder`` or ``app``."""
    if table not in DECODER_TABLES:
        raise InputError(f"Unknown decoder table {table!r}; choose one of {', '.join(DECODER_TABLES)}.")
    if int(level) != level or not 1 <= level <= LEVELS:
        raise InputError(f"A motion level is an integer from 1 to {LEVELS}; got {level}.")
    return DECODER_TABLES[table][int(level) - 1]


def released_flow(level: int, table: str = DEFAULT_TABLE) -> float:
    """The flow AnimeGamer's released scripts feed the decoder for an MLLM-predicted ``level``.

    Unlike :func:`decoder_value` this never refuses a level: the scripts map anything that is not
    1-4 (level 5, or 0 after the MLLM produced no parsable level) to the last entry (40).
    """
    if table not in DECODER_TABLES:
        raise InputError(f"Unknown decoder table {table!r}; choose one of {', '.join(DECODER_TABLES)}.")
    values = DECODER_TABLES[table]
    return values[int(level) - 1] if 1 <= int(level) < LEVELS else values[-1]
