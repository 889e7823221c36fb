"""The sweep planner: which pending runs advance together as one batched tensor program.

Runs that share the env id and env arguments (horizon included), the agent name (its class),
every agent argument except those the class lets batch members differ in (its
``per_member_args``, e.g. ``lam``, ``beta``, ``sketch_size``) and the recording options are
packed into *batches* (:func:`batch_key`): :func:`linbandit_gym.batched.play_members` plays
them as the members of one vector env and one batched agent (member i seeded as its run, with
its own arguments and labels), and each member is still saved as its own run. A batch is
bounded by ``max_batch`` members and by a memory budget (``batch_memory`` bytes over a
conservative per-member estimate, :func:`member_bytes`, taken at the batch's largest member
since members are padded to it, plus each member's records); members whose estimates differ by
more than :data:`PAD_RATIO` go to different batches, so that a small sketch does not pay for a large
one's padding; DBSLinUCB members with different ``eps`` too (:data:`KEPT_APART`). Everything
else runs on its own: agents whose class does not batch (``batchable()``, e.g. a user's
``module:Class``), envs without a native vector env (BAI), matrix-approximation sweeps, runs
recording the spectral error (their diagnostics wrap one agent), and groups of a single
pending run. By default (``batched=None``) members whose state is large
(:data:`~linbandit_gym.batched.SMALL_STATE`) also run on their own: a batch of them is not faster;
and so do the members of a batch that would have fewer than
:data:`~linbandit_gym.batched.MIN_BATCH` of them, where one run after another is faster.

A batch member's records hold a share of the batch's time, not its own (``time_shared_by``);
with a ``timing_seed`` (a sweep's first seed, by default), the run of every configuration with
that seed runs on its own, so that every configuration has a time measured alone, which the
tables and figures of cost read.

What the planner knows of an agent it asks of the agent's class, through the registry
(:class:`linbandit_gym.registry.AgentEntry`): whether it batches, its ``per_member_args`` and
its memory estimate. No agent is built here.

With several workers, batches are halved (largest first) until every worker has a unit, so
batching never leaves a core idle that the per-run path would have used (by default, not into
halves of fewer than :data:`~linbandit_gym.batched.MIN_BATCH` members).

How much CPU time the planned runs take is read from the planner's own estimates, a member's
state (:func:`member_bytes`) and a run's rounds (its env's horizon), by :func:`cpu_seconds`:
the rounds times the cost of a round, :data:`ROUND_CPU_S` for a state of at most
:data:`SMALL_STATE` (a round bound by per-call overhead), in proportion to the state above it (a
round bound by the arithmetic on the state). The sweep starts local worker processes only where
that work pays for their start-up (:func:`~.backends.worker_count`).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from linbandit_host.memory import parse_bytes

from ..batched import DEFAULT_MAX_BATCH, MIN_BATCH, SMALL_STATE
from ..loop import env_shape as _env_shape
from ..registry import AgentEntry, lookup_agent
from .config import RunSpec, canonical_json

__all__ = [
    "DEFAULT_BATCH_MEMORY",
    "KEPT_APART",
    "PAD_RATIO",
    "ROUND_CPU_S",
    "SMALL_STATE",
    "batch_key",
    "check_max_batch",
    "cpu_seconds",
    "env_shape",
    "member_bytes",
    "pack",
    "parse_bytes",
    "per_member_args",
    "round_cpu_seconds",
    "run_rounds",
]

#: Memory budget of one batch (bytes): 2 GiB (sizes are binary: :mod:`linbandit_host.memory`).
DEFAULT_BATCH_MEMORY = 2 * 1024**3

#: A batch's largest member estimate (:func:`member_bytes`) is at most this many times its smallest.
PAD_RATIO = 2.0

#: Per-member arguments the planner still keeps apart: DBSLinUCB members with different ``eps``
#: close blocks and reach the exact phase on different rounds, and a batch of them then pays
#: the sketched and the exact phase for every member (measured on MNIST, d = 784, eps in
#: {2, 8, 25}: one batch 1.3-1.5x slower than one batch per eps; members differing in ``l0``
#: at one eps cost about the same either way).
KEPT_APART = ("eps",)

#: CPU seconds of one round of a run played alone whose agent state is at most
#: :data:`SMALL_STATE` (its :func:`member_bytes`): the env step, the agent's act and update and the
#: round's records. Such rounds are bound by per-call overhead, so they cost about the same at any
#: such state: measured 0.11-0.26 ms on LinBandit-Synthetic-v0 (K = 20, d = 10 to 200; OFUL, SOFUL
#: and CBSCFD l = 10, DBSLinUCB l0 = 5; one thread; a run's CPU time over its rounds), of which
#: this is the upper end, so that short work is not taken for shorter than it is. A larger state
#: costs this per SMALL_STATE bytes of it (:func:`round_cpu_seconds`): OFUL at d = 784, K = 10
#: (4.9 MiB) measured 0.74 ms a round, estimated 1.2 ms.
ROUND_CPU_S = 0.25e-3


def check_max_batch(max_batch: Any) -> int:
    """The members of one batch at most: ``max_batch``, or :data:`DEFAULT_MAX_BATCH` for
    ``None``; a ``ValueError`` for anything but an int >= 1."""
    max_batch = DEFAULT_MAX_BATCH if max_batch is None else max_batch
    if isinstance(max_batch, bool) or not isinstance(max_batch, numbers.Integral) or max_batch < 1:
        raise ValueError(f"max_batch must be an int >= 1, got {max_batch!r}")
    return int(max_batch)


def _entry(name: str) -> AgentEntry | None:
    """The registry's entry of a registered agent name (``None`` for a ``module:Class``, which is
    not imported to plan, or a name that does not resolve)."""
    if ":" in name:
        return None
    try:
        return lookup_agent(name)
    except ValueError:
        return None


def per_member_args(name: str) -> tuple[str, ...]:
    """The arguments in which the members of a batch of agent ``name`` may differ: its class's
    ``per_member_args`` (none for a ``module:Class`` agent, an unknown name or a class without
    it)."""
    entry = _entry(name)
    return () if entry is None else entry.per_member_args()


def batch_key(spec: RunSpec) -> str:
    """What runs must share to be packed together: the whole config but the seed and the
    agent arguments named by :func:`per_member_args` (except :data:`KEPT_APART`). Labels are
    not part of it: each member keeps its own (its records and metadata are its run's)."""
    config = {k: v for k, v in spec.config.items() if k != "seed"}
    agent = config.get("agent")
    varying = per_member_args(agent["name"]) if isinstance(agent, dict) and "name" in agent else ()
    varying = tuple(arg for arg in varying if arg not in KEPT_APART)
    if varying:
        config["agent"] = {
            **agent,
            "args": {k: v for k, v in agent["args"].items() if k not in varying},
        }
    return canonical_json(config)


def _batchable(spec: RunSpec) -> bool:
    """Whether ``spec`` may be a member of a batch (else it runs on its own)."""
    from ..vector import supports_vector

    config = spec.config
    if config.get("task", "bandit") != "bandit" or (config.get("record") or {}).get(
        "spectral_error"
    ):
        return False  # matrix approximation, or diagnostics that wrap one unbatched agent
    entry = _entry(config["agent"]["name"])
    return entry is not None and entry.batchable() and supports_vector(config["env"]["id"])


def member_bytes(name: str, args: dict[str, Any], n_arms: int, d: int) -> float:
    """The class's conservative estimate of what one member of a batch of agent ``name`` built with
    ``args`` holds at its peak on arm sets ``(n_arms, d)``
    (:meth:`~agents.base.Agent.estimate_memory_bytes`); ``inf`` when it cannot say, so that
    such a member is never packed by default and fills a memory budget alone."""
    entry = _entry(name)
    estimate = None if entry is None else entry.estimate_memory_bytes(d, n_arms, dict(args))
    return math.inf if estimate is None else estimate


def _split(units: list[list[RunSpec]], workers: int, smallest: int = 1) -> list[list[RunSpec]]:
    """Halve the largest batches until there are ``workers`` units, as long as the halves keep
    ``smallest`` members at least (a batch of one is a single run)."""
    units = [list(u) for u in units]
    while len(units) < workers:
        largest = max(range(len(units)), key=lambda i: len(units[i]), default=None)
        if largest is None or len(units[largest]) < max(2, 2 * smallest):
            break
        unit = units.pop(largest)
        half = math.ceil(len(unit) / 2)
        units[largest:largest] = [unit[:half], unit[half:]]
    return units


def pack(
    specs: list[RunSpec],
    *,
    shapes: dict[str, tuple[int, int]] | None = None,
    batched: bool | None = None,
    batch_memory: int | str = DEFAULT_BATCH_MEMORY,
    max_batch: int | None = None,
    workers: int = 1,
    timing_seed: int | None = None,
) -> list[list[RunSpec]]:
    """Units of work for ``specs``: lists of one run, or batches of runs with the same
    :func:`batch_key`, of at most ``max_batch`` members and ``batch_memory`` bytes (B times
    the largest member's :func:`member_bytes`: members are padded to it).

    Units come in the order of the specs' first appearance; inside a group, members are
    ordered by their estimate (stable) and a new batch starts where the estimate passes
    :data:`PAD_RATIO` times the batch's first. ``shapes`` maps ``canonical_json(env config)`` to
    the ``(K, d)`` of its arm sets (missing: the env is built here to read them). ``batched``:
    ``None`` packs members whose estimate is at most :data:`SMALL_STATE`, in batches of
    :data:`~linbandit_gym.batched.MIN_BATCH` members at least (where a batch is faster),
    ``True`` packs every member that can be packed, ``False`` gives one unit per run.
    ``workers``: split batches until each worker has a unit (see the module docstring).
    ``timing_seed``: runs with this seed run on their own, timed alone (``None``: no such runs).
    """
    budget = parse_bytes(batch_memory, "batch_memory")
    max_batch = check_max_batch(max_batch)
    if batched is False:
        return [[spec] for spec in specs]
    groups: dict[str, list[RunSpec]] = {}
    order: list[tuple[str, RunSpec | None]] = []
    for spec in specs:
        if timing_seed is not None and spec.seed == timing_seed:
            order.append(("", spec))  # its configuration's timing run: played alone
            continue
        key = batch_key(spec)
        if key not in groups:
            groups[key] = []
            order.append((key, None))
        if any(other.run_id == spec.run_id for other in groups[key]):
            order.append(("", spec))  # the same run twice: cannot be two members of one batch
        else:
            groups[key].append(spec)
    shapes = dict(shapes or {})
    units: list[list[RunSpec]] = []
    for key, single in order:
        if single is not None:
            units.append([single])
            continue
        group = groups[key]
        batchable = [len(group) > 1 and _batchable(spec) for spec in group]
        units.extend([spec] for spec, ok in zip(group, batchable) if not ok)
        members = [spec for spec, ok in zip(group, batchable) if ok]
        if not members:
            continue
        env_key = canonical_json(members[0].config["env"])
        if env_key not in shapes:
            shapes[env_key] = env_shape(members[0].config["env"], members[0].seed)
        n_arms, d = shapes[env_key]
        records = _records_bytes(members[0].config["env"])  # each member keeps its own records
        sized = sorted(
            (
                (
                    member_bytes(
                        spec.config["agent"]["name"], spec.config["agent"]["args"], n_arms, d
                    ),
                    spec,
                )
                for spec in members
            ),
            key=lambda m: m[0],
        )
        if batched is None:  # by default only where a batch is faster (SMALL_STATE)
            units.extend([spec] for size, spec in sized if size > SMALL_STATE)
            sized = [(size, spec) for size, spec in sized if size <= SMALL_STATE]
        batch: list[RunSpec] = []
        smallest = largest = 0
        for size, spec in sized:
            fits = (
                batch
                and len(batch) < max_batch
                and size <= PAD_RATIO * smallest
                and (len(batch) + 1) * (max(largest, size) + records) <= budget
            )
            if not fits:
                if batch:
                    units.append(batch)
                batch, smallest, largest = [], size, 0
            batch.append(spec)
            largest = max(largest, size)
        if batch:
            units.append(batch)
    if batched is None:  # by default, batches of MIN_BATCH members at least: fewer run alone
        units = [
            unit
            for small in units
            for unit in ([[spec] for spec in small] if 1 < len(small) < MIN_BATCH else [small])
        ]
        return _split(units, workers, smallest=MIN_BATCH)
    return _split(units, workers)


def run_rounds(env: dict) -> int | None:
    """The rounds of a run on the env config ``env`` (its horizon, from the env's memory
    estimate: nothing is built); ``None`` when the env cannot say."""
    from ..registration import env_memory_estimate

    try:
        return env_memory_estimate(env["id"], **env["args"]).rounds
    except (TypeError, ValueError):
        return None


def _records_bytes(env: dict) -> int:
    """The records one member of a batch on the env config ``env`` keeps (every round:
    :func:`~linbandit_gym.envs.memory.records_bytes` of its horizon); 0 when it cannot say."""
    from ..envs.memory import records_bytes

    rounds = run_rounds(env)
    return 0 if rounds is None else records_bytes(rounds)


def round_cpu_seconds(state_bytes: float) -> float:
    """The estimated CPU seconds of a round of a run played alone whose agent holds
    ``state_bytes`` (:func:`member_bytes`): :data:`ROUND_CPU_S` up to :data:`SMALL_STATE`, in
    proportion to the state above it (``inf`` for a state of unknown size).

    >>> round_cpu_seconds(50_000) == round_cpu_seconds(SMALL_STATE) == ROUND_CPU_S
    True
    >>> round_cpu_seconds(4 * SMALL_STATE) == 4 * ROUND_CPU_S
    True
    """
    return ROUND_CPU_S * max(1.0, state_bytes / SMALL_STATE)


def cpu_seconds(specs: list[RunSpec], shapes: dict[str, tuple[int, int]]) -> float:
    """The estimated CPU seconds of the runs ``specs`` (a unit of :func:`pack`), each played
    alone: the sum of their rounds (:func:`run_rounds`) times :func:`round_cpu_seconds` of their
    :func:`member_bytes` on the ``(K, d)`` of ``shapes`` (keyed as in :func:`pack`). Members of a
    batch cost less than that, so a batch is over-estimated. ``inf`` when a run's rounds or state
    cannot be estimated (a ``module:Class`` agent, an env without a horizon, a
    matrix-approximation run): work of unknown size."""
    total = 0.0
    for spec in specs:
        config = spec.config
        if config.get("task", "bandit") != "bandit":
            return math.inf
        shape = shapes.get(canonical_json(config["env"]))
        rounds = None if shape is None else run_rounds(config["env"])
        if rounds is None:
            return math.inf
        agent = config["agent"]
        total += rounds * round_cpu_seconds(member_bytes(agent["name"], agent["args"], *shape))
    return total


def env_shape(env: dict, seed: int) -> tuple[int, int]:
    """``(K, d)`` of the arm sets of the env config ``env`` (``{"id", "args"}``; built once, then
    closed)."""
    return _env_shape(env["id"], env["args"], seed)
