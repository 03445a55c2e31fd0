"""Sprite toolkit: background to alpha, anchoring, timing, pixel art, sprite sheets and exports.

Pure library modules (numpy/OpenCV/Pillow, no ComfyUI); :mod:`.comfy_nodes` is the node adapter.
"""
