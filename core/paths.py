"""Path confinement for names that come from users, workflows or HTTP routes.

A filename prefix such as ``sprites/knight`` is fine; ``../../etc/passwd``, ``/abs/path`` or
``C:\\x`` is not.  Every file we write or read on a user's behalf goes through :func:`confined`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

from .errors import UnsafePathError

_BAD_CHARS = re.compile(r'[\x00-\x1f<>:"|?*]')
# Longest folder or file name accepted (UTF-8 bytes): file systems stop at 255, and the savers append numbers and
# extensions ("_00001.png", ".game.json") to a prefix.
MAX_PART_BYTES = 200
SAMPLE_DATA = Path(__file__).resolve().parents[1] / "sample_data"
"""Small data shipped with the pack for the example workflows (frames, a training dataset)."""


def sanitize_relative(name: str) -> str:
    """Return ``name`` as a clean relative POSIX path, or raise :class:`UnsafePathError`.

    Rejects absolute paths (POSIX or Windows), drive letters, ``..`` components, empty names,
    control or reserved characters and names longer than ``MAX_PART_BYTES``.  Backslashes are
    treated as separators so a Windows-style ``..\\x`` cannot slip through on POSIX.
    """
    if not isinstance(name, str) or not name.strip():
        raise UnsafePathError("A file name is required (got an empty name).")
    unified = name.strip().replace("\\", "/")
    if PurePosixPath(unified).is_absolute() or PureWindowsPath(name).drive or PureWindowsPath(name).root:
        raise UnsafePathError(f"Absolute paths are not allowed here: {name!r}. Give a name relative to the folder.")
    parts = [p for p in unified.split("/") if p not in ("", ".")]
    if not parts:
        raise UnsafePathError(f"{name!r} does not name a file.")
    for part in parts:
        if part == "..":
            raise UnsafePathError(f"'..' is not allowed in {name!r}: names must stay inside their folder.")
        if _BAD_CHARS.search(part):
            raise UnsafePathError(f"{name!r} contains a character that is not allowed in file names.")
        size = len(part.encode("utf-8"))
        if size > MAX_PART_BYTES:
            raise UnsafePathError(
                f"{part[:40]!r}… is {size} bytes long; keep each folder and file name within "
                f"{MAX_PART_BYTES} bytes (file systems allow 255, and a number and an extension are added)."
            )
    return "/".join(parts)


def confined(base: str | os.PathLike[str], name: str) -> Path:
    """Join ``name`` under ``base`` and prove the result (symlinks resolved) stays inside ``base``."""
    root = Path(base).resolve()
    candidate = (root / sanitize_relative(name)).resolve()
    if candidate != root and root not in candidate.parents:
        raise UnsafePathError(f"{name!r} resolves outside {root}.")
    return candidate
