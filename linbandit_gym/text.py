"""Numbers in words, one way for every line the package prints or draws.

Counts take their plural (``1 seed``, ``3 seeds``), a mean over one seed has no spread to show
(``4.98``, not ``4.98 ± 0.00``), and a memory an agent does not report reads ``not reported``
(an agent without ``memory_bytes()`` records 0), not ``0 B``.
"""

from __future__ import annotations

import math
from typing import Any

from linbandit_host.memory import format_bytes

__all__ = ["count", "exact_updates", "human_bytes", "mean_spread", "NOT_REPORTED", "reported_bytes"]

#: What a table shows for the memory of an agent that has no ``memory_bytes()``.
NOT_REPORTED = "not reported"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` in the right number.

    >>> count(1, "seed"), count(3, "seed"), count(2, "batch", "batches")
    ('1 seed', '3 seeds', '2 batches')
    """
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def mean_spread(mean: float, std: float, seeds: int, digits: int = 2) -> str:
    """``"mean ± std"`` over ``seeds`` seeds, or the mean alone for one seed (no spread exists).

    >>> mean_spread(4.981, 0.0, 1), mean_spread(4.981, 0.5, 3, digits=1)
    ('4.98', '5.0 ± 0.5')
    """
    if seeds <= 1 or std is None or (isinstance(std, float) and math.isnan(std)):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def reported_bytes(n: Any) -> bool:
    """Whether a recorded peak memory is a measurement (an agent without ``memory_bytes()``
    records 0)."""
    try:
        return n is not None and not math.isnan(float(n)) and float(n) > 0
    except (TypeError, ValueError):
        return False


def human_bytes(n: float) -> str:
    """A recorded memory in binary units (:func:`linbandit_host.memory.format_bytes`), or ``not
    reported`` for an agent that reports no memory.

    >>> human_bytes(960), human_bytes(1536), human_bytes(0)
    ('960 B', '1.5 KiB', 'not reported')
    """
    return format_bytes(float(n)) if reported_bytes(n) else NOT_REPORTED


def exact_updates(switched: Any, seeds: int, first: Any, last: Any) -> str:
    """Whether and from which round an agent updated exactly, over ``seeds`` seeds of which
    ``switched`` did (from round ``first`` to ``last`` of them); empty for an agent that does
    not say (``switched`` NaN or None): a sketched agent past its cap is OFUL from then on.

    >>> exact_updates(1, 1, 807, 807), exact_updates(3, 3, 790, 812), exact_updates(2, 3, 807, 807)
    ('from t=807', 'from t=790-812', 'from t=807 (2 of 3 seeds)')
    >>> exact_updates(0, 3, None, None), exact_updates(float("nan"), 3, None, None)
    ('never', '')
    """
    try:
        switched = int(switched)
    except (TypeError, ValueError):
        return ""
    if switched == 0:
        return "never"
    rounds = f"t={int(first)}" if int(first) == int(last) else f"t={int(first)}-{int(last)}"
    some = "" if switched == seeds else f" ({switched} of {count(seeds, 'seed')})"
    return f"from {rounds}{some}"
