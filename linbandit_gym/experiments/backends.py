"""Where runs execute: this process, local worker processes, or a Ray cluster.

Every backend executes *units* (one run, or a batch of runs differing only in seed, planned by
:mod:`.packing`) and yields ``(spec, result, error)`` per run as units complete; the
driver (:func:`linbandit_gym.experiments.sweep`) writes each result as it arrives. Workers
only compute and return: they never write, so Ray workers need no shared file system and a
killed sweep loses only the runs in flight.

Local worker processes never outlive their driver: on Linux the kernel kills them when it
dies (``prctl(PR_SET_PDEATHSIG)``), and everywhere a watchdog thread in each worker exits when
its parent changes (the driver is gone, whatever killed it). They ignore Ctrl-C: the driver
handles it, stops them and keeps every finished run. The driver knows which unit each worker
holds: a worker that dies (``kill -9``, the out-of-memory killer) fails only that unit, with
the reason, and a new worker takes its place while units remain.

``workers`` is an upper bound: a worker process costs :data:`WORKER_START_S` of CPU time before
its first unit, and :func:`worker_count` starts only as many as the planned work pays for
(none: the units run in this process).
"""

from __future__ import annotations

import ctypes
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import wait as connection_wait
from typing import Any

from ..text import count
from ..threads import DEFAULT_THREADS, check_threads
from .runner import execute_unit, prepare_worker

__all__ = [
    "BACKENDS",
    "WORKER_START_S",
    "check_backend",
    "check_workers",
    "fewer_workers_line",
    "iter_results",
    "local_workers",
    "ray_available",
    "worker_count",
]

BACKENDS = ("local", "ray")


def ray_available() -> bool:
    """Whether ``import ray`` works (the optional extra ``linbandit-gym[ray]``)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def check_workers(workers: Any) -> int:
    """``workers`` if it is an int >= 1, else a ``ValueError`` saying so."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    return workers


def check_backend(backend: Any, address: Any = None) -> tuple[str, str | None]:
    """``(backend, address)`` if they can be used, checked without connecting anywhere: a known
    backend, an address only for Ray and of a form Ray takes, Ray installed when asked for.

    Raises:
        ValueError: what is wrong and how to fix it.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if address is not None:
        if backend != "ray":
            raise ValueError(
                f"--address {address!r} names a Ray cluster: give it with --backend "
                "ray, or leave it out"
            )
        if not isinstance(address, str) or not address:
            raise ValueError(
                f"--address: expected HOST:PORT, ray://HOST:PORT or auto, got {address!r}"
            )
        _ray_target(address)
    if backend == "ray" and not ray_available():
        raise ValueError(
            "backend 'ray' needs Ray: pip install 'linbandit-gym[ray]' (or pip "
            "install 'ray[default]')"
        )
    return backend, address


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
    check_backend(backend, address)
    check_workers(workers)
    if not specs:
        return
    if backend == "ray":
        yield from _ray(
            specs, workers=workers, threads=threads, address=address, curve_points=curve_points
        )
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
        # the kernel sends SIGKILL when the driver dies, even if this process is stuck in a write
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the driver died before the line above
        os._exit(1)
    threading.Thread(
        target=_watch_parent,
        args=(parent_pid, interval),
        daemon=True,
        name="linbandit-driver-watchdog",
    ).start()


def local_workers(workers: int, threads: int | None = DEFAULT_THREADS) -> int:
    """How many local worker processes run at once: ``workers``, capped at the cores over the
    threads each run uses (at least 1), so that the runs never queue for the cores."""
    cores = os.cpu_count() or 1
    return max(1, min(workers, cores // (threads or 1)))


#: CPU seconds a local worker process spends before its first unit: a spawned Python interpreter
#: importing ``linbandit_gym.cli``, torch, the agents, the envs and the loop
#: (:func:`.runner.prepare_worker`), all of which this process has imported already. Measured by
#: ``benchmarks/bench_small_grid.py``, which prints it ("worker start-up"): 2.0-2.4 s on a 2-core
#: machine, torch's import about 1.4 s of it.
WORKER_START_S = 2.0


def worker_count(unit_seconds: Sequence[float], workers: int) -> int:
    """How many local worker processes to start for units of ``unit_seconds`` estimated CPU
    seconds each (:func:`.packing.cpu_seconds`), at most ``workers`` (already capped by
    :func:`local_workers`); 1: none, the units run in this process.

    In this process the units take their work ``W`` (the sum); on ``n`` workers, started at once,
    :data:`WORKER_START_S` and then ``max(W / n, the largest unit)``. The fewest workers of the
    least time are started; an estimate that is not finite (work of unknown size) starts
    ``workers`` (one per unit at most).

    >>> worker_count([0.1] * 30, 2)  # 3 s of work: two workers would save 1.5 s and cost 2 s
    1
    >>> worker_count([0.1] * 60, 2), worker_count([0.1] * 600, 4)
    (2, 4)
    >>> worker_count([10.0, 3.0, 3.0, 3.0], 4)  # the largest unit bounds the time from 2 on
    2
    """
    workers = check_workers(workers)
    if not unit_seconds or workers == 1:
        return 1
    if any(not math.isfinite(seconds) for seconds in unit_seconds):
        return min(workers, len(unit_seconds))
    total, largest = sum(unit_seconds), max(unit_seconds)
    best, best_time = 1, total
    for n in range(2, min(workers, len(unit_seconds)) + 1):
        time_n = WORKER_START_S + max(total / n, largest)
        if time_n < best_time:
            best, best_time = n, time_n
    return best


def fewer_workers_line(started: int, allowed: int, seconds: float) -> str:
    """What a sweep or tuning says when :func:`worker_count` starts ``started`` of ``allowed``
    worker processes for work of ``seconds`` estimated CPU seconds.

    >>> line = fewer_workers_line(1, 2, 3.04)
    >>> line.split(":")[0], "estimated 3.0 s of CPU" in line
    ('in this process, not on 2 worker processes', True)
    >>> fewer_workers_line(2, 4, 12.0).split(":")[0]
    'on 2 of 4 worker processes'
    """
    where = (
        f"in this process, not on {count(allowed, 'worker process', 'worker processes')}"
        if started == 1
        else f"on {started} of {allowed} worker processes"
    )
    more = "them" if started == 1 else "more"
    return (
        f"{where}: the runs' estimated {seconds:.1f} s of CPU does not pay for starting {more} "
        f"(about {WORKER_START_S:g} s of CPU each); the number of workers is an upper bound"
    )


def _worker_main(conn, parent_pid: int, threads: int | None, curve_points: int) -> None:
    """A worker process: execute the units the driver sends, one at a time, and send back
    ``("ok", results)`` or ``("error", traceback)``; ``None`` means stop."""
    _worker_init(parent_pid)
    prepare_worker()  # its start-up, before the first unit: the units' costs are their own
    while True:
        try:
            unit = conn.recv()
        except EOFError:  # the driver closed its end: nothing more to do
            return
        if unit is None:
            return
        try:
            reply = ("ok", execute_unit(unit, threads, curve_points))
        except Exception as exc:  # a failed run is recorded by the driver; the worker goes on
            reply = ("error", _format_error(exc))
        conn.send(reply)


@contextmanager
def _children_without_current_directory() -> Iterator[None]:
    """Interpreters started in the block (``spawn`` workers, and multiprocessing's resource
    tracker) do not put the current directory first on ``sys.path``: started as ``python -c``,
    each would otherwise import ``multiprocessing``, ``pickle``, ... from a file of that name
    there before it takes the driver's ``sys.path`` (``PYTHONSAFEPATH``, Python 3.11+; a user's
    ``module:Class`` is still looked up there, by :func:`linbandit_gym.specs.load_object`)."""
    previous = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = previous


class _Worker:
    """One worker process, the driver's end of its pipe and the unit it holds (``None``: idle)."""

    def __init__(self, ctx, threads: int | None, curve_points: int):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_worker_main,
            args=(child, os.getpid(), threads, curve_points),
            daemon=True,
            name="linbandit-worker",
        )
        self.unit: dict | list[dict] | None = None
        # Started with SIGINT blocked, the child inherits the mask: a Ctrl-C in its first second
        # (importing torch) prints no traceback. Here a Ctrl-C is only held back until the mask is
        # restored.
        blocking = (
            hasattr(signal, "pthread_sigmask")
            and threading.current_thread() is threading.main_thread()
        )
        if blocking:
            old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with _children_without_current_directory():
                self.process.start()
        finally:
            if blocking:
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        child.close()

    def give(self, unit: dict | list[dict]) -> None:
        self.unit = unit
        self.conn.send(unit)

    def stop(self) -> None:
        """Terminate the process now (a run in flight is dropped) and close the pipe."""
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=5)
        self.conn.close()


def _death(process) -> str:
    """Why a worker process ended: ``"killed by signal SIGKILL"`` or ``"exit code 1"``."""
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _processes(specs: list, *, workers: int, threads: int | None, curve_points: int):
    """Execute the units ``specs`` on a pool of local worker processes, yielding each run's
    result as its unit completes.

    Each worker holds one unit at a time and the driver knows which: a worker that dies (``kill
    -9``, the out-of-memory killer, a crash in native code) fails only the unit it held, with
    the reason, and is replaced by a new process while units remain; the queue goes on.
    """
    ctx = multiprocessing.get_context("spawn")  # fork + torch threads can deadlock
    queue = list(specs)
    queue.reverse()  # pop() from the end: the plan's order
    size = min(local_workers(workers, threads), len(specs))
    pool: list[_Worker] = []
    try:
        pool = [_Worker(ctx, threads, curve_points) for _ in range(size)]
        for worker in pool:
            if queue:
                worker.give(queue.pop())
        while any(worker.unit is not None for worker in pool):
            busy = [worker for worker in pool if worker.unit is not None]
            # A timeout, not a blocking wait: a Ctrl-C delivered to another thread of this process
            # (BLAS, Arrow) would not wake a blocked main thread until a run finishes.
            ready = set(
                connection_wait(
                    [w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=0.2
                )
            )
            for index, worker in enumerate(pool):
                if worker.unit is None or not (
                    worker.conn in ready or worker.process.sentinel in ready
                ):
                    continue
                unit, reply = worker.unit, None
                try:
                    if worker.conn.poll():
                        reply = worker.conn.recv()
                except (EOFError, OSError):  # died while sending its reply
                    reply = None
                if reply is None and worker.process.is_alive():
                    continue  # woke before the reply arrived
                worker.unit = None
                if reply is None:  # the process died holding the unit: fail it, replace the worker
                    worker.process.join(timeout=5)
                    why = _death(worker.process)
                    worker.stop()
                    yield from _failed(
                        unit,
                        f"WorkerDied: the worker process running this run died ({why}); the "
                        "other runs went on; rerun the sweep to retry it\n",
                    )
                    worker = pool[index] = _Worker(ctx, threads, curve_points) if queue else worker
                elif reply[0] == "ok":
                    yield from zip(_members(unit), reply[1], [None] * _unit_size(unit))
                else:
                    yield from _failed(unit, reply[1])
                if queue and worker.process.is_alive():
                    worker.give(queue.pop())
    except BaseException:  # interrupted (Ctrl-C, generator closed): drop queued runs, don't wait
        for worker in pool:
            worker.stop()
        raise
    for worker in pool:  # all done: let each worker leave on its own
        try:
            worker.conn.send(None)
        except OSError:
            pass
    for worker in pool:
        worker.process.join(timeout=5)
        worker.stop()


#: Seconds to wait for a Ray cluster's address to accept a connection before giving up.
RAY_CONNECT_TIMEOUT = 10.0


def _probe_ray_address(address: str, timeout: float = RAY_CONNECT_TIMEOUT) -> None:
    """Fail within ``timeout`` seconds, with one line, if nothing accepts connections at
    ``address`` (``host:port`` or ``ray://host:port``; ``auto`` is left to Ray), where
    ``ray.init`` would retry for minutes."""
    import socket

    target = _ray_target(address)
    if target is None:
        return
    host, port = target
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise ConnectionError(
            f"cannot reach a Ray cluster at {address} ({reason}, waited up to {timeout:g} s): "
            "start one there "
            "(`ray start --head`), or leave out --address to start a local Ray"
        ) from None


def _ray_target(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a Ray address (``host:port`` or ``ray://host:port``), ``None`` for
    ``auto`` or ``local`` (left to Ray); a ``ValueError`` for anything else."""
    target = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        if address in ("auto", "local"):
            return None
        raise ValueError(f"--address {address!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    return host.strip("[]") or "127.0.0.1", int(port)


def _ray(
    specs: list[dict], *, workers: int, threads: int | None, address: str | None, curve_points: int
):
    try:
        import ray
    except ImportError as exc:
        raise ValueError(
            "backend 'ray' needs Ray: pip install 'linbandit-gym[ray]' "
            "(or pip install 'ray[default]')"
        ) from exc
    started_here = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            _probe_ray_address(address)
            try:
                ray.init(address=address, **kwargs)
            # Ray raises ConnectionError, RuntimeError, ...
            except Exception as exc:  # noqa: BLE001
                raise ConnectionError(
                    f"cannot connect to the Ray cluster at {address}: {exc}"
                ) from exc
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
