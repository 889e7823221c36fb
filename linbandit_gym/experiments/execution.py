"""How runs execute: one options object for ``sweep``, ``tune``, ``reproduce`` and the command line.

Where the runs go (local processes or Ray), how many threads each takes, how they are packed
into batched programs and how their times are measured: none of it changes a run's id, config
or records but its times, so it is kept apart from the sweep config, in one frozen
:class:`ExecutionOptions` checked when it is made (before any directory is touched).

>>> options = ExecutionOptions(workers=2, batch_memory="512M")
>>> options.batch_memory, options.backend
(536870912, 'local')
>>> ExecutionOptions.build(options, batched=False).workers
2
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any

from linbandit_host.memory import parse_bytes

from ..threads import DEFAULT_THREADS, check_threads
from .backends import check_backend, check_workers
from .packing import DEFAULT_BATCH_MEMORY, check_max_batch

__all__ = ["ExecutionOptions"]


@dataclass(frozen=True)
class ExecutionOptions:
    """How the runs of a sweep execute (the results do not depend on it, but for their times).

    Attributes:
        workers: local worker processes at most (1: in this process; fewer, or none, where the
            planned runs are too short to pay for starting them:
            :func:`~.backends.worker_count`), or the CPUs of a local Ray.
        backend: ``"local"`` (default) or ``"ray"``.
        address: Ray cluster address (``backend="ray"``); ``None`` starts a local Ray.
        threads: torch and BLAS threads per run (default 1; ``None``: the executing process's own
            setting); see :mod:`linbandit_gym.threads`. Recorded in each run's metadata.
        batched: ``True``: pending runs that differ only in seed and in the agent's
            ``per_member_args`` (lam, beta, ...) advance together as one batched program when
            their agent and env allow it (:mod:`.packing`), each still saved as its own run;
            ``None`` (default): the same for runs whose agent state is small enough for a batch
            to be faster (:data:`linbandit_gym.batched.SMALL_STATE`); ``False``: one run at a time.
        batch_memory: memory budget of one batch in bytes; a size such as ``"2GiB"`` (the
            default) or ``"512M"`` is read by :func:`linbandit_host.memory.parse_bytes`.
        max_batch: members of one batch at most (``None``:
            :data:`linbandit_gym.batched.DEFAULT_MAX_BATCH`).
        timing_runs: ``True`` (default): the run of every configuration with the config's first
            seed is never batched, so that every configuration has a time measured alone (a
            batch member's records hold a share of the batch's time), which the tables and
            figures of cost read; ``False``: every seed may be batched (e.g. tuning, where only
            regret is compared).
        timing_repeats: how many times each timing run is played; its records are the same each
            time but for the times, of which each round keeps the least (what the rest of the
            machine disturbed least); ``None``: the config's ``timing_repeats``, else 1.

    Raises:
        ValueError: a value out of its range, naming the field (checked without connecting to a
            Ray cluster: an address of the wrong form, or Ray not installed, is refused here).
    """

    workers: int = 1
    backend: str = "local"
    address: str | None = None
    threads: int | None = DEFAULT_THREADS
    batched: bool | None = None
    batch_memory: int | str = DEFAULT_BATCH_MEMORY
    max_batch: int | None = None
    timing_runs: bool = True
    timing_repeats: int | None = None

    def __post_init__(self) -> None:
        def set_field(name: str, value: Any) -> None:  # frozen: each field checked once, here
            object.__setattr__(self, name, value)

        set_field("workers", check_workers(self.workers))
        check_backend(self.backend, self.address)  # without connecting anywhere
        set_field("threads", check_threads(self.threads))
        if not any(self.batched is choice for choice in (None, True, False)):
            raise ValueError(f"batched must be None, True or False, got {self.batched!r}")
        if not isinstance(self.timing_runs, bool):
            raise ValueError(f"timing_runs must be True or False, got {self.timing_runs!r}")
        set_field("batch_memory", parse_bytes(self.batch_memory, "batch_memory"))
        if self.max_batch is not None:
            set_field("max_batch", check_max_batch(self.max_batch))
        repeats = self.timing_repeats
        if repeats is not None and (
            isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1
        ):
            raise ValueError(f"timing_repeats must be an int >= 1, got {repeats!r}")

    @classmethod
    def build(cls, options: ExecutionOptions | None = None, **changes: Any) -> ExecutionOptions:
        """``options`` (default: every default) with ``changes`` (field names as keywords), checked:
        what ``sweep``, ``tune`` and ``reproduce`` do with their ``options=`` and keywords.

        Raises:
            TypeError: a keyword that is no field (naming the fields).
        """
        unknown = sorted(set(changes) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(
                f"unknown execution option(s) {', '.join(unknown)}; the options are "
                f"{', '.join(f.name for f in fields(cls))}"
            )
        base = cls() if options is None else options
        if not isinstance(base, cls):
            raise TypeError(f"options must be an ExecutionOptions, got {type(base).__name__}")
        return dataclasses.replace(base, **changes) if changes else base

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The fields, in order: what the command line's flags map to."""
        return tuple(f.name for f in fields(cls))
