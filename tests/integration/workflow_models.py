"""What each shipped API workflow needs in ComfyUI's ``models/`` folder before it can run.

A value is either a function ``setup(models_dir, input_dir)`` that writes a tiny model of the real
architecture and format (so the workflow runs end to end on CPU), or a string: the reason the
workflow cannot run here (it needs downloaded weights), printed when its test is skipped.
Workflows not listed need nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .animegamer_mllm_models import tokenizer_source, write_tiny_animegamer_mllm


def _animegamer_turn(models_dir: Path, input_dir: Path) -> None:
    """The tiny MLLM, plus a tiny decoder as wide as its representation and a tiny VAE, under the shipped names."""
    import make_tiny_animegamer_decoder as tiny

    write_tiny_animegamer_mllm(models_dir, input_dir, width=32)
    folder = models_dir / "animegamer"
    tiny.make_decoder(folder / "animegamer_decoder_qiqi_fp16.safetensors", width=32)
    tiny.make_vae(folder / "vae")


def _animegamer_decode(models_dir: Path, input_dir: Path) -> None:
    """Tiny converted decoder + tiny CogVideoX VAE folder in models/animegamer, a representation in input/."""
    import make_tiny_animegamer_decoder as tiny

    folder = models_dir / "animegamer"
    folder.mkdir(parents=True, exist_ok=True)
    tiny.make_decoder(folder / tiny.DECODER_NAME)
    tiny.make_vae(folder / tiny.VAE_NAME)
    tiny.make_representation(input_dir / tiny.REPRESENTATION_NAME)


_VC2_WEIGHTS = (
    "needs the 7.4 GB VideoCrafter2 model.ckpt (or a godmodeanimation fine-tune) in models/videocrafter; "
    "at 320x512x16 and 50 steps it is hours on a CPU. The VC2 nodes run end to end on a tiny checkpoint in "
    "tests/test_vc2_nodes.py"
)

WORKFLOW_MODELS: dict[str, Callable[[Path, Path], None] | str] = {
    "vc2_sprite_t2v": _VC2_WEIGHTS,
    "vc2_action_set": _VC2_WEIGHTS,
    "animegamer_decode": _animegamer_decode,
    "animegamer_turn": _animegamer_turn
    if tokenizer_source() is not None
    else "AnimeGamer's tokenizer files (../shared/reference/animegamer_tokenizer or $GAMEANIM_ANIMEGAMER_TOKENIZER) are absent",
    "vc2_train_concept_lora": _VC2_WEIGHTS + " (the trainer nodes run end to end on it in tests/test_trainer_nodes.py)",
}
