"""``linbandit plot DIR``: every figure and table of a sweep directory.

Default figures (per env): cumulative regret (mean and std band over seeds), Pareto fronts of
final regret against total agent time and against peak memory (seed 000 Fig. 3c/3d), the
spectral-error exponent ``log(Delta_t)/log t`` with ``y = 1/3`` when it was recorded (Fig. 1c),
the sketch size over time of agents whose sketch grows (DBSLinUCB), and parameter-effect
plots for families whose agents differ in numeric arguments (Fig. 3a/3b). A config's
``plots:`` list selects and names figures instead (e.g. one regret plot per paper figure).
Matrix-approximation sweeps get the spectral-norm error against rows (Fig. 4).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from .. import plots as P
from .config import select_labels
from .sweep import load_records, load_runs, read_sweep_config, summary_table

__all__ = ["make_plots", "write_tables", "spectral_series", "format_table", "markdown_table"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-").lower() or "plot"


def spectral_series(out_dir: str | Path, runs: pd.DataFrame) -> pd.DataFrame:
    """The recorded ``Delta_t`` checkpoints as a long frame (agent, env, seed, t, l, delta, cov_error)."""
    rows = []
    for rid, agent, env, seed in zip(runs["run_id"], runs["agent"], runs["env"], runs["seed"]):
        meta = json.loads((Path(out_dir) / "runs" / f"{rid}.json").read_text())
        spec = meta.get("spectral")
        if not spec:
            continue
        for l, deltas in spec["delta"].items():
            for t, delta, err in zip(spec["t"], deltas, spec["cov_error"]):
                rows.append({"agent": agent, "env": env, "seed": seed, "t": t, "l": int(l), "delta": delta, "cov_error": err})
    return pd.DataFrame(rows)


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """The summary table with rounded, human-readable columns (what is printed and reported)."""
    if table.empty:
        return table
    if "final_regret_mean" in table:
        return pd.DataFrame({
            "env": table["env"],
            "agent": table["agent"],
            "seeds": table["seeds"],
            "rounds": table["rounds"],
            "final regret": [f"{m:.1f} ± {s:.1f}" for m, s in zip(table["final_regret_mean"], table["final_regret_std"])],
            "CPU time (s)": table["time_s"].map(lambda v: f"{v:.2f}"),
            "ms/round": table["ms_per_round"].map(lambda v: f"{v:.3f}"),
            "wall ms/round": (table["wall_ms_per_round"] if "wall_ms_per_round" in table
                              else pd.Series(np.nan, index=table.index)).map(lambda v: "" if pd.isna(v) else f"{v:.3f}"),
            "peak memory (KiB)": table["peak_memory_kib"].map(lambda v: f"{v:.1f}"),
            "final sketch size": table["final_sketch_size"].map(lambda v: "" if pd.isna(v) else f"{v:.0f}"),
        })
    return pd.DataFrame({
        "agent": table["agent"],
        "seeds": table["seeds"],
        "rows": table["rows"],
        "final error": table["final_error_mean"].map(lambda v: f"{v:.3f}"),
        "max error": table["max_error_mean"].map(lambda v: f"{v:.3f}"),
        "final bound": table["final_bound"].map(lambda v: f"{v:.3f}"),
        "ms/row": table["ms_per_row"].map(lambda v: f"{v:.3f}"),
        "peak memory (KiB)": table["peak_memory_kib"].map(lambda v: f"{v:.1f}"),
        "final sketch size": table["final_sketch_size"].map(lambda v: f"{v:.0f}"),
    })


def write_tables(out_dir: str | Path) -> tuple[pd.DataFrame, list[Path]]:
    """Write ``summary.csv`` (exact numbers) and ``summary.md`` (rounded) into ``out_dir``."""
    out = Path(out_dir)
    table = summary_table(load_runs(out))
    csv, md = out / "summary.csv", out / "summary.md"
    table.to_csv(csv, index=False)
    md.write_text(markdown_table(format_table(table)) + "\n" if not table.empty else "(no finished runs)\n")
    return table, [csv, md]


def _varying_numeric_args(runs: pd.DataFrame) -> list[str]:
    out = []
    for col in runs.columns:
        if col.startswith("arg.") and col not in ("arg.seed",):
            values = runs[col].dropna().unique()
            if len(values) > 1 and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
                out.append(col[4:])
    return out


def _default_plots(runs: pd.DataFrame, has_spectral: bool) -> list[dict]:
    plots: list[dict] = [{"kind": "regret"}]
    if runs["agent"].nunique() > 1:
        plots.append({"kind": "pareto"})
    if has_spectral:
        plots.append({"kind": "spectral"})
    plots.append({"kind": "sketch_size"})
    for family, group in runs.groupby("family", sort=False):
        varying = _varying_numeric_args(group.dropna(axis=1, how="all"))
        if 1 <= len(varying) <= 2:
            varying.sort(key=lambda a: -group[f"arg.{a}"].nunique())
            x, grp = varying[0], (varying[1] if len(varying) == 2 else None)
            if group[f"arg.{x}"].nunique() >= 3:
                plots.append({"kind": "param", "family": family, "x": x, "group": grp})
    return plots


def make_plots(out_dir: str | Path, *, formats=("png", "pdf")) -> list[Path]:
    """Draw every figure of a sweep into ``DIR/plots`` and write the summary tables; returns the files."""
    out = Path(out_dir)
    runs = load_runs(out)
    if runs.empty:
        raise FileNotFoundError(f"{out} has no finished runs yet: run the sweep first")
    raw = read_sweep_config(out) or {}
    plot_dir = out / "plots"
    written: list[Path] = []
    _, tables = write_tables(out)
    written += tables
    if raw.get("task") == "matrix-approx":
        records = load_records(out)
        specs = raw.get("plots") or [{"kind": "matrix_error"}]
        for i, spec in enumerate(specs):
            labels = select_labels(records["agent"], spec.get("agents"))
            fig = P.plot_matrix_error(records[records["agent"].isin(labels)], bound=spec.get("bound", True))
            fig.axes[0].set_title(spec.get("title") or "spectral norm error of the sketch")
            written += P.save_figure(fig, plot_dir / (spec.get("name") or f"matrix_error_{i}"), formats)
        return written

    spectral = spectral_series(out, runs)
    specs = raw.get("plots") or _default_plots(runs, not spectral.empty)
    records = None
    for spec in specs:
        kind = spec["kind"]
        envs = [spec["env"]] if spec.get("env") else list(dict.fromkeys(runs["env"]))
        for env in envs:
            env_runs = runs[runs["env"] == env]
            labels = select_labels(env_runs["agent"], spec.get("agents"))
            if not labels:
                continue
            suffix = "" if len(envs) == 1 else f"_{_slug(env)}"
            name = spec.get("name")
            if kind in ("regret", "sketch_size"):
                if records is None:
                    records = load_records(out, columns=["agent", "env", "seed", "t", "cumulative_regret", "sketch_size"])
                sub = records[(records["env"] == env) & records["agent"].isin(labels)]
                if kind == "regret":
                    fig = P.plot_cumulative_regret(sub)
                    fig.axes[0].set_title(spec.get("title") or f"{env}: cumulative regret (mean ± std over seeds)")
                else:
                    grows = sub.groupby("agent")["sketch_size"].nunique()
                    keep = grows[grows > 1].index if not spec.get("agents") else grows.index
                    sub = sub[sub["agent"].isin(keep)]
                    if sub.empty or sub["sketch_size"].isna().all():
                        continue
                    fig = P.plot_sketch_size(sub)
                    fig.axes[0].set_title(spec.get("title") or f"{env}: sketch size over time")
                written += P.save_figure(fig, plot_dir / f"{name or kind}{suffix}", formats)
            elif kind == "pareto":
                table = summary_table(env_runs[env_runs["agent"].isin(labels)])
                for x, tag in (("time_s", "time"), ("peak_memory_kib", "memory")):
                    fig = P.plot_pareto(table, x)
                    fig.axes[0].set_title(spec.get("title") or f"{env}: regret vs {tag} (Pareto fronts)")
                    written += P.save_figure(fig, plot_dir / f"{name or 'pareto'}_{tag}{suffix}", formats)
            elif kind == "spectral":
                sub = spectral[(spectral["env"] == env) & spectral["agent"].isin(labels)] if not spectral.empty else spectral
                if sub.empty:
                    continue
                fig = P.plot_spectral_exponent(sub)
                fig.axes[0].set_title(spec.get("title") or f"{env}: spectral error exponent log(Δ_t)/log t")
                written += P.save_figure(fig, plot_dir / f"{name or 'spectral_exponent'}{suffix}", formats)
            elif kind == "param":
                fam = env_runs[(env_runs["family"] == spec["family"]) & env_runs["agent"].isin(labels)]
                if fam.empty or f"arg.{spec['x']}" not in fam:
                    continue
                fig = P.plot_param_effect(fam, spec["x"], spec.get("group"))
                fig.suptitle(spec.get("title") or f"{env}: {spec['family']} vs {spec['x']}")
                fig.tight_layout()
                written += P.save_figure(fig, plot_dir / f"{name or 'param_' + _slug(spec['family'])}{suffix}", formats)
            elif kind == "matrix_error":
                continue
    return written


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (no dependency on ``tabulate``)."""
    cells = [[str(c) for c in frame.columns]] + [[str(v).replace("|", "\\|") for v in row] for row in frame.itertuples(index=False)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(frame.columns))]
    line = lambda r: "| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells[1:]])
