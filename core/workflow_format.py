"""ComfyUI workflow formats: node definitions, UI → API conversion, API → UI layout, validation.

The browser saves *UI* workflows (positional ``widgets_values``, a link table) and ``POST /prompt``
takes *API* workflows (inputs by name, links as ``[node_id, slot]``).  ComfyUI's backend has no
converter, so the headless client and our workflow tests need one.  Conversion follows the
frontend's rules (frontend 1.27): widgets are the inputs whose type is a primitive or a combo,
in ``required`` then ``optional`` order; an INT/COMBO widget with ``control_after_generate`` (or
named ``seed``/``noise_seed``) is followed by one extra frontend-only value; links into a widget
override its value; missing widget values (files saved before a node gained an input) take the
input's default; muted nodes (mode 2) are dropped with every link to them; bypassed nodes (mode 4)
pass an input of the output's type through; ``Reroute`` and ``PrimitiveNode`` are resolved away;
subgraphs (``definitions.subgraphs``, nested too) expand into nodes with execution ids
``"<instance>:<node>"``, their inputs and outputs joined to the outer links, and widgets promoted to
a subgraph take the instance's values.  ``tests/integration/test_frontend_conversion.py`` checks all
of this against the real frontend's ``app.graphToPrompt()`` on frontend-saved workflows.

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


SUBGRAPH_INPUT, SUBGRAPH_OUTPUT = -10, -20
Link = tuple[str, int, str, int, Any]


class _Value:
    """A constant reaching an input through a primitive node or a widget promoted to a subgraph."""

    def __init__(self, value: Any):
        self.value = value


Source = tuple[str, int] | _Value | None


def _link_table(raw: list[Any]) -> dict[int, Link]:
    """Links as ``id -> (origin, origin_slot, target, target_slot, type)``; graphs store arrays, subgraphs objects."""
    table: dict[int, Link] = {}
    for link in raw or []:
        if isinstance(link, Mapping):
            fields = [link.get(k) for k in ("id", "origin_id", "origin_slot", "target_id", "target_slot", "type")]
        else:
            fields = list(link[:6])
        link_id, origin, origin_slot, target, target_slot, kind = fields
        table[int(link_id)] = (str(origin), int(origin_slot), str(target), int(target_slot), kind)
    return table


class _Scope:
    """One graph level: the root graph, or one subgraph instance's copy of its definition.

    Execution ids follow the frontend: a node inside instance 12 is ``"12:5"``, nested ``"12:7:5"``.
    """

    def __init__(self, graph: Mapping[str, Any], prefix: str = "", instance: Any = None, parent: Any = None):
        self.nodes = {str(n["id"]): n for n in graph.get("nodes", [])}
        self.links = _link_table(graph.get("links", []))
        self.graph = graph
        self.prefix = prefix
        self.instance: Mapping[str, Any] | None = instance
        self.parent: _Scope | None = parent


def _default_value(spec: Any) -> Any:
    """The value a new widget starts with in the frontend (the spec's default, else the type's zero)."""
    options = _spec_options(spec)
    if "default" in options:
        return options["default"]
    combo = _combo_options(spec)
    if combo is not None:
        return combo[0] if combo else None
    kind = _spec_type(spec)
    if kind in ("INT", "FLOAT"):
        return options.get("min", 0)
    return {"STRING": "", "BOOLEAN": False}.get(kind)


def _widget_values(node: Mapping[str, Any], definition: Mapping[str, Any]) -> dict[str, Any]:
    """Widget name -> value: saved values by position (by name when saved as a dict), defaults for the rest.

    Files saved before a node gained an input have fewer values; the frontend keeps the new widget's default.
    """
    saved = node.get("widgets_values")
    specs = dict(_ordered_inputs(definition))
    values: dict[str, Any] = {}
    positional = list(saved) if isinstance(saved, list) else []
    for index, slot in enumerate(widget_slots(definition)):
        if slot is None:
            continue
        if isinstance(saved, Mapping) and slot in saved:
            values[slot] = saved[slot]
        elif index < len(positional):
            values[slot] = positional[index]
        else:
            values[slot] = _default_value(specs[slot])
    return values


class _Converter:
    """``app.graphToPrompt()`` of the ComfyUI frontend (1.27), without a browser."""

    def __init__(self, ui: Mapping[str, Any], definitions: Mapping[str, Mapping[str, Any]]):
        self.definitions = definitions
        self.subgraphs = {s["id"]: s for s in (ui.get("definitions") or {}).get("subgraphs", [])}
        self.root = _Scope(ui)

    def inner_scope(self, scope: _Scope, node: Mapping[str, Any]) -> _Scope:
        """The scope of subgraph instance ``node`` of ``scope`` (refused when a subgraph contains itself)."""
        outer: _Scope | None = scope
        while outer is not None:
            if outer.instance is not None and outer.instance["type"] == node["type"]:
                raise WorkflowError(f"Subgraph {node['type']} contains itself (node {scope.prefix}{node['id']}).")
            outer = outer.parent
        return _Scope(self.subgraphs[node["type"]], f"{scope.prefix}{node['id']}:", node, scope)

    # ---- the prompt

    def prompt(self) -> dict[str, dict[str, Any]]:
        prompt: dict[str, dict[str, Any]] = {}
        self._collect(self.root, prompt)
        # The frontend drops every link to a node that is not in the prompt (muted nodes, for instance).
        for entry in prompt.values():
            for name, value in list(entry["inputs"].items()):
                if _is_link(value) and value[0] not in prompt:
                    del entry["inputs"][name]
        return prompt

    def _collect(self, scope: _Scope, prompt: dict[str, dict[str, Any]]) -> None:
        for node_id in sorted(scope.nodes, key=lambda k: (len(k), k)):
            node = scope.nodes[node_id]
            kind = node["type"]
            if kind in FRONTEND_ONLY_NODES or node.get("mode", 0) in (MUTED, BYPASSED):
                continue
            if kind in self.subgraphs:
                self._collect(self.inner_scope(scope, node), prompt)
                continue
            definition = self.definitions.get(kind)
            if definition is None and kind.startswith(("workflow>", "workflow/")):
                raise WorkflowError(
                    f"Node {scope.prefix}{node_id} is a legacy group node ({kind!r}), which this converter does not "
                    "expand. Open the workflow in ComfyUI, convert the group node to a subgraph and save it again."
                )
            if definition is None:
                raise WorkflowError(
                    f"Node {scope.prefix}{node_id} has type {kind!r}, which this ComfyUI does not define."
                )
            inputs = _widget_values(node, definition)
            for socket in node.get("inputs") or []:
                if socket.get("link") is None:
                    continue
                source = self.resolve_link(scope, socket["link"])
                name = socket.get("name")
                if source is None or name is None:
                    continue
                inputs[name] = source.value if isinstance(source, _Value) else [source[0], source[1]]
            order = [name for name, _ in _ordered_inputs(definition)]
            prompt[f"{scope.prefix}{node_id}"] = {
                "inputs": {name: _wrap_list(inputs[name]) for name in order if name in inputs},
                "class_type": kind,
                "_meta": {"title": node.get("title") or definition.get("display_name", kind)},
            }

    # ---- following links to where a value comes from

    def resolve_link(self, scope: _Scope, link_id: Any, seen: frozenset[tuple[str, str]] = frozenset()) -> Source:
        """Follow a link through reroutes, bypassed nodes, primitives and subgraph borders to a real output."""
        link = scope.links.get(int(link_id))
        if link is None:
            return None
        origin, slot, _target, _target_slot, kind = link
        if origin == str(SUBGRAPH_INPUT):
            return self._subgraph_input(scope, slot, seen)
        if (scope.prefix, origin) in seen:
            raise WorkflowError(f"Link cycle through node {scope.prefix}{origin}.")
        node = scope.nodes.get(origin)
        if node is None:
            raise WorkflowError(f"Link {link_id} starts at node {scope.prefix}{origin}, which is not in the workflow.")
        return self._output(scope, node, slot, kind, seen | {(scope.prefix, origin)})

    def _output(self, scope: _Scope, node: Mapping[str, Any], slot: int, kind: Any, seen: Any) -> Source:
        mode = node.get("mode", 0)
        sockets = node.get("inputs") or []
        if node["type"] == "Reroute":
            return self.resolve_link(scope, sockets[0]["link"], seen) if sockets and sockets[0].get("link") else None
        if mode == BYPASSED:
            outputs = node.get("outputs") or []
            wanted = outputs[slot].get("type", kind) if slot < len(outputs) else kind
            # The frontend prefers the input at the output's index, then the first input of the same type.
            for index in (slot, *range(len(sockets))):
                if index < len(sockets) and sockets[index].get("type") == wanted:
                    link = sockets[index].get("link")
                    return self.resolve_link(scope, link, seen) if link is not None else None
            return None
        if node["type"] == "PrimitiveNode":
            return _Value((node.get("widgets_values") or [None])[0])
        if node["type"] in self.subgraphs and mode != MUTED:
            inner = self.inner_scope(scope, node)
            outputs = inner.graph.get("outputs", [])
            link_ids = outputs[slot].get("linkIds") if slot < len(outputs) else None
            return self.resolve_link(inner, link_ids[0], seen) if link_ids else None
        return (f"{scope.prefix}{node['id']}", slot)

    def _subgraph_input(self, scope: _Scope, index: int, seen: Any) -> Source:
        """An input of a subgraph: the instance's link in the parent graph, else the widget promoted to it."""
        instance, parent = scope.instance, scope.parent
        inputs = scope.graph.get("inputs", [])
        if instance is None or parent is None or index >= len(inputs):
            return None
        name = inputs[index].get("name")
        socket = next((s for s in instance.get("inputs") or [] if s.get("name") == name), None)
        if socket is not None and socket.get("link") is not None:
            return self.resolve_link(parent, socket["link"], seen)
        promoted = [i for i, spec in enumerate(inputs) if spec.get("type") in WIDGET_TYPES]
        if index not in promoted:
            return None
        values = instance.get("widgets_values") or []
        position = promoted.index(index)
        if position < len(values):
            return _Value(values[position])
        return None


def _wrap_list(value: Any) -> Any:
    """List-valued widgets are sent as ``{"__value__": [...]}`` so the server does not read them as links."""
    return {"__value__": value} if isinstance(value, list) and not _is_link(value) else value


def ui_to_api(ui: Mapping[str, Any], definitions: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Convert a UI workflow to the API prompt ComfyUI's frontend would queue for it (``app.graphToPrompt()``).

    Subgraphs are expanded (their nodes get the frontend's execution ids ``"<instance>:<node>"``), missing
    widget values take the node's defaults, links through reroutes, bypassed nodes, primitives and subgraph
    borders are followed, muted and bypassed nodes are left out with every link to them.
    """
    return _Converter(ui, definitions).prompt()


# ----------------------------------------------------------------------------- API -> UI

# LiteGraph's measures (frontend 1.27): title bar, one socket row, one widget row, a multiline text box.
TITLE_H, SLOT_H, WIDGET_H, TEXT_H = 30, 20, 24, 88
NODE_W, TEXT_W, NOTE_W = 320, 400, 420
# Room below an output node's widgets for what it shows after a run (the frontend's image preview or our
# player): without it the node grows over its neighbour once it has run.
PREVIEW_H = 300
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
    if definition.get("output_node"):
        height += PREVIEW_H
    return [width, height]


def _note_size(text: str) -> list[int]:
    lines = sum(1 + len(line) // 55 for line in text.splitlines())
    return [NOTE_W, TITLE_H + 20 + 19 * lines]


def _stacks(members: list[str], grows: set[str]) -> list[list[str]]:
    """A column's nodes as stacks side by side.  A node that grows after a run (an output node showing its
    images, whose height depends on what it made) stands at the bottom of its stack, one per stack, so it
    grows into free space instead of over the node below it."""
    fixed = [m for m in members if m not in grows]
    growing = [m for m in members if m in grows]
    return [fixed + growing[:1], *([m] for m in growing[1:])]


def _layout(
    prompt: Mapping[str, Mapping[str, Any]],
    depth: Mapping[str, int],
    sizes: Mapping[str, list[int]],
    left: int,
    grows: set[str],
) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """Positions for every node and one group box per stage.

    Stages are blocks laid out left to right by their first dependency depth; inside a block nodes
    stand in columns by depth, stacked top to bottom (see :func:`_stacks` for the nodes in ``grows``).
    Nodes without a stage form one block per depth.  Blocks never share x ranges, so nodes and
    groups cannot overlap.
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
            for stack in _stacks([m for m in members if depth[m] == column], grows):
                cy = top + pad
                for member in stack:
                    positions[member] = [cx, cy]
                    cy += sizes[member][1] + GAP_Y + 20
                bottom = max(bottom, cy - GAP_Y - 20)
                cx += max(sizes[m][0] for m in stack) + GAP_X
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
    grows = {k for k, entry in prompt.items() if definitions[entry["class_type"]].get("output_node")}
    positions, groups = _layout(prompt, depth, sizes, left, grows)
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
