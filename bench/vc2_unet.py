"""VC2 UNet: ours against the original VideoCrafter code, same weights, same inputs, same process.

    python bench/vc2_unet.py /path/to/VideoCrafter [--real] [--frames 8] [--latent 32x32] [--repeats 5]
                             [--tiny-repeats 60] [--threads N] [--device cuda --dtype fp16]

The original ``lvdm.modules.networks.openaimodel3d.UNetModel`` (needs einops; without xformers its attention is
the einsum softmax a CPU user runs, with xformers on a GPU it uses xformers) is built with seeded weights, and
the same weights go into ours through the checkpoint key map.  One forward of each is timed round-robin
(A, B, A, B: load on a shared machine hits both alike), the median after a warm-up, with the same threads and
dtype (``--dtype fp16``: ours with fp16 weights, the original with its fp32 weights under autocast, as its
scripts run it); the script prints the medians of wall and CPU time, ours / original and the largest output
difference, and on CUDA each one's peak memory.

Configs: "tiny" (the parity fixture's: 32/64 channels) at the fixture's batch of 2 clips of 3 frames of 8x8
latent, and with ``--real`` the released VC2 config (1.41 B parameters; ~12 GB of RAM for the two fp32 copies) at
one clip of ``--frames`` frames of ``--latent`` (default 8 frames of 32x32: a 256x256 clip, 1024 tokens per
spatial attention).  The released sampler runs 16 frames of 40x64 (320x512): ``--frames 16 --latent 40x64`` on a
GPU.
"""

from __future__ import annotations

import argparse
import sys

import torch
from _common import Clip, compare_unets, import_pack, randomize, unet_parser

TINY = {"model_channels": 32, "attention_resolutions": [1], "num_res_blocks": 1, "channel_mult": [1, 2],
        "num_head_channels": 8, "context_dim": 32}  # fmt: skip
REAL = {"model_channels": 320, "attention_resolutions": [4, 2, 1], "num_res_blocks": 2, "channel_mult": [1, 2, 4, 4],
        "num_head_channels": 64, "context_dim": 1024}  # fmt: skip
COMMON = {
    "in_channels": 4, "out_channels": 4, "transformer_depth": 1, "use_linear": True, "use_checkpoint": False,
    "temporal_conv": True, "temporal_attention": True, "temporal_selfatt_only": True, "use_relative_position": False,
    "use_causal_attention": False, "temporal_length": 16, "addition_attention": True, "fps_cond": True,
}  # fmt: skip


def compare(name: str, config: dict, clip: Clip, args: argparse.Namespace, repeats: int) -> None:
    batch, frames, latent = clip
    from gameanim.nodes.vc2.unet import build_unet
    from lvdm.modules.networks.openaimodel3d import UNetModel

    torch.manual_seed(0)
    original = UNetModel(**config, **COMMON).train(False)
    randomize(original)
    ours = build_unet(original.state_dict(), dtype=torch.float16 if args.dtype == "fp16" else torch.float32)
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(batch, 4, frames, *latent, generator=gen)
    ctx = torch.randn(batch, 77, config["context_dim"], generator=gen)
    compare_unets(
        name, ours, original, (x, torch.tensor([981] * batch), ctx), ("fps", torch.tensor([16] * batch)), args, repeats
    )


def main() -> None:
    args = unet_parser(__doc__.splitlines()[0], "github.com/AILab-CVC/VideoCrafter").parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    import_pack()
    sys.path.insert(0, str(args.original.resolve()))
    compare("tiny config", TINY, (2, 3, (8, 8)), args, args.tiny_repeats)
    if args.real:
        height, width = (int(v) for v in args.latent.lower().split("x"))
        compare("VC2 512 config", REAL, (1, args.frames, (height, width)), args, args.repeats)


if __name__ == "__main__":
    main()
