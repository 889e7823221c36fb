"""Where runs execute: this process, local worker processes, or a Ray cluster.

Every backend yields ``(spec, result, error)`` as runs complete, in completion order; the
driver (:func:`linbandit_gym.experiments.sweep`) writes each result as it arrives. Workers
only compute and return: they never write, so Ray workers need no shared file system and a
killed sweep loses only the runs in flight.
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from ..threads import DEFAULT_THREADS, check_threads
from .runner import execute_run

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


def iter_results(
    specs: list[dict],
    *,
    backend: str = "local",
    workers: int = 1,
    threads: int | None = DEFAULT_THREADS,
    address: str | None = None,
    curve_points: int = 200,
) -> Iterator[tuple[dict, dict | None, str | None]]:
    """Execute ``specs`` and yield ``(spec, result, None)`` or ``(spec, None, traceback)``.

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
        for spec in specs:
            try:
                result = execute_run(spec, threads, curve_points)
            except Exception as exc:  # a failed run is recorded; the sweep goes on
                yield spec, None, _format_error(exc)
            else:
                yield spec, result, None
    else:
        yield from _processes(specs, workers=workers, threads=threads, curve_points=curve_points)


def local_workers(workers: int, threads: int | None = DEFAULT_THREADS) -> int:
    """How many local worker processes run at once: ``workers``, capped at the cores over the
    threads each run uses (at least 1), so that the runs never queue for the cores."""
    cores = os.cpu_count() or 1
    return max(1, min(workers, cores // (threads or 1)))


def _processes(specs: list[dict], *, workers: int, threads: int | None, curve_points: int):
    ctx = multiprocessing.get_context("spawn")  # fork + torch threads can deadlock
    pool = ProcessPoolExecutor(max_workers=min(local_workers(workers, threads), len(specs)), mp_context=ctx)
    try:
        futures = {pool.submit(execute_run, spec, threads, curve_points): spec for spec in specs}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                spec = futures[future]
                exc = future.exception()
                if exc is not None:
                    yield spec, None, _format_error(exc)
                else:
                    yield spec, future.result(), None
    except BaseException:  # interrupted (Ctrl-C, generator closed): drop queued runs, don't wait
        pool.shutdown(wait=False, cancel_futures=True)
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
        remote = ray.remote(num_cpus=threads or 1, max_retries=0)(execute_run)
        refs = {remote.remote(spec, threads, curve_points): spec for spec in specs}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                spec = refs[ref]
                try:
                    result = ray.get(ref)
                except Exception as exc:  # RayTaskError carries the worker's traceback
                    yield spec, None, _format_error(exc)
                else:
                    yield spec, result, None
    finally:
        if started_here:
            ray.shutdown()
