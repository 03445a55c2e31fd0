"""The model folders this pack uses, the files expected in each, and where those files come from.

This table is the one source for three things: the folders registered with ComfyUI's
``folder_paths``, the "file not found" errors (which list what belongs in the folder and where to
get it) and the README's model-placement table.  Feature modules describe their files here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExpectedFile:
    """One file a user places by hand (we never download)."""

    name: str
    source: str
    note: str = ""


@dataclass(frozen=True)
class ModelFolder:
    """A folder under ComfyUI's ``models/`` registered under ``key``."""

    key: str
    subdir: str
    purpose: str
    extensions: frozenset[str] = frozenset()
    files: tuple[ExpectedFile, ...] = field(default=())


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
                ),
                ExpectedFile(
                    "<godmodeanimation fine-tune>.ckpt",
                    "the godmodeanimation README's checkpoint table (lyogavin/godmodeanimation)",
                    "game-action fine-tunes of VC2",
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
                ),
                ExpectedFile(
                    "DynamiCrafter_512/model.ckpt",
                    "huggingface.co/Doubiiu/DynamiCrafter_512 (file model.ckpt)",
                    "DynamiCrafter image-to-video, 320x512",
                ),
                ExpectedFile(
                    "DynamiCrafter_512_Interp/model.ckpt",
                    "huggingface.co/Doubiiu/DynamiCrafter_512_Interp (file model.ckpt)",
                    "keyframe interpolation / looping, 320x512",
                ),
                ExpectedFile(
                    "ToonCrafter/model.ckpt",
                    "huggingface.co/Doubiiu/ToonCrafter (file model.ckpt)",
                    "cartoon inbetweening (sampling; its dual-reference decoder is not implemented yet)",
                ),
            ),
        ),
        ModelFolder(
            key="animegamer",
            subdir="animegamer",
            purpose="AnimeGamer MLLM weights, decoder (SAT directory or our converted safetensors), CogVideoX VAE",
            files=(
                ExpectedFile("MLLM-<character>/pytorch_model.bin", "huggingface.co/TencentARC/AnimeGamer"),
                ExpectedFile(
                    "animegamer_tokenizer/",
                    "github.com/TencentARC/AnimeGamer (folder MLLM/VisualAR/animegamer_tokenizer)",
                    "the MLLM's tokenizer (vocabulary 32284)",
                ),
                ExpectedFile(
                    "VDM_Decoder-<character>/", "huggingface.co/TencentARC/AnimeGamer (SAT checkpoint folder)"
                ),
                ExpectedFile(
                    "<name>.safetensors",
                    "written by the AnimeGamer Decoder Convert node from VDM_Decoder-<character>/",
                    "compact fp16/bf16 decoder, loads in seconds",
                ),
                ExpectedFile("vae/ (with config.json)", "huggingface.co/THUDM/CogVideoX-2b (folder vae/)"),
                ExpectedFile("3d-vae.pt", "the CogVideoX SAT VAE (vae.zip linked from the THUDM/CogVideo README)"),
            ),
        ),
        ModelFolder(
            key="LLM",
            subdir="LLM",
            purpose="Base language models (Mistral-7B-Instruct-v0.1 for AnimeGamer)",
            files=(ExpectedFile("Mistral-7B-Instruct-v0.1/", "huggingface.co/mistralai/Mistral-7B-Instruct-v0.1"),),
        ),
        ModelFolder(
            key="gameanim_loras",
            subdir="loras/gameanim",
            purpose="LoRAs trained by this pack for the VC2 model",
            extensions=frozenset({".safetensors"}),
            files=(ExpectedFile("<name>.safetensors", "written by the GameAnim trainer nodes"),),
        ),
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
