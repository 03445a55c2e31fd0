"""Reading and writing weight files safely and with bounded memory.

* PyTorch pickles (``.ckpt``/``.pt``/``.bin``) load with ``weights_only=True`` (no code runs from a
  downloaded file) and ``mmap=True`` where the file is in the zip format, so a Lightning checkpoint
  that also carries optimizer state only pages in the tensors we copy out of it.
* ``.safetensors`` files are read key by key through ``safe_open``.
* Truncated or corrupt files become :class:`ModelFileError` with the size we saw, not a zip traceback.

Format detection is by content (magic bytes, keys and shapes), never by file name.
"""

from __future__ import annotations

import json
import os
import pickle
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .atomic import atomic_target
from .errors import ModelFileError

KeyFilter = Callable[[str], bool]
WEIGHT_FILE = "Expected a PyTorch checkpoint (.ckpt/.pt/.bin written by torch.save) or a .safetensors file."


def _is_safetensors(path: Path) -> bool:
    """True when the safetensors library reads a header from the file (it reads the header only).

    A file whose header is complete but whose data is cut short still counts (the library says "incomplete
    metadata"), so a truncated download is reported as a damaged safetensors file, not as a bad pickle.
    """
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt"):
            return True
    except SafetensorError as exc:
        return "incomplete metadata" in str(exc)
    except (OSError, ValueError):
        return False


def _describe(path: Path) -> str:
    size = path.stat().st_size
    return f"{path} ({size:,} bytes)"


class _Opaque:
    """Inert stand-in for a non-tensor object pickled in a training checkpoint (hyper-parameters, configs).

    Training checkpoints (Lightning) may carry e.g. OmegaConf objects next to the state dict.  Instead
    of importing their classes (which would run code named by the file), each is rebuilt as this
    empty holder and ignored; only tensors are ever used.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> _Opaque:
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args

    def __setstate__(self, state: Any) -> None:
        self.state = state


def _load_with_opaque_objects(path: Path, use_mmap: bool) -> Any:
    """``weights_only`` load where every class the file names is replaced by :class:`_Opaque`."""
    import torch

    names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    with torch.serialization.safe_globals([(_Opaque, name) for name in names]):
        return torch.load(path, map_location="cpu", weights_only=True, mmap=use_mmap)


def _torch_load(path: Path, opaque_objects: bool = False, expected: str = WEIGHT_FILE) -> Any:
    """``torch.load`` that turns every way a file can be unreadable into a :class:`ModelFileError`.

    The unpickler raises whatever the bytes provoke (``KeyError`` for a text file, ``UnpicklingError``,
    ``EOFError``, zip errors, ...), so any exception means "not a checkpoint we can read".
    """
    import torch

    use_mmap = zipfile.is_zipfile(path)
    try:
        try:
            return torch.load(path, map_location="cpu", weights_only=True, mmap=use_mmap)
        except pickle.UnpicklingError as first:
            if not opaque_objects or "Unsupported global" not in str(first) or not use_mmap:
                raise
            return _load_with_opaque_objects(path, use_mmap)
    except Exception as exc:  # noqa: BLE001 - the unpickler's exception type depends on the bytes
        text = str(exc)
        if "Unsupported global" in text:
            raise ModelFileError(
                f"{_describe(path)} contains Python objects other than tensors, so it was not opened "
                "(loading it could run code from the file). Convert it to .safetensors, or re-save only its state dict."
            ) from exc
        first_line = text.splitlines()[0] if text.strip() else type(exc).__name__
        raise ModelFileError(
            f"{_describe(path)} could not be read as a PyTorch checkpoint: it looks truncated or corrupt, or is not a "
            f"checkpoint at all ({type(exc).__name__}: {first_line}). {expected} Download or copy it again."
        ) from exc


def _existing_file(path: str | os.PathLike[str], expected: str) -> Path:
    file = Path(path)
    if not file.is_file():
        raise ModelFileError(f"{file} does not exist or is not a file. {expected}")
    if file.stat().st_size == 0:
        raise ModelFileError(f"{file} is empty (0 bytes): the download or copy did not finish. {expected}")
    return file


def _find_tensor_mapping(obj: Any, file: Path, expected: str) -> Mapping[str, Any]:
    """The tensor dict inside a checkpoint: the object itself, or its ``state_dict``/``module``/``model``."""
    import torch

    if isinstance(obj, Mapping):
        for key in ("state_dict", "module", "model"):
            inner = obj.get(key)
            if isinstance(inner, Mapping) and any(isinstance(v, torch.Tensor) for v in inner.values()):
                return inner
        if any(isinstance(v, torch.Tensor) for v in obj.values()):
            return obj
    raise ModelFileError(
        f"{_describe(file)} holds no tensor dictionary (no 'state_dict' and no tensors at top level). {expected}"
    )


def read_state_dict(
    path: str | os.PathLike[str],
    select: KeyFilter | None = None,
    opaque_objects: bool = False,
    expected: str = WEIGHT_FILE,
) -> dict[str, Any]:
    """All tensors of a weight file (optionally only keys where ``select(key)`` is true), on the CPU.

    For pickles the selected tensors stay memory-mapped until the caller copies or moves them, and
    unselected entries (optimizer state, EMA copies) are never touched.  Pickles holding other Python
    objects are refused unless ``opaque_objects`` is set: then (for known training-checkpoint formats)
    those objects are rebuilt as inert stand-ins without importing their classes, and ignored.
    Any unreadable file raises :class:`ModelFileError` naming the file and ``expected`` (what the caller wanted).
    """
    file = _existing_file(path, expected)
    if _is_safetensors(file):
        return _read_safetensors(file, select, expected)
    mapping = _find_tensor_mapping(_torch_load(file, opaque_objects, expected), file, expected)
    return {k: v for k, v in mapping.items() if select is None or select(k)}


def _read_safetensors(path: Path, select: KeyFilter | None, expected: str = WEIGHT_FILE) -> dict[str, Any]:
    from safetensors import safe_open

    with _safetensors_errors(path, expected):
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            return {k: handle.get_tensor(k) for k in handle.keys() if select is None or select(k)}


@contextmanager
def _safetensors_errors(path: Path, expected: str) -> Iterator[None]:
    from safetensors import SafetensorError

    try:
        yield
    except (SafetensorError, OSError, ValueError) as exc:
        raise ModelFileError(f"{_describe(path)} is not a readable .safetensors file ({exc}). {expected}") from exc


def safetensors_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``__metadata__`` of a safetensors header (empty dict when there is none), no tensor data read."""
    from safetensors import safe_open

    file = _existing_file(path, WEIGHT_FILE)
    with _safetensors_errors(file, WEIGHT_FILE), safe_open(str(file), framework="pt") as handle:
        return dict(handle.metadata() or {})


def save_safetensors_atomic(
    tensors: Mapping[str, Any],
    path: str | os.PathLike[str],
    metadata: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write ``tensors`` to ``path`` atomically; metadata values are stored as strings (JSON for non-str)."""
    from safetensors.torch import save_file

    header = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (metadata or {}).items()}
    contiguous = {k: v.detach().contiguous() for k, v in tensors.items()}
    with atomic_target(path, overwrite=overwrite) as tmp:
        save_file(contiguous, str(tmp), metadata=header)
    return Path(path)


def read_torch_object(path: str | os.PathLike[str]) -> Any:
    """A whole ``torch.save`` object (dicts/lists/str/tensors) with ``weights_only=True``, mmap when possible.

    For files that are not plain tensor dicts (e.g. AnimeGamer's ``mllm-output.pt``, turn -> [tensor, text, list]);
    the same truncated/unsafe-file errors as :func:`read_state_dict`.
    """
    return _torch_load(_existing_file(path, WEIGHT_FILE))


def safetensors_shapes(path: str | os.PathLike[str], expected: str = WEIGHT_FILE) -> dict[str, tuple[int, ...]]:
    """Every tensor name and shape of a safetensors file, read from its header only (no tensor data)."""
    from safetensors import safe_open

    file = _existing_file(path, expected)
    with _safetensors_errors(file, expected), safe_open(str(file), framework="pt") as handle:
        return {k: tuple(handle.get_slice(k).get_shape()) for k in handle.keys()}


def is_safetensors(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` starts with a safetensors header (content check, not the file name)."""
    return _is_safetensors(Path(path))
