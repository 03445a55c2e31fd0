"""The edge every node adapter (``nodes/*/comfy_nodes.py``, ``trainers/comfy_nodes.py``) shares.

Input specs and their tooltips (``image``, ``mask``, ``mask_is``, ``seed``), numbered output names, and the handle of a
loaded multi-part checkpoint (checkpoint list, resolve, parts on the device).  Adapters share through here and
``core/``, never through each other.  Kept free of ComfyUI imports (``core/host.py`` speaks to ComfyUI, with plain
fallbacks), so node classes stay importable and testable in plain Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import host
from ..core.errors import ModelFileError
from ..core.frames import MASK_POLARITIES
from ..core.paths import confined, sanitize_relative

CATEGORY_ROOT = "GameAnim"


def field(kind: Any, tooltip: str, **options: Any) -> tuple[Any, dict[str, Any]]:
    """An ``INPUT_TYPES`` entry; the tooltip is mandatory so no input ships without one."""
    return (kind, {"tooltip": tooltip, **options})


def category(*parts: str) -> str:
    """A node category under the single pack root, e.g. ``category("Sprite", "Export")``."""
    return "/".join((CATEGORY_ROOT, *parts))


# ----------------------------------------------------------------------------- common inputs

IMAGE_TIP = "Frames as an IMAGE batch [T,H,W,3] (a 4th channel is used as alpha when no mask is given)."
MASK_TIP = "Alpha per frame (MASK [T,H,W]), e.g. from Remove Background or a segmentation node."
OPTIONAL_MASK_TIP = (
    "Optional alpha per frame (MASK [T,H,W]). Without it a 4-channel IMAGE's 4th channel is the alpha, "
    "else the frames are opaque, so VC2 Decode or a video loader connects directly."
)
MASK_IS_TIP = (
    "What the MASK means: 'alpha' = 1 is opaque (GameAnim's Remove Background / Stabilise outputs); "
    "'transparency' = 1 is transparent (core Load Image's MASK, Join Image with Alpha)."
)
SEED = field(
    "INT",
    "Seed of the CPU noise generator: the same seed gives the same clip on any device.",
    default=123,
    min=0,
    max=2**63 - 1,
    control_after_generate=True,
)


def mask_is_input() -> tuple[Any, dict[str, Any]]:
    """The ``mask_is`` input that says which way a connected MASK points (every optional mask has one)."""
    return field(list(MASK_POLARITIES), MASK_IS_TIP, default="alpha")


def mask_inputs() -> dict[str, Any]:
    """The optional ``mask`` + ``mask_is`` inputs of the nodes that take any IMAGE."""
    return {"mask": field("MASK", OPTIONAL_MASK_TIP), "mask_is": mask_is_input()}


# ----------------------------------------------------------------------------- outputs


def next_free_name(prefix: str) -> str:
    """``<prefix>_NNNNN`` under ComfyUI's output folder, numbered above every file already saved with that prefix."""
    rel = sanitize_relative(prefix)
    parent = confined(host.output_dir(), rel).parent
    stem = Path(rel).name
    pattern = re.compile(re.escape(stem) + r"_(\d{5})")
    names = [p.name for p in parent.iterdir()] if parent.is_dir() else []
    used = [int(m.group(1)) for n in names if (m := pattern.match(n))]
    return f"{rel}_{(max(used) + 1) if used else 1:05d}"


FILES_KEY = "files"
"""The ``ui`` key listing the files a node wrote that are not images (atlases, ``.tres``, ``.meta``, JSON, saves).

ComfyUI copies every ``ui`` key into the prompt's history; each entry is ``{filename, subfolder, type:
"output"}``, the form ``/view`` serves, so any client (ours, ComfyUI's API examples) fetches them like images.
Images stay under ``images`` (the frontend previews those; a JSON file there would show as a broken image).
"""


def output_entry(path: Path) -> dict[str, str]:
    """The ``/view`` entry of a file under ComfyUI's output folder: ``{filename, subfolder, type: "output"}``."""
    rel = Path(path).resolve().relative_to(host.output_dir().resolve())
    return {
        "filename": rel.name,
        "subfolder": rel.parent.as_posix() if rel.parent != Path(".") else "",
        "type": "output",
    }


def output_files(paths: list[Path]) -> dict[str, list[dict[str, str]]]:
    """``{"files": [...]}`` for a node's ``ui``: the entries of ``paths`` (files under the output folder)."""
    return {FILES_KEY: [output_entry(p) for p in paths]}


# ----------------------------------------------------------------------------- loaded checkpoints


def checkpoint_names(folders: tuple[str, ...]) -> list[str]:
    """The files of the first model folder that has them, then the others', without repeats (a loader's list)."""
    names: list[str] = []
    for key in folders:
        for name in host.model_list(key):
            if name not in names:
                names.append(name)
    return names


def resolve_checkpoint(name: str, folders: tuple[str, ...]) -> Path:
    """The path of ``name`` in the first of ``folders`` that has it; else the last folder's explanatory error."""
    last: ModelFileError | None = None
    for key in folders:
        try:
            return host.model_path(key, name)
        except ModelFileError as exc:
            last = exc
    raise last if last is not None else ModelFileError(f"{name} not found.")


@dataclass
class LoadedModel:
    """What travels on a model link of a multi-part checkpoint (``VC2_MODEL``, ``DYNAMICRAFTER_MODEL``): the model,
    its host-managed parts and the memory policy.  ``roles`` maps each part attribute to the host's device policy."""

    model: Any
    offload: bool
    name: str
    family: str
    roles: Mapping[str, str]

    def part(self, key: str) -> host.ManagedModel:
        """The host-managed handle of part ``key`` (kept on the module, made on first use)."""
        return host.manage(getattr(self.model, key), f"{self.family} {key} ({self.name})", self.roles[key])

    @contextmanager
    def on_device(self, key: str) -> Iterator[Any]:
        """Have part ``key`` loaded by the host for the body; unloaded afterwards if ``offload`` is on."""
        with host.on_device(self.part(key), keep_loaded=not self.offload) as device:
            yield device


def load_parts(model: Any, name: str, offload: bool, family: str, roles: Mapping[str, str]) -> LoadedModel:
    """A :class:`LoadedModel` with every part the checkpoint has put under the host's memory manager."""
    loaded = LoadedModel(model=model, offload=offload, name=name, family=family, roles=roles)
    for key in roles:
        if getattr(model, key) is not None:
            loaded.part(key)
    return loaded
