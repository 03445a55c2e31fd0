"""Shared helpers for the benchmark scripts (run as ``python bench/<name>.py`` from the pack folder)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # ``tests.support``: the material, tiny models and meters benches share with the tests

from scripts._pack import import_pack  # noqa: E402 - the pack by path, as ComfyUI and the tests import it

__all__ = ["ROOT", "best_of", "import_pack", "interleaved_best"]


def best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of ``repeats`` timed calls, in seconds (the least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved_best(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best time of each callable, measured round-robin so load changes on a shared machine hit all alike."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best
