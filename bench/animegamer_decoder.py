"""Benchmark the AnimeGamer shot decoder on the CPU: transformer forward and one sampler step, peak RSS.

    python bench/animegamer_decoder.py [--full-size] [--repeats 3]

Timings are medians of round-robin runs (other processes' load hits all candidates alike).
Configs: "tiny" (width 128, 2 layers) and "real width" (1920, 30 heads, 2 of the 30 layers, real E_a widths).
Latents are 5 frames of 16x16 by default (``--full-size``: 60x90 = the released 480x720 shot, very slow on CPU).
Baseline, measured in the same run: diffusers' stock ``CogVideoXTransformer3DModel`` of the same size (no flow
embedding, identity text projection), so the ratio shows what AnimeGamer's additions cost.  A sampler step is one
CFG network call (batch 2) plus the DPM++(2M) update.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import torch
from _common import import_pack


def _interleaved(fns: list, repeats: int) -> list[float]:
    """Median seconds of each callable, run round-robin so load from other processes hits all of them alike."""
    for fn in fns:
        fn()  # warm-up
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for index, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            samples[index].append(time.perf_counter() - start)
    return [statistics.median(s) for s in samples]


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(name: str, values: dict, latent_hw: tuple[int, int], repeats: int) -> None:
    from diffusers import CogVideoXTransformer3DModel
    from gameanim.nodes.animegamer.decoder.model import DecoderConfig, build_decoder
    from gameanim.nodes.animegamer.decoder.sampler import sample

    config = DecoderConfig.from_mapping(values)
    torch.manual_seed(0)
    model = build_decoder(config).train(False)
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
    h, w = latent_hw
    latents = torch.randn(2, 5, config.in_channels, h, w)
    tokens = torch.randn(2, 226, config.width)
    timestep = torch.tensor([999.0, 999.0])
    flow = torch.tensor([10.0, 10.0])
    params = sum(p.numel() for p in model.parameters()) / 1e6
    uncond = model.unconditional_tokens()
    with torch.no_grad():
        t_stock, t_ours, t_step = _interleaved(
            [
                lambda: stock(
                    hidden_states=latents, encoder_hidden_states=tokens, timestep=timestep, return_dict=False
                ),
                lambda: model.transformer(latents, timestep, tokens, flow),
                lambda: sample(model.transformer, tokens[:1], uncond, 10.0, (5, config.in_channels, h, w), steps=1),
            ],
            repeats,
        )
    print(
        f"{name:>11}: {params:7.1f} M params, latents 5x{h}x{w} (batch 2 = CFG) | stock diffusers forward {t_stock * 1e3:8.1f} ms | "
        f"ours {t_ours * 1e3:8.1f} ms (x{t_ours / t_stock:.2f}) | one sampler step {t_step * 1e3:8.1f} ms | peak RSS {_rss_mib():.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full-size", action="store_true", help="latents 60x90 (the released 480x720 shot)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import_pack()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    hw = (60, 90) if args.full_size else (16, 16)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU, fp32")
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
    run("tiny", tiny, hw, args.repeats)
    run("real width", {"num_layers": 2}, hw, args.repeats)


if __name__ == "__main__":
    main()
