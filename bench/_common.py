"""Shared helpers for the benchmark scripts (run as ``python bench/<name>.py`` from the pack folder)."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # ``tests.support``: the material, tiny models and meters benches share with the tests


def import_pack() -> ModuleType:
    """Import the pack by path as ``gameanim`` (as ComfyUI and the tests do)."""
    if "gameanim" in sys.modules:
        return sys.modules["gameanim"]
    spec = importlib.util.spec_from_file_location(
        "gameanim", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["gameanim"] = module
    spec.loader.exec_module(module)
    return module


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
