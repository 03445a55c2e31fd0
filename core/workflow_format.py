"""ComfyUI workflow formats: node definitions, UI → API conversion, API → UI layout, validation.

The browser saves *UI* workflows (positional ``widgets_values``, a link table) and ``POST /prompt``
takes *API* workflows (inputs by name, links as ``[node_id, slot]``).  ComfyUI's backend has no
converter, so the headless client and our workflow tests need one.  Conversion follows the
frontend's rules (frontend 1.27): widgets are the inputs whose type is a primitive or a combo,
in ``required`` then ``optional`` order; an INT/COMBO widget with ``control_after_generate`` (or
named ``seed``/``noise_seed``) is followed by one extra frontend-only value; links into a widget
override its value; muted nodes (mode 2) are dropped; bypassed nodes (mode 4) pass their first
input of a matching type through; ``Reroute`` and ``PrimitiveNode`` are resolved away.

Node definitions use the ``/object_info`` layout, so the same code works against a live server's
answer or the offline snapshot built from our own classes by :func:`node_definitions`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

WIDGET_TYPES = frozenset({"INT", "FLOAT", "STRING", "BOOLEAN", "COMBO"})
MUTED, BYPASSED = 2, 4
FRONTEND_ONLY_NODES = frozenset({"Reroute", "PrimitiveNode", "Note", "MarkdownNote"})
_ABSOLUTE = re.compile(r"^(/|~[/\\]|[A-Za-z]:[/\\]|\\\\)")


class WorkflowError(ValueError):
    """A workflow that cannot be converted or does not validate; the message names node and input."""


# ----------------------------------------------------------------------------- definitions


def _class_definition(node_id: str, cls: type, display_name: str) -> dict[str, Any]:
    inputs = cls.INPUT_TYPES()
    returns = tuple(cls.RETURN_TYPES)
    return {
        "input": {
            section: dict(inputs.get(section, {}))
            for section in ("required", "optional", "hidden")
            if section in inputs
        },
        "input_order": {
            section: list(inputs[section]) for section in ("required", "optional", "hidden") if section in inputs
        },
        "output": list(returns),
        "output_is_list": list(getattr(cls, "OUTPUT_IS_LIST", (False,) * len(returns))),
        "output_name": list(getattr(cls, "RETURN_NAMES", returns)),
        "name": node_id,
        "display_name": display_name,
        "description": getattr(cls, "DESCRIPTION", ""),
        "category": getattr(cls, "CATEGORY", ""),
        "output_node": bool(getattr(cls, "OUTPUT_NODE", False)),
    }


def node_definitions(classes: Mapping[str, type], display_names: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """``/object_info``-style definitions for node classes (combos stay plain lists, as V1 nodes send them)."""
    return {
        node_id: _class_definition(node_id, cls, display_names.get(node_id, node_id))
        for node_id, cls in classes.items()
    }


def _spec_type(spec: Any) -> Any:
    return spec[0] if isinstance(spec, (list, tuple)) and spec else spec


def _spec_options(spec: Any) -> dict[str, Any]:
    if isinstance(spec, (list, tuple)) and len(spec) > 1 and isinstance(spec[1], dict):
        return spec[1]
    return {}


def _combo_options(spec: Any) -> list[Any] | None:
    kind = _spec_type(spec)
    if isinstance(kind, list):
        return kind
    if kind == "COMBO":
        return list(_spec_options(spec).get("options", []))
    return None


def is_widget(spec: Any) -> bool:
    """True when the frontend shows this input as a widget (not only as a socket)."""
    kind = _spec_type(spec)
    if _spec_options(spec).get("forceInput"):
        return False
    return isinstance(kind, list) or kind in WIDGET_TYPES


def _has_control_widget(name: str, spec: Any) -> bool:
    options = _spec_options(spec)
    kind = _spec_type(spec)
    if not (kind == "INT" or _combo_options(spec) is not None):
        return False
    return bool(options.get("control_after_generate")) or name in ("seed", "noise_seed")


def _ordered_inputs(definition: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for section in ("required", "optional"):
        specs = definition.get("input", {}).get(section, {})
        order = definition.get("input_order", {}).get(section, list(specs))
        out.extend((name, specs[name]) for name in order)
    return out


def widget_slots(definition: Mapping[str, Any]) -> list[str | None]:
    """Widget names in ``widgets_values`` order; ``None`` marks a frontend-only control value."""
    slots: list[str | None] = []
    for name, spec in _ordered_inputs(definition):
        if is_widget(spec):
            slots.append(name)
            if _has_control_widget(name, spec):
                slots.append(None)
    return slots


# ----------------------------------------------------------------------------- UI -> API


def is_ui_format(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("nodes"), list) and isinstance(data.get("links"), list)


def is_api_format(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and bool(data)
        and all(isinstance(v, dict) and "class_type" in v and isinstance(v.get("inputs"), dict) for v in data.values())
    )


class _UiGraph:
    def __init__(self, ui: Mapping[str, Any]):
        self.nodes = {str(n["id"]): n for n in ui["nodes"]}
        self.links: dict[int, tuple[str, int, str, int, str]] = {}
        for link in ui["links"]:
            link_id, src, src_slot, dst, dst_slot, kind = link[:6]
            self.links[int(link_id)] = (str(src), int(src_slot), str(dst), int(dst_slot), kind)

    def source_of(self, link_id: int | None, seen: frozenset[str] = frozenset()) -> tuple[str, int] | Any | None:
        """Follow a link through reroutes, bypassed nodes and primitives to a real output or a value."""
        if link_id is None or int(link_id) not in self.links:
            return None
        src, slot, _dst, _dslot, kind = self.links[int(link_id)]
        if src in seen:
            raise WorkflowError(f"Link cycle through node {src}.")
        node = self.nodes.get(src)
        if node is None:
            raise WorkflowError(f"Link {link_id} starts at node {src}, which is not in the workflow.")
        mode = node.get("mode", 0)
        if node["type"] == "Reroute" or mode == BYPASSED:
            for inp in node.get("inputs", []):
                if node["type"] == "Reroute" or inp.get("type") in (kind, "*"):
                    return self.source_of(inp.get("link"), seen | {src})
            return None
        if node["type"] == "PrimitiveNode":
            return _Value(node.get("widgets_values", [None])[0])
        if mode == MUTED:
            return None
        return (src, slot)


class _Value:
    def __init__(self, value: Any):
        self.value = value


def ui_to_api(ui: Mapping[str, Any], definitions: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Convert a UI workflow to the API prompt ComfyUI's frontend would queue for it."""
    graph = _UiGraph(ui)
    prompt: dict[str, dict[str, Any]] = {}
    for node_id in sorted(graph.nodes, key=lambda k: (len(k), k)):
        node = graph.nodes[node_id]
        kind = node["type"]
        if kind in FRONTEND_ONLY_NODES or node.get("mode", 0) in (MUTED, BYPASSED):
            continue
        definition = definitions.get(kind)
        if definition is None:
            raise WorkflowError(f"Node {node_id} has type {kind!r}, which this ComfyUI does not define.")
        values = list(node.get("widgets_values") or [])
        slots = widget_slots(definition)
        if len(values) < len([s for s in slots if s is not None]):
            raise WorkflowError(f"Node {node_id} ({kind}) has {len(values)} widget values; {len(slots)} expected.")
        inputs: dict[str, Any] = dict(zip((s for s in slots), values, strict=False))
        inputs.pop(None, None)
        for socket in node.get("inputs", []):
            source = graph.source_of(socket.get("link"))
            name = socket["name"]
            if source is None:
                continue
            inputs[name] = source.value if isinstance(source, _Value) else [source[0], source[1]]
        order = [name for name, _ in _ordered_inputs(definition)]
        entry: dict[str, Any] = {
            "inputs": {name: inputs[name] for name in order if name in inputs},
            "class_type": kind,
        }
        entry["_meta"] = {"title": node.get("title") or definition.get("display_name", kind)}
        prompt[node_id] = entry
    return prompt


# ----------------------------------------------------------------------------- API -> UI

# LiteGraph's measures (frontend 1.27): title bar, one socket row, one widget row, a multiline text box.
TITLE_H, SLOT_H, WIDGET_H, TEXT_H = 30, 20, 24, 88
NODE_W, TEXT_W, NOTE_W = 320, 400, 420
GAP_X, GAP_Y, GROUP_PAD, GROUP_TITLE = 60, 30, 20, 50


def stage_of(entry: Mapping[str, Any]) -> str | None:
    """The stage (UI group) a node belongs to: its ``_meta.group``, which the server ignores."""
    return entry.get("_meta", {}).get("group")


def without_stages(prompt: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``prompt`` with the ``_meta.group`` marks removed (what a UI file converts back to)."""
    out: dict[str, dict[str, Any]] = {}
    for node_id, entry in prompt.items():
        copy = dict(entry)
        if "_meta" in copy:
            copy["_meta"] = {k: v for k, v in copy["_meta"].items() if k != "group"}
        out[node_id] = copy
    return out


def _node_size(definition: Mapping[str, Any], sockets: int, title: str) -> list[int]:
    """Width and height LiteGraph needs for the node's sockets and widgets, so nothing is clipped."""
    specs = dict(_ordered_inputs(definition))
    rows = max(sockets, len(definition["output"]))
    height, multiline = TITLE_H + SLOT_H * rows + 10, False
    for slot in widget_slots(definition):
        spec = specs.get(slot) if slot else None
        if spec is not None and _spec_options(spec).get("multiline"):
            height += TEXT_H
            multiline = True
        else:
            height += WIDGET_H
    width = max(TEXT_W if multiline else NODE_W, 12 * len(title) + 60)
    return [width, height]


def _note_size(text: str) -> list[int]:
    lines = sum(1 + len(line) // 55 for line in text.splitlines())
    return [NOTE_W, TITLE_H + 20 + 19 * lines]


def _layout(
    prompt: Mapping[str, Mapping[str, Any]],
    depth: Mapping[str, int],
    sizes: Mapping[str, list[int]],
    left: int,
) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """Positions for every node and one group box per stage.

    Stages are blocks laid out left to right by their first dependency depth; inside a block nodes
    stand in columns by depth, stacked top to bottom.  Nodes without a stage form one block per
    depth.  Blocks never share x ranges, so nodes and groups cannot overlap.
    """
    blocks: dict[tuple[int, str], list[str]] = {}
    first_depth: dict[str, int] = {}
    for node_id in prompt:
        stage = stage_of(prompt[node_id])
        if stage is not None:
            first_depth[stage] = min(first_depth.get(stage, depth[node_id]), depth[node_id])
    for node_id in sorted(prompt, key=lambda k: (len(k), k)):
        stage = stage_of(prompt[node_id])
        key = (first_depth[stage], stage) if stage is not None else (depth[node_id], "")
        blocks.setdefault(key, []).append(node_id)
    positions: dict[str, list[int]] = {}
    groups: list[dict[str, Any]] = []
    x = left
    for (_, stage), members in sorted(blocks.items(), key=lambda item: (item[0][0], item[0][1] == "", item[0][1])):
        pad = GROUP_PAD if stage else 0
        top = GROUP_TITLE if stage else 0
        columns = sorted({depth[m] for m in members})
        cx = x + pad
        bottom = 0
        for column in columns:
            cy = top + pad
            in_column = [m for m in members if depth[m] == column]
            for member in in_column:
                positions[member] = [cx, cy]
                cy += sizes[member][1] + GAP_Y + 20
            bottom = max(bottom, cy - GAP_Y - 20)
            cx += max(sizes[m][0] for m in in_column) + GAP_X
        right = cx - GAP_X + pad
        if stage:
            groups.append(
                {
                    "id": len(groups) + 1,
                    "title": stage,
                    "bounding": [x, 0, right - x, bottom + pad],
                    "color": "#3f789e",
                    "font_size": 24,
                    "flags": {},
                }
            )
        x = right + GAP_X
    return positions, groups


def api_to_ui(
    prompt: Mapping[str, Mapping[str, Any]],
    definitions: Mapping[str, Mapping[str, Any]],
    note: str | None = None,
    models: Mapping[str, list[dict[str, str]]] | None = None,
) -> dict[str, Any]:
    """Lay out an API prompt as a UI workflow whose conversion gives it back (without stage marks).

    ``note`` (Markdown) becomes a ``MarkdownNote`` left of the graph; ``models`` maps node ids to
    their ``properties.models`` entries (name, url, directory), from which the frontend offers
    downloads of missing files; ``_meta.group`` marks become groups around each stage.
    """
    depth: dict[str, int] = {}

    def depth_of(node_id: str, trail: tuple[str, ...] = ()) -> int:
        if node_id in trail:
            raise WorkflowError(f"Cycle through node {node_id}.")
        if node_id not in depth:
            parents = [v[0] for v in prompt[node_id]["inputs"].values() if _is_link(v)]
            depth[node_id] = 1 + max((depth_of(p, (*trail, node_id)) for p in parents), default=-1)
        return depth[node_id]

    for node_id in prompt:
        depth_of(node_id)
    nodes: list[dict[str, Any]] = []
    links: list[list[Any]] = []
    out_links: dict[tuple[str, int], list[int]] = {}
    sizes: dict[str, list[int]] = {}
    for node_id in sorted(prompt, key=lambda k: (len(k), k)):
        entry = prompt[node_id]
        definition = definitions.get(entry["class_type"])
        if definition is None:
            raise WorkflowError(f"Node {node_id} has type {entry['class_type']!r}, which is not defined.")
        specs = dict(_ordered_inputs(definition))
        sockets = []
        for name, value in entry["inputs"].items():
            if _is_link(value):
                link_id = len(links) + 1
                src_type = prompt[value[0]]["class_type"]
                kind = definitions[src_type]["output"][value[1]]
                links.append([link_id, int(value[0]), value[1], int(node_id), len(sockets), kind])
                out_links.setdefault((value[0], value[1]), []).append(link_id)
                socket: dict[str, Any] = {
                    "name": name,
                    "type": kind if not isinstance(kind, list) else "COMBO",
                    "link": link_id,
                }
                if is_widget(specs[name]):
                    socket["widget"] = {"name": name}
                sockets.append(socket)
        widget_values = []
        for slot in widget_slots(definition):
            if slot is None:
                widget_values.append("fixed")
                continue
            value = entry["inputs"].get(slot, _spec_options(specs[slot]).get("default"))
            widget_values.append(None if _is_link(value) else value)
        title = entry.get("_meta", {}).get("title") or definition.get("display_name", entry["class_type"])
        sizes[node_id] = _node_size(definition, len(sockets), title)
        properties: dict[str, Any] = {"Node name for S&R": entry["class_type"]}
        if models and models.get(node_id):
            properties["models"] = [dict(m) for m in models[node_id]]
        node: dict[str, Any] = {
            "id": int(node_id),
            "type": entry["class_type"],
            "pos": [0, 0],
            "size": sizes[node_id],
            "flags": {},
            "order": 0,
            "mode": 0,
            "inputs": sockets,
            "outputs": [],
            "properties": properties,
            "widgets_values": widget_values,
        }
        if title != definition.get("display_name"):
            node["title"] = title
        nodes.append(node)
    left = NOTE_W + GAP_X if note else 0
    positions, groups = _layout(prompt, depth, sizes, left)
    for node in nodes:
        node["pos"] = positions[str(node["id"])]
        definition = definitions[node["type"]]
        node["outputs"] = [
            {
                "name": name,
                "type": kind if not isinstance(kind, list) else "COMBO",
                "links": out_links.get((str(node["id"]), slot), []),
            }
            for slot, (name, kind) in enumerate(zip(definition["output_name"], definition["output"], strict=True))
        ]
    for order, node_id in enumerate(sorted(depth, key=lambda k: (depth[k], len(k), k))):
        next(n for n in nodes if str(n["id"]) == node_id)["order"] = order
    if note:
        nodes.append(
            {
                "id": max((n["id"] for n in nodes), default=0) + 1,
                "type": "MarkdownNote",
                "pos": [0, 0],
                "size": _note_size(note),
                "flags": {},
                "order": len(nodes),
                "mode": 0,
                "inputs": [],
                "outputs": [],
                "title": "Read me",
                "properties": {},
                "widgets_values": [note],
                "color": "#432",
                "bgcolor": "#653",
            }
        )
    return {
        "last_node_id": max((n["id"] for n in nodes), default=0),
        "last_link_id": len(links),
        "nodes": nodes,
        "links": links,
        "groups": groups,
        "config": {},
        "extra": {},
        "version": 0.4,
    }


def overlapping_nodes(ui: Mapping[str, Any]) -> list[tuple[int, int]]:
    """Pairs of node ids whose boxes (title bar included) overlap in a UI workflow."""

    def box(node: Mapping[str, Any]) -> tuple[float, float, float, float]:
        (x, y), (w, h) = node["pos"], node["size"]
        return x, y - TITLE_H, x + w, y + h

    nodes = list(ui["nodes"])
    pairs = []
    for i, a in enumerate(nodes):
        ax0, ay0, ax1, ay1 = box(a)
        for b in nodes[i + 1 :]:
            bx0, by0, bx1, by1 = box(b)
            if ax0 < bx1 and bx0 < ax1 and ay0 < by1 and by0 < ay1:
                pairs.append((a["id"], b["id"]))
    return pairs


def group_members(ui: Mapping[str, Any], group: Mapping[str, Any]) -> set[int]:
    """Ids of the nodes lying wholly inside ``group``'s box (how the frontend moves them with it)."""
    gx, gy, gw, gh = group["bounding"]
    inside = set()
    for node in ui["nodes"]:
        (x, y), (w, h) = node["pos"], node["size"]
        if gx <= x and x + w <= gx + gw and gy <= y - TITLE_H and y + h <= gy + gh:
            inside.add(node["id"])
    return inside


def _is_link(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int)


# ----------------------------------------------------------------------------- validation


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
