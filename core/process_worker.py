"""A worker process of :mod:`.processes` (run as ``python process_worker.py``; the caller writes one JSON line of
settings to its stdin: the pack's package name and folder, the address and key to connect back with, its rank).

The pack is imported under the caller's package name, without running its ``__init__`` (which registers ComfyUI
nodes), so the functions the caller pickles by name resolve here to the same code.
"""

import importlib
import importlib.machinery
import json
import signal
import sys
import types
from multiprocessing import connection


def import_pack(package: str, root: str) -> types.ModuleType:
    """The pack's ``core.processes`` with the pack registered as ``package`` (its ``__init__`` not run)."""
    parts = package.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [root] if depth == len(parts) else []
            module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
            module.__spec__.submodule_search_locations = module.__path__
            sys.modules[name] = module
    return importlib.import_module(package + ".core.processes")


def main() -> None:
    del sys.path[0]  # this script's folder: the pack's modules are imported as a package, never by their bare names
    # Ctrl+C in the terminal reaches the whole process group: the caller decides, and its exit ends this worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    settings = json.loads(sys.stdin.readline())
    processes = import_pack(settings["package"], settings["root"])
    link = connection.Client(settings["address"], authkey=bytes.fromhex(settings["key"]))
    link.send(settings["rank"])
    processes.serve(link, settings["rank"], settings["size"], settings["tickets"])


if __name__ == "__main__":
    main()
