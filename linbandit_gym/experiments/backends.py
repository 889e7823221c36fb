"""Where runs execute: this process, local worker processes, or a Ray cluster.

Every backend executes *units* (one run, or a batch of runs differing only in seed, planned by
:mod:`.packing`) and yields ``(spec, result, error)`` per run as units complete; the
driver (:func:`linbandit_gym.experiments.sweep`) writes each result as it arrives. Workers
only compute and return: they never write, so Ray workers need no shared file system and a
killed sweep loses only the runs in flight.

Local worker processes never outlive their driver: on Linux the kernel kills them when it
dies (``prctl(PR_SET_PDEATHSIG)``), and everywhere a watchdog thread in each worker exits when
its parent changes (the driver is gone, whatever killed it). They ignore Ctrl-C: the driver
handles it, stops them and keeps every finished run.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from ..threads import DEFAULT_THREADS, check_threads
from .runner import execute_unit

__all__ = ["BACKENDS", "iter_results", "local_workers", "ray_available"]

BACKENDS = ("local", "ray")


def ray_available() -> bool:
    """Whether ``import ray`` works (the optional extra ``linbandit-gym[ray]``)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _format_error(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def _members(unit: dict | list[dict]) -> list[dict]:
    return [unit] if isinstance(unit, dict) else list(unit)


def _failed(unit: dict | list[dict], error: str):
    for spec in _members(unit):
        yield spec, None, error


def _unit_size(unit: dict | list[dict]) -> int:
    return 1 if isinstance(unit, dict) else len(unit)


def iter_results(
    specs: list[dict | list[dict]],
    *,
    backend: str = "local",
    workers: int = 1,
    threads: int | None = DEFAULT_THREADS,
    address: str | None = None,
    curve_points: int = 200,
) -> Iterator[tuple[dict, dict | None, str | None]]:
    """Execute ``specs`` and yield ``(spec, result, None)`` or ``(spec, None, traceback)`` per run.

    Each item of ``specs`` is a run (a spec dict) or a batch (a list of spec dicts that differ
    only in seed, :func:`.runner.execute_batch`); a batch goes to one worker as a unit, its runs
    are yielded together when it completes, and a failed batch yields its traceback for each run.

    Every run has ``threads`` torch and BLAS threads (default 1; ``None``: the executing
    process's setting), see :mod:`linbandit_gym.threads`. ``backend="local"``: ``workers == 1``
    runs in this process; ``workers > 1`` uses a ``spawn`` process pool of at most
    ``cores // threads`` processes (more would only queue for the cores). ``backend="ray"``: one
    Ray task per run (``num_cpus=threads``) on the cluster at ``address`` (``None``: start a local
    Ray with ``workers`` CPUs).
    """
    threads = check_threads(threads)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    if not specs:
        return
    if backend == "ray":
        yield from _ray(specs, workers=workers, threads=threads, address=address, curve_points=curve_points)
    elif workers == 1:
        for unit in specs:
            try:
                results = execute_unit(unit, threads, curve_points)
            except Exception as exc:  # a failed run is recorded; the sweep goes on
                yield from _failed(unit, _format_error(exc))
            else:
                yield from zip(_members(unit), results, [None] * len(results))
    else:
        yield from _processes(specs, workers=workers, threads=threads, curve_points=curve_points)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _watch_parent(parent_pid: int, interval: float) -> None:
    while True:
        time.sleep(interval)
        if os.getppid() != parent_pid:  # re-parented: the driver is gone
            os._exit(1)


def _worker_init(parent_pid: int, interval: float = 0.5) -> None:
    """Run in each worker process before any run: die with the driver, leave Ctrl-C to it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # tqdm's default lock is a multiprocessing semaphore; a worker stopped by Ctrl-C would leave
    # it behind and the resource tracker would warn about it. A worker draws no bars anyway.
    from tqdm.std import tqdm

    tqdm.set_lock(threading.RLock())
    if sys.platform.startswith("linux"):
        try:  # the kernel sends SIGKILL when the driver dies, even if this process is stuck in a write
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the driver died before the line above
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid, interval), daemon=True,
                     name="linbandit-driver-watchdog").start()


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Drop queued runs and terminate the workers now (``shutdown`` alone waits for runs in flight)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)


def local_workers(workers: int, threads: int | None = DEFAULT_THREADS) -> int:
    """How many local worker processes run at once: ``workers``, capped at the cores over the
    threads each run uses (at least 1), so that the runs never queue for the cores."""
    cores = os.cpu_count() or 1
    return max(1, min(workers, cores // (threads or 1)))


def _processes(specs: list[dict], *, workers: int, threads: int | None, curve_points: int):
    ctx = multiprocessing.get_context("spawn")  # fork + torch threads can deadlock
    pool = ProcessPoolExecutor(max_workers=min(local_workers(workers, threads), len(specs)), mp_context=ctx,
                               initializer=_worker_init, initargs=(os.getpid(),))
    # Workers are spawned during submit. With SIGINT blocked there, they start with it blocked
    # (the mask is inherited): a Ctrl-C in their first second (importing torch) prints no
    # traceback. Here a Ctrl-C is only held back until the mask is restored.
    blocking = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    try:
        if blocking:
            old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            futures = {pool.submit(execute_unit, unit, threads, curve_points): unit for unit in specs}
        finally:
            if blocking:
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        pending = set(futures)
        while pending:
            # A timeout, not a blocking wait: a Ctrl-C delivered to another thread of this process
            # (BLAS, Arrow) would not wake a blocked main thread until a run finishes.
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for future in done:
                unit = futures[future]
                exc = future.exception()
                if exc is not None:
                    yield from _failed(unit, _format_error(exc))
                else:
                    yield from zip(_members(unit), future.result(), [None] * _unit_size(unit))
    except BaseException:  # interrupted (Ctrl-C, generator closed): drop queued runs, don't wait
        _stop_workers(pool)
        raise
    pool.shutdown(wait=True)


def _ray(specs: list[dict], *, workers: int, threads: int | None, address: str | None, curve_points: int):
    try:
        import ray
    except ImportError as exc:
        raise ValueError(
            "backend 'ray' needs Ray: pip install 'linbandit-gym[ray]' (or pip install 'ray[default]')"
        ) from exc
    started_here = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=workers, **kwargs)
        started_here = True
    try:
        remote = ray.remote(num_cpus=threads or 1, max_retries=0)(execute_unit)
        refs = {remote.remote(unit, threads, curve_points): unit for unit in specs}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                unit = refs[ref]
                try:
                    results = ray.get(ref)
                except Exception as exc:  # RayTaskError carries the worker's traceback
                    yield from _failed(unit, _format_error(exc))
                else:
                    yield from zip(_members(unit), results, [None] * _unit_size(unit))
    finally:
        if started_here:
            ray.shutdown()
