"""One thread policy for every entry point, and the clock that times the agents.

**Threads.** A bandit round is a handful of small matrix ops: handing them to a pool of
threads costs more than it saves, and on a machine shared with other work the extra threads
fight for the cores and slow every op by up to an order of magnitude (measured: SOFUL l=20 on
MNIST at 0.25 ms/round alone, 1.53 ms/round next to two busy processes with torch's default
threads). So every entry point -- :func:`linbandit_gym.run`, ``sweep``, ``tune``, ``reproduce``
and every ``linbandit`` command -- runs each run with :data:`DEFAULT_THREADS` = 1 torch
intra-op thread and 1 BLAS thread (numpy/scipy's OpenBLAS or MKL, through ``threadpoolctl``
when it is installed) unless given ``threads=`` / ``--threads``. Parallelism comes from
running several runs at once (``workers``), one per core.

**Clock.** ``agent_time`` in the records is CPU time, not wall time, so that it measures the
agent and not the machine's load: a process spinning on the other core, or a sweep's other
workers, do not change it (the wall time of the same interval is kept as ``agent_wall_time``).
Which CPU clock: with 1 thread every torch op runs inline on the calling thread, so the
calling thread's CPU time (``time.thread_time``) is all of the agent's work and excludes
anything else the process does (a progress-bar thread, a Ray driver). With more threads the
work is spread over torch's pool, so the process's CPU time (``time.process_time``) is used: it
counts every thread's share (and reads as CPU-seconds, which can exceed the wall time).
"""

from __future__ import annotations

import contextlib
import numbers
import sys
import time
from collections.abc import Callable, Iterator

__all__ = [
    "DEFAULT_THREADS",
    "check_threads",
    "thread_limit",
    "set_threads",
    "cpu_clock",
    "thread_state",
    "thread_record",
]

#: Torch and BLAS threads per run (or per worker process) unless told otherwise.
DEFAULT_THREADS = 1


def check_threads(threads: int | None, what: str = "threads") -> int | None:
    """``threads`` if it is ``None`` (leave the process as it is) or an int >= 1, else
    ``ValueError``."""
    from agents._validate import Interval, check_value  # the one rule writer; imports torch

    rule = Interval(
        numbers.Integral,
        1,
        None,
        hint="torch and BLAS threads per run; None leaves them as they are",
    )
    return check_value(what, threads, [rule, None])


#: threadpoolctl's controller of the loaded BLAS libraries, and ``len(sys.modules)`` when it was
#: made
_blas_controller: tuple = (None, -1)


def _blas_controller_now():
    """``threadpoolctl``'s controller of the BLAS libraries loaded now, or ``None`` without
    threadpoolctl.

    Finding the BLAS libraries scans every shared library of the process (milliseconds, a cost
    every ``run()`` would pay), so the controller is kept, and made again only when modules
    have been imported since (an import may load another BLAS). It reads and sets the
    libraries' threads live: keeping it changes no count it reports.
    """
    global _blas_controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # optional: torch's own threads are still set
        return None
    controller, modules = _blas_controller
    if controller is None or modules != len(sys.modules):
        controller = ThreadpoolController()
        _blas_controller = (controller, len(sys.modules))
    return controller


def _blas_limits(threads: int):
    """``threadpoolctl``'s limit on the BLAS pools (numpy/scipy), or ``None`` without threadpoolctl
    (the kept controller, :func:`_blas_controller_now`)."""
    controller = _blas_controller_now()
    return None if controller is None else controller.limit(limits=threads, user_api="blas")


@contextlib.contextmanager
def thread_limit(threads: int | None = DEFAULT_THREADS) -> Iterator[None]:
    """Inside the block: ``threads`` torch intra-op threads and BLAS threads; restored afterwards.

    ``None`` changes nothing.

    >>> import torch
    >>> with thread_limit(1):
    ...     torch.get_num_threads()
    1
    """
    threads = check_threads(threads)
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before != threads:
        torch.set_num_threads(threads)
    blas = _blas_limits(threads)
    try:
        yield
    finally:
        if blas is not None:
            blas.restore_original_limits()
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def set_threads(threads: int | None = DEFAULT_THREADS) -> None:
    """Set torch and BLAS threads for the rest of this process (commands, worker processes)."""
    threads = check_threads(threads)
    if threads is None:
        return
    import torch

    torch.set_num_threads(threads)
    _blas_limits(threads)  # not restored: the limit stays for the process


def cpu_clock(threads: int | None) -> tuple[Callable[[], float], str]:
    """The clock for ``agent_time`` of a run under the thread policy ``threads``, and its name for
    the records: the calling thread's CPU time with 1 thread (torch and BLAS run inline), else
    (more threads, or ``None``: whatever the process has) the whole process's CPU time."""
    if check_threads(threads) == 1:
        return time.thread_time, "thread_cpu"
    return time.process_time, "process_cpu"


def thread_state() -> dict:
    """The threads of this process now: torch intra-op threads and BLAS threads (``None`` if
    unknown)."""
    import torch

    blas = None
    controller = _blas_controller_now()  # threadpoolctl's threadpool_info(), without the scan
    if controller is not None:
        counts = [p["num_threads"] for p in controller.info() if p.get("user_api") == "blas"]
        blas = max(counts) if counts else None
    return {"torch_threads": torch.get_num_threads(), "blas_threads": blas}


def thread_record(threads: int | None) -> dict:
    """What a run's metadata records (call it under the run's :func:`thread_limit`): the policy
    asked for (``threads``), the torch and BLAS threads the run had, and ``agent_clock``, the
    clock of its ``agent_time`` (``"thread_cpu"`` or ``"process_cpu"``)."""
    return {"threads": threads, **thread_state(), "agent_clock": cpu_clock(threads)[1]}
