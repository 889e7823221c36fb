"""The agents' warning categories; :func:`warn_user` (:mod:`linbandit_host.user_line`) attributes
them to the user's line, so that each is shown once per cause."""

from __future__ import annotations

from linbandit_host.user_line import warn_user

__all__ = ["DesignWarning", "DiscardedMassWarning", "SketchSizeWarning", "warn_user"]


class SketchSizeWarning(UserWarning):
    """A sketched agent whose sketch holds more bytes than OFUL's exact state, or whose rounds cost
    more arithmetic than OFUL's at any number of arms (it saves nothing)."""


class DiscardedMassWarning(SketchSizeWarning):
    """A Frequent Directions agent whose discarded mass passed its ridge ``lam``: its widths may be
    far from OFUL's (:func:`agents.soful.warn_if_discarded_mass_dominates`). A sketch-size warning:
    filtering :class:`SketchSizeWarning` filters it too."""


class DesignWarning(RuntimeWarning):
    """An optimal-design solver stopped at its iteration budget before its certificate (the design
    returned is the best found, its bound still valid)."""
