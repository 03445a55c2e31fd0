"""Per-frame work on a few threads, with progress and cancel on the calling thread.

OpenCV and numpy release the GIL inside their loops, so frames drawn or matched with them run on
every core from plain Python threads.  Work is cut into chunks of consecutive items; the caller's
``progress`` is called in order, from the calling thread (ComfyUI's progress bar and interrupt
check are not called from worker threads), after each chunk is done.  An exception from a chunk or
from ``progress`` (a cancel) stops the chunks not yet started and propagates.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from .progress import ProgressFn, no_progress

# Beyond four threads the per-frame loops here are bound by memory bandwidth, not cores.
WORKERS = min(4, os.cpu_count() or 1)


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
    :data:`WORKERS` (read at call time, so a benchmark can set it to 1); with one worker or one
    range everything runs on the calling thread.
    """
    workers = WORKERS if workers is None else workers
    report = progress or no_progress
    step = max(1, every or 1)
    ranges = [(start, min(start + chunk, count)) for start in range(0, count, max(1, chunk))]

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


_helper: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


def halves(work: Callable[[int, int], None], count: int) -> None:
    """``work(0, count // 2)`` on a helper thread kept for it and ``work(count // 2, count)`` on the calling thread.

    For the memory-bound passes over a whole clip that run while the other cores wait (the clip copied in and out of
    the worker processes' arena, its finite check): one thread moved a clip at about 14 GB/s here, two at 1.5x that.
    One item, or one worker (:data:`WORKERS`): all on the calling thread."""
    global _helper
    if count < 2 or WORKERS < 2:
        work(0, count)
        return
    with _helper_lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(1, thread_name_prefix="gameanim-halves")
    job = _helper.submit(work, 0, count // 2)
    try:
        work(count // 2, count)
    finally:
        job.result()
