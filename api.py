"""The stable Python API of GameAnim, for headless scripts and outside checks.

Import the pack by path (see the README's "Python API") and call these functions; they never need
ComfyUI.  Signatures here are a contract: new parameters get defaults, nothing is renamed.
Long functions accept ``progress``: a callable ``(done, total)`` that may raise to cancel (for
example :meth:`CancelToken.progress`).
"""

from __future__ import annotations

from .errors import GameAnimError, InputError, ModelFileError, NumericalError, UnsafePathError
from .progress import Cancelled, CancelToken

__version__ = "0.1.0"

__all__ = [
    "CancelToken",
    "Cancelled",
    "GameAnimError",
    "InputError",
    "ModelFileError",
    "NumericalError",
    "UnsafePathError",
    "__version__",
]
