"""Warnings of linbandit-gym's envs and experiments, attributed to the user's line (once per cause:
:func:`linbandit_host.user_line.warn_user`). :class:`LinBanditWarning` is the category of every such
warning: filter them with ``warnings.filterwarnings("ignore", category=LinBanditWarning)``.
"""

from __future__ import annotations

from linbandit_host import user_line

__all__ = ["LinBanditWarning", "warn_user"]


class LinBanditWarning(UserWarning):
    """Something the user asked for works, but not as they may expect (and how to change it)."""


def warn_user(message: str, category: type[Warning] = LinBanditWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line
    (:func:`linbandit_host.user_line.warn_user`)."""
    user_line.warn_user(message, category)
