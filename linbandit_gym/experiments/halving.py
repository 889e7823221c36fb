"""Successive halving over a tuning grid (Jamieson & Talwalkar, 2016; Li et al., 2018, "Hyperband").

A *bracket* is the tuning of one agent config on one env config: ``n`` configurations (the
(beta, lambda) pairs of the grid, in grid order), each played on the same ``S`` tuning seeds,
episodes of ``T`` rounds. With reduction factor ``eta``, successive halving plays them in
``s + 1`` rungs::

    rung k = 0, ..., s:   n_k = ceil(n / eta^k) configurations play on to r_k = T / eta^(s - k)

(``r_k`` rounded to the nearest round, ``r_s = T``), with ``s`` the largest such that
``eta^s < n`` (so that ``n_s >= 2`` for ``n >= 2``: the pick is made on full episodes among
at least two) and ``eta^s <= T`` (the first rung plays at least one round). With ``n = 45,
eta = 3``: 45, 15, 5 and 2 configurations at ``T/27, T/9, T/3, T``. After each rung the
configurations are ranked by their mean cumulative regret over the ``S`` seeds at round
``r_k``, ties in grid order, and the best ``n_{k+1}`` go on *from where they stopped*: their
envs and agents wait between rungs as they are (:func:`linbandit_gym.loop.play_in_stages`),
nothing is reset or replayed, so a configuration that reaches ``T`` has the records of the
same run played through at once. The pick is the best at ``T``.

A bracket plays ``S * sum_k n_k (r_k - r_{k-1})`` rounds, against ``S n T`` for the grid;
every configuration's regret at the last rung it reached is kept (:func:`play_bracket`).

The seeds of one configuration go on or stop together, so they may share a batch (a batched
agent over a vector env, :mod:`linbandit_gym.batched`), planned as a sweep plans its batches;
every configuration of a bracket is alive at once at the end of the first rung.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from linbandit_host.user_line import kept_warnings, warning_records

from ..threads import DEFAULT_THREADS, check_threads, cpu_clock, thread_limit
from .costs import unit_cost

__all__ = ["DEFAULT_ETA", "Rung", "play_bracket", "ranking", "rungs"]

#: The reduction factor of Jamieson & Talwalkar (2016) and Li et al. (2018): a third goes on.
DEFAULT_ETA = 3


@dataclass(frozen=True)
class Rung:
    """One rung of successive halving: ``configs`` configurations play on to round ``rounds``."""

    rounds: int
    configs: int


def rungs(n_configs: int, horizon: int, eta: int = DEFAULT_ETA) -> list[Rung]:
    """The rungs of successive halving for ``n_configs`` configurations and episodes of
    ``horizon`` rounds (see the module docstring).

    >>> [(r.rounds, r.configs) for r in rungs(45, 2000)]
    [(74, 45), (222, 15), (667, 5), (2000, 2)]
    >>> def plan(*args, **kw):
    ...     return [(r.rounds, r.configs) for r in rungs(*args, **kw)]
    >>> plan(9, 300), plan(3, 300), plan(1, 2000), plan(9, 2, eta=3)
    ([(100, 9), (300, 3)], [(300, 3)], [(2000, 1)], [(2, 9)])
    """
    for name, value, low in (("n_configs", n_configs, 1), ("horizon", horizon, 1), ("eta", eta, 2)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    s = 0
    while eta ** (s + 1) < n_configs:  # the last rung keeps ceil(n / eta^s) >= 2 of n >= 2
        s += 1
    while s > 0 and horizon < eta**s:  # the first rung plays at least one round
        s -= 1
    rounds = [max(1, round(horizon / eta ** (s - k))) for k in range(s + 1)]
    return [Rung(r, math.ceil(n_configs / eta**k)) for k, r in enumerate(rounds)]


def ranking(regrets: Sequence[float]) -> list[int]:
    """Indices of ``regrets`` from the lowest to the highest; ties in index (grid) order, NaN last.

    >>> ranking([3.0, 1.0, 3.0, float("nan"), 1.0])
    [1, 4, 0, 2, 3]
    """
    return sorted(range(len(regrets)), key=lambda i: (math.isnan(regrets[i]), regrets[i], i))


class _Unit:
    """The seeds of one configuration played together (a batch or one run), paused between rungs."""

    def __init__(self, specs: list[dict], stops: list[int], cpu: Any):
        from ..batched import members_agent, vector_env
        from ..feedback import FeedbackSchedule
        from ..loop import batch_members, make_env, play_in_stages, single_members
        from ..registry import resolve_agent

        first = specs[0]["config"]
        env_id, env_args = first["env"]["id"], dict(first["env"]["args"])
        if len(specs) == 1:
            self.env = make_env(env_id, **env_args)
            agent = resolve_agent(first["agent"]["name"], dict(first["agent"]["args"]))
            members = single_members(
                self.env, agent, int(first["seed"]), specs[0]["agent_label"], specs[0]["env_label"]
            )
        else:
            seeds = [int(spec["config"]["seed"]) for spec in specs]
            self.env = vector_env(env_id, seeds, env_args)
            agent = members_agent([spec["config"]["agent"] for spec in specs])
            members = batch_members(
                self.env,
                agent,
                seeds,
                [spec["agent_label"] for spec in specs],
                [spec["env_label"] for spec in specs],
            )
        # the seeds learn by the feedback schedule their runs' config names (the plain loop's)
        feedback = FeedbackSchedule.of_config(first)
        self.stages = play_in_stages(members, stops, cpu=cpu, feedback=feedback)
        self.records = None
        self.closed = False

    def advance(self) -> np.ndarray:
        """Play to the next stop; the cumulative regret of each member there."""
        self.records = next(self.stages)
        rounds = self.records.rounds
        return np.atleast_1d(np.cumsum(self.records.regret[:rounds], axis=0)[-1])

    def agent_cpu(self) -> float:
        return (
            0.0
            if self.records is None
            else float(self.records.agent_time[: self.records.rounds].sum())
        )

    def member_rounds(self) -> int:
        return 0 if self.records is None else self.records.rounds * self.records.members.size

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.stages.close()  # the members stop where they stand
            self.env.close()


def play_bracket(bracket: dict, threads: int | None = DEFAULT_THREADS) -> dict:
    """Play one bracket of successive halving; return what each configuration reached.

    ``bracket`` (plain data, so that it pickles for worker processes and Ray):
    ``{"kind": "halving", "id", "env_label", "family", "rungs": [[rounds, configs], ...],
    "configs": [{"label", "args", "units": [[spec dict, ...], ...]}, ...]}`` with the
    configurations in grid order, each with its seeds' runs (:class:`~.config.RunSpec` dicts)
    grouped into units played together.

    Returns ``{"kind", "id", "env_label", "family", "rungs", "configs": [{"label", "args",
    "rounds", "regrets": [[per seed] per rung reached], "member_rounds", "agent_cpu_s"}],
    "chosen", "member_rounds", "cost", "warnings"}``: ``rounds`` is the last round a
    configuration played, ``member_rounds`` the rounds it played over all its seeds and
    ``agent_cpu_s`` its agents' CPU seconds in ``act``/``update``; ``chosen`` is the index of the
    best at the last rung; ``cost`` where the bracket's CPU time went (:func:`.costs.unit_cost`);
    ``warnings`` the distinct warnings its agents and envs raised, kept as a run keeps them
    (:func:`linbandit_host.user_line.warning_records`) for the tuning's driver to say, not printed
    where they were raised (a worker process has no line of the user's to point at).
    """
    threads = check_threads(threads)
    cpu_start = time.process_time()
    plan = [Rung(int(r), int(n)) for r, n in bracket["rungs"]]
    stops = [rung.rounds for rung in plan]
    configs = bracket["configs"]
    reached = [
        {
            "label": c["label"],
            "args": c["args"],
            "rounds": 0,
            "regrets": [],
            "member_rounds": 0,
            "agent_cpu_s": 0.0,
        }
        for c in configs
    ]
    units: list[list[_Unit]] = []

    def stop(i: int) -> None:  # configuration i goes no further: count what it played, drop it
        for unit in units[i]:
            reached[i]["member_rounds"] += unit.member_rounds()
            reached[i]["agent_cpu_s"] += unit.agent_cpu()
            unit.close()

    with thread_limit(threads), kept_warnings() as kept:
        cpu, _ = cpu_clock(threads)
        try:
            units = [[_Unit(group, stops, cpu) for group in config["units"]] for config in configs]
            alive = list(range(len(configs)))
            for k, rung in enumerate(plan):
                means = []
                for i in alive:
                    regrets = np.concatenate([unit.advance() for unit in units[i]])
                    reached[i]["rounds"] = rung.rounds
                    reached[i]["regrets"].append([float(r) for r in regrets])
                    means.append(float(np.mean(regrets)))
                order = ranking(means)
                chosen = alive[order[0]]
                keep = plan[k + 1].configs if k + 1 < len(plan) else 0
                survivors = sorted(alive[j] for j in order[:keep])
                for i in alive:
                    if i not in survivors:
                        stop(i)
                alive = survivors
        finally:
            for group in units:
                for unit in group:
                    unit.close()
    agent_cpu = sum(entry["agent_cpu_s"] for entry in reached)
    return {
        "kind": "halving",
        "id": bracket["id"],
        "env_label": bracket["env_label"],
        "family": bracket["family"],
        "rungs": [[rung.rounds, rung.configs] for rung in plan],
        "configs": reached,
        "chosen": chosen,
        "member_rounds": sum(entry["member_rounds"] for entry in reached),
        "cost": unit_cost(time.process_time() - cpu_start, agent_cpu),
        "warnings": warning_records(kept),
    }
