"""Training loops and datasets (pure) plus their node classes (``trainers/comfy_nodes.py``)."""
