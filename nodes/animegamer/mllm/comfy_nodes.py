"""ComfyUI nodes for AnimeGamer's MLLM step and the game state (thin adapters over the library modules).

A game continues across queued prompts through the save/load nodes: Load Game reads the slot
(or starts a new game when it does not exist yet), the step plays one turn, Save Game writes the
slot atomically.  Load Game's ``IS_CHANGED`` follows the slot's file, so re-queuing the same
workflow plays the next turn instead of returning a cached one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ....core import host
from ....core.errors import InputError, ModelFileError, NumericalError
from ....core.paths import confined
from ...common import category, field, output_files

MLLM_TYPE = "ANIMEGAMER_MLLM"
GAME_TYPE = "GAMEANIM_GAME"
REPRESENTATION_TYPE = "ANIMEGAMER_REPRESENTATION"
CATEGORY = category("AnimeGamer")
GAMES_SUBDIR = "animegamer_games"
IN_WEIGHTS = "(base weights inside the MLLM file)"
DTYPES = ["bfloat16", "float16", "float32"]
CONFIG_NAME = "gameanim_mllm_config.json"
HUD_KEY = "gameanim_hud"


def _folders_holding(key: str, marker: str) -> list[str]:
    """Relative folders in model folder ``key`` that contain ``marker`` (tokenizers, transformers models)."""
    names = {str(Path(name).parent.as_posix()) for name in host.model_list(key) if Path(name).name == marker}
    return sorted(n for n in names if n != ".")


def _mllm_files() -> list[str]:
    files = [
        n for n in host.model_list("animegamer") if Path(n).name in ("pytorch_model.bin", "pytorch_model.safetensors")
    ]
    return files or ["MLLM-Qiqi/pytorch_model.bin"]


def _config_overrides(weights: Path) -> dict[str, Any]:
    """``MistralConfig`` overrides from ``gameanim_mllm_config.json`` beside the weights (only for non-7B builds)."""
    path = weights.parent / CONFIG_NAME
    if not path.is_file():
        return {}
    try:
        overrides = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{path} is not valid JSON ({exc}); fix or delete it.") from exc
    if not isinstance(overrides, dict):
        raise ModelFileError(f"{path} must hold a JSON object of MistralConfig settings.")
    return overrides


def _hud_message(game: Any) -> dict[str, list[dict[str, Any]]]:
    """The ``ui.gameanim_hud`` payload that web/js/game_hud.js draws on the node."""
    last = game.turns[-1] if game.turns else None
    hud = {
        "turn": len(game.turns),
        "character": game.character,
        "instruction": last.instruction if last else "",
        "states": dict(game.states),
        "level": last.strengths[0] if last else 0,
    }
    return {HUD_KEY: [hud]}


def _base_path(name: str) -> Path:
    """The base model folder: models/LLM/<name>, else models/animegamer/<name>; the error names models/LLM."""
    try:
        return host.model_path("LLM", name)
    except ModelFileError:
        try:
            return host.model_path("animegamer", name)
        except ModelFileError:
            pass
        raise


def _slot_path(name: str) -> Path:
    return confined(host.output_dir() / GAMES_SUBDIR, name.strip().removesuffix(".game.json") + ".game.json")


class AnimeGamerMLLMLoader:
    DESCRIPTION = (
        "Loads AnimeGamer's MLLM (Mistral-7B-Instruct-v0.1 + LoRA + resamplers) from MLLM-<character>/pytorch_model.bin, "
        "its tokenizer folder and, when the file holds only the fine-tuned parts, the base Mistral folder in models/LLM."
    )
    CATEGORY = CATEGORY
    FUNCTION = "load"
    RETURN_TYPES = (MLLM_TYPE,)
    RETURN_NAMES = ("mllm",)
    OUTPUT_TOOLTIPS = (
        "The AnimeGamer MLLM, loaded by ComfyUI's memory manager for each step (unloaded when room is needed).",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        tokenizers = _folders_holding("animegamer", "tokenizer.model") or ["animegamer_tokenizer"]
        found = sorted(set(_folders_holding("LLM", "config.json")) | set(_folders_holding("animegamer", "config.json")))
        bases = [IN_WEIGHTS, *(found or ["Mistral-7B-Instruct-v0.1"])]
        default_base = "Mistral-7B-Instruct-v0.1" if "Mistral-7B-Instruct-v0.1" in bases else bases[0]
        return {
            "required": {
                "mllm_weights": field(
                    _mllm_files(), "AnimeGamer's MLLM-<character>/pytorch_model.bin in models/animegamer."
                ),
                "tokenizer": field(
                    tokenizers,
                    "AnimeGamer's animegamer_tokenizer folder (copied from the AnimeGamer repo) in models/animegamer.",
                ),
                "base_model": field(
                    bases,
                    "The Mistral-7B-Instruct-v0.1 folder (in models/LLM or models/animegamer) that the LoRA was trained on.",
                    default=default_base,
                ),
                "dtype": field(
                    DTYPES,
                    "Compute precision; bfloat16 is the released one (float16 may overflow).",
                    default="bfloat16",
                ),
            }
        }

    def load(self, mllm_weights: str, tokenizer: str, base_model: str, dtype: str):
        from .model import load_animegamer_mllm

        weights = host.model_path("animegamer", mllm_weights)
        tokenizer_dir = host.model_path("animegamer", tokenizer)
        base = None if base_model == IN_WEIGHTS else _base_path(base_model)
        model = load_animegamer_mllm(
            weights, tokenizer_dir, base=base, config={**_config_overrides(weights), "dtype": dtype}
        )
        model = model.to(host.offload_device())
        host.manage(model, f"AnimeGamer MLLM ({mllm_weights})", "text_encoder")
        return (model,)


class AnimeGamerNewGame:
    DESCRIPTION = "Starts a new AnimeGamer game: every character state at 50 and no turns played yet."
    CATEGORY = CATEGORY
    FUNCTION = "make"
    RETURN_TYPES = (GAME_TYPE,)
    RETURN_NAMES = ("game",)
    OUTPUT_TOOLTIPS = ("A fresh game.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "character": field(
                    "STRING",
                    "The character the MLLM was trained on (Qiqi or Sosuke for the released weights).",
                    default="Qiqi",
                ),
                "window": field(
                    "INT",
                    "Turns the MLLM sees: 1 = only the current instruction (released); N shows the last N-1 turns too.",
                    default=1,
                    min=1,
                    max=8,
                ),
            }
        }

    def make(self, character: str, window: int):
        from .game_state import new_game

        return (new_game(character, window),)


class AnimeGamerInstruction:
    DESCRIPTION = "Builds the instruction line AnimeGamer was trained on: 'Character: X; Motion: <adverb> <verb phrase>; Background: <time> <place>.'"
    CATEGORY = CATEGORY
    FUNCTION = "build"
    RETURN_TYPES = ("STRING",)
    RETURN_NAMES = ("instruction",)
    OUTPUT_TOOLTIPS = ("The game_demo instruction line.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "character": field("STRING", "Character name, e.g. Qiqi.", default="Qiqi"),
                "adverb": field(
                    "STRING", "How the motion is done, e.g. quickly, gently (may be empty).", default="quickly"
                ),
                "motion": field(
                    "STRING", "The verb phrase, e.g. flying on broomstick.", default="flying on broomstick"
                ),
                "time": field("STRING", "Time of day, e.g. day or night (may be empty).", default="day"),
                "background": field("STRING", "The place, e.g. sky, town, bedroom.", default="sky"),
            }
        }

    def build(self, character: str, adverb: str, motion: str, time: str, background: str):
        from .instruction import build_instruction

        return (build_instruction(character, adverb, motion, time, background),)


class AnimeGamerStep:
    DESCRIPTION = (
        "Plays one AnimeGamer turn: the MLLM reads the instruction (and, with window > 1, the previous turns), predicts the "
        "motion level and the stamina/social/entertainment changes, and produces the 226-token representation the shot "
        "decoder renders. Cancel works between generated tokens."
    )
    CATEGORY = CATEGORY
    FUNCTION = "step"
    RETURN_TYPES = (GAME_TYPE, REPRESENTATION_TYPE, "INT", "FLOAT", "STRING")
    RETURN_NAMES = ("game", "representation", "motion_level", "flow", "generated_text")
    OUTPUT_TOOLTIPS = (
        "The game with this turn added and the states updated.",
        "The 226×1920 action-aware representation (tensor [1,226,1920]) for the shot decoder.",
        "Motion level 1–5 predicted by the MLLM (0 when it produced none).",
        "The decoder's motion-scope scalar for that level (inference_Decoder.py table).",
        "The raw text the MLLM generated.",
    )

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "mllm": field(MLLM_TYPE, "The AnimeGamer MLLM from the loader."),
                "game": field(GAME_TYPE, "The game so far (from Load Game or New Game)."),
                "instruction": field(
                    "STRING", "This turn's instruction line (use the Instruction node).", forceInput=True
                ),
                "max_new_tokens": field(
                    "INT", "Token budget of the text pass (the released value is 200).", default=200, min=1, max=1024
                ),
            }
        }

    def step(self, mllm: Any, game: Any, instruction: str, max_new_tokens: int):
        from .step import game_step

        managed = host.manage(mllm, "AnimeGamer MLLM", "text_encoder")
        with host.on_device(managed), host.notify_on(NumericalError, "AnimeGamer MLLM became NaN"):
            game, result = game_step(
                mllm, game, instruction, max_new_tokens, progress=host.progress(max_new_tokens + 1)
            )
        outputs = (game, result.representation[None], result.level, result.flow, result.text)
        return {"ui": _hud_message(game), "result": outputs}


class AnimeGamerHUD:
    DESCRIPTION = "Draws the stamina, social and entertainment bars and the last turn's instruction onto a shot, and returns the states as numbers."
    CATEGORY = CATEGORY
    FUNCTION = "draw"
    RETURN_TYPES = ("IMAGE", "INT", "INT", "INT")
    RETURN_NAMES = ("images", "stamina", "social", "entertainment")
    OUTPUT_TOOLTIPS = ("The frames with the HUD.", "Stamina 0–100.", "Social 0–100.", "Entertainment 0–100.")

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "images": field("IMAGE", "The shot frames to draw on."),
                "game": field(GAME_TYPE, "The game whose states are shown."),
                "show_text": field(
                    "BOOLEAN", "Also write the turn number and instruction at the bottom.", default=True
                ),
                "opacity": field("FLOAT", "Opacity of the HUD panels.", default=0.75, min=0.0, max=1.0, step=0.05),
            }
        }

    def draw(self, images: Any, game: Any, show_text: bool, opacity: float):
        from .hud import draw_hud

        caption = f"Turn {len(game.turns)}: {game.turns[-1].instruction}" if show_text and game.turns else ""
        states = game.states
        outputs = (
            draw_hud(images, states, caption, opacity),
            states["stamina"],
            states["social"],
            states["entertainment"],
        )
        return {"ui": _hud_message(game), "result": outputs}


class AnimeGamerSaveGame:
    DESCRIPTION = "Saves the game to output/animegamer_games/<name>.game.json (+ a .safetensors of the representations), atomically, so the next prompt can continue it."
    CATEGORY = CATEGORY
    FUNCTION = "save"
    OUTPUT_NODE = True
    RETURN_TYPES = (GAME_TYPE,)
    RETURN_NAMES = ("game",)
    OUTPUT_TOOLTIPS = ("The same game, for chaining.",)

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "game": field(GAME_TYPE, "The game to save."),
                "name": field(
                    "STRING", "Save slot name under output/animegamer_games (subfolders allowed).", default="qiqi"
                ),
            }
        }

    def save(self, game: Any, name: str):
        from .game_state import save_game

        path = save_game(game, _slot_path(name))
        text = f"saved turn {len(game.turns)} to {path.name}: " + ", ".join(f"{k} {v}" for k, v in game.states.items())
        tensors = json.loads(path.read_text(encoding="utf-8")).get("tensors")
        files = output_files([path, *([path.with_name(tensors)] if tensors else [])])
        return {"ui": {"text": [text], **files, **_hud_message(game)}, "result": (game,)}


class AnimeGamerLoadGame:
    DESCRIPTION = "Loads a saved game from output/animegamer_games/<name>.game.json, or starts a new one when the slot does not exist yet."
    CATEGORY = CATEGORY
    FUNCTION = "load"
    RETURN_TYPES = (GAME_TYPE, "INT")
    RETURN_NAMES = ("game", "turns_played")
    OUTPUT_TOOLTIPS = ("The game to continue.", "How many turns it already has.")

    @classmethod
    def INPUT_TYPES(cls) -> dict[str, Any]:
        return {
            "required": {
                "name": field("STRING", "Save slot name under output/animegamer_games.", default="qiqi"),
                "if_missing": field(
                    ["start new game", "error"], "What to do when the slot does not exist.", default="start new game"
                ),
                "character": field("STRING", "Character of a new game (ignored when the slot exists).", default="Qiqi"),
                "window": field(
                    "INT",
                    "Window of a new game (ignored when the slot exists); 1 is the released behaviour.",
                    default=1,
                    min=1,
                    max=8,
                ),
            }
        }

    @classmethod
    def IS_CHANGED(cls, **kwargs: Any) -> str:
        try:
            path = _slot_path(str(kwargs.get("name", "")))
        except InputError:
            return ""
        if not path.is_file():
            return f"missing:{path}"
        return hashlib.sha256(path.read_bytes()).hexdigest()

    def load(self, name: str, if_missing: str, character: str, window: int):
        from .game_state import load_game, new_game

        path = _slot_path(name)
        if not path.is_file() and if_missing == "start new game":
            game = new_game(character, window)
        else:
            game = load_game(path)
        return (game, len(game.turns))


NODE_CLASS_MAPPINGS = {
    "GameAnimAnimeGamerMLLMLoader": AnimeGamerMLLMLoader,
    "GameAnimAnimeGamerNewGame": AnimeGamerNewGame,
    "GameAnimAnimeGamerInstruction": AnimeGamerInstruction,
    "GameAnimAnimeGamerStep": AnimeGamerStep,
    "GameAnimAnimeGamerHUD": AnimeGamerHUD,
    "GameAnimAnimeGamerSaveGame": AnimeGamerSaveGame,
    "GameAnimAnimeGamerLoadGame": AnimeGamerLoadGame,
}
NODE_DISPLAY_NAME_MAPPINGS = {
    "GameAnimAnimeGamerMLLMLoader": "AnimeGamer MLLM Loader",
    "GameAnimAnimeGamerNewGame": "AnimeGamer New Game",
    "GameAnimAnimeGamerInstruction": "AnimeGamer Instruction",
    "GameAnimAnimeGamerStep": "AnimeGamer MLLM Step",
    "GameAnimAnimeGamerHUD": "AnimeGamer HUD",
    "GameAnimAnimeGamerSaveGame": "AnimeGamer Save Game",
    "GameAnimAnimeGamerLoadGame": "AnimeGamer Load Game",
}
