"""Shared foundations every feature builds on: the one ComfyUI touchpoint (``host``), errors, progress and
Cancel, path confinement, atomic writes, weight-file reading, model-folder registration, the workflow format and
the node-side preview.  Nothing here imports a feature module."""
