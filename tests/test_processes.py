"""The sprite matte on worker processes (core/processes.py): exactly the threads' result, and never lost work when a
worker dies, the caller cancels or the input is bad."""

from __future__ import annotations

import logging
import os
import resource
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import connection

import cv2
import gameanim.nodes.sprite.matte as matte
import numpy as np
import pytest
from gameanim.core import processes, threads
from gameanim.core.progress import Cancelled
from support import sprite_real as real


@pytest.fixture
def two_ranks(monkeypatch):
    """Two ranks (the caller and one worker) whatever the machine's cores; the workers stopped afterwards."""
    monkeypatch.setattr(threads, "WORKERS", 2)
    monkeypatch.setattr(processes, "ENABLED", True)
    monkeypatch.setattr(processes, "_unstartable", False)
    yield
    processes._stop()


def on_threads(frames: np.ndarray, monkeypatch) -> tuple:
    with monkeypatch.context() as patch:
        patch.setattr(processes, "ENABLED", False)
        return matte.remove_background(frames)


def walk(key: str, generated: bool) -> np.ndarray:
    return real.composite("robot", real.KEYS[key], jitter=4, generated=generated, seed=1)[0]


@pytest.mark.usefixtures("two_ranks")
@pytest.mark.parametrize(("key", "generated"), [("green", False), ("mid_grey", True), ("white", True)])
def test_matte_on_processes_is_the_threads_matte_to_the_bit(key, generated, monkeypatch, caplog):
    """The clean key, a noisy neutral key (the colour-model cut) and white: every map, decision and output the same."""
    frames = walk(key, generated)
    with caplog.at_level(logging.WARNING, logger=processes.__name__):
        rgb, alpha, background = matte.remove_background(frames)
    assert processes._workers is not None and not caplog.records  # it ran on the worker, no fallback
    rgb_t, alpha_t, background_t = on_threads(frames, monkeypatch)
    assert np.array_equal(rgb, rgb_t) and np.array_equal(alpha, alpha_t)
    assert background.tolerance == background_t.tolerance and np.array_equal(background.rgb, background_t.rgb)
    assert not processes._workers.arena.holds(alpha)  # copied out: the next clip reuses the arena


@pytest.mark.usefixtures("two_ranks")
def test_three_ranks_pass_each_other_their_results_through_the_caller(monkeypatch):
    """Beyond two ranks a worker gets the other workers' shares from the caller: still the threads' matte."""
    monkeypatch.setattr(threads, "WORKERS", 3)
    frames = walk("light_grey", True)
    alpha = matte.remove_background(frames)[1]
    assert processes._workers is not None and processes._workers.size == 3
    assert np.array_equal(alpha, on_threads(frames, monkeypatch)[1])


@pytest.mark.usefixtures("two_ranks")
def test_workers_that_cannot_start_leave_the_clips_to_threads(monkeypatch, tmp_path, caplog):
    """A worker program that exits at once (here: missing) costs one warning; the clips run on threads, and later
    clips do not try again."""
    monkeypatch.setattr(processes, "WORKER_SCRIPT", tmp_path / "missing.py")
    frames = walk("green", False)
    expected = on_threads(frames, monkeypatch)[1]
    with caplog.at_level(logging.WARNING, logger=processes.__name__):
        assert np.array_equal(matte.remove_background(frames)[1], expected)
        assert np.array_equal(matte.remove_background(frames)[1], expected)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "exited with code" in warnings[0] and "from now on" in warnings[0]
    assert processes._workers is None


@pytest.mark.usefixtures("two_ranks")
def test_a_dead_worker_costs_time_not_the_clip(monkeypatch, caplog):
    """A worker killed between clips: the clip runs on threads (same result, a warning), the next on new workers."""
    frames = walk("magenta", False)
    expected = on_threads(frames, monkeypatch)[1]
    matte.remove_background(frames)
    first = processes._workers
    first.procs[0].kill()
    first.procs[0].wait()
    with caplog.at_level(logging.WARNING, logger=processes.__name__):
        alpha = matte.remove_background(frames)[1]
    assert np.array_equal(alpha, expected)
    assert any("running on threads" in r.getMessage() for r in caplog.records)
    assert processes._workers is None
    assert np.array_equal(matte.remove_background(frames)[1], expected)
    assert processes._workers is not None and processes._workers is not first


@pytest.mark.usefixtures("two_ranks")
def test_cancel_and_bad_input_stop_the_workers_and_the_next_clip_is_exact(monkeypatch):
    frames = walk("blue", True)
    expected = on_threads(frames, monkeypatch)[1]

    def cancel(done: int, total: int) -> None:
        if done >= 2:
            raise Cancelled("cancelled by the user")

    with pytest.raises(Cancelled):
        matte.remove_background(frames, progress=cancel)
    assert processes._workers is None
    seen = []
    assert np.array_equal(matte.remove_background(frames, progress=lambda d, t: seen.append((d, t)))[1], expected)
    assert seen == [(done, len(frames)) for done in range(1, len(frames) + 1)]  # every frame once, in order
    noisy = np.random.default_rng(0).random(frames.shape, np.float32)  # no solid key: the same error as on threads
    with pytest.raises(matte.NotSolidError) as on_processes:
        matte.remove_background(noisy)
    with pytest.raises(matte.NotSolidError) as threaded:
        on_threads(noisy, monkeypatch)
    assert str(on_processes.value) == str(threaded.value)
    assert np.array_equal(matte.remove_background(frames)[1], expected)


@pytest.mark.usefixtures("two_ranks")
def test_clips_beyond_the_arena_limit_run_on_threads(monkeypatch):
    frames = walk("green", False)
    monkeypatch.setattr(processes, "ARENA_MAX", frames.nbytes)
    matte.remove_background(frames)
    assert processes._workers is None


@pytest.mark.usefixtures("two_ranks")
def test_the_arena_held_counts_as_room_for_the_next_clip(monkeypatch):
    """Shared memory full with the arena itself (a small /dev/shm): the next clip of the same size reuses it."""
    frames = walk("mid_grey", False)
    matte.remove_background(frames)
    monkeypatch.setattr(processes, "shared_memory_free", lambda: 0)
    ran = []
    on_workers = processes._run_on_workers
    monkeypatch.setattr(processes, "_run_on_workers", lambda *args: ran.append(1) or on_workers(*args))
    matte.remove_background(frames)
    assert ran == [1]
    monkeypatch.setattr(processes, "ARENA_MAX", processes._workers.arena.shm.size - 1)  # the limit still holds
    matte.remove_background(frames)
    assert ran == [1]


@pytest.mark.usefixtures("two_ranks")
def test_a_clip_matted_while_another_is_runs_on_threads(monkeypatch):
    """One clip at a time on the workers; a second caller meanwhile (another thread) gets threads, not a wait."""
    frames = [walk("white", False), walk("black", True)]
    expected = [on_threads(f, monkeypatch)[1] for f in frames]
    with ThreadPoolExecutor(2) as callers:
        results = list(callers.map(lambda f: matte.remove_background(f)[1], frames))
    assert all(np.array_equal(a, b) for a, b in zip(results, expected, strict=True))


def test_results_beyond_a_ranks_part_of_the_arena_travel_in_the_pickle():
    arena = processes.Arena.create(1 << 20)
    arena.shared, arena.scratch = 4096, 1 << 17
    try:
        ranks = processes.ProcessRanks(0, 2, [], arena, 0)
        value = [np.full(30_000, i, np.float32) for i in range(3)]  # 120 kB each: the first fits, the rest do not
        data, spans = ranks.pack(value)
        assert len(spans) == 1 and len(data) > 2 * value[0].nbytes
        back = ranks.unpack((data, spans))
        assert all(np.array_equal(a, b) for a, b in zip(back, value, strict=True))
        assert arena.holds(back[0]) and not arena.holds(back[1])
        del back
    finally:
        arena.close()


def test_results_in_the_shared_arrays_travel_as_their_place():
    """A frame of a ``Ranks.empty`` array (the pockets' model, distance and labels) is not copied to be sent."""
    arena = processes.Arena.create(1 << 20)
    arena.shared, arena.scratch = 1 << 19, 1 << 18
    try:
        ranks = processes.ProcessRanks(0, 2, [], arena, 0)
        shared = ranks.empty((4, 20_000), np.float32)
        shared[...] = np.arange(4)[:, None]
        data, spans = ranks.pack([shared[2], np.full(20_000, 7, np.float32)])
        assert spans[0] == (shared[2].ctypes.data - arena.address, shared[2].nbytes)  # where it lies
        assert ranks.sent == 80_000  # only the private array went into this rank's part
        back = ranks.unpack((data, spans))
        assert np.shares_memory(back[0], shared) and np.array_equal(back[0], shared[2])
        assert np.array_equal(back[1], np.full(20_000, 7, np.float32))
        del back
    finally:
        arena.close()


def test_tickets_hand_every_item_to_one_rank_and_leave_the_pipe_empty():
    tickets = processes.Tickets(*os.pipe())
    try:
        tickets.deal(10, 3)
        taken = [[], [], []]

        def rank(k: int) -> None:
            while (item := tickets.take()) is not None:
                taken[k].append(item)

        with ThreadPoolExecutor(3) as ranks:
            list(ranks.map(rank, range(3)))
        assert sorted(sum(taken, [])) == list(range(10))  # each once, and each rank read one end mark
        os.set_blocking(tickets.read, False)
        with pytest.raises(BlockingIOError):
            os.read(tickets.read, 4)
        assert tickets.fit(tickets.MOST - 3, 3) and not tickets.fit(tickets.MOST - 2, 3)
    finally:
        os.close(tickets.read)
        os.close(tickets.write)


def test_a_worker_sees_results_read_only():
    """Every other rank reads the same memory: a result changed in place would change it for all of them."""
    arena = processes.Arena.create(1 << 20)
    arena.shared, arena.scratch = 4096, 1 << 19
    try:
        ranks = processes.ProcessRanks(0, 2, [], arena, 0)
        value = {"a": np.arange(100_000, dtype=np.float32), "small": np.ones(3)}
        back = ranks.unpack(ranks.pack(value))
        assert np.array_equal(back["a"], value["a"]) and arena.holds(back["a"]) and not back["a"].flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            back["a"][0] = 1
        del back
    finally:
        arena.close()


def test_a_waiting_rank_polls_then_sleeps_until_the_message_comes(monkeypatch):
    """A rank polls for :data:`processes.SPIN` seconds, stops polling the moment a message is there, and a message
    later than that still reaches it (it then sleeps in the read)."""
    polls = []
    processes.spin(lambda: polls.append(1) or len(polls) == 3)
    assert len(polls) == 3
    monkeypatch.setattr(processes, "SPIN", 0.01)
    ours, theirs = connection.Pipe()
    tickets = processes.Tickets(*os.pipe())
    try:
        with ThreadPoolExecutor(2) as late:
            late.submit(lambda: (time.sleep(0.1), theirs.send(("result", 7)), tickets.deal(2, 1)))
            started = time.perf_counter()
            assert processes.receive(ours, "result") == 7
            assert time.perf_counter() - started >= 0.09
            assert [tickets.take(), tickets.take(), tickets.take()] == [0, 1, None]
    finally:
        ours.close()
        theirs.close()
        os.close(tickets.read)
        os.close(tickets.write)


def _fill(ranks: processes.ProcessRanks, clip: np.ndarray, value: float) -> None:
    clip[...] = value


def test_a_worker_woken_for_a_job_runs_it_however_late_it_comes(monkeypatch):
    """The caller wakes the workers before it copies the clip in; a worker polls for the job, then sleeps in the read
    until it comes."""
    monkeypatch.setattr(processes, "SPIN", 0.01)
    ours, theirs = connection.Pipe()
    arena = processes.Arena.create(1 << 16)
    try:
        with ThreadPoolExecutor(1) as worker:
            served = worker.submit(processes.serve, theirs, 1, 2)
            ours.send(("wake",))
            time.sleep(0.1)
            ours.send(("job", arena.shm.name, 1 << 15, 1 << 14, _fill, (2, 4), "<f4", (7.0,), {}))
            assert ours.poll(10) and ours.recv() == ("done", None)
            assert (arena.view(0, (2, 4), np.float32) == 7.0).all()
            ours.close()  # the worker's loop ends
            served.result(timeout=10)
    finally:
        theirs.close()
        arena.close()


def test_each_rank_keeps_opencv_and_blas_to_its_own_thread(monkeypatch):
    """The libraries' own thread pools would take the other ranks' cores: on the caller for the clip's run (then
    restored), on the workers from their start."""
    from threadpoolctl import threadpool_info

    def blas_threads() -> set[int]:
        return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}

    saved = cv2.getNumThreads()
    cv2.setNumThreads(2)
    try:
        before = blas_threads()
        with processes.one_thread_each():
            assert cv2.getNumThreads() == 1 and blas_threads() == {1}
        assert cv2.getNumThreads() == 2 and blas_threads() == before
    finally:
        cv2.setNumThreads(saved)
    workers = processes.Workers(2)
    try:
        environ = open(f"/proc/{workers.procs[0].pid}/environ", "rb").read().split(b"\0")
    finally:
        workers.close()
    for name in ("OPENCV_FOR_THREADS_NUM", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        assert f"{name}=1".encode() in environ


def test_tickets_are_taken_from_a_pipe_numbered_past_1024(request):
    """A server holds many files: the tickets' pipe may get a descriptor beyond what ``select.select`` takes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:  # room for descriptor 1501 (a server raises its limit so too)
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
        request.addfinalizer(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)))
    low_read, low_write = os.pipe()
    read, write = os.dup2(low_read, 1500), os.dup2(low_write, 1501)
    os.close(low_read)
    os.close(low_write)
    tickets = processes.Tickets(read, write)
    try:
        tickets.deal(2, 1)
        assert [tickets.take(), tickets.take(), tickets.take()] == [0, 1, None]
    finally:
        os.close(read)
        os.close(write)


def test_progress_counts_every_frame_when_the_other_ranks_take_the_last():
    """The caller reports progress as it takes frames; the counts of the frames the worker took last come after the
    exchange, still each once and in order."""

    class FirstSix:
        """Tickets of which the caller gets frames 0-5 only (the worker took 6 and 7)."""

        def __init__(self) -> None:
            self.left = list(range(6))

        def fit(self, count: int, size: int) -> bool:
            return True

        def deal(self, count: int, size: int) -> None:
            pass

        def take(self) -> int | None:
            return self.left.pop(0) if self.left else None

    arena = processes.Arena.create(1 << 16)
    try:
        ranks = processes.ProcessRanks(0, 2, [], arena, 0, FirstSix())
        ranks.pack = lambda mine: mine
        ranks.exchange = lambda packed: {1: [(6, None), (7, None)]}
        seen = []
        ranks.for_each(lambda i: None, 8, lambda done, total: seen.append((done, total)))
    finally:
        arena.close()
    assert seen == [(done, 8) for done in range(1, 9)]
