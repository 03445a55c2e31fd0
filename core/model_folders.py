"""The model folders this pack uses, the files expected in each, and where those files come from.

This table is the one source for four things: the folders registered with ComfyUI's
``folder_paths``, the "file not found" errors (which list what belongs in the folder and where to
get it), the README's model-placement table and the ``properties.models`` download entries the
workflow generator puts on loader nodes (so ComfyUI's frontend offers a missing file's download).
Feature modules describe their files here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ExpectedFile:
    """One file a user places by hand (we never download).

    ``url`` is the direct address of that exact file (or folder, for multi-file models) and is set
    only for real released names; patterns such as ``<name>.safetensors`` and files this pack
    writes itself have none.  ``written_by`` names the node that writes the file, so a workflow
    that makes the file in an earlier stage needs no download for it.  ``folder`` marks a model that
    is a whole folder (a tokenizer, a diffusers VAE): ComfyUI's frontend can neither see nor download
    folders, so those get no ``properties.models`` entry; the workflow's note links them instead.
    """

    name: str
    source: str
    note: str = ""
    url: str = ""
    written_by: str = ""
    folder: bool = False


@dataclass(frozen=True)
class ModelFolder:
    """A folder under ComfyUI's ``models/`` registered under ``key``."""

    key: str
    subdir: str
    purpose: str
    extensions: frozenset[str] = frozenset()
    files: tuple[ExpectedFile, ...] = field(default=())


WAN_REPACKAGED = "huggingface.co/Comfy-Org/Wan_2.1_ComfyUI_repackaged"


def _comfy_wan_folder(key: str, loader: str, name: str, note: str) -> ModelFolder:
    """One of ComfyUI's own model folders with the one Wan 2.1 file a shipped workflow loads from it."""
    url = f"https://{WAN_REPACKAGED}/resolve/main/split_files/{key}/{name}"
    source = f"{WAN_REPACKAGED} (split_files/{key})"
    files = (ExpectedFile(name, source, note, url=url),)
    return ModelFolder(key, key, f"models loaded by ComfyUI's {loader}", frozenset({".safetensors"}), files)


MODEL_FOLDERS: dict[str, ModelFolder] = {
    folder.key: folder
    for folder in (
        ModelFolder(
            key="videocrafter",
            subdir="videocrafter",
            purpose="VideoCrafter2 text-to-video checkpoints and godmodeanimation fine-tunes",
            extensions=frozenset({".ckpt", ".pt", ".pth", ".safetensors"}),
            files=(
                ExpectedFile(
                    "model.ckpt",
                    "huggingface.co/VideoCrafter/VideoCrafter2 (file model.ckpt)",
                    "VideoCrafter2 base, 320x512 text-to-video",
                    url="https://huggingface.co/VideoCrafter/VideoCrafter2/resolve/main/model.ckpt",
                ),
                ExpectedFile(
                    "<godmodeanimation fine-tune>.ckpt",
                    "the godmodeanimation README's checkpoint table (lyogavin/godmodeanimation)",
                    "game-action fine-tunes of VC2, each released as model.ckpt: save under a name of your own",
                ),
                *(
                    ExpectedFile(
                        f"godmodeanimation_vc2_{action}.ckpt",
                        f"huggingface.co/lyogavin/godmodeanimation_vc2_{action} (file model.ckpt, renamed)",
                        f"godmodeanimation {label} fine-tune of VC2 (18.7 GB with optimizer state)",
                        url=f"https://huggingface.co/lyogavin/godmodeanimation_vc2_{action}/resolve/main/model.ckpt",
                    )
                    for action, label in (
                        ("runjump_ep34", "run-jump"),
                        ("spinkick_ep34", "spin-kick"),
                        ("sword_wield_ep38", "sword-wield"),
                    )
                ),
            ),
        ),
        ModelFolder(
            key="dynamicrafter",
            subdir="dynamicrafter",
            purpose="DynamiCrafter-family image-to-video checkpoints (each release is a model.ckpt: one folder each)",
            extensions=frozenset({".ckpt", ".pt", ".pth", ".safetensors"}),
            files=(
                ExpectedFile(
                    "godmodeanimation_dc_run_ep19/model.ckpt",
                    "huggingface.co/lyogavin/godmodeanimation_dc_run_ep19 (file model.ckpt, 21.9 GB Lightning checkpoint)",
                    "godmodeanimation Run: a character picture in, a run cycle out",
                    url="https://huggingface.co/lyogavin/godmodeanimation_dc_run_ep19/resolve/main/model.ckpt",
                ),
                ExpectedFile(
                    "DynamiCrafter_512/model.ckpt",
                    "huggingface.co/Doubiiu/DynamiCrafter_512 (file model.ckpt)",
                    "DynamiCrafter image-to-video, 320x512",
                    url="https://huggingface.co/Doubiiu/DynamiCrafter_512/resolve/main/model.ckpt",
                ),
                ExpectedFile(
                    "DynamiCrafter_512_Interp/model.ckpt",
                    "huggingface.co/Doubiiu/DynamiCrafter_512_Interp (file model.ckpt)",
                    "keyframe interpolation / looping, 320x512",
                    url="https://huggingface.co/Doubiiu/DynamiCrafter_512_Interp/resolve/main/model.ckpt",
                ),
                ExpectedFile(
                    "ToonCrafter/model.ckpt",
                    "huggingface.co/Doubiiu/ToonCrafter (file model.ckpt)",
                    "cartoon inbetweening: two keyframes in, 16 frames out (dual-reference decoder), 320x512",
                    url="https://huggingface.co/Doubiiu/ToonCrafter/resolve/main/model.ckpt",
                ),
            ),
        ),
        ModelFolder(
            key="animegamer",
            subdir="animegamer",
            purpose="AnimeGamer MLLM weights, decoder (SAT directory or our converted safetensors), CogVideoX VAE",
            files=(
                ExpectedFile("MLLM-<character>/pytorch_model.bin", "huggingface.co/TencentARC/AnimeGamer"),
                *(
                    ExpectedFile(
                        f"MLLM-{who}/pytorch_model.bin",
                        f"huggingface.co/TencentARC/AnimeGamer (folder MLLM-{who})",
                        f"the MLLM fine-tuned on {who}",
                        url=f"https://huggingface.co/TencentARC/AnimeGamer/resolve/main/MLLM-{who}/pytorch_model.bin",
                    )
                    for who in ("Qiqi", "Sosuke")
                ),
                ExpectedFile(
                    "animegamer_tokenizer",
                    "github.com/TencentARC/AnimeGamer (folder MLLM/VisualAR/animegamer_tokenizer)",
                    "the MLLM's tokenizer folder (vocabulary 32284)",
                    url="https://github.com/TencentARC/AnimeGamer/tree/main/MLLM/VisualAR/animegamer_tokenizer",
                    folder=True,
                ),
                ExpectedFile(
                    "VDM_Decoder-<character>/", "huggingface.co/TencentARC/AnimeGamer (SAT checkpoint folder)"
                ),
                *(
                    ExpectedFile(
                        f"VDM_Decoder-{who}/10000/mp_rank_00_model_states.pt",
                        f"huggingface.co/TencentARC/AnimeGamer (folder VDM_Decoder-{who})",
                        "the released SAT decoder (~26.6 GB); convert it once with AnimeGamer Decoder Convert",
                        url=f"https://huggingface.co/TencentARC/AnimeGamer/resolve/main/VDM_Decoder-{who}/10000/"
                        "mp_rank_00_model_states.pt",
                    )
                    for who in ("Qiqi", "Sosuke")
                ),
                ExpectedFile(
                    "<name>.safetensors",
                    "written by the AnimeGamer Decoder Convert node from VDM_Decoder-<character>/",
                    "compact fp16/bf16 decoder, loads in seconds",
                ),
                ExpectedFile(
                    "animegamer_decoder_qiqi_fp16.safetensors",
                    "written by the AnimeGamer Decoder Convert node from VDM_Decoder-Qiqi/",
                    "the converted Qiqi decoder (the Convert node's default name)",
                    written_by="GameAnimAnimeGamerDecoderConvert",
                ),
                ExpectedFile(
                    "vae",
                    "huggingface.co/THUDM/CogVideoX-2b (folder vae/, with config.json)",
                    "the CogVideoX-2b VAE in diffusers layout",
                    url="https://huggingface.co/THUDM/CogVideoX-2b/tree/main/vae",
                    folder=True,
                ),
                ExpectedFile("3d-vae.pt", "the CogVideoX SAT VAE (vae.zip linked from the THUDM/CogVideo README)"),
            ),
        ),
        ModelFolder(
            key="LLM",
            subdir="LLM",
            purpose="Base language models (Mistral-7B-Instruct-v0.1 for AnimeGamer)",
            files=(
                ExpectedFile(
                    "Mistral-7B-Instruct-v0.1",
                    "huggingface.co/mistralai/Mistral-7B-Instruct-v0.1 (the whole repository as a folder)",
                    url="https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.1/tree/main",
                    folder=True,
                ),
            ),
        ),
        ModelFolder(
            key="gameanim_loras",
            subdir="loras/gameanim",
            purpose="LoRAs trained by this pack for the VC2 model",
            extensions=frozenset({".safetensors"}),
            files=(
                ExpectedFile("<name>.safetensors", "written by the GameAnim trainer nodes"),
                ExpectedFile(
                    "gmknight_concept.safetensors",
                    "written by the LoRA Save node of the concept-LoRA workflow",
                    "the concept LoRA the shipped training workflow makes",
                    written_by="GameAnimLoraSave",
                ),
                ExpectedFile(
                    "hero_actions.safetensors",
                    "written by the LoRA Save node of the rig-to-training-clips workflow",
                    "the action LoRA trained on clips rendered from the user's rig",
                    written_by="GameAnimLoraSave",
                ),
            ),
        ),
        # ComfyUI's own folders, listed for the Wan files the rig-to-sprites workflow loads with core loaders
        # (registering them again is a no-op: ComfyUI already has these paths).
        _comfy_wan_folder(
            "diffusion_models",
            "UNETLoader",
            "wan2.1_vace_1.3B_fp16.safetensors",
            "Wan 2.1 VACE 1.3B: pose / depth video + reference picture to video",
        ),
        _comfy_wan_folder("text_encoders", "CLIPLoader", "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "UMT5-XXL, fp8"),
        _comfy_wan_folder("vae", "VAELoader", "wan_2.1_vae.safetensors", "the Wan 2.1 VAE"),
        ModelFolder(
            key="optical_flow",
            subdir="optical_flow",
            purpose="Optical-flow weights (torchvision RAFT) for the motion-scope estimator",
            extensions=frozenset({".pth", ".pt", ".safetensors"}),
            files=(
                ExpectedFile(
                    "raft_small_C_T_V2-01064c6d.pth", "torchvision Raft_Small_Weights.C_T_V2 (download.pytorch.org)"
                ),
                ExpectedFile(
                    "raft_large_C_T_SKHT_V2-ff5fadd5.pth",
                    "torchvision Raft_Large_Weights.C_T_SKHT_V2 (download.pytorch.org)",
                ),
            ),
        ),
    )
}


def describe_expected(key: str) -> str:
    """One paragraph listing what belongs in folder ``key`` and where it comes from."""
    folder = MODEL_FOLDERS[key]
    lines = [f"Expected in models/{folder.subdir}/ ({folder.purpose}):"]
    for expected in folder.files:
        extra = f" — {expected.note}" if expected.note else ""
        lines.append(f"  • {expected.name}  from {expected.source}{extra}")
    return "\n".join(lines)


# Which input of which loader node names a file in which model folder (pack and ComfyUI core loaders).
LOADER_INPUTS: dict[str, dict[str, str]] = {
    "GameAnimVC2Loader": {"ckpt_name": "videocrafter"},
    "GameAnimDynamiCrafterLoader": {"ckpt_name": "dynamicrafter"},
    "GameAnimVC2ApplyLora": {"lora_name": "gameanim_loras"},
    "GameAnimAnimeGamerMLLMLoader": {"mllm_weights": "animegamer", "tokenizer": "animegamer", "base_model": "LLM"},
    "GameAnimAnimeGamerDecoderLoader": {"decoder": "animegamer"},
    "GameAnimAnimeGamerDecoderConvert": {"decoder": "animegamer"},
    "GameAnimAnimeGamerVAELoader": {"vae": "animegamer"},
    "UNETLoader": {"unet_name": "diffusion_models"},
    "CLIPLoader": {"clip_name": "text_encoders"},
    "VAELoader": {"vae_name": "vae"},
}


def expected_file(key: str, name: str) -> ExpectedFile | None:
    """The table's entry for the exact file ``name`` in folder ``key`` (None for names it does not list)."""
    folder = MODEL_FOLDERS.get(key)
    return next((f for f in folder.files if f.name == name), None) if folder else None


def loader_models(class_type: str, inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    """``properties.models`` for one loader node: ``{name, url, directory}`` per single file it reads that has a URL.

    ``directory`` is the ``folder_paths`` key, which is what ComfyUI's frontend looks the folder up by.
    """
    models = []
    for input_name, key in LOADER_INPUTS.get(class_type, {}).items():
        value = inputs.get(input_name)
        known = expected_file(key, value) if isinstance(value, str) else None
        if known is not None and known.url and not known.folder:
            models.append({"name": value, "url": known.url, "directory": key})
    return models
