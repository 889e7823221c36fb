"""How much memory this process may still take, and the one way sizes are read and written.

Envs (:mod:`linbandit_gym.envs.memory`) and agents (their constructors) refuse what cannot fit
*before* allocating it, against this one limit: the memory available now, the smaller of
``MemAvailable`` (``/proc/meminfo``) and the room left under the process's cgroup limit, else the
physical memory (``os.sysconf``); ``$LINBANDIT_MEMORY_LIMIT`` (``"8GiB"``, ``"512M"``, ``"2e9"``)
overrides it. Standard library only, so that ``agents`` and ``linbandit_gym`` both sit above it
without either importing the other.

Sizes are binary, read and written: a kilobyte is 1024 bytes. :func:`parse_bytes` reads ``K``,
``KB`` and ``KiB`` (any case) alike as 2**10 bytes, ``M``/``MB``/``MiB`` as 2**20,
``G``/``GB``/``GiB`` as 2**30, ``T``/``TB``/``TiB`` as 2**40 and so on (``P``, ``E``, ``Z``, ``Y``);
:func:`format_bytes` writes the IEC names (``KiB``, ``MiB``, ``GiB``), which no reader takes for
powers of 1000. Binary, because memory is: the records count it in KiB (``peak_memory_kib``),
``/proc/meminfo`` and the cgroup limits read here are in binary units, torch reports its
allocations in GiB, and a limit written ``8GB`` means what ``free``, Docker and the JVM mean by
it. A size parsed and printed back reads the same: ``8GB`` is written ``8 GiB``.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import sys

__all__ = [
    "MEMORY_LIMIT_ENV",
    "SIZE_UNITS",
    "available_memory_bytes",
    "format_bytes",
    "format_count",
    "format_sci",
    "memory_limit_bytes",
    "memory_limit_source",
    "parse_bytes",
]

#: Environment variable that overrides the memory limit (bytes, or a number with a unit).
MEMORY_LIMIT_ENV = "LINBANDIT_MEMORY_LIMIT"

#: What each unit :func:`parse_bytes` reads means, in bytes (lower case; binary throughout).
SIZE_UNITS = {"": 1, "b": 1} | {
    form: 1024**power
    for power, prefix in enumerate("kmgtpezy", 1)
    for form in (prefix, prefix + "b", prefix + "ib")
}

#: The names :func:`format_bytes` writes, one per power of 1024.
_NAMES = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")


def format_sci(n: int) -> str:
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
    return f"{n:,}" if n < 10**15 else format_sci(n)


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units (see the module docstring), three significant digits.

    >>> format_bytes(999), format_bytes(1536), format_bytes(3_400_000_000)
    ('999 B', '1.5 KiB', '3.17 GiB')
    >>> format_bytes(1023 * 1024), format_bytes(1023.7 * 1024)
    ('1023 KiB', '1 MiB')
    >>> format_bytes(2**80), format_bytes(10**40)
    ('1 YiB', '1e+40 bytes')
    """
    if n < 1024:
        return f"{n:.0f} B"
    try:
        value = float(n)
    except OverflowError:
        return f"{format_sci(n)} bytes"
    power = 0
    while value >= 1024 and power < len(_NAMES) - 1:
        value /= 1024
        power += 1
    if round(value) >= 1024 and power < len(_NAMES) - 1:  # 1023.5 KiB reads 1 MiB
        power, value = power + 1, value / 1024
    if round(value) >= 1024:  # past the largest unit
        return f"{format_sci(n)} bytes"
    text = f"{value:.3g}"
    if "e" in text:  # 1000 <= value < 1024: every digit, not 1e+03
        text = f"{value:.0f}"
    return f"{text} {_NAMES[power]}"


def parse_bytes(value: object, name: str = "size") -> int:
    """A memory size in bytes: a number, or a string of a number and a unit (``"2GiB"``,
    ``"512M"``, ``"1.5g"``, ``"2e9"``; binary units, see the module docstring). ``name`` is what
    the message calls it (``--batch-memory``, ``$LINBANDIT_MEMORY_LIMIT``).

    >>> parse_bytes("2GB") == parse_bytes("2GiB") == parse_bytes("2g") == 2 * 1024**3
    True

    Raises:
        ValueError: not a size, or less than one byte; the message names the accepted forms.
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        size = float(value)
    else:
        pattern = r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*"
        match = re.fullmatch(pattern, str(value))
        unit = match.group(2).lower() if match else None
        if match is None or unit not in SIZE_UNITS:
            raise ValueError(
                f"{name}={value!r} is not a memory size; write bytes or a number with a unit, "
                "e.g. 8GiB, 512M or 2e9 (K, M, G, T: powers of 1024, with or without B or iB)"
            )
        size = float(match.group(1)) * SIZE_UNITS[unit]
    if not (math.isfinite(size) and size >= 1):
        raise ValueError(f"{name} must be a positive size (at least 1 byte), got {value!r}")
    return int(size)


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
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
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
    """The bytes an env or an agent may take: ``$LINBANDIT_MEMORY_LIMIT`` if set, else
    :func:`available_memory_bytes` (numpy's largest array, ``sys.maxsize``, where unknown)."""
    override = os.environ.get(MEMORY_LIMIT_ENV)
    if override:
        return parse_bytes(override, f"${MEMORY_LIMIT_ENV}")
    available = available_memory_bytes()
    return sys.maxsize if available is None else available


def memory_limit_source() -> str:
    """How messages name the limit: the environment variable when it is set, else the machine's
    memory."""
    return (
        f"the limit ${MEMORY_LIMIT_ENV}"
        if os.environ.get(MEMORY_LIMIT_ENV)
        else "the memory available"
    )
