"""What every path that plays rounds shares: the record columns, seeds, labels and envs.

Layer: the evaluation loop (above the envs, the agents and the registry; below the
experiments and the command line).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym

from .registration import register_envs

__all__ = ["RECORD_COLUMNS", "agent_label", "check_seeds", "env_shape", "make_env"]

#: Columns every record has, in order. Envs may add scalar ``info`` keys (e.g. the
#: best-arm-identification ``recommendation``/``correct``/``n_pulls``) as further columns.
RECORD_COLUMNS = [
    "agent",
    "env",
    "seed",
    "t",
    "action",
    "reward",
    "expected_reward",
    "best_expected_reward",
    "regret",
    "cumulative_regret",
    "agent_time",
    "agent_wall_time",
    "wall_time",
    "memory_bytes",
    "sketch_size",
]


def make_env(env: str | gym.Env | Callable[[], gym.Env], **env_kwargs: Any) -> gym.Env:
    """An env from an id (``gym.make(id, **env_kwargs)``), an instance, or a factory."""
    if isinstance(env, str):
        register_envs()  # idempotent: the ids are there even if the registry was cleared
        return gym.make(env, **env_kwargs)
    if isinstance(env, gym.Env):
        if env_kwargs:
            raise ValueError("env_kwargs can only be given with an env id, not with an env instance")
        return env
    if callable(env):
        return env(**env_kwargs)
    raise TypeError(f"env must be an env id, a gymnasium.Env or a factory, got {type(env).__name__}")


def env_shape(env_id: str, env_kwargs: dict[str, Any], seed: int) -> tuple[int, int]:
    """``(K, d)`` of the arm sets of the env ``env_id`` with ``env_kwargs`` (built once, then closed)."""
    instance = make_env(env_id, **env_kwargs)
    try:
        instance.reset(seed=seed)
        n_arms, d = instance.observation_space.shape[-2:]
    finally:
        instance.close()
    return int(n_arms), int(d)


def check_seeds(seeds: int | Iterable[int], max_rounds: int | None = None) -> list[int]:
    """``seeds`` as a list (an int ``n`` means seeds ``0..n-1``); checks ``max_rounds`` too."""
    if isinstance(seeds, numbers.Integral):
        if seeds < 1:
            raise ValueError(f"seeds as an int is a count and must be >= 1, got {seeds}")
        seeds = range(int(seeds))
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty: give at least one seed")
    if max_rounds is not None and max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
    return seeds


def agent_label(agent: Any, given: str | None) -> str:
    """``given``, else the agent's ``name`` attribute, else its class name."""
    if given is not None:
        return given
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else type(agent).__name__
