"""Run a sweep: expand a config, skip finished runs, execute the rest, save each as it finishes.

The runs are saved in the layout of an output directory that :mod:`linbandit_gym.records` owns
(``DIR/config.yaml``, ``DIR/manifest.json``, ``DIR/runs/<run_id>.parquet|json``,
``DIR/failed/<run_id>.json``, ``DIR/.lock``), each finished run written atomically, so that a
sweep killed at any moment leaves every run either finished or absent, and a rerun of the same
config redoes exactly the unfinished ones (and any run whose files were damaged since, saying
why). One process writes a directory at a time (``DIR/.lock``); Ctrl-C keeps every finished run
(:class:`Interrupted` says how many). How the runs execute (workers, backend, threads, batches,
timing runs) is an :class:`~linbandit_gym.experiments.execution.ExecutionOptions`, checked with
the config and the output directory before the first write. Pending runs of one env config and
agent family that differ only in their seed and the arguments the agent class lets batch members
differ in (``per_member_args``: lam, beta, ...) run as one batched program (:mod:`.packing`),
each member saved as its own run as soon as the batch ends. ``linbandit run --out DIR`` writes
this layout too (:func:`play_into`), so ``plot`` and ``report`` read both.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from linbandit_host.user_line import KeptWarning, warn_user

from ..evaluate import exact_summary, timed_runs
from ..records import (
    Completeness,
    check_output_dir,
    completeness,
    is_finished,
    load_meta,
    load_records,
    load_runs,
    read_records,
    records_path,
    refresh_labels,
    run_problem,
    save_run,
    write_json_atomic,
    write_sweep_config,
    writing_output_dir,
)
from ..registry import agent_arguments, registered_name
from ..text import count
from ..threads import DEFAULT_THREADS, check_threads, thread_limit, thread_record
from .backends import fewer_workers_line, iter_results, local_workers, worker_count
from .config import (
    ConfigError,
    RunSpec,
    SweepConfig,
    _curve_points,
    canonical_json,
    parse_config,
    run_id,
)
from .costs import CpuLedger, Stopwatch, children_cpu
from .execution import ExecutionOptions
from .packing import cpu_seconds, pack

__all__ = [
    "SweepResult",
    "check_output_dir",
    "completeness",
    "Completeness",
    "sweep",
    "plan",
    "load_runs",
    "load_records",
    "summary_table",
    "read_sweep_config",
    "is_finished",
    "play_into",
    "Interrupted",
    "run_warnings",
    "warning_lines",
    "warning_summary",
]


@dataclass
class SweepResult:
    """What a call of :func:`sweep` did."""

    out_dir: Path
    config: SweepConfig
    executed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # run id -> traceback
    cost: CpuLedger = field(default_factory=CpuLedger)  # where the executed runs' CPU time went
    #: the warnings the executed runs raised, each said once: (category, message) -> where, in
    #: the words of :func:`warning_source` ("agents[1] (SOFUL l=600 on mnist)")
    warnings: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep or ``run --out``; every finished run is saved. The message says how
    many, e.g. ``interrupted: 14/18 runs saved in runs/x; run the same command to resume``."""


def _interrupted(saved: int, total: int, out: Path, resumable: bool = True) -> Interrupted:
    tail = "; run the same command to resume" if resumable else ""
    return Interrupted(f"interrupted: {saved}/{total} runs saved in {out}{tail}")


def _preflight(config: SweepConfig, specs: list[RunSpec]) -> dict[str, tuple[int, int]]:
    """Build each env config once so that missing data or bad arguments fail before any run;
    return the ``(K, d)`` of each env config's arm sets (by canonical JSON, for the planner)."""
    if config.task != "bandit":
        return {}
    from ..loop import make_env

    seen: dict[str, tuple[int, int]] = {}
    for spec in specs:
        env = spec.config["env"]
        key = canonical_json(env)
        if key in seen:
            continue
        try:
            instance = make_env(env["id"], **env["args"])
            instance.reset(seed=spec.seed)
            seen[key] = tuple(int(n) for n in instance.observation_space.shape[-2:])
            instance.close()
        except Exception as exc:
            raise ConfigError(
                f"env {spec.env_label!r} ({env['id']} with {env['args']}) cannot be built: {exc}"
            ) from exc
    return seen


def plan(
    config: str | Path | dict | SweepConfig, out_dir: str | Path
) -> tuple[list[RunSpec], list[RunSpec]]:
    """``(finished, pending)`` runs of ``config`` in ``out_dir``."""
    cfg = config if isinstance(config, SweepConfig) else parse_config(config)
    finished, pending = [], []
    for spec in cfg.runs:
        (finished if is_finished(out_dir, spec) else pending).append(spec)
    return finished, pending


def default_out_dir(config: SweepConfig) -> Path:
    return Path("runs") / config.name


def sweep(
    config: str | Path | dict | SweepConfig,
    out_dir: str | Path | None = None,
    *,
    options: ExecutionOptions | None = None,
    log: Callable[[str], None] | None = print,
    **execution: Any,
) -> SweepResult:
    """Expand ``config``, skip its finished runs in ``out_dir``, run the others, write each.

    Args:
        config: a path to a YAML/TOML config, a dict, or a parsed :class:`SweepConfig`.
        out_dir: output directory (default ``runs/<name>``).
        options: how the runs execute (:class:`~linbandit_gym.experiments.ExecutionOptions`:
            workers, backend, address, threads, batched, batch_memory, max_batch, timing_runs,
            timing_repeats); default: every default.
        log: called with one line per finished run, and at the end one per distinct warning of
            the runs (``None``: silent).
        **execution: fields of ``options`` given as keywords (``workers=2, batched=False``),
            which override those of ``options``.

    Returns:
        A :class:`SweepResult`; failed runs are listed there (with tracebacks, also written to
        ``DIR/failed/``) and are retried by the next call.

    Warnings the runs raise (in this process or a worker) are kept in each run's metadata and
    raised here once each, naming the config entry and run (``"agents[1] (SOFUL l=600 on
    mnist): ..."``), at the caller's line; :attr:`SweepResult.warnings` lists where each came from.

    Example:

    >>> import tempfile
    >>> cfg = {"seeds": 2,
    ...        "envs": [{"id": "LinBandit-Synthetic-v0",
    ...                  "args": {"d": 4, "n_arms": 3, "horizon": 5}}],
    ...        "agents": [{"name": "OFUL", "grid": {"beta": [0.1, 1.0]}}]}
    >>> out = tempfile.mkdtemp()
    >>> len(sweep(cfg, out, log=None).executed), len(sweep(cfg, out, log=None).skipped)
    (4, 4)
    """
    opts = ExecutionOptions.build(options, **execution)  # checked before anything is written
    cfg = config if isinstance(config, SweepConfig) else parse_config(config)
    out = check_output_dir(Path(out_dir) if out_dir is not None else default_out_dir(cfg))
    say = log or (lambda _msg: None)
    # Everything that can refuse the sweep comes before its first write: the options, the
    # config, the output directory, and every env config of the runs to do (missing data).
    shapes = _preflight(cfg, plan(cfg, out)[1])
    with writing_output_dir(out, "sweep"):
        write_sweep_config(out, cfg)
        finished, pending = plan(cfg, out)  # again, now that no other writer can change it
        for spec in finished:
            refresh_labels(out, spec)
        result = SweepResult(out_dir=out, config=cfg, skipped=[s.run_id for s in finished])
        for note in cfg.notes:
            say(f"note: {note}")
        for spec in pending:
            if (out / "runs" / f"{spec.run_id}.json").exists():  # written once, damaged since
                say(
                    f"redoing {spec.agent_label} on {spec.env_label} seed {spec.seed}: "
                    f"{run_problem(out, spec.run_id) or 'its JSON holds another config'}"
                )
        say(
            f"sweep {cfg.name!r}: {len(cfg.runs)} runs, {len(finished)} already finished, "
            f"{len(pending)} to run "
            f"({opts.backend}, {count(opts.workers, 'worker')}, "
            f"{count(opts.threads, 'thread') if opts.threads else 'default threads'} per run) "
            f"-> {out}"
        )
        if not pending:
            return result
        watch, children_start = Stopwatch(), children_cpu()
        try:
            timing_seed = cfg.seeds[0] if opts.timing_runs else None
            repeats = cfg.timing_repeats if opts.timing_repeats is None else opts.timing_repeats
            local = opts.backend == "local"
            allowed = local_workers(opts.workers, opts.threads) if local else opts.workers

            def plan_for(workers: int) -> list[list[RunSpec]]:
                return pack(
                    pending,
                    shapes=shapes,
                    batched=opts.batched,
                    batch_memory=opts.batch_memory,
                    max_batch=opts.max_batch,
                    workers=workers,
                    timing_seed=timing_seed,
                )

            units, workers = plan_for(allowed), allowed
            if local and allowed > 1:  # only as many worker processes as the work pays for
                timed = [len(unit) == 1 and unit[0].seed == timing_seed for unit in units]
                seconds = [
                    cpu_seconds(unit, shapes) * (repeats if alone else 1)
                    for unit, alone in zip(units, timed)
                ]
                workers = worker_count(seconds, allowed)
                if workers < allowed:
                    units = plan_for(workers)
                    say(fewer_workers_line(workers, allowed, sum(seconds)))
            batches = [len(u) for u in units if len(u) > 1]
            if batches:
                alone = f" (seed {cfg.seeds[0]} of each configuration timed alone)"
                say(
                    f"batched: {batch_wording(batches)}, "
                    f"{count(len(units) - len(batches), 'run')} on their own"
                    + (alone if opts.timing_runs else "")
                )
            _execute(
                cfg,
                units,
                out,
                result,
                say,
                timing_seed=timing_seed,
                timing_repeats=repeats,
                backend=opts.backend,
                workers=workers,
                threads=opts.threads,
                address=opts.address,
            )
        except KeyboardInterrupt:
            raise _interrupted(
                len(result.skipped) + len(result.executed), len(cfg.runs), out
            ) from None
        _settle_costs(
            result.cost,
            watch,
            children_start,
            local=opts.backend == "local",
            in_process=opts.backend == "local" and workers == 1,
        )
        for line in result.cost.lines():
            say(line)
    for line in warning_summary(result.warnings, "runs", kept_in="summary.md and the report"):
        say(line)
    if result.failed:
        say(
            f"{count(len(result.failed), 'run')} failed; tracebacks in {out / 'failed'}; "
            "rerun the sweep to retry them"
        )
    return result


def _settle_costs(
    ledger: CpuLedger, watch: Stopwatch, children_start: float, *, in_process: bool, local: bool
) -> None:
    """Fill in the CPU seconds spent outside the units: this process's own (planning, saving
    runs; the units it ran itself report their own), and local workers' outside their units
    (start-up; counted once the workers have ended). Ray workers' start-up is not known here."""
    units = ledger.agents + ledger.rounds
    if in_process:
        watch.exclude(units)
    elif local:
        ledger.workers += max(0.0, children_cpu() - children_start - units)
    ledger.driver += watch.elapsed()


def batch_wording(sizes: list[int]) -> str:
    """How runs were packed, in words: ``"4 runs in 2 batches of 2 members"``, ``"5 runs in 1
    batch of 5 members"``, ``"9 runs in 3 batches of 2 to 4 members"``.

    >>> batch_wording([2, 2])
    '4 runs in 2 batches of 2 members'
    >>> batch_wording([5])
    '5 runs in 1 batch of 5 members'
    >>> batch_wording([2, 3, 4])
    '9 runs in 3 batches of 2 to 4 members'
    """
    low, high = min(sizes), max(sizes)
    members = f"{low} members" if low == high else f"{low} to {high} members"
    return f"{count(sum(sizes), 'run')} in {count(len(sizes), 'batch', 'batches')} of {members}"


def _execute(
    cfg: SweepConfig,
    units: list[list[RunSpec]],
    out: Path,
    result: SweepResult,
    say,
    *,
    timing_seed: int | None = None,
    timing_repeats: int = 1,
    **backend_options,
) -> None:
    """Run the ``units`` of the plan on the backend and save each run (or its failure) as it
    arrives; the timing runs (seed ``timing_seed``, on their own) are played ``timing_repeats``
    times, each round's least time kept."""
    total, done = sum(len(u) for u in units), 0
    start = time.perf_counter()
    plan_units = [
        unit[0].to_dict() if len(unit) == 1 else [s.to_dict() for s in unit] for unit in units
    ]
    for unit, planned in zip(units, plan_units):
        if len(unit) == 1 and timing_repeats > 1 and unit[0].seed == timing_seed:
            planned["timing_repeats"] = timing_repeats
    alone = {unit[0].run_id for unit in units if len(unit) == 1}
    results = iter_results(plan_units, curve_points=_curve_points(cfg.raw), **backend_options)
    with closing(results):  # an interrupt stops the workers now, not at garbage collection
        for spec_dict, res, error in results:
            done += 1
            rid = spec_dict["run_id"]
            tag = (
                f"[{done}/{total}] {spec_dict['agent_label']} on {spec_dict['env_label']} "
                f"seed {spec_dict['config']['seed']}"
            )
            if error is not None:
                result.failed[rid] = error
                failure = {"run_id": rid, "spec": spec_dict, "error": error}
                write_json_atomic(failure, out / "failed" / f"{rid}.json", out)
                last = error.strip().splitlines()[-1] if error.strip() else "error"
                say(f"{tag}: FAILED ({last})")
                continue
            res["meta"]["backend"] = backend_options["backend"]
            save_run(out, res["records"], res["meta"])
            result.executed.append(rid)
            result.cost.add_run(res.get("cost"))
            if rid in alone and spec_dict["config"].get("seed") == timing_seed is not None:
                result.cost.timing_runs += res.get("cost", {}).get("cpu_s", 0.0)
            say(
                f"{tag}: {_one_line(res['meta'])} "
                f"({time.perf_counter() - start:.0f} s since the sweep started)"
            )
            meta = res["meta"]
            _say_new_warnings(result.warnings, meta.get("warnings"), warning_source(meta))


def warning_source(meta: dict) -> str:
    """Where a run's warning came from, in words: its config entry and run label, ``"agents[1]
    (SOFUL l=600 on mnist)"`` (the labels alone for a run of ``linbandit run``); for a member of
    a batch, whose warnings are the batch's, the batch: ``"agents[1] (a batch of 4 runs of
    SOFUL on mnist)"``."""
    batch = int(meta.get("batch_size") or 1)
    what = (
        meta.get("agent_label")
        if batch == 1
        else f"a batch of {batch} runs of {meta.get('family')}"
    )
    what = f"{what} on {meta.get('env_label')}"
    return f"{meta['entry']} ({what})" if meta.get("entry") else what


def _say_new_warnings(
    said: dict[tuple[str, str], list[str]], records: list[dict] | None, source: str
) -> None:
    """Raise each warning of ``records`` (a run's or a tuning bracket's kept warnings,
    :func:`linbandit_host.user_line.warning_records`) that none before raised, once, naming its
    ``source`` (:func:`warning_source`; at the caller's line: stderr of a ``linbandit`` command);
    record where every one came from in ``said``."""
    for record in records or ():
        sources = said.setdefault((record["category"], record["message"]), [])
        if not sources:
            kept = KeptWarning(record["category"], record.get("module", ""), record["message"])
            warn_user(f"{source}: {record['message']}", kept.category_class())
        if source not in sources:
            sources.append(source)


def warning_summary(
    warnings: dict[tuple[str, str], list[str]], of: str, kept_in: str | None = None
) -> list[str]:
    """What a sweep or a tuning says of its warnings when it ends: how many came from its ``of``
    (``"runs"``, ``"brackets"``), each said once (and where else they are kept), then one
    indented :func:`warning_lines` line each; nothing when there are none."""
    if not warnings:
        return []
    also = f" (also in {kept_in})" if kept_in else ""
    head = f"{count(len(warnings), 'warning')} from the {of}, each said once{also}:"
    return [head, *(f"  {line}" for line in warning_lines(warnings))]


def warning_lines(warnings: dict[tuple[str, str], list[str]]) -> list[str]:
    """One line per distinct warning: ``"SketchSizeWarning from agents[1] (SOFUL l=600 on mnist):
    SOFUL(sketch_size=600) at d=784 ..."`` (several sources: the first two and how many more)."""
    lines = []
    for (category, message), sources in warnings.items():
        more = f" and {count(len(sources) - 2, 'more run')}" if len(sources) > 2 else ""
        lines.append(f"{category} from {', '.join(sources[:2])}{more}: {message}")
    return lines


def run_warnings(
    out_dir: str | Path, runs: pd.DataFrame | None = None
) -> dict[tuple[str, str], list[str]]:
    """The distinct warnings the finished runs of ``out_dir`` (or ``runs``, rows of
    :func:`load_runs`) raised, each with where it came from, as :attr:`SweepResult.warnings`."""
    runs = load_runs(out_dir) if runs is None else runs
    found: dict[tuple[str, str], list[str]] = {}
    for rid in runs["run_id"] if not runs.empty else ():
        meta = load_meta(out_dir, rid)
        for record in meta.get("warnings") or ():
            sources = found.setdefault((record["category"], record["message"]), [])
            if warning_source(meta) not in sources:
                sources.append(warning_source(meta))
    return found


def _object_agent_config(agent: Any, label: str) -> dict:
    """What the runs of an agent object are identified by when its exact config is unknown:
    its class (registered name or module:Class), its constructor arguments read back
    (:func:`linbandit_gym.registry.agent_arguments`; non-scalars as text) and its label."""
    scalar = (bool, int, float, str)
    args = {
        key: value if value is None or isinstance(value, scalar) else str(value)
        for key, value in agent_arguments(agent).items()
    }
    return {"name": registered_name(type(agent)), "args": args, "label": label}


def play_into(
    out_dir: str | Path,
    env_id: str,
    players: list[tuple[str | None, Any]],
    seeds: int | list[int] = 1,
    *,
    env_kwargs: dict | None = None,
    agent_configs: list[dict | None] | None = None,
    progress: bool | None = None,
    batched: bool | None = None,
    threads: int | None = DEFAULT_THREADS,
    on_agent_done: Callable[[int, pd.DataFrame], None] | None = None,
    feedback_delay: int = 0,
    update_every: int = 1,
) -> pd.DataFrame:
    """Play each ``(label, agent)`` of ``players`` on ``env_id`` over ``seeds`` and save every
    (agent, seed) as a run of the sweep layout in ``out_dir``; return all their records.

    This is ``linbandit run --out DIR``: ``plot``, ``report`` and ``load_runs`` read the result
    as they read a sweep. ``agent_configs[i]`` (``{"name": NAME or module:Class, "args": {...}}``,
    what agent i was built from) makes its runs resumable: runs already finished in ``out_dir``
    are read back instead of played. Agents without one are identified by class, arguments and
    label, and always played. Seeds are played one at a time, each saved as it finishes, unless
    ``batched`` is True, or ``None`` for an agent without a config that ``run`` can batch.
    Ctrl-C raises :class:`Interrupted` after saving every finished run. ``on_agent_done(i,
    records)`` is called as soon as agent ``i`` has all its seeds (e.g. to print a line).
    ``threads``: torch and BLAS threads of every run (default 1), recorded in its metadata.
    ``feedback_delay``, ``update_every``: the feedback schedule of every run
    (:func:`linbandit_gym.evaluate.run`), in its config when it is not the plain loop's.
    """
    from ..batched import can_batch
    from ..evaluate import run
    from ..feedback import FeedbackSchedule
    from ..loop import agent_label, check_seeds
    from .runner import split_by_seed

    out = Path(out_dir)
    seeds = check_seeds(seeds)
    threads = check_threads(threads)
    played = FeedbackSchedule(feedback_delay, update_every).config_entries()
    env_kwargs = dict(env_kwargs or {})
    configs = list(agent_configs) if agent_configs is not None else [None] * len(players)
    if len(configs) != len(players):
        raise ValueError(f"agent_configs has {len(configs)} entries for {len(players)} agents")
    entries = []  # (label, agent, resumable, its runs)
    for (given, player), exact in zip(players, configs):
        if isinstance(player, type) or (
            not callable(getattr(player, "act", None)) and callable(player)
        ):
            player = player()  # a factory, e.g. an agent class, as `run` accepts
        label = agent_label(player, given)
        agent_cfg = (
            {"name": exact["name"], "args": dict(exact.get("args") or {})}
            if exact
            else _object_agent_config(player, label)
        )
        specs = []
        for seed in seeds:
            config = {
                "task": "bandit",
                "agent": agent_cfg,
                "env": {"id": env_id, "args": env_kwargs},
                "seed": seed,
                **played,
            }
            try:
                canonical = json.loads(canonical_json(config))
            except TypeError as exc:
                raise ValueError(
                    f"the arguments of agent {label!r} or of the env cannot be saved: {exc}; "
                    "use numbers, strings, booleans, None and lists of them"
                ) from exc
            specs.append(RunSpec(run_id(canonical), canonical, label, env_id, agent_cfg["name"]))
        entries.append((label, player, exact is not None, specs))
    labels = [label for label, *_ in entries]
    for label in labels:
        if labels.count(label) > 1:
            raise ValueError(f"two agents share the label {label!r}: give each a distinct name")
    _check_records_fit(env_id, env_kwargs, len(seeds) * len(entries))
    raw = {
        "name": out.resolve().name or "run",
        "seeds": seeds,
        **played,
        "envs": [{"id": env_id, "args": env_kwargs}],
        "agents": [
            {
                "name": specs[0].config["agent"]["name"],
                "args": specs[0].config["agent"]["args"],
                "label": label,
            }
            for label, _, _, specs in entries
        ],
    }
    cfg = SweepConfig(
        raw=raw,
        name=raw["name"],
        task="bandit",
        seeds=seeds,
        runs=[s for *_, specs in entries for s in specs],
    )
    frames: dict[str, pd.DataFrame] = {}
    with writing_output_dir(out, "run"):
        write_sweep_config(out, cfg)
        try:
            for index, (label, player, resumable, specs) in enumerate(entries):
                todo = []
                for spec in specs:
                    if resumable and is_finished(out, spec):
                        refresh_labels(out, spec)
                        path = records_path(out / "runs", spec.run_id)
                        frames[spec.run_id] = read_records(path).assign(agent=label)
                    else:
                        todo.append(spec)
                together = batched is True or (
                    batched is None
                    and not resumable
                    and len(todo) > 1
                    and can_batch(env_id, player)
                )
                for group in [todo] if together and todo else [[spec] for spec in todo]:
                    started, t0 = datetime.now(timezone.utc), time.perf_counter()
                    with thread_limit(threads):
                        frame = run(
                            env_id,
                            player,
                            seeds=[spec.seed for spec in group],
                            env_kwargs=env_kwargs,
                            agent_name=label,
                            env_name=env_id,
                            progress=progress,
                            batched=batched if together else False,
                            threads=threads,
                            **played,
                        )
                        threads_used = thread_record(threads)
                    duration = (time.perf_counter() - t0) / len(group)
                    extra = {
                        "device": str(getattr(player, "device", "cpu")),
                        "backend": "run",
                        **threads_used,
                    }
                    for result in split_by_seed(
                        frame, [spec.to_dict() for spec in group], extra, started, duration
                    ):
                        save_run(out, result["records"], result["meta"])
                        frames[result["run_id"]] = result["records"]
                if on_agent_done is not None:
                    on_agent_done(
                        index, pd.concat([frames[spec.run_id] for spec in specs], ignore_index=True)
                    )
        except KeyboardInterrupt:
            raise _interrupted(
                len(frames), len(cfg.runs), out, all(e[2] for e in entries)
            ) from None
    return pd.concat([frames[spec.run_id] for spec in cfg.runs], ignore_index=True)


def _check_records_fit(env_id: str, env_kwargs: dict, members: int) -> None:
    """The records of ``members`` runs of ``env_id`` (all the runs a ``run --out`` returns
    together) must fit in memory, before the output directory is touched
    (:func:`linbandit_gym.envs.memory.check_records_fit`); an env that is not ours says nothing."""
    from ..envs.memory import check_records_fit
    from ..registration import env_memory_estimate

    try:
        rounds = env_memory_estimate(env_id, **env_kwargs).rounds
    except (TypeError, ValueError):
        return  # not a linbandit id, or arguments the env itself refuses when it is built
    if rounds is not None:
        check_records_fit(rounds, members)


def _one_line(meta: dict) -> str:
    s = meta.get("summary", {})
    if "final_regret" in s:
        return f"regret {s['final_regret']:.2f}, {s['ms_per_round']:.3f} ms/round"
    if "final_error" in s:
        return f"error {s['final_error']:.3f} (bound {s['final_bound']:.3f})"
    return "done"


def read_sweep_config(out_dir: str | Path) -> dict | None:
    """The raw config a sweep directory was produced from (``None`` if absent)."""
    path = Path(out_dir) / "config.yaml"
    if not path.exists():
        return None
    from .config import load_config

    return load_config(path)


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (env, agent): seeds, final regret mean/std, total and per-round agent time (CPU; wall
    ms/round too when recorded), peak memory, sketch size, and over how many seeds and from which
    rounds a sketched agent updated exactly (``exact_seeds``, ``exact_from_first|last``:
    :func:`linbandit_gym.evaluate.exact_summary`). The times are means over the runs
    timed alone where an agent has any (:func:`linbandit_gym.evaluate.timed_runs`), else over
    its runs' shares of batches; ``timing`` says which, ``timed_seeds`` over how many runs."""
    if runs.empty:
        return pd.DataFrame()
    keys = ["env", "agent", "family"]
    if "final_regret" in runs:
        table = runs.groupby(keys, sort=False).agg(
            seeds=("seed", "nunique"),
            rounds=("rounds", "max"),
            final_regret_mean=("final_regret", "mean"),
            final_regret_std=("final_regret", "std"),
        )
        cost = (
            timed_runs(runs, keys)
            .groupby(keys, sort=False)
            .agg(
                time_s=("agent_time_s", "mean"),
                ms_per_round=("ms_per_round", "mean"),
                **(
                    {"wall_ms_per_round": ("wall_ms_per_round", "mean")}
                    if "wall_ms_per_round" in runs
                    else {}
                ),
                timing=("timing", "first"),
                timed_seeds=("seed", "nunique"),
                # "best of R" only where every timed run was played R times
                **(
                    {"timing_repeats": ("timing_repeats", "min")}
                    if "timing_repeats" in runs
                    else {}
                ),
            )
        )
        table = table.join(cost)
        memory = runs.groupby(keys, sort=False).agg(
            peak_memory_kib=("peak_memory_bytes", lambda v: float(np.max(v)) / 1024.0),
            final_sketch_size=("final_sketch_size", "mean"),
        )
        table = table.join(memory).join(exact_summary(runs, keys))
        last = [c for c in ("timing", "timed_seeds", "timing_repeats") if c in table]
        table = table[[c for c in table.columns if c not in last] + last]
        table["final_regret_std"] = table["final_regret_std"].fillna(0.0)
    else:  # matrix approximation
        table = runs.groupby(keys, sort=False).agg(
            seeds=("seed", "nunique"),
            rows=("rounds", "max"),
            final_error_mean=("final_error", "mean"),
            max_error_mean=("max_error", "mean"),
            final_bound=("final_bound", "mean"),
            ms_per_row=("ms_per_round", "mean"),
            peak_memory_kib=("peak_memory_bytes", lambda v: float(np.max(v)) / 1024.0),
            final_sketch_size=("final_sketch_size", "mean"),
        )
    return table.reset_index()
