"""Shared helpers for the benchmark scripts (run as ``python bench/<name>.py`` from the pack folder)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # ``tests.support``: the material, tiny models and meters benches share with the tests

from scripts._pack import import_pack  # noqa: E402 - the pack by path, as ComfyUI and the tests import it

__all__ = ["ROOT", "best_of", "import_pack", "interleaved_best", "module_at"]


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


def module_at(commit: str, path: str, replace: dict[str, str] | None = None) -> ModuleType | None:
    """The pack module at ``path`` as it was at ``commit``, loaded beside today's (for old/new ratios in one run).

    ``replace`` edits the old source before loading, e.g. to point its relative import of a sibling
    at that sibling's old version (also loaded with this function).  None when git or the commit is
    not available (a shallow clone): the caller prints that the comparison was skipped.
    """
    shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True)
    if shown.returncode:
        return None
    source = shown.stdout
    for old, new in (replace or {}).items():
        source = source.replace(old, new)
    package = ".".join(["gameanim", *Path(path).parent.parts])
    name = f"{package}._at_{commit[:10]}_{Path(path).stem}"
    folder = Path(tempfile.mkdtemp(prefix="gameanim-base-"))
    file = folder / f"{Path(path).stem}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
