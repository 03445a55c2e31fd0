"""Seconds per LoRA training step and peak memory, with and without gradient checkpointing.

Usage:
    python bench/train_step.py                 # tiny VC2 (fixture UNet), CPU
    python bench/train_step.py --full-size     # real VC2 architecture (1.41 B params, random
                                                             # bf16 weights), rank-16 concept LoRA, 256x256x8

Each configuration runs in its own process so its peak RSS (``ru_maxrss``) is its own.  Besides RSS, a
dispatch-mode counter tracks the bytes of live tensors (what ``torch.cuda.max_memory_allocated`` reports
on a GPU, without allocator fragmentation): its peak minus the weights is the training overhead that
the VRAM estimate in docs/trainers.md is built from.  The baseline is the run without checkpointing
(tiny) measured in the same invocation; ratios are printed against it.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import weakref

from _common import import_pack


class LiveTensorBytes:
    """Peak bytes of live tensor storages created while active (plus ``base`` bytes already live)."""

    def __init__(self, base: int = 0) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        tracker = self
        self.live = base
        self.peak = base
        self.seen: set[int] = set()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                tracker._track(out)
                return out

        self.mode = Mode()

    def _track(self, out) -> None:
        import torch
        from torch.utils._pytree import tree_leaves

        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor) or t.device.type == "meta":
                continue
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if key in self.seen or key == 0:
                continue
            self.seen.add(key)
            size = storage.nbytes()
            self.live += size
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self._free, key, size)

    def _free(self, key: int, size: int) -> None:
        self.seen.discard(key)
        self.live -= size


def tiny_model():
    from tests.support.trainers_tiny import tiny_model as build

    return build()


def full_size_model():
    """The real VC2 UNet layout (from the key manifest) with random bf16 weights; no VAE/text needed."""
    import torch
    from gameanim.nodes.vc2 import checkpoint as ckpt
    from gameanim.nodes.vc2.model import VC2Model
    from gameanim.nodes.vc2.schedule import vc2_schedule
    from gameanim.nodes.vc2.unet import VC2UNet, infer_layout, keep_group_norm_fp32

    from tests.support.vc2_fixtures import manifest_state_dict

    parts = ckpt.read_vc2(manifest_state_dict())
    layout = infer_layout(parts.unet)
    with torch.device("meta"):
        unet = VC2UNet(layout)
    unet = unet.to(dtype=torch.bfloat16).to_empty(device="cpu")
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in unet.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32).mul_(0.02).to(p.dtype))
    keep_group_norm_fp32(unet, torch.bfloat16)
    return VC2Model(unet=unet.train(False).requires_grad_(False), schedule=vc2_schedule())


def run_one(full: bool, checkpointing: bool, steps: int) -> dict:
    import torch

    torch.set_num_threads(1 if not full else 2)
    import_pack()
    from gameanim.trainers import loop

    model = full_size_model() if full else tiny_model()
    if full:
        frames, size, context_dim = 8, 32, 1024
    else:
        frames, size, context_dim = 8, 16, model.context_dim
    weights = sum(p.numel() * p.element_size() for p in model.unet.parameters())
    settings = loop.TrainSettings(
        rank=16 if full else 4,
        alpha=16.0 if full else 4.0,
        gradient_checkpointing=checkpointing,
        precision="bf16" if full else "fp32",
        checkpoint_every=0,
        caption_dropout=0.0,
    )
    gen = torch.Generator().manual_seed(0)
    items = [loop.EncodedItem(torch.randn(1, 4, frames, size, size, generator=gen), "c", "clip", 1)]
    contexts = {"c": torch.randn(77, context_dim, generator=gen), "": torch.zeros(77, context_dim)}
    run = loop.start_training_encoded(model, items, contexts, settings)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    loop.train_step(run)  # warm-up (allocations, kernels)
    tracker = LiveTensorBytes()
    times = []
    with tracker.mode:
        for _ in range(steps):
            start = time.perf_counter()
            loop.train_step(run)
            times.append(time.perf_counter() - start)
    return {
        "config": ("full-size 256x256x8 rank16 concept bf16" if full else "tiny 128x128x8 rank4 concept fp32")
        + (" +ckpt" if checkpointing else ""),
        "s_per_step": sorted(times)[len(times) // 2],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_before_steps_mb": rss_before / 1024,
        "weights_mb": weights / 2**20,
        "peak_step_tensors_mb": tracker.peak / 2**20,
        "lora_params": sum(p.numel() for p in run.params),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full-size", action="store_true", help="real VC2 architecture at 256x256x8 (slow on CPU)")
    parser.add_argument("--steps", type=int, default=0, help="timed steps per config (default 5 tiny, 1 full)")
    parser.add_argument("--one", choices=["plain", "ckpt"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    steps = args.steps or (1 if args.full_size else 5)
    if args.one:
        print(json.dumps(run_one(args.full_size, args.one == "ckpt", steps)))
        return 0
    results = []
    configs = ["ckpt"] if args.full_size else ["plain", "ckpt"]
    for one in configs:
        cmd = [sys.executable, __file__, "--one", one, "--steps", str(steps)] + (
            ["--full-size"] if args.full_size else []
        )
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        results.append(json.loads(out))
    base = results[0]
    for r in results:
        print(
            f"{r['config']:<48} {r['s_per_step']:8.3f} s/step ({r['s_per_step'] / base['s_per_step']:.2f}x)  "
            f"peak RSS {r['peak_rss_mb']:8.0f} MB  weights {r['weights_mb']:7.0f} MB  "
            f"peak live tensors in a step {r['peak_step_tensors_mb']:8.0f} MB "
            f"({r['peak_step_tensors_mb'] / base['peak_step_tensors_mb']:.2f}x)  LoRA params {r['lora_params']:,}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
