"""Node definitions and UI → API conversion of ComfyUI workflows.

The browser saves *UI* workflows (positional ``widgets_values``, a link table) and ``POST /prompt``
takes *API* workflows (inputs by name, links as ``[node_id, slot]``).  ComfyUI's backend has no
converter, so the headless client and our workflow tests need one.  Conversion follows the
frontend's rules (frontend 1.27): widgets are the inputs whose type is a primitive or a combo,
in ``required`` then ``optional`` order; an INT/COMBO widget with ``control_after_generate`` (an INT
named ``seed``/``noise_seed`` unless it says ``control_after_generate: False``) is followed by one extra
frontend-only value; links into a widget
override its value; missing widget values (files saved before a node gained an input) take the
input's default; DOM widgets of the frontend's own extensions (RecordAudio's ``AUDIO_RECORD``) send what
their ``serializeValue()`` gives for a loaded file (:data:`DOM_WIDGETS`); muted nodes (mode 2) are dropped with every link to them; bypassed nodes (mode 4)
pass an input of the output's type through; ``Reroute`` and ``PrimitiveNode`` are resolved away;
subgraphs (``definitions.subgraphs``, nested too) expand into nodes with execution ids
``"<instance>:<node>"``, their inputs and outputs joined to the outer links, and widgets promoted to
a subgraph take the instance's values.  ``tests/integration/test_frontend_conversion.py`` checks all
of this against the real frontend's ``app.graphToPrompt()`` on frontend-saved workflows.

Node definitions use the ``/object_info`` layout, so the same code works against a live server's
answer or the offline snapshot built from our own classes by :func:`node_definitions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

WIDGET_TYPES = frozenset({"INT", "FLOAT", "STRING", "BOOLEAN", "COMBO"})
DOM_WIDGETS: dict[str, tuple[Any, int]] = {
    # The frontend's Comfy.RecordAudio extension: a DOM recorder widget whose value is "" until something is
    # recorded in that browser tab (always so for a workflow loaded from a file), plus a record button (not sent).
    "AUDIO_RECORD": ("", 2),
}
"""Input types the frontend's own extensions turn into DOM widgets: ``type -> (value sent, widgets_values slots)``.

``graphToPrompt`` sends the DOM widget's ``serializeValue()``, not the saved ``widgets_values`` entry, so the
value is fixed here; the slot count keeps the positions of the widgets after it.
"""
MUTED, BYPASSED = 2, 4
FRONTEND_ONLY_NODES = frozenset({"Reroute", "PrimitiveNode", "Note", "MarkdownNote"})


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
    return isinstance(kind, list) or kind in WIDGET_TYPES or _dom_widget(spec) is not None


def _dom_widget(spec: Any) -> tuple[Any, int] | None:
    kind = _spec_type(spec)
    return DOM_WIDGETS.get(kind) if isinstance(kind, str) else None


def _has_control_widget(name: str, spec: Any) -> bool:
    """The frontend's rule: an INT gets the control combo when ``control_after_generate`` says so, and when the
    spec does not say (``None``) if it is named ``seed``/``noise_seed``; a COMBO only when the spec says so."""
    options = _spec_options(spec)
    if _spec_type(spec) == "INT":
        wanted = options.get("control_after_generate")
        return bool(wanted) if wanted is not None else name in ("seed", "noise_seed")
    return _combo_options(spec) is not None and bool(options.get("control_after_generate"))


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
            dom = _dom_widget(spec)
            slots.extend([None] * ((dom[1] - 1) if dom else 0))
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
        dom = _dom_widget(specs[slot])
        if dom is not None:
            values[slot] = dom[0]
        elif isinstance(saved, Mapping) and slot in saved:
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


def _is_link(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int)
