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

WORKFLOW_MODELS: dict[str, Callable[[Path, Path], None] | str] = {
    "animegamer_turn": write_tiny_animegamer_mllm
    if tokenizer_source() is not None
    else "AnimeGamer's tokenizer files (../shared/reference/animegamer_tokenizer or $GAMEANIM_ANIMEGAMER_TOKENIZER) are absent",
}
