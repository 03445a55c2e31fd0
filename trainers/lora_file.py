"""GameAnim VC2 LoRA files: safetensors with our key format and the training facts in the header.

Files go to ``models/loras/gameanim/`` (model folder ``gameanim_loras``) and are never overwritten: a
taken name gets a numbered suffix.  The header records the base model (a weight signature and its
hash), the targets, rank, alpha, steps, dataset size, trigger word and the key format, so a LoRA made
for another base or by another tool is refused with a message instead of silently doing nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ..core.errors import InputError, ModelFileError
from ..core.paths import confined, sanitize_relative
from ..core.weights import is_safetensors, read_state_dict, safetensors_metadata, save_safetensors_atomic
from . import lora as lora_mod

MAX_SUFFIX = 10_000


def _target_name(folder: Path, name: str, attempt: int) -> Path:
    stem = sanitize_relative(name)
    stem = stem[: -len(".safetensors")] if stem.endswith(".safetensors") else stem
    suffix = "" if attempt == 0 else f"_{attempt:03d}"
    return confined(folder, f"{stem}{suffix}.safetensors")


def save_lora(
    tensors: Mapping[str, torch.Tensor],
    folder: str | os.PathLike[str],
    name: str,
    metadata: Mapping[str, Any],
) -> Path:
    """Write a LoRA atomically under ``folder`` as ``name.safetensors`` (or ``name_001`` ... if taken)."""
    if not tensors:
        raise InputError("There is no LoRA to save: run the trainer for at least one step first.")
    header = {"gameanim_key_format": lora_mod.KEY_FORMAT, **metadata}
    root = Path(folder)
    for attempt in range(MAX_SUFFIX):
        path = _target_name(root, name, attempt)
        if path.exists():
            continue
        try:
            return save_safetensors_atomic(tensors, path, metadata=header, overwrite=False)
        except FileExistsError:
            continue
    raise InputError(f"Could not find a free file name for '{name}' in {root}; choose another name.")


def read_lora(path: str | os.PathLike[str]) -> tuple[dict[str, tuple[torch.Tensor, torch.Tensor, float]], dict]:
    """``(groups, metadata)`` of a GameAnim LoRA file, or a :class:`ModelFileError` that says why not."""
    file = Path(path)
    if not file.is_file():
        raise ModelFileError(f"The LoRA file {file} does not exist.")
    if not is_safetensors(file):
        raise ModelFileError(
            f"{file} is not a .safetensors file (or its header is damaged): GameAnim LoRAs are safetensors "
            "written by the GameAnim trainer. Re-save or re-train it."
        )
    metadata = safetensors_metadata(file)
    tensors = read_state_dict(file)
    groups = lora_mod.group_lora(tensors, str(file))
    key_format = metadata.get("gameanim_key_format")
    if key_format != lora_mod.KEY_FORMAT:
        raise ModelFileError(
            f"{file} has key format {key_format!r}, expected {lora_mod.KEY_FORMAT!r}: it was not written by "
            "this version of the GameAnim trainer."
        )
    return groups, metadata


def apply_lora_file(
    model: Any, path: str | os.PathLike[str], strength: float = 1.0, allow_other_base: bool = False
) -> Any:
    """A new VC2Model with the LoRA at ``path`` merged at ``strength`` (stack by applying again).

    The LoRA's base-model signature must match ``model`` (relative distance under
    :data:`~.lora.SIGNATURE_TOLERANCE`) unless ``allow_other_base``; shapes must always fit.
    """
    if not isinstance(strength, (int, float)) or not -10.0 <= strength <= 10.0:
        raise InputError(f"strength must be a number in [-10, 10], got {strength!r}.")
    groups, metadata = read_lora(path)
    if not allow_other_base:
        try:
            saved = [float(x) for x in json.loads(metadata.get("base_signature", "[]"))]
        except (json.JSONDecodeError, TypeError, ValueError):
            saved = []
        distance = lora_mod.signature_distance(saved, lora_mod.base_signature(model.unet))
        if distance > lora_mod.SIGNATURE_TOLERANCE:
            raise ModelFileError(
                f"{path} was trained on a different base model (base hash {metadata.get('base_model_hash', '?')}, "
                f"this model {lora_mod.signature_hash(lora_mod.base_signature(model.unet))}; weight signature "
                f"distance {distance:.3g}). Load the model it was trained on, or allow a different base "
                "if you know the models are related (e.g. a fine-tune of the same VC2)."
            )
    return lora_mod.merge_into(model, groups, float(strength), str(path))
