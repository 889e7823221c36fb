"""The sweep planner: which pending runs advance together as one batched tensor program.

Runs that share the env id and env arguments (horizon included), the agent name (its class),
every agent argument except those the class lets batch members differ in (its
``per_member_args``, e.g. ``lam``, ``beta``, ``sketch_size``) and the recording options are
packed into *batches* (:func:`batch_key`): :func:`linbandit_gym.batched.play_members` plays
them as the members of one vector env and one batched agent (member i seeded as its run, with
its own arguments and labels), and each member is still saved as its own run. A batch is
bounded by ``max_batch`` members and by a memory budget (``batch_memory`` bytes over a
conservative per-member estimate, :func:`member_bytes`, taken at the batch's largest member
since members are padded to it); members whose estimates differ by more than
:data:`PAD_RATIO` go to different batches, so that a small sketch does not pay for a large
one's padding. Everything else runs on its own, as before: agents given as ``module:Class``
(no batched twin), envs without a native vector env (BAI), matrix-approximation sweeps, runs
recording the spectral error (their diagnostics wrap one agent), and groups of a single
pending run.

With several workers, batches are halved (largest first) until every worker has a unit, so
batching never leaves a core idle that the per-run path would have used.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

from .config import RunSpec, canonical_json

__all__ = ["DEFAULT_BATCH_MEMORY", "PAD_RATIO", "batch_key", "member_bytes", "pack", "parse_bytes", "per_member_args"]

#: Memory budget of one batch (bytes): 2 GiB.
DEFAULT_BATCH_MEMORY = 2 * 1024**3

#: A batch's largest member estimate (:func:`member_bytes`) is at most this many times its smallest.
PAD_RATIO = 2.0

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2,
          "g": 1024**3, "gb": 1024**3, "gib": 1024**3, "t": 1024**4, "tb": 1024**4, "tib": 1024**4}


def parse_bytes(value: Any) -> int:
    """A memory size: an int (bytes) or a string such as ``"2GiB"``, ``"512M"``, ``"1.5g"``
    (binary units: K = 1024). Raises ``ValueError`` naming the accepted forms."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        size = int(value)
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(value))
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise ValueError(f"batch memory {value!r} is not a size: give bytes or a number with a unit, "
                             "e.g. 2GiB, 512M, 1.5g")
        size = int(float(match.group(1)) * _UNITS[unit])
    if size < 1:
        raise ValueError(f"batch memory must be positive, got {value!r}")
    return size


def per_member_args(name: str) -> tuple[str, ...]:
    """The arguments in which the members of a batch of agent ``name`` may differ: its class's
    ``per_member_args`` (none for a ``module:Class`` agent, an unknown name or a class without it)."""
    if ":" in name:
        return ()
    from ..cli import agent_factory

    try:
        _, cls = agent_factory(name)
    except ValueError:
        return ()
    return tuple(getattr(cls, "per_member_args", ()))


def batch_key(spec: RunSpec) -> str:
    """What runs must share to be packed together: the whole config but the seed and the
    agent arguments named by :func:`per_member_args`. Labels are not part of it: each member
    keeps its own (its records and metadata are its run's)."""
    config = {k: v for k, v in spec.config.items() if k != "seed"}
    agent = config.get("agent")
    varying = per_member_args(agent["name"]) if isinstance(agent, dict) and "name" in agent else ()
    if varying:
        config["agent"] = {**agent, "args": {k: v for k, v in agent["args"].items() if k not in varying}}
    return canonical_json(config)


def _batchable_agent(spec: RunSpec) -> Any | None:
    """The agent of ``spec`` if it has a batched twin (``None``: run it on its own)."""
    from agents.batched import supports_batched

    from ..cli import resolve_agent
    from ..vector import supports_vector

    config = spec.config
    if config.get("task", "bandit") != "bandit" or (config.get("record") or {}).get("spectral_error"):
        return None  # matrix approximation, or diagnostics that wrap one unbatched agent
    name = config["agent"]["name"]
    if ":" in name or not supports_vector(config["env"]["id"]):
        return None  # a user's agent class, or an env without a native vector env (BAI)
    try:
        agent = resolve_agent(name, dict(config["agent"]["args"]))
    except Exception:  # bad arguments: the per-run path reports them per run
        return None
    return agent if supports_batched(agent) else None


def member_bytes(agent: Any, n_arms: int, d: int) -> int:
    """A conservative estimate of what one member of a batch of ``agent`` holds at its peak, in
    float64 whatever the agent's dtype: OFUL's d x d inverse; a fixed sketch's ``2l x d`` buffer
    with its ``2l x 2l`` Gram and factor; for DBSLinUCB twice d x d (the batch pads every member to
    the largest, and the exact phase holds a d x d inverse), or with ``memory_cap=False`` the
    uncapped blocks' rows (up to ``4 (d + l0)``); plus a few ``K x d`` arm sets and scores."""
    from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB

    f = 8
    arms = 4 * n_arms * d * f
    if isinstance(agent, (SOFUL, CBSCFD)):
        cap = 2 * int(agent._l)
        return arms + f * (cap * d + 2 * cap * cap + cap + 2 * d)
    if isinstance(agent, DBSLinUCB):
        if getattr(agent, "memory_cap", True):
            return arms + 2 * f * d * d + 2 * f * d
        rows = 4 * (d + int(agent.l0))
        return arms + f * (rows * d + 2 * rows * rows + rows) + f * d * d
    if isinstance(agent, OFUL):
        return arms + f * d * d + 2 * f * d
    return arms + 2 * f * d * d  # unknown: as DBSLinUCB


def _split(units: list[list[RunSpec]], workers: int) -> list[list[RunSpec]]:
    """Halve the largest batches until there are ``workers`` units (or only single runs)."""
    units = [list(u) for u in units]
    while len(units) < workers:
        largest = max(range(len(units)), key=lambda i: len(units[i]), default=None)
        if largest is None or len(units[largest]) < 2:
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
) -> list[list[RunSpec]]:
    """Units of work for ``specs``: lists of one run, or batches of runs with the same
    :func:`batch_key`, of at most ``max_batch`` members and ``batch_memory`` bytes (B times
    the largest member's :func:`member_bytes`: members are padded to it).

    Units come in the order of the specs' first appearance; inside a group, members are
    ordered by their estimate (stable) and a new batch starts where the estimate passes
    :data:`PAD_RATIO` times the batch's first. ``shapes`` maps ``canonical_json(env config)`` to
    the ``(K, d)`` of its arm sets (missing: the env is built here to read them). ``batched``:
    ``None`` or ``True`` pack what can be packed; ``False`` gives one unit per run.
    ``workers``: split batches until each worker has a unit (see the module docstring).
    """
    from ..batched import DEFAULT_MAX_BATCH

    budget = parse_bytes(batch_memory)
    max_batch = DEFAULT_MAX_BATCH if max_batch is None else max_batch
    if isinstance(max_batch, bool) or not isinstance(max_batch, numbers.Integral) or max_batch < 1:
        raise ValueError(f"max_batch must be an int >= 1, got {max_batch!r}")
    if batched is False:
        return [[spec] for spec in specs]
    groups: dict[str, list[RunSpec]] = {}
    order: list[tuple[str, RunSpec | None]] = []
    for spec in specs:
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
        agents = [_batchable_agent(spec) for spec in group] if len(group) > 1 else [None] * len(group)
        units.extend([spec] for spec, agent in zip(group, agents) if agent is None)
        members = [(spec, agent) for spec, agent in zip(group, agents) if agent is not None]
        if not members:
            continue
        env_key = canonical_json(members[0][0].config["env"])
        if env_key not in shapes:
            shapes[env_key] = env_shape(members[0][0].config["env"], members[0][0].seed)
        n_arms, d = shapes[env_key]
        sized = sorted(((member_bytes(agent, n_arms, d), spec) for spec, agent in members), key=lambda m: m[0])
        batch: list[RunSpec] = []
        smallest = largest = 0
        for size, spec in sized:
            fits = (batch and len(batch) < max_batch and size <= PAD_RATIO * smallest
                    and (len(batch) + 1) * max(largest, size) <= budget)
            if not fits:
                if batch:
                    units.append(batch)
                batch, smallest, largest = [], size, 0
            batch.append(spec)
            largest = max(largest, size)
        units.append(batch)
    return _split(units, workers)


def env_shape(env: dict, seed: int) -> tuple[int, int]:
    """``(K, d)`` of the arm sets of the env config ``env`` (built once, then closed)."""
    from ..evaluate import make_env

    instance = make_env(env["id"], **env["args"])
    try:
        instance.reset(seed=seed)
        n_arms, d = instance.observation_space.shape[-2:]
    finally:
        instance.close()
    return int(n_arms), int(d)
