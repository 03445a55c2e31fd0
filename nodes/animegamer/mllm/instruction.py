"""The game_demo instruction line: ``Character: <name>; Motion: <adverb> <verb phrase>; Background: <time> <place>.``

This is the only instruction format AnimeGamer's MLLM was trained on (``game_demo/demo.txt``).
``app.py`` drops the adverb and the time after the first turn; that is a quirk of the demo UI, so here
both are always used when given.
"""

from __future__ import annotations

from ....core.errors import InputError


def _clean(name: str, value: str, required: bool) -> str:
    text = " ".join((value or "").split())
    if required and not text:
        raise InputError(f"The {name} is empty; the instruction needs a character, a motion and a background.")
    for bad in (";", ":", "<", ">"):
        if bad in text:
            raise InputError(f"The {name} {text!r} contains {bad!r}, which would break the instruction line format.")
    return text


def build_instruction(character: str, adverb: str, motion: str, time: str, background: str) -> str:
    """``Character: Qiqi; Motion: quickly flying on broomstick; Background: day sky.`` from its parts."""
    who = _clean("character", character, True)
    how = " ".join(p for p in (_clean("adverb", adverb, False), _clean("motion", motion, True)) if p)
    where = " ".join(p for p in (_clean("time", time, False), _clean("background", background, True)) if p)
    return f"Character: {who}; Motion: {how}; Background: {where.rstrip('.')}."
