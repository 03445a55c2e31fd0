"""Optical flow between consecutive frames: OpenCV DIS (default), Farneback, torchvision RAFT.

Why DIS by default: it needs no weights, no torch and no GPU, and its MEDIUM preset recovers a known
sprite speed within a few percent for 10-18 ms of CPU per full 320x512 frame pair.  A sprite clip's
background is still, so each pair's flow is computed only in the box where the two frames differ
(plus a margin), a few times less work; pairs run side by side on the cores (see docs/motion.md).
RAFT is more accurate on real footage but costs seconds per pair on a CPU, so it is optional and only
ever loaded from weights the user placed in ``models/optical_flow/``: this module never downloads.

Flow is returned like comfyui_controlnet_aux's ``OPTICAL_FLOW``: a float32 torch tensor
``[N-1,H,W,2]`` in pixels of the input frames, channel 0 = x (right), channel 1 = y (down); pair ``i``
maps frame ``i`` to frame ``i+1``.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ...core.buffers import zeroed
from ...core.errors import InputError, ModelFileError
from ...core.progress import ProgressFn, no_progress
from ...core.threads import run_chunks
from ...core.weights import read_state_dict
from .frames import clip_array, grey_uint8

DIS_PRESETS = {
    "ultrafast": cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST,
    "fast": cv2.DISOPTICAL_FLOW_PRESET_FAST,
    "medium": cv2.DISOPTICAL_FLOW_PRESET_MEDIUM,
}
RAFT_FILES = {
    "raft_small": "raft_small_C_T_V2-01064c6d.pth",
    "raft_large": "raft_large_C_T_SKHT_V2-ff5fadd5.pth",
}
RAFT_MIN_SIDE = 128
# OpenCV's DIS refuses frames whose width and height are both below this.
DIS_MIN_SIDE = 12
METHODS = ("dis_medium", "dis_fast", "dis_ultrafast", "farneback", "raft_small", "raft_large")
ALIASES = {"dis": "dis_medium"}
DEFAULT_METHOD = "dis_medium"
# OpenCV's reference Farneback settings (pyramid 0.5, 3 levels, window 15, 3 iterations, poly 5 / 1.2).
FARNEBACK_ARGS = (0.5, 3, 15, 3, 5, 1.2, 0)
# Grey-level changes up to this are not motion (8-bit rounding, the last bit of dithering); see moving_box.
STILL_TOLERANCE = 2
# moving_box's margin as a fraction of the frame's geometric mean side, and its least value in px.
MARGIN_FRACTION = 0.12
MIN_MARGIN = 16


def resolve_method(method: str) -> str:
    """The canonical method name for ``method`` (``"dis"`` means DIS MEDIUM), or an :class:`InputError`."""
    name = ALIASES.get(method, method)
    if name not in METHODS:
        raise InputError(f"Unknown optical-flow method {method!r}; choose one of {', '.join(('dis', *METHODS))}.")
    return name


def grey_frames(clip: np.ndarray) -> list[np.ndarray]:
    """:func:`grey_uint8` of every frame, a few frames per thread task."""
    grey: list[np.ndarray] = [np.empty(0, np.uint8)] * clip.shape[0]

    def work(start: int, stop: int) -> None:
        grey[start:stop] = grey_uint8(clip[start:stop])

    run_chunks(work, clip.shape[0], 8)
    return grey


def moving_box(
    first: np.ndarray, second: np.ndarray, tolerance: int, margin: int, align: int = 1
) -> tuple[slice, slice] | None:
    """Rows and columns of the box around every pixel that changes by more than ``tolerance`` grey
    levels between two 8-bit frames, widened by ``margin`` px and then outwards to multiples of
    ``align`` (clamped to the frame); None when nothing changes.

    Why: outside that box the two frames are the same picture, so the true flow there is zero, and a
    sprite clip's background is still while the character moves.  The margin keeps the context DIS
    uses around the moving content (its patches and smoothing reach far over a flat background) and
    the few pixels its flow bleeds into the background; the alignment (:func:`box_alignment`) puts its
    pyramid and patch grid where they lie on the whole frame.  docs/motion.md measures the result
    against full-frame flow.
    """
    changed = cv2.compare(cv2.absdiff(first, second), tolerance, cv2.CMP_GT)
    x, y, w, h = cv2.boundingRect(changed)
    if w == 0:
        return None
    height, width = first.shape

    def span(start: int, stop: int, size: int) -> slice:
        low = max(0, start - margin) // align * align
        high = min(size, -(-(stop + margin) // align) * align)
        return slice(low, high)

    return span(y, y + h, height), span(x, x + w, width)


def dis_coarsest_scale(height: int, width: int, patch: int = 8) -> int:
    """The coarsest pyramid level OpenCV's DIS picks by itself for a whole ``height`` x ``width`` frame
    (its own rule; a level set with ``setCoarsestScale`` only ever lowers it, so a box too small for
    this level gets fewer levels, as a small frame does)."""
    largest = int(math.log2(max(height, width) / (4.0 * patch)) + 0.5)
    return max(0, min(largest, int(math.log2(min(height, width) / patch))))


def box_alignment(method: str, coarsest: int) -> int:
    """Box corners snap to multiples of this (48 px for DIS medium at 320x512), so that every pyramid
    level of the box is a window of the whole frame's pyramid and DIS's patch grid (a patch every
    ``stride`` px from the corner, at each level) falls where it falls on the whole frame.  Without it
    the real-sprite scopes moved up to 10% beyond DIS's own spread, with it 3.5% (docs/motion.md)."""
    if method.startswith("dis_"):
        stride = cv2.DISOpticalFlow_create(DIS_PRESETS[method[4:]]).getPatchStride()
        return stride * 2**coarsest
    return 2 ** FARNEBACK_ARGS[1]


def box_margin(height: int, width: int) -> int:
    """:func:`moving_box`'s margin for a frame size: :data:`MARGIN_FRACTION` of the frame's geometric
    mean side (49 px at 320x512), at least :data:`MIN_MARGIN`."""
    return max(MIN_MARGIN, round(MARGIN_FRACTION * math.sqrt(height * width)))


def _opencv_pairs(
    grey: list[np.ndarray], method: str, progress: ProgressFn, batch: int, still_tolerance: int | None
) -> np.ndarray:
    """Flow of every pair, pairs side by side on threads; each thread keeps one DIS object.

    With ``still_tolerance`` (grey levels) a pair's flow is computed inside its :func:`moving_box`
    only and is zero outside it; None computes it over the whole frame.  One pair per task keeps
    both cores busy to the end of the clip; progress still follows every ``batch`` pairs.  DIS gives
    the same flow whatever the number of threads (its patch search uses fixed stripes), so running
    pairs side by side changes nothing but the speed.
    """
    pairs = len(grey) - 1
    height, width = grey[0].shape
    if method.startswith("dis_") and max(height, width) < DIS_MIN_SIDE:
        raise InputError(
            f"DIS optical flow needs frames at least {DIS_MIN_SIDE} px wide or high; these are {height}x{width}. "
            "Upscale the clip first or choose the farneback method."
        )
    out = zeroed((pairs, height, width, 2), np.float32)
    margin = box_margin(height, width)
    align = box_alignment(method, dis_coarsest_scale(height, width))
    local = threading.local()

    def flow(first: np.ndarray, second: np.ndarray) -> np.ndarray:
        if method.startswith("dis_"):
            if not hasattr(local, "dis"):
                local.dis = cv2.DISOpticalFlow_create(DIS_PRESETS[method[4:]])
            return local.dis.calc(first, second, None)
        return cv2.calcOpticalFlowFarneback(first, second, None, *FARNEBACK_ARGS)

    def work(start: int, stop: int) -> None:
        for i in range(start, stop):
            if still_tolerance is None:
                out[i] = flow(grey[i], grey[i + 1])
                continue
            box = moving_box(grey[i], grey[i + 1], still_tolerance, margin, align)
            if box is not None:
                rows, cols = box
                first = np.ascontiguousarray(grey[i][rows, cols])
                out[i, rows, cols] = flow(first, np.ascontiguousarray(grey[i + 1][rows, cols]))

    run_chunks(work, pairs, 1, progress, every=batch)
    return out


# ----------------------------------------------------------------------------- RAFT


def find_raft_weights(variant: str, folders: Sequence[str | os.PathLike[str]]) -> Path:
    """The user-placed weight file for ``variant`` in one of ``folders`` (the ``optical_flow`` model folders).

    Accepts torchvision's file name or the same stem as ``.safetensors``.  Missing weights raise a
    :class:`ModelFileError` naming the expected file, the folders searched and where to get it; we
    never download.
    """
    if variant not in RAFT_FILES:
        raise InputError(f"Unknown RAFT variant {variant!r}; choose one of {', '.join(RAFT_FILES)}.")
    expected = RAFT_FILES[variant]
    names = (expected, Path(expected).stem + ".safetensors")
    for folder in folders:
        for name in names:
            candidate = Path(folder) / name
            if candidate.is_file():
                return candidate
    searched = ", ".join(str(Path(f)) for f in folders) or "(no folder registered)"
    tv_weights = "Raft_Small_Weights.C_T_V2" if variant == "raft_small" else "Raft_Large_Weights.C_T_SKHT_V2"
    raise ModelFileError(
        f"{variant} needs its weights, which are not installed: expected '{expected}' (or '{names[1]}') in the "
        f"optical_flow model folder ({searched}). Download torchvision's {tv_weights} file from "
        f"https://download.pytorch.org/models/{expected} and place it there, or use the 'dis_medium' method, "
        "which needs no weights. GameAnim never downloads weights itself."
    )


def _build_raft(variant: str) -> Any:
    from torchvision.models.optical_flow import raft_large, raft_small

    return (raft_small if variant == "raft_small" else raft_large)(weights=None, progress=False)


def load_raft(path: str | os.PathLike[str], variant: str) -> Any:
    """A torchvision RAFT ``variant`` in inference mode with the weights of ``path`` (on the CPU).

    The architecture comes from torchvision with ``weights=None`` (no download); the file is read
    with ``weights_only`` loading.  A file for the other variant, or any other network, is rejected
    with a message rather than loaded partially.
    """
    model = _build_raft(variant)
    state = read_state_dict(path)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = sorted(k for k in set(expected) & set(state) if tuple(expected[k].shape) != tuple(state[k].shape))
    if missing or unexpected or wrong:
        other = "raft_large" if variant == "raft_small" else "raft_small"
        raise ModelFileError(
            f"{path} does not hold torchvision {variant} weights ({len(missing)} missing, {len(unexpected)} unexpected, "
            f"{len(wrong)} wrongly shaped tensors, e.g. {(missing + unexpected + wrong)[:3]}). Place the file "
            f"'{RAFT_FILES[variant]}' for {variant}; if this is the {other} file, choose {other} instead."
        )
    model.load_state_dict(state, strict=True)
    return model.train(False)


_RAFT_CACHE: dict[tuple[str, float, str], Any] = {}


def cached_raft(path: str | os.PathLike[str], variant: str) -> Any:
    """:func:`load_raft`, remembered for the last file (re-read when the file changes)."""
    resolved = Path(path).resolve()
    key = (str(resolved), resolved.stat().st_mtime, variant)
    if key not in _RAFT_CACHE:
        _RAFT_CACHE.clear()
        _RAFT_CACHE[key] = load_raft(resolved, variant)
    return _RAFT_CACHE[key]


def _raft_pairs(
    clip: np.ndarray, model: Any, device: Any, batch: int, updates: int, progress: ProgressFn
) -> np.ndarray:
    import torch
    import torch.nn.functional as F

    frames = torch.from_numpy(clip).permute(0, 3, 1, 2) * 2.0 - 1.0
    height, width = frames.shape[-2:]
    # RAFT wants sides divisible by 8 and at least 128 px (its correlation pyramid); pad, then crop the flow.
    pad_h = max(RAFT_MIN_SIDE, height + (-height) % 8) - height
    pad_w = max(RAFT_MIN_SIDE, width + (-width) % 8) - width
    if pad_h or pad_w:
        frames = F.pad(frames, (0, pad_w, 0, pad_h), mode="replicate")
    pairs = frames.shape[0] - 1
    out = np.empty((pairs, height, width, 2), np.float32)
    model = model.to(device)
    with torch.inference_mode():
        for start in range(0, pairs, batch):
            stop = min(start + batch, pairs)
            first = frames[start:stop].to(device)
            second = frames[start + 1 : stop + 1].to(device)
            flow = model(first, second, num_flow_updates=updates)[-1]
            out[start:stop] = flow[:, :, :height, :width].permute(0, 2, 3, 1).float().cpu().numpy()
            progress(stop, pairs)
    return out


# ----------------------------------------------------------------------------- entry point


@dataclass(frozen=True)
class FlowSettings:
    """Knobs that only some methods use (RAFT batch size, iterations and device; for the OpenCV
    methods the grey-level change below which a pixel counts as still, None = flow over the whole
    frame, see :func:`moving_box`)."""

    batch_size: int = 8
    raft_updates: int = 12
    device: Any = "cpu"
    still_tolerance: int | None = STILL_TOLERANCE


def estimate_flow(
    frames: Any,
    method: str = DEFAULT_METHOD,
    raft_model: Any = None,
    settings: FlowSettings | None = None,
    progress: ProgressFn | None = None,
) -> Any:
    """Flow of every consecutive frame pair of ``frames`` (``[T,H,W,3]`` 0..1) as ``OPTICAL_FLOW``.

    ``raft_model`` (from :func:`load_raft`) is required for the RAFT methods.  ``progress`` is called
    after each batch of pairs and may raise to cancel.
    """
    import torch

    name = resolve_method(method)
    return torch.from_numpy(flow_of_clip(clip_array(frames), name, raft_model, settings, progress))


def flow_of_clip(
    clip: np.ndarray,
    name: str,
    raft_model: Any = None,
    settings: FlowSettings | None = None,
    progress: ProgressFn | None = None,
    grey: list[np.ndarray] | None = None,
) -> np.ndarray:
    """:func:`estimate_flow` of a clip already checked by :func:`clip_array`, for a canonical method
    ``name``, as a float32 array ``[N-1,H,W,2]``; ``grey`` are the frames' :func:`grey_frames` if
    the caller has made them already."""
    opts = settings or FlowSettings()
    if opts.batch_size < 1 or opts.raft_updates < 1:
        raise InputError("batch_size and raft_updates must be at least 1.")
    report = progress or no_progress
    if name.startswith("raft"):
        if raft_model is None:
            raise InputError(f"{name} needs a loaded RAFT model; load it with load_raft() or pick a DIS method.")
        return _raft_pairs(clip, raft_model, opts.device, opts.batch_size, opts.raft_updates, report)
    grey = grey_frames(clip) if grey is None else grey
    return _opencv_pairs(grey, name, report, opts.batch_size, opts.still_tolerance)


def flow_to_hsv_image(flow: Any, max_magnitude: float = 0.0) -> Any:
    """An IMAGE ``[N,H,W,3]`` showing flow as colour: hue = direction, brightness = speed.

    Brightness is scaled by ``max_magnitude`` pixels, or (0) by the clip's 99th-percentile speed,
    the same scale for every frame so brighter always means faster within one clip.
    """
    import torch

    from .frames import flow_array

    array = flow_array(flow)
    magnitude, angle = cv2.cartToPolar(array[..., 0].reshape(-1), array[..., 1].reshape(-1), angleInDegrees=True)
    magnitude = magnitude.reshape(array.shape[:-1])
    angle = angle.reshape(array.shape[:-1])
    scale = float(max_magnitude) if max_magnitude > 0 else float(np.percentile(magnitude, 99))
    value = np.clip(magnitude / scale, 0.0, 1.0) if scale > 0 else np.zeros_like(magnitude)
    hsv = np.stack([angle / 2.0, np.ones_like(value) * 255.0, value * 255.0], axis=-1).astype(np.uint8)
    rgb = np.stack([cv2.cvtColor(frame, cv2.COLOR_HSV2RGB) for frame in hsv]).astype(np.float32) / 255.0
    return torch.from_numpy(rgb)
