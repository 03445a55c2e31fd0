"""Validation of API workflows as ComfyUI's ``/prompt`` does it, and the absolute-path check for shipped files."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .convert import _combo_options, _is_link, _ordered_inputs, _spec_options, _spec_type, is_api_format

_ABSOLUTE = re.compile(r"^(/|~[/\\]|[A-Za-z]:[/\\]|\\\\)")


def _check_value(node_id: str, name: str, spec: Any, value: Any) -> list[str]:
    """Type, range and combo checks as ComfyUI's validation does them.

    An empty combo is a file list whose folder is empty here (model and input folders are filled
    per machine), so any file name is accepted for it.
    """
    where = f"node {node_id} input {name!r}"
    options = _spec_options(spec)
    combo = _combo_options(spec)
    kind = _spec_type(spec)
    if combo is not None:
        if not combo:
            return [] if isinstance(value, str) else [f"{where}: {value!r} is not a file name"]
        return [] if value in combo else [f"{where}: {value!r} is not one of {combo[:12]}"]
    if kind == "INT":
        if isinstance(value, bool) or not isinstance(value, int):
            return [f"{where}: {value!r} is not an integer"]
    elif kind == "FLOAT":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return [f"{where}: {value!r} is not a number"]
    elif kind == "BOOLEAN":
        return [] if isinstance(value, bool) else [f"{where}: {value!r} is not true/false"]
    elif kind == "STRING":
        return [] if isinstance(value, str) else [f"{where}: {value!r} is not a string"]
    if "min" in options and value < options["min"]:
        return [f"{where}: {value} is below the minimum {options['min']}"]
    if "max" in options and value > options["max"]:
        return [f"{where}: {value} is above the maximum {options['max']}"]
    return []


def validate_api(prompt: Mapping[str, Any], definitions: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Problems ComfyUI's validation would report for ``prompt`` (empty list when it would queue)."""
    problems: list[str] = []
    if not is_api_format(prompt):
        return ["not an API-format workflow (expected {id: {class_type, inputs}})"]
    has_output = False
    for node_id, entry in prompt.items():
        definition = definitions.get(entry["class_type"])
        if definition is None:
            problems.append(f"node {node_id}: unknown node type {entry['class_type']!r}")
            continue
        has_output |= definition.get("output_node", False)
        specs = dict(_ordered_inputs(definition))
        required = definition.get("input", {}).get("required", {})
        for name in entry["inputs"]:
            if name not in specs:
                problems.append(f"node {node_id}: unknown input {name!r} for {entry['class_type']}")
        for name in required:
            if name not in entry["inputs"]:
                problems.append(f"node {node_id}: required input {name!r} is missing")
        for name, value in entry["inputs"].items():
            if name not in specs:
                continue
            if _is_link(value):
                source = prompt.get(value[0])
                if source is None:
                    problems.append(f"node {node_id} input {name!r}: links to missing node {value[0]}")
                    continue
                src_def = definitions.get(source["class_type"])
                if src_def is None:
                    continue
                if value[1] >= len(src_def["output"]):
                    problems.append(f"node {node_id} input {name!r}: node {value[0]} has no output {value[1]}")
                    continue
                out_type, in_type = src_def["output"][value[1]], _spec_type(specs[name])
                if isinstance(in_type, list) or "*" in (out_type, in_type):
                    continue
                if out_type not in str(in_type).split(","):
                    problems.append(f"node {node_id} input {name!r}: {out_type} does not connect to {in_type}")
            else:
                problems.extend(_check_value(node_id, name, specs[name], value))
    if not has_output:
        problems.append("the workflow has no output node, so ComfyUI would refuse it (prompt_no_outputs)")
    return problems


def absolute_paths(data: Any) -> list[str]:
    """Every string in ``data`` that looks like an absolute or home-relative path."""
    found: list[str] = []
    if isinstance(data, str):
        if _ABSOLUTE.match(data):
            found.append(data)
    elif isinstance(data, Mapping):
        for value in data.values():
            found.extend(absolute_paths(value))
    elif isinstance(data, list):
        for value in data:
            found.extend(absolute_paths(value))
    return found
