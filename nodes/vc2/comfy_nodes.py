"""ComfyUI nodes for VideoCrafter2 sprite sampling (thin adapters over :mod:`.model` and :mod:`.prompts`).

Memory and progress go through :mod:`...host`: the loader puts the UNet, text encoder and VAE under
ComfyUI's memory manager, each stage asks the host to load its part (freeing other models, partially
in low-VRAM mode), and the loader's ``offload`` unloads a part right after its stage so an 8-12 GB card
holds one stage at a time.  Sampling shows a live latent preview through the host's previewer.
"""

from __future__ import annotations

import json
from typing import Any

from ...core import host
from ...core.errors import InputError, ModelFileError, NumericalError
from ...core.preview import animation_preview
from ..common import SEED, LoadedModel, category, checkpoint_names, field, load_parts, resolve_checkpoint

MODEL_TYPE = "VC2_MODEL"
FOLDERS = ("videocrafter", "checkpoints")
CATEGORY = category("VC2")
PART_ROLES = {"unet": "diffusion", "vae": "vae", "text_encoder": "text_encoder"}  # host device policy per part
PREVIEW_FPS = 8.0  # playback rate of the node preview when the latent does not say (VC2 renders 16-frame clips)


def _condition(loaded: LoadedModel, conditioning: Any | None, text: str = "") -> Any:
    from .text_encoder import context_from_conditioning

    if conditioning is not None:
        return context_from_conditioning(conditioning, loaded.model.context_dim)
    return _encode(loaded, [text])


def _encode(loaded: LoadedModel, texts: list[str]) -> Any:
    """Context for ``texts`` from the checkpoint's text encoder, loaded by the host for the call (CPU result)."""
    from .model import encode_text

    if loaded.model.text_encoder is None:
        return encode_text(loaded.model, texts)  # raises the explanatory ModelFileError
    with loaded.on_device("text_encoder"):
        return encode_text(loaded.model, texts).cpu()


class VC2Loader:
    DESCRIPTION = (
        "Load a VideoCrafter2 text-to-video checkpoint or a godmodeanimation fine-tune (run/jump, spin kick, "
        "sword wield). The format is detected from the weights; image checkpoints get a clear error."
    )
    CATEGORY = CATEGORY
    FUNCTION = "load"
    RETURN_TYPES = (MODEL_TYPE,)
    RETURN_NAMES = ("vc2_model",)
    OUTPUT_TOOLTIPS = ("The VC2 UNet, VAE and OpenCLIP text encoder read from the checkpoint.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "ckpt_name": field(checkpoint_names(FOLDERS), "A file from models/videocrafter or models/checkpoints."),
                "dtype": field(
                    ["fp16", "bf16", "fp32"],
                    "Weight precision. fp16 halves VRAM (GroupNorm stays fp32); if you get a NaN error use bf16 or fp32.",
                    default="fp16",
                ),
                "offload": field(
                    "BOOLEAN",
                    "On: unload each part (text encoder, UNet, VAE) from VRAM right after its stage. Off: keep it "
                    "loaded; ComfyUI still unloads it when another model needs the room or on 'Free model memory'.",
                    default=True,
                ),
            }
        }

    def load(self, ckpt_name: str, dtype: str, offload: bool) -> tuple[LoadedModel]:
        from .model import load_model, parse_dtype

        model = load_model(
            resolve_checkpoint(ckpt_name, FOLDERS), dtype=host.weight_dtype("diffusion", parse_dtype(dtype))
        )
        return (load_parts(model, ckpt_name, offload, "VC2", PART_ROLES),)


class VC2TextEncode:
    DESCRIPTION = (
        "Encode a prompt with the checkpoint's own OpenCLIP ViT-H-14 (penultimate layer, 77 tokens). Shows the "
        "token count and warns, naming the cut words, when the prompt is longer than 77 tokens."
    )
    CATEGORY = CATEGORY
    FUNCTION = "encode"
    RETURN_TYPES = ("CONDITIONING", "INT", "STRING")
    RETURN_NAMES = ("conditioning", "tokens", "report")
    OUTPUT_TOOLTIPS = (
        "Text conditioning [1,77,1024] for the VC2 sampler (same format as ComfyUI's SD2 CLIP).",
        "Number of tokens including start and end (VC2 reads 77).",
        "Token count and the words that were cut, if any.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "vc2_model": field(MODEL_TYPE, "The loaded VC2 model (its text encoder is used)."),
                "text": field(
                    "STRING",
                    "The prompt. Empty text gives VC2's unconditional (negative) context.",
                    multiline=True,
                    default="",
                ),
            }
        }

    def encode(self, vc2_model: LoadedModel, text: str) -> dict[str, Any]:
        from .text_encoder import token_report

        report = token_report(text)
        message = f"{report.tokens}/{report.limit} tokens"
        if report.truncated:
            message += f"; cut off (not seen by the model): {report.cut_text!r}"
            host.notify("VC2 prompt cut at 77 tokens", f"{report.tokens} tokens; not seen: {report.cut_text}")
        context = _encode(vc2_model, [text])
        return {"ui": {"text": [message]}, "result": ([[context, {}]], report.tokens, message)}


def _sample(
    loaded: LoadedModel,
    positive: Any,
    negative: Any | None,
    width: int,
    height: int,
    frames: int,
    fps: int,
    steps: int,
    cfg: float,
    eta: float,
    seed: int,
    init: dict[str, Any] | None = None,
    denoise: float = 1.0,
) -> Any:
    from .model import latent_shape, sample, skipped_steps
    from .schedule import ddim_timesteps

    model = loaded.model
    ddim_timesteps(steps)
    context = _condition(loaded, positive)
    uncond = _condition(loaded, negative)
    shape = latent_shape(context.shape[0], frames, height, width, model.latent_channels)
    init_latent = None
    if init is not None:
        init_latent = init["samples"]
        if init_latent.ndim != 5 or init_latent.shape[1] != model.latent_channels:
            raise InputError(
                f"The init latent must be a 5-D VC2 latent [B,4,T,H/8,W/8], got {tuple(init_latent.shape)}."
            )
        shape = tuple(init_latent.shape)
    run_steps = steps - (skipped_steps(steps, denoise) if init_latent is not None and denoise < 1 else 0)
    with loaded.on_device("unet"), host.notify_on(NumericalError, "VC2 sampling became NaN"):
        reporter = host.preview_progress(run_steps, "sd")
        return sample(
            model,
            context,
            uncond,
            steps=steps,
            cfg=cfg,
            eta=eta,
            fps=fps,
            seed=seed,
            shape=shape,
            init_latent=init_latent,
            denoise=denoise if init_latent is not None else 1.0,
            progress=reporter,
            preview=reporter.preview,
        )


def _decode(loaded: LoadedModel, latents: Any, chunk: int, tiled: bool) -> Any:
    from .model import decode

    if loaded.model.vae is None:
        raise ModelFileError(f"{loaded.name} has no VAE weights: load a full VC2 checkpoint to decode.")
    total = (latents.shape[0] * latents.shape[2] + chunk - 1) // chunk
    with loaded.on_device("vae"):
        return decode(loaded.model, latents, chunk=chunk, tiled=tiled, progress=host.progress(total))


SAMPLING_INPUTS: dict[str, Any] = {
    "width": field(
        "INT", "Clip width in pixels (multiple of 8; VC2 was trained at 512).", default=512, min=64, max=2048, step=8
    ),
    "height": field(
        "INT", "Clip height in pixels (multiple of 8; VC2 was trained at 320).", default=320, min=64, max=2048, step=8
    ),
    "frames": field("INT", "Number of frames (VC2 was trained on 16).", default=16, min=1, max=64),
    "fps": field(
        "INT",
        "The fps value the UNet is conditioned on (godmodeanimation used 16); not the playback rate.",
        default=16,
        min=1,
        max=60,
    ),
    "steps": field(
        "INT",
        "DDIM steps (original default 50). Counts that do not divide 1000 keep the stride 1000//steps.",
        default=50,
        min=1,
        max=500,
    ),
    "cfg": field(
        "FLOAT", "Classifier-free guidance scale (original default 12).", default=12.0, min=1.0, max=30.0, step=0.5
    ),
    "eta": field(
        "FLOAT",
        "DDIM eta: 1.0 adds fresh noise each step as the original; 0 is deterministic.",
        default=1.0,
        min=0.0,
        max=1.0,
        step=0.05,
    ),
    "seed": SEED,
}


class VC2Sampler:
    DESCRIPTION = (
        "Sample a VC2 video latent with the original DDIM (leading timesteps, eta, classifier-free guidance, fps, "
        "scale_arr). Noise is seeded on the CPU. Progress and Cancel work on every step."
    )
    CATEGORY = CATEGORY
    FUNCTION = "run"
    RETURN_TYPES = ("LATENT",)
    RETURN_NAMES = ("latent",)
    OUTPUT_TOOLTIPS = ("5-D latent {'samples': [B,4,T,H/8,W/8]} for VC2 Decode.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "vc2_model": field(MODEL_TYPE, "The loaded VC2 model."),
                "positive": field(
                    "CONDITIONING", "Prompt conditioning (VC2 Text Encode, or an SD 2.x CLIP Text Encode)."
                ),
                **SAMPLING_INPUTS,
            },
            "optional": {
                "negative": field(
                    "CONDITIONING", "Unconditional/negative conditioning; empty prompt when not connected (as VC2)."
                ),
                "init_latent": field(
                    "LATENT", "Optional starting clip latent (e.g. from VC2 Encode) for video-to-video."
                ),
                "denoise": field(
                    "FLOAT",
                    "With an init latent: how much to change it (1.0 ignores it).",
                    default=1.0,
                    min=0.01,
                    max=1.0,
                    step=0.01,
                ),
            },
        }

    def run(
        self,
        vc2_model: LoadedModel,
        positive: Any,
        negative: Any = None,
        init_latent: Any = None,
        denoise: float = 1.0,
        **kw: Any,
    ) -> tuple[dict[str, Any]]:
        latents = _sample(vc2_model, positive, negative, init=init_latent, denoise=denoise, **kw)
        return ({"samples": latents, "fps": kw.get("fps", PREVIEW_FPS)},)


class VC2Decode:
    DESCRIPTION = "Decode a VC2 latent to frames with the checkpoint's VAE, a few frames at a time to bound memory."
    CATEGORY = CATEGORY
    FUNCTION = "decode"
    RETURN_TYPES = ("IMAGE", "FLOAT")
    RETURN_NAMES = ("frames", "fps")
    OUTPUT_TOOLTIPS = (
        "Frames [B*T,H,W,3], 0..1.",
        "The clip's frame rate (the fps the sampler conditioned on): link it to the sprite savers' fps.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "vc2_model": field(MODEL_TYPE, "The loaded VC2 model (its VAE is used)."),
                "latent": field("LATENT", "The 5-D latent from VC2 Sampler."),
                "chunk": field("INT", "Frames decoded per VAE call: 1 uses least memory.", default=1, min=1, max=64),
                "tiled": field(
                    "BOOLEAN",
                    "Decode each frame in tiles (less VRAM for large frames, slightly slower).",
                    default=False,
                ),
            }
        }

    def decode(self, vc2_model: LoadedModel, latent: dict[str, Any], chunk: int, tiled: bool) -> dict[str, Any]:
        samples = latent["samples"]
        if samples.ndim != 5:
            raise InputError(f"VC2 Decode needs a 5-D VC2 latent [B,4,T,H,W], got {tuple(samples.shape)}.")
        frames = _decode(vc2_model, samples, chunk, tiled)
        fps = float(latent.get("fps", PREVIEW_FPS))
        return {"ui": animation_preview(frames, fps), "result": (frames, fps)}


class VC2Encode:
    DESCRIPTION = (
        "Encode frames to a VC2 latent with the checkpoint's VAE (posterior mean), e.g. as the sampler's init latent."
    )
    CATEGORY = CATEGORY
    FUNCTION = "encode"
    RETURN_TYPES = ("LATENT",)
    RETURN_NAMES = ("latent",)
    OUTPUT_TOOLTIPS = ("5-D latent {'samples': [1,4,T,H/8,W/8]}.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "vc2_model": field(MODEL_TYPE, "The loaded VC2 model (its VAE is used)."),
                "frames": field("IMAGE", "Frames [T,H,W,3]; height and width must be multiples of 8."),
            }
        }

    def encode(self, vc2_model: LoadedModel, frames: Any) -> tuple[dict[str, Any]]:
        from .vae import encode_frames

        vae = vc2_model.model.vae
        if vae is None:
            raise ModelFileError(f"{vc2_model.name} has no VAE weights: load a full VC2 checkpoint to encode.")
        with vc2_model.on_device("vae"):
            return ({"samples": encode_frames(vae, frames, progress=host.progress(frames.shape[0]))},)


def _prompt_inputs() -> dict[str, Any]:
    from .prompts import BACKGROUNDS, STYLES, VIEWS

    return {
        "character": field(
            "STRING",
            "Who is animated, most important details first (trailing comma-separated details are dropped if the prompt would exceed 77 tokens).",
            multiline=True,
            default="ancient Chinese swordsman, serene and wise, with flowing white robes and long beard",
        ),
        "view": field(list(VIEWS), "Camera view; the fine-tunes were rendered from the side.", default=VIEWS[0]),
        "background": field(
            list(BACKGROUNDS), "A plain background keeps the clip easy to cut out as a sprite.", default=BACKGROUNDS[0]
        ),
        "style": field(list(STYLES), "Optional style tags appended to the prompt.", default="none"),
    }


class VC2SpritePrompt:
    DESCRIPTION = (
        "Compose a godmodeanimation-style sprite prompt ('Game character <action> animation of <character>, side "
        "view, solid color background') within VC2's 77-token budget."
    )
    CATEGORY = CATEGORY
    FUNCTION = "build"
    RETURN_TYPES = ("STRING", "INT")
    RETURN_NAMES = ("prompt", "tokens")
    OUTPUT_TOOLTIPS = ("The prompt text for VC2 Text Encode.", "Its token count (at most 77).")

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        from .prompts import ACTION_KEYS

        return {
            "required": {
                "action": field(list(ACTION_KEYS), "The action (godmodeanimation vocabulary).", default="running"),
                **_prompt_inputs(),
            }
        }

    def build(self, action: str, character: str, view: str, background: str, style: str) -> dict[str, Any]:
        from .prompts import build_sprite_prompt

        result = build_sprite_prompt(action, character, view, background, style)
        note = f"{result.tokens}/77 tokens" + (f"; dropped: {', '.join(result.dropped)}" if result.dropped else "")
        return {"ui": {"text": [note]}, "result": (result.text, result.tokens)}


class VC2ActionSet:
    DESCRIPTION = (
        "Generate several actions for one character in one queue (same character text, view, background and seed "
        "policy), so a game gets a consistent animation set. Frames of all actions are returned in order, and "
        "also as a list of clips with their action names: sprite nodes then process each action on its own and "
        "Save Sprite Sheet writes one atlas with one named animation per action."
    )
    CATEGORY = CATEGORY
    FUNCTION = "run"
    RETURN_TYPES = ("IMAGE", "STRING", "INT", "IMAGE", "STRING", "FLOAT")
    RETURN_NAMES = ("frames", "labels", "frames_per_action", "clips", "action_names", "fps")
    OUTPUT_IS_LIST = (False, False, False, True, True, False)
    OUTPUT_TOOLTIPS = (
        "All actions' frames, one action after another.",
        "JSON list of {action, prompt, seed, first_frame} in output order.",
        "Frames per action (to split the batch).",
        "One clip per action (a list: each following node runs once per action).",
        "The action names, one per clip: link to Save Sprite Sheet's animation input to name the animations.",
        "The clips' frame rate (the fps the sampler conditioned on): link it to the sprite savers' fps.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "vc2_model": field(MODEL_TYPE, "The loaded VC2 model."),
                "actions": field(
                    "STRING",
                    "Actions separated by commas or lines (vocabulary or free text).",
                    default="running, jumping, idle breathing",
                ),
                **_prompt_inputs(),
                **SAMPLING_INPUTS,
                "seed_policy": field(
                    ["same seed", "seed + index"],
                    "Same seed for every action (most consistent look) or seed+i.",
                    default="same seed",
                ),
                "decode_chunk": field("INT", "Frames per VAE call when decoding.", default=1, min=1, max=64),
            }
        }

    def run(
        self,
        vc2_model: LoadedModel,
        actions: str,
        character: str,
        view: str,
        background: str,
        style: str,
        seed_policy: str,
        decode_chunk: int,
        seed: int,
        **kw: Any,
    ) -> tuple[Any, str, int, list[Any], list[str], float]:
        import torch

        from .prompts import build_sprite_prompt, parse_actions

        frames_out: list[Any] = []
        labels: list[dict[str, Any]] = []
        uncond = [[_encode(vc2_model, [""]), {}]]
        for index, action in enumerate(parse_actions(actions)):
            prompt = build_sprite_prompt(action, character, view, background, style)
            action_seed = seed if seed_policy == "same seed" else seed + index
            positive = [[_encode(vc2_model, [prompt.text]), {}]]
            latents = _sample(vc2_model, positive, uncond, seed=action_seed, **kw)
            clip = _decode(vc2_model, latents, decode_chunk, False)
            labels.append(
                {
                    "action": action,
                    "prompt": prompt.text,
                    "seed": action_seed,
                    "first_frame": sum(len(f) for f in frames_out),
                }
            )
            frames_out.append(clip)
        names = [label["action"] for label in labels]
        return (torch.cat(frames_out), json.dumps(labels), int(kw["frames"]), frames_out, names, float(kw["fps"]))


NODE_CLASS_MAPPINGS = {
    "GameAnimVC2Loader": VC2Loader,
    "GameAnimVC2TextEncode": VC2TextEncode,
    "GameAnimVC2Sampler": VC2Sampler,
    "GameAnimVC2Decode": VC2Decode,
    "GameAnimVC2Encode": VC2Encode,
    "GameAnimVC2SpritePrompt": VC2SpritePrompt,
    "GameAnimVC2ActionSet": VC2ActionSet,
}
NODE_DISPLAY_NAME_MAPPINGS = {
    "GameAnimVC2Loader": "VC2 Loader (VideoCrafter2 / godmodeanimation)",
    "GameAnimVC2TextEncode": "VC2 Text Encode",
    "GameAnimVC2Sampler": "VC2 Sampler (DDIM)",
    "GameAnimVC2Decode": "VC2 Decode",
    "GameAnimVC2Encode": "VC2 Encode",
    "GameAnimVC2SpritePrompt": "VC2 Sprite Prompt",
    "GameAnimVC2ActionSet": "VC2 Action Set",
}
