"""ComfyUI nodes for DynamiCrafter-family image-to-animation (thin adapters over :mod:`.model`).

Memory follows the VC2 nodes (the same :class:`..common.LoadedModel` handle over :mod:`...host`'s
memory API): the loader puts every part under ComfyUI's memory manager, each stage (keyframe and image
encoding, sampling, decoding) has the host load its parts, and ``offload`` unloads them after the stage.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import torch

from ...core import host
from ...core.errors import ModelFileError, NumericalError
from ...core.preview import animation_preview
from ..common import SEED, LoadedModel, category, checkpoint_names, field, load_parts, resolve_checkpoint

MODEL_TYPE = "DYNAMICRAFTER_MODEL"
# host device policy per part (the towers and the Resampler run once per clip, like a text encoder)
PART_ROLES = {
    "unet": "diffusion",
    "vae": "vae",
    "image_encoder": "text_encoder",
    "image_proj": "text_encoder",
    "text_encoder": "text_encoder",
}
FOLDERS = ("dynamicrafter", "checkpoints")
CATEGORY = category("DynamiCrafter")
PREVIEW_FPS = 8.0
KEYFRAMES = "keyframes"  # LATENT key: the fitted first and last keyframes [2,H,W,3] of an Inbetween clip


class DynamiCrafterLoader:
    DESCRIPTION = (
        "Load a DynamiCrafter-family image-to-video checkpoint: godmodeanimation Run, DynamiCrafter 512 "
        "(or its interp/loop variant) or ToonCrafter. The format is detected from the weights (the Run Lightning "
        "checkpoint's optimizer state is never read); other checkpoints get a clear error."
    )
    CATEGORY = CATEGORY
    FUNCTION = "load"
    RETURN_TYPES = (MODEL_TYPE,)
    RETURN_NAMES = ("dc_model",)
    OUTPUT_TOOLTIPS = ("UNet, image projection, OpenCLIP image and text towers and VAE read from the checkpoint.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "ckpt_name": field(
                    checkpoint_names(FOLDERS), "A file from models/dynamicrafter or models/checkpoints."
                ),
                "dtype": field(
                    ["fp16", "bf16", "fp32"],
                    "UNet/VAE precision. fp16 halves VRAM (GroupNorm stays fp32); on a NaN error use bf16 or fp32.",
                    default="fp16",
                ),
                "offload": field(
                    "BOOLEAN", "Move each part back to the offload device (RAM) after use to save VRAM.", default=True
                ),
            }
        }

    def load(self, ckpt_name: str, dtype: str, offload: bool) -> tuple[LoadedModel]:
        from ..vc2.model import parse_dtype
        from .model import load_model

        model = load_model(
            resolve_checkpoint(ckpt_name, FOLDERS), dtype=host.weight_dtype("diffusion", parse_dtype(dtype))
        )
        return (load_parts(model, ckpt_name, offload, "DynamiCrafter", PART_ROLES),)


SIZE_INPUTS: dict[str, Any] = {
    "prompt": field(
        "STRING",
        "What happens, e.g. 'a knight running, side view'. Empty is allowed (the image drives the motion).",
        multiline=True,
        default="",
    ),
    "width": field(
        "INT", "Clip width (multiple of 8; the 512 models were trained at 512).", default=512, min=64, max=2048, step=8
    ),
    "height": field("INT", "Clip height (multiple of 8; trained at 320).", default=320, min=64, max=2048, step=8),
    "frames": field("INT", "Number of frames (the models were trained on 16).", default=16, min=2, max=64),
    "steps": field("INT", "DDIM steps (original default 50).", default=50, min=1, max=500),
    "cfg": field("FLOAT", "Classifier-free guidance (original 7.5).", default=7.5, min=1.0, max=30.0, step=0.5),
    "eta": field(
        "FLOAT", "DDIM eta: 1.0 adds fresh noise each step as the original.", default=1.0, min=0.0, max=1.0, step=0.05
    ),
    "guidance_rescale": field(
        "FLOAT", "Pulls the guided prediction's contrast back (original 0.7).", default=0.7, min=0.0, max=1.0, step=0.05
    ),
    "seed": SEED,
}


def _animate(loaded: LoadedModel, image: Any, end_image: Any | None, frame_stride: int, **kw: Any) -> dict[str, Any]:
    from .model import build_conditioning, fit_image, sample

    model = loaded.model
    height, width, frames = kw["height"], kw["width"], kw["frames"]
    image = fit_image(image, height, width)
    end = fit_image(end_image, height, width) if end_image is not None else None
    with ExitStack() as stage:
        for key in ("vae", "image_encoder", "image_proj", "text_encoder"):
            if getattr(model, key) is not None:
                stage.enter_context(loaded.on_device(key))
        cond = build_conditioning(model, image, kw["prompt"], frames, end, kw["cfg"])
    with loaded.on_device("unet"), host.notify_on(NumericalError, "DynamiCrafter sampling became NaN"):
        reporter = host.preview_progress(kw["steps"], "sd")  # SD-family latents: the same KL-f8 VAE
        latents = sample(
            model,
            cond.context,
            cond.uncond_context,
            cond.latents,
            steps=kw["steps"],
            cfg=kw["cfg"],
            eta=kw["eta"],
            fs=frame_stride,
            guidance_rescale=kw["guidance_rescale"],
            seed=kw["seed"],
            progress=reporter,
            preview=reporter.preview,
        )
    result = {"samples": latents.cpu(), "fps": PREVIEW_FPS}
    if end is not None:  # ToonCrafter's decoder reads the keyframes back (DynamiCrafter Decode)
        result[KEYFRAMES] = torch.cat([image, end]).cpu()
    return result


class DynamiCrafterAnimate:
    DESCRIPTION = (
        "Animate a character picture (godmodeanimation Run: give it your character and it runs). The picture is "
        "scaled and centre-cropped to the clip size, its latent conditions every frame, its CLIP image tokens and "
        "the prompt guide the motion. Original DDIM (v-prediction, eta, CFG, guidance rescale); progress and "
        "Cancel on every step."
    )
    CATEGORY = CATEGORY
    FUNCTION = "run"
    RETURN_TYPES = ("LATENT",)
    RETURN_NAMES = ("latent",)
    OUTPUT_TOOLTIPS = ("5-D latent {'samples': [B,4,T,H/8,W/8]} for DynamiCrafter Decode.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "dc_model": field(MODEL_TYPE, "The loaded DynamiCrafter / Run model."),
                "image": field("IMAGE", "The character picture (first frame of the animation)."),
                **SIZE_INPUTS,
                "frame_stride": field(
                    "INT",
                    "The fps the UNet is conditioned on: smaller gives larger motion (DynamiCrafter 512 and Run: 24).",
                    default=24,
                    min=1,
                    max=60,
                ),
            }
        }

    def run(self, dc_model: LoadedModel, image: Any, frame_stride: int, **kw: Any) -> tuple[dict[str, Any]]:
        return (_animate(dc_model, image[:1], None, frame_stride, **kw),)


class DynamiCrafterInbetween:
    DESCRIPTION = (
        "Draw the frames between two keyframes (ToonCrafter / DynamiCrafter interp): the first and last latents "
        "condition frames 0 and T-1, the first keyframe's CLIP tokens and the prompt guide the motion."
    )
    CATEGORY = CATEGORY
    FUNCTION = "run"
    RETURN_TYPES = ("LATENT",)
    RETURN_NAMES = ("latent",)
    OUTPUT_TOOLTIPS = (
        "5-D latent {'samples': [1,4,T,H/8,W/8]} whose first and last frames are the keyframes; it also carries "
        "the two keyframe pictures for ToonCrafter's decoder.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "dc_model": field(MODEL_TYPE, "The loaded ToonCrafter or DynamiCrafter interp model."),
                "first_keyframe": field("IMAGE", "The starting drawing."),
                "last_keyframe": field("IMAGE", "The ending drawing (same character, same framing)."),
                **SIZE_INPUTS,
                "frame_stride": field(
                    "INT",
                    "The fps the UNet is conditioned on: smaller gives larger motion (ToonCrafter 10, DynamiCrafter interp 5).",
                    default=10,
                    min=1,
                    max=60,
                ),
            }
        }

    def run(
        self, dc_model: LoadedModel, first_keyframe: Any, last_keyframe: Any, frame_stride: int, **kw: Any
    ) -> tuple[dict[str, Any]]:
        return (_animate(dc_model, first_keyframe[:1], last_keyframe[:1], frame_stride, **kw),)


class DynamiCrafterDecode:
    DESCRIPTION = (
        "Decode a DynamiCrafter latent to frames with the checkpoint's VAE. DynamiCrafter / Run decode a few frames "
        "per call; ToonCrafter's dual-reference decoder reads the two keyframes back for detail (carried by the "
        "Inbetween latent, or given here) and decodes up to 16 frames together, as the original."
    )
    CATEGORY = CATEGORY
    FUNCTION = "decode"
    RETURN_TYPES = ("IMAGE",)
    RETURN_NAMES = ("frames",)
    OUTPUT_TOOLTIPS = ("Frames [B*T,H,W,3], 0..1.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "dc_model": field(MODEL_TYPE, "The loaded model (its VAE is used)."),
                "latent": field("LATENT", "The 5-D latent from DynamiCrafter Animate or Inbetween."),
                "chunk": field(
                    "INT",
                    "Frames decoded per VAE call: 1 uses least memory. ToonCrafter ignores it (16 frames together).",
                    default=1,
                    min=1,
                    max=64,
                ),
            },
            "optional": {
                "first_keyframe": field(
                    "IMAGE", "ToonCrafter only: the first keyframe, when the latent does not carry it (fitted to size)."
                ),
                "last_keyframe": field(
                    "IMAGE", "ToonCrafter only: the last keyframe, when the latent does not carry it (fitted to size)."
                ),
            },
        }

    def decode(
        self,
        dc_model: LoadedModel,
        latent: dict[str, Any],
        chunk: int,
        first_keyframe: Any | None = None,
        last_keyframe: Any | None = None,
    ) -> dict[str, Any]:
        from .model import decode, fit_image

        samples = latent["samples"]
        vae = dc_model.model.vae
        if vae is None:
            raise ModelFileError(f"{dc_model.name} has no VAE weights: load the full model.ckpt to decode.")
        keyframes = None
        if first_keyframe is not None and last_keyframe is not None:
            size = (samples.shape[-2] * 8, samples.shape[-1] * 8)
            keyframes = (fit_image(first_keyframe[:1], *size), fit_image(last_keyframe[:1], *size))
        elif latent.get(KEYFRAMES) is not None:
            keyframes = (latent[KEYFRAMES][:1], latent[KEYFRAMES][1:2])
        total = (samples.shape[0] * samples.shape[2] + chunk - 1) // chunk
        with dc_model.on_device("vae"):
            frames = decode(dc_model.model, samples, chunk=chunk, progress=host.progress(total), keyframes=keyframes)
        return {"ui": animation_preview(frames, latent.get("fps", PREVIEW_FPS)), "result": (frames,)}


NODE_CLASS_MAPPINGS = {
    "GameAnimDynamiCrafterLoader": DynamiCrafterLoader,
    "GameAnimDynamiCrafterAnimate": DynamiCrafterAnimate,
    "GameAnimDynamiCrafterInbetween": DynamiCrafterInbetween,
    "GameAnimDynamiCrafterDecode": DynamiCrafterDecode,
}
NODE_DISPLAY_NAME_MAPPINGS = {
    "GameAnimDynamiCrafterLoader": "DynamiCrafter Loader (Run / DynamiCrafter / ToonCrafter)",
    "GameAnimDynamiCrafterAnimate": "DynamiCrafter Animate Image",
    "GameAnimDynamiCrafterInbetween": "DynamiCrafter Inbetween Keyframes",
    "GameAnimDynamiCrafterDecode": "DynamiCrafter Decode",
}
