"""The rooms of the pack and what each may import (``docs/architecture.md``).

A node adapter (``comfy_nodes.py``) is a thin edge over its own feature: it never imports another feature's adapter,
and no module imports a ``_private`` name of another feature; what features share lives in ``core/`` or
``nodes/common.py``.  The checks read the import statements (relative imports resolved against the module's own
package), so a lazy import inside a function counts as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ADAPTER = "comfy_nodes"


def feature_of(module: str, features: set[str]) -> str | None:
    """The feature a dotted module (``nodes.sprite.matte``) belongs to: the longest feature package it lies in."""
    best = None
    for feature in features:
        if (module == feature or module.startswith(feature + ".")) and (best is None or len(feature) > len(best)):
            best = feature
    return best


def imports_of(source: str, module: str, is_package: bool) -> list[tuple[str, str | None, int]]:
    """``(imported module, imported name or None, line)`` for every import in ``source``, relative ones resolved."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found += [(target, alias.name, node.lineno) for alias in node.names]
    return found


def violations(modules: dict[str, tuple[str, bool]], features: set[str]) -> list[str]:
    """The imports that break the rules, as ``module:line: what``.  ``modules`` maps a dotted name to (source,
    is_package); ``features`` are the dotted names of the feature packages (each holds one adapter)."""
    found = set()
    for module, (source, is_package) in modules.items():
        own = feature_of(module, features)
        if own is None:
            continue
        for target, name, line in imports_of(source, module, is_package):
            for candidate in (
                (target, f"{target}.{name}") if name else (target,)
            ):  # ``from . import x``: x may be a module
                other = feature_of(candidate, features)
                if other not in (None, own) and candidate.rsplit(".", 1)[-1] == ADAPTER:
                    found.add(f"{module}:{line}: imports the adapter {candidate}")
            if name and name.startswith("_") and feature_of(target, features) not in (None, own):
                found.add(f"{module}:{line}: imports the private {target}.{name}")
    return sorted(found)


def pack_modules(root: Path) -> tuple[dict[str, tuple[str, bool]], set[str]]:
    modules: dict[str, tuple[str, bool]] = {}
    features: set[str] = set()
    for folder in ("nodes", "trainers"):
        for path in (root / folder).rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            modules[".".join(parts)] = (path.read_text(encoding="utf-8"), is_package)
            if path.stem == ADAPTER:
                features.add(".".join(parts[:-1]))
    return modules, features


def test_every_feature_has_one_adapter(pack_root):
    _, features = pack_modules(pack_root)
    assert {"nodes.sprite", "nodes.animegamer.decoder", "nodes.animegamer.mllm", "trainers"} <= features
    assert "nodes.animegamer" not in features  # two features, each with its own adapter


def test_no_feature_reaches_into_another(pack_root):
    modules, features = pack_modules(pack_root)
    assert not violations(modules, features)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("nodes.timing.comfy_nodes", "from ..sprite.comfy_nodes import IMAGE_TIP\n", "imports the adapter"),
        ("nodes.timing.comfy_nodes", "from ..sprite import comfy_nodes\n", "imports the adapter"),
        (
            "nodes.dynamicrafter.comfy_nodes",
            "def f():\n    from ..vc2.comfy_nodes import SEED\n",
            "imports the adapter",
        ),
        ("nodes.dynamicrafter.model", "from ..vc2.checkpoint import _resolve\n", "imports the private"),
        ("nodes.animegamer.mllm.step", "from ...animegamer.decoder.shot import _plan\n", "imports the private"),
        ("nodes.pose.render", "import gameanim.nodes.sprite.comfy_nodes\n", None),  # absolute: not the pack's form
    ],
)
def test_the_check_catches_reaching_in(module, source, expected):
    features = {"nodes.sprite", "nodes.timing", "nodes.vc2", "nodes.dynamicrafter", "nodes.pose"}
    features |= {"nodes.animegamer.decoder", "nodes.animegamer.mllm"}
    found = violations({module: (source, False)}, features)
    if expected is None:
        assert not found
    else:
        assert len(found) == 1 and expected in found[0], found


def test_the_check_allows_sharing_through_common_and_core():
    source = "from ..common import field\nfrom ...core.frames import to_tensor\nfrom .matte import _lab\n"
    assert not violations({"nodes.sprite.comfy_nodes": (source, False)}, {"nodes.sprite", "nodes.timing"})
