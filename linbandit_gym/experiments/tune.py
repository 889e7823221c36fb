"""Grid search of the confidence radius beta and the ridge lambda (Wen et al., 2025, App. F.1).

The paper tunes, for every algorithm, beta in {1e-4, ..., 1} and lambda in {2e-4, ..., 2e4}
and reports the best; it does not say by which criterion or on which runs [GAP]. Here: for each
(env, agent config) of a sweep, every (beta, lambda) pair of the grid is run on *tuning seeds*
(by default 1000, 1001, so the evaluation seeds 0, 1, ... are not the ones tuned on) and the
pair with the lowest mean final cumulative regret is chosen (ties: the first in grid order).
The tuning runs are an ordinary sweep (resumable, same records) in ``DIR``; the choice is
written to ``DIR/tuned.yaml`` and, merged into the config's ``tuned:`` section, to
``DIR/tuned-config.yaml`` which ``linbandit sweep`` runs as is.
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import yaml

from ..records import atomic_path, check_output_dir, write_text_atomic
from .config import (
    FEEDBACK_KEYS, PAPER_BETA_GRID, PAPER_LAM_GRID, ConfigError, _positive_int,
    _resolve_agent_factory, _seeds, canonical_json, parse_config, select_labels,
)
from .execution import ExecutionOptions
from .sweep import load_runs, sweep

__all__ = ["TuneResult", "tune", "TUNE_SEED_OFFSET"]

#: An int ``tune.seeds: n`` means seeds ``TUNE_SEED_OFFSET .. TUNE_SEED_OFFSET + n - 1``.
TUNE_SEED_OFFSET = 1000


@dataclass
class TuneResult:
    out_dir: Path
    tuned: dict  # env label -> agent label -> {beta, lam}
    table: pd.DataFrame  # every (env, agent, beta, lam): mean final regret
    tuned_config: dict
    tuned_path: Path
    config_path: Path
    failed: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    def table_markdown(self) -> str:
        from .figures import markdown_table

        rows = []
        for env, per_agent in self.tuned.items():
            for agent, values in per_agent.items():
                rows.append({"env": env, "agent": agent, "beta": values.get("beta"), "lam": values.get("lam"),
                             "tuning regret": f"{values['final_regret']:.2f}"})
        return markdown_table(pd.DataFrame(rows)) if rows else "(nothing tuned)"


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
    options: ExecutionOptions | None = None,
    log: Callable[[str], None] | None = print,
    **execution: Any,
) -> TuneResult:
    """Tune ``beta`` and ``lam`` for each agent config of a bandit sweep config.

    Grid and seeds come from the arguments, else the config's ``tune:`` section, else the
    paper's grids with 2 tuning seeds. ``horizon`` shortens the tuning episodes. ``agents``
    (glob patterns over labels) restricts what is tuned; agents that take neither ``beta``
    nor ``lam`` are skipped. ``options`` (and its fields as keywords, ``workers=2``): how the
    tuning sweep executes (:class:`~linbandit_gym.experiments.ExecutionOptions`); the grid points
    and seeds of one agent family share a batch when its class lets members differ in ``beta``
    and ``lam``. Only regret is compared, so no run is timed alone (``timing_runs=False``).
    """
    from .config import load_config

    run_options = ExecutionOptions.build(options, **execution)  # checked before anything is written
    raw = load_config(config) if not isinstance(config, dict) else copy.deepcopy(config)
    cfg = parse_config(raw)
    if cfg.task != "bandit":
        raise ConfigError("task: only bandit sweeps have beta and lambda to tune")
    settings = dict(raw.get("tune") or {})
    # a value given is used or refused, never replaced by a default (0 is not "not given")
    betas = _grid("--beta", beta) if beta is not None else settings.get("beta") or PAPER_BETA_GRID
    lams = _grid("--lam", lam) if lam is not None else settings.get("lam") or PAPER_LAM_GRID
    seed_spec = seeds if seeds is not None else settings.get("seeds", 2)
    tune_seeds = [TUNE_SEED_OFFSET + s for s in _seeds(seed_spec)] if isinstance(seed_spec, int) else _seeds(seed_spec)
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
        entries.append({"name": name, "args": args, "grid": grid, "family": label, **played,
                        "label": label.replace("{", "{{").replace("}", "}}") + f" [{tuned_words}]"})
    if not entries:
        raise ConfigError(f"tune.agents: no agent label matches {patterns!r}")
    tuning = {"name": f"{cfg.name}-tune", "seeds": tune_seeds, "envs": _tuning_envs(raw, horizon), "agents": entries}
    if raw.get("horizon") is not None and horizon is None:
        tuning["horizon"] = raw["horizon"]
    # only regret is compared here: every seed may share a batch, no run needs to be timed alone
    result = sweep(tuning, out, options=run_options, timing_runs=False, log=log)

    runs = load_runs(out)
    for col in ("arg.beta", "arg.lam"):
        if col not in runs:
            runs[col] = float("nan")
    table = (
        runs.groupby(["env", "family", "arg.beta", "arg.lam"], sort=False, dropna=False)["final_regret"].agg(["mean", "std", "count"])
        .reset_index().rename(columns={"family": "agent", "arg.beta": "beta", "arg.lam": "lam", "mean": "final_regret"})
    ) if not runs.empty else pd.DataFrame()
    tuned: dict[str, dict[str, dict[str, Any]]] = {}
    for (env, agent), group in table.groupby(["env", "agent"], sort=False):
        best = group.loc[group["final_regret"].idxmin()]
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
    config_path = out / "tuned-config.yaml"
    write_text_atomic(yaml.safe_dump(new_raw, sort_keys=False), config_path, out)
    return TuneResult(out, tuned, table, new_raw, tuned_path, config_path, dict(result.failed))


def _grid(option: str, values: Any) -> list[float]:
    """``values`` of ``--beta`` or ``--lam`` if they are a non-empty list of numbers, else a
    :class:`ConfigError` naming the option (the agents check each value's range)."""
    import numbers

    if not (isinstance(values, (list, tuple)) and values
            and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)):
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
