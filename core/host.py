"""The one place that talks to the ComfyUI host process.

Inside ComfyUI this module uses ``folder_paths``, ``comfy.utils.ProgressBar``,
``comfy.model_management`` and ``server.PromptServer``; outside it (tests, headless scripts) it
falls back to plain behaviour: folders under ``$GAMEANIM_BASE_DIR`` (default: the current
directory), a silent progress bar, the best local torch device.  Library code never imports this
module; node classes pass :func:`progress` callbacks and device choices down to it.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import ModelFileError
from .model_folders import MODEL_FOLDERS, describe_expected
from .paths import confined, sanitize_relative
from .progress import ProgressFn

logger = logging.getLogger("gameanim")


def _optional(name: str) -> ModuleType | None:
    """Import a ComfyUI module if the host provides it; None in plain Python."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _folder_paths() -> ModuleType | None:
    return _optional("folder_paths")


def _model_management() -> ModuleType | None:
    return _optional("comfy.model_management") if _folder_paths() is not None else None


def in_comfyui() -> bool:
    """True when running inside a ComfyUI process (``folder_paths`` and ``comfy`` importable)."""
    return _folder_paths() is not None and _optional("comfy.utils") is not None


# ----------------------------------------------------------------------------- folders


def _base_dir() -> Path:
    return Path(os.environ.get("GAMEANIM_BASE_DIR", os.getcwd()))


def models_dir() -> Path:
    fp = _folder_paths()
    return Path(fp.models_dir) if fp is not None else _base_dir() / "models"


def output_dir() -> Path:
    fp = _folder_paths()
    return Path(fp.get_output_directory()) if fp is not None else _base_dir() / "output"


def input_dir() -> Path:
    fp = _folder_paths()
    return Path(fp.get_input_directory()) if fp is not None else _base_dir() / "input"


def temp_dir() -> Path:
    fp = _folder_paths()
    return Path(fp.get_temp_directory()) if fp is not None else _base_dir() / "temp"


def register_model_folders() -> None:
    """Register every folder of :data:`MODEL_FOLDERS` with ComfyUI, once.

    Guarded per key so importing the pack twice (ComfyUI reloads, tests) adds no duplicate path.
    Outside ComfyUI this does nothing.
    """
    fp = _folder_paths()
    if fp is None:
        return
    for folder in MODEL_FOLDERS.values():
        path = os.path.join(fp.models_dir, *folder.subdir.split("/"))
        if folder.key in fp.folder_names_and_paths:
            paths, exts = fp.folder_names_and_paths[folder.key]
            if path not in paths:
                paths.append(path)
            continue
        fp.folder_names_and_paths[folder.key] = ([path], set(folder.extensions))


def folder_paths_for(key: str) -> list[Path]:
    """Every directory registered for model folder ``key`` (ComfyUI may list several)."""
    fp = _folder_paths()
    if fp is not None and key in fp.folder_names_and_paths:
        return [Path(p) for p in fp.get_folder_paths(key)]
    subdir = MODEL_FOLDERS[key].subdir if key in MODEL_FOLDERS else key
    return [models_dir() / subdir]


def model_list(key: str) -> list[str]:
    """Relative names of the files in model folder ``key`` (for a COMBO input), sorted."""
    fp = _folder_paths()
    if fp is not None and key in fp.folder_names_and_paths:
        return sorted(fp.get_filename_list(key))
    exts = MODEL_FOLDERS[key].extensions if key in MODEL_FOLDERS else frozenset()
    names: list[str] = []
    for root in folder_paths_for(key):
        if root.is_dir():
            for path in root.rglob("*"):
                if path.is_file() and (not exts or path.suffix.lower() in exts):
                    names.append(path.relative_to(root).as_posix())
    return sorted(names)


def model_path(key: str, name: str) -> Path:
    """Full path of ``name`` in model folder ``key``, or a :class:`ModelFileError` that explains.

    ``name`` may name a file or a directory (SAT checkpoints and transformers models are folders).
    The name is confined to the folder: traversal or absolute paths are rejected.
    """
    rel = sanitize_relative(name)
    searched = folder_paths_for(key)
    for root in searched:
        candidate = confined(root, rel)
        if candidate.exists():
            return candidate
    where = ", ".join(str(p) for p in searched)
    hint = describe_expected(key) if key in MODEL_FOLDERS else ""
    raise ModelFileError(f"'{rel}' was not found in the {key} model folder ({where}).\n{hint}".rstrip())


def output_path(name: str) -> Path:
    """A path for writing ``name`` under ComfyUI's output folder (traversal rejected, parents made)."""
    path = confined(output_dir(), name)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


# ----------------------------------------------------------------------------- progress


def check_interrupt() -> None:
    """Raise ComfyUI's interrupt exception if the user pressed Cancel (no-op outside ComfyUI)."""
    mm = _model_management()
    if mm is not None:
        mm.throw_exception_if_processing_interrupted()


def progress(total: int, node_id: str | None = None) -> ProgressFn:
    """A progress callback for a loop of ``total`` units: drives ComfyUI's bar and honours Cancel."""
    utils = _optional("comfy.utils") if _folder_paths() is not None else None
    bar = utils.ProgressBar(total, node_id=node_id) if utils is not None else None

    def report(done: int, loop_total: int) -> None:
        if bar is not None:
            bar.update_absolute(done, loop_total)
        check_interrupt()

    return report


def send_ui_event(event: str, data: dict[str, Any]) -> None:
    """Send a message to the browser (our web extensions listen for ``gameanim.*`` events)."""
    server = _optional("server") if _folder_paths() is not None else None
    instance = getattr(getattr(server, "PromptServer", None), "instance", None)
    if instance is not None:
        instance.send_sync(event, data)


# ----------------------------------------------------------------------------- devices


def torch_device() -> Any:
    """The device to compute on: ComfyUI's choice when hosted, else CUDA/MPS if present, else CPU."""
    import torch

    mm = _model_management()
    if mm is not None:
        return mm.get_torch_device()
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def offload_device() -> Any:
    """Where idle weights wait: ComfyUI's offload device when hosted, else the CPU."""
    import torch

    mm = _model_management()
    return mm.unet_offload_device() if mm is not None else torch.device("cpu")


def free_memory(bytes_needed: int, device: Any) -> None:
    """Ask ComfyUI to unload other models until ``bytes_needed`` fit on ``device``."""
    mm = _model_management()
    if mm is not None:
        mm.free_memory(bytes_needed, device)


def soft_empty_cache() -> None:
    """Return cached accelerator memory to the driver after a large job."""
    import torch

    mm = _model_management()
    if mm is not None:
        mm.soft_empty_cache()
    elif torch.cuda.is_available():
        torch.cuda.empty_cache()
