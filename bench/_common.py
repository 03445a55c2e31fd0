"""Shared helpers for the benchmark scripts (run as ``python bench/<name>.py`` from the pack folder)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # ``tests.support``: the material, tiny models and meters benches share with the tests

from scripts._pack import import_pack  # noqa: E402 - the pack by path, as ComfyUI and the tests import it

__all__ = [
    "ROOT", "Clip", "UNET_DTYPES", "best_of", "compare_forwards", "compare_unets", "import_pack",
    "interleaved_best", "interleaved_median", "interleaved_medians", "modules_at", "pack_at", "one_thread", "randomize",
    "unet_parser",
]  # fmt: skip


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


def pack_at(ref: str, folder: Path, name: str = "gameanim_base") -> ModuleType | None:
    """The pack's ``core`` and ``nodes`` as they were at git ``ref``, extracted into ``folder`` and imported as package
    ``name`` beside today's pack (old/new ratios in one run).  None when git or ``ref`` is not available (a shallow
    clone), and the caller prints that the comparison was skipped."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "nodes", "core"], capture_output=True)
    if archive.returncode:
        return None
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def modules_at(commit: str, folder: str, names: list[str]) -> dict[str, ModuleType] | None:
    """Modules ``folder/<name>.py`` as they were at ``commit`` (see :func:`pack_at`), or None without that commit."""
    package = f"gameanim_at_{commit[:10]}"
    if pack_at(commit, Path(tempfile.mkdtemp(prefix="gameanim-base-")), package) is None:
        return None
    return {name: importlib.import_module(".".join([package, *Path(folder).parts, name])) for name in names}


def cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of the worker processes of every copy of the pack loaded (each
    ``core.processes``: the tree's and a baseline's; read from ``/proc``, so on Linux), whose share of the work
    ``time.process_time`` does not see (an idle copy's workers add nothing)."""
    total = time.process_time()
    tick = os.sysconf("SC_CLK_TCK")
    copies = [module for name, module in list(sys.modules.items()) if name.endswith(".core.processes")]
    for pid in (pid for module in copies for pid in module.worker_pids()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def interleaved_medians(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds (this process, all threads, and the pack's worker processes) of each callable,
    run round-robin.

    Round-robin so load changes on a shared machine hit all alike; the median rather than the best
    because a threaded run's best case depends on the other sessions leaving both cores free at once.
    """
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), cpu_seconds()
            fn()
            times[name].append((time.perf_counter() - wall, cpu_seconds() - cpu))
    return {
        name: (statistics.median(t[0] for t in runs), statistics.median(t[1] for t in runs))
        for name, runs in times.items()
    }


def one_thread(fn: Callable[[], object], threads: ModuleType | None = None) -> Callable[[], object]:
    """``fn`` on one thread: the pack's frame threads (``WORKERS`` of ``threads``, by default today's
    ``core.threads``; a baseline pack's own module for its side) and OpenCV's own set to one."""
    import cv2

    if threads is None:
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


def interleaved_median(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median wall seconds of each callable after one warm-up call each, measured round-robin (A, B, A, B, ...)
    so load from other processes on a shared machine hits every candidate alike."""
    for fn in fns.values():
        fn()
    return {name: wall for name, (wall, _) in interleaved_medians(fns, repeats).items()}


def randomize(model: Any, seed: int = 1) -> None:
    """Seeded weights of a realistic scale for a reference model (its own init zeroes output layers)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, param in sorted(model.named_parameters()):
            scale = param[0].numel() ** -0.5 if param.ndim >= 2 else 0.05
            param.copy_(torch.randn(param.shape, generator=gen) * scale + (1.0 if param.ndim == 1 else 0.0))


def compare_forwards(name: str, ours: Callable[[], Any], original: Callable[[], Any], repeats: int) -> None:
    """Print the median wall and CPU time of ``ours`` and ``original`` (same inputs, same process, run round-robin
    after a warm-up), their ratios, the largest output difference and, on CUDA, each one's peak memory.  Both run
    under ``torch.no_grad``.  The CPU time (this process, all threads) is the steadier figure on a shared machine:
    other processes taking the cores lengthen the wall time of whichever call they land on."""
    import torch

    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)

    def timed(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            out = fn()
            sync()
            return out

        return run

    with torch.no_grad():
        diff = (ours().float() - original().float()).abs().max().item()  # also the warm-up
        times = interleaved_medians({"ours": timed(ours), "original": timed(original)}, repeats)
        peaks = {}
        if torch.cuda.is_available():
            for label, fn in (("ours", ours), ("original", original)):
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                timed(fn)()
                peaks[label] = (torch.cuda.max_memory_allocated() - base) / 1024**3
    (ours_wall, ours_cpu), (orig_wall, orig_cpu) = times["ours"], times["original"]
    print(f"[{name}] median of {repeats} interleaved runs after a warm-up, {torch.get_num_threads()} threads")
    print(f"  original forward: {orig_wall * 1000:10.1f} ms wall {orig_cpu * 1000:10.1f} ms CPU")
    print(f"  our forward:      {ours_wall * 1000:10.1f} ms wall {ours_cpu * 1000:10.1f} ms CPU")
    print(f"  ours/original:    {ours_wall / orig_wall:10.3f} wall    {ours_cpu / orig_cpu:10.3f} CPU")
    print(f"  max |ours - original|: {diff:.2e}")
    if peaks:
        print(
            f"  peak activation memory (CUDA, beyond the weights): ours {peaks['ours']:.2f} GiB, "
            f"original {peaks['original']:.2f} GiB"
        )


Clip = tuple[int, int, tuple[int, int]]  # a UNet bench's input: batch, frames, latent (height, width)
UNET_DTYPES = ("fp32", "fp16")  # the original UNets run fp32, or fp32 weights under fp16 autocast


def unet_parser(description: str, original: str, latent: str = "32x32") -> argparse.ArgumentParser:
    """The options of the UNet benches (ours against the original code)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("original", type=Path, help=f"a checkout of {original}")
    parser.add_argument("--real", action="store_true", help="also the released config (~12 GB RAM in fp32)")
    parser.add_argument("--frames", type=int, default=8, help="frames of the --real run")
    parser.add_argument("--latent", default=latent, help="latent HxW of the --real run (40x64 = 320x512 pixels)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each model in the --real config")
    parser.add_argument(
        "--tiny-repeats", type=int, default=60, help="timed runs of each model in the tiny config (milliseconds each)"
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--dtype", choices=UNET_DTYPES, default="fp32")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for both models (default: torch's)")
    return parser


def compare_unets(
    name: str,
    ours: Any,
    original: Any,
    inputs: tuple[Any, Any, Any],
    cond: tuple[str, Any],
    args: argparse.Namespace,
    repeats: int,
) -> None:
    """Time ``ours(x, t, ctx, cond)`` against ``original(x, t, context=ctx, <cond name>=cond)`` on ``args.device``:
    ours in ``args.dtype``, the original with fp32 weights under autocast (as its scripts run it)."""
    import torch

    device = torch.device(args.device)
    dtype = torch.float16 if args.dtype == "fp16" else torch.float32
    ours = ours.to(device, dtype)
    original = original.to(device)
    x, t, ctx = (v.to(device) for v in inputs)
    key, value = cond[0], cond[1].to(device)

    def run_original() -> Any:
        with torch.autocast(device.type, dtype, enabled=dtype != torch.float32):
            return original(x, t, context=ctx, **{key: value})

    params = sum(p.numel() for p in ours.parameters())
    label = f"{name}: {params / 1e6:.1f} M params, latent {tuple(x.shape)}, {args.dtype} on {device}"
    compare_forwards(label, lambda: ours(x, t, ctx, value), run_original, repeats)
