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

The limit is the memory available now: the smaller of ``MemAvailable`` (``/proc/meminfo``)
and the room left under the process's cgroup limit, else the physical memory
(``os.sysconf``); ``$LINBANDIT_MEMORY_LIMIT`` (``"8GB"``, ``"512MiB"``, ``"2e9"``) overrides
it. Tests and callers may monkeypatch :func:`memory_limit_bytes`.

>>> est = MemoryEstimate("Demo", {"d": 10}, (Allocation("arms", 10 * 4, 8, ("n_arms", "d"), "lower d"),))
>>> est.nbytes, format_bytes(3_400_000_000)
(320, '3.4 GB')
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "MEMORY_LIMIT_ENV",
    "Allocation",
    "EnvTooLargeError",
    "MemoryEstimate",
    "Shown",
    "available_memory_bytes",
    "check_fits",
    "format_bytes",
    "format_count",
    "memory_limit_bytes",
]

#: Environment variable that overrides the memory limit (bytes, or a number with a unit).
MEMORY_LIMIT_ENV = "LINBANDIT_MEMORY_LIMIT"


class Shown(str):
    """An argument value shown as written in messages, not quoted: ``dataset=(X, y) with X of shape (n, d)``."""

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
    ``obs_shape`` is its observation's ``(n_arms, d)``."""

    owner: str
    arguments: dict[str, Any]
    allocations: tuple[Allocation, ...]
    obs_shape: tuple[int, int] | None = None

    @property
    def nbytes(self) -> int:
        """The estimated peak, in bytes (a Python int: no overflow for any size)."""
        return sum(a.nbytes for a in self.allocations)

    def plus(self, *allocations: Allocation, **arguments: Any) -> MemoryEstimate:
        """This estimate with more allocations (and more arguments named in messages)."""
        return replace(
            self, arguments={**self.arguments, **arguments}, allocations=self.allocations + tuple(allocations)
        )

    def largest(self) -> Allocation:
        return max(self.allocations, key=lambda a: a.nbytes)

    def batched(self, num_envs: int, owner: str) -> MemoryEstimate:
        """The estimate of ``num_envs`` such envs side by side (a vector env's members): every
        allocation ``num_envs`` times, except the ``shared`` and ``transient`` ones."""
        allocations = tuple(
            a if a.shared or a.transient else replace(
                a, count=a.count * num_envs, factors=("num_envs", *a.factors), fix=f"lower num_envs, or {a.fix}"
            )
            for a in self.allocations
        )
        return replace(self, owner=owner, arguments={"num_envs": num_envs, **self.arguments}, allocations=allocations)


def _sci(n: int) -> str:
    """``n`` to three significant digits, also beyond the float range: ``'3.5e+21'``."""
    try:
        return f"{float(n):.3g}"
    except OverflowError:
        digits = str(n)
        return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


def format_count(n: int) -> str:
    """An exact count with thousands separators, or three significant digits from 10^15 on.

    >>> format_count(2_000_000_000), format_count(10**20)
    ('2,000,000,000', '1e+20')
    """
    return f"{n:,}" if n < 10**15 else _sci(n)


def format_bytes(n: int) -> str:
    """``n`` bytes in decimal units, three significant digits: ``'3.4 GB'``, ``'512 B'``.

    >>> format_bytes(999), format_bytes(999_999), format_bytes(70_000_000_048), format_bytes(10**30)
    ('999 B', '1 MB', '70 GB', '1e+30 bytes')
    """
    if n < 1000:
        return f"{n} B"
    try:
        rounded = float(f"{float(n):.3g}")  # 999,999 -> 1e6, so that it reads 1 MB, not 1e+03 kB
    except OverflowError:
        return f"{_sci(n)} bytes"
    for power, unit in ((3, "kB"), (6, "MB"), (9, "GB"), (12, "TB"), (15, "PB"), (18, "EB"), (21, "ZB"), (24, "YB")):
        if rounded < 1000 * 10**power:
            return f"{rounded / 10**power:.3g} {unit}"
    return f"{_sci(n)} bytes"


_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "kib": 2**10,
    "m": 10**6, "mb": 10**6, "mib": 2**20,
    "g": 10**9, "gb": 10**9, "gib": 2**30,
    "t": 10**12, "tb": 10**12, "tib": 2**40,
}


def _parse_bytes(text: str) -> int:
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS or float(match.group(1)) <= 0:
        raise ValueError(
            f"${MEMORY_LIMIT_ENV}={text!r} is not a memory size; write bytes or a number with a unit, "
            "e.g. 8GB, 512MiB or 2e9"
        )
    return int(float(match.group(1)) * _UNITS[unit])


def _read_int(path: str) -> int | None:
    try:
        with open(path, "rb") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):  # missing file, "max", empty
        return None


def _cgroup_room() -> int | None:
    """Bytes left under the cgroup memory limit (v2, then v1), or None without a limit."""
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        limit = _read_int(limit_file)
        if limit is not None and limit < 2**60:  # v1 writes ~2**63 for "no limit"
            return max(limit - (_read_int(usage_file) or 0), 0)
    return None


def available_memory_bytes() -> int | None:
    """The memory this process can still allocate, in bytes, or None where it cannot be read.

    Linux: ``MemAvailable`` of ``/proc/meminfo`` (free memory plus reclaimable caches), capped
    by the room under the cgroup limit (containers); elsewhere the physical memory.
    """
    available = None
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    available = int(line.split()[1]) * 1024  # the file says kB and means KiB
                    break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or no such name
            return None
    room = _cgroup_room()
    return available if room is None else min(available, room)


def memory_limit_bytes() -> int:
    """The bytes an env may take: ``$LINBANDIT_MEMORY_LIMIT`` if set, else
    :func:`available_memory_bytes` (numpy's largest array, ``sys.maxsize``, where unknown)."""
    override = os.environ.get(MEMORY_LIMIT_ENV)
    if override:
        return _parse_bytes(override)
    available = available_memory_bytes()
    return sys.maxsize if available is None else available


def _bound(factors: tuple[str, ...], itemsize: int, room: int) -> str:
    """``'n_arms x d must stay below about 6.7e+08'``: the largest product of ``factors`` whose
    ``itemsize`` bytes a number fit in ``room`` bytes (for ``d x d``, the bound on ``d``)."""
    largest_count = room // itemsize
    if len(set(factors)) == 1 and len(factors) > 1:
        return f"{factors[0]} must stay below about {format_count(math.isqrt(largest_count))}"
    return f"{' x '.join(factors)} must stay below about {_sci(largest_count)}"


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
    source = f"the limit ${MEMORY_LIMIT_ENV}" if os.environ.get(MEMORY_LIMIT_ENV) else "the memory available"
    arguments = ", ".join(f"{name}={value!r}" for name, value in estimate.arguments.items())
    raise EnvTooLargeError(
        f"{estimate.owner}({arguments}) needs about {format_bytes(total)} of memory ({format_count(total)} bytes), "
        f"more than {source} ({format_bytes(limit)}). Most of it grows with {' x '.join(big.factors)} = "
        f"{format_count(big.count)} numbers at {itemsize} bytes each ({'; '.join(a.what for a in group)}). "
        f"To fix: {big.fix}{bound}."
    )
