"""Run a sweep: expand a config, skip finished runs, execute the rest, write each atomically.

Layout of an output directory::

    DIR/config.yaml             the config as given (what `linbandit plot/report` read)
    DIR/manifest.json           the run ids of that config, with their labels
    DIR/runs/<run_id>.parquet   per-round records of one run (CSV without pyarrow)
    DIR/runs/<run_id>.json      its metadata: full config, seed, versions, device, summary, the
                                records file's size, rows and SHA-256, and its own checksum
    DIR/failed/<run_id>.json    the traceback of a run's last failure (removed on success)
    DIR/.lock                   flock'ed by the process writing DIR (its pid and command line)

A run is *finished* when its ``.json`` passes its checks (its checksum, the schema of a run's
JSON: :func:`linbandit_gym.records.run_meta_problem`), holds the run's config, and its records
file has the size, rows and SHA-256 the ``.json`` stores: the records are written (atomically)
first, so a sweep killed at any moment leaves every run either finished or absent, and a
rerun of the same config redoes exactly the unfinished ones (and any run whose files were
damaged since, saying why). ``plot`` and ``report`` read only runs that pass the same checks
and name every one that does not, with the reason. Ids are hashes of the run configs, so a
run can never be written twice under different names. One process writes a directory at a
time (``DIR/.lock``); Ctrl-C keeps every finished run (:class:`Interrupted` says how many).
Pending runs of one env config and agent family that differ only in their seed and the
arguments the agent class lets batch members differ in (``per_member_args``: lam, beta, ...) run as one batched program
(:mod:`.packing`), each member saved as its own run as soon as the batch ends. ``linbandit run --out DIR``
writes this layout too (:func:`play_into`), so ``plot`` and ``report`` read both.
"""

from __future__ import annotations

import errno
import json
import time
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import yaml

from ..records import (
    OutputError,
    RecordsError,
    check_records,
    lock_output_dir,
    read_json,
    read_records,
    records_fingerprint,
    remove_stale_temporaries,
    run_meta_problem,
    seal,
    seal_problem,
    write_json_atomic,
    write_records,
    write_text_atomic,
)
from ..evaluate import timed_runs
from ..registry import registered_name
from ..threads import DEFAULT_THREADS, check_threads, thread_limit, thread_record
from ..text import count
from .backends import iter_results, local_workers
from .config import ConfigError, RunSpec, SweepConfig, _curve_points, canonical_json, parse_config, run_id
from .costs import CpuLedger, Stopwatch, children_cpu
from .packing import DEFAULT_BATCH_MEMORY, pack, parse_bytes

__all__ = [
    "SweepResult",
    "sweep",
    "plan",
    "load_runs",
    "load_records",
    "summary_table",
    "read_sweep_config",
    "is_finished",
    "play_into",
    "Interrupted",
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

    @property
    def ok(self) -> bool:
        return not self.failed


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep or ``run --out``; every finished run is saved. The message says how
    many, e.g. ``interrupted: 14/18 runs saved in runs/x; run the same command to resume``."""


def _interrupted(saved: int, total: int, out: Path, resumable: bool = True) -> Interrupted:
    tail = "; run the same command to resume" if resumable else ""
    return Interrupted(f"interrupted: {saved}/{total} runs saved in {out}{tail}")


#: Writes the user can fix by choosing another directory (exit code 2); any other error of the
#: file system (a full disk, a file too large, an I/O error) is a failure (exit code 1).
_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}


def _output_error(out: Path, exc: OSError) -> OutputError:
    """One line for an error of the file system while writing ``out``."""
    where = exc.filename or out
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in _UNWRITABLE:
        return OutputError(f"cannot write to {where}: {reason}; make {out} writable or choose another output "
                           "directory (--out)")
    return OutputError(f"cannot write to {where}: {reason}; free space (or raise the file size limit) or choose "
                       "another output directory (--out); every run saved before is kept", exit_code=1)


@contextmanager
def _writing(out: Path, what: str, keeps: tuple[str, ...] = ("runs", "failed")) -> Iterator[None]:
    """Hold the lock of ``out`` (one writer per directory), make its first directory of
    ``keeps`` (``runs/``; a tuning by successive halving keeps ``halving/``), clear what dead
    writers left, and turn an error of the file system into one clear :class:`OutputError`."""
    with lock_output_dir(out, what):
        try:
            for sub in keeps:
                if (out / sub).exists() and not (out / sub).is_dir():
                    raise OutputError(f"{out / sub} is a file, where {out} keeps its {sub}/ directory: move it "
                                      "away, or choose another output directory (--out)")
            (out / keeps[0]).mkdir(exist_ok=True)
            for directory in (out, *(out / sub for sub in keeps)):
                remove_stale_temporaries(directory)
            yield
        except (ConnectionError, TimeoutError):  # the network (a Ray cluster), not the output directory
            raise
        except OSError as exc:  # also pyarrow's, whose errno may be unset
            raise _output_error(out, exc) from exc


def _records_path(runs_dir: Path, rid: str) -> Path | None:
    for suffix in (".parquet", ".csv"):
        path = runs_dir / f"{rid}{suffix}"
        if path.exists():
            return path
    return None


def records_problem(runs_dir: Path, meta: dict) -> str | None:
    """``None`` if the records of the run ``meta`` describes are complete, else what is wrong
    (naming the file): missing, or not matching the size and rows its metadata stores."""
    rid = meta.get("run_id")
    named = (meta.get("records") or {}).get("file")
    path = runs_dir / named if named else _records_path(runs_dir, str(rid))
    if path is None or not path.exists():
        return f"{path or runs_dir / f'{rid}.parquet'} is missing"
    problem = check_records(path, meta.get("records"))
    return None if problem is None else f"{path} {problem}"


def read_run_meta(path: str | Path) -> dict:
    """A run's JSON (``runs/<id>.json``), checked: valid JSON, its checksum, the schema of a
    run's JSON (:func:`linbandit_gym.records.run_meta_problem`); else :class:`RecordsError`
    naming the file and what is wrong."""
    path = Path(path)
    meta = read_json(path)
    problem = run_meta_problem(meta, path.stem)
    if problem is not None:
        raise RecordsError(f"{path} {problem}")
    return meta


def _checked_run(out_dir: str | Path, run_id: str) -> tuple[dict | None, str | None]:
    """``(meta, None)`` if run ``run_id`` of ``out_dir`` passes every check, else ``(None,
    what is wrong)``, naming the file: its JSON missing, garbled or failing its checksum or
    schema, its records missing or not the size, rows and SHA-256 its JSON stores."""
    runs_dir = Path(out_dir) / "runs"
    meta_path = runs_dir / f"{run_id}.json"
    if not meta_path.exists():
        return None, f"{meta_path} is missing"
    try:
        meta = read_run_meta(meta_path)
    except RecordsError as exc:
        return None, str(exc).split("; delete it")[0]
    except OSError as exc:
        return None, f"{meta_path} cannot be read ({exc.strerror or exc})"
    problem = records_problem(runs_dir, meta)
    return (meta, None) if problem is None else (None, problem)


def run_problem(out_dir: str | Path, run_id: str) -> str | None:
    """``None`` if run ``run_id`` of ``out_dir`` passes every check, else what is wrong."""
    return _checked_run(out_dir, run_id)[1]


def is_finished(out_dir: str | Path, spec: RunSpec) -> bool:
    """Whether ``spec`` has records and metadata with the same config in ``out_dir`` that pass
    every check (:func:`run_problem`). A run that fails one is not finished: it is done again.
    """
    meta, _ = _checked_run(out_dir, spec.run_id)
    return meta is not None and canonical_json(meta["config"]) == canonical_json(spec.config)


def _refresh_labels(out_dir: Path, spec: RunSpec) -> None:
    """A finished run keeps its records; only its labels follow the current config."""
    meta_path = out_dir / "runs" / f"{spec.run_id}.json"
    meta = read_run_meta(meta_path)
    new = {"agent_label": spec.agent_label, "env_label": spec.env_label, "family": spec.family}
    if any(meta.get(k) != v for k, v in new.items()):
        meta.update(new)
        write_json_atomic(seal(meta), meta_path)


def save_run(out_dir: str | Path, records: pd.DataFrame, meta: dict) -> Path:
    """Write a finished run: its records, then its metadata with their fingerprint (size, rows,
    SHA-256), sealed with its own checksum (the ``.json`` last: its presence marks the run
    finished). Clears an earlier failure."""
    out = Path(out_dir)
    rid = meta["run_id"]
    path = write_records(records, out / "runs" / rid)
    meta = seal({**meta, "records": records_fingerprint(path, len(records))})
    write_json_atomic(meta, out / "runs" / f"{rid}.json")
    stale = out / "failed" / f"{rid}.json"
    if stale.exists():
        stale.unlink()
    return path


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
            raise ConfigError(f"env {spec.env_label!r} ({env['id']} with {env['args']}) cannot be built: {exc}") from exc
    return seen


def plan(config: str | Path | dict | SweepConfig, out_dir: str | Path) -> tuple[list[RunSpec], list[RunSpec]]:
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
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    threads: int | None = DEFAULT_THREADS,
    batched: bool | None = None,
    batch_memory: int | str = DEFAULT_BATCH_MEMORY,
    max_batch: int | None = None,
    timing_runs: bool = True,
    timing_repeats: int | None = None,
    log: Callable[[str], None] | None = print,
) -> SweepResult:
    """Expand ``config``, skip its finished runs in ``out_dir``, run the others, write each.

    Args:
        config: a path to a YAML/TOML config, a dict, or a parsed :class:`SweepConfig`.
        out_dir: output directory (default ``runs/<name>``).
        workers: local worker processes (1: in this process), or Ray CPUs for a local Ray.
        backend: ``"local"`` (default) or ``"ray"``.
        address: Ray cluster address (``backend="ray"``); ``None`` starts a local Ray.
        threads: torch and BLAS threads per run (default 1; ``None``: the executing process's own
            setting); see :mod:`linbandit_gym.threads`. Recorded in each run's metadata.
        batched: ``True``: pending runs that differ only in seed and in the agent's
            ``per_member_args`` (lam, beta, ...) advance together as one batched program when
            their agent and env allow it (see :mod:`.packing`), each still saved as its own run;
            ``None`` (default): the same for runs whose agent state is small enough for a batch
            to be faster (:data:`linbandit_gym.batched.SMALL_STATE`), in batches of
            :data:`linbandit_gym.batched.MIN_BATCH` members at least; ``False``: one run at a time.
        batch_memory: memory budget of one batch, bytes or a size such as ``"2GiB"`` (default).
        max_batch: members of one batch at most (default
            :data:`linbandit_gym.batched.DEFAULT_MAX_BATCH`).
        timing_runs: ``True`` (default): the run of every configuration with the config's first
            seed is never batched, so that every configuration has a time measured alone (a
            batch member's records hold a share of the batch's time), which the tables and
            figures of cost read; ``False``: every seed may be batched (e.g. tuning, where only
            regret is compared).
        timing_repeats: how many times each timing run is played; its records are the same each
            time but for the times, of which each round keeps the least (what the rest of the
            machine disturbed least); default: the config's ``timing_repeats``, else 1.
        log: called with one line per finished run (``None``: silent).

    Returns:
        A :class:`SweepResult`; failed runs are listed there (with tracebacks, also written to
        ``DIR/failed/``) and are retried by the next call.

    Example:

    >>> import tempfile
    >>> cfg = {"seeds": 2, "envs": [{"id": "LinBandit-Synthetic-v0", "args": {"d": 4, "n_arms": 3, "horizon": 5}}],
    ...        "agents": [{"name": "OFUL", "grid": {"beta": [0.1, 1.0]}}]}
    >>> out = tempfile.mkdtemp()
    >>> len(sweep(cfg, out, log=None).executed), len(sweep(cfg, out, log=None).skipped)
    (4, 4)
    """
    threads = check_threads(threads)
    batch_memory = parse_bytes(batch_memory)
    if timing_repeats is not None and (isinstance(timing_repeats, bool) or not isinstance(timing_repeats, int)
                                       or timing_repeats < 1):
        raise ValueError(f"timing_repeats must be an int >= 1, got {timing_repeats!r}")
    if batched not in (None, True, False):
        raise ValueError(f"batched must be None, True or False, got {batched!r}")
    cfg = config if isinstance(config, SweepConfig) else parse_config(config)
    out = Path(out_dir) if out_dir is not None else default_out_dir(cfg)
    say = log or (lambda _msg: None)
    with _writing(out, "sweep"):
        _write_config(out, cfg)
        finished, pending = plan(cfg, out)
        for spec in finished:
            _refresh_labels(out, spec)
        result = SweepResult(out_dir=out, config=cfg, skipped=[s.run_id for s in finished])
        for note in cfg.notes:
            say(f"note: {note}")
        for spec in pending:
            if (out / "runs" / f"{spec.run_id}.json").exists():  # written once, damaged since
                say(f"redoing {spec.agent_label} on {spec.env_label} seed {spec.seed}: "
                    f"{run_problem(out, spec.run_id) or 'its JSON holds another config'}")
        say(
            f"sweep {cfg.name!r}: {len(cfg.runs)} runs, {len(finished)} already finished, {len(pending)} to run "
            f"({backend}, {count(workers, 'worker')}, {count(threads, 'thread') if threads else 'default threads'} per run) "
            f"-> {out}"
        )
        if not pending:
            return result
        watch, children_start = Stopwatch(), children_cpu()
        try:
            shapes = _preflight(cfg, pending)
            timing_seed = cfg.seeds[0] if timing_runs else None
            units = pack(pending, shapes=shapes, batched=batched, batch_memory=batch_memory, max_batch=max_batch,
                         workers=local_workers(workers, threads) if backend == "local" else workers,
                         timing_seed=timing_seed)
            batches = [len(u) for u in units if len(u) > 1]
            if batches:
                say(f"batched: {batch_wording(batches)}, {count(len(units) - len(batches), 'run')} on their own"
                    + (f" (seed {cfg.seeds[0]} of each configuration timed alone)" if timing_runs else ""))
            _execute(cfg, units, out, result, say, timing_seed=timing_seed,
                     timing_repeats=cfg.timing_repeats if timing_repeats is None else timing_repeats,
                     backend=backend, workers=workers, threads=threads, address=address)
        except KeyboardInterrupt:
            raise _interrupted(len(result.skipped) + len(result.executed), len(cfg.runs), out) from None
        _settle_costs(result.cost, watch, children_start, local=backend == "local",
                      in_process=backend == "local" and workers == 1)
        for line in result.cost.lines():
            say(line)
    if result.failed:
        say(f"{count(len(result.failed), 'run')} failed; tracebacks in {out / 'failed'}; rerun the sweep to retry them")
    return result


def _settle_costs(ledger: CpuLedger, watch: Stopwatch, children_start: float, *, in_process: bool,
                  local: bool) -> None:
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

    >>> batch_wording([2, 2]), batch_wording([5]), batch_wording([2, 3, 4])
    ('4 runs in 2 batches of 2 members', '5 runs in 1 batch of 5 members', '9 runs in 3 batches of 2 to 4 members')
    """
    low, high = min(sizes), max(sizes)
    members = f"{low} members" if low == high else f"{low} to {high} members"
    return f"{count(sum(sizes), 'run')} in {count(len(sizes), 'batch', 'batches')} of {members}"


def _execute(cfg: SweepConfig, units: list[list[RunSpec]], out: Path, result: SweepResult, say, *,
             timing_seed: int | None = None, timing_repeats: int = 1, **backend_options) -> None:
    """Run the ``units`` of the plan on the backend and save each run (or its failure) as it
    arrives; the timing runs (seed ``timing_seed``, on their own) are played ``timing_repeats``
    times, each round's least time kept."""
    total, done = sum(len(u) for u in units), 0
    start = time.perf_counter()
    plan_units = [unit[0].to_dict() if len(unit) == 1 else [s.to_dict() for s in unit] for unit in units]
    for unit, planned in zip(units, plan_units):
        if len(unit) == 1 and timing_repeats > 1 and unit[0].seed == timing_seed:
            planned["timing_repeats"] = timing_repeats
    alone = {unit[0].run_id for unit in units if len(unit) == 1}
    results = iter_results(plan_units, curve_points=_curve_points(cfg.raw), **backend_options)
    with closing(results):  # an interrupt stops the workers now, not at garbage collection
        for spec_dict, res, error in results:
            done += 1
            rid = spec_dict["run_id"]
            tag = (f"[{done}/{total}] {spec_dict['agent_label']} on {spec_dict['env_label']} "
                   f"seed {spec_dict['config']['seed']}")
            if error is not None:
                result.failed[rid] = error
                write_json_atomic({"run_id": rid, "spec": spec_dict, "error": error}, out / "failed" / f"{rid}.json")
                last = error.strip().splitlines()[-1] if error.strip() else "error"
                say(f"{tag}: FAILED ({last})")
                continue
            res["meta"]["backend"] = backend_options["backend"]
            save_run(out, res["records"], res["meta"])
            result.executed.append(rid)
            result.cost.add_run(res.get("cost"))
            if rid in alone and spec_dict["config"].get("seed") == timing_seed is not None:
                result.cost.timing_runs += res.get("cost", {}).get("cpu_s", 0.0)
            say(f"{tag}: {_one_line(res['meta'])} ({time.perf_counter() - start:.0f} s since the sweep started)")


def _object_agent_config(agent: Any, label: str) -> dict:
    """What the runs of an agent object are identified by when its exact config is unknown:
    its class (registered name or module:Class), its constructor arguments read back as
    attributes (the scikit-learn convention; non-scalars as text) and its label."""
    import inspect

    cls = type(agent)
    name = registered_name(cls)
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    args: dict[str, Any] = {}
    for key, param in params.items():
        if key == "d" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue  # d: read from the first observation, not a choice of the user
        try:
            value = getattr(agent, key)
        except Exception:  # no such attribute (or a property that needs state): not recorded
            continue
        args[key] = value if value is None or isinstance(value, (bool, int, float, str)) else str(value)
    return {"name": name, "args": args, "label": label}


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
    """
    from ..batched import can_batch
    from ..evaluate import run
    from ..loop import agent_label, check_seeds
    from .runner import split_by_seed

    out = Path(out_dir)
    seeds = check_seeds(seeds)
    threads = check_threads(threads)
    env_kwargs = dict(env_kwargs or {})
    configs = list(agent_configs) if agent_configs is not None else [None] * len(players)
    if len(configs) != len(players):
        raise ValueError(f"agent_configs has {len(configs)} entries for {len(players)} agents")
    entries = []  # (label, agent, resumable, its runs)
    for (given, player), exact in zip(players, configs):
        if isinstance(player, type) or (not callable(getattr(player, "act", None)) and callable(player)):
            player = player()  # a factory, e.g. an agent class, as `run` accepts
        label = agent_label(player, given)
        agent_cfg = ({"name": exact["name"], "args": dict(exact.get("args") or {})} if exact
                     else _object_agent_config(player, label))
        specs = []
        for seed in seeds:
            config = {"task": "bandit", "agent": agent_cfg, "env": {"id": env_id, "args": env_kwargs}, "seed": seed}
            try:
                canonical = json.loads(canonical_json(config))
            except TypeError as exc:
                raise ValueError(f"the arguments of agent {label!r} or of the env cannot be saved: {exc}; "
                                 "use numbers, strings, booleans, None and lists of them") from exc
            specs.append(RunSpec(run_id(canonical), canonical, label, env_id, agent_cfg["name"]))
        entries.append((label, player, exact is not None, specs))
    labels = [label for label, *_ in entries]
    for label in labels:
        if labels.count(label) > 1:
            raise ValueError(f"two agents share the label {label!r}: give each a distinct name")
    raw = {"name": out.resolve().name or "run", "seeds": seeds, "envs": [{"id": env_id, "args": env_kwargs}],
           "agents": [{"name": specs[0].config["agent"]["name"], "args": specs[0].config["agent"]["args"], "label": label}
                      for label, _, _, specs in entries]}
    cfg = SweepConfig(raw=raw, name=raw["name"], task="bandit", seeds=seeds, runs=[s for *_, specs in entries for s in specs])
    frames: dict[str, pd.DataFrame] = {}
    with _writing(out, "run"):
        _write_config(out, cfg)
        try:
            for index, (label, player, resumable, specs) in enumerate(entries):
                todo = []
                for spec in specs:
                    if resumable and is_finished(out, spec):
                        _refresh_labels(out, spec)
                        frames[spec.run_id] = read_records(_records_path(out / "runs", spec.run_id)).assign(agent=label)
                    else:
                        todo.append(spec)
                together = batched is True or (
                    batched is None and not resumable and len(todo) > 1 and can_batch(env_id, player))
                for group in ([todo] if together and todo else [[spec] for spec in todo]):
                    started, t0 = datetime.now(timezone.utc), time.perf_counter()
                    with thread_limit(threads):
                        frame = run(env_id, player, seeds=[spec.seed for spec in group], env_kwargs=env_kwargs,
                                    agent_name=label, env_name=env_id, progress=progress,
                                    batched=batched if together else False, threads=threads)
                        threads_used = thread_record(threads)
                    duration = (time.perf_counter() - t0) / len(group)
                    extra = {"device": str(getattr(player, "device", "cpu")), "backend": "run", **threads_used}
                    for result in split_by_seed(frame, [spec.to_dict() for spec in group], extra, started, duration):
                        save_run(out, result["records"], result["meta"])
                        frames[result["run_id"]] = result["records"]
                if on_agent_done is not None:
                    on_agent_done(index, pd.concat([frames[spec.run_id] for spec in specs], ignore_index=True))
        except KeyboardInterrupt:
            raise _interrupted(len(frames), len(cfg.runs), out, all(e[2] for e in entries)) from None
    return pd.concat([frames[spec.run_id] for spec in cfg.runs], ignore_index=True)


def _one_line(meta: dict) -> str:
    s = meta.get("summary", {})
    if "final_regret" in s:
        return f"regret {s['final_regret']:.2f}, {s['ms_per_round']:.3f} ms/round"
    if "final_error" in s:
        return f"error {s['final_error']:.3f} (bound {s['final_bound']:.3f})"
    return "done"


def _write_config(out: Path, cfg: SweepConfig) -> None:
    write_text_atomic(yaml.safe_dump(cfg.raw, sort_keys=False), out / "config.yaml")
    manifest = {
        "name": cfg.name,
        "task": cfg.task,
        "runs": [{"run_id": r.run_id, "agent": r.agent_label, "env": r.env_label, "seed": r.seed} for r in cfg.runs],
    }
    write_json_atomic(seal(manifest), out / "manifest.json")


def read_sweep_config(out_dir: str | Path) -> dict | None:
    """The raw config a sweep directory was produced from (``None`` if absent)."""
    path = Path(out_dir) / "config.yaml"
    if not path.exists():
        return None
    from .config import load_config

    return load_config(path)


def _run_ids(out_dir: Path, all_runs: bool) -> list[str] | None:
    manifest = out_dir / "manifest.json"
    if all_runs or not manifest.exists():
        return None
    data = read_json(manifest)
    problem = seal_problem(data)
    if problem is None:
        try:
            ids = [r["run_id"] for r in data["runs"]]
            if all(isinstance(i, str) for i in ids):
                return ids
        except (KeyError, TypeError):
            pass
        problem = "does not list the runs"
    raise RecordsError(f"{manifest} {problem}: rerun the sweep (or the same `linbandit run` command) to write it "
                       f"again, or delete it to see every run of {out_dir}")


def load_runs(out_dir: str | Path, *, all_runs: bool = False) -> pd.DataFrame:
    """One row per finished run: labels, seed, agent args, summary metrics.

    By default only the runs of the directory's current config (its manifest); ``all_runs``
    also returns runs of earlier configs written to the same directory.
    """
    out = Path(out_dir)
    runs_dir = out / "runs"
    if not runs_dir.is_dir():
        raise FileNotFoundError(f"{out} holds no sweep (no runs/ directory): run `linbandit sweep CONFIG --out {out}`")
    wanted = _run_ids(out, all_runs)
    paths = [runs_dir / f"{rid}.json" for rid in wanted] if wanted is not None else sorted(runs_dir.glob("*.json"))
    rows, problems = [], []
    for path in paths:
        if not path.exists():
            continue  # not run yet, or failed: the report lists failed/
        meta, problem = _checked_run(out, path.stem)
        if problem is not None:
            problems.append(problem)
            continue
        summary = meta["summary"]
        # how its times were measured; runs saved before records said so: B if it ran in a batch
        shared_by = summary.get("time_shared_by", meta.get("batch_size", 1))
        row = {
            "run_id": meta["run_id"],
            "agent": meta["agent_label"],
            "env": meta["env_label"],
            "family": meta.get("family", meta["config"]["agent"]["name"]),
            "agent_name": meta["config"]["agent"]["name"],
            "seed": meta["seed"],
            "device": meta.get("device"),
            "backend": meta.get("backend"),
            **{f"arg.{k}": v for k, v in meta["config"]["agent"]["args"].items() if _is_scalar(v)},
            **{k: v for k, v in summary.items() if _is_scalar(v)},
            "time_shared_by": shared_by,
        }
        rows.append(row)
    if problems:
        raise _damaged(out, problems)
    return pd.DataFrame(rows)


def _damaged(out: Path, problems: list[str]) -> RecordsError:
    """The error naming every run of ``out`` that fails its checks, with the reason."""
    listed = "\n".join(f"  {problem}" for problem in problems)
    return RecordsError(
        f"{len(problems)} run(s) of {out} fail their checks, so no table or figure would be right:\n{listed}\n"
        "rerun the sweep (or the same `linbandit run` command) to redo them, or delete a run's .json to leave "
        "it out"
    )

def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str, np.number))


def load_meta(out_dir: str | Path, run_id: str) -> dict:
    """The checked JSON of run ``run_id`` (:func:`read_run_meta`)."""
    return read_run_meta(Path(out_dir) / "runs" / f"{run_id}.json")


def load_records(out_dir: str | Path, run_ids: list[str] | None = None, *, columns: list[str] | None = None) -> pd.DataFrame:
    """Concatenated per-round records of finished runs, labelled by the current config."""
    out = Path(out_dir)
    runs = load_runs(out)
    if run_ids is not None:
        runs = runs[runs["run_id"].isin(run_ids)]
    frames = []
    for rid, agent, env in zip(runs["run_id"], runs["agent"], runs["env"]):
        # the file its JSON names (load_runs checked its SHA-256)
        path = out / "runs" / read_json(out / "runs" / f"{rid}.json")["records"]["file"]
        frame = read_records(path)
        if columns is not None:
            frame = frame[[c for c in columns if c in frame.columns]]
        frames.append(frame.assign(agent=agent, env=env))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (env, agent): seeds, final regret mean/std, total and per-round agent time (CPU; wall
    ms/round too when recorded), peak memory, sketch size. The times are means over the runs
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
        cost = timed_runs(runs, keys).groupby(keys, sort=False).agg(
            time_s=("agent_time_s", "mean"),
            ms_per_round=("ms_per_round", "mean"),
            **({"wall_ms_per_round": ("wall_ms_per_round", "mean")} if "wall_ms_per_round" in runs else {}),
            timing=("timing", "first"),
            timed_seeds=("seed", "nunique"),
            # "best of R" only where every timed run was played R times
            **({"timing_repeats": ("timing_repeats", "min")} if "timing_repeats" in runs else {}),
        )
        table = table.join(cost)
        memory = runs.groupby(keys, sort=False).agg(
            peak_memory_kib=("peak_memory_bytes", lambda v: float(np.max(v)) / 1024.0),
            final_sketch_size=("final_sketch_size", "mean"),
        )
        table = table.join(memory)
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
