"""The sweep planner: which pending runs advance together as one batched tensor program.

Runs that differ only in their seed -- same env id and env arguments (horizon included), same
agent name and arguments, same labels and recording options -- are packed into *batches*:
:func:`linbandit_gym.batched.run_batched` plays their seeds as the members of one vector env
and one batched agent, and each member is still saved as its own run. A batch is bounded by
``max_batch`` members and by a memory budget (``batch_memory`` bytes over a conservative
per-member estimate, :func:`member_bytes`). Everything else runs on its own, as before: agents
given as ``module:Class`` (no batched twin), envs without a native vector env (BAI), matrix-
approximation sweeps, runs recording the spectral error (their diagnostics wrap one agent),
and groups of a single pending run.

With several workers, batches are halved (largest first) until every worker has a unit, so
batching never leaves a core idle that the per-run path would have used.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

from .config import RunSpec, canonical_json

__all__ = ["DEFAULT_BATCH_MEMORY", "batch_key", "member_bytes", "pack", "parse_bytes"]

#: Memory budget of one batch (bytes): 2 GiB.
DEFAULT_BATCH_MEMORY = 2 * 1024**3

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


def batch_key(spec: RunSpec) -> str:
    """What runs must share to be packed together: everything but the seed."""
    config = {k: v for k, v in spec.config.items() if k != "seed"}
    return canonical_json([config, spec.agent_label, spec.env_label, spec.family])


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
    """Units of work for ``specs``, in their order: lists of one run, or batches of runs that
    differ only in seed (:func:`batch_key`), of at most ``max_batch`` members and
    ``batch_memory`` bytes (:func:`member_bytes` per member).

    ``shapes`` maps ``canonical_json(env config)`` to the ``(K, d)`` of its arm sets (missing:
    the env is built here to read them). ``batched``: ``None`` or ``True`` pack what can be
    packed; ``False`` gives one unit per run. ``workers``: split batches until each worker has a
    unit (see the module docstring).
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
        if any(other.seed == spec.seed for other in groups[key]):
            order.append(("", spec))  # the same seed twice: cannot be two members of one batch
        else:
            groups[key].append(spec)
    shapes = dict(shapes or {})
    units: list[list[RunSpec]] = []
    for key, single in order:
        if single is not None:
            units.append([single])
            continue
        group = groups[key]
        agent = _batchable_agent(group[0]) if len(group) > 1 else None
        if agent is None:
            units.extend([spec] for spec in group)
            continue
        env_key = canonical_json(group[0].config["env"])
        if env_key not in shapes:
            shapes[env_key] = env_shape(group[0].config["env"], group[0].seed)
        n_arms, d = shapes[env_key]
        size = max(1, min(max_batch, budget // max(1, member_bytes(agent, n_arms, d))))
        units.extend(group[i : i + size] for i in range(0, len(group), size))
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
