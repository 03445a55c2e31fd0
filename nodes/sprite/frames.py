"""Conversions between IMAGE/MASK tensors (torch, ``[T,H,W,C]`` float 0..1) and numpy arrays.

The library modules work on numpy (OpenCV and Pillow need it); the API and nodes convert at the
edges.  torch is imported lazily so the pure modules stay importable without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.errors import InputError


def to_numpy(x: Any, name: str = "input") -> np.ndarray:
    """A float32 numpy copy of a torch tensor or array-like (CPU)."""
    if x is None:
        raise InputError(f"{name} is missing.")
    if hasattr(x, "detach"):
        x = x.detach().to("cpu").float().numpy()
    return np.asarray(x, dtype=np.float32)


def split_image(image: Any, name: str = "image") -> tuple[np.ndarray, np.ndarray | None]:
    """IMAGE ``[T,H,W,3|4]`` to ``(rgb, alpha or None)``; a 4th channel is taken as alpha."""
    arr = to_numpy(image, name)
    if arr.ndim == 3 and arr.shape[-1] in (3, 4):
        arr = arr[None]
    if arr.ndim != 4 or arr.shape[-1] not in (3, 4):
        raise InputError(f"{name} must be an IMAGE batch [T,H,W,3] or [T,H,W,4]; got shape {tuple(arr.shape)}.")
    if arr.shape[0] == 0:
        raise InputError(f"{name} is an empty batch (0 frames); connect a node that outputs at least one frame.")
    if arr.shape[-1] == 4:
        return np.ascontiguousarray(arr[..., :3]), np.ascontiguousarray(arr[..., 3])
    return np.ascontiguousarray(arr), None


def to_tensor(arr: np.ndarray) -> Any:
    """A float32 CPU torch tensor (the IMAGE/MASK dtype) from a numpy array."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32))
