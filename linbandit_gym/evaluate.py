"""The evaluation loop: the only place in the project where env and agent meet.

``run(env, agent, seeds)`` plays one episode per seed and returns a tidy pandas DataFrame
with one record per (agent, env, seed, round). Sweeps, the command line and plots all
go through it, so the record format is the same everywhere.
"""

from __future__ import annotations

import numbers
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

import linbandit_gym.batched as batched_path  # the module, so that its functions are looked up per call

from .loop import RECORD_COLUMNS, agent_label, check_seeds, make_env
from .threads import DEFAULT_THREADS, check_threads, cpu_clock, thread_limit

__all__ = ["RECORD_COLUMNS", "run", "make_env", "summarize"]

_STANDARD_INFO = {"expected_reward", "best_expected_reward", "regret", "best_arm"}


def _env_name(env: gym.Env, given: str | None) -> str:
    if given is not None:
        return given
    spec = getattr(env, "spec", None)
    if spec is not None and spec.id:
        return spec.id
    return type(env.unwrapped).__name__


def _sketch_size(agent: Any) -> float:
    value = getattr(agent, "sketch_size", None)
    return float(value) if isinstance(value, (numbers.Real, np.number)) else np.nan


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (numbers.Number, np.bool_, bool, np.number, str))


def run(
    env: str | gym.Env | Callable[[], gym.Env],
    agent: Any,
    seeds: int | Iterable[int] = (0,),
    *,
    env_kwargs: dict | None = None,
    agent_name: str | None = None,
    env_name: str | None = None,
    max_rounds: int | None = None,
    progress: bool | None = None,
    batched: bool | None = None,
    threads: int | None = DEFAULT_THREADS,
) -> pd.DataFrame:
    """Play one episode per seed and return the per-round records.

    Args:
        env: an env id (e.g. ``"LinBandit-Synthetic-v0"``), a ``gymnasium.Env`` or a factory.
        agent: any object with ``reset(seed)``, ``act(obs)`` and ``update(obs, action, reward)``;
            or a zero-argument factory (e.g. a class) that builds one.
        seeds: an int (that many seeds, 0..n-1) or an iterable of seeds. Seed ``s`` is passed
            to both ``env.reset(seed=s)`` and ``agent.reset(seed=s)``.
        env_kwargs: keyword arguments for ``gym.make`` when ``env`` is an id.
        agent_name, env_name: labels for the records (default: class name / env id).
        max_rounds: stop an episode after this many rounds even if the env goes on.
        progress: show a tqdm bar; default: only when stderr is a terminal.
        batched: ``None`` (default) advances all seeds together as one tensor program
            (:func:`linbandit_gym.batched.run_batched`: same records, same choices) when ``env`` is
            an id with a native vector env, ``agent`` one of ours, there are >= 2 seeds and one
            member's state is small (:func:`linbandit_gym.batched.member_state_is_small`, where a
            batch is the faster of the two);
            ``True`` insists (error if impossible); ``False`` plays the seeds one by one.
        threads: torch intra-op and BLAS threads during the run (default 1, restored afterwards;
            ``None`` leaves the process's setting), see :mod:`linbandit_gym.threads`.

    Returns:
        A DataFrame with the columns :data:`RECORD_COLUMNS` (``t`` counts from 1;
        ``agent_time`` is the cumulative CPU seconds spent in ``act`` + ``update`` -- CPU time, so
        that other load on the machine does not inflate it: the calling thread's with
        ``threads=1``, the process's otherwise; ``agent_wall_time`` the cumulative wall-clock
        seconds of the same calls; ``wall_time`` the cumulative wall-clock seconds of the whole
        round including the env; ``memory_bytes`` the agent's ``memory_bytes()`` after the
        round, 0 if it has none), plus any scalar keys the env adds to ``info`` beyond the
        standard four.
    """
    seeds = check_seeds(seeds, max_rounds)
    threads = check_threads(threads)
    with thread_limit(threads):
        return _run(env, agent, seeds, env_kwargs=env_kwargs, agent_name=agent_name, env_name=env_name,
                    max_rounds=max_rounds, progress=progress, batched=batched, threads=threads)


def _run(env, agent, seeds: list[int], *, env_kwargs, agent_name, env_name, max_rounds, progress, batched,
         threads) -> pd.DataFrame:
    if isinstance(agent, type) or (not callable(getattr(agent, "act", None)) and callable(agent)):
        agent = agent()  # a factory, e.g. an agent class
    for method in ("act", "update"):
        if not callable(getattr(agent, method, None)):
            raise TypeError(f"agent has no {method}() method; see agents.Agent for the contract")
    if batched is not False:  # all seeds as one tensor program (linbandit_gym.batched)
        if batched or (len(seeds) > 1 and batched_path.can_batch(env, agent)
                       and batched_path.member_state_is_small(env, env_kwargs, agent, seeds[0])):
            return batched_path.run_batched(env, agent, seeds, env_kwargs=env_kwargs, agent_name=agent_name,
                                            env_name=env_name, max_rounds=max_rounds, progress=progress,
                                            threads=threads)
    env = make_env(env, **(env_kwargs or {}))
    e_name, a_name = _env_name(env, env_name), agent_label(agent, agent_name)
    has_memory = callable(getattr(agent, "memory_bytes", None))
    has_sketch_size = hasattr(agent, "sketch_size")

    horizon = getattr(env.unwrapped, "horizon", None)
    per_seed = min(x for x in (horizon, max_rounds) if x is not None) if (horizon or max_rounds) else None
    show = sys.stderr.isatty() if progress is None else bool(progress)
    bar = tqdm(total=per_seed * len(seeds) if per_seed else None, disable=not show, desc=f"{a_name} on {e_name}")

    cpu, _ = cpu_clock(threads)
    columns: dict[str, list] = {c: [] for c in RECORD_COLUMNS}
    extras: dict[str, dict[int, Any]] = {}
    n = 0
    try:
        for seed in seeds:
            reset = getattr(agent, "reset", None)
            if callable(reset):
                reset(seed=seed)
            obs, _ = env.reset(seed=seed)
            cum_regret = agent_time = agent_wall_time = wall_time = 0.0
            t = 0
            while True:
                start, cpu_start = time.perf_counter(), cpu()
                action = agent.act(obs)
                cpu_act, after_act = cpu(), time.perf_counter()
                next_obs, reward, terminated, truncated, info = env.step(action)
                after_env, cpu_env = time.perf_counter(), cpu()
                agent.update(obs, action, reward)
                cpu_end, end = cpu(), time.perf_counter()
                agent_time += (cpu_act - cpu_start) + (cpu_end - cpu_env)
                agent_wall_time += (after_act - start) + (end - after_env)
                wall_time += end - start
                t += 1
                regret = float(info.get("regret", np.nan))
                cum_regret += regret
                row = (
                    a_name, e_name, seed, t, int(action), float(reward), float(info.get("expected_reward", np.nan)),
                    float(info.get("best_expected_reward", np.nan)), regret, cum_regret, agent_time, agent_wall_time,
                    wall_time,
                    int(agent.memory_bytes()) if has_memory else 0,
                    _sketch_size(agent) if has_sketch_size else np.nan,
                )
                for col, value in zip(RECORD_COLUMNS, row):
                    columns[col].append(value)
                for key, value in info.items():
                    if key not in _STANDARD_INFO and _is_scalar(value):
                        extras.setdefault(key, {})[n] = value
                n += 1
                bar.update(1)
                obs = next_obs
                if terminated or truncated or (max_rounds is not None and t >= max_rounds):
                    break
    finally:
        bar.close()
    frame = pd.DataFrame(columns)
    for key, values in extras.items():
        frame[key] = pd.Series(values, index=list(values.keys())).reindex(range(n))
    return frame


def summarize(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (agent, env): final cumulative regret mean/std over seeds, ms/round (CPU time in
    act + update), wall ms/round of the same calls, peak memory."""
    last = records.groupby(["agent", "env", "seed"], sort=False).tail(1)  # records are in round order
    last = last.assign(ms_per_round=1000.0 * last["agent_time"] / last["t"])
    if "agent_wall_time" in last:  # records written before the column existed lack it
        last = last.assign(wall_ms_per_round=1000.0 * last["agent_wall_time"] / last["t"])
    grouped = last.groupby(["agent", "env"], sort=False)
    out = grouped.agg(
        seeds=("seed", "nunique"),
        rounds=("t", "max"),
        final_regret_mean=("cumulative_regret", "mean"),
        final_regret_std=("cumulative_regret", "std"),
        ms_per_round=("ms_per_round", "mean"),
        **({"wall_ms_per_round": ("wall_ms_per_round", "mean")} if "wall_ms_per_round" in last else {}),
    )
    out["peak_memory_bytes"] = records.groupby(["agent", "env"], sort=False)["memory_bytes"].max()
    out["final_regret_std"] = out["final_regret_std"].fillna(0.0)
    return out.reset_index()
