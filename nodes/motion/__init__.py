"""Motion scope: AnimeGamer-style action intensity measured from optical flow.

Pure library modules (``flow``, ``scope``, ``levels``, ``evaluate``, ``synthetic``, ``frames``) and the
ComfyUI adapter ``comfy_nodes``.
"""
