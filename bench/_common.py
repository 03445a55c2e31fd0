"""Shared helpers for the benchmark scripts (run as ``python bench/<name>.py`` from the pack folder)."""

from __future__ import annotations

import importlib.util
import statistics
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

__all__ = ["ROOT", "best_of", "import_pack", "interleaved_best", "interleaved_medians", "modules_at", "one_thread"]


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


def modules_at(commit: str, folder: str, names: list[str]) -> dict[str, ModuleType] | None:
    """Modules ``folder/<name>.py`` as they were at ``commit``, loaded beside today's ones (old/new ratios in one run).

    ``names`` in import order: each old module's relative imports of the earlier names are pointed at
    their old versions.  None when git or the commit is not available (a shallow clone), and the
    caller prints that the comparison was skipped.
    """
    loaded: dict[str, ModuleType] = {}
    folder_path = Path(tempfile.mkdtemp(prefix="gameanim-base-"))
    package = ".".join(["gameanim", *Path(folder).parts])
    for name in names:
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:{folder}/{name}.py"], capture_output=True, text=True
        )
        if shown.returncode:
            return None
        source = shown.stdout
        for earlier, module in loaded.items():
            source = source.replace(f"from .{earlier} import", f"from .{module.__name__.rsplit('.', 1)[1]} import")
        alias = f"_at_{commit[:10]}_{name}"
        file = folder_path / f"{alias}.py"
        file.write_text(source)
        spec = importlib.util.spec_from_file_location(f"{package}.{alias}", file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        loaded[name] = module
    return loaded


def interleaved_medians(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds (this process, all threads) of each callable, run round-robin.

    Round-robin so load changes on a shared machine hit all alike; the median rather than the best
    because a threaded run's best case depends on the other sessions leaving both cores free at once.
    """
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {
        name: (statistics.median(t[0] for t in runs), statistics.median(t[1] for t in runs))
        for name, runs in times.items()
    }


def one_thread(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` on one thread: the pack's frame threads (``core.threads.WORKERS``) and OpenCV's own set to one."""
    import cv2
    from gameanim.core import threads

    def run() -> object:
        saved, threads.WORKERS = threads.WORKERS, 1
        saved_cv2 = cv2.getNumThreads()
        cv2.setNumThreads(1)
        try:
            return fn()
        finally:
            threads.WORKERS = saved
            cv2.setNumThreads(saved_cv2)

    return run
