"""Test-only ComfyUI custom node: ComfyUI's own audio node DEFINITIONS where torchaudio cannot be installed.

torchaudio has no build for the torch in CI, so ComfyUI's ``comfy_extras/nodes_audio.py`` (RecordAudio, LoadAudio,
SaveAudio, ...) and ``nodes_audio_encoder.py`` (AudioEncoderLoader/Encode) fail to import and their nodes are
missing from ``/object_info``; the workflow templates using them could then be converted neither by the
frontend nor by our client.  This module imports those two ComfyUI files unchanged with a stand-in
``torchaudio`` module present only during the import, and registers their node classes, so the server lists
ComfyUI's real definitions (``INPUT_TYPES`` and V3 schemas come from ComfyUI's source).  Running them fails at
the first torchaudio call, which no test does: they exist for ``test_frontend_conversion.py``.  With torchaudio
installed the real nodes are there and this module registers nothing.
"""

from __future__ import annotations

import importlib
import sys
import types

import nodes as comfy_nodes


class _NoTorchaudio(types.ModuleType):
    """Any attribute (``torchaudio.functional`` ...) is a stand-in whose use says what is missing."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"torchaudio.{name}: this test server has no torchaudio (node definitions only)")


def _import_without_torchaudio(module: str):
    stub = _NoTorchaudio("torchaudio")
    sys.modules["torchaudio"] = stub
    try:
        return importlib.import_module(module)
    finally:
        if sys.modules.get("torchaudio") is stub:
            del sys.modules["torchaudio"]


NODE_CLASS_MAPPINGS: dict = {}
NODE_DISPLAY_NAME_MAPPINGS: dict = {}
if "RecordAudio" not in comfy_nodes.NODE_CLASS_MAPPINGS:
    _audio = _import_without_torchaudio("comfy_extras.nodes_audio")
    NODE_CLASS_MAPPINGS.update(_audio.NODE_CLASS_MAPPINGS)
    NODE_DISPLAY_NAME_MAPPINGS.update(_audio.NODE_DISPLAY_NAME_MAPPINGS)
if "AudioEncoderLoader" not in comfy_nodes.NODE_CLASS_MAPPINGS:
    # A V3 extension: its node classes go into the same mapping ComfyUI fills from comfy_entrypoint().
    _encoder = _import_without_torchaudio("comfy_extras.nodes_audio_encoder")
    for _cls in (_encoder.AudioEncoderLoader, _encoder.AudioEncoderEncode):
        _schema = _cls.GET_SCHEMA()
        NODE_CLASS_MAPPINGS[_schema.node_id] = _cls
        if _schema.display_name is not None:
            NODE_DISPLAY_NAME_MAPPINGS[_schema.node_id] = _schema.display_name
