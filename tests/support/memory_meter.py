"""The memory meter of the benches: live bytes of the tensors a stage creates, counted on any device.

``LiveBytes`` is a dispatch mode that adds up the storages a stage creates and still holds (so it works on
PyTorch's ``meta`` device, where nothing is allocated); ``fused_attention`` models attention as the fused kernel
a GPU runs.  ``cpu_and_modelled_peaks`` runs one stage on real CPU tensors under PyTorch's profiler and on
``meta`` under the counter, which is how ``tests/test_memory_meter.py`` and ``bench/memory_dynamicrafter.py
--check`` hold the counter against the real CPU allocator.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class LiveBytes(TorchDispatchMode):
    """Counts the bytes of tensors created inside the mode that are still alive (by storage), and the peak."""

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._refs: dict[int, int] = {}  # storage key -> live tensors using it
        self._tensors: set[int] = set()

    def _release(self, tensor_id: int, key: int, nbytes: int) -> None:
        self._tensors.discard(tensor_id)
        self._refs[key] -= 1
        if self._refs[key] == 0:
            del self._refs[key]
            self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage()._cdata for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
        for tensor in tree_flatten(out)[0]:
            if not isinstance(tensor, torch.Tensor) or id(tensor) in self._tensors:
                continue
            storage = tensor.untyped_storage()
            key, nbytes = storage._cdata, storage.nbytes()
            if key in inputs and key not in self._refs:
                continue  # a view (``weight.t()``) or in-place result of memory made before the stage: not new
            if key not in self._refs:
                self._refs[key] = 0
                self.live += nbytes
                self.peak = max(self.peak, self.live)
            self._refs[key] += 1
            self._tensors.add(id(tensor))
            weakref.finalize(tensor, self._release, id(tensor), key, nbytes)
        return out


def _fused_sdpa(query, key, value, *args, **kwargs):
    """Shape-only stand-in for a fused attention kernel (the output is all it allocates)."""
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


@contextmanager
def fused_attention(enabled: bool) -> Iterator[None]:
    original = torch.nn.functional.scaled_dot_product_attention
    if enabled:
        torch.nn.functional.scaled_dot_product_attention = _fused_sdpa
    try:
        yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = original


def allocator_peak(run: Callable[[], object]) -> int:
    """Peak bytes the CPU allocator held above its level at the start of ``run`` (PyTorch's memory profiler)."""
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    stack, allocations = list(prof.profiler.kineto_results.experimental_event_tree()), []
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.tag == _EventType.Allocation and node.extra_fields.device.type == "cpu":
            allocations.append((node.start_time_ns, node.extra_fields.alloc_size))
    total = peak = 0
    for _, size in sorted(allocations, key=lambda item: item[0]):
        total += size
        peak = max(peak, total)
    return peak


def counted_peak(run: Callable[[], object]) -> int:
    """Peak live bytes of the tensors ``run`` creates, by the dispatch counter :class:`LiveBytes`."""
    counter = LiveBytes()
    with counter:
        run()
    return counter.peak


def cpu_and_modelled_peaks(build: Callable[[], tuple[torch.nn.Module, Callable[[], object]]]) -> tuple[int, int]:
    """(CPU allocator peak, modelled peak) of one stage: ``build`` runs twice, on CPU with data and on meta."""
    with torch.device("cpu"):
        model, run = build()
    torch.manual_seed(0)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0, param[0].numel() ** -0.5 if param.ndim >= 2 else 0.02)
        run()  # warm-up: one-off allocations (thread pools, kernels' caches) are not the stage's
        real = allocator_peak(run)
    with torch.device("meta"):
        model, run = build()
    model.to("meta")  # parameters made by the legacy ``torch.Tensor(...)`` ignore the default device
    with torch.no_grad(), fused_attention(True):
        modelled = counted_peak(run)
    return real, modelled
