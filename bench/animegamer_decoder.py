"""Benchmark the AnimeGamer shot decoder: transformer forward and one sampler step, peak RSS (and VRAM on CUDA).

    python bench/animegamer_decoder.py [--full-size] [--repeats 3] [--layers 2] [--device cuda --dtype fp16]

Timings are medians of round-robin runs (other processes' load hits all candidates alike).
Configs: "tiny" (width 128, 2 layers) and "real width" (1920, 30 heads, 2 of the 30 layers, real E_a widths).
Latents are 5 frames of 16x16 by default (``--full-size``: 60x90 = the released 480x720 shot, very slow on CPU).
Baseline, measured in the same run: diffusers' stock ``CogVideoXTransformer3DModel`` of the same size (no flow
embedding, identity text projection, diffusers' own SDPA attention), so the ratio shows what AnimeGamer's additions
and our attention path cost.  A sampler step is one CFG network call (batch 2) plus the DPM++(2M) update.  On CUDA
the peak memory of our forward (weights included) is printed too; ``--layers 30 --full-size`` is the released model.
"""

from __future__ import annotations

import argparse
import resource

import torch
from _common import import_pack, interleaved_median


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def run(name: str, values: dict, latent_hw: tuple[int, int], args: argparse.Namespace) -> None:
    from diffusers import CogVideoXTransformer3DModel
    from gameanim.nodes.animegamer.decoder.model import DecoderConfig, build_decoder
    from gameanim.nodes.animegamer.decoder.sampler import sample

    config = DecoderConfig.from_mapping(values)
    torch.manual_seed(0)
    device, dtype = torch.device(args.device), DTYPES[args.dtype]
    model = build_decoder(config).train(False).to(device, dtype)
    stock = CogVideoXTransformer3DModel(
        num_attention_heads=config.num_attention_heads,
        attention_head_dim=config.attention_head_dim,
        in_channels=config.in_channels,
        out_channels=config.out_channels,
        time_embed_dim=config.time_embed_dim,
        text_embed_dim=config.width,
        num_layers=config.num_layers,
        sample_height=latent_hw[0],
        sample_width=latent_hw[1],
        sample_frames=17,
        norm_eps=config.norm_eps,
    ).train(False)
    stock.patch_embed.text_proj = torch.nn.Identity()
    stock = stock.to(device, dtype)
    h, w = latent_hw
    latents = torch.randn(2, 5, config.in_channels, h, w, device=device, dtype=dtype)
    tokens = torch.randn(2, 226, config.width, device=device, dtype=dtype)
    timestep = torch.tensor([999.0, 999.0], device=device)
    flow = torch.tensor([10.0, 10.0], device=device)
    params = sum(p.numel() for p in model.parameters()) / 1e6
    uncond = model.unconditional_tokens()
    with torch.no_grad():
        times = interleaved_median(
            {
                "stock": lambda: stock(
                    hidden_states=latents, encoder_hidden_states=tokens, timestep=timestep, return_dict=False
                ),
                "ours": lambda: model.transformer(latents, timestep, tokens, flow),
                "step": lambda: sample(
                    model.transformer, tokens[:1], uncond, 10.0, (5, config.in_channels, h, w), steps=1
                ),
            },
            args.repeats,
        )
        t_stock, t_ours, t_step = times["stock"], times["ours"], times["step"]
        vram = ""
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
            model.transformer(latents, timestep, tokens, flow)
            vram = f" | peak VRAM of our forward {torch.cuda.max_memory_allocated() / 1024**3:.2f} GiB"
    print(
        f"{name:>11}: {params:7.1f} M params, latents 5x{h}x{w} (batch 2 = CFG) | stock diffusers forward {t_stock * 1e3:8.1f} ms | "
        f"ours {t_ours * 1e3:8.1f} ms (x{t_ours / t_stock:.2f}) | one sampler step {t_step * 1e3:8.1f} ms | peak RSS {_rss_mib():.0f} MiB{vram}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full-size", action="store_true", help="latents 60x90 (the released 480x720 shot)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--layers", type=int, default=2, help="transformer layers of the real-width model (30 = released)"
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    args = parser.parse_args()
    import_pack()
    hw = (60, 90) if args.full_size else (16, 16)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.device}, {args.dtype}")
    tiny = {
        "num_attention_heads": 2,
        "attention_head_dim": 64,
        "in_channels": 4,
        "out_channels": 4,
        "time_embed_dim": 32,
        "num_layers": 2,
        "text_embed_dim": 32,
        "image_embed_dim": 768,
    }
    run("tiny", tiny, hw, args)
    run("real width", {"num_layers": args.layers}, hw, args)


if __name__ == "__main__":
    main()
