"""Workflow tooling: ComfyUI's two workflow formats, converted, laid out and validated.

Used by the headless client (``scripts/gameanim_client.py``, which loads this package by path so it
needs neither torch nor the node pack), ``scripts/workflow_ui.py`` and the workflow tests; the nodes
never import it.  Standard library only.

* :mod:`.convert` — node definitions in the ``/object_info`` layout and UI → API conversion;
* :mod:`.layout` — API → UI: the readable layout of an authored API workflow;
* :mod:`.validate` — the checks ComfyUI's ``/prompt`` makes, and the absolute-path check.
"""

from __future__ import annotations

from .convert import (
    BYPASSED,
    FRONTEND_ONLY_NODES,
    MUTED,
    WIDGET_TYPES,
    WorkflowError,
    is_api_format,
    is_ui_format,
    is_widget,
    node_definitions,
    ui_to_api,
    widget_slots,
)
from .layout import api_to_ui, group_members, overlapping_nodes, stage_of, without_stages
from .validate import absolute_paths, validate_api

__all__ = [
    "BYPASSED",
    "FRONTEND_ONLY_NODES",
    "MUTED",
    "WIDGET_TYPES",
    "WorkflowError",
    "absolute_paths",
    "api_to_ui",
    "group_members",
    "is_api_format",
    "is_ui_format",
    "is_widget",
    "node_definitions",
    "overlapping_nodes",
    "stage_of",
    "ui_to_api",
    "validate_api",
    "widget_slots",
    "without_stages",
]
