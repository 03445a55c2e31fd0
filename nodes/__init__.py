"""Node classes of every feature, merged into the mappings ComfyUI reads.

Each feature package (``nodes/<feature>/``) holds pure library modules plus one thin
``comfy_nodes.py`` exposing ``NODE_CLASS_MAPPINGS`` and ``NODE_DISPLAY_NAME_MAPPINGS``.
"""

from __future__ import annotations

from types import ModuleType


def merge_mappings(modules: tuple[ModuleType, ...]) -> tuple[dict[str, type], dict[str, str]]:
    """Merge the mappings of ``modules``; a node ID defined twice is a bug and raises."""
    classes: dict[str, type] = {}
    names: dict[str, str] = {}
    for module in modules:
        for node_id, cls in module.NODE_CLASS_MAPPINGS.items():
            if node_id in classes:
                raise RuntimeError(f"Node ID {node_id} is defined twice ({module.__name__}).")
            classes[node_id] = cls
        names.update(module.NODE_DISPLAY_NAME_MAPPINGS)
    return classes, names
