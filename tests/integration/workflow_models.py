"""What each shipped API workflow needs in ComfyUI's ``models/`` folder before it can run.

A value is either a function ``setup(models_dir, input_dir)`` that writes a tiny model of the real
architecture and format (so the workflow runs end to end on CPU), or a string: the reason the
workflow cannot run here (it needs downloaded weights), printed when its test is skipped.
Workflows not listed need nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

WORKFLOW_MODELS: dict[str, Callable[[Path, Path], None] | str] = {}
