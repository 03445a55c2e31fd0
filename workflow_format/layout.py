"""API → UI: a readable LiteGraph layout (stages as groups, notes, sized nodes) for an API workflow.

``scripts/workflow_ui.py`` writes the UI twin of every authored ``workflows/api/X.json`` with
:func:`api_to_ui`; the layout checks (:func:`overlapping_nodes`, :func:`group_members`) are what the
workflow tests assert on the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .convert import WorkflowError, _is_link, _ordered_inputs, _spec_options, is_widget, widget_slots

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
