"""VC2 UNet: ours against the original VideoCrafter code, same weights, same inputs, same process.

    python bench/vc2_unet.py /path/to/VideoCrafter [--real] [--frames 8] [--latent 32x32] [--repeats 5]
                             [--threads N] [--device cuda --dtype fp16]

The original ``lvdm.modules.networks.openaimodel3d.UNetModel`` (needs einops; without xformers its attention is
the einsum softmax a CPU user runs, with xformers on a GPU it uses xformers) is built with seeded weights, and
the same weights go into ours through the checkpoint key map.  One forward of each is timed round-robin
(A, B, A, B: load on a shared machine hits both alike), the median after a warm-up, with the same threads and
dtype (``--dtype fp16``: ours with fp16 weights, the original with its fp32 weights under autocast, as its
scripts run it); the script prints ours / original and the largest output difference, and on CUDA each one's peak memory.

Configs: "tiny" (the parity fixture's: 32/64 channels) at 3 frames of 8x8 latent, and with ``--real`` the
released VC2 config (1.41 B parameters; ~12 GB of RAM for the two fp32 copies) at ``--frames`` frames of
``--latent`` (default 8 frames of 32x32: a 256x256 clip, 1024 tokens per spatial attention).  The released
sampler runs 16 frames of 40x64 (320x512): ``--frames 16 --latent 40x64`` on a GPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from _common import compare_forwards, import_pack, randomize

TINY = {"model_channels": 32, "attention_resolutions": [1], "num_res_blocks": 1, "channel_mult": [1, 2],
        "num_head_channels": 8, "context_dim": 32}  # fmt: skip
REAL = {"model_channels": 320, "attention_resolutions": [4, 2, 1], "num_res_blocks": 2, "channel_mult": [1, 2, 4, 4],
        "num_head_channels": 64, "context_dim": 1024}  # fmt: skip
COMMON = {
    "in_channels": 4, "out_channels": 4, "transformer_depth": 1, "use_linear": True, "use_checkpoint": False,
    "temporal_conv": True, "temporal_attention": True, "temporal_selfatt_only": True, "use_relative_position": False,
    "use_causal_attention": False, "temporal_length": 16, "addition_attention": True, "fps_cond": True,
}  # fmt: skip
DTYPES = {"fp32": torch.float32, "fp16": torch.float16}


def compare(name: str, config: dict, frames: int, latent: tuple[int, int], args: argparse.Namespace) -> None:
    from gameanim.nodes.vc2.unet import build_unet
    from lvdm.modules.networks.openaimodel3d import UNetModel

    device, dtype = torch.device(args.device), DTYPES[args.dtype]
    torch.manual_seed(0)
    original = UNetModel(**config, **COMMON).train(False)
    randomize(original)
    ours = build_unet(original.state_dict(), dtype=dtype).to(device)
    original = original.to(device)  # fp32 weights; in fp16 it runs under autocast, as the original scripts do
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(1, 4, frames, *latent, generator=gen).to(device)
    ctx = torch.randn(1, 77, config["context_dim"], generator=gen).to(device)
    t, fps = torch.tensor([981], device=device), torch.tensor([16], device=device)
    params = sum(p.numel() for p in ours.parameters())
    label = f"{name}: {params / 1e6:.1f} M params, latent {tuple(x.shape)}, {args.dtype} on {device}"

    def run_original() -> torch.Tensor:
        with torch.autocast(device.type, dtype, enabled=dtype != torch.float32):
            return original(x, t, context=ctx, fps=fps)

    compare_forwards(label, lambda: ours(x, t, ctx, fps), run_original, args.repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("original", type=Path, help="a checkout of github.com/AILab-CVC/VideoCrafter")
    parser.add_argument("--real", action="store_true", help="also the released VC2 config (~12 GB RAM in fp32)")
    parser.add_argument("--frames", type=int, default=8, help="frames of the --real run")
    parser.add_argument("--latent", default="32x32", help="latent HxW of the --real run (40x64 = 320x512 pixels)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="CPU threads for both models")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import_pack()
    sys.path.insert(0, str(args.original.resolve()))
    compare("tiny config", TINY, 3, (8, 8), args)
    if args.real:
        height, width = (int(v) for v in args.latent.lower().split("x"))
        compare("VC2 512 config", REAL, args.frames, (height, width), args)


if __name__ == "__main__":
    main()
