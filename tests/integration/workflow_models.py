"""What each shipped API workflow needs in ComfyUI's ``models/`` folder before it can run.

A value is either a function ``setup(models_dir, input_dir)`` that writes a tiny model of the real
architecture and format (so the workflow runs end to end on CPU), or a string: the reason the
workflow cannot run here (it needs downloaded weights), printed when its test is skipped.
Workflows not listed need nothing.  :data:`WORKFLOW_REDUCTIONS` shrinks sizes where a CPU run would take too long.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .animegamer_mllm_models import write_tiny_animegamer_mllm


def _animegamer_turn(models_dir: Path, input_dir: Path) -> None:
    """The tiny MLLM, plus a tiny decoder as wide as its representation and a tiny VAE, under the shipped names."""
    import make_tiny_animegamer_decoder as tiny

    write_tiny_animegamer_mllm(models_dir, input_dir, width=32)
    folder = models_dir / "animegamer"
    tiny.make_decoder(folder / "animegamer_decoder_qiqi_fp16.safetensors", width=32)
    tiny.make_vae(folder / "vae")


def write_decode_workflow_models(models_dir: Path, input_dir: Path) -> None:
    """The shipped names of animegamer_decode, tiny: converted decoder, CogVideoX VAE folder, and an
    ``mllm-output.pt`` in the released layout (``{turn: [representation, text, [motion level, ...]]}``)."""
    import make_tiny_animegamer_decoder as tiny
    import torch

    folder = models_dir / "animegamer"
    folder.mkdir(parents=True, exist_ok=True)
    # Width 32 as in _animegamer_turn: both workflows load the same shipped decoder name in one server.
    tiny.make_decoder(folder / "animegamer_decoder_qiqi_fp16.safetensors", width=32)
    tiny.make_vae(folder / "vae")
    input_dir.mkdir(parents=True, exist_ok=True)
    representation = torch.randn(1, 226, 32, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    torch.save({"ep_0_turn_0": [representation, "Character: Qiqi", [4, 1, 0, 0]]}, input_dir / "mllm-output.pt")


def _animegamer_convert(models_dir: Path, input_dir: Path) -> None:
    """The committed tiny SAT decoder (real key layout) under the released folder name."""
    import shutil

    target = models_dir / "animegamer" / "VDM_Decoder-Qiqi" / "10000"
    if not target.exists():
        shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "animegamer_decoder" / "sat" / "1", target)


def _vc2_tiny(models_dir: Path, input_dir: Path) -> None:
    """A tiny VC2 in the original Lightning layout ({"state_dict": ...}) under the shipped name model.ckpt."""
    import torch
    from support.vc2_fixtures import tiny_full_checkpoint

    target = models_dir / "videocrafter" / "model.ckpt"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"state_dict": tiny_full_checkpoint(), "global_step": 0}, target)


def _dynamicrafter_tiny(models_dir: Path, input_dir: Path) -> None:
    """The complete tiny DynamiCrafter as the Run Lightning checkpoint (state_dict plus optimizer state) under the
    shipped name; and the LoadImage default ``example.png``."""
    import torch
    from support.dynamicrafter_fixtures import tiny_full_checkpoint

    run = models_dir / "dynamicrafter" / "godmodeanimation_dc_run_ep19" / "model.ckpt"
    if not run.exists():
        sd = tiny_full_checkpoint()
        run.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"state_dict": sd, "optimizer_states": [{"state": {}}], "epoch": 19, "global_step": 1080}, run)
    _example_image(input_dir)


def _example_image(input_dir: Path) -> None:
    """The LoadImage default ``example.png``: a shipped sprite."""
    import shutil

    image = input_dir / "example.png"
    if not image.exists():
        input_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(__file__).resolve().parents[2] / "sample_data" / "sprite_frames" / "frame_000.png", image)


def _tooncrafter_tiny(models_dir: Path, input_dir: Path) -> None:
    """A complete tiny ToonCrafter ``model.ckpt`` (the tiny DynamiCrafter with the dual-reference VAE fixture that
    the original ``AutoencoderKL_Dualref`` made) under the shipped name; and ``example.png``."""
    import torch
    from support.dynamicrafter_fixtures import tiny_tooncrafter_checkpoint

    target = models_dir / "dynamicrafter" / "ToonCrafter" / "model.ckpt"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        torch.save(tiny_tooncrafter_checkpoint(), target)
    _example_image(input_dir)


def _rig_and_vc2_tiny(models_dir: Path, input_dir: Path) -> None:
    """The tiny VC2, and a real rigged character (assimp's Testwuson, see tests/support/rig_assets.py) under the
    shipped name ``input/characters/hero.glb``."""
    import shutil

    from support.rig_assets import require_character

    _vc2_tiny(models_dir, input_dir)
    target = input_dir / "characters" / "hero.glb"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(require_character("Testwuson"), target)


_VC2_VALIDATE = {"width": 64, "height": 64, "frames": 2, "steps": 2}

WORKFLOW_MODELS: dict[str, Callable[[Path, Path], None]] = {
    "vc2_sprite_t2v": _vc2_tiny,
    "vc2_action_set": _vc2_tiny,
    "animegamer_decode": write_decode_workflow_models,
    "animegamer_convert_decoder": _animegamer_convert,
    "animegamer_turn": _animegamer_turn,
    "vc2_train_concept_lora": _vc2_tiny,
    "rig_to_training_clips": _rig_and_vc2_tiny,
    "vc2_restyle_frames": _vc2_tiny,
    "dynamicrafter_run": _dynamicrafter_tiny,
    "toon_inbetween": _tooncrafter_tiny,
}

# Workflows the generic tests leave to a test file of their own, with the reason (never a skip: CI requires none).
OWN_TEST_WORKFLOWS: dict[str, str] = {
    "rig_to_sprites_wan": "UMT5-XXL cannot be made tiny; test_rig_to_sprites.py runs this workflow with a stand-in",
    "rig_to_direction_set": "UMT5-XXL cannot be made tiny; test_direction_set.py runs this workflow with a stand-in",
}

# Workflows whose product is a model file (under models/), not an output file: the file each must write.
WORKFLOW_WRITES_MODEL: dict[str, str] = {
    "animegamer_convert_decoder": "animegamer/animegamer_decoder_converted_in_test.safetensors",
}

# Input overrides (node id -> inputs) for workflows whose shipped sizes take too long on a CPU even with tiny
# weights (VC2 at 320x512x16 and 50 steps in fp16 ran over 10 minutes); the graph and every node still run for real.
WORKFLOW_REDUCTIONS: dict[str, dict[str, dict[str, Any]]] = {
    "vc2_sprite_t2v": {"5": {"width": 64, "height": 64, "frames": 4, "steps": 3}},
    "vc2_action_set": {"2": {"width": 64, "height": 64, "frames": 4, "steps": 2}},
    "vc2_restyle_frames": {"2": {"max_frames": 4}, "3": {"width": 64, "height": 64}, "8": {"steps": 4}},
    # animegamer_decode's setup already wrote the shipped converted name (which Convert would keep): convert anew.
    "animegamer_convert_decoder": {"1": {"name": "animegamer_decoder_converted_in_test"}},
    # the tiny DynamiCrafter is fp32 with 3 per-frame image-token groups (frames 3 takes the per-frame path)
    "dynamicrafter_run": {"1": {"dtype": "fp32"}, "3": {"width": 64, "height": 64, "frames": 3, "steps": 2}},
    "toon_inbetween": {"1": {"dtype": "fp32"}, "4": {"width": 64, "height": 64, "frames": 3, "steps": 2}},
    # The tiny AnimeGamer models are float32 CPU models at 64x64; the shipped sizes are the released 720x480x17.
    "animegamer_decode": {
        "1": {"dtype": "float32"},
        "2": {"dtype": "float32"},
        "5": {"width": 64, "height": 64, "steps": 4},
    },
    # The same decode inside a turn: ComfyUI's CPU attention kernel (sub-quadratic) over the released 720x480x17
    # token count ran past the 600 s limit with the tiny decoder.
    "animegamer_turn": {"10": {"width": 64, "height": 64, "steps": 4}},
    "vc2_train_concept_lora": {
        "2": {"width": 64, "height": 64},
        "3": {"total_steps": 4, "checkpoint_every": 2, "resume": False},
        "4": {"steps": 2},
        "5": _VC2_VALIDATE,
        "6": {"steps": 2},
        "7": _VC2_VALIDATE,
        "13": {"width": 64, "height": 64, "frames": 4, "steps": 2, "actions": "running, jumping"},
    },
    # Two tiny Workbench clips of the real character's run (one per key), trained 2 steps.
    "rig_to_training_clips": {
        "2": {"actions": "Wuson_Run = running", "frames": 4, "width": 64, "height": 64, "keys": "grey, white"},
        "4": {"frames": 4, "frame_stride": 1, "width": 64, "height": 64},
        "5": {"total_steps": 4, "checkpoint_every": 2, "resume": False},
        "6": {"steps": 2},
        "10": {"width": 64, "height": 64, "frames": 4, "steps": 2},
    },
}

# Random tiny weights generate noise, not a solid key: Remove Background in those runs keeps the frames opaque
# (with its warning) instead of stopping. The matte itself is tested on real art in the unit suite.
NOISE_KEYED: dict[str, str] = {
    "dynamicrafter_run": "5",
    "toon_inbetween": "6",
    "vc2_action_set": "3",
    "vc2_restyle_frames": "10",
    "vc2_sprite_t2v": "7",
    "vc2_train_concept_lora": "14",
    "rig_to_training_clips": "11",
}
for _workflow, _node in NOISE_KEYED.items():
    WORKFLOW_REDUCTIONS.setdefault(_workflow, {}).setdefault(_node, {})["if_not_solid"] = "keep opaque"
