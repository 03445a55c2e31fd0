"""A host-independent progress and cancel protocol for library loops.

Library code (samplers, trainers, per-frame loops) never imports ComfyUI.  It accepts a
``progress`` callable and calls ``progress(done, total)`` after each unit of work.  The callable may
raise to cancel: inside ComfyUI, :mod:`..host` gives one that updates ``comfy.utils.ProgressBar``
and raises ComfyUI's interrupt exception when the user presses Cancel; headless callers may pass
their own, or a :class:`CancelToken`-backed one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

ProgressFn = Callable[[int, int], None]
T = TypeVar("T")


class Cancelled(Exception):
    """Raised by a :class:`CancelToken` progress callback after :meth:`CancelToken.cancel`."""


class CancelToken:
    """Thread-safe cancel flag for headless use: another thread calls :meth:`cancel`."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def progress(self, inner: ProgressFn | None = None) -> ProgressFn:
        """A progress callback that forwards to ``inner`` and raises :class:`Cancelled` once cancelled."""

        def report(done: int, total: int) -> None:
            if inner is not None:
                inner(done, total)
            if self._event.is_set():
                raise Cancelled("cancelled")

        return report


def no_progress(done: int, total: int) -> None:
    """The default callback: report nothing, never cancel."""


def tracked(items: Iterable[T], total: int, progress: ProgressFn | None) -> Iterator[T]:
    """Yield ``items`` and report ``(i + 1, total)`` after each one is processed.

    The report happens when the consumer asks for the next item, so a cancel raised by the callback
    lands between units of work, never inside one.
    """
    report = progress or no_progress
    for done, item in enumerate(items, start=1):
        yield item
        report(done, total)
