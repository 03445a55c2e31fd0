"""DynamiCrafter UNet: ours against the original in the same run, and the VRAM of a 320x512x16 fp16 forward.

``python bench/dynamicrafter_unet.py /path/to/DynamiCrafter [--real] [--repeats N]``

The original ``lvdm.modules.networks.openaimodel3d.UNetModel`` (needs einops and opencv, no Lightning) is
built with seeded weights, the same weights are loaded into ours through the checkpoint key map, and one
forward of each is timed round-robin (best of N, so load on a shared machine hits both alike); the script
prints the time ratio ours / original and the largest output difference.  ``--real`` adds the released
512 config (1.44 B parameters, ~12 GB RAM for the two copies) at 2 frames of 8x8 latent.  On a CUDA
machine it also runs our fp16 UNet at 320x512, 16 frames, batch 1 and prints the peak VRAM
(``torch.cuda.max_memory_allocated``); without CUDA it says so and prints only the weight sizes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from _common import import_pack, interleaved_best

TINY = {
    "in_channels": 8, "out_channels": 4, "model_channels": 32, "attention_resolutions": [1], "num_res_blocks": 1,
    "channel_mult": [1, 2], "num_head_channels": 8, "context_dim": 32,
}  # fmt: skip
REAL = {
    "in_channels": 8, "out_channels": 4, "model_channels": 320, "attention_resolutions": [4, 2, 1],
    "num_res_blocks": 2, "channel_mult": [1, 2, 4, 4], "num_head_channels": 64, "context_dim": 1024,
}  # fmt: skip
COMMON = {
    "transformer_depth": 1, "use_linear": True, "use_checkpoint": False, "temporal_conv": True,
    "temporal_attention": True, "temporal_selfatt_only": True, "use_relative_position": False,
    "use_causal_attention": False, "temporal_length": 16, "addition_attention": True,
    "image_cross_attention": True, "default_fs": 24, "fs_condition": True,
}  # fmt: skip


def _randomize(model: torch.nn.Module) -> None:
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _, param in sorted(model.named_parameters()):
            scale = param[0].numel() ** -0.5 if param.ndim >= 2 else 0.05
            param.copy_(torch.randn(param.shape, generator=gen) * scale + (1.0 if param.ndim == 1 else 0.0))


def compare(name: str, config: dict, frames: int, size: int, repeats: int) -> None:
    from gameanim.nodes.dynamicrafter.unet import build_dc_unet
    from lvdm.modules.networks.openaimodel3d import UNetModel

    torch.manual_seed(0)
    original = UNetModel(**config, **COMMON).train(False)
    _randomize(original)
    ours = build_dc_unet(original.state_dict(), {"num_head_channels": config["num_head_channels"]})
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(1, 8, frames, size, size, generator=gen)
    ctx = torch.randn(1, 77 + 16 * frames, config["context_dim"], generator=gen)
    t, fs = torch.tensor([999]), torch.tensor([24])
    with torch.no_grad():
        diff = (ours(x, t, ctx, fs) - original(x, t, context=ctx, fs=fs)).abs().max().item()
        times = interleaved_best(
            {"ours": lambda: ours(x, t, ctx, fs), "original": lambda: original(x, t, context=ctx, fs=fs)}, repeats
        )
    params = sum(p.numel() for p in ours.parameters())
    print(f"[{name}] params {params:,}  latent {tuple(x.shape)}  threads {torch.get_num_threads()}")
    print(f"  original UNetModel forward: {times['original'] * 1000:9.1f} ms")
    print(
        f"  our DynamiCrafterUNet:      {times['ours'] * 1000:9.1f} ms   ratio {times['ours'] / times['original']:.3f}"
    )
    print(f"  max |ours - original|:      {diff:.2e}")


def vram() -> None:
    from gameanim.nodes.dynamicrafter.unet import DynamiCrafterUNet
    from gameanim.nodes.vc2.unet import UNetLayout, keep_group_norm_fp32

    layout = UNetLayout(8, 4, (320, 640, 1280, 1280), (True, True, True, False), 2, 1024, 64)
    with torch.device("meta"):
        model = DynamiCrafterUNet(layout)
    weights = sum(p.numel() for p in model.parameters()) * 2
    print(f"[VRAM 320x512x16 fp16] UNet weights alone: {weights / 1024**3:.2f} GiB")
    if not torch.cuda.is_available():
        print("  no CUDA device here: peak VRAM not measured")
        return
    model = model.to_empty(device="cuda").half()
    keep_group_norm_fp32(model, torch.float16)
    torch.cuda.reset_peak_memory_stats()
    x = torch.randn(1, 8, 16, 40, 64, device="cuda")
    ctx = torch.randn(1, 77 + 256, 1024, device="cuda")
    with torch.no_grad():
        model(x, torch.tensor([999], device="cuda"), ctx, 24)
    torch.cuda.synchronize()
    print(f"  peak VRAM of one forward (batch 1): {torch.cuda.max_memory_allocated() / 1024**3:.2f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("original", type=Path, help="a checkout of github.com/Doubiiu/DynamiCrafter")
    parser.add_argument("--real", action="store_true", help="also the released 512 config (~12 GB RAM)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import_pack()
    sys.path.insert(0, str(args.original.resolve()))
    compare("tiny config", TINY, frames=3, size=8, repeats=args.repeats)
    if args.real:
        compare("DynamiCrafter 512 config", REAL, frames=2, size=8, repeats=2)
    vram()


if __name__ == "__main__":
    main()
