"""One experiment in one call: agents on one env over seeds, summarised, optionally saved.

:func:`run_experiment` is what ``linbandit run`` and ``linbandit demo`` do: play each agent on
the env over the seeds (:func:`linbandit_gym.run`), summarise, and with ``out`` save every
(agent, seed) as a run of the layout :mod:`linbandit_gym.records` owns (:func:`.sweep.play_into`),
so that ``linbandit plot`` and ``report`` read it as they read a sweep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..evaluate import run, summarize
from ..feedback import FeedbackSchedule
from ..specs import check_env_args
from ..text import count, mean_spread
from ..threads import DEFAULT_THREADS
from .sweep import play_into

__all__ = ["run_experiment", "with_horizon"]


def run_experiment(
    env_id: str,
    agent: Any,
    *,
    seeds: int = 1,
    horizon: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    agent_name: str | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    batched: bool | None = None,
    threads: int | None = DEFAULT_THREADS,
    agent_config: dict | list[dict | None] | None = None,
    log: Callable[[str], None] | None = None,
    feedback_delay: int = 0,
    update_every: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run ``agent`` (an object or a list of ``(name, object)``) on ``env_id`` over ``seeds``,
    each run with ``threads`` torch and BLAS threads (default 1, see :mod:`linbandit_gym.threads`).

    Returns ``(records, summary)``. ``env_kwargs`` are checked against the env's constructor
    before anything runs (:func:`linbandit_gym.specs.check_env_args`). With ``out``, every
    (agent, seed) is saved as it finishes in the layout of a sweep directory
    (``runs/<id>.parquet|json``, ``config.yaml``, ``manifest.json``; see
    :func:`.sweep.play_into`), plus ``summary.csv|md`` and
    ``regret.png``, so ``linbandit plot|report DIR`` work on it. ``agent_config``
    (``{"name": ..., "args": {...}}`` the agent was built from, one per agent for a list) makes
    those runs resumable: a second call skips the finished ones. ``log`` (e.g. ``print``)
    receives one line per agent as soon as it has played all its seeds. ``feedback_delay`` and
    ``update_every``: the feedback schedule of every run (:func:`linbandit_gym.evaluate.run`).
    """
    played_schedule = FeedbackSchedule(feedback_delay, update_every).config_entries()
    env_kwargs = with_horizon(env_kwargs, horizon)
    check_env_args(env_id, env_kwargs)
    players = agent if isinstance(agent, list) else [(agent_name, agent)]
    clock = [time.perf_counter()]

    def agent_done(index: int, frame: pd.DataFrame) -> None:
        if log is not None:
            row = summarize(frame).iloc[0]
            regret = mean_spread(
                row["final_regret_mean"], row["final_regret_std"], int(row["seeds"])
            )
            played = count(int(row["seeds"]), "seed")
            log(
                f"[{index + 1}/{len(players)}] {row['agent']}: final regret {regret}, "
                f"{row['ms_per_round']:.3f} ms/round; {played} played in "
                f"{time.perf_counter() - clock[0]:.1f} s"
            )
        clock[0] = time.perf_counter()

    if out is None:
        frames = []
        for index, (name, player) in enumerate(players):
            frame = run(
                env_id,
                player,
                seeds=seeds,
                env_kwargs=env_kwargs,
                agent_name=name,
                env_name=env_id,
                progress=progress,
                batched=batched,
                threads=threads,
                **played_schedule,
            )
            agent_done(index, frame)
            frames.append(frame)
        records = pd.concat(frames, ignore_index=True)
    else:
        configs = (
            agent_config
            if isinstance(agent_config, list) or agent_config is None
            else [agent_config]
        )
        records = play_into(
            out,
            env_id,
            players,
            seeds,
            env_kwargs=env_kwargs,
            agent_configs=configs,
            progress=progress,
            batched=batched,
            threads=threads,
            **played_schedule,
            on_agent_done=agent_done,
        )
    summary = summarize(records)
    if out is not None:
        from ..plots import plot_cumulative_regret
        from .figures import write_tables

        write_tables(out)
        plot_cumulative_regret(records, Path(out) / "regret.png")
    return records, summary


def with_horizon(env_kwargs: dict[str, Any] | None, horizon: int | None) -> dict[str, Any]:
    """``env_kwargs`` with ``horizon`` (``--horizon``) as its ``horizon``; the env's own
    ``horizon`` given too (``--env-arg horizon=5 --horizon 7``) must be the same, else a
    ``ValueError``: one of two values for one thing would be dropped without a word."""
    env_kwargs = dict(env_kwargs or {})
    if horizon is None:
        return env_kwargs
    if "horizon" in env_kwargs and env_kwargs["horizon"] != horizon:
        given = env_kwargs["horizon"]
        raise ValueError(
            f"--horizon {horizon!r} and --env-arg horizon={given!r} give the episode "
            "two lengths: give it once"
        )
    return {**env_kwargs, "horizon": horizon}
