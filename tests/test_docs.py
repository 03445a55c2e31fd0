"""Generated documentation stays in step with the code."""

from __future__ import annotations

from pathlib import Path

import node_docs

ROOT = Path(__file__).resolve().parents[1]


def test_node_reference_is_current():
    committed = (ROOT / "docs" / "nodes.md").read_text(encoding="utf-8")
    assert committed == node_docs.render(), "docs/nodes.md is stale: run python scripts/node_docs.py"
