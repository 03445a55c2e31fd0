"""Atomic file writes: write a sibling temp file, flush it to disk, then rename over the target.

A crash, a Cancel or a full disk mid-write leaves the previous file intact, never a half file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _umask() -> int:
    """The process umask: from ``/proc`` where it exists (no global change), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_target(path: str | os.PathLike[str], overwrite: bool = True) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success rename it onto ``path``.

    The file gets the permissions a plain ``open(path, "w")`` would give (``mkstemp`` alone makes
    it private to the owner, which would hide outputs from other users and web servers).

    With ``overwrite=False`` an existing ``path`` raises :class:`FileExistsError` before anything is
    written (and again at rename time, in case another writer got there first).
    """
    target = Path(path)
    if not overwrite and target.exists():
        raise FileExistsError(f"{target} already exists; choose another name.")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_umask())
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, target)
        else:
            os.link(tmp, target)
            tmp.unlink()
    finally:
        if tmp.exists():
            tmp.unlink()


def write_text_atomic(path: str | os.PathLike[str], text: str, overwrite: bool = True) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically and return the path."""
    with atomic_target(path, overwrite=overwrite) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
