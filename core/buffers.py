"""Large zero-filled output arrays that do not stall in the kernel.

numpy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array of 4 MiB and
more.  With the common ``defrag=madvise`` setting each first touch of such an array may then compact
memory synchronously, which can cost more than the work written into it: drawing 480 float pose maps
(1.5 GB) took a median 0.86 s of system time into ``np.zeros`` and 0.49 s into this mapping
(docs/pose.md).  The arrays here come from a private anonymous mapping, which the kernel fills with
zero pages of the normal size on first touch.  Elsewhere (Windows, macOS) this is :func:`numpy.zeros`.
"""

from __future__ import annotations

import mmap
import sys

import numpy as np

# Below this size numpy's own allocator is as fast (no huge-page advice under 4 MiB).
MIN_MAPPED_BYTES = 4 << 20


def zeroed(shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """A C-contiguous zero-filled array; large ones on Linux are mapped without huge-page advice.

    The array owns its mapping (through its ``base``), so it lives exactly as long as the array and any
    view of it, e.g. a tensor made with ``torch.from_numpy``.
    """
    kind = np.dtype(dtype)
    count = 1
    for side in shape:
        count *= int(side)
    size = count * kind.itemsize
    if not sys.platform.startswith("linux") or size < MIN_MAPPED_BYTES:
        return np.zeros(shape, kind)
    mapping = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return np.frombuffer(mapping, kind, count).reshape(shape)
