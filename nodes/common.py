"""Helpers shared by the node adapter modules (``nodes/*/comfy_nodes.py``).

Kept free of ComfyUI imports so node classes stay importable and testable in plain Python.
"""

from __future__ import annotations

from typing import Any

CATEGORY_ROOT = "GameAnim"


def field(kind: Any, tooltip: str, **options: Any) -> tuple[Any, dict[str, Any]]:
    """An ``INPUT_TYPES`` entry; the tooltip is mandatory so no input ships without one."""
    return (kind, {"tooltip": tooltip, **options})


def category(*parts: str) -> str:
    """A node category under the single pack root, e.g. ``category("Sprite", "Export")``."""
    return "/".join((CATEGORY_ROOT, *parts))
