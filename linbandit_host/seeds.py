"""The seed rule, once for the loop, the configs, the records and the agents.

A seed is an int in ``[0, 2**63)``: what numpy's and torch's generators take, what the records'
int64 ``seed`` column holds and what a batch's int64 seed tensor holds. ``bool`` is not a seed
(``True`` would seed with 1), nor are floats, strings or ``None`` where a seed is required.

A list of seeds (``seeds=``) is an int ``n`` (a count: seeds ``0 .. n-1``, at most
:data:`MAX_SEED_COUNT`) or a non-empty sequence of distinct seeds: each seed is one episode, so
a repeated seed would play the same episode twice and count it twice in every mean.

>>> check_seeds(3), check_seeds([7, 2**62])
([0, 1, 2], [7, 4611686018427387904])
>>> check_seeds([0, 0, 1], "run(seeds=...)")
Traceback (most recent call last):
    ...
ValueError: run(seeds=...): seed 0 is listed twice in [0, 0, 1]; each seed is one episode: ...
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MAX_SEED_COUNT", "SEED_LIMIT", "SEED_RULE", "check_seed", "check_seeds", "is_seed"]

#: Seeds are ints in ``[0, SEED_LIMIT)``.
SEED_LIMIT = 2**63

#: The rule as messages write it.
SEED_RULE = "an int in [0, 2**63)"

#: The most seeds a count may ask for: each is an episode (and, in a sweep, a run of two files);
#: a count past this is a typo (``--seeds 1000000000``), not an experiment.
MAX_SEED_COUNT = 100_000


def is_seed(value: Any) -> bool:
    """Whether ``value`` is a seed: an int (Python's or numpy's, not ``bool``) in ``[0, 2**63)``."""
    return (
        isinstance(value, numbers.Integral)
        and not isinstance(value, bool)
        and 0 <= value < SEED_LIMIT
    )


def check_seed(value: Any, where: str = "seed", error: type[Exception] = ValueError) -> int:
    """``value`` as an int if it is a seed, else ``error`` naming ``where`` and the rule.

    >>> check_seed(2**64)
    Traceback (most recent call last):
        ...
    ValueError: seed: a seed is an int in [0, 2**63), got 18446744073709551616
    """
    if not is_seed(value):
        raise error(f"{where}: a seed is {SEED_RULE}, got {value!r}")
    return int(value)


def check_seeds(
    seeds: Any,
    where: str = "seeds",
    *,
    distinct: bool = True,
    max_count: int = MAX_SEED_COUNT,
    error: type[Exception] = ValueError,
) -> list[int]:
    """``seeds`` as a list of seeds: an int ``n`` means seeds ``0 .. n-1`` (``1 <= n <=
    max_count``); a sequence (list, tuple, range, 1-D array) must be non-empty and hold seeds,
    distinct ones unless ``distinct`` is False (the members of a batch that differ in their
    arguments share seeds; a user's list never repeats one). Else ``error`` naming ``where``.
    """
    if isinstance(seeds, numbers.Integral) and not isinstance(seeds, bool):
        if seeds < 1:
            raise error(f"{where}: an int is a count and must be >= 1, got {seeds}")
        if seeds > max_count:
            raise error(
                f"{where}: a count of {seeds:,} seeds is more than {max_count:,}, the most one run "
                "or sweep plays; give a count such as 10, or a list of seeds"
            )
        return list(range(int(seeds)))
    if (
        seeds is None
        or isinstance(seeds, (bool, str, bytes, Mapping))
        or not isinstance(seeds, Iterable)
    ):
        raise error(f"{where}: expected an int count or a non-empty list of ints, got {seeds!r}")
    values = list(seeds)
    if not values:
        raise error(f"{where}: the list is empty: give at least one seed")
    checked = [check_seed(value, f"{where}[{i}]", error) for i, value in enumerate(values)]
    if distinct and len(set(checked)) < len(checked):
        repeated = next(seed for i, seed in enumerate(checked) if seed in checked[:i])
        shown = values if len(values) <= 10 else f"{checked[:10]} ... ({len(values)} seeds)"
        raise error(
            f"{where}: seed {repeated} is listed twice in {shown}; each seed is one episode: "
            "give distinct seeds"
        )
    return checked
