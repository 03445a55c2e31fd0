"""What particular workflows must have written, beyond "it ran": checked after a workflow succeeds.

``API_CHECKS[name](server, prompt, entry)`` runs after the API workflow's history entry says success;
``CLIENT_CHECKS[name](server, prompt, out_dir)`` after the headless client ran the UI twin and
downloaded its files into ``out_dir``.  Each fails when the workflow's point did not reach its files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path
from typing import Any


def _node(prompt: dict[str, Any], class_type: str) -> str:
    (node_id,) = [k for k, v in prompt.items() if v["class_type"] == class_type]
    return node_id


def _atlas_next_to(server: Any, prompt: dict[str, Any], sheet_png: str) -> dict[str, Any]:
    """The TexturePacker atlas written beside the sheet (in the folder of the Sheet node's prefix)."""
    prefix = prompt[_node(prompt, "GameAnimSpriteSheet")]["inputs"]["filename_prefix"]
    folder = server.base / "output" / Path(prefix).parent
    return json.loads((folder / Path(sheet_png).with_suffix(".json")).read_text(encoding="utf-8"))


def _merged_from(merged: list[float], fine: list[float]) -> bool:
    """``merged`` is ``fine`` with runs of neighbours summed (Save Sprite Sheet's merge_holds joins repeats)."""
    ends = {round(t, 6) for t in accumulate(fine)}
    return round(sum(merged), 6) == round(sum(fine), 6) and all(round(t, 6) in ends for t in accumulate(merged))


def _action_set_durations(server: Any, prompt: dict[str, Any], sheet_png: str) -> dict[str, list[float]]:
    """Each action's frame durations (ms) in the atlas, after checking they are timed, not plain 1/fps."""
    atlas = _atlas_next_to(server, prompt, sheet_png)
    actions = [a.strip() for a in prompt[_node(prompt, "GameAnimVC2ActionSet")]["inputs"]["actions"].split(",")]
    durations = {name: [atlas["frames"][f]["duration"] for f in frames] for name, frames in atlas["animations"].items()}
    assert list(durations) == actions, durations
    frame_ms = 1000.0 / prompt[_node(prompt, "GameAnimVC2ActionSet")]["inputs"]["fps"]
    hold = prompt[_node(prompt, "GameAnimTimingChart")]["inputs"]["hold"]
    for name, ms in durations.items():
        # every duration is a whole number of source frames, and the keys' holds make some longer than one
        assert all(abs(d / frame_ms - round(d / frame_ms)) < 1e-6 for d in ms), (name, ms)
        assert max(ms) >= hold * frame_ms > frame_ms, (name, ms)
    return durations


def _action_set_api(server: Any, prompt: dict[str, Any], entry: dict[str, Any]) -> None:
    """The atlas holds, per action, exactly the durations its Timing Chart reported (holds merged at most)."""
    outputs = entry["outputs"]
    sheet = outputs[_node(prompt, "GameAnimSpriteSheet")]["images"][0]
    durations = _action_set_durations(server, prompt, sheet["filename"])
    charts = [json.loads(t) for t in outputs[_node(prompt, "GameAnimTimingChart")]["text"]]
    assert len(charts) == len(durations), charts  # one chart per action: the node ran once per clip
    frame_ms = 1000.0 / prompt[_node(prompt, "GameAnimVC2ActionSet")]["inputs"]["fps"]
    for (name, ms), chart in zip(durations.items(), charts, strict=True):
        assert _merged_from(ms, [d * frame_ms for d in chart]), (name, ms, chart)


def _action_set_client(server: Any, prompt: dict[str, Any], out_dir: Path) -> None:
    (sheet,) = [p.name for p in out_dir.glob("fox_knight_*.png")]
    _action_set_durations(server, prompt, sheet)


def _matte_on_workers(server: Any, prompt: dict[str, Any], entry: dict[str, Any]) -> None:
    """Remove Background ran on the pack's worker processes inside ComfyUI: they are the server's children (one per
    core beyond the first, up to three), and it never fell back to threads."""
    log = server.log()
    assert "running on threads" not in log, log[-3000:]
    workers = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile
            continue
        if int(stat[1]) == server.process.pid and any(part.endswith(b"process_worker.py") for part in command):
            workers.append(pid)
    assert len(workers) == min(4, os.cpu_count() or 1) - 1, workers


API_CHECKS: dict[str, Callable[[Any, dict[str, Any], dict[str, Any]], None]] = {
    "vc2_action_set": _action_set_api,
    "sprite_postprocess": _matte_on_workers,
}
CLIENT_CHECKS: dict[str, Callable[[Any, dict[str, Any], Path], None]] = {"vc2_action_set": _action_set_client}
