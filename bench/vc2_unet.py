"""Benchmark the VC2 UNet and one DDIM step on the CPU: ``python bench/vc2_unet.py [--skip-real]``.

For the real VC2 config (1.41 B parameters, random weights, 2 frames of 8x8 latent) and the tiny
parity config it prints: one UNet forward of our ``VC2UNet``, the same forward of the bare diffusers
``UNet3DConditionModel`` (baseline, no fps term), one full sampler step (CFG = two UNet calls plus the
``scale_arr`` DDIM update) against two bare forwards, and the peak RSS of the process.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch
from _common import import_pack, interleaved_best


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def bench(name: str, layout, frames: int, size: int, repeats: int) -> None:
    from gameanim.nodes.vc2.ddim import ddim_sample
    from gameanim.nodes.vc2.schedule import vc2_schedule
    from gameanim.nodes.vc2.unet import VC2UNet

    start = time.perf_counter()
    torch.manual_seed(0)
    model = VC2UNet(layout).train(False).requires_grad_(False)
    build = time.perf_counter() - start
    params = sum(p.numel() for p in model.parameters())
    x = torch.randn(1, layout.in_channels, frames, size, size)
    ctx = torch.randn(1, 77, layout.cross_attention_dim)
    t = torch.tensor([981])
    schedule = vc2_schedule()
    with torch.no_grad():
        model(x, t, ctx, 16)  # warm-up
        times = interleaved_best(
            {
                "ours": lambda: model(x, t, ctx, 16),
                "bare": lambda: model.unet(x, t, encoder_hidden_states=ctx, return_dict=False),
                "step": lambda: ddim_sample(model, schedule, x, ctx, ctx, steps=50, cfg=12.0, eta=1.0, start_step=49),
            },
            repeats,
        )
    ours, bare, step = times["ours"], times["bare"], times["step"]
    print(
        f"[{name}] params {params:,}  latent {tuple(x.shape)}  build {build:.1f} s  threads {torch.get_num_threads()}"
    )
    print(f"  UNet forward (VC2UNet, fps):       {ours * 1000:9.1f} ms")
    print(f"  baseline diffusers forward:        {bare * 1000:9.1f} ms   ratio {ours / bare:.3f}")
    print(
        f"  one DDIM step (CFG, scale_arr):    {step * 1000:9.1f} ms   ratio vs 2 bare forwards {step / (2 * bare):.3f}"
    )
    print(f"  peak RSS so far: {_peak_rss_gb():.2f} GB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-real", action="store_true", help="only the tiny config (the real one needs ~6 GB RAM)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds for the tiny config (the real one uses 2)")
    args = parser.parse_args()
    import_pack()
    from gameanim.nodes.vc2.unet import UNetLayout

    tiny = UNetLayout(4, 4, (32, 64), (True, False), 1, 32, 8)
    bench("tiny parity config", tiny, frames=2, size=8, repeats=args.repeats)
    if not args.skip_real:
        real = UNetLayout(4, 4, (320, 640, 1280, 1280), (True, True, True, False), 2, 1024, 64)
        bench("real VC2 config", real, frames=2, size=8, repeats=min(2, args.repeats))


if __name__ == "__main__":
    main()
