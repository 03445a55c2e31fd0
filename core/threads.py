"""Per-frame work on a few threads, with progress and cancel on the calling thread.

OpenCV and numpy release the GIL inside their loops, so frames drawn or matched with them run on
every core from plain Python threads.  Work is cut into chunks of consecutive items; the caller's
``progress`` is called in order, from the calling thread (ComfyUI's progress bar and interrupt
check are not called from worker threads), after each chunk is done.  An exception from a chunk or
from ``progress`` (a cancel) stops the chunks not yet started and propagates.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from .progress import ProgressFn, no_progress

# Beyond four threads the per-frame loops here are bound by memory bandwidth, not cores.
WORKERS = min(4, os.cpu_count() or 1)
# Linux's instantaneous count of runnable threads, system-wide, is the 4th field ("running/total").
LOADAVG = "/proc/loadavg"
# Samples of that count per decision (their median), so one passing task does not decide.
SAMPLES = 3
# A decision is reused for this long (seconds): a clip's steps call run_chunks several times in a row.
REUSE_SECONDS = 0.25
_last_decision = (-float("inf"), 0)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. a container's or ``taskset``'s share)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def runnable_elsewhere(text: str) -> int:
    """Threads other than the reading one that are runnable, from the text of ``/proc/loadavg``."""
    running = text.split()[3].split("/")[0]
    return max(0, int(running) - 1)


def free_cores() -> int:
    """Usable cores not taken by other runnable threads right now (at least one).

    Why not the load average: it counts this process's own recent work, so after a minute of our
    own threads it would report the cores busy.  The runnable count is read a few times, 1 ms
    apart, and the median taken.  It is machine-wide, so when this process may use only some of
    the machine's cores (affinity, a container's cpuset) the others are taken to be spread evenly
    and only their share on our cores counts.  Without ``/proc`` (Windows, macOS) every usable core
    is free.
    """
    cores = usable_cores()
    share = cores / max(cores, os.cpu_count() or cores)
    samples = []
    for i in range(SAMPLES):
        if i:
            time.sleep(0.001)
        try:
            with open(LOADAVG, encoding="ascii") as handle:
                samples.append(runnable_elsewhere(handle.read()))
        except (OSError, ValueError, IndexError):
            return cores
    return max(1, cores - round(statistics.median(samples) * share))


def forget_free_cores() -> None:
    """Make the next :func:`default_workers` read the free cores afresh."""
    global _last_decision
    _last_decision = (-float("inf"), 0)


def default_workers() -> int:
    """Threads for a call that names none: :data:`WORKERS`, but no more than the free cores.

    On a core another process keeps busy a second thread of ours only time-shares with it and adds
    switching and cache traffic (docs/pose.md measures both cases), so a busy machine gets fewer threads.
    The free cores are re-read at most every :data:`REUSE_SECONDS`.
    """
    global _last_decision
    if WORKERS <= 1:
        return 1
    now = time.monotonic()
    if now - _last_decision[0] > REUSE_SECONDS:
        _last_decision = (now, free_cores())
    return min(WORKERS, _last_decision[1])


def run_chunks(
    work: Callable[[int, int], None],
    count: int,
    chunk: int,
    progress: ProgressFn | None = None,
    workers: int | None = None,
    every: int | None = None,
) -> None:
    """Call ``work(start, stop)`` for consecutive ranges of ``chunk`` items covering ``0..count``.

    ``work`` writes its results itself (e.g. into a preallocated array); ranges never overlap.
    ``progress(done, count)`` follows the ranges in order: after each range, or with ``every``
    only when ``done`` reaches a multiple of ``every`` and at the end (small ranges share the work
    evenly between threads while progress keeps its own step).  ``workers`` defaults to
    :func:`default_workers` (:data:`WORKERS`, read at call time so a benchmark can set it to 1,
    capped by the cores free right now); with one worker or one range everything runs on the
    calling thread.
    """
    ranges = [(start, min(start + chunk, count)) for start in range(0, count, max(1, chunk))]
    if workers is None:
        workers = default_workers() if len(ranges) > 1 else 1
    report = progress or no_progress
    step = max(1, every or 1)

    def done(stop: int, last: int) -> int:
        if stop == count or stop // step > last // step:
            report(stop, count)
            return stop
        return last

    last = 0
    if workers <= 1 or len(ranges) <= 1:
        for start, stop in ranges:
            work(start, stop)
            last = done(stop, last)
        return
    with ThreadPoolExecutor(min(workers, len(ranges))) as pool:
        jobs = [pool.submit(work, start, stop) for start, stop in ranges]
        try:
            for job, (_, stop) in zip(jobs, ranges, strict=True):
                job.result()
                last = done(stop, last)
        finally:
            for job in jobs:
                job.cancel()
