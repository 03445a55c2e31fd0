"""Several AnimeGamer turns queued one after another through ``/prompt``: the saved game carries them over.

Runs with the same ``COMFYUI_DIR`` / ``COMFYUI_PYTHON`` switch as ``test_comfyui.py`` and the tiny MLLM
written by :func:`.animegamer_mllm_models.write_tiny_animegamer_mllm`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .animegamer_mllm_models import tokenizer_source, write_tiny_animegamer_mllm
from .comfy_server import ComfyServer, describe_failure

ROOT = Path(__file__).resolve().parents[2]
COMFYUI_DIR = os.environ.get("COMFYUI_DIR")
COMFYUI_PYTHON = os.environ.get("COMFYUI_PYTHON")

pytestmark = pytest.mark.skipif(
    not (COMFYUI_DIR and COMFYUI_PYTHON) or tokenizer_source() is None,
    reason="needs COMFYUI_DIR + COMFYUI_PYTHON (real ComfyUI) and AnimeGamer's tokenizer files",
)

MOTIONS = [
    ("quickly", "flying on broomstick", "sky"),
    ("smoothly", "fly on broomstick", "countryside"),
    ("gently", "sit on railing", "town"),
]


def test_three_turns_continue_one_saved_game(tmp_path):
    base = tmp_path / "base"
    write_tiny_animegamer_mllm(base / "models", base / "input")
    server = ComfyServer(Path(COMFYUI_DIR), COMFYUI_PYTHON, ROOT, base)
    prompt = json.loads((ROOT / "workflows" / "api" / "animegamer_turn.json").read_text(encoding="utf-8"))
    try:
        server.start()
        for adverb, motion, place in MOTIONS:
            prompt["3"]["inputs"].update(adverb=adverb, motion=motion, background=place)
            body = server.queue(prompt).json()
            assert body.get("node_errors") == {}, body
            entry = server.wait_history(body["prompt_id"])
            assert entry["status"]["status_str"] == "success", describe_failure(entry)
    finally:
        server.stop()
    saved = json.loads((base / "output" / "animegamer_games" / "qiqi.game.json").read_text())
    assert [t["instruction"].split("Motion: ")[1].split(";")[0] for t in saved["turns"]] == [
        f"{a} {m}" for a, m, _ in MOTIONS
    ]
    # the tiny model always answers SC -2, ET +1, ST +4: three turns move social 50 -> 20, stamina 50 -> 100 (clamped)
    assert saved["states"] == {"stamina": 100, "social": 20, "entertainment": 65}
