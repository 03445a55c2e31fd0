"""Import the pack by path as ``gameanim``, the way ComfyUI and outside checks do (never by install).

The ``scripts/`` folder is put on ``sys.path`` so tests import the scripts (and their shared
``_pack`` helper) as plain modules.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


sys.path.insert(0, str(ROOT / "scripts"))
from _pack import import_pack  # noqa: E402 - needs the scripts folder on sys.path

gameanim = import_pack()
if not ROOT.name.isidentifier():
    # pytest collects the clone's root as a package and imports its __init__.py; when the folder's name is no
    # Python name (a clone in ``ci-main``) it imports that file as a top-level ``__init__``, where the pack's
    # relative imports cannot resolve.  That module is the pack already imported here.
    sys.modules.setdefault("__init__", gameanim)


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


def pack_python_files() -> list[Path]:
    """The pack's own Python files: hidden folders (venvs, .git) and node_modules are not ours."""
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not any(part.startswith(".") or part == "node_modules" for part in path.relative_to(ROOT).parts[:-1])
    )


@pytest.fixture(scope="session")
def python_files() -> list[Path]:
    return pack_python_files()
