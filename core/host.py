"""The one place that talks to the ComfyUI host process.

Inside ComfyUI this module uses ``folder_paths``, ``comfy.utils.ProgressBar``,
``comfy.model_management``, ``comfy.model_patcher``, ``comfy.ldm.modules.attention``, ``latent_preview`` and
``server.PromptServer``; outside it (tests, headless scripts) it falls back to plain behaviour: folders under
``$GAMEANIM_BASE_DIR`` (default: the current directory), a silent progress bar, the best local torch device,
PyTorch's attention kernel.  Library code never imports this
module; node classes pass :func:`progress` callbacks and device choices down to it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
from collections.abc import Callable, Iterator
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


NOTICE_EVENT = "gameanim.notice"


def notify(summary: str, detail: str, severity: str = "warn") -> None:
    """Show a toast in the browser (web/js/gameanim_core.js) and log the same text, so headless runs see it too."""
    log = logger.warning if severity in ("warn", "error") else logger.info
    log("%s: %s", summary, detail)
    send_ui_event(NOTICE_EVENT, {"severity": severity, "summary": summary, "detail": detail})


@contextlib.contextmanager
def notify_on(error: type[BaseException], summary: str) -> Iterator[None]:
    """Toast an ``error`` raised in the body (e.g. a NaN with its fp16 hint) and let it propagate unchanged:
    ComfyUI's error dialog shows the traceback view, the toast shows the hint where the user is looking."""
    try:
        yield
    except error as exc:
        notify(summary, str(exc), "error")
        raise


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


def soft_empty_cache() -> None:
    """Return cached accelerator memory to the driver after a large job."""
    import torch

    mm = _model_management()
    if mm is not None:
        mm.soft_empty_cache()
    elif torch.cuda.is_available():
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------- attention


@functools.cache
def _attention_module() -> ModuleType | None:
    """ComfyUI's attention module when hosted (looked up once: a failed import costs a path search)."""
    return _optional("comfy.ldm.modules.attention") if in_comfyui() else None


def attention(q: Any, k: Any, v: Any, heads: int, mask: Any = None) -> Any:
    """Attention with ComfyUI's calling convention (``[B, N, heads*dim]`` in and out; ``mask`` added to the logits).

    Hosted, this is the kernel the user chose for ComfyUI (``optimized_attention``: PyTorch SDPA, xformers,
    sage, flash, split or sub-quadratic, after ``--use-*-attention`` flags), read at each call so a later
    choice also applies; in plain Python it is PyTorch's fused kernel (:func:`.attention.sdpa`).  :func:`manage`
    installs it into our models.
    """
    module = _attention_module()
    if module is None:
        from .attention import sdpa

        return sdpa(q, k, v, heads, mask)
    return module.optimized_attention(q, k, v, heads, mask=mask)


# ----------------------------------------------------------------------------- model memory

# Roles map a model part onto ComfyUI's device and dtype policy (``--gpu-only``, ``--cpu-vae``,
# ``--fp16-unet``, ``--fp32-vae``, ``--fp32-text-enc``...): name -> (load device fn, offload device fn, arg prefix).
_ROLES = {
    "diffusion": ("get_torch_device", "unet_offload_device", "unet"),
    "text_encoder": ("text_encoder_device", "text_encoder_offload_device", "text_enc"),
    "vae": ("vae_device", "vae_offload_device", "vae"),
}
_DTYPE_FLAGS = (("fp32", "float32"), ("fp16", "float16"), ("bf16", "bfloat16"))


class ManagedModel:
    """A torch module whose device placement the host decides (one line for any model part).

    Inside ComfyUI the module is wrapped in a ``comfy.model_patcher.ModelPatcher`` so
    ``load_models_gpu`` loads it (partially in low-VRAM mode), it appears among the host's loaded
    models, and ``/free`` or another model's need for room unloads it.  Its ``Linear``/``Conv``/norm
    layers become ComfyUI's casting layers so a partial load streams the weights that did not fit.
    Outside ComfyUI, :func:`on_device` simply moves the module to the best local device.  Every attention layer
    of ours in the module (see :mod:`.attention`) is switched to :func:`attention`, the host's kernel.
    """

    def __init__(self, module: Any, name: str, role: str = "diffusion") -> None:
        from .attention import use_attention

        if role not in _ROLES:
            raise ValueError(f"role must be one of {', '.join(_ROLES)}, got {role!r}")
        use_attention(module, attention)
        self.module = module
        self.name = name
        self.role = role
        self.patcher = _patcher(module, name, role)

    def __repr__(self) -> str:
        return f"ManagedModel({self.name!r}, role={self.role!r})"

    def __deepcopy__(self, memo: dict[int, Any]) -> None:
        """A copied module is a different model: it gets its own handle on first :func:`manage`."""
        return None


def _host_container(module: Any, name: str) -> Any:
    """A parent module for the patcher: ComfyUI writes bookkeeping attributes (``device``,
    ``model_loaded_weight_memory``...) onto the model it patches, and ours have read-only ``device``."""
    import torch

    container = type("GameAnimModel", (torch.nn.Module,), {})()
    container.inner = module
    container.gameanim_name = name
    return container


def _castable(module: Any) -> None:
    """Swap plain torch layers for ComfyUI's same-named casting subclasses (weights and math unchanged:
    they only cast on the fly once a partial load marks them)."""
    ops = _optional("comfy.ops")
    if ops is None:
        return
    import torch

    swaps = {
        getattr(torch.nn, n): getattr(ops.disable_weight_init, n)
        for n in ("Linear", "Conv1d", "Conv2d", "Conv3d", "GroupNorm", "LayerNorm", "ConvTranspose2d", "Embedding")
    }
    for sub in module.modules():
        target = swaps.get(type(sub))
        if target is not None:
            sub.__class__ = target


def _patcher(module: Any, name: str, role: str) -> Any | None:
    mm = _model_management()
    patcher_mod = _optional("comfy.model_patcher") if mm is not None else None
    if patcher_mod is None:
        return None
    load_fn, offload_fn, _ = _ROLES[role]
    _castable(module)
    container = _host_container(module, name)
    return patcher_mod.ModelPatcher(
        container, load_device=getattr(mm, load_fn)(), offload_device=getattr(mm, offload_fn)()
    )


_HANDLE_ATTR = "_gameanim_managed"


def manage(module: Any, name: str, role: str = "diffusion") -> ManagedModel:
    """``module`` under the host's memory manager; ``role`` picks ComfyUI's device policy.

    The handle is kept on the module, so every node that receives the same module shares one host
    entry (the first caller's ``name`` and ``role`` stay).  Typical use, in any node::

        with host.on_device(host.manage(model, "My model")) as device:
            ...
    """
    handle = module.__dict__.get(_HANDLE_ATTR)
    if handle is None:
        handle = ManagedModel(module, name, role)
        module.__dict__[_HANDLE_ATTR] = handle
    return handle


def weight_dtype(role: str, requested: Any) -> Any:
    """``requested`` unless the user forced a precision for ``role`` on ComfyUI's command line
    (``--force-fp32``, ``--fp16-unet``, ``--bf16-vae``, ``--fp32-text-enc``...)."""
    import torch

    cli = _optional("comfy.cli_args") if _folder_paths() is not None else None
    args = getattr(cli, "args", None)
    if args is None:
        return requested
    if getattr(args, "force_fp32", False):
        return torch.float32
    prefix = _ROLES[role][2]
    for flag, dtype in _DTYPE_FLAGS:
        if getattr(args, f"{flag}_{prefix}", False):
            return getattr(torch, dtype)
    return requested


@contextlib.contextmanager
def on_device(*models: ManagedModel, keep_loaded: bool = True, for_training: bool = False) -> Iterator[Any]:
    """Have ``models`` on the compute device for the body; yields that device.

    Hosted, ComfyUI loads them (freeing other models first, partially if VRAM is short) and keeps
    them loaded afterwards unless ``keep_loaded`` is False; its memory manager unloads them later when
    another model needs the room.  Plain Python: a move to :func:`torch_device` and back to the CPU
    when ``keep_loaded`` is False.  ``for_training`` moves the weights outside ComfyUI's inference mode
    (inference tensors cannot be saved for backward).
    """
    import torch

    mm = _model_management()
    patchers = [m.patcher for m in models if m.patcher is not None]
    if mm is not None and patchers:
        with torch.inference_mode(False) if for_training else contextlib.nullcontext():
            mm.load_models_gpu(patchers)
        device = patchers[0].load_device
    else:
        device = torch_device()
        for m in models:
            m.module.to(device)
    try:
        yield device
    finally:
        if not keep_loaded:
            unload(*models)


def unload(*models: ManagedModel) -> None:
    """Move ``models`` off the compute device now (and out of the host's loaded list)."""
    import torch

    mm = _model_management()
    if mm is not None:
        wanted = {id(m.patcher) for m in models if m.patcher is not None}
        for i in range(len(mm.current_loaded_models) - 1, -1, -1):
            if id(mm.current_loaded_models[i].model) in wanted:
                mm.current_loaded_models[i].model_unload()
                mm.current_loaded_models.pop(i)
    for m in models:
        if m.patcher is None:
            m.module.to(torch.device("cpu"))
    soft_empty_cache()


def loaded_model_names() -> list[str]:
    """Names of our models the host currently holds loaded (empty outside ComfyUI)."""
    mm = _model_management()
    if mm is None:
        return []
    names = []
    for patcher in mm.loaded_models():
        name = getattr(getattr(patcher, "model", None), "gameanim_name", None)
        if name is not None:
            names.append(name)
    return names


def register_routes() -> None:
    """``GET /gameanim/loaded_models``: which of our models ComfyUI holds, read from its own list."""
    server = _optional("server") if _folder_paths() is not None else None
    instance = getattr(getattr(server, "PromptServer", None), "instance", None)
    if instance is None or getattr(instance, "_gameanim_routes", False):
        return
    from aiohttp import web

    @instance.routes.get("/gameanim/loaded_models")
    async def _loaded(request: Any) -> Any:
        return web.json_response({"loaded": loaded_model_names()})

    instance._gameanim_routes = True


# ----------------------------------------------------------------------------- latent previews

# Our latent kinds -> the host's latent format with their RGB factors (and TAESD decoder name).
_LATENT_FORMATS = {"sd": "SD15"}


class PreviewProgress:
    """A progress callback that also carries a live latent preview to ComfyUI's progress bar.

    The sampler calls :meth:`preview` with its current denoised estimate ``x0`` and then the
    callback ``(done, total)``; the host's previewer (the user's ``--preview-method``: latent2rgb,
    TAESD or none) turns the first frame into the image shown on the node.  Outside ComfyUI it is a
    plain progress callback and previews cost nothing.
    """

    def __init__(self, total: int, kind: str, node_id: str | None = None, rgb: Callable[[], Any] | None = None) -> None:
        utils = _optional("comfy.utils") if _folder_paths() is not None else None
        self._bar = utils.ProgressBar(total, node_id=node_id) if utils is not None else None
        self._previewer = _previewer(kind, rgb) if self._bar is not None else None
        self._latest: Any = None

    @property
    def enabled(self) -> bool:
        return self._previewer is not None

    def preview(self, x0: Any) -> None:
        """Remember ``x0`` ([B,C,T,h,w] or [B,C,h,w]); it is rendered at the next progress report."""
        if self._previewer is not None:
            self._latest = x0

    def __call__(self, done: int, total: int) -> None:
        image = None
        if self._previewer is not None and self._latest is not None:
            frame = self._latest[:1, :, 0] if self._latest.ndim == 5 else self._latest[:1]
            image = self._previewer.decode_latent_to_preview_image("JPEG", frame.float())
            self._latest = None
        if self._bar is not None:
            self._bar.update_absolute(done, total, image)
        check_interrupt()


def _previewer(kind: str, rgb: Callable[[], Any] | None) -> Any | None:
    """ComfyUI's previewer for latent ``kind`` honouring the user's preview method, or None."""
    lp = _optional("latent_preview") if in_comfyui() else None
    if lp is None or lp.args.preview_method == lp.LatentPreviewMethod.NoPreviews:
        return None
    formats = _optional("comfy.latent_formats")
    if kind in _LATENT_FORMATS:
        fmt = getattr(formats, _LATENT_FORMATS[kind])()
    elif rgb is not None:
        factors, bias = rgb()
        fmt = formats.LatentFormat()
        fmt.latent_channels = len(factors)
        fmt.latent_rgb_factors = [[float(v) for v in row] for row in factors]
        fmt.latent_rgb_factors_bias = [float(b) for b in bias]
    else:
        return None
    return lp.get_previewer(_model_management().get_torch_device(), fmt)


def preview_progress(
    total: int, kind: str, node_id: str | None = None, rgb: Callable[[], Any] | None = None
) -> PreviewProgress:
    """A :class:`PreviewProgress` for ``total`` steps of latents of ``kind``: "sd" for SD-family 4-channel
    latents (the host's own factors and TAESD), or any other name with ``rgb()`` giving a linear
    latent-to-RGB map ``(factors [C][3], bias [3])``; ``rgb`` is only called when previews are on."""
    return PreviewProgress(total, kind, node_id, rgb)
