"""Refresh ``tests/data/core_object_info.json`` from a running ComfyUI.

Our offline workflow checks need the definitions of the ComfyUI core nodes that shipped workflows
use; the integration tests verify the snapshot against the live server.  Usage:
``python scripts/snapshot_core_nodes.py http://127.0.0.1:8188 [NodeId ...]`` (without node IDs it
refreshes the nodes already in the snapshot).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parents[1] / "tests" / "data" / "core_object_info.json"
KEYS = (
    "input",
    "input_order",
    "output",
    "output_is_list",
    "output_name",
    "name",
    "display_name",
    "description",
    "category",
    "output_node",
)


def main(argv: list[str]) -> int:
    url, wanted = argv[0].rstrip("/"), argv[1:]
    current = json.loads(SNAPSHOT.read_text(encoding="utf-8")) if SNAPSHOT.exists() else {}
    names = sorted(set(wanted) | set(current))
    with urllib.request.urlopen(f"{url}/object_info", timeout=60) as response:
        info = json.load(response)
    missing = [n for n in names if n not in info]
    if missing:
        print(f"not defined by this ComfyUI: {missing}", file=sys.stderr)
        return 1
    snapshot = {n: {k: info[n][k] for k in KEYS if k in info[n]} for n in names}
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(snapshot)} core node definitions to {SNAPSHOT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
