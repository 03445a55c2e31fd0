"""Peak memory of a VC2 320x512x16 fp16 clip and of one AnimeGamer turn: ``python bench/memory.py``.

On a CUDA device each stage runs for real (random weights of the real architectures, real sizes) and the
figure is ``torch.cuda.max_memory_allocated``.  Elsewhere (CPU) the figures are **modelled**: the stage
runs on PyTorch's ``meta`` device (shapes only, no data) while a dispatch hook adds up the bytes of
every live tensor the stage creates; the peak of that sum plus the weights and inputs is the modelled
peak.  Attention is modelled as the fused kernel a GPU runs (flash / memory-efficient SDPA: the output,
no score matrix; ``--math-attention`` counts the score matrices of the unfused path instead, which is
what a CPU or an old GPU materialises).  The model ignores allocator rounding, fragmentation and kernel
workspaces (cuDNN/SDPA), so real GPU peaks run somewhat higher.

Stages are what the host loads at one time (ComfyUI's memory manager unloads a stage's model when the
next one needs the room): VC2 = UNet sampling step (CFG, batch 1), then VAE decode (1 frame per call);
AnimeGamer turn = MLLM pass over prompt + 200 generated tokens, decoder sampling step (CFG, 17 frames
480x720), CogVideoX VAE decode.  Baseline in the same run: every model of the job resident at once
(what the pack did before issue 16 with offload off), printed as a ratio to the staged peak.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import nullcontext

import torch
from _common import import_pack

from tests.support.memory_meter import LiveBytes, fused_attention

GIB = 1024**3
HALF = torch.float16


def _bytes(*tensors_or_modules: object) -> int:
    total = 0
    for item in tensors_or_modules:
        if isinstance(item, torch.nn.Module):
            total += sum(t.numel() * t.element_size() for t in item.state_dict().values())
        elif isinstance(item, torch.Tensor):
            total += item.numel() * item.element_size()
    return total


def stage_peak(
    device: torch.device, build: Callable[[], tuple[object, list, Callable[[], object]]], fused: bool = True
) -> tuple[int, int]:
    """(peak bytes, weight bytes) of one stage: ``build()`` gives (model, inputs, run) on ``device``."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    with torch.device(device):
        model, inputs, run = build()
    weights = _bytes(model)
    counter = LiveBytes() if device.type == "meta" else nullcontext()
    with torch.no_grad(), fused_attention(fused and device.type == "meta"), counter:
        run()
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = weights + _bytes(*inputs) + counter.peak
    del model, inputs, run
    return peak, weights


# ----------------------------------------------------------------------------- VC2


def vc2_unet_step() -> tuple[object, list, Callable[[], object]]:
    from gameanim.nodes.vc2.unet import UNetLayout, VC2UNet

    layout = UNetLayout(4, 4, (320, 640, 1280, 1280), (True, True, True, False), 2, 1024, 64)
    unet = VC2UNet(layout).to(HALF).train(False)
    x = torch.zeros(1, 4, 16, 40, 64)
    ctx = torch.zeros(1, 77, 1024, dtype=HALF)
    t = torch.tensor([981])
    return unet, [x, ctx], lambda: (unet(x, t, ctx, 16), unet(x, t, ctx, 16))  # CFG: cond + uncond passes


def vc2_vae_decode() -> tuple[object, list, Callable[[], object]]:
    from diffusers import AutoencoderKL

    channels = (128, 256, 512, 512)
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=channels, layers_per_block=2,
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4, norm_num_groups=32,
    ).to(HALF).train(False)  # fmt: skip
    z = torch.zeros(1, 4, 40, 64, dtype=HALF)
    return vae, [z], lambda: vae.decode(z)


# ----------------------------------------------------------------------------- AnimeGamer


def mllm_pass(tokens: int) -> Callable[[], tuple[object, list, Callable[[], object]]]:
    def build() -> tuple[object, list, Callable[[], object]]:
        from transformers import MistralConfig, MistralForCausalLM

        config = MistralConfig(vocab_size=32284, torch_dtype=torch.bfloat16)  # Mistral-7B-v0.1 + AnimeGamer tokens
        llm = MistralForCausalLM(config).to(torch.bfloat16).train(False)
        ids = torch.zeros(1, tokens, dtype=torch.long)
        return llm, [ids], lambda: llm(input_ids=ids, use_cache=True, logits_to_keep=1)

    return build


def decoder_step() -> tuple[object, list, Callable[[], object]]:
    from gameanim.nodes.animegamer.decoder.model import DecoderConfig, build_decoder

    config = DecoderConfig()
    model = build_decoder(config, device=torch.get_default_device()).to(HALF).train(False)
    latents = torch.zeros(2, 5, 16, 60, 90, dtype=HALF)
    cond = torch.zeros(2, 226, config.width, dtype=HALF)
    t = torch.tensor([999.0, 999.0])
    flow = torch.tensor([10.0, 10.0])
    return model, [latents, cond], lambda: model.transformer(latents, t, cond, flow)


def cogvideox_vae_decode() -> tuple[object, list, Callable[[], object]]:
    from diffusers import AutoencoderKLCogVideoX

    vae = AutoencoderKLCogVideoX().to(HALF).train(False)
    z = torch.zeros(1, 16, 5, 60, 90, dtype=HALF)
    return vae, [z], lambda: vae.decode(z)


def report(job: str, stages: dict[str, tuple[int, int]], label: str, shared: int = 0) -> None:
    """Print the stages, the staged peak and the all-resident baseline; ``shared`` = weight bytes of a model that
    two stages load (the VAE: encode and decode), counted once in the baseline."""
    staged = max(peak for peak, _ in stages.values())
    resident = sum(w for _, w in stages.values()) - shared + max(peak - w for peak, w in stages.values())
    print(f"{job} ({label})")
    for name, (peak, weights) in stages.items():
        print(f"  {name:<40} peak {peak / GIB:6.2f} GiB  (weights {weights / GIB:5.2f} GiB)")
    print(f"  {'staged peak (host-managed)':<40} {staged / GIB:6.2f} GiB")
    print(f"  {'baseline: all models resident':<40} {resident / GIB:6.2f} GiB   ratio {resident / staged:4.2f}x")


def memory_parser(description: str) -> argparse.ArgumentParser:
    """The options every memory bench takes (``--device``, ``--math-attention``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", default=None, help="cuda to measure on a GPU; default: cuda if present, else meta")
    parser.add_argument("--math-attention", action="store_true", help="model unfused attention (score matrices)")
    return parser


def run_setup(args: argparse.Namespace) -> tuple[torch.device, str, bool]:
    """(device, report label, fused attention?) from :func:`memory_parser`'s options; imports the pack."""
    import_pack()
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "meta"))
    attention = "unfused attention" if args.math_attention else "fused attention"
    label = (
        "measured, torch.cuda.max_memory_allocated"
        if device.type == "cuda"
        else f"MODELLED from tensor sizes on the meta device, {attention}"
    )
    return device, label, not args.math_attention


def main() -> None:
    parser = memory_parser(__doc__.splitlines()[0])
    parser.add_argument("--mllm-tokens", type=int, default=254 + 200, help="prompt + generated tokens of one turn")
    args = parser.parse_args()
    device, label, fused = run_setup(args)
    report(
        "VC2 320x512x16 fp16",
        {
            "UNet DDIM step (CFG)": stage_peak(device, vc2_unet_step, fused),
            "VAE decode (1 frame/call)": stage_peak(device, vc2_vae_decode, fused),
        },
        label,
    )
    report(
        "AnimeGamer turn (480x720x17, fp16 decoder, bf16 MLLM)",
        {
            f"MLLM pass ({args.mllm_tokens} tokens)": stage_peak(device, mllm_pass(args.mllm_tokens), fused),
            "decoder sampler step (CFG)": stage_peak(device, decoder_step, fused),
            "CogVideoX VAE decode (5 latents)": stage_peak(device, cogvideox_vae_decode, fused),
        },
        label,
    )


if __name__ == "__main__":
    main()
