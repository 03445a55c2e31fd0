"""The IMAGE/MASK edge: torch tensors (``[T,H,W,C]`` / ``[T,H,W]`` float 0..1) to numpy and back, with alpha.

The library modules work on numpy (OpenCV and Pillow need it); the API and the nodes of every feature convert here.
Alpha comes from a MASK whose polarity ``mask_is`` names (``alpha``: 1 is opaque, ours; ``transparency``: 1 is
transparent, core ``LoadImage``), else from a 4th IMAGE channel.  torch is imported lazily so the pure modules stay
importable without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import InputError


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


def images_tensor(array: np.ndarray) -> Any:
    """An IMAGE/MASK tensor from a rendered array: uint8 scaled to 0..1, floats taken as they are."""
    import torch

    tensor = torch.from_numpy(array)
    return tensor.float().div_(255.0) if tensor.dtype == torch.uint8 else tensor.float()


MASK_POLARITIES = ("alpha", "transparency")


def as_alpha(mask: Any, mask_is: str = "alpha") -> Any:
    """A MASK as alpha (1 = opaque).  ``transparency`` masks (1 = transparent: core ``LoadImage``,
    ``JoinImageWithAlpha``) are inverted; ours (Remove Background, Stabilise) are ``alpha``."""
    if mask_is not in MASK_POLARITIES:
        raise InputError(f"Unknown mask polarity {mask_is!r}; choose one of {', '.join(MASK_POLARITIES)}.")
    return 1.0 - mask if mask_is == "transparency" else mask


def check_alpha(alpha: np.ndarray, frames: np.ndarray, name: str = "mask") -> np.ndarray:
    """Validate an alpha/MASK batch against ``frames``; a single mask is broadcast over time."""
    if alpha.ndim == 2:
        alpha = alpha[None]
    if alpha.ndim != 3:
        raise InputError(f"{name} must be [T,H,W] (a MASK); got shape {tuple(alpha.shape)}.")
    t, h, w = frames.shape[:3]
    if alpha.shape[1:] != (h, w):
        raise InputError(
            f"{name} is {alpha.shape[2]}x{alpha.shape[1]} px but the frames are {w}x{h} px; "
            "resize the mask (or the frames) so they match."
        )
    if alpha.shape[0] == 1 and t > 1:
        alpha = np.broadcast_to(alpha, (t, h, w))
    if alpha.shape[0] != t:
        raise InputError(f"{name} has {alpha.shape[0]} frames but the image batch has {t}; give one mask per frame.")
    if not np.isfinite(alpha).all():
        raise InputError(f"{name} holds NaN or infinite values; check the node that produced it.")
    return np.ascontiguousarray(np.clip(alpha, 0.0, 1.0), dtype=np.float32)


def image_alpha(
    image: Any, mask: Any | None = None, mask_is: str = "alpha", names: tuple[str, str] = ("image", "mask")
) -> tuple[np.ndarray, np.ndarray | None]:
    """numpy ``(rgb, alpha or None)`` from an IMAGE and an optional MASK of polarity ``mask_is``: the MASK when
    connected, else a 4th channel of the IMAGE, else None (the caller decides what no alpha means)."""
    rgb, own = split_image(image, names[0])
    alpha = own if mask is None else as_alpha(to_numpy(mask, names[1]), mask_is)
    return rgb, None if alpha is None else check_alpha(alpha, rgb, names[1])


def rgb_alpha(
    image: Any, mask: Any | None = None, mask_is: str = "alpha", names: tuple[str, str] = ("image", "mask")
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`image_alpha` with opaque frames when there is no alpha, so any IMAGE connects."""
    rgb, alpha = image_alpha(image, mask, mask_is, names)
    return rgb, alpha if alpha is not None else np.ones(rgb.shape[:3], np.float32)
