"""One clip's per-frame work on every core: the caller and the pack's own worker processes run the same function.

Python threads (:mod:`.threads`) share one interpreter lock.  The sprite matte makes some 1,500 short numpy and
OpenCV calls a frame; each hands the lock over, and with two threads those handovers, not the work, set the pace
(docs/sprite.md, "Speed of the matte").  Here every rank is a process with a lock of its own, and every rank runs the
same function on the same clip (single program, multiple data): :meth:`ProcessRanks.map` computes the items the rank
takes (as it comes for them, from :class:`Tickets`) and hands every rank all the results, so the code between the maps
runs on every rank on the same values and the function reads as it would on one thread.  The results are exact: each
item is computed by the same code on the same inputs as on a thread, whichever rank takes it.

Large arrays travel through one shared-memory arena: the clip, the arrays :meth:`ProcessRanks.empty` allocates (per-frame
work writes its output into them in place) and the results' buffers, pickled out of band into the sender's part of the
arena, where the other ranks read them without a copy.  The arena is kept between clips: a fresh one costs more than the
matte itself (its pages faulted in one by one, about 250 ms for 280 MB here).  Clips whose arena would pass
``ARENA_MAX`` or the free shared memory run on threads.

The workers start on first use as ``python process_worker.py`` (not through :mod:`multiprocessing`: its workers import
the parent's ``__main__``, which under ComfyUI is the server's own main.py), connect back over an authenticated local
connection, and stop when the caller's process ends.  Between clips they sleep; the caller wakes them before it copies
a clip in, so the first map does not wait for a sleeping one.  Any exception on the caller's side (a cancel, bad input)
stops them and they start afresh next time; when they die or fail, the function runs again on threads, so no work is
lost; when they cannot start, every clip of the process runs on threads.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import pickle
import secrets
import select
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from multiprocessing import connection, shared_memory
from pathlib import Path
from typing import Any, Protocol, TypeVar

import cv2
import numpy as np
from threadpoolctl import ThreadpoolController

from . import threads
from .progress import ProgressFn, no_progress

WORKER_SCRIPT = Path(__file__).with_name("process_worker.py")
ALIGN = 4096
SMALL = 1 << 16  # buffers smaller than this travel inside the pickle, through the connection
ARENA_MAX = 1 << 30  # bytes of shared memory the arena may hold between clips (RAM the models share)
START_TIMEOUT = 60.0  # seconds for the workers to import numpy and OpenCV and connect
# Seconds a rank polls for a message or a map's tickets before it sleeps.  The ranks wait for each other at every
# map's end, mostly for less than this; a rank that slept there was woken late (on a virtual machine an idle core
# takes a while to wake) or onto the other rank's core.  On the bench's two virtual cores the write handing out a
# map's frames took 5 us in the median but up to 4 ms, and polling took the matte from 14.0 to 12.5 ms/frame.
SPIN = 0.005
ENABLED = True  # False: threads only (a test patching functions in the caller alone; the bench's threads side)
# A worker's environment.  glibc's malloc keeps what it frees (below 64 MB a block, up to 1 GB at the heap's top): it
# gave a young worker's freed arrays back to the system after every clip and faulted them in again, 2,000 page faults a
# clip.  OpenCV and BLAS run on the worker's thread alone (see one_thread_each).
WORKER_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(64 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
    "OPENCV_FOR_THREADS_NUM": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}

log = logging.getLogger(__name__)
yield_core = getattr(os, "sched_yield", lambda: time.sleep(0))  # Windows has no sched_yield
T = TypeVar("T")


class Ranks(Protocol):
    """What a function run by :func:`run` gets as its first argument."""

    rank: int
    size: int

    def map(self, fn: Callable[..., T], *iterables: Iterable) -> list[T]:
        """``[fn(*args) for args in zip(*iterables)]``, shared out over the ranks; every rank gets every result."""

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised array that every rank sees (per-frame work writes its share into it)."""

    def for_each(self, fn: Callable[[int], None], count: int, progress: ProgressFn) -> None:
        """``fn(i)`` for ``i < count`` (writing into arrays from :meth:`empty`), with progress on the caller's side."""


class ThreadRanks:
    """One process: the items on a thread pool (the fallback, and the path on one core)."""

    rank, size = 0, 1

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self.pool = pool

    def map(self, fn: Callable[..., T], *iterables: Iterable) -> list[T]:
        return list(self.pool.map(fn, *iterables))

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        return np.empty(shape, dtype)

    def for_each(self, fn: Callable[[int], None], count: int, progress: ProgressFn) -> None:
        threads.run_chunks(lambda start, _: fn(start), count, 1, progress)


class WorkerFailed(RuntimeError):
    """A worker process died or raised: the caller runs the function again on threads."""


class Arena:
    """The shared memory: ``[0, shared)`` allocated in the same order on every rank, then each rank's part for the
    buffers it sends (``scratch`` bytes each)."""

    def __init__(self, shm: shared_memory.SharedMemory, owner: bool) -> None:
        self.shm, self.owner = shm, owner
        self.bytes = np.ndarray((shm.size,), np.uint8, buffer=shm.buf)
        self.address = self.bytes.ctypes.data
        self.shared = self.scratch = 0

    @classmethod
    def create(cls, size: int) -> Arena:
        return cls(shared_memory.SharedMemory(create=True, size=size), owner=True)

    @classmethod
    def attach(cls, name: str) -> Arena:
        # The creator unlinks it; a worker's resource tracker would unlink it too early, so it is not told.
        if sys.version_info >= (3, 13):
            shm = shared_memory.SharedMemory(name=name, track=False)
        elif os.name == "posix":
            shm = _untracked(name)
        else:  # Windows: no resource tracker; the mapping ends with its last handle
            shm = shared_memory.SharedMemory(name=name)
        return cls(shm, owner=False)

    def view(self, start: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` on the arena's bytes from ``start``."""
        dtype = np.dtype(dtype)
        return self.bytes[start : start + int(np.prod(shape)) * dtype.itemsize].view(dtype).reshape(shape)

    def holds(self, array: np.ndarray) -> bool:
        start = array.__array_interface__["data"][0]
        return self.address <= start < self.address + self.shm.size

    def close(self) -> None:
        self.bytes = None
        try:
            self.shm.close()
        except BufferError:  # arrays of an aborted clip still point into it: the mapping goes with them
            pass
        if self.owner:
            self.shm.unlink()


def _untracked(name: str) -> shared_memory.SharedMemory:
    """Attach without registering with the resource tracker (Python < 3.13 has no ``track=False``)."""
    from multiprocessing import resource_tracker

    register = resource_tracker.register
    resource_tracker.register = lambda *args, **kwargs: None
    try:
        return shared_memory.SharedMemory(name=name)
    finally:
        resource_tracker.register = register


class Tickets:
    """A map's items handed out as the ranks come for them: item numbers in a pipe every rank reads from (``read``
    and ``write`` are its file descriptors; the workers inherit the read end).

    Frames cost unlike amounts (a wider pose, more pockets): a rank done early takes the next frame instead of waiting
    for the other at the map's end.  The caller writes a map's item numbers and one end mark per rank in one write
    (atomic up to ``select.PIPE_BUF``); each rank reads one number at a time until it reads an end mark.  No rank
    leaves a map's exchange before every rank has read its end mark, so the pipe is empty when the next map's numbers
    are written."""

    END = 0xFFFFFFFF
    MOST = select.PIPE_BUF // 4  # numbers and end marks one write can hold

    def __init__(self, read: int, write: int | None = None) -> None:
        self.read, self.write = read, write

    def fit(self, count: int, size: int) -> bool:
        """Whether a map of ``count`` items is handed out so (larger ones: frame ``i`` to rank ``i % size``)."""
        return count + size <= self.MOST

    def deal(self, count: int, size: int) -> None:
        """The caller's part: the numbers ``0..count-1`` and ``size`` end marks."""
        marks = np.concatenate([np.arange(count), np.full(size, self.END)]).astype("<u4")
        os.write(self.write, marks.tobytes())

    def take(self) -> int | None:
        """The next item number, or None at this rank's end mark."""
        ready = select.poll()  # not select.select: a process with many files open has descriptors past 1024
        ready.register(self.read, select.POLLIN)
        spin(lambda: bool(ready.poll(0)))
        number = int(np.frombuffer(os.read(self.read, 4), "<u4")[0])
        return None if number == self.END else number


class ProcessRanks:
    """One rank of a clip's run: its share of each map, the shared arrays, the exchange of results."""

    def __init__(
        self,
        rank: int,
        size: int,
        links: list[connection.Connection],
        arena: Arena,
        shared: int,
        tickets: Tickets | None = None,
    ) -> None:
        self.rank, self.size, self.links, self.arena, self.tickets = rank, size, links, arena, tickets
        self.next = aligned(shared)  # the clip itself lies before
        self.sent = 0  # bytes of this rank's part of the arena in use
        self.progress: ProgressFn | None = None

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        count = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if self.next + count > self.arena.shared:
            raise RuntimeError("the arena's shared part is too small for this clip (a bug in its estimate)")
        array = self.arena.view(self.next, shape, dtype)
        self.next += aligned(count)
        return array

    def map(self, fn: Callable[..., T], *iterables: Iterable) -> list[T]:
        items = list(zip(*iterables, strict=False))  # as Executor.map: up to the shortest
        count = len(items)
        if self.tickets is not None and self.tickets.fit(count, self.size):
            if self.rank == 0:
                self.tickets.deal(count, self.size)
            order: Iterable[int] = iter(self.tickets.take, None)
        else:
            order = range(self.rank, count, self.size)
        mine, told = [], 0
        for i in order:
            mine.append((i, fn(*items[i])))
            if self.progress is not None:  # every count once, in order (items up to i are taken); the last after
                for done in range(told + 1, min(count - 1, i + 1) + 1):  # the exchange
                    self.progress(done, count)
                told = max(told, min(count - 1, i + 1))
        shares = self.exchange(self.pack(mine))
        if self.progress is not None:  # the counts of the items the other ranks took last (the last: for_each's)
            for done in range(told + 1, count):
                self.progress(done, count)
        shares[self.rank] = mine
        out: list = [None] * count
        for share in shares.values():
            for i, result in share:
                out[i] = result
        return out

    def for_each(self, fn: Callable[[int], None], count: int, progress: ProgressFn) -> None:
        self.progress = progress if self.rank == 0 else None
        try:
            self.map(fn, range(count))
        finally:
            self.progress = None
        if self.rank == 0:
            progress(count, count)

    def pack(self, obj: Any) -> tuple[bytes, list[tuple[int, int]]]:
        """``obj`` pickled, its large buffers copied into this rank's part of the arena: ``(pickle, spans)``.  A
        buffer already in the arena's shared part (a frame of a :meth:`empty` array) travels as its place."""
        base = self.arena.shared + self.rank * self.arena.scratch
        spans: list[tuple[int, int]] = []

        def out_of_band(buffer: pickle.PickleBuffer) -> bool:
            raw = buffer.raw()
            count = raw.nbytes
            at = np.frombuffer(raw, np.uint8).ctypes.data - self.arena.address if count else -1
            if 0 <= at and at + count <= self.arena.shared:
                spans.append((at, count))
                return False
            if count < SMALL or self.sent + count > self.arena.scratch:
                return True  # inside the pickle
            start = base + self.sent
            self.arena.bytes[start : start + count] = np.frombuffer(raw, np.uint8)
            spans.append((start, count))
            self.sent += -(-count // 64) * 64
            return False

        return pickle.dumps(obj, protocol=5, buffer_callback=out_of_band), spans

    def unpack(self, packed: tuple[bytes, list[tuple[int, int]]]) -> Any:
        """The other rank's object; its large arrays are read-only views of the arena (of the sender's part, or of
        the shared part where it wrote them: every other rank reads the same memory, and a result is never changed in
        place)."""
        data, spans = packed
        view = self.arena.shm.buf
        return pickle.loads(data, buffers=[view[start : start + count].toreadonly() for start, count in spans])

    def exchange(self, packed: tuple[bytes, list]) -> dict[int, Any]:
        """Every other rank's share of a map.  The workers send theirs to the caller (rank 0), which sends each worker
        the others'."""
        if self.rank == 0:
            shares = {0: packed}
            for rank, link in enumerate(self.links, start=1):
                shares[rank] = receive(link, "result")
            for rank, link in enumerate(self.links, start=1):
                send(link, ("results", {r: s for r, s in shares.items() if r != rank}))
        else:
            link = self.links[0]
            send(link, ("result", packed))
            shares = receive(link, "results")
        return {rank: self.unpack(share) for rank, share in shares.items() if rank != self.rank}


def aligned(count: int) -> int:
    """``count`` bytes rounded up to whole pages (``ALIGN``)."""
    return -(-count // ALIGN) * ALIGN


def send(link: connection.Connection, message: tuple) -> None:
    try:
        link.send(message)
    except OSError as exc:
        raise WorkerFailed(f"a worker process ended unexpectedly ({exc})") from None


def spin(ready: Callable[[], bool]) -> None:
    """Return when ``ready()`` or after :data:`SPIN` seconds, yielding the core between polls (a rank that waits
    for another stays awake: see SPIN)."""
    deadline = time.perf_counter() + SPIN
    while not ready() and time.perf_counter() < deadline:
        yield_core()


def receive(link: connection.Connection, kind: str) -> Any:
    try:
        spin(lambda: link.poll(0))
        message = link.recv()
    except (EOFError, OSError) as exc:
        raise WorkerFailed(f"a worker process ended unexpectedly ({exc or type(exc).__name__})") from None
    if message[0] == "error":
        raise WorkerFailed(f"a worker process failed:\n{message[1]}")
    if message[0] != kind:
        raise WorkerFailed(f"a worker process answered {message[0]!r} where {kind!r} was due")
    return message[1]


class Workers:
    """The running worker processes (ranks ``1..size-1``) and the arena."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.arena: Arena | None = None
        key = secrets.token_bytes(32)
        self.listener = connection.Listener(authkey=key)
        package, root = __package__.rsplit(".", 1)[0], str(Path(__file__).resolve().parents[1])
        self.procs = []
        self.links: list[connection.Connection | None] = [None] * (size - 1)
        # The tickets' pipe, inherited by the workers (POSIX; elsewhere frame i goes to rank i % size).
        self.tickets = Tickets(*os.pipe()) if os.name == "posix" else None
        inherit = {"pass_fds": (self.tickets.read,)} if self.tickets else {}
        hello = {"package": package, "root": root, "address": self.listener.address, "key": key.hex()}
        hello["tickets"] = self.tickets.read if self.tickets else None  # a file descriptor of this pipe
        try:
            for rank in range(1, size):
                proc = subprocess.Popen(
                    [sys.executable, str(WORKER_SCRIPT)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    env={**os.environ, **WORKER_ENV},
                    **inherit,
                )
                self.procs.append(proc)
                proc.stdin.write(json.dumps({**hello, "rank": rank, "size": size}).encode() + b"\n")
                proc.stdin.close()
            self.accept()
        except BaseException:
            self.close()
            raise

    def accept(self) -> None:
        """Wait for every worker to connect and name its rank (within ``START_TIMEOUT``)."""

        def accept_all() -> None:
            for _ in range(self.size - 1):
                link = self.listener.accept()
                self.links[link.recv() - 1] = link

        waiting = threading.Thread(target=accept_all, daemon=True)
        waiting.start()
        deadline = time.monotonic() + START_TIMEOUT
        while waiting.is_alive() and time.monotonic() < deadline:
            waiting.join(0.05)
            ended = [proc.returncode for proc in self.procs if proc.poll() is not None]
            if ended:
                raise WorkerFailed(
                    f"a worker process exited with code {ended[0]} before connecting (see the log above)"
                )
        if waiting.is_alive() or None in self.links:
            raise WorkerFailed(f"the worker processes did not connect within {START_TIMEOUT:.0f} s")

    def arena_for(self, shared: int, scratch: int) -> Arena:
        """An arena with at least ``shared`` bytes for the clip and arrays and ``scratch`` bytes per rank."""
        arena = self.arena
        if arena is None or arena.shared < shared or arena.scratch < scratch:
            if arena is not None:
                arena.close()
            self.arena = None
            shared = max(shared, arena.shared if arena else 0)
            scratch = max(scratch, arena.scratch if arena else 0)
            arena = Arena.create(shared + self.size * scratch)
            arena.shared, arena.scratch = shared, scratch
            self.arena = arena
        return arena

    def close(self) -> None:
        for link in self.links:
            if link is not None:
                link.close()
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self.listener.close()
        if self.tickets is not None:
            os.close(self.tickets.read)
            os.close(self.tickets.write)
            self.tickets = None
        if self.arena is not None:
            self.arena.close()
            self.arena = None


_workers: Workers | None = None
_lock = threading.Lock()
_blas: ThreadpoolController | None = None
_unstartable = False  # the workers could not start once: threads for the rest of this process (one warning, no waits)


def _stop() -> None:
    global _workers
    if _workers is not None:
        _workers.close()
        _workers = None


atexit.register(_stop)


def worker_pids() -> list[int]:
    """The process ids of the running workers (a benchmark adds their CPU time to the caller's)."""
    return [] if _workers is None else [proc.pid for proc in _workers.procs]


def shared_memory_free() -> int | None:
    """Free bytes of POSIX shared memory (``/dev/shm``, small in containers), None where there is no such mount."""
    try:
        stat = os.statvfs("/dev/shm")
    except (OSError, AttributeError):
        return None
    return stat.f_bavail * stat.f_frsize


def arena_fits(size: int) -> bool:
    """Whether an arena of ``size`` bytes may be had: within ``ARENA_MAX`` and the free shared memory, counting the
    arena already held (reused, or given back for the larger one)."""
    room = shared_memory_free()
    held = _workers.arena.shm.size if _workers is not None and _workers.arena is not None else 0
    return size <= ARENA_MAX and (room is None or size <= room + held)


def run(
    fn: Callable[..., T],
    frames: np.ndarray,
    *args: Any,
    arrays: int,
    progress: ProgressFn | None = None,
    **kwargs: Any,
) -> T:
    """``fn(ranks, frames, *args, progress=progress, **kwargs)`` on :data:`threads.WORKERS` processes (threads when
    that is one, or when processes cannot be had).

    ``fn`` is a module-level function of the pack (the workers import it by name); ``frames`` the clip (copied into
    the arena); ``arrays`` how many bytes ``fn`` takes from ``ranks.empty`` at most.  Arrays of the result that lie in
    the arena are copied out.  Only the caller's rank reports ``progress``."""
    size = threads.WORKERS
    report = progress or no_progress
    scratch = frames.nbytes * 3 // 2  # each rank's sent buffers over a clip: about the clip's size; beyond, in band
    shared = aligned(frames.nbytes) + arrays + 8 * ALIGN
    on_workers = size > 1 and ENABLED and not _unstartable
    if on_workers and arena_fits(shared + size * scratch) and _lock.acquire(blocking=False):
        try:
            return _run_on_workers(fn, frames, args, kwargs, size, shared, scratch, report)
        except WorkerFailed as exc:
            then = "from now on" if _unstartable else "instead"
            log.warning("GameAnim: %s; running on threads %s.", exc, then)
        finally:
            _lock.release()
    with ThreadPoolExecutor(size) as pool:
        return fn(ThreadRanks(pool), frames, *args, progress=report, **kwargs)


def _run_on_workers(
    fn: Callable[..., T],
    frames: np.ndarray,
    args: tuple,
    kwargs: dict,
    size: int,
    shared: int,
    scratch: int,
    report: ProgressFn,
) -> T:
    global _workers, _unstartable
    try:
        if _workers is None or _workers.size != size:
            _stop()
            try:
                _workers = Workers(size)
            except WorkerFailed:
                _unstartable = True
                raise
        arena = _workers.arena_for(shared, scratch)
        for link in _workers.links:  # they wake while the clip is copied in (see serve)
            send(link, ("wake",))
        clip = arena.view(0, frames.shape, frames.dtype)
        copy(clip, frames)
        job = ("job", arena.shm.name, arena.shared, arena.scratch, fn, frames.shape, frames.dtype.str, args, kwargs)
        for link in _workers.links:
            send(link, job)
        ranks = ProcessRanks(0, size, _workers.links, arena, frames.nbytes, _workers.tickets)
        with one_thread_each():
            result = fn(ranks, clip, *args, progress=report, **kwargs)
        for link in _workers.links:
            receive(link, "done")
        return detach(result, arena)
    except BaseException:
        _stop()  # a worker may be anywhere in the clip: they start afresh next time
        raise


@contextmanager
def one_thread_each() -> Iterator[None]:
    """OpenCV and BLAS on the calling thread alone (the caller's rank; the workers' are so from the start, see
    WORKER_ENV).  Every rank has a core of its own, and the libraries' own threads took the other ranks' cores:
    OpenBLAS's, after a matrix product, spin for the next one (the matte went 1.3x slower on two ranks with one product
    over a clip in the caller), and OpenCV shared a frame's conversions and filters out over both cores."""
    global _blas
    if _blas is None:
        _blas = ThreadpoolController()  # the BLAS libraries loaded now (numpy's)
    opencv = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        with _blas.limit(limits=1, user_api="blas"):
            yield
    finally:
        cv2.setNumThreads(opencv)


def copy(out: np.ndarray, value: np.ndarray) -> None:
    """``out[...] = value``, the first half along the first axis on a helper thread (:func:`.threads.halves`)."""
    if value.ndim:
        threads.halves(lambda start, stop: np.copyto(out[start:stop], value[start:stop]), len(value))
    else:
        out[...] = value


def detach(value: Any, arena: Arena) -> Any:
    """``value`` with the arrays (in tuples and lists) that lie in the arena copied out of it (by two threads: the
    workers wait)."""
    if isinstance(value, np.ndarray):
        if not arena.holds(value):
            return value
        out = np.empty_like(value)
        copy(out, value)
        return out
    if isinstance(value, tuple | list):
        return type(value)(detach(v, arena) for v in value)
    return value


def serve(link: connection.Connection, rank: int, size: int, tickets: int | None = None) -> None:
    """A worker's loop: run each job's function as ``rank`` until the caller closes the connection (``tickets``: the
    read end of the tickets' pipe, see :class:`Tickets`)."""
    arena: Arena | None = None
    while True:
        try:
            message = link.recv()
            if message[0] == "wake":  # a job follows once the clip is copied in: wait for it awake
                spin(lambda: link.poll(0))
                message = link.recv()
        except (EOFError, OSError):
            break
        _, name, shared, scratch, fn, shape, dtype, args, kwargs = message
        if arena is None or arena.shm.name != name:
            if arena is not None:
                arena.close()
            arena = Arena.attach(name)
        arena.shared, arena.scratch = shared, scratch
        clip = arena.view(0, shape, dtype)
        try:
            ranks = ProcessRanks(rank, size, [link], arena, clip.nbytes, None if tickets is None else Tickets(tickets))
            fn(ranks, clip, *args, **kwargs)
        except BaseException:  # told to the caller, which runs the clip on threads; then wait for the next job
            link.send(("error", traceback.format_exc()))
            continue
        link.send(("done", None))
    if arena is not None:
        arena.close()
