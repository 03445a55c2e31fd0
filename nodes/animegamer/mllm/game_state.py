"""The ``GAMEANIM_GAME`` value: turns played so far, the character states, and their persistence.

ComfyUI prompts are stateless, so a game lives in the output folder between prompts: a JSON file
(instructions, parsed strengths, states, generated ids) plus a safetensors file holding every turn's
226×D representation in its original dtype (so a loaded game continues bit for bit).  The
safetensors file name carries its SHA-256 prefix and the JSON names it: the new tensors file is
written first, then the JSON is replaced atomically, then stale tensors files are removed.  A crash
or an error at any point leaves the previous save loadable, and a corrupt save is reported, never
silently repaired or overwritten by loading it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from ....core.atomic import write_text_atomic
from ....core.errors import InputError, ModelFileError
from ....core.weights import read_state_dict, save_safetensors_atomic

FORMAT = "gameanim.animegamer_game"
VERSION = 1
STATE_NAMES = ("stamina", "social", "entertainment")
START_VALUE = 50
STEP_SCALE = 5
SUFFIX = ".game.json"


@dataclass(frozen=True)
class Turn:
    """One played turn: what was asked, what the MLLM answered, and the states after it."""

    instruction: str
    representation: torch.Tensor
    strengths: tuple[int, int, int, int]
    generated_ids: tuple[int, ...] = ()
    text: str = ""
    parse_complete: bool = True
    states: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Game:
    """A game: character, sliding-window size, turns, current states (values are never mutated)."""

    character: str
    window: int = 1
    turns: tuple[Turn, ...] = ()
    states: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATE_NAMES, START_VALUE))

    def history(self) -> list[Turn]:
        """The turns the next prompt shows: the last ``window - 1`` (none at the released window 1)."""
        keep = self.window - 1
        return list(self.turns[-keep:]) if keep > 0 else []

    def with_turn(self, turn: Turn) -> Game:
        return replace(self, turns=(*self.turns, turn), states=dict(turn.states))


def new_game(character: str, window: int = 1) -> Game:
    """A fresh game: every state at 50, no turns; ``window`` 1 is the released (history-free) behaviour."""
    name = (character or "").strip()
    if not name:
        raise InputError("The character name is empty; give the character the MLLM was trained on (e.g. Qiqi).")
    if int(window) < 1:
        raise InputError(f"The window must be at least 1 (got {window}); 1 is the released behaviour.")
    return Game(character=name, window=int(window))


def updated_states(states: dict[str, int], deltas: Sequence[int]) -> dict[str, int]:
    """``state += 5 × delta`` clamped to [0, 100] for (stamina, social, entertainment) = (ST, SC, ET)."""
    social, entertainment, stamina = (int(d) for d in deltas)
    moves = {"stamina": stamina, "social": social, "entertainment": entertainment}
    return {k: max(0, min(100, int(states[k]) + STEP_SCALE * moves[k])) for k in STATE_NAMES}


def _tensor_key(index: int) -> str:
    return f"turn_{index:05d}"


def game_files(path: str | os.PathLike[str]) -> Path:
    """The JSON path of a save named ``path`` (``.game.json`` appended when missing)."""
    target = Path(path)
    return target if target.name.endswith(SUFFIX) else target.with_name(target.name + SUFFIX)


def save_game(game: Game, path: str | os.PathLike[str]) -> Path:
    """Save ``game`` next to ``path`` atomically; returns the JSON path."""
    json_path = game_files(path)
    stem = json_path.name[: -len(SUFFIX)]
    tensors = {_tensor_key(i): t.representation.detach().cpu().contiguous() for i, t in enumerate(game.turns)}
    for key, tensor in tensors.items():
        if not torch.isfinite(tensor.float()).all():
            raise InputError(f"Turn {key} of the game holds NaN/inf; the game was not saved.")
    from safetensors.torch import save

    blob = save(tensors) if tensors else b""
    digest = hashlib.sha256(blob).hexdigest()
    tensor_name = f"{stem}.{digest[:16]}.safetensors"
    tensor_path = json_path.with_name(tensor_name)
    if tensors and not tensor_path.exists():
        save_safetensors_atomic(tensors, tensor_path, overwrite=True)
    record = {
        "format": FORMAT,
        "version": VERSION,
        "character": game.character,
        "window": game.window,
        "states": game.states,
        "tensors": tensor_name if tensors else None,
        "tensors_sha256": _file_digest(tensor_path) if tensors else None,
        "turns": [
            {
                "instruction": t.instruction,
                "strengths": list(t.strengths),
                "generated_ids": list(t.generated_ids),
                "text": t.text,
                "parse_complete": t.parse_complete,
                "states": t.states,
                "dtype": str(t.representation.dtype).removeprefix("torch."),
            }
            for t in game.turns
        ],
    }
    write_text_atomic(json_path, json.dumps(record, indent=1))
    own = re.compile(re.escape(stem) + r"\.[0-9a-f]{16}\.safetensors")
    for stale in json_path.parent.glob(f"{stem}.*.safetensors"):
        if stale.name != tensor_name and own.fullmatch(stale.name):
            stale.unlink(missing_ok=True)
    return json_path


def _file_digest(path: Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def _corrupt(path: Path, what: str) -> ModelFileError:
    return ModelFileError(
        f"The saved game {path} is corrupt ({what}). It was left untouched; load an older save or start a new game "
        "under another name."
    )


def load_game(path: str | os.PathLike[str]) -> Game:
    """Load a game saved by :func:`save_game`; any inconsistency raises and nothing is written."""
    json_path = game_files(path)
    if not json_path.is_file():
        raise ModelFileError(f"No saved game at {json_path}. Save a game first, or start a new one.")
    try:
        record: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _corrupt(json_path, f"not valid JSON: {exc}") from exc
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("version") != VERSION:
        raise _corrupt(json_path, f"not a version-{VERSION} AnimeGamer game file")
    try:
        tensors: dict[str, torch.Tensor] = {}
        if record["tensors"] is not None:
            tensor_path = json_path.with_name(Path(record["tensors"]).name)
            if not tensor_path.is_file():
                raise _corrupt(json_path, f"its representations file {tensor_path.name} is missing")
            if _file_digest(tensor_path) != record["tensors_sha256"]:
                raise _corrupt(json_path, f"{tensor_path.name} does not match the checksum in the JSON")
            tensors = read_state_dict(tensor_path)
        turns = []
        for index, item in enumerate(record["turns"]):
            representation = tensors[_tensor_key(index)]
            turns.append(
                Turn(
                    instruction=str(item["instruction"]),
                    representation=representation,
                    strengths=tuple(int(v) for v in item["strengths"]),  # type: ignore[arg-type]
                    generated_ids=tuple(int(v) for v in item["generated_ids"]),
                    text=str(item["text"]),
                    parse_complete=bool(item["parse_complete"]),
                    states={k: int(item["states"][k]) for k in STATE_NAMES},
                )
            )
        states = {k: int(record["states"][k]) for k in STATE_NAMES}
        return Game(character=str(record["character"]), window=int(record["window"]), turns=tuple(turns), states=states)
    except (KeyError, TypeError, ValueError) as exc:
        raise _corrupt(json_path, f"missing or malformed field {exc}") from exc
