"""Several AnimeGamer turns queued one after another through ``/prompt``: the saved game carries them over.

Runs on the shared integration server (``COMFYUI_DIR`` / ``COMFYUI_PYTHON``), whose models folder holds
the tiny MLLM and decoder written by ``workflow_models``; the shot is shrunk so three turns stay quick.
"""

from __future__ import annotations

import json

from .comfy_server import describe_failure
from .conftest import ROOT

MOTIONS = [
    ("quickly", "flying on broomstick", "sky"),
    ("smoothly", "fly on broomstick", "countryside"),
    ("gently", "sit on railing", "town"),
]
GAME = "three_turns"


def test_three_turns_continue_one_saved_game(server):
    prompt = json.loads((ROOT / "workflows" / "api" / "animegamer_turn.json").read_text(encoding="utf-8"))
    prompt["2"]["inputs"]["name"] = prompt["8"]["inputs"]["name"] = GAME
    prompt["10"]["inputs"].update(steps=2, num_frames=5, width=64, height=64)
    for adverb, motion, place in MOTIONS:
        prompt["3"]["inputs"].update(adverb=adverb, motion=motion, background=place)
        body = server.queue(prompt).json()
        assert body.get("node_errors") == {}, body
        entry = server.wait_history(body["prompt_id"])
        assert entry["status"]["status_str"] == "success", describe_failure(entry)
    saved = json.loads((server.base / "output" / "animegamer_games" / f"{GAME}.game.json").read_text())
    assert [t["instruction"].split("Motion: ")[1].split(";")[0] for t in saved["turns"]] == [
        f"{a} {m}" for a, m, _ in MOTIONS
    ]
    # the tiny model always answers SC -2, ET +1, ST +4: three turns move social 50 -> 20, stamina 50 -> 100 (clamped)
    assert saved["states"] == {"stamina": 100, "social": 20, "entertainment": 65}
