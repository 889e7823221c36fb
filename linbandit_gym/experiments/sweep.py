"""Run a sweep: expand a config, skip finished runs, execute the rest, write each atomically.

Layout of an output directory::

    DIR/config.yaml             the config as given (what `linbandit plot/report` read)
    DIR/manifest.json           the run ids of that config, with their labels
    DIR/runs/<run_id>.parquet   per-round records of one run (CSV without pyarrow)
    DIR/runs/<run_id>.json      its metadata: full config, seed, versions, device, summary
    DIR/failed/<run_id>.json    the traceback of a run's last failure (removed on success)

A run is *finished* when its ``.json`` exists: it is written (atomically) after the records,
so a sweep killed at any moment leaves every run either finished or absent, and a rerun of
the same config redoes exactly the unfinished ones. Ids are hashes of the run configs, so a
run can never be written twice under different names.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import yaml

from ..records import read_records, write_records
from ..threads import DEFAULT_THREADS, check_threads
from .backends import iter_results
from .config import ConfigError, RunSpec, SweepConfig, _curve_points, canonical_json, parse_config

__all__ = [
    "SweepResult",
    "sweep",
    "plan",
    "load_runs",
    "load_records",
    "summary_table",
    "read_sweep_config",
    "is_finished",
]


@dataclass
class SweepResult:
    """What a call of :func:`sweep` did."""

    out_dir: Path
    config: SweepConfig
    executed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # run id -> traceback

    @property
    def ok(self) -> bool:
        return not self.failed


def write_json_atomic(data: Any, path: str | Path) -> Path:
    """Write JSON to ``path`` through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(data, indent=1, default=_json_default, allow_nan=True))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _records_path(runs_dir: Path, rid: str) -> Path | None:
    for suffix in (".parquet", ".csv"):
        path = runs_dir / f"{rid}{suffix}"
        if path.exists():
            return path
    return None


def is_finished(out_dir: str | Path, spec: RunSpec) -> bool:
    """Whether ``spec`` has complete records and metadata with the same config in ``out_dir``."""
    runs_dir = Path(out_dir) / "runs"
    meta_path = runs_dir / f"{spec.run_id}.json"
    if not meta_path.exists() or _records_path(runs_dir, spec.run_id) is None:
        return False
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return False
    return canonical_json(meta.get("config")) == canonical_json(spec.config)


def _refresh_labels(out_dir: Path, spec: RunSpec) -> None:
    """A finished run keeps its records; only its labels follow the current config."""
    meta_path = out_dir / "runs" / f"{spec.run_id}.json"
    meta = json.loads(meta_path.read_text())
    new = {"agent_label": spec.agent_label, "env_label": spec.env_label, "family": spec.family}
    if any(meta.get(k) != v for k, v in new.items()):
        meta.update(new)
        write_json_atomic(meta, meta_path)


def _clean_temporaries(directory: Path) -> None:
    """Remove half-written temporaries left by a killed sweep (only our own ``.NAME.*.tmp``)."""
    if directory.is_dir():
        for tmp in directory.glob(".*.tmp"):
            try:
                tmp.unlink()
            except OSError:
                pass


def _preflight(config: SweepConfig, specs: list[RunSpec]) -> None:
    """Build each env config once so that missing data or bad arguments fail before any run."""
    if config.task != "bandit":
        return
    from ..evaluate import make_env

    seen = set()
    for spec in specs:
        env = spec.config["env"]
        key = canonical_json(env)
        if key in seen:
            continue
        seen.add(key)
        try:
            instance = make_env(env["id"], **env["args"])
            instance.reset(seed=spec.seed)
            instance.close()
        except Exception as exc:
            raise ConfigError(f"env {spec.env_label!r} ({env['id']} with {env['args']}) cannot be built: {exc}") from exc


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
    cfg = config if isinstance(config, SweepConfig) else parse_config(config)
    out = Path(out_dir) if out_dir is not None else default_out_dir(cfg)
    runs_dir, failed_dir = out / "runs", out / "failed"
    runs_dir.mkdir(parents=True, exist_ok=True)
    _clean_temporaries(runs_dir)
    _clean_temporaries(out)
    _write_config(out, cfg)

    finished, pending = plan(cfg, out)
    for spec in finished:
        _refresh_labels(out, spec)
    result = SweepResult(out_dir=out, config=cfg, skipped=[s.run_id for s in finished])
    say = log or (lambda _msg: None)
    for note in cfg.notes:
        say(f"note: {note}")
    say(
        f"sweep {cfg.name!r}: {len(cfg.runs)} runs, {len(finished)} already finished, {len(pending)} to run "
        f"({backend}, {workers} worker{'s' if workers != 1 else ''}, {threads or 'default'} thread(s) per run) -> {out}"
    )
    if not pending:
        return result
    _preflight(cfg, pending)
    curve_points = _curve_points(cfg.raw)
    total, done = len(pending), 0
    start = time.perf_counter()
    for spec_dict, res, error in iter_results(
        [s.to_dict() for s in pending], backend=backend, workers=workers, threads=threads, address=address,
        curve_points=curve_points,
    ):
        done += 1
        rid = spec_dict["run_id"]
        tag = f"[{done}/{total}] {spec_dict['agent_label']} on {spec_dict['env_label']} seed {spec_dict['config']['seed']}"
        if error is not None:
            result.failed[rid] = error
            write_json_atomic({"run_id": rid, "spec": spec_dict, "error": error}, failed_dir / f"{rid}.json")
            last = error.strip().splitlines()[-1] if error.strip() else "error"
            say(f"{tag}: FAILED ({last})")
            continue
        res["meta"]["backend"] = backend
        write_records(res["records"], runs_dir / rid)
        write_json_atomic(res["meta"], runs_dir / f"{rid}.json")  # last: marks the run finished
        stale = failed_dir / f"{rid}.json"
        if stale.exists():
            stale.unlink()
        result.executed.append(rid)
        say(f"{tag}: {_one_line(res['meta'])} ({time.perf_counter() - start:.0f} s)")
    if result.failed:
        say(f"{len(result.failed)} run(s) failed; tracebacks in {failed_dir}; rerun the sweep to retry them")
    return result


def _one_line(meta: dict) -> str:
    s = meta.get("summary", {})
    if "final_regret" in s:
        return f"regret {s['final_regret']:.2f}, {s['ms_per_round']:.3f} ms/round"
    if "final_error" in s:
        return f"error {s['final_error']:.3f} (bound {s['final_bound']:.3f})"
    return "done"


def _write_config(out: Path, cfg: SweepConfig) -> None:
    out.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(cfg.raw, sort_keys=False)
    fd, tmp = tempfile.mkstemp(dir=out, prefix=".config.yaml.", suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, out / "config.yaml")
    manifest = {
        "name": cfg.name,
        "task": cfg.task,
        "runs": [{"run_id": r.run_id, "agent": r.agent_label, "env": r.env_label, "seed": r.seed} for r in cfg.runs],
    }
    write_json_atomic(manifest, out / "manifest.json")


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
    return [r["run_id"] for r in json.loads(manifest.read_text())["runs"]]


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
    rows = []
    for path in paths:
        if not path.exists():
            continue
        meta = json.loads(path.read_text())
        summary = meta.get("summary", {})
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
        }
        rows.append(row)
    return pd.DataFrame(rows)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str, np.number))


def load_meta(out_dir: str | Path, run_id: str) -> dict:
    return json.loads((Path(out_dir) / "runs" / f"{run_id}.json").read_text())


def load_records(out_dir: str | Path, run_ids: list[str] | None = None, *, columns: list[str] | None = None) -> pd.DataFrame:
    """Concatenated per-round records of finished runs, labelled by the current config."""
    out = Path(out_dir)
    runs = load_runs(out)
    if run_ids is not None:
        runs = runs[runs["run_id"].isin(run_ids)]
    frames = []
    for rid, agent, env in zip(runs["run_id"], runs["agent"], runs["env"]):
        path = _records_path(out / "runs", rid)
        if path is None:
            continue
        frame = read_records(path)
        if columns is not None:
            frame = frame[[c for c in columns if c in frame.columns]]
        frames.append(frame.assign(agent=agent, env=env))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (env, agent): seeds, final regret mean/std, total and per-round agent time (CPU; wall
    ms/round too when recorded), peak memory, sketch size."""
    if runs.empty:
        return pd.DataFrame()
    keys = ["env", "agent", "family"]
    if "final_regret" in runs:
        table = runs.groupby(keys, sort=False).agg(
            seeds=("seed", "nunique"),
            rounds=("rounds", "max"),
            final_regret_mean=("final_regret", "mean"),
            final_regret_std=("final_regret", "std"),
            time_s=("agent_time_s", "mean"),
            ms_per_round=("ms_per_round", "mean"),
            **({"wall_ms_per_round": ("wall_ms_per_round", "mean")} if "wall_ms_per_round" in runs else {}),
            peak_memory_kib=("peak_memory_bytes", lambda v: float(np.max(v)) / 1024.0),
            final_sketch_size=("final_sketch_size", "mean"),
        )
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
