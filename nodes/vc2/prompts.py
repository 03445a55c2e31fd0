"""Sprite prompts in godmodeanimation's form, kept inside OpenCLIP's 77-token window.

The fine-tunes were trained and demoed with prompts like "Game character running animation of
<character description>, side view, solid color background" (``i2v/predict.py`` help text and the
``i2v/prompts/*`` lists); the action word is what the fine-tune learned, the view and a plain
background keep the clip usable as a sprite.  When the whole prompt would not fit, the character
description loses its trailing comma-separated details (never the action, view or background).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import InputError
from .text_encoder import CONTEXT_LENGTH, token_report


@dataclass(frozen=True)
class Action:
    """One action of the vocabulary: the words put in the prompt and the checkpoint trained on it."""

    key: str
    phrase: str
    checkpoint: str


# Phrases from godmodeanimation's prompt files and predict.py; checkpoints from its README table.
ACTIONS: tuple[Action, ...] = (
    Action("running", "running", "godmodeanimation runjump (or VC2 base)"),
    Action("jumping", "jumping", "godmodeanimation runjump"),
    Action("running jump", "running and jumping", "godmodeanimation runjump"),
    Action("idle breathing", "idle breathing", "VC2 base"),
    Action("sword slash", "sword slashing", "godmodeanimation sword_wield"),
    Action("spin kick", "spin kick", "godmodeanimation spinkick"),
    Action("walking", "walking", "VC2 base"),
    Action("kicking", "kicking", "godmodeanimation spinkick"),
    Action("punching", "punching", "VC2 base"),
    Action("crouching", "crouching", "VC2 base"),
    Action("falling", "falling", "VC2 base"),
    Action("dying", "dying", "VC2 base"),
    Action("shooting", "shooting", "VC2 base"),
    Action("casting spell", "spell casting", "VC2 base"),
)
ACTION_KEYS = tuple(a.key for a in ACTIONS)
VIEWS = ("side view", "side view facing right", "side view facing left", "front view", "back view")
BACKGROUNDS = (
    "solid color background",
    "solid white background",
    "solid black background",
    "solid green background",
    "simple background",
)
STYLES = ("none", "pixel art, 16-bit era game art", "digital sprite", "hand-drawn, cel shaded")


@dataclass(frozen=True)
class SpritePrompt:
    """A composed prompt, its token count and the character details dropped to fit."""

    text: str
    tokens: int
    dropped: tuple[str, ...]


def action_phrase(action: str) -> str:
    """The prompt words for an action key; unknown actions are used as written (free text)."""
    key = action.strip().lower()
    if not key:
        raise InputError("The action is empty: pick one of " + ", ".join(ACTION_KEYS) + " or type your own.")
    for item in ACTIONS:
        if item.key == key:
            return item.phrase
    return key


def _compose(phrase: str, character: str, view: str, background: str, style: str) -> str:
    head = f"Game character {phrase} animation"
    parts = [f"{head} of {character}" if character else head]
    parts += [view, background]
    if style and style != "none":
        parts.append(style)
    return ", ".join(p.strip() for p in parts if p and p.strip())


def build_sprite_prompt(
    action: str,
    character: str,
    view: str = VIEWS[0],
    background: str = BACKGROUNDS[0],
    style: str = "none",
    limit: int = CONTEXT_LENGTH,
) -> SpritePrompt:
    """Compose the prompt and trim the character's trailing details until it fits ``limit`` tokens."""
    phrase = action_phrase(action)
    details = [d.strip() for d in character.split(",") if d.strip()]
    dropped: list[str] = []
    while True:
        text = _compose(phrase, ", ".join(details), view, background, style)
        tokens = token_report(text, limit).tokens
        if tokens <= limit or len(details) <= 1:
            break
        dropped.insert(0, details.pop())
    if tokens > limit:
        raise InputError(
            f"The sprite prompt needs {tokens} tokens but VC2 reads only {limit}: shorten the first part of the "
            f"character description (before its first comma) or the style. Prompt: {text!r}"
        )
    return SpritePrompt(text=text, tokens=tokens, dropped=tuple(dropped))


def parse_actions(actions: str) -> list[str]:
    """Split an action list typed as commas or lines; order kept, duplicates removed."""
    seen: list[str] = []
    for raw in actions.replace("\n", ",").split(","):
        item = raw.strip()
        if item and item.lower() not in (s.lower() for s in seen):
            seen.append(item)
    if not seen:
        raise InputError("No actions given: list them separated by commas, e.g. 'running, jumping, idle breathing'.")
    return seen
