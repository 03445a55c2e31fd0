"""ToonCrafter's dual-reference VAE decoder: ours against the original in the same run (+ VRAM on CUDA).

``python bench/tooncrafter_decoder.py /path/to/ToonCrafter [--real] [--repeats N]``

The original ``lvdm.models.autoencoder_dualref.VideoDecoder`` and ``lvdm.modules.networks.ae_modules.Encoder``
(no Lightning needed) are built with seeded weights; the same ``decoder.*`` tensors are loaded into our
:class:`DualReferenceDecoder` through the checkpoint key map, the keyframe features come from the original
encoder, and one decode of a 16-frame clip (one window, as the original) by each is timed round-robin (best
of N).  Prints the time ratio ours / original and the largest output difference.  The original calls
xformers; without it (no GPU) the fixture script's stand-in computes the same attention with PyTorch's.
``--real`` uses the released ddconfig (ch 128, mult 1,2,4,4: 65.8 M decoder parameters) instead of a tiny one.
On CUDA it also prints the peak VRAM of our fp16 decode of 16 frames at 320x512.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from _common import import_pack, interleaved_best

TINY = {"ch": 32, "ch_mult": [1, 2, 1, 1]}
REAL = {"ch": 128, "ch_mult": [1, 2, 4, 4]}
COMMON = {
    "double_z": True, "z_channels": 4, "resolution": 256, "in_channels": 3, "out_ch": 3, "num_res_blocks": 2,
    "attn_resolutions": [], "dropout": 0.0,
}  # fmt: skip
FRAMES = 16


def _randomize(model: torch.nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, param in sorted(model.named_parameters()):
            scale = param[0].numel() ** -0.5 if param.ndim >= 2 else 0.05
            param.copy_(torch.randn(param.shape, generator=gen) * scale + (1.0 if param.ndim == 1 else 0.0))


def compare(name: str, config: dict, size: int, repeats: int) -> None:
    from gameanim.nodes.dynamicrafter.dualref_vae import build_dual_reference_decoder
    from lvdm.models.autoencoder_dualref import VideoDecoder
    from lvdm.modules.networks.ae_modules import Encoder

    ddconfig = {**COMMON, **config}
    torch.manual_seed(0)
    original, encoder = VideoDecoder(**ddconfig).train(False), Encoder(**ddconfig).train(False)
    _randomize(original, 1)
    _randomize(encoder, 2)
    ours = build_dual_reference_decoder(original.state_dict())
    gen = torch.Generator().manual_seed(3)
    keyframes = torch.rand(2, 3, size * 8, size * 8, generator=gen) * 2 - 1
    z = torch.randn(FRAMES, 4, size, size, generator=gen)
    with torch.no_grad():
        _, hidden = encoder(keyframes, return_hidden_states=True)
        ref = [h.unsqueeze(0).transpose(1, 2) for h in hidden]  # [1, C, 2, H, W]
        run_original = lambda: original(z, ref_context=ref, timesteps=FRAMES)  # noqa: E731
        run_ours = lambda: ours(z, ref, FRAMES)  # noqa: E731
        expected = run_original()
        diff, largest = (run_ours() - expected).abs().max().item(), expected.abs().max().item()
        times = interleaved_best({"ours": run_ours, "original": run_original}, repeats)
    params = sum(p.numel() for p in ours.parameters())
    print(f"[{name}] decoder params {params:,}  latent {tuple(z.shape)}  threads {torch.get_num_threads()}")
    print(f"  original VideoDecoder:      {times['original'] * 1000:9.1f} ms")
    print(
        f"  our DualReferenceDecoder:   {times['ours'] * 1000:9.1f} ms   ratio {times['ours'] / times['original']:.3f}"
    )
    print(f"  max |ours - original|:      {diff:.2e}   (largest |output| {largest:.1f})")


def vram() -> None:
    from gameanim.nodes.dynamicrafter.dualref_vae import DualReferenceDecoder

    if not torch.cuda.is_available():
        print("[VRAM 320x512x16 fp16] no CUDA device here: peak VRAM not measured")
        return
    decoder = DualReferenceDecoder((128, 256, 512, 512), 2, {2: 512, 3: 512}).to("cuda", torch.float16)
    shapes = [(128, 320, 512), (256, 160, 256), (512, 80, 128), (512, 40, 64), (128, 320, 512)]
    ref = [torch.randn(1, c, 2, h, w, device="cuda", dtype=torch.float16) for c, h, w in shapes]
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        decoder(torch.randn(FRAMES, 4, 40, 64, device="cuda", dtype=torch.float16), ref, FRAMES)
    torch.cuda.synchronize()
    print(f"[VRAM 320x512x16 fp16] peak of one decode: {torch.cuda.max_memory_allocated() / 1024**3:.2f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("original", type=Path, help="a checkout of github.com/Doubiiu/ToonCrafter")
    parser.add_argument("--real", action="store_true", help="the released ddconfig (slow on a CPU)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import_pack()
    import gameanim.nodes.dynamicrafter.dualref_vae  # noqa: F401 - diffusers looks for xformers on import: before the stand-in

    from tests.support.xformers_standin import install_xformers_standin

    install_xformers_standin()
    sys.path.insert(0, str(args.original.resolve()))
    if args.real:
        compare("ToonCrafter 512 ddconfig", REAL, size=8, repeats=args.repeats)
    else:
        compare("tiny ddconfig", TINY, size=8, repeats=args.repeats)
    vram()


if __name__ == "__main__":
    main()
