"""Warnings that point at the user's line, once per cause.

A warning shows the file and line it is attributed to (``stacklevel``), and Python's default
filter shows it once per (message, category, place). :func:`warn_user` attributes it to the first
frame outside the project's packages (``agents``, ``linbandit_gym``, ``envs_data`` and this one)
and Gymnasium (whose wrappers stand between a user's ``env.render()`` and an env), so the line
shown is the user's, and a loop that reaches it again from that line prints it once. A fixed
``stacklevel`` cannot do this: the same warning is reached through different depths of the
library (an agent's constructor, its first ``act``, the loop's batched twin, an env wrapper).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

__all__ = ["PROJECT_PACKAGES", "warn_user"]

#: The project's packages, installed side by side (one distribution).
PROJECT_PACKAGES = ("agents", "linbandit_gym", "envs_data", "linbandit_host")


def _internal_dirs() -> tuple[str, ...]:
    root = Path(__file__).resolve().parent.parent
    dirs = [str(root / name) + os.sep for name in PROJECT_PACKAGES]
    gymnasium = sys.modules.get("gymnasium")  # only ever between the user and us if it is loaded
    if gymnasium is not None and getattr(gymnasium, "__file__", None):
        dirs.append(str(Path(gymnasium.__file__).resolve().parent) + os.sep)
    return tuple(dirs)


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line: the first caller outside
    the project's packages and Gymnasium (the outermost frame if there is none)."""
    internal = _internal_dirs()
    frame, level = sys._getframe(1), 2  # stacklevel 2: warn_user's caller
    while frame.f_back is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(internal):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
