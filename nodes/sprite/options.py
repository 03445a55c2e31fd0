"""Choice lists shared by the library modules and the node inputs (no heavy imports here)."""

from __future__ import annotations

ANCHORS = ("feet", "centroid", "bbox_center")
STABILISE_MODES = ("lock", "smooth", "none")
TIMING_OPS = ("hold", "repeat", "resample_count", "retime_fps", "ping_pong", "loop_trim")
PALETTE_METHODS = ("none", "kmeans", "median_cut", "pico8", "file")
PALETTE_SCOPES = ("all_clips", "each_clip")
LAYOUTS = ("grid", "packed")
ATLAS_FORMATS = (
    "texturepacker_hash",
    "texturepacker_array",
    "aseprite_hash",
    "aseprite_array",
    "godot4",
    "godot3",
    "unity_meta",
    "unity_json",
)
GODOT_CHOICES = ("godot4", "godot3", "both", "none")
EXPORT_FORMATS = ("gif", "apng", "webp", "png_sequence")
