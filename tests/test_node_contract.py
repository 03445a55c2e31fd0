"""Every registered node follows the pack's contract (IDs, categories, docs, tooltips, signatures)."""

from __future__ import annotations

import inspect
import re

import pytest
from gameanim import NODE_CLASS_MAPPINGS, NODE_DISPLAY_NAME_MAPPINGS

NODES = sorted(NODE_CLASS_MAPPINGS.items())


def test_pack_registers_nodes():
    assert NODES, "the pack registers no nodes"


@pytest.mark.parametrize("node_id,cls", NODES, ids=[n for n, _ in NODES])
def test_node_contract(node_id, cls):
    assert node_id.startswith("GameAnim"), node_id
    assert node_id in NODE_DISPLAY_NAME_MAPPINGS and NODE_DISPLAY_NAME_MAPPINGS[node_id].strip()
    assert cls.CATEGORY == "GameAnim" or cls.CATEGORY.startswith("GameAnim/"), cls.CATEGORY
    assert isinstance(cls.DESCRIPTION, str) and len(cls.DESCRIPTION.strip()) >= 20, "DESCRIPTION missing or too short"

    inputs = cls.INPUT_TYPES()
    assert set(inputs) <= {"required", "optional", "hidden"}
    for section in ("required", "optional"):
        for name, spec in inputs.get(section, {}).items():
            assert isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], dict), (
                f"{name}: spec must be (TYPE, options)"
            )
            assert str(spec[1].get("tooltip", "")).strip(), f"input {name!r} has no tooltip"
            kind = spec[0]
            assert isinstance(kind, (str, list)), f"input {name!r} type must be a string or a combo list"
            if isinstance(kind, list) and kind:
                if "default" in spec[1]:
                    assert spec[1]["default"] in kind, f"combo {name!r} default not in its options"

    returns = cls.RETURN_TYPES
    assert isinstance(returns, tuple)
    for attr in ("RETURN_NAMES", "OUTPUT_TOOLTIPS", "OUTPUT_IS_LIST"):
        if hasattr(cls, attr):
            assert len(getattr(cls, attr)) == len(returns), f"{attr} length differs from RETURN_TYPES"
    assert returns or getattr(cls, "OUTPUT_NODE", False), "a node without outputs must be an OUTPUT_NODE"

    function = getattr(cls, cls.FUNCTION)
    params = inspect.signature(function).parameters
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    declared = [n for s in ("required", "optional", "hidden") for n in inputs.get(s, {})]
    for name in declared:
        assert takes_kwargs or name in params, f"{cls.FUNCTION}() does not accept input {name!r}"
    for name, param in params.items():
        if name == "self" or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        assert name in declared, f"{cls.FUNCTION}() parameter {name!r} is not a declared input"
        if name not in inputs.get("required", {}):
            assert param.default is not param.empty, f"optional input {name!r} needs a default in {cls.FUNCTION}()"

    if hasattr(cls, "IS_CHANGED"):
        changed = inspect.signature(cls.IS_CHANGED).parameters
        assert any(p.kind is p.VAR_KEYWORD for p in changed.values()), (
            "IS_CHANGED must take **kwargs (hidden inputs arrive too)"
        )
    if hasattr(cls, "VALIDATE_INPUTS"):
        assert inspect.ismethod(cls.VALIDATE_INPUTS) or isinstance(
            inspect.getattr_static(cls, "VALIDATE_INPUTS"), (classmethod, staticmethod)
        )


HOST_MODULES = re.compile(
    r"^\s*(?:import|from)\s+(?:comfy|comfy_extras|comfy_api|comfy_execution|folder_paths|server|nodes|execution|utils)(?:[.\s]|$)",
    re.M,
)


def test_node_modules_do_not_import_comfyui(pack_root, python_files):
    """Only core/host.py may import ComfyUI's modules; everything else stays importable without ComfyUI."""
    offenders = []
    for path in python_files:
        rel = path.relative_to(pack_root).as_posix()
        if rel == "core/host.py" or rel.startswith("tests/"):
            continue
        offenders += [f"{rel}: {m.group(0).strip()}" for m in HOST_MODULES.finditer(path.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_library_modules_do_not_use_host(pack_root):
    """Pure library modules take progress callbacks and devices as arguments instead of asking the host."""
    offenders = []
    for path in list((pack_root / "nodes").rglob("*.py")) + list((pack_root / "trainers").rglob("*.py")):
        if path.name.endswith("nodes.py") or path == pack_root / "nodes" / "common.py":  # the adapters and their edge
            continue
        text = path.read_text(encoding="utf-8")
        if "import host" in text or ".host import" in text:
            offenders.append(path.relative_to(pack_root).as_posix())
    assert not offenders, offenders
