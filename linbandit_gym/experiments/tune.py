"""Search of the confidence radius beta and the ridge lambda (Wen et al., 2025, App. F.1).

The paper tunes, for every algorithm, beta in {1e-4, ..., 1} and lambda in {2e-4, ..., 2e4}
and reports the best; it does not say by which criterion or on which runs [GAP]. Here: for each
(env, agent config) of a sweep, the (beta, lambda) pairs of the grid are played on *tuning
seeds* (by default 1000, 1001, so the evaluation seeds 0, 1, ... are not the ones tuned on) and
the pair with the lowest mean cumulative regret at the end of the episode is chosen (ties: the
first in grid order). Two schedules:

* ``"halving"`` (default): successive halving (Jamieson & Talwalkar, 2016; Li et al., 2018),
  :mod:`.halving`: every pair plays the first ``T / eta^s`` rounds, the best ``1 / eta`` go on
  from where they stopped, and so on to ``T``; the pick is the best of the pairs that reach
  ``T``. Each bracket (one agent config on one env config) is one unit of work, written to
  ``DIR/halving/<id>.json`` when it ends (a rerun skips the brackets already there).
* ``"grid"``: every pair plays every round, the paper's protocol. The tuning runs are an
  ordinary sweep (resumable, same records) in ``DIR``.

The choice is written to ``DIR/tuned.yaml`` and, merged into the config's ``tuned:`` section, to
``DIR/tuned-config.yaml``, which ``linbandit sweep`` runs as is and whose ``tune:`` section says
which schedule chose it; ``DIR/tune-table.csv`` holds every pair's mean regret (for halving: at
the last round it played, ``rounds``).
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from ..records import (
    RecordsError,
    atomic_path,
    check_output_dir,
    read_json,
    seal,
    seal_problem,
    write_json_atomic,
    write_text_atomic,
)
from ..text import count
from .config import (
    FEEDBACK_KEYS,
    PAPER_BETA_GRID,
    PAPER_LAM_GRID,
    ConfigError,
    RunSpec,
    SweepConfig,
    _positive_int,
    _resolve_agent_factory,
    _seeds,
    canonical_json,
    check_schedule,
    parse_config,
    run_id,
    select_labels,
)
from .costs import CpuLedger
from .execution import ExecutionOptions
from .halving import DEFAULT_ETA, rungs
from .packing import member_bytes, pack, round_cpu_seconds
from .sweep import load_runs, sweep

__all__ = ["TuneResult", "tune", "TUNE_SEED_OFFSET"]

#: An int ``tune.seeds: n`` means seeds ``TUNE_SEED_OFFSET .. TUNE_SEED_OFFSET + n - 1``.
TUNE_SEED_OFFSET = 1000


@dataclass
class TuneResult:
    out_dir: Path
    tuned: dict  # env label -> agent label -> {beta, lam, final_regret}
    table: pd.DataFrame  # every (env, agent, beta, lam): mean regret where it stopped, and its cost
    tuned_config: dict
    tuned_path: Path
    config_path: Path
    failed: dict = field(default_factory=dict)
    schedule: str = "grid"
    cost: CpuLedger = field(default_factory=CpuLedger)  # where the CPU time of this call went
    #: the warnings the tuning's runs or brackets raised, each said once: (category, message) ->
    #: where it came from (:attr:`.sweep.SweepResult.warnings`, :func:`.sweep.warning_lines`)
    warnings: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    def table_markdown(self) -> str:
        """The choice per (env, agent), its mean regret on the tuning seeds, and what tuning that
        agent cost: the rounds played over every pair and seed, and the agents' CPU seconds."""
        from .figures import markdown_table

        spent = {}
        if not self.table.empty and "rounds_played" in self.table:
            by_agent = self.table.groupby(["env", "agent"], sort=False)
            spent = by_agent[["rounds_played", "agent_cpu_s"]].sum()
        rows = []
        for env, per_agent in self.tuned.items():
            for agent, values in per_agent.items():
                row = {
                    "env": env,
                    "agent": agent,
                    "beta": values.get("beta"),
                    "lam": values.get("lam"),
                    "tuning regret": f"{values['final_regret']:.2f}",
                }
                if (env, agent) in getattr(spent, "index", ()):  # aliases: their first label's
                    cost = spent.loc[(env, agent)]
                    row.update(
                        {
                            "rounds played": f"{int(cost['rounds_played']):,}",
                            "agent CPU (s)": f"{cost['agent_cpu_s']:.1f}",
                        }
                    )
                rows.append(row)
        return markdown_table(pd.DataFrame(rows).fillna("")) if rows else "(nothing tuned)"


def _accepts(factory, name: str) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def tune(
    config: dict | str | Path,
    out_dir: str | Path | None = None,
    *,
    beta: list[float] | None = None,
    lam: list[float] | None = None,
    seeds: int | list[int] | None = None,
    horizon: int | None = None,
    agents: list[str] | None = None,
    schedule: str | None = None,
    eta: int | None = None,
    options: ExecutionOptions | None = None,
    log: Callable[[str], None] | None = print,
    **execution: Any,
) -> TuneResult:
    """Tune ``beta`` and ``lam`` for each agent config of a bandit sweep config.

    Grid and seeds come from the arguments, else the config's ``tune:`` section, else the
    paper's grids with 2 tuning seeds. ``horizon`` shortens the tuning episodes. ``agents``
    (glob patterns over labels) restricts what is tuned; agents that take neither ``beta``
    nor ``lam`` are skipped. ``schedule``: ``"halving"`` (successive halving with reduction
    factor ``eta``, default 3, :mod:`.halving`) or ``"grid"`` (every pair to the end, the
    paper's protocol); default: the config's ``tune.schedule``, else ``"halving"``.
    ``options`` (and its fields as keywords, ``workers=2``): how the tuning runs execute
    (:class:`~linbandit_gym.experiments.ExecutionOptions`); ``batched``, ``batch_memory`` and
    ``max_batch`` say how they are packed into batched programs: on the grid, the pairs and
    seeds of one agent family share a batch when its class lets members differ in ``beta`` and
    ``lam``; with halving, the seeds of one pair (which go on or stop together), and
    ``batch_memory`` also bounds what one bracket holds alive at once. Only regret is compared,
    so no run is timed alone (``timing_runs=False``).
    """
    from .config import load_config

    run_options = ExecutionOptions.build(options, **execution)  # checked before anything is written
    raw = load_config(config) if not isinstance(config, dict) else copy.deepcopy(config)
    cfg = parse_config(raw)
    if cfg.task != "bandit":
        raise ConfigError("task: only bandit sweeps have beta and lambda to tune")
    settings = dict(raw.get("tune") or {})
    schedule = schedule if schedule is not None else settings.get("schedule", "halving")
    eta = eta if eta is not None else settings.get("eta", DEFAULT_ETA)
    check_schedule(schedule, eta, "" if schedule is not None else "tune.")
    # a value given is used or refused, never replaced by a default (0 is not "not given")
    betas = _grid("--beta", beta) if beta is not None else settings.get("beta") or PAPER_BETA_GRID
    lams = _grid("--lam", lam) if lam is not None else settings.get("lam") or PAPER_LAM_GRID
    seed_spec = seeds if seeds is not None else settings.get("seeds", 2)
    tune_seeds = (
        [TUNE_SEED_OFFSET + s for s in _seeds(seed_spec)]
        if isinstance(seed_spec, int)
        else _seeds(seed_spec)
    )
    if horizon is not None:
        horizon = _positive_int(horizon, "--horizon (the tuning horizon)")
    else:
        horizon = settings.get("horizon")
    patterns = agents or settings.get("agents")
    default = Path("runs") / f"{cfg.name}-tune"
    out = check_output_dir(Path(out_dir) if out_dir is not None else default)

    wanted = set(select_labels([r.agent_label for r in cfg.runs], patterns))
    entries, seen, aliases = [], set(), {}
    for spec in cfg.runs:
        label = spec.agent_label
        if label not in wanted or label in seen:
            continue
        seen.add(label)
        name, args = spec.config["agent"]["name"], dict(spec.config["agent"]["args"])
        factory = _resolve_agent_factory(name, "agents")
        grid = {}
        if _accepts(factory, "beta"):
            grid["beta"] = betas
        if _accepts(factory, "lam"):
            grid["lam"] = lams
        if not grid:
            if log:
                log(f"tune: skipping {label!r}: its agent takes neither beta nor lam")
            continue
        for key in grid:
            args.pop(key, None)
        # tuned under the feedback schedule its evaluation runs play (absent: the plain loop)
        played = {key: spec.config[key] for key in FEEDBACK_KEYS if key in spec.config}
        key = canonical_json([name, args, grid, played])
        if key in aliases:  # labels differing only in beta/lam share one tuning grid
            aliases[key].append(label)
            continue
        aliases[key] = [label]
        tuned_words = ", ".join(f"{key}={{{key}}}" for key in grid)  # what this agent takes
        entries.append(
            {
                "name": name,
                "args": args,
                "grid": grid,
                "family": label,
                **played,
                "label": label.replace("{", "{{").replace("}", "}}") + f" [{tuned_words}]",
            }
        )
    if not entries:
        raise ConfigError(f"tune.agents: no agent label matches {patterns!r}")
    tuning = {
        "name": f"{cfg.name}-tune",
        "seeds": tune_seeds,
        "envs": _tuning_envs(raw, horizon),
        "agents": entries,
    }
    if raw.get("horizon") is not None and horizon is None:
        tuning["horizon"] = raw["horizon"]
    if schedule == "grid":
        # only regret is compared here: every seed may share a batch, no run needs to be timed alone
        result = sweep(tuning, out, options=run_options, timing_runs=False, log=log)
        table, picks, failed = _grid_outcome(out), None, dict(result.failed)
        ledger, warned = result.cost, result.warnings
    else:
        table, picks, failed, ledger, warned = _halving(
            parse_config(tuning), out, eta=eta, options=run_options, log=log
        )

    tuned: dict[str, dict[str, dict[str, Any]]] = {}
    groups = table.groupby(["env", "agent"], sort=False) if not table.empty else ()
    for (env, agent), group in groups:
        pick = picks[(env, agent)] if picks is not None else group["final_regret"].idxmin()
        best = group.loc[pick]
        values = {k: float(best[k]) for k in ("beta", "lam") if pd.notna(best[k])}
        values["final_regret"] = float(best["final_regret"])
        for label in next((labels for labels in aliases.values() if labels[0] == agent), [agent]):
            tuned.setdefault(env, {})[label] = dict(values)
    with atomic_path(out / "tune-table.csv", out) as tmp:
        table.to_csv(tmp, index=False)
    tuned_path = out / "tuned.yaml"
    write_text_atomic(yaml.safe_dump(tuned, sort_keys=False), tuned_path, out)
    new_raw = copy.deepcopy(raw)
    merged = copy.deepcopy(raw.get("tuned") or {})
    for env, per_agent in tuned.items():
        merged.setdefault(env, {})
        for agent, values in per_agent.items():
            merged[env][agent] = {k: v for k, v in values.items() if k != "final_regret"}
    new_raw["tuned"] = merged
    # which schedule chose the tuned values: re-tuning this config searches the same way
    new_raw["tune"] = {**settings, "schedule": schedule}
    if schedule == "halving":
        new_raw["tune"]["eta"] = eta
    if schedule == "grid":
        new_raw["tune"].pop("eta", None)
    config_path = out / "tuned-config.yaml"
    how = f"successive halving, eta = {eta}" if schedule == "halving" else "the full grid"
    header = (
        f"# tuned by `linbandit tune` ({how}) on seeds {', '.join(map(str, tune_seeds))}: "
        "see tuned: and tune: below\n"
    )
    write_text_atomic(header + yaml.safe_dump(new_raw, sort_keys=False), config_path, out)
    return TuneResult(
        out, tuned, table, new_raw, tuned_path, config_path, failed, schedule, ledger, warned
    )


def _grid_outcome(out: Path) -> pd.DataFrame:
    """Every pair's mean final regret over the tuning seeds of a grid's tuning sweep in ``out``,
    with the rounds its runs played and its agents' CPU seconds."""
    runs = load_runs(out)
    if runs.empty:
        return pd.DataFrame()
    for col in ("arg.beta", "arg.lam"):
        if col not in runs:
            runs[col] = float("nan")
    keys = ["env", "family", "arg.beta", "arg.lam"]
    grouped = runs.groupby(keys, sort=False, dropna=False)
    table = (
        grouped["final_regret"]
        .agg(["mean", "std", "count"])
        .join(
            grouped.agg(
                rounds=("rounds", "max"),
                rounds_played=("rounds", "sum"),
                agent_cpu_s=("agent_time_s", "sum"),
            )
        )
    )
    return table.reset_index().rename(
        columns={"family": "agent", "arg.beta": "beta", "arg.lam": "lam", "mean": "final_regret"}
    )


def _grid(option: str, values: Any) -> list[float]:
    """``values`` of ``--beta`` or ``--lam`` if they are a non-empty list of numbers, else a
    :class:`ConfigError` naming the option (the agents check each value's range)."""
    import numbers

    if not (
        isinstance(values, (list, tuple))
        and values
        and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)
    ):
        raise ConfigError(f"{option}: expected one or more numbers, got {values!r}")
    return list(values)


def _tuning_envs(raw: dict, horizon: int | None) -> list:
    envs = copy.deepcopy(raw["envs"])
    if horizon is None:
        return envs
    out = []
    for entry in envs:
        entry = {"id": entry} if isinstance(entry, str) else entry
        entry.setdefault("args", {})
        entry["args"]["horizon"] = horizon
        if "label" not in entry and not entry.get("grid"):
            entry["label"] = entry["id"]  # keep the label the evaluation sweep uses
        out.append(entry)
    return out


def _episode_shapes(cfg: SweepConfig) -> dict[str, tuple[int, int, int]]:
    """``(K, d, T)`` of each env config of ``cfg`` (by canonical JSON): its arm sets' shape and
    the rounds of its episodes, read from the env built once (and closed)."""
    from ..loop import make_env

    seen: dict[str, tuple[int, int, int]] = {}
    for spec in cfg.runs:
        env = spec.config["env"]
        key = canonical_json(env)
        if key in seen:
            continue
        try:
            instance = make_env(env["id"], **env["args"])
            instance.reset(seed=spec.seed)
            n_arms, d = (int(n) for n in instance.observation_space.shape[-2:])
            horizon = getattr(instance.unwrapped, "horizon", None)
            instance.close()
        except Exception as exc:
            raise ConfigError(
                f"env {spec.env_label!r} ({env['id']} with {env['args']}) cannot be built: {exc}"
            ) from exc
        if not isinstance(horizon, int) or horizon < 1:
            raise ConfigError(
                f"env {spec.env_label!r} has no horizon: successive halving needs episodes of a "
                "known length; give the env a horizon, or tune with --schedule grid"
            )
        seen[key] = (n_arms, d, horizon)
    return seen


def _brackets(
    cfg: SweepConfig, eta: int, *, batched: bool | None, batch_memory: int, max_batch: int | None
) -> list[dict]:
    """The brackets of successive halving of a tuning config: one per (env label, agent family),
    its pairs in grid order, each pair's seeds grouped into the units a sweep would pack them
    into (:func:`.packing.pack`). Refuses, before anything runs, a bracket whose runs, all alive
    at once after the first rung, would hold more than ``batch_memory``."""
    from ..envs.memory import format_bytes

    shapes = _episode_shapes(cfg)
    groups: dict[tuple[str, str], dict[str, list[RunSpec]]] = {}
    for spec in cfg.runs:
        groups.setdefault((spec.env_label, spec.family), {}).setdefault(
            spec.agent_label, []
        ).append(spec)
    brackets = []
    for (env_label, family), pairs in groups.items():
        first = next(iter(pairs.values()))[0]
        n_arms, d, horizon = shapes[canonical_json(first.config["env"])]
        plan = rungs(len(pairs), horizon, eta)
        runs = [spec for specs in pairs.values() for spec in specs]
        # every run's agent, and the env's estimate once: most of it is the data its instances share
        states = [
            member_bytes(s.config["agent"]["name"], s.config["agent"]["args"], n_arms, d)
            for s in runs
        ]
        held = sum(states)
        memory = cfg.memory.get((first.agent_label, env_label))
        held += memory.env_bytes if memory is not None else 0
        if math.isfinite(held) and held > batch_memory:  # an unknown size is not refused
            raise ConfigError(
                f"tune: successive halving keeps the {count(len(runs), 'run')} of {family} on "
                f"{env_label} alive at once ({count(len(pairs), 'pair')} x "
                f"{count(len(cfg.seeds), 'seed')}), about {format_bytes(int(held))}, more than the "
                f"memory budget of {format_bytes(batch_memory)}: raise --batch-memory, tune fewer "
                "pairs or seeds, or use --schedule grid"
            )
        configs = []
        for label, specs in pairs.items():
            args = specs[0].config["agent"]["args"]
            units = pack(
                specs,
                shapes={canonical_json(first.config["env"]): (n_arms, d)},
                batched=batched,
                batch_memory=batch_memory,
                max_batch=max_batch,
            )
            configs.append(
                {
                    "label": label,
                    "args": {k: args[k] for k in ("beta", "lam") if k in args},
                    "units": [[spec.to_dict() for spec in unit] for unit in units],
                }
            )
        identity = {
            "eta": eta,
            "rungs": [[r.rounds, r.configs] for r in plan],
            "runs": [[spec.run_id for spec in specs] for specs in pairs.values()],
        }
        # the rounds the bracket plays: n_k configurations on S seeds from r_(k-1) to r_k
        seeds = len(runs) // len(pairs)
        starts = [0] + [rung.rounds for rung in plan[:-1]]
        member_rounds = seeds * sum(r.configs * (r.rounds - a) for r, a in zip(plan, starts))
        brackets.append(
            {
                "kind": "halving",
                "id": run_id(identity),
                "env_label": env_label,
                "family": family,
                "rungs": identity["rungs"],
                "configs": configs,
                # the planner's estimate, each seed of a pair as if played alone
                "cpu_estimate_s": member_rounds * round_cpu_seconds(max(states)),
            }
        )
    return brackets


def _bracket_done(path: Path, bracket_id: str) -> dict | None:
    """The result of bracket ``bracket_id`` saved at ``path``, if it is there and intact."""
    if not path.exists():
        return None
    try:
        data = read_json(path)
    except (RecordsError, OSError):  # garbled or unreadable: played again
        return None
    if seal_problem(data) is not None or data.get("id") != bracket_id:
        return None
    return data


def _halving(
    cfg: SweepConfig,
    out: Path,
    *,
    eta: int,
    options: ExecutionOptions,
    log: Callable[[str], None] | None,
) -> tuple[pd.DataFrame, dict, dict, CpuLedger, dict[tuple[str, str], list[str]]]:
    """Tune by successive halving: play the brackets of ``cfg`` (those not saved in ``out`` yet),
    save each as it ends and say each warning its agents raised that no bracket before raised
    (naming the agent and env), as a sweep says its runs'; return the table of every pair, the
    index (in the table) of each bracket's pick by (env, agent), the failed brackets'
    tracebacks, the CPU ledger and the warnings with where each came from."""
    from ..records import writing_output_dir
    from .backends import fewer_workers_line, iter_results, local_workers, worker_count
    from .costs import Stopwatch, children_cpu
    from .sweep import _say_new_warnings, _settle_costs, warning_summary

    say = log or (lambda _msg: None)
    backend, workers, threads = options.backend, options.workers, options.threads
    brackets = _brackets(
        cfg,
        eta,
        batched=options.batched,
        batch_memory=options.batch_memory,
        max_batch=options.max_batch,
    )
    results: dict[str, dict] = {}
    failed: dict[str, str] = {}
    warned: dict[tuple[str, str], list[str]] = {}
    ledger = CpuLedger()
    with writing_output_dir(out, "tune", keeps=("halving", "failed")):
        directory = out / "halving"
        pending = []
        for bracket in brackets:
            done = _bracket_done(directory / f"{bracket['id']}.json", bracket["id"])
            if done is not None:
                results[bracket["id"]] = done
            else:
                pending.append(bracket)
        allowed = local_workers(workers, threads) if backend == "local" else workers
        seconds = [bracket["cpu_estimate_s"] for bracket in pending]
        used = allowed
        if backend == "local" and pending:  # only as many worker processes as the work pays for
            used = worker_count(seconds, allowed)
        say(
            f"tune {cfg.name!r} by successive halving (eta = {eta}): "
            f"{count(len(brackets), 'bracket')} (agent x env), {len(results)} already finished, "
            f"{len(pending)} to run ({backend}, {count(used, 'worker')}, one bracket each) -> {out}"
        )
        if used < allowed:
            say(fewer_workers_line(used, allowed, sum(seconds)))
        watch, children_start = Stopwatch(), children_cpu()
        for index, (bracket, result, error) in enumerate(
            iter_results(
                pending,
                backend=backend,
                workers=used,
                threads=threads,
                address=options.address,
            ),
            1,
        ):
            source = f"{bracket['family']} on {bracket['env_label']}"
            tag = f"[{index}/{len(pending)}] {source}"
            if error is not None:
                failed[bracket["id"]] = error
                write_json_atomic(
                    {"id": bracket["id"], "error": error},
                    out / "failed" / f"{bracket['id']}.json",
                    out,
                )
                last = error.strip().splitlines()[-1] if error.strip() else "error"
                say(f"{tag}: FAILED ({last})")
                continue
            write_json_atomic(seal(result), directory / f"{bracket['id']}.json", out)
            stale = out / "failed" / f"{bracket['id']}.json"
            if stale.exists():
                stale.unlink()
            results[bracket["id"]] = result
            ledger.add_run(result["cost"])
            say(f"{tag}: {_bracket_line(result, len(cfg.seeds))}")
            _say_new_warnings(warned, result.get("warnings"), source)
        _settle_costs(
            ledger,
            watch,
            children_start,
            in_process=backend == "local" and used == 1,
            local=backend == "local",
        )
        for line in ledger.lines("tuning"):
            say(line)
        for line in warning_summary(warned, "brackets"):
            say(line)
    rows, picks = [], {}
    for bracket in brackets:
        result = results.get(bracket["id"])
        if result is None:
            continue
        for i, entry in enumerate(result["configs"]):
            last = np.asarray(entry["regrets"][-1], dtype=float)
            if i == result["chosen"]:
                picks[(result["env_label"], result["family"])] = len(rows)
            rows.append(
                {
                    "env": result["env_label"],
                    "agent": result["family"],
                    "beta": entry["args"].get("beta", float("nan")),
                    "lam": entry["args"].get("lam", float("nan")),
                    "final_regret": float(last.mean()),
                    "std": float(last.std(ddof=1)) if last.size > 1 else float("nan"),
                    "count": int(last.size),
                    "rounds": int(entry["rounds"]),
                    "rounds_played": int(entry["member_rounds"]),
                    "agent_cpu_s": float(entry["agent_cpu_s"]),
                }
            )
    if failed:
        say(
            f"{count(len(failed), 'bracket')} failed; tracebacks in {out / 'failed'}; rerun the "
            "same command to retry"
        )
    return pd.DataFrame(rows), picks, failed, ledger, warned


def _bracket_line(result: dict, seeds: int) -> str:
    """One line on a finished bracket: its rungs, its pick and what it played against the grid."""
    plan = result["rungs"]
    pick = result["configs"][result["chosen"]]
    values = ", ".join(f"{k}={v:g}" for k, v in pick["args"].items())
    horizon = plan[-1][0]
    grid = len(result["configs"]) * seeds * horizon
    rounds = "/".join(str(r) for r, _ in plan)
    kept = "/".join(str(n) for _, n in plan)
    played = result["member_rounds"]
    return (
        f"{count(len(result['configs']), 'pair')} x {count(seeds, 'seed')}, rungs of {rounds} "
        f"rounds for {kept} pairs: {values} (regret {np.mean(pick['regrets'][-1]):.2f} at round "
        f"{pick['rounds']}); {played:,} rounds played, {played / grid:.0%} of the grid's {grid:,}"
    )
