"""Memory estimates of the envs, and the refusal of sizes that cannot fit.

Every env family says, from its constructor arguments alone, how many bytes building it and
playing it take at their peak (a :class:`MemoryEstimate`: a few :class:`Allocation` s, each
``count`` numbers of ``itemsize`` bytes). The constructors compare that estimate with
:func:`memory_limit_bytes` *before* they allocate anything and raise
:class:`EnvTooLargeError` (a ``ValueError``) for what cannot fit, naming the arguments, the
bytes and how to make the env smaller. Nothing is half-built: the refusal comes first.

The estimates cover the construction, ``reset`` and ``step`` (an episode's working set does
not grow with the round, except the regret curve kept for rendering, which is counted). The
itemsize of an allocation is the number of bytes per number held *at the peak*, all copies
included (e.g. a round's arms are drawn in float64, kept in float32, cast back to float64
for the means and copied to the caller), so that the estimate bounds the measured peak
(``tracemalloc``) from above; ``tests/test_env_memory.py`` checks that it stays within a
small factor of it.

The limit is the one agents use too (:mod:`linbandit_host.memory`): the memory available now,
or ``$LINBANDIT_MEMORY_LIMIT``. Tests and callers may monkeypatch :func:`memory_limit_bytes` here.

>>> arms = Allocation("arms", 10 * 4, 8, ("n_arms", "d"), "lower d")
>>> est = MemoryEstimate("Demo", {"d": 10}, (arms,))
>>> est.nbytes, format_bytes(3_400_000_000)
(320, '3.17 GiB')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from linbandit_host.memory import (
    MEMORY_LIMIT_ENV,
    available_memory_bytes,
    format_bytes,
    format_count,
    format_sci,
    memory_limit_bytes,
    memory_limit_source,
)

__all__ = [
    "MEMORY_LIMIT_ENV",
    "RECORD_BYTES_PER_ROUND",
    "Allocation",
    "EnvTooLargeError",
    "MemoryEstimate",
    "RecordsTooLargeError",
    "Shown",
    "available_memory_bytes",
    "check_fits",
    "check_records_fit",
    "format_bytes",
    "format_count",
    "memory_limit_bytes",
    "records_bytes",
]


class Shown(str):
    """An argument value shown as written in messages, not quoted: ``dataset=(X, y) with X of shape
    (n, d)``."""

    def __repr__(self) -> str:
        return str(self)


class EnvTooLargeError(ValueError):
    """An env's arguments ask for more memory than the machine has (raised before allocating)."""


@dataclass(frozen=True)
class Allocation:
    """``count`` numbers held at ``itemsize`` bytes each at the peak, e.g. a round's arm sets.

    ``factors`` say how ``count`` is formed from the arguments (``("n_arms", "d")``: their
    product, up to lower-order terms), ``fix`` how to make it smaller (``"lower d or
    n_arms"``). In a vector env of B members, an allocation is held by every member unless it
    is ``shared`` (read-only data the members share, a loaded dataset) or ``transient``
    (working memory of a draw, freed before the next member draws): those count once.
    """

    what: str
    count: int
    itemsize: int
    factors: tuple[str, ...]
    fix: str
    shared: bool = False
    transient: bool = False

    @property
    def nbytes(self) -> int:
        return self.count * self.itemsize


@dataclass(frozen=True)
class MemoryEstimate:
    """The peak bytes of an env built with ``arguments`` (the size-relevant ones, for messages);
    ``obs_shape`` is its observation's ``(n_arms, d)``, ``rounds`` the most rounds an episode
    has (its ``horizon``: what sizes a run's records, :func:`records_estimate`)."""

    owner: str
    arguments: dict[str, Any]
    allocations: tuple[Allocation, ...]
    obs_shape: tuple[int, int] | None = None
    rounds: int | None = None

    @property
    def nbytes(self) -> int:
        """The estimated peak, in bytes (a Python int: no overflow for any size)."""
        return sum(a.nbytes for a in self.allocations)

    def plus(self, *allocations: Allocation, **arguments: Any) -> MemoryEstimate:
        """This estimate with more allocations (and more arguments named in messages)."""
        return replace(
            self,
            arguments={**self.arguments, **arguments},
            allocations=self.allocations + tuple(allocations),
        )

    def largest(self) -> Allocation:
        return max(self.allocations, key=lambda a: a.nbytes)

    def batched(self, num_envs: int, owner: str) -> MemoryEstimate:
        """The estimate of ``num_envs`` such envs side by side (a vector env's members): every
        allocation ``num_envs`` times, except the ``shared`` and ``transient`` ones."""
        allocations = tuple(
            a
            if a.shared or a.transient
            else replace(
                a,
                count=a.count * num_envs,
                factors=("num_envs", *a.factors),
                fix=f"lower num_envs, or {a.fix}",
            )
            for a in self.allocations
        )
        return replace(
            self,
            owner=owner,
            arguments={"num_envs": num_envs, **self.arguments},
            allocations=allocations,
        )


#: Bytes one round of one member takes in a run's records at their peak: the loop's columns
#: (ten numbers of 8 bytes, :class:`linbandit_gym.loop.RoundRecords`), the frame of sixteen
#: columns built from them and its cumulated sums, and the copy that writing it to disk (Parquet,
#: or CSV) converts; the records of every round are kept, so they grow with the horizon.
RECORD_BYTES_PER_ROUND = 512


class RecordsTooLargeError(ValueError):
    """The records of a run (every round is kept) cannot fit in memory (raised before
    allocating)."""


def records_bytes(rounds: int, members: int = 1) -> int:
    """The peak bytes of the records of ``members`` runs of ``rounds`` rounds held at once (a
    batch's members, or the seeds one ``run`` call returns together): the one size rule of a
    run's records, which ``--dry-run``, ``linbandit run``, the batch planner and the loop itself
    (:func:`linbandit_gym.loop.play`, before it allocates them) all use.

    >>> records_bytes(2000), records_bytes(2000, members=4)
    (1024000, 4096000)
    """
    return int(rounds) * int(members) * RECORD_BYTES_PER_ROUND


def check_records_fit(rounds: int, members: int = 1, limit: int | None = None) -> int:
    """:func:`records_bytes` if they fit in ``limit`` (default :func:`memory_limit_bytes`), else
    :class:`RecordsTooLargeError` naming ``horizon``, the bytes and the largest horizon that
    fits."""
    need = records_bytes(rounds, members)
    limit = memory_limit_bytes() if limit is None else limit
    if need <= limit:
        return need
    per_round = RECORD_BYTES_PER_ROUND * members
    together = f" for {members} runs held together" if members > 1 else ""
    largest = format_sci(max(limit // per_round, 1))
    raise RecordsTooLargeError(
        f"horizon={rounds!r}: the records of {format_count(rounds)} rounds{together} need about "
        f"{format_bytes(need)} of memory ({format_bytes(per_round)} a round: every round is kept), "
        f"more than {memory_limit_source()} ({format_bytes(limit)}); lower horizon: it must stay "
        f"below about {largest} here"
    )


def _bound(factors: tuple[str, ...], itemsize: int, room: int) -> str:
    """``'n_arms x d must stay below about 6.7e+08'``: the largest product of ``factors`` whose
    ``itemsize`` bytes a number fit in ``room`` bytes (for ``d x d``, the bound on ``d``)."""
    largest_count = room // itemsize
    if len(set(factors)) == 1 and len(factors) > 1:
        return f"{factors[0]} must stay below about {format_count(math.isqrt(largest_count))}"
    return f"{' x '.join(factors)} must stay below about {format_sci(largest_count)}"


def check_fits(estimate: MemoryEstimate, limit: int | None = None) -> None:
    """Raise :class:`EnvTooLargeError` if ``estimate`` exceeds ``limit`` (default
    :func:`memory_limit_bytes`), with a message naming the arguments, the bytes and the fix.

    The message names the allocations that grow like the largest one (same ``factors``), the
    bytes per number they take together, and the largest size of those factors that fits.
    """
    total = estimate.nbytes
    if limit is None:
        limit = memory_limit_bytes()
    if total <= limit:
        return
    big = estimate.largest()
    group = [a for a in estimate.allocations if a.factors == big.factors and a.count == big.count]
    itemsize = sum(a.itemsize for a in group)
    room = limit - (total - big.count * itemsize)
    bound = f": {_bound(big.factors, itemsize, room)} here" if room >= itemsize else ""
    source = memory_limit_source()
    arguments = ", ".join(f"{name}={value!r}" for name, value in estimate.arguments.items())
    raise EnvTooLargeError(
        f"{estimate.owner}({arguments}) needs about {format_bytes(total)} of memory "
        f"({format_count(total)} bytes), "
        f"more than {source} ({format_bytes(limit)}). Most of it grows with "
        f"{' x '.join(big.factors)} = "
        f"{format_count(big.count)} numbers at {itemsize} bytes each "
        f"({'; '.join(a.what for a in group)}). "
        f"To fix: {big.fix}{bound}."
    )
