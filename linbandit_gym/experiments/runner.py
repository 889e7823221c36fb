"""Execute one run of a sweep (in this process, a worker process or a Ray task).

:func:`execute_run` is a top-level function of plain-data arguments so that it pickles for
``spawn`` process pools and Ray. It returns the records and the run's metadata; the driver
(:mod:`.sweep`) is the only writer, so a run is on disk completely or not at all. The warnings a
run raises are not printed where it runs (a worker has no line of the user's to point at): its
metadata keeps each distinct one once (``"warnings"``), and the driver says them.
:func:`execute_batch` plays runs packed together by the planner (:mod:`.packing`: same env,
agent family and arguments but the seed and the class's ``per_member_args``) as one batched
program (:func:`linbandit_gym.batched.play_members`) and returns one such result per run;
:func:`execute_unit` is what the backends call on a unit of the sweep planner (one run or a batch).

Bandit runs go through :func:`linbandit_gym.evaluate.run` (the one evaluation loop).
Matrix-approximation runs (Wen et al., 2025, App. F.2) stream l2-normalised Gaussian rows through an
agent's covariance estimator and record ``||A_t^T A_t - cov_t||_2`` with its bound.
"""

from __future__ import annotations

import math
import os
import platform
import socket
import time
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from linbandit_host.user_line import kept_warnings, warning_records

from .._version import __version__
from ..feedback import FeedbackSchedule
from ..registry import lookup_estimator, resolve_agent
from ..threads import DEFAULT_THREADS, check_threads, cpu_clock, thread_limit, thread_record
from .costs import unit_cost

__all__ = [
    "execute_run",
    "execute_batch",
    "execute_unit",
    "prepare_worker",
    "split_by_seed",
    "run_meta",
    "bandit_summary",
    "library_versions",
    "subsample_index",
]


def library_versions() -> dict[str, str]:
    """Versions of what produced a record: python, torch, numpy, pandas, linbandit."""
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "linbandit": __version__,
        "platform": platform.platform(),
    }


def subsample_index(n: int, points: int) -> np.ndarray:
    """At most ``points`` indices into ``range(n)``, evenly spread, always the first and last."""
    if n <= 0:
        return np.zeros(0, dtype=int)
    return np.unique(np.round(np.linspace(0, n - 1, min(points, n))).astype(int))


def fd_bound_from_eigenvalues(eigenvalues: np.ndarray, sketch_size: int) -> float:
    """``Delta_t(l) = min_{0 <= k < l} sum_{i > k} sigma_i^2 / (l - k)`` (Wen et al., 2025, eq. 1).

    The same quantity as :func:`agents.sketches.diagnostics.fd_error_bound`, computed from the
    eigenvalues of ``X^T X`` (= the squared singular values of ``X``) that the caller already has.
    """
    s2 = np.sort(np.clip(eigenvalues, 0.0, None))[::-1]
    tails = np.concatenate([np.cumsum(s2[::-1])[::-1], [0.0]])  # tails[k] = sum_{i >= k} s2_i
    k = np.arange(sketch_size)
    return float(np.min(tails[np.minimum(k, s2.size)] / (sketch_size - k)))


def _spectral_point(
    gram: np.ndarray, estimator: Any, sizes: list[int]
) -> tuple[float, dict[str, float]]:
    """``||X^T X - cov||_2`` and the FD bound ``Delta_t(l)`` for each ``l``: two O(d^3) eigvalsh."""
    import torch

    err = float("nan")
    if estimator is not None:
        cov = estimator.covariance().detach().to("cpu", dtype=torch.float64).numpy()
        ev = np.linalg.eigvalsh(gram - cov)
        err = float(np.abs(ev).max()) if ev.size else 0.0
    deltas = {}
    if sizes:
        w = np.linalg.eigvalsh(gram)
        deltas = {str(l): fd_bound_from_eigenvalues(w, l) for l in sizes}
    return err, deltas


class _DiagnosedAgent:
    """Forwards to ``agent`` and, every ``every`` updates, records the spectral diagnostics.

    It keeps the exact Gram of the arms the agent has learnt from (O(d^2) an update) and
    eigendecomposes it at each checkpoint (O(d^3)): its ``t`` counts the rows the agent's
    sketch has seen, which is the round under the plain loop and lags it under a feedback
    schedule. Its own time (CPU on ``cpu``, and wall) is measured per update, cumulated, and
    subtracted from the records' timings (:func:`_overhead_by_round`).
    """

    def __init__(self, agent: Any, every: int, sizes: list[int] | None, cpu=time.process_time):
        self.agent = agent
        self.cpu = cpu
        self.every = every
        self.sizes = sizes
        self.name = getattr(agent, "name", None)
        self.reset_diagnostics()

    def reset_diagnostics(self) -> None:
        self.gram = None
        self.t = 0
        self.overhead = self.overhead_cpu = 0.0
        self.overhead_cum: list[float] = []
        self.overhead_cpu_cum: list[float] = []
        self.series: dict[str, Any] = {"t": [], "cov_error": [], "delta": {}}

    @property
    def sketch_size(self):
        return getattr(self.agent, "sketch_size", None)

    def memory_bytes(self) -> int:
        fn = getattr(self.agent, "memory_bytes", None)
        return int(fn()) if callable(fn) else 0

    def reset(self, seed=None):
        self.reset_diagnostics()
        reset = getattr(self.agent, "reset", None)
        if callable(reset):
            reset(seed=seed)

    def act(self, obs):
        return self.agent.act(obs)

    def update(self, obs, action, reward):
        self.agent.update(obs, action, reward)
        start, cpu_start = time.perf_counter(), self.cpu()
        x = np.asarray(obs, dtype=np.float64)[int(action)]
        if self.gram is None:
            self.gram = np.zeros((x.size, x.size))
        self.gram += np.outer(x, x)
        self.t += 1
        if self.t % self.every == 0:
            estimator = getattr(self.agent, "estimator", None)
            if estimator is not None and not callable(getattr(estimator, "covariance", None)):
                estimator = None
            sizes = self.sizes
            if sizes is None:
                own = getattr(self.agent, "sketch_size", None)
                sizes = [int(own)] if own is not None and own < x.size else []
            err, deltas = _spectral_point(self.gram, estimator, sizes)
            self.series["t"].append(self.t)
            self.series["cov_error"].append(err)
            for key, value in deltas.items():
                self.series["delta"].setdefault(key, []).append(value)
        self.overhead_cpu += self.cpu() - cpu_start
        self.overhead += time.perf_counter() - start
        self.overhead_cum.append(self.overhead)
        self.overhead_cpu_cum.append(self.overhead_cpu)


def bandit_summary(
    frame: pd.DataFrame, curve_points: int = 200, timing_repeats: int = 1
) -> dict[str, Any]:
    """The ``summary`` of a bandit run's metadata: final regret, times (and ``time_shared_by``: how
    they were measured), peak memory, whether and from which round the agent updated exactly
    (``reports_exact``, ``exact_from_round``: :func:`linbandit_gym.evaluate.exact_from`), a
    subsampled curve."""
    from ..evaluate import exact_from

    rounds = len(frame)
    exact = exact_from(frame.assign(run=0), ["run"]).iloc[0]
    switched = exact["exact_from_round"]
    idx = subsample_index(rounds, curve_points)
    last = frame.iloc[-1]
    sketch = (
        frame["sketch_size"].to_numpy(dtype=float)
        if "sketch_size" in frame
        else np.full(rounds, np.nan)
    )
    shared_by = int(last["time_shared_by"]) if "time_shared_by" in frame else 1
    return {
        "rounds": rounds,
        "final_regret": float(last["cumulative_regret"]),
        "agent_time_s": float(last["agent_time"]),  # CPU seconds in act + update
        "agent_wall_time_s": float(last["agent_wall_time"]),
        "wall_time_s": float(last["wall_time"]),
        "ms_per_round": 1000.0 * float(last["agent_time"]) / rounds,
        "wall_ms_per_round": 1000.0 * float(last["agent_wall_time"]) / rounds,
        # 1: the times above were measured for this run alone; B: each is a 1/B share of a batch's
        "time_shared_by": shared_by,
        "timing_repeats": timing_repeats,  # plays whose per-round least times these are
        "peak_memory_bytes": int(frame["memory_bytes"].max()),
        "final_sketch_size": None if math.isnan(sketch[-1]) else float(sketch[-1]),
        "reports_exact": bool(exact["reports_exact"]),
        "exact_from_round": None if math.isnan(switched) else int(switched),
        "curve": {
            "t": frame["t"].to_numpy()[idx].tolist(),
            "cumulative_regret": frame["cumulative_regret"].to_numpy()[idx].tolist(),
            "sketch_size": [None if math.isnan(v) else float(v) for v in sketch[idx]],
        },
    }


def execute_run(spec: dict, threads: int | None = DEFAULT_THREADS, curve_points: int = 200) -> dict:
    """Run one :class:`~.config.RunSpec` (as a dict); returns ``{"run_id", "records", "meta",
    "cost"}`` (``cost``: where its CPU time went, :func:`.costs.unit_cost`; not saved).

    Args:
        spec: ``RunSpec.to_dict()``; with ``"timing_repeats": R`` (a sweep's timing run) a bandit
            run is played R times, its records the same each time but for the times, of which
            each round keeps the least over the R plays.
        threads: torch intra-op and BLAS threads for this run (default 1, see
            :mod:`linbandit_gym.threads`; ``None`` leaves the process's setting).
        curve_points: length of the subsampled regret curve kept in the metadata.
    """
    threads = check_threads(threads)
    started = datetime.now(timezone.utc)
    t0, cpu0 = time.perf_counter(), time.process_time()
    with thread_limit(threads), kept_warnings() as kept:
        if spec["config"]["task"] == "matrix-approx":
            records, extra = _matrix_approx(spec, threads)
            agent_cpu, repeat_cpu = extra["summary"]["agent_time_s"], 0.0
        else:
            records, extra, (agent_cpu, repeat_cpu) = _bandit(spec, curve_points, threads)
        extra.update(thread_record(threads))  # the policy asked for and what the run had
    extra["warnings"] = warning_records(kept)
    meta = run_meta(spec, extra, started, time.perf_counter() - t0)
    cost = unit_cost(time.process_time() - cpu0, agent_cpu, repeat_cpu_s=repeat_cpu)
    return {"run_id": spec["run_id"], "records": records, "meta": meta, "cost": cost}


def execute_batch(
    specs: list[dict], threads: int | None = DEFAULT_THREADS, curve_points: int = 200
) -> list[dict]:
    """Run the :class:`~.config.RunSpec` dicts ``specs`` as one batched program; return one
    ``{"run_id", "records", "meta", "cost"}`` per spec, as :func:`execute_run` (each member's
    cost a 1/B share of the batch's).

    The specs share their env config, agent name and every agent argument but the seed and the
    class's ``per_member_args`` (:func:`.packing.batch_key`); member i is spec i's agent, seeded
    as its run and labelled with its labels (:func:`linbandit_gym.batched.play_members`). The
    records of each member are those :func:`execute_run` gives apart from the timing columns
    (each member's share of the batch's time, ``time_shared_by`` = B); the metadata's
    ``duration_s`` is the batch's over B and ``batch_size`` says B.
    """
    from ..batched import members_agent, play_members

    threads = check_threads(threads)
    first = specs[0]
    config = first["config"]
    if len({spec["run_id"] for spec in specs}) != len(specs):
        raise ValueError(
            f"a batch needs distinct runs, got run ids {[spec['run_id'] for spec in specs]}"
        )
    feedback = FeedbackSchedule.of_config(config)
    if any(
        spec["config"]["env"] != config["env"]
        or spec["config"]["agent"]["name"] != config["agent"]["name"]
        or FeedbackSchedule.of_config(spec["config"]) != feedback
        for spec in specs
    ):
        raise ValueError(
            "the runs of a batch must share their env config, agent name and feedback schedule"
        )
    started = datetime.now(timezone.utc)
    t0, cpu0 = time.perf_counter(), time.process_time()
    with thread_limit(threads), kept_warnings() as kept:
        agent = members_agent([spec["config"]["agent"] for spec in specs])
        parts = play_members(
            config["env"]["id"],
            agent,
            [int(spec["config"]["seed"]) for spec in specs],
            agent_names=[spec["agent_label"] for spec in specs],
            env_names=[spec["env_label"] for spec in specs],
            env_kwargs=dict(config["env"]["args"]),
            threads=threads,
            feedback_delay=feedback.feedback_delay,
            update_every=feedback.update_every,
        )
        threads_used = thread_record(threads)
    duration = (time.perf_counter() - t0) / len(specs)
    extra = {
        "device": str(getattr(agent, "device", "cpu")),
        **threads_used,
        "batch_size": len(specs),
        "warnings": warning_records(kept),
    }
    results = _results(parts, specs, extra, started, duration, curve_points)
    cpu = (time.process_time() - cpu0) / len(specs)  # each member's share, as its records' times
    for result in results:
        result["cost"] = unit_cost(cpu, result["meta"]["summary"]["agent_time_s"])
    return results


def split_by_seed(
    frame: pd.DataFrame,
    specs: list[dict],
    extra: dict,
    started: datetime,
    duration_s: float,
    curve_points: int = 200,
) -> list[dict]:
    """One ``{"run_id", "records", "meta"}`` per spec dict from ``frame``, the records of one
    agent played over the specs' (distinct) seeds (the seed-by-seed loop or a batch of
    ``run --out``); each member's metadata is :func:`run_meta` with ``extra`` and its own
    summary."""
    parts = [
        frame[frame["seed"] == int(spec["config"]["seed"])].reset_index(drop=True) for spec in specs
    ]
    return _results(parts, specs, extra, started, duration_s, curve_points)


def _results(
    parts: list[pd.DataFrame],
    specs: list[dict],
    extra: dict,
    started: datetime,
    duration_s: float,
    curve_points: int,
) -> list[dict]:
    """``parts[i]`` (the records of ``specs[i]``) with its metadata, as :func:`execute_run`
    returns them."""
    results = []
    for part, spec in zip(parts, specs):
        meta = run_meta(
            spec, {**extra, "summary": bandit_summary(part, curve_points)}, started, duration_s
        )
        results.append({"run_id": spec["run_id"], "records": part, "meta": meta})
    return results


def prepare_worker() -> None:
    """Import what every run needs (torch, the agents, the envs, the loop), once per worker
    process, so that its start-up is not counted in the CPU time of its first unit."""
    import torch  # noqa: F401

    import agents  # noqa: F401

    from ..evaluate import run  # noqa: F401
    from ..registration import register_envs

    register_envs()


def execute_unit(
    unit: dict | list[dict], threads: int | None = DEFAULT_THREADS, curve_points: int = 200
) -> list[dict]:
    """One unit of a sweep plan: a run (a spec dict, or a list of one) or a batch (a list of
    spec dicts with one :func:`.packing.batch_key`); returns the results of its runs in order.
    A bracket of successive halving (a dict with ``"kind": "halving"``,
    :func:`.halving.play_bracket`) returns its one result."""
    if isinstance(unit, dict) and unit.get("kind") == "halving":
        from .halving import play_bracket

        return [play_bracket(unit, threads)]
    if isinstance(unit, dict):
        return [execute_run(unit, threads, curve_points)]
    if len(unit) == 1:
        return [execute_run(unit[0], threads, curve_points)]
    return execute_batch(unit, threads, curve_points)


def run_meta(spec: dict, extra: dict, started: datetime, duration_s: float) -> dict:
    """The metadata of a finished run (its ``runs/<id>.json``): ids, labels, config, ``extra``
    (device, summary, threads, ...), library versions, host, pid, start time and duration."""

    config = spec["config"]
    return {
        "run_id": spec["run_id"],
        "agent_label": spec["agent_label"],
        "env_label": spec["env_label"],
        "family": spec["family"],
        "entry": spec.get("entry", ""),
        "config": config,
        "seed": config["seed"],
        **extra,
        "versions": library_versions(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": started.isoformat(),
        "duration_s": duration_s,
    }


def _overhead_by_round(
    cumulative: list[float], feedback: FeedbackSchedule, rounds: int
) -> np.ndarray:
    """``(rounds,)``: the diagnostics' cumulative time at the end of each round, from its
    cumulative time after each update (``cumulative``) and the updates the schedule has made by
    the end of each round (:meth:`~linbandit_gym.feedback.FeedbackSchedule.updates_by_round`)."""
    at_update = np.concatenate([[0.0], np.asarray(cumulative, dtype=float)])
    return at_update[feedback.updates_by_round(rounds)]


def _bandit(
    spec: dict, curve_points: int, threads: int | None
) -> tuple[pd.DataFrame, dict, tuple[float, float]]:
    """The records and metadata of a bandit run, and ``(agent CPU seconds over every play, CPU
    seconds of the plays after the first)``."""
    from ..evaluate import run

    config = spec["config"]
    feedback = FeedbackSchedule.of_config(config)
    agent = resolve_agent(config["agent"]["name"], dict(config["agent"]["args"]))
    device = str(getattr(agent, "device", "cpu"))
    record = config.get("record") or {}
    player = agent
    if record.get("spectral_error"):
        player = _DiagnosedAgent(
            agent,
            record["spectral_error"],
            record.get("spectral_sketch_sizes"),
            cpu=cpu_clock(threads)[0],
        )
    repeats = int(spec.get("timing_repeats", 1))
    plays = []
    # A timing run may be played several times: the same episode each time (seeded), so only the
    # times differ; each round keeps its least time over the plays (the same work each time, what
    # differs is how much the rest of the machine got in the way).
    agent_cpu = repeat_cpu = 0.0
    for attempt in range(repeats):
        cpu0 = time.process_time()
        frame = run(
            config["env"]["id"],
            player,
            seeds=[config["seed"]],
            env_kwargs=dict(config["env"]["args"]),
            agent_name=spec["agent_label"],
            env_name=spec["env_label"],
            progress=False,
            threads=threads,
            feedback_delay=feedback.feedback_delay,
            update_every=feedback.update_every,
        )
        if player is not agent:
            # The diagnostics' own time is not the agent's: take it out of both clocks.
            overhead = _overhead_by_round(player.overhead_cum, feedback, len(frame))
            frame["agent_time"] = frame["agent_time"].to_numpy() - _overhead_by_round(
                player.overhead_cpu_cum, feedback, len(frame)
            )
            frame["agent_wall_time"] = frame["agent_wall_time"].to_numpy() - overhead
            frame["wall_time"] = frame["wall_time"].to_numpy() - overhead
        plays.append(frame)
        agent_cpu += float(frame["agent_time"].iloc[-1])
        if attempt > 0:
            repeat_cpu += time.process_time() - cpu0
    best = plays[0]
    if repeats > 1:
        best = best.copy()
        for column in ("agent_time", "agent_wall_time", "wall_time"):  # cumulative seconds
            per_round = np.stack([np.diff(play[column].to_numpy(), prepend=0.0) for play in plays])
            best[column] = np.cumsum(per_round.min(axis=0))
    extra: dict[str, Any] = {"device": device}
    if player is not agent:
        extra["spectral"] = player.series
    extra["summary"] = bandit_summary(best, curve_points, timing_repeats=repeats)
    return best, extra, (agent_cpu, repeat_cpu)


def _matrix_approx(spec: dict, threads: int | None) -> tuple[pd.DataFrame, dict]:
    """Wen et al. (2025), App. F.2: stream normalised N(0, I_d) rows through a covariance sketch."""
    import torch

    config = spec["config"]
    n, d, every = (int(config["env"]["args"][k]) for k in ("n", "d", "every"))
    name, args = config["agent"]["name"], dict(config["agent"]["args"])
    if ":" in name:  # a covariance-estimator class of the user's, checked before it is called
        estimator = lookup_estimator(name)(d, **args)
    else:
        agent = resolve_agent(name, {**args, "d": d})
        estimator = getattr(agent, "estimator", None)
        if estimator is None:
            raise ValueError(f"agent {name!r} has no covariance estimator to sketch with")
    rng = np.random.default_rng(int(config["seed"]))
    rows = rng.standard_normal((n, d))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    # The bound drawn next to the error (Fig. 4b): 2 eps for Dyadic Block Sketching
    # (Theorem 1), Delta_t = min_k ||A_t - [A_t]_k||_F^2 / (l - k) for a fixed-size sketch
    # (Lemma 1).
    eps = args.get("eps")
    fixed_l = args.get("sketch_size")
    gram = np.zeros((d, d))
    cols: dict[str, list] = {
        k: []
        for k in (
            "t",
            "spectral_error",
            "error_bound",
            "sketch_size",
            "memory_bytes",
            "update_time",
        )
    }
    spent = 0.0  # CPU seconds in the estimator's update, on the clock of the thread policy
    cpu, _ = cpu_clock(threads)
    for t in range(1, n + 1):
        x = torch.as_tensor(rows[t - 1], dtype=estimator.dtype, device=estimator.device)
        start = cpu()
        estimator.update(x)
        spent += cpu() - start
        gram += np.outer(rows[t - 1], rows[t - 1])
        if t % every == 0 or t == n:
            err, deltas = _spectral_point(gram, estimator, [int(fixed_l)] if fixed_l else [])
            bound = (
                2.0 * float(eps)
                if eps is not None
                else (deltas[str(int(fixed_l))] if fixed_l else float("nan"))
            )
            for key, value in zip(
                cols,
                (t, err, bound, float(estimator.sketch_size), int(estimator.memory_bytes()), spent),
            ):
                cols[key].append(value)
    frame = pd.DataFrame(
        {
            "agent": spec["agent_label"],
            "env": spec["env_label"],
            "seed": int(config["seed"]),
            **cols,
        }
    )
    summary = {
        "rounds": n,
        "final_error": float(frame["spectral_error"].iloc[-1]),
        "max_error": float(frame["spectral_error"].max()),
        "final_bound": float(frame["error_bound"].iloc[-1]),
        "agent_time_s": spent,
        "ms_per_round": 1000.0 * spent / n,
        "peak_memory_bytes": int(frame["memory_bytes"].max()),
        "final_sketch_size": float(frame["sketch_size"].iloc[-1]),
    }
    return frame, {"device": str(estimator.device), "summary": summary}
