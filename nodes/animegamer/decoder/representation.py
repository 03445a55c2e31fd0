"""Reading saved AnimeGamer representations (the decoder's conditional input) from files.

Two layouts are accepted, by content:

* ``.safetensors`` with a ``representation`` tensor ``[1,226,D]`` or ``[226,D]`` (optional ``motion_level`` in the
  metadata) — what :func:`save_representation` writes;
* the released ``results/multimodal_representations/mllm-output.pt``: a dict ``turn -> [tensor (1,226,1920),
  instruction, [ML, SC, ET, ST]]`` (read with ``weights_only=True``), from which one turn is taken.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from ....core.errors import InputError, ModelFileError
from ....core.weights import read_state_dict, read_torch_object, safetensors_metadata, save_safetensors_atomic


@dataclass
class SavedRepresentation:
    tokens: torch.Tensor  # [1, 226, D] float32
    motion_level: int | None
    label: str


def _as_batch(tensor: torch.Tensor, where: str) -> torch.Tensor:
    tokens = tensor.unsqueeze(0) if tensor.ndim == 2 else tensor
    if tokens.ndim != 3 or tokens.shape[1] != 226:
        raise InputError(f"{where} holds a tensor of shape {tuple(tensor.shape)}; expected [1, 226, width] (one turn).")
    return tokens.float()


def read_representation(path: str | os.PathLike[str], turn: int = 0) -> SavedRepresentation:
    """Turn ``turn`` (0-based, in file order) of a saved representation file."""
    file = Path(path)
    if file.suffix == ".safetensors":
        state = read_state_dict(file)
        if "representation" not in state:
            raise ModelFileError(f"{file} has no 'representation' tensor (found {sorted(state)[:5]}).")
        level = safetensors_metadata(file).get("motion_level")
        return SavedRepresentation(
            _as_batch(state["representation"], str(file)), int(level) if level else None, file.name
        )
    data = read_torch_object(file)
    if isinstance(data, torch.Tensor):
        return SavedRepresentation(_as_batch(data, str(file)), None, file.name)
    if not isinstance(data, dict) or not data:
        raise ModelFileError(f"{file} is neither a representation tensor nor AnimeGamer's mllm-output.pt dict.")
    keys = list(data)
    if not 0 <= turn < len(keys):
        raise InputError(f"turn {turn} is out of range: {file} holds {len(keys)} turns ({keys[:5]}...).")
    entry = data[keys[turn]]
    tensor = entry[0] if isinstance(entry, (list, tuple)) else entry
    if not isinstance(tensor, torch.Tensor):
        raise ModelFileError(f"{file} turn '{keys[turn]}' holds no tensor.")
    level = None
    if isinstance(entry, (list, tuple)) and len(entry) > 2 and isinstance(entry[2], (list, tuple)) and entry[2]:
        level = int(entry[2][0])
    return SavedRepresentation(_as_batch(tensor, f"{file} turn '{keys[turn]}'"), level, str(keys[turn]))


def save_representation(tokens: torch.Tensor, path: str | os.PathLike[str], motion_level: int | None = None) -> Path:
    """Write a representation the loader reads back (safetensors, atomic)."""
    metadata = {"motion_level": str(int(motion_level))} if motion_level is not None else {}
    return save_safetensors_atomic(
        {"representation": _as_batch(tokens, "the representation")}, path, metadata, overwrite=True
    )
