"""GameAnim: a ComfyUI node pack for 2D game animation.

ComfyUI imports this package by its folder name and reads ``NODE_CLASS_MAPPINGS``,
``NODE_DISPLAY_NAME_MAPPINGS`` and ``WEB_DIRECTORY``.  Everything inside uses relative imports, so
the pack also imports by path under any name (the tests import it as ``gameanim``) and without
ComfyUI installed.  Importing registers our model folders with ``folder_paths`` when hosted and
adds one read-only route (``/gameanim/loaded_models``) and does nothing else: no downloads, no logging configuration, no patching.
"""

from __future__ import annotations

from .core.host import register_model_folders, register_routes
from .nodes import merge_mappings
from .nodes.animegamer.decoder import comfy_nodes as decoder_nodes
from .nodes.animegamer.mllm import comfy_nodes as mllm_nodes
from .nodes.dynamicrafter import comfy_nodes as dynamicrafter_nodes
from .nodes.motion import comfy_nodes as motion_nodes
from .nodes.pose import clip_nodes as pose_clip_nodes
from .nodes.pose import comfy_nodes as pose_nodes
from .nodes.sprite import comfy_nodes as sprite_nodes
from .nodes.timing import comfy_nodes as timing_nodes
from .nodes.vc2 import comfy_nodes as vc2_nodes
from .trainers import comfy_nodes as trainer_nodes

FEATURE_NODE_MODULES: tuple = (
    vc2_nodes,
    trainer_nodes,
    sprite_nodes,
    timing_nodes,
    pose_nodes,
    pose_clip_nodes,
    motion_nodes,
    mllm_nodes,
    decoder_nodes,
    dynamicrafter_nodes,
)

NODE_CLASS_MAPPINGS, NODE_DISPLAY_NAME_MAPPINGS = merge_mappings(FEATURE_NODE_MODULES)
WEB_DIRECTORY = "web"

register_model_folders()
register_routes()

__all__ = ["NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS", "WEB_DIRECTORY"]
