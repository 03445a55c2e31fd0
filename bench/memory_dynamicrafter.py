"""Peak memory of the DynamiCrafter family at 320x512x16 fp16: ``python bench/memory_dynamicrafter.py``.

The jobs of the two shipped workflows, staged as the nodes load their parts (``nodes/dynamicrafter/comfy_nodes.py``):

* conditioning: VAE, OpenCLIP image tower, Resampler and text tower on the device together; the prompt and the
  empty prompt encoded, the image and a mid-grey image through the image tower + Resampler, the keyframe(s)
  through the VAE encoder (one picture per call);
* UNet sampling step with CFG: the conditional and the unconditional pass one after the other (batch 1 each, as
  :func:`~nodes.vc2.ddim.ddim_sample` runs them), then guidance and its rescale;
* decode: DynamiCrafter / Run one frame per call (``chunk`` 1); ToonCrafter's dual-reference decoder all 16 frames
  in one call (its temporal layers see the whole window, so it cannot be chunked) after the keyframes' encoder
  features, and with ``redecode_middle`` the second decode of 14 frames while the first result is held.

The models are the real released architectures, built by our loader (:func:`nodes.dynamicrafter.model.load_model`)
from the committed key manifests of the real checkpoints, so the layouts are what the loader infers from the real
files; the weights are never materialised on the ``meta`` device.  The counting, the attention model and what is
ignored are those of ``bench/memory.py`` (its docstring).  ``--check`` cross-checks the counter against the CPU
allocator: a small stage runs on real CPU tensors under PyTorch's profiler (every allocation and free of the
allocator, with its running total) and on ``meta`` under the counter, and both peaks are printed.
On CUDA each stage's parts are moved to the GPU with ``to_empty`` (uninitialised weights: their values do not
change the memory) and measured; that path has not been run while writing this (no GPU here).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from memory import GIB, HALF, memory_parser, report, run_setup, stage_peak

from tests.support.memory_meter import cpu_and_modelled_peaks

FRAMES, HEIGHT, WIDTH = 16, 320, 512
LATENT = (4, FRAMES, HEIGHT // 8, WIDTH // 8)
CFG, RESCALE = 7.5, 0.7
Stage = Callable[[], tuple[object, list, Callable[[], object]]]


@functools.cache
def _meta_model(manifest: str) -> object:
    """The released model built by our loader from the real key manifest, fp16 (towers fp32, as the nodes)."""
    from gameanim.nodes.dynamicrafter.checkpoint import BUFFER_KEYS
    from gameanim.nodes.dynamicrafter.model import load_model

    from tests.support.dynamicrafter_fixtures import manifest_state_dict

    sd = {k: v for k, v in manifest_state_dict(manifest).items() if k not in BUFFER_KEYS}  # default schedule
    with torch.device("cpu"):  # the loader builds on meta itself; the schedule it derives needs real numbers
        return load_model(sd, dtype=HALF)


def _parts(model: object, *names: str) -> torch.nn.ModuleDict:
    """The parts one stage has on the device, moved there (left on ``meta`` when modelling)."""
    device = torch.get_default_device()
    parts = torch.nn.ModuleDict({name: getattr(model, name) for name in names})
    return parts if device.type == "meta" else parts.to_empty(device=device)


def _vae_bytes(manifest: str) -> int:
    return sum(t.numel() * t.element_size() for t in _meta_model(manifest).vae.state_dict().values())


def _image() -> torch.Tensor:
    return torch.zeros(1, HEIGHT, WIDTH, 3)


def conditioning(manifest: str, keyframes: int) -> Stage:
    def build() -> tuple[object, list, Callable[[], object]]:
        from gameanim.nodes.dynamicrafter.model import encode_image_tokens, encode_text

        model = _meta_model(manifest)
        parts = _parts(model, "vae", "image_encoder", "image_proj", "text_encoder")
        images = [_image() for _ in range(keyframes)]

        def run() -> object:
            vae = model.vae
            latents = [vae.encode(im.permute(0, 3, 1, 2).to(vae.dtype) * 2 - 1).latent_dist.mode() for im in images]
            texts = encode_text(model, ["a character running"]), encode_text(model, [""])
            tokens = encode_image_tokens(model, images[0]), encode_image_tokens(model, torch.full_like(images[0], 0.5))
            return latents, texts, tokens

        return parts, images, run

    return build


def unet_step(manifest: str) -> Stage:
    def build() -> tuple[object, list, Callable[[], object]]:
        from gameanim.nodes.vc2.ddim import rescale_guidance

        model = _meta_model(manifest)
        unet = _parts(model, "unet")["unet"]
        tokens = 77 + model.image_proj.config_original["num_queries"] * model.video_length
        x, concat = torch.zeros(1, *LATENT), torch.zeros(1, *LATENT)
        context, uncond = torch.zeros(1, tokens, model.context_dim), torch.zeros(1, tokens, model.context_dim)
        t, fs = torch.tensor([999]), torch.tensor([24])

        def eps(c: torch.Tensor) -> torch.Tensor:  # model_fn of nodes/dynamicrafter/model.py::sample
            return unet(torch.cat([x, concat], dim=1), t, c.to(HALF), fs).float()

        def run() -> object:
            e_c = eps(context)
            e_u = eps(uncond)
            return rescale_guidance(e_u + CFG * (e_c - e_u), e_c, RESCALE)

        return unet, [x, concat, context, uncond], run

    return build


def vae_decode(manifest: str) -> Stage:
    def build() -> tuple[object, list, Callable[[], object]]:
        model = _meta_model(manifest)
        vae = _parts(model, "vae")["vae"]
        z = torch.zeros(1, *LATENT[:1], *LATENT[2:], dtype=HALF)  # one frame per call
        return vae, [z], lambda: vae.decode(z, return_dict=False)[0].float()

    return build


def dual_reference_decode(manifest: str, redecode_middle: bool) -> Stage:
    def build() -> tuple[object, list, Callable[[], object]]:
        from gameanim.nodes.dynamicrafter.dualref_vae import keyframe_hidden_states

        model = _meta_model(manifest)
        vae = _parts(model, "vae")["vae"]
        z = torch.zeros(LATENT[1], LATENT[0], *LATENT[2:], dtype=HALF)  # the 16-frame window, one call
        first, last = _image(), _image()

        def run() -> object:  # nodes/dynamicrafter/dualref_vae.py::decode_clip for one clip
            refs = keyframe_hidden_states(vae, first, last)
            clip = vae.decoder(z, refs, FRAMES).float()
            if redecode_middle:
                keep = [f for f in range(FRAMES) if f not in (1, FRAMES - 2)]
                again = vae.decoder(z[keep], refs, len(keep)).float()
                clip[FRAMES // 2 - 1 : FRAMES // 2 + 1] = again[FRAMES // 2 - 2 : FRAMES // 2]
            return clip

        return vae, [z, first, last], run

    return build


# ----------------------------------------------------------------------------- cross-check on real CPU tensors


def check_builds() -> dict[str, Callable[[], tuple[torch.nn.Module, Callable[[], object]]]]:
    """Small stages of the real architectures that a CPU runs in seconds (fp32: CPU half kernels are slow)."""

    def toon_decoder() -> tuple[torch.nn.Module, Callable[[], object]]:
        from gameanim.nodes.dynamicrafter.dualref_vae import DualReferenceDecoder

        decoder = DualReferenceDecoder((128, 256, 512, 512), 2, {2: 512, 3: 512})
        frames, size = 8, 8
        z = torch.zeros(frames, 4, size, size)
        scales = [(128, 1), (256, 2), (512, 4), (512, 8), (128, 1)]
        refs = [torch.zeros(1, c, 2, size * 8 // s, size * 8 // s) for c, s in scales]
        return decoder, lambda: decoder(z, refs, frames)

    def image_tower() -> tuple[torch.nn.Module, Callable[[], object]]:
        from gameanim.nodes.dynamicrafter.image_encoder import HEAD_WIDTH, ImageTokens
        from open_clip.transformer import VisionTransformer

        width = 1280  # ViT-H/14 at 224 as the checkpoints' embedder, 8 of its 32 blocks
        visual = VisionTransformer(
            image_size=224,
            patch_size=14,
            width=width,
            layers=8,
            heads=width // HEAD_WIDTH[width],
            mlp_ratio=4.0,
            output_dim=1024,
        )
        tower, image = ImageTokens(visual.train(False)), torch.zeros(1, 3, HEIGHT, WIDTH)
        return tower, lambda: tower(image)

    def unet() -> tuple[torch.nn.Module, Callable[[], object]]:
        from gameanim.nodes.dynamicrafter.unet import DynamiCrafterUNet
        from gameanim.nodes.vc2.unet import UNetLayout

        layout = UNetLayout(8, 4, (64, 128, 256, 256), (True, True, True, False), 2, 1024, 64)
        model = DynamiCrafterUNet(layout).train(False)
        x, context = torch.zeros(1, 8, FRAMES, 16, 16), torch.zeros(1, 77 + 16 * FRAMES, 1024)
        return model, lambda: model(x, torch.tensor([999]), context, torch.tensor([24]))

    return {
        "DynamiCrafter UNet, real structure at 1/5 width, 16 frames 16x16": unet,
        "ToonCrafter dual-reference decoder, real widths, 8 frames 64x64": toon_decoder,
        "OpenCLIP ViT-H image tower (8 of 32 blocks), 1 image 320x512": image_tower,
    }


def main() -> None:
    parser = memory_parser(__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="also cross-check the counter on real CPU tensors")
    args = parser.parse_args()
    device, label, fused = run_setup(args)
    dc, toon = "dynamicrafter_512", "tooncrafter_512_interp"
    report(
        "DynamiCrafter 512 / godmodeanimation Run 320x512x16 fp16",
        {
            "conditioning (VAE+towers, 1 image)": stage_peak(device, conditioning(dc, 1), fused),
            "UNet DDIM step (CFG)": stage_peak(device, unet_step(dc), fused),
            "VAE decode (1 frame/call)": stage_peak(device, vae_decode(dc), fused),
        },
        label,
        shared=_vae_bytes(dc),
    )
    report(
        "ToonCrafter 320x512x16 fp16",
        {
            "conditioning (VAE+towers, 2 keyframes)": stage_peak(device, conditioning(toon, 2), fused),
            "UNet DDIM step (CFG)": stage_peak(device, unet_step(toon), fused),
            "dual-ref decode (16 frames + re-decode)": stage_peak(device, dual_reference_decode(toon, True), fused),
        },
        label,
        shared=_vae_bytes(toon),
    )
    peak, _ = stage_peak(device, dual_reference_decode(toon, False), fused)
    print(f"  {'  redecode_middle off: decode peak':<40} {peak / GIB:6.2f} GiB")
    if args.check:
        print("cross-check: peak of the stage's own tensors, real CPU run vs the meta-device model (ratio)")
        for name, build in check_builds().items():
            real, modelled = cpu_and_modelled_peaks(build)
            print(
                f"  {name:<64} CPU allocator {real / 2**20:7.1f} MiB  modelled {modelled / 2**20:7.1f} MiB"
                f"  ratio {modelled / real:.3f}"
            )


if __name__ == "__main__":
    main()
