"""Warnings of linbandit-gym that point at the user's line, once per cause.

A warning shows the file and line it is attributed to (``stacklevel``) and Python's default
filter shows it once per (message, category, place). :func:`warn_user` attributes it to the
first frame outside this package, ``envs_data`` and Gymnasium (whose wrappers stand between a
user's ``env.render()`` and ours), so the line shown is the user's, and a loop calling it again
from that line prints it once. :class:`LinBanditWarning` is the category of every such warning:
filter them with ``warnings.filterwarnings("ignore", category=LinBanditWarning)``.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

__all__ = ["LinBanditWarning", "warn_user"]


class LinBanditWarning(UserWarning):
    """Something the user asked for works, but not as they may expect (and how to change it)."""


def _package_dirs() -> tuple[str, ...]:
    import envs_data
    import gymnasium

    return tuple(str(Path(module.__file__).resolve().parent) + "/"
                 for module in (sys.modules[__package__.partition(".")[0]], envs_data, gymnasium))


def warn_user(message: str, category: type[Warning] = LinBanditWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line: the first caller
    outside linbandit_gym, envs_data and gymnasium."""
    internal = _package_dirs()
    frame, level = sys._getframe(1), 2  # stacklevel 2: warn_user's caller
    while frame.f_back is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(internal):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
