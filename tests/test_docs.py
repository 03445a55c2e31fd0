"""Generated documentation stays in step with the code."""

from __future__ import annotations

from pathlib import Path

import node_docs

ROOT = Path(__file__).resolve().parents[1]


def test_node_reference_is_current():
    committed = (ROOT / "docs" / "nodes.md").read_text(encoding="utf-8")
    assert committed == node_docs.render(), "docs/nodes.md is stale: run python scripts/node_docs.py"


def repeated_runs(text: str, words: int = 10) -> list[str]:
    """Runs of ``words`` words of prose (tables, code and HTML left out) that stand twice, not overlapping."""
    prose, fenced = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
        elif not fenced and not line.strip().startswith(("|", "<")):
            prose.append(line)
    tokens = " ".join(prose).split()
    first: dict[str, int] = {}
    found = []
    for i in range(len(tokens) - words + 1):
        run = " ".join(tokens[i : i + words])
        if run in first and i - first[run] >= words:
            found.append(run)
        first.setdefault(run, i)
    return found


def test_readme_says_nothing_twice():
    """No run of ten words stands twice in the README's prose (a pasted fragment shows up as one)."""
    assert not repeated_runs((ROOT / "README.md").read_text(encoding="utf-8"))


def test_repeated_runs_finds_a_pasted_fragment():
    text = "The server starts and queues every shipped workflow on tiny models, then it stops.\n" * 2
    assert repeated_runs(text) and not repeated_runs(text.splitlines()[0])


def test_sample_frames_carry_their_licence(pack):
    """The shipped sample clip is real art (Kenney, CC0); its licence note lies beside the frames and the loader
    reads only the frames."""
    from gameanim.nodes.sprite.comfy_nodes import GameAnimSpriteLoadFrames

    licence = (ROOT / "sample_data" / "sprite_frames" / "LICENSE.txt").read_text(encoding="utf-8")
    assert "CC0" in licence and "kenney.nl" in licence
    image, mask, count = GameAnimSpriteLoadFrames().load("pack_sample", "sprite_frames", 0)
    assert count == 8 and tuple(image.shape) == (8, 120, 160, 3)
