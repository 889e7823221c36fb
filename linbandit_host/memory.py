"""How much memory this process may still take, and how sizes are written in messages.

Envs (:mod:`linbandit_gym.envs.memory`) and agents (their constructors) refuse what cannot fit
*before* allocating it, against this one limit: the memory available now, the smaller of
``MemAvailable`` (``/proc/meminfo``) and the room left under the process's cgroup limit, else the
physical memory (``os.sysconf``); ``$LINBANDIT_MEMORY_LIMIT`` (``"8GB"``, ``"512MiB"``, ``"2e9"``)
overrides it. Standard library only, so that ``agents`` and ``linbandit_gym`` both sit above it
without either importing the other.
"""

from __future__ import annotations

import os
import re
import sys

__all__ = ["MEMORY_LIMIT_ENV", "available_memory_bytes", "format_bytes", "format_count", "format_sci", "memory_limit_bytes",
           "memory_limit_source"]

#: Environment variable that overrides the memory limit (bytes, or a number with a unit).
MEMORY_LIMIT_ENV = "LINBANDIT_MEMORY_LIMIT"


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
        return f"{format_sci(n)} bytes"
    for power, unit in ((3, "kB"), (6, "MB"), (9, "GB"), (12, "TB"), (15, "PB"), (18, "EB"), (21, "ZB"), (24, "YB")):
        if rounded < 1000 * 10**power:
            return f"{rounded / 10**power:.3g} {unit}"
    return f"{format_sci(n)} bytes"


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
    """The bytes an env or an agent may take: ``$LINBANDIT_MEMORY_LIMIT`` if set, else
    :func:`available_memory_bytes` (numpy's largest array, ``sys.maxsize``, where unknown)."""
    override = os.environ.get(MEMORY_LIMIT_ENV)
    if override:
        return _parse_bytes(override)
    available = available_memory_bytes()
    return sys.maxsize if available is None else available



def memory_limit_source() -> str:
    """How messages name the limit: the environment variable when it is set, else the machine's memory."""
    return f"the limit ${MEMORY_LIMIT_ENV}" if os.environ.get(MEMORY_LIMIT_ENV) else "the memory available"
