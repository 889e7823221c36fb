"""Warnings that point at the user's line, once per cause.

A warning shows the file and line it is attributed to (``stacklevel``), and Python's default
filter shows it once per (message, category, place). :func:`warn_user` attributes it to the first
frame outside the project's packages (``agents``, ``linbandit_gym``, ``envs_data`` and this one)
and Gymnasium (whose wrappers stand between a user's ``env.render()`` and an env), so the line
shown is the user's, and a loop that reaches it again from that line prints it once. A fixed
``stacklevel`` cannot do this: the same warning is reached through different depths of the
library (an agent's constructor, its first ``act``, the loop's batched twin, an env wrapper).

Where no line of the user's is the cause -- the ``linbandit`` command, a sweep's worker
process -- the first frame outside the packages would be the console script or
``multiprocessing``'s bootstrap. There :func:`kept_warnings` keeps the warnings instead, each
distinct one once, for the command or the sweep's driver to say (naming the config entry that
caused it): one path, in this process or in a worker.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PROJECT_PACKAGES", "KeptWarning", "kept_warnings", "warn_user", "warning_records"]

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
    while frame.f_back is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(
        internal
    ):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


@dataclass(frozen=True)
class KeptWarning:
    """A warning as it was raised: its category (class name and module, so that whoever says it
    can raise it again, in another process too) and its message."""

    category: str
    module: str
    message: str

    @property
    def text(self) -> str:
        """``"SketchSizeWarning: SOFUL(sketch_size=600) at d=784 holds ..."``."""
        return f"{self.category}: {self.message}"

    def category_class(self) -> type[Warning]:
        """The category, imported from its module (``UserWarning`` where that fails)."""
        try:
            found: Any = importlib.import_module(self.module)
            for part in self.category.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            return UserWarning
        return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning


def warning_records(kept: list[KeptWarning]) -> list[dict[str, str]]:
    """Kept warnings as a run's or a bracket's metadata keeps them (``"warnings"``): each distinct
    one once, ``{"category", "module", "message"}``."""
    return [{"category": w.category, "module": w.module, "message": w.message} for w in kept]


@contextmanager
def kept_warnings(say: Callable[[KeptWarning], None] | None = None) -> Iterator[list[KeptWarning]]:
    """Inside, the warnings raised (those the active filters show) are kept, each distinct
    (category, message) once and in order, in the list this yields; ``say`` is called with each
    the first time, instead of Python printing it with a file and line.

    For code where no line of the user's is the cause -- a command of the ``linbandit`` program,
    a sweep's run in a worker process -- and which says its warnings itself: a command once each
    on stderr, a sweep once each, naming the config entry (:func:`warn_user` attributes the
    others to the user's line).
    """
    kept: list[KeptWarning] = []

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        warning = KeptWarning(category.__qualname__, category.__module__, str(message))
        if warning not in kept:
            kept.append(warning)
            if say is not None:
                say(warning)

    with warnings.catch_warnings():  # restores the filters and showwarning on the way out
        warnings.showwarning = show
        yield kept
