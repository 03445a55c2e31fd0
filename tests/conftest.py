"""Import the pack by path as ``gameanim``, the way ComfyUI and outside checks do (never by install)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _import_pack():
    if "gameanim" in sys.modules:
        return sys.modules["gameanim"]
    spec = importlib.util.spec_from_file_location(
        "gameanim", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["gameanim"] = module
    spec.loader.exec_module(module)
    return module


gameanim = _import_pack()


@pytest.fixture(scope="session")
def pack():
    """The imported pack module (``NODE_CLASS_MAPPINGS`` etc.)."""
    return gameanim


@pytest.fixture(scope="session")
def pack_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def definitions(pack):
    """``/object_info``-style definitions of our nodes, built offline from the classes."""
    from gameanim.workflow_format import node_definitions

    return node_definitions(pack.NODE_CLASS_MAPPINGS, pack.NODE_DISPLAY_NAME_MAPPINGS)


@pytest.fixture(scope="session")
def core_definitions():
    """A committed snapshot of the ComfyUI core nodes our workflows use (checked live by the integration tests)."""
    import json

    return json.loads((ROOT / "tests" / "data" / "core_object_info.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def all_definitions(definitions, core_definitions):
    return {**core_definitions, **definitions}
