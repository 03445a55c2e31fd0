"""ComfyUI nodes for the AnimeGamer shot decoder (thin adapters over the ``decoder_*`` library modules).

Loader -> (Convert, once) -> Decode Shot <- VAE Loader; the representation comes from the MLLM step node
(``ANIMEGAMER_REPRESENTATION``) or from a saved file (Load Representation).  Heavy libraries load when a node runs.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ....core import host
from ....core.errors import InputError, NumericalError
from ....core.paths import confined, sanitize_relative
from ....core.preview import animation_preview
from ...common import category, field

DECODER_TYPE = "ANIMEGAMER_DECODER"
VAE_TYPE = "ANIMEGAMER_VAE"
REPRESENTATION_TYPE = "ANIMEGAMER_REPRESENTATION"
CATEGORY = category("AnimeGamer")
DTYPES = ["float16", "bfloat16", "float32"]
OFFLOAD_MODES = ["offload when idle", "sequential offload", "keep on device"]
CFG_MODES = ["released", "intended", "constant"]
SAT_FILE = "mp_rank_00_model_states.pt"


@dataclass
class DecoderHandle:
    """The loaded decoder and how to place it while sampling (``managed`` is None under sequential offload)."""

    model: Any
    offload: str
    managed: host.ManagedModel | None = None


def _decoder_sources() -> list[str]:
    """SAT checkpoint files and converted files in models/animegamer (empty when none: a file list, not defaults)."""
    return [
        n
        for n in host.model_list("animegamer")
        if Path(n).name == SAT_FILE or n.endswith(".safetensors") and "vae" not in n.lower()
    ]


def _vae_sources() -> list[str]:
    names = host.model_list("animegamer")
    folders = {str(Path(n).parent.as_posix()) for n in names if Path(n).name == "config.json" and "vae" in n.lower()}
    files = [n for n in names if n.endswith((".pt", ".pth")) and "vae" in Path(n).name.lower()]
    return sorted(folders - {"."}) + files


def _rgb_map(vae: Any) -> Any:
    """The VAE's fitted latent->RGB preview map, computed once per loaded VAE."""
    from .vae import latent_rgb_map

    if "_gameanim_rgb_map" not in vae.__dict__:
        vae.__dict__["_gameanim_rgb_map"] = latent_rgb_map(vae)
    return vae.__dict__["_gameanim_rgb_map"]


def _dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


class AnimeGamerDecoderLoader:
    DESCRIPTION = (
        "Loads AnimeGamer's shot decoder (CogVideoX-2B with the motion-scope embedding and the E_a condition encoder): "
        "the released SAT folder's mp_rank_00_model_states.pt (only the transformer is read, LoRA merged) or a file "
        "made by the Convert node (loads in seconds)."
    )
    CATEGORY = CATEGORY
    FUNCTION = "load"
    RETURN_TYPES = (DECODER_TYPE,)
    RETURN_NAMES = ("decoder",)
    OUTPUT_TOOLTIPS = ("The decoder, for Decode Shot.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "decoder": field(
                    _decoder_sources(),
                    "models/animegamer: VDM_Decoder-<character>/<step>/mp_rank_00_model_states.pt or a converted .safetensors.",
                ),
                "dtype": field(
                    DTYPES,
                    "Weight precision. float16 is what the original ran; bfloat16 for GPUs without good fp16; float32 for CPU.",
                    default="float16",
                ),
                "memory": field(
                    OFFLOAD_MODES,
                    "offload when idle: on the GPU only while sampling (~4 GB of fp16 weights). sequential offload: "
                    "layers stream from RAM one at a time (slow, smallest VRAM). keep on device: fastest repeated shots.",
                    default="offload when idle",
                ),
            }
        }

    def load(self, decoder: str, dtype: str, memory: str):
        from .convert import load_decoder

        torch_dtype = host.weight_dtype("diffusion", _dtype(dtype))
        model = load_decoder(host.model_path("animegamer", decoder), dtype=torch_dtype, device=host.offload_device())
        device = host.torch_device()
        if memory == "sequential offload" and str(device) != "cpu":
            from accelerate import cpu_offload

            cpu_offload(model.dit, execution_device=device)
            return (DecoderHandle(model=model, offload=memory),)
        managed = host.manage(model, f"AnimeGamer decoder ({decoder})")
        if memory == "keep on device":
            with host.on_device(managed):
                pass
        return (DecoderHandle(model=model, offload=memory, managed=managed),)


class AnimeGamerDecoderConvert:
    DESCRIPTION = (
        "One-time conversion of the released SAT decoder (~26.6 GB with T5 inside) to a compact float16/bfloat16 "
        "safetensors in models/animegamer (LoRA merged, architecture in the metadata, ~3.5 GB)."
    )
    CATEGORY = CATEGORY
    FUNCTION = "convert"
    OUTPUT_NODE = True
    RETURN_TYPES = ("STRING",)
    RETURN_NAMES = ("converted",)
    OUTPUT_TOOLTIPS = (
        "The converted file's name in models/animegamer (pick it in the Decoder Loader after a refresh).",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "decoder": field(_decoder_sources(), "The released SAT checkpoint file to convert."),
                "name": field(
                    "STRING",
                    "File name to write in models/animegamer (.safetensors is added).",
                    default="animegamer_decoder_qiqi_fp16",
                ),
                "dtype": field(["float16", "bfloat16"], "Precision of the converted weights.", default="float16"),
                "overwrite": field("BOOLEAN", "Replace an existing file of that name.", default=False),
            }
        }

    def convert(self, decoder: str, name: str, dtype: str, overwrite: bool):
        from .convert import convert_to_file

        rel = sanitize_relative(name.strip().removesuffix(".safetensors") + ".safetensors")
        target = confined(host.folder_paths_for("animegamer")[0], rel)
        if target.exists() and not overwrite:  # converting is a one-time job: queueing again keeps the file
            return {
                "ui": {"text": [f"models/animegamer/{rel} exists; kept (switch on overwrite to redo)"]},
                "result": (rel,),
            }
        target.parent.mkdir(parents=True, exist_ok=True)
        convert_to_file(host.model_path("animegamer", decoder), target, dtype=_dtype(dtype), overwrite=overwrite)
        return {"ui": {"text": [f"wrote models/animegamer/{rel}"]}, "result": (rel,)}


class AnimeGamerVAELoader:
    DESCRIPTION = (
        "Loads the CogVideoX 3D VAE that turns decoder latents into frames: SAT 3d-vae.pt or a diffusers vae/ folder."
    )
    CATEGORY = CATEGORY
    FUNCTION = "load"
    RETURN_TYPES = (VAE_TYPE,)
    RETURN_NAMES = ("vae",)
    OUTPUT_TOOLTIPS = ("The VAE, for Decode Shot.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "vae": field(
                    _vae_sources(),
                    "models/animegamer: 3d-vae.pt (CogVideoX SAT) or a folder with config.json (THUDM/CogVideoX-2b vae/).",
                ),
                "dtype": field(DTYPES, "VAE precision (float16 halves its memory; float32 on CPU).", default="float16"),
            }
        }

    def load(self, vae: str, dtype: str):
        from .vae import load_vae

        torch_dtype = host.weight_dtype("vae", _dtype(dtype))
        model = load_vae(host.model_path("animegamer", vae), dtype=torch_dtype, device=host.offload_device())
        host.manage(model, f"AnimeGamer VAE ({vae})", "vae")
        return (model,)


class AnimeGamerLoadRepresentation:
    DESCRIPTION = (
        "Reads a saved AnimeGamer representation from the input folder: a .safetensors with a 'representation' "
        "tensor, or the original mllm-output.pt (one turn chosen by index)."
    )
    CATEGORY = CATEGORY
    FUNCTION = "load"
    RETURN_TYPES = (REPRESENTATION_TYPE, "INT")
    RETURN_NAMES = ("representation", "motion_level")
    OUTPUT_TOOLTIPS = (
        "The [1,226,width] representation.",
        "The motion level stored with it (3 when the file has none).",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "file": field("STRING", "File name in ComfyUI's input folder.", default="mllm-output.pt"),
                "turn": field("INT", "Which turn of an mllm-output.pt (0 = first).", default=0, min=0, max=9999),
            }
        }

    @classmethod
    def IS_CHANGED(cls, **kwargs: Any) -> str:
        path = confined(host.input_dir(), kwargs.get("file", ""))
        return f"{path.stat().st_mtime_ns}:{kwargs.get('turn')}" if path.is_file() else "missing"

    def load(self, file: str, turn: int):
        from .representation import read_representation

        saved = read_representation(confined(host.input_dir(), file), turn)
        return (saved.tokens, saved.motion_level if saved.motion_level is not None else 3)


class AnimeGamerDecodeShot:
    DESCRIPTION = (
        "Renders one AnimeGamer shot (17 frames at 480x720, 8 fps by default) from the MLLM's representation: the "
        "released VP-SDE DPM++(2M) sampler with zero-SNR schedule, v-prediction and dynamic CFG, then the CogVideoX "
        "VAE. Progress and Cancel work per sampler step."
    )
    CATEGORY = CATEGORY
    FUNCTION = "decode"
    RETURN_TYPES = ("IMAGE", "LATENT", "FLOAT")
    RETURN_NAMES = ("frames", "latent", "flow")
    OUTPUT_TOOLTIPS = (
        "The shot's frames (IMAGE batch).",
        "The sampler latents, samples [B, C, T, H, W] (VAE scale not removed).",
        "The motion-scope scalar that was used.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "decoder": field(DECODER_TYPE, "From the AnimeGamer Decoder Loader."),
                "vae": field(VAE_TYPE, "From the AnimeGamer VAE Loader."),
                "representation": field(
                    REPRESENTATION_TYPE, "From the AnimeGamer Step node or Load Representation ([1,226,1920])."
                ),
                "motion_level": field(
                    "INT",
                    "Motion level 1-5 (from the Step node); mapped to the flow scalar by the released table.",
                    default=3,
                    min=0,
                    max=5,
                ),
                "flow": field(
                    "FLOAT",
                    "Raw motion scope; 0 = use motion_level. Released values: 0.5, 2.5, 10, 15, 40.",
                    default=0.0,
                    min=0.0,
                    max=200.0,
                    step=0.1,
                ),
                "steps": field("INT", "Sampler steps (released: 50).", default=50, min=1, max=200),
                "cfg_mode": field(
                    CFG_MODES,
                    "released: the original dynamic CFG (uses the timestep as step index, scale jumps 1..7). intended: "
                    "the formula as meant (scale rises smoothly). constant: plain CFG.",
                    default="released",
                ),
                "cfg": field("FLOAT", "Guidance scale (released: 6).", default=6.0, min=0.0, max=30.0, step=0.1),
                "seed": field(
                    "INT",
                    "Noise seed (CPU generator: same result on every device).",
                    default=0,
                    min=0,
                    max=0xFFFFFFFFFFFFFFFF,
                    control_after_generate=True,
                ),
                "num_frames": field("INT", "Frames (4k+1; released 17).", default=17, min=1, max=49, step=4),
                "width": field(
                    "INT", "Width in pixels (multiple of 16; released 720).", default=720, min=16, max=1440, step=16
                ),
                "height": field(
                    "INT", "Height in pixels (multiple of 16; released 480).", default=480, min=16, max=960, step=16
                ),
                "vae_tiling": field("BOOLEAN", "Decode in spatial tiles (less VRAM, slightly slower).", default=False),
            }
        }

    def decode(self, decoder: DecoderHandle, vae: Any, representation: Any, motion_level: int, flow: float, steps: int,
               cfg_mode: str, cfg: float, seed: int, num_frames: int, width: int, height: int, vae_tiling: bool):  # fmt: skip
        from .shot import decode_shot
        from .vae import decode_latents

        if not hasattr(representation, "ndim"):
            raise InputError("representation must be a tensor [1,226,width] from the Step or Load Representation node.")
        model = decoder.model
        batch = representation.shape[0] if representation.ndim == 3 else 1
        total = steps + batch
        reporter = host.preview_progress(total, "cogvideox", rgb=lambda: _rgb_map(vae))
        keep = decoder.offload == "keep on device"
        placement = host.on_device(decoder.managed, keep_loaded=keep) if decoder.managed else nullcontext(None)
        with placement as placed, host.notify_on(NumericalError, "AnimeGamer decoder became NaN"):
            shot = decode_shot(
                model, representation, vae=None, motion_level=motion_level, flow=flow or None, steps=steps,
                cfg_mode=cfg_mode, cfg=cfg, seed=seed, num_frames=num_frames, height=height, width=width,
                device=placed or host.torch_device(), progress=lambda done, _: reporter(done, total),
                preview=lambda latents: reporter.preview(latents[:, 0]),
            )  # fmt: skip
        vae_handle = host.manage(vae, "AnimeGamer VAE", "vae")
        with host.on_device(vae_handle, keep_loaded=keep):
            frames = decode_latents(
                vae, shot.latents, tiling=vae_tiling, progress=lambda done, _: reporter(steps + done, total)
            )
        shot = replace(shot, frames=frames)
        frames = shot.frames.reshape(-1, *shot.frames.shape[2:])
        latent = {"samples": shot.latents.permute(0, 2, 1, 3, 4).contiguous()}
        return {"ui": animation_preview(frames, shot.fps), "result": (frames, latent, shot.flow)}


NODE_CLASS_MAPPINGS = {
    "GameAnimAnimeGamerDecoderLoader": AnimeGamerDecoderLoader,
    "GameAnimAnimeGamerDecoderConvert": AnimeGamerDecoderConvert,
    "GameAnimAnimeGamerVAELoader": AnimeGamerVAELoader,
    "GameAnimAnimeGamerLoadRepresentation": AnimeGamerLoadRepresentation,
    "GameAnimAnimeGamerDecodeShot": AnimeGamerDecodeShot,
}
NODE_DISPLAY_NAME_MAPPINGS = {
    "GameAnimAnimeGamerDecoderLoader": "AnimeGamer Decoder Loader",
    "GameAnimAnimeGamerDecoderConvert": "AnimeGamer Decoder Convert",
    "GameAnimAnimeGamerVAELoader": "AnimeGamer VAE Loader",
    "GameAnimAnimeGamerLoadRepresentation": "AnimeGamer Load Representation",
    "GameAnimAnimeGamerDecodeShot": "AnimeGamer Decode Shot",
}
