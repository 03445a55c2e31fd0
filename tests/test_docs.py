"""Generated documentation stays in step with the code."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_node_reference_is_current():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location("node_docs", ROOT / "scripts" / "node_docs.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    committed = (ROOT / "docs" / "nodes.md").read_text(encoding="utf-8")
    assert committed == module.render(), "docs/nodes.md is stale: run python scripts/node_docs.py"
