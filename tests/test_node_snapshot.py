"""Shipped node IDs and input names never disappear or get renamed (deprecate instead).

``tests/node_snapshot.json`` records every shipped node ID with its input names.  This test fails
when one of them is gone, and when a new node or input is not yet recorded.  After adding nodes or
inputs, record them with ``GAMEANIM_UPDATE_SNAPSHOT=1 python -m pytest tests/test_node_snapshot.py``
(the update only adds; removals still fail).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gameanim import NODE_CLASS_MAPPINGS

SNAPSHOT = Path(__file__).with_name("node_snapshot.json")


def _current() -> dict[str, list[str]]:
    out = {}
    for node_id, cls in NODE_CLASS_MAPPINGS.items():
        inputs = cls.INPUT_TYPES()
        out[node_id] = sorted(name for section in ("required", "optional") for name in inputs.get(section, {}))
    return out


def test_no_shipped_node_or_input_was_removed():
    shipped = json.loads(SNAPSHOT.read_text(encoding="utf-8")) if SNAPSHOT.exists() else {}
    current = _current()
    missing_nodes = sorted(set(shipped) - set(current))
    assert not missing_nodes, f"shipped node IDs removed or renamed: {missing_nodes} (keep them with DEPRECATED = True)"
    missing_inputs = {
        n: sorted(set(shipped[n]) - set(current[n])) for n in shipped if set(shipped[n]) - set(current[n])
    }
    assert not missing_inputs, f"shipped inputs removed or renamed: {missing_inputs}"
    if os.environ.get("GAMEANIM_UPDATE_SNAPSHOT") == "1":
        merged = {n: sorted(set(shipped.get(n, [])) | set(current[n])) for n in current}
        SNAPSHOT.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n", encoding="utf-8")
        shipped = merged
    unrecorded = {
        n: sorted(set(current[n]) - set(shipped.get(n, [])))
        for n in current
        if set(current[n]) - set(shipped.get(n, []))
    }
    assert not unrecorded, (
        f"new nodes/inputs not in the snapshot yet (run with GAMEANIM_UPDATE_SNAPSHOT=1): {unrecorded}"
    )


def test_deprecated_nodes_stay_registered():
    for node_id, cls in NODE_CLASS_MAPPINGS.items():
        if getattr(cls, "DEPRECATED", False):
            assert "deprecated" in cls.DESCRIPTION.lower(), (
                f"{node_id} is deprecated but its DESCRIPTION does not say so"
            )
