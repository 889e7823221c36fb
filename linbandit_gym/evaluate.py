"""``run(env, agent, seeds)``: play one episode per seed and return the per-round records.

What users call, and what sweeps, ``linbandit run`` and the demo call: a tidy pandas DataFrame
with one record per (agent, env, seed, round). ``run`` chooses the path -- all seeds advanced
together as one batch (:mod:`linbandit_gym.batched`) where env and agent allow it and a batch is
faster, else seed after seed -- and every round of either is played by the one loop,
:func:`linbandit_gym.loop.play`. :func:`summarize` reduces records to one row per (agent, env).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym
import pandas as pd
from tqdm.auto import tqdm

# the module, so that its functions are looked up per call
import linbandit_gym.batched as batched_path

from .envs.memory import check_records_fit
from .feedback import FeedbackSchedule
from .loop import (
    RECORD_COLUMNS,
    agent_label,
    check_seeds,
    make_env,
    play,
    records_frame,
    single_members,
)
from .threads import DEFAULT_THREADS, check_threads, cpu_clock, thread_limit

__all__ = [
    "RECORD_COLUMNS",
    "exact_from",
    "exact_summary",
    "run",
    "make_env",
    "summarize",
    "timed_runs",
]


def _env_name(env: gym.Env, given: str | None) -> str:
    if given is not None:
        return given
    spec = getattr(env, "spec", None)
    if spec is not None and spec.id:
        return spec.id
    return type(env.unwrapped).__name__


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
    feedback_delay: int = 0,
    update_every: int = 1,
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
            an id with a native vector env, ``agent`` one of ours, there are at least
            :data:`~linbandit_gym.batched.MIN_BATCH` seeds and one member's state is small
            (:func:`linbandit_gym.batched.batch_is_faster`: where a batch is the faster of the
            two);
            ``True`` insists (error if impossible); ``False`` plays the seeds one by one.
        threads: torch intra-op and BLAS threads during the run (default 1, restored afterwards;
            ``None`` leaves the process's setting), see :mod:`linbandit_gym.threads`.
        feedback_delay: an int k >= 0: round t's ``update`` is called after round t + k's ``act``
            (default 0: right after round t's own); see :mod:`linbandit_gym.feedback`.
        update_every: an int n >= 1: the agent learns only at the end of rounds n, 2n, ..., from
            every round whose feedback has arrived, in order (default 1: every round). At the
            episode's end the feedback still held (the last k rounds', and those waiting for the
            next multiple of n) is given to the agent in the last round: no act follows, so no
            action or regret changes, and the agent learns from every round exactly once, as
            in the plain loop, so that its final state and total time compare like with like.

    Returns:
        A DataFrame with the columns :data:`RECORD_COLUMNS` (``t`` counts from 1;
        ``agent_time`` is the cumulative CPU seconds spent in ``act`` + ``update`` -- CPU time, so
        that other load on the machine does not inflate it: the calling thread's with
        ``threads=1``, the process's otherwise; ``agent_wall_time`` the cumulative wall-clock
        seconds of the same calls; ``wall_time`` the cumulative wall-clock seconds of the whole
        round including the env; ``memory_bytes`` the agent's ``memory_bytes()`` after the
        round, 0 if it has none; ``time_shared_by`` 1 when the seed was timed alone, B when
        its times are its 1/B share of a batch of B seeds; ``feedback_delay`` and ``update_every``
        the schedule played), plus any scalar keys the env adds to ``info`` beyond the standard
        four. Under a schedule, a round's ``agent_time`` is its ``act`` and the updates called in
        that round (none, one, or several; in the last round, everything still held), and
        ``memory_bytes`` is read after them.

    Round t's update after round t + 2's act, and updates applied every 5 rounds:

    >>> from agents import OFUL
    >>> records = run("LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=2, feedback_delay=2,
    ...               update_every=5, env_kwargs=dict(d=5, n_arms=4, horizon=12))
    >>> records[["feedback_delay", "update_every"]].drop_duplicates().values.tolist()
    [[2, 5]]
    """
    seeds = check_seeds(seeds, max_rounds)
    threads = check_threads(threads)
    feedback = FeedbackSchedule(feedback_delay, update_every)
    with thread_limit(threads):
        return _run(
            env,
            agent,
            seeds,
            env_kwargs=env_kwargs,
            agent_name=agent_name,
            env_name=env_name,
            max_rounds=max_rounds,
            progress=progress,
            batched=batched,
            threads=threads,
            feedback=feedback,
        )


def _run(
    env,
    agent,
    seeds: list[int],
    *,
    env_kwargs,
    agent_name,
    env_name,
    max_rounds,
    progress,
    batched,
    threads,
    feedback: FeedbackSchedule,
) -> pd.DataFrame:
    if isinstance(agent, type) or (not callable(getattr(agent, "act", None)) and callable(agent)):
        agent = agent()  # a factory, e.g. an agent class
    for method in ("act", "update"):
        if not callable(getattr(agent, method, None)):
            raise TypeError(f"agent has no {method}() method; see agents.Agent for the contract")
    if batched is not False:  # all seeds as one tensor program (linbandit_gym.batched)
        if batched or batched_path.batch_is_faster(env, env_kwargs, agent, seeds):
            return batched_path.run_batched(
                env,
                agent,
                seeds,
                env_kwargs=env_kwargs,
                agent_name=agent_name,
                env_name=env_name,
                max_rounds=max_rounds,
                progress=progress,
                threads=threads,
                feedback_delay=feedback.feedback_delay,
                update_every=feedback.update_every,
            )
    env = make_env(env, **(env_kwargs or {}))
    e_name, a_name = _env_name(env, env_name), agent_label(agent, agent_name)
    horizon = getattr(env.unwrapped, "horizon", None)
    per_seed = (
        min(x for x in (horizon, max_rounds) if x is not None) if (horizon or max_rounds) else None
    )
    if per_seed:  # the records of every seed are returned together: all of them must fit
        check_records_fit(per_seed, len(seeds))
    show = sys.stderr.isatty() if progress is None else bool(progress)
    cpu, _ = cpu_clock(threads)
    with tqdm(
        total=per_seed * len(seeds) if per_seed else None,
        disable=not show,
        desc=f"{a_name} on {e_name}",
    ) as bar:
        return records_frame(
            [
                play(
                    single_members(env, agent, seed, a_name, e_name),
                    max_rounds=max_rounds,
                    cpu=cpu,
                    bar=bar if show else None,
                    feedback=feedback,
                )
                for seed in seeds
            ]
        )


def timed_runs(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The runs whose times a table or figure of cost reads, per group of ``keys``: those timed
    alone (``time_shared_by`` 1) where the group has any, else all of its runs, whose times are
    then shares of batches. ``runs`` has one row per run; a ``timing`` column says ``"alone"``
    or ``"batch share"`` for each row returned. Runs without ``time_shared_by`` count as alone."""
    shared_by = (
        runs["time_shared_by"] if "time_shared_by" in runs else pd.Series(1, index=runs.index)
    )
    alone = shared_by.fillna(1).eq(1)
    any_alone = alone.groupby([runs[k] for k in keys], sort=False).transform("any")
    keep = alone | ~any_alone
    return runs[keep].assign(timing=alone[keep].map({True: "alone", False: "batch share"}))


def exact_from(records: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per run (group of ``keys``) of per-round records: ``reports_exact``, whether its agent says
    if it updates exactly (an ``exact_mode`` column that is not all NaN), and
    ``exact_from_round``, the first round after which it did (DBSLinUCB past its cap: OFUL from
    then on; NaN: never, or not said).

    >>> records = pd.DataFrame({"seed": 0, "t": [1, 2, 3], "exact_mode": [0.0, 1.0, 1.0]})
    >>> exact_from(records, ["seed"])
       seed  reports_exact  exact_from_round
    0     0           True               2.0
    """
    groups = records.groupby(keys, sort=False)
    if "exact_mode" not in records:
        said = groups.size() < 0
        first = pd.Series(float("nan"), index=said.index)
    else:
        said = groups["exact_mode"].count() > 0
        first = records.loc[records["exact_mode"] == 1.0].groupby(keys, sort=False)["t"].min()
    first = first.reindex(said.index).astype(float)
    return pd.DataFrame({"reports_exact": said, "exact_from_round": first}).reset_index()


def exact_summary(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``, from one row per run with ``reports_exact`` and ``exact_from_round``
    (:func:`exact_from`): ``exact_seeds``, the runs that switched to exact updates (NaN where the
    agent does not say), and the first and last round they switched at (``exact_from_first``,
    ``exact_from_last``)."""
    said = runs["reports_exact"] if "reports_exact" in runs else pd.Series(False, index=runs.index)
    rounds = pd.to_numeric(runs.get("exact_from_round"), errors="coerce")
    runs = runs.assign(reports_exact=said.fillna(False).astype(bool), exact_from_round=rounds)
    grouped = runs.groupby(keys, sort=False)
    return pd.DataFrame(
        {
            "exact_seeds": grouped["exact_from_round"]
            .count()
            .where(grouped["reports_exact"].any()),
            "exact_from_first": grouped["exact_from_round"].min(),
            "exact_from_last": grouped["exact_from_round"].max(),
        }
    )


def summarize(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (agent, env, feedback schedule): final cumulative regret mean/std over seeds,
    ms/round (CPU time in act + update), wall ms/round of the same calls, peak memory; the times
    from the seeds timed alone where there are any (:func:`timed_runs`), and ``timing`` says
    which they are; for an agent that says whether it updates exactly (``exact_mode``), over how
    many seeds it switched to exact updates and from which rounds (:func:`exact_summary`).
    Records without the ``feedback_delay`` and ``update_every`` columns (written before they
    existed) are one row per (agent, env)."""
    keys = ["agent", "env"] + [key for key in ("feedback_delay", "update_every") if key in records]
    last = records.groupby(keys + ["seed"], sort=False).tail(1)  # records are in round order
    last = last.assign(ms_per_round=1000.0 * last["agent_time"] / last["t"])
    if "agent_wall_time" in last:  # records written before the column existed lack it
        last = last.assign(wall_ms_per_round=1000.0 * last["agent_wall_time"] / last["t"])
    out = last.groupby(keys, sort=False).agg(
        seeds=("seed", "nunique"),
        rounds=("t", "max"),
        final_regret_mean=("cumulative_regret", "mean"),
        final_regret_std=("cumulative_regret", "std"),
    )
    cost = (
        timed_runs(last, keys)
        .groupby(keys, sort=False)
        .agg(
            ms_per_round=("ms_per_round", "mean"),
            **(
                {"wall_ms_per_round": ("wall_ms_per_round", "mean")}
                if "wall_ms_per_round" in last
                else {}
            ),
            timing=("timing", "first"),
            timed_seeds=("seed", "nunique"),
        )
    )
    out = out.join(cost)
    out.insert(
        list(out.columns).index("timing"),
        "peak_memory_bytes",
        records.groupby(keys, sort=False)["memory_bytes"].max(),
    )
    out["final_regret_std"] = out["final_regret_std"].fillna(0.0)
    out = out.join(exact_summary(exact_from(records, [*keys, "seed"]), keys))
    return out.reset_index()
