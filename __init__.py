"""GameAnim: a ComfyUI node pack for 2D game animation.

ComfyUI imports this package by its folder name and reads ``NODE_CLASS_MAPPINGS``,
``NODE_DISPLAY_NAME_MAPPINGS`` and ``WEB_DIRECTORY``.  Everything inside uses relative imports, so
the pack also imports by path under any name (the tests import it as ``gameanim``) and without
ComfyUI installed.  Importing registers our model folders with ``folder_paths`` when hosted and
does nothing else: no downloads, no logging configuration, no patching.
"""

from __future__ import annotations

from .host import register_model_folders
from .nodes import merge_mappings
from .nodes.vc2 import comfy_nodes as vc2_nodes
from .trainers import comfy_nodes as trainer_nodes

FEATURE_NODE_MODULES: tuple = (vc2_nodes, trainer_nodes)

NODE_CLASS_MAPPINGS, NODE_DISPLAY_NAME_MAPPINGS = merge_mappings(FEATURE_NODE_MODULES)
WEB_DIRECTORY = "web"

register_model_folders()

__all__ = ["NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS", "WEB_DIRECTORY"]
