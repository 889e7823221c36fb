"""The batched evaluation path: all seeds of a run advanced together as one tensor program.

:func:`run_batched` plays the same episodes as :func:`linbandit_gym.evaluate.run` -- seed ``s``
seeds both the env member and the agent member -- through a native vector env
(:mod:`linbandit_gym.vector`) and a batched agent (:mod:`agents.batched`), in the one loop
(:func:`linbandit_gym.loop.play`), and returns the same per-round records (one per (agent,
env, seed, round), same columns, same order: seed by seed, round by round).
``run(..., batched=None)`` takes this path by itself when :func:`can_batch` says the env id and
the agent allow it, there are at least :data:`MIN_BATCH` seeds and one member's state is small
(:func:`member_state_is_small`).

What differs from the loop over seeds: ``agent_time`` (CPU seconds, as in ``run``),
``agent_wall_time`` and ``wall_time`` are each member's share of the batch's time (batch
seconds / B, cumulated), and ``time_shared_by`` says B: a member-round's share, not the time
the run would take alone (a batch of B costs neither B times one run nor one run's time), so
tables and figures of cost read the runs timed alone where there are any
(:func:`linbandit_gym.evaluate.timed_runs`). ``memory_bytes`` is what the unbatched agent
reports (the batch holds B times that, plus padding for DBSLinUCB).
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import pandas as pd
from tqdm.auto import tqdm

from .feedback import FeedbackSchedule
from .loop import agent_label, batch_members, check_seeds, env_shape, play
from .registration import register_envs
from .threads import DEFAULT_THREADS, check_threads, cpu_clock, thread_limit
from .vector import supports_vector

__all__ = [
    "batch_is_faster",
    "can_batch",
    "member_state_is_small",
    "members_agent",
    "play_members",
    "run_batched",
    "vector_env",
    "DEFAULT_MAX_BATCH",
    "MIN_BATCH",
    "SMALL_STATE",
]

#: seeds advanced together at most (more seeds run in consecutive chunks)
DEFAULT_MAX_BATCH = 64

#: By default (``run(..., batched=None)``, and the sweep planner's ``batched=None``) only
#: members whose state is at most this (1 MiB, by the class's
#: :meth:`~agents.base.Agent.estimate_memory_bytes`) advance as a batch: their rounds are bound
#: by per-call overhead, which a batch shares. Larger states are bound by the arithmetic and the
#: memory traffic on the state itself, which a batch does not share: B interleaved members stream
#: their states through the caches every round, where one seed after another keeps one member's
#: hot. Measured on this 2-core box (``benchmarks/bench_batch_size.py``, 1 thread, numpy batches
#: against the runs one by one, MNIST d = 784, K = 10): SOFUL l = 20 (0.5 MiB) 2.2-2.9x at B = 8
#: and 19, l = 76 (1.5 MiB) 1.3-1.6x, l = 100 (2.1 MiB) 0.99-1.16x, l = 150 (3.4 MiB) 0.98-1.0x,
#: OFUL (4.9 MiB) 0.61-0.90x: the gain falls as the members' states leave the caches, and at the few
#: MiB of the paper's larger sketches a batch is no faster.
SMALL_STATE = 1024**2

#: By default (``run(..., batched=None)``, and the sweep planner's ``batched=None``) a batch has
#: at least this many members: from 4 members on a batch is the faster (numpy batches, the CPU's
#: backend: 1.3-2.1x per member-round at B = 4 on Synthetic d = 50 and on MNIST's small sketches),
#: while at 2 it is within the noise of the runs one by one (1.04-1.17x)
#: (``benchmarks/bench_batch_size.py`` measures both per member-round against B).
MIN_BATCH = 4


def _env_id(env: Any) -> str | None:
    return env if isinstance(env, str) else None


def can_batch(env: Any, agent: Any) -> bool:
    """Whether ``run(env, agent, ...)`` can take the batched path: ``env`` is a registered id
    with a native vector env and ``agent`` one whose class batches (declares its ``batching``)."""
    from agents.batched import supports_batched  # torch loads on first use, not with the package

    env_id = _env_id(env)
    return env_id is not None and supports_vector(env_id) and supports_batched(agent)


def batch_is_faster(env: Any, env_kwargs: dict | None, agent: Any, seeds: list[int]) -> bool:
    """Whether ``run(env, agent, seeds)`` takes the batched path by default: there are at least
    :data:`MIN_BATCH` seeds, env and agent can batch (:func:`can_batch`) and one member's state
    is small (:func:`member_state_is_small`)."""
    return (
        len(seeds) >= MIN_BATCH
        and can_batch(env, agent)
        and member_state_is_small(env, env_kwargs, agent, seeds[0])
    )


def member_state_is_small(env_id: str, env_kwargs: dict | None, agent: Any, seed: int) -> bool:
    """Whether one member of ``agent`` (one whose class batches) holds at most
    :data:`SMALL_STATE` on the arm sets of ``env_id``: where a batch of seeds is faster than the
    seeds one by one."""
    from agents.batched import constructor_args

    n_arms, d = env_shape(env_id, dict(env_kwargs or {}), seed)
    estimate = type(agent).estimate_memory_bytes(d, n_arms, **constructor_args(agent))
    return estimate is not None and estimate <= SMALL_STATE


def run_batched(
    env: str,
    agent: Any,
    seeds: int | Iterable[int] = (0,),
    *,
    env_kwargs: dict | None = None,
    agent_name: str | None = None,
    env_name: str | None = None,
    max_rounds: int | None = None,
    progress: bool | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    threads: int | None = DEFAULT_THREADS,
    feedback_delay: int = 0,
    update_every: int = 1,
) -> pd.DataFrame:
    """Play one episode per seed, all seeds at once, and return the per-round records.

    Arguments as :func:`linbandit_gym.evaluate.run`, ``threads``, ``feedback_delay`` and
    ``update_every`` included (``env`` must be an env id with a native vector env; ``agent`` an
    agent of ours, or its class), plus ``max_batch``: at most that many seeds advance together
    (more run in consecutive chunks, bounding memory). Every member learns by the same schedule,
    as its single run would.

    Raises ``ValueError`` when the env or the agent has no batched version, naming the fix
    (``run(..., batched=False)``).

    Example:

    >>> from agents import OFUL
    >>> records = run_batched("LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=3,
    ...                       env_kwargs=dict(d=5, n_arms=4, horizon=10))
    >>> records.groupby("seed")["t"].max().tolist()
    [10, 10, 10]
    """
    from agents.batched import batched, supports_batched

    register_envs()  # idempotent: the vector entry points are looked up by id
    seeds = check_seeds(seeds, max_rounds)
    threads = check_threads(threads)
    feedback = FeedbackSchedule(feedback_delay, update_every)
    from agents._validate import Interval, check_value  # torch loads on first use

    max_batch = check_value("max_batch", max_batch, [Interval(numbers.Integral, 1, None)])
    if isinstance(agent, type):
        agent = agent()
    env_id = _env_id(env)
    if env_id is None or not supports_vector(env_id):
        raise ValueError(
            f"the batched path needs an env id with a native vector env, got {env!r}; "
            "run(..., batched=False) plays the seeds one by one"
        )
    if not supports_batched(agent):
        raise ValueError(
            f"agent {type(agent).__name__} has no batched version; "
            "run(..., batched=False) plays the seeds one by one"
        )
    e_name = env_name if env_name is not None else env_id
    a_name = agent_label(agent, agent_name)
    env_kwargs = dict(env_kwargs or {})

    chunks = [seeds[i : i + max_batch] for i in range(0, len(seeds), max_batch)]
    show = sys.stderr.isatty() if progress is None else bool(progress)
    bar = None
    frames = []
    cpu, _ = cpu_clock(threads)
    try:
        for chunk in chunks:
            venv = vector_env(env_id, chunk, env_kwargs)
            try:
                if bar is None:
                    rounds = min(x for x in (venv.unwrapped.horizon, max_rounds) if x is not None)
                    bar = tqdm(
                        total=rounds * len(seeds),
                        disable=not show,
                        desc=f"{a_name} on {e_name} (batched)",
                    )
                members = batch_members(
                    venv,
                    batched(agent, len(chunk)),
                    chunk,
                    [a_name] * len(chunk),
                    [e_name] * len(chunk),
                )
                with thread_limit(threads):
                    played = play(
                        members,
                        max_rounds=max_rounds,
                        cpu=cpu,
                        bar=bar if show else None,
                        feedback=feedback,
                    )
                    frames.append(played.frame())
            finally:
                venv.close()
    finally:
        if bar is not None:
            bar.close()
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def members_agent(configs: list[dict]) -> Any:
    """One batched agent whose member i plays as the agent that ``configs[i]`` (``{"name",
    "args"}``: a registered name or ``module:Class`` and its arguments, as a sweep's run config
    names it) builds (:func:`agents.batched.batched_members`)."""
    from agents.batched import batched_members

    from .registry import resolve_agent

    return batched_members([resolve_agent(c["name"], dict(c["args"])) for c in configs])


def vector_env(env_id: str, seeds: list[int], env_kwargs: dict):
    """The vector env that plays ``seeds``: one member per distinct seed (members of a batch
    that share a seed share its arm sets, see
    :meth:`~linbandit_gym.vector.LinBanditVectorEnv.step_players`)."""
    return gym.make_vec(
        env_id, num_envs=len(set(seeds)), vectorization_mode="vector_entry_point", **env_kwargs
    )


def play_members(
    env: str,
    agent: Any,
    seeds: list[int],
    *,
    agent_names: list[str],
    env_names: list[str],
    env_kwargs: dict | None = None,
    max_rounds: int | None = None,
    threads: int | None = DEFAULT_THREADS,
    feedback_delay: int = 0,
    update_every: int = 1,
) -> list[pd.DataFrame]:
    """Play one batch whose members may differ in more than their seed, and return the
    records of each member (one frame per member, as :func:`linbandit_gym.evaluate.run` gives
    for its run).

    ``agent`` is a batched agent of B members (e.g. :func:`agents.batched.batched_members` of B
    agents that differ in ``lam``/``beta``/...), played on one vector env of ``env`` with B
    members; member i is seeded ``seeds[i]`` (seeds may repeat: members that differ in their
    arguments play the same episode) and labelled ``agent_names[i]`` on ``env_names[i]``.
    Every member learns by the schedule ``feedback_delay``, ``update_every``
    (:class:`~linbandit_gym.feedback.FeedbackSchedule`). This is what a sweep batch runs
    (:func:`linbandit_gym.experiments.runner.execute_batch`); :func:`run_batched` is the same
    loop over one agent's seeds.
    """
    seeds = check_seeds(seeds, max_rounds, distinct=False)
    threads = check_threads(threads)
    feedback = FeedbackSchedule(feedback_delay, update_every)
    B = getattr(agent, "batch_size", None)
    if not (len(seeds) == len(agent_names) == len(env_names) == B):
        raise ValueError(
            f"a batch of {B} members needs {B} seeds, agent names and env names, got "
            f"{len(seeds)}, {len(agent_names)} and {len(env_names)}"
        )
    cpu, _ = cpu_clock(threads)
    venv = vector_env(env, seeds, dict(env_kwargs or {}))
    try:
        with thread_limit(threads):
            members = batch_members(venv, agent, seeds, agent_names, env_names)
            played = play(members, max_rounds=max_rounds, cpu=cpu, feedback=feedback)
    finally:
        venv.close()
    return played.member_frames()
