"""User-facing error types.

Every failure a user can cause (a wrong file, a bad shape, an impossible setting) is raised as a
:class:`GameAnimError` subclass whose message says what was found, what was expected and what to do.
ComfyUI shows the message at the top of its error dialog, so the message must stand on its own.
"""

from __future__ import annotations


class GameAnimError(Exception):
    """Base class for errors caused by user input, files or settings (not by bugs)."""


class InputError(GameAnimError, ValueError):
    """An input value or tensor has the wrong shape, range or type."""


class ModelFileError(GameAnimError, FileNotFoundError):
    """A model file is missing, unreadable, truncated or of the wrong kind."""


class UnsafePathError(GameAnimError, PermissionError):
    """A path given by a user or a route would leave the folders we are allowed to touch."""


class NumericalError(GameAnimError, FloatingPointError):
    """NaN or inf appeared in a computation; the message names the likely cause and the fix."""
