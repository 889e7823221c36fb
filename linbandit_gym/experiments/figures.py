"""``linbandit plot DIR``: every figure and table of a sweep directory.

Default figures (per env): cumulative regret (mean and std band over seeds), Pareto fronts of
final regret against total agent time and against peak memory (Wen et al., 2025, Fig. 3c/3d), the
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

from ..plots import (
    plot_cumulative_regret, plot_fronts, plot_matrix_error, plot_param_effect, plot_pareto, plot_scaling,
    plot_sketch_size, plot_spectral_exponent, save_figure,
)
from ..evaluate import timed_runs
from ..text import NOT_REPORTED, count, mean_spread, reported_bytes
from .config import select_labels
from .sweep import load_records, load_runs, read_sweep_config, summary_table

__all__ = ["make_plots", "write_tables", "spectral_series", "format_table", "markdown_table", "env_settings",
           "scaling_points"]


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


def env_settings(out_dir: str | Path, runs: pd.DataFrame) -> dict[str, dict]:
    """Per env label: the env id and arguments its runs were made with (from a run's metadata)."""
    settings = {}
    for rid, env in zip(runs["run_id"], runs["env"]):
        if env not in settings:
            meta = json.loads((Path(out_dir) / "runs" / f"{rid}.json").read_text())
            settings[env] = {"id": meta["config"]["env"]["id"], **meta["config"]["env"]["args"]}
    return settings


_ARG_NAMES = (("d", "d"), ("n_arms", "K"), ("horizon", "T"), ("rank", "rank"), ("alpha", "alpha"),
              ("dataset", "data"))


def _caption(settings: dict, runs: pd.DataFrame) -> str:
    """``"LinBandit-Synthetic-v0: d=100, K=100, T=2000, 3 seeds"``: what a figure of these runs shows."""
    parts = [f"{short}={settings[key]}" for key, short in _ARG_NAMES if settings.get(key) is not None]
    rounds = runs["rounds"].max() if "rounds" in runs and "horizon" not in settings else None
    if rounds is not None and pd.notna(rounds):
        parts.append(f"T={int(rounds)}")
    parts.append(count(runs["seed"].nunique(), "seed"))
    return f"{settings.get('id', '')}: " + ", ".join(parts)


def scaling_points(out_dir: str | Path, runs: pd.DataFrame, x: str = "d") -> pd.DataFrame:
    """One row per (agent, env) of ``runs``: the env argument ``x``, the means over seeds of the
    final regret and, over the seeds timed alone where there are any, of ms/round (CPU) and wall
    ms/round (``timing`` says which), and the peak memory (what :func:`plot_scaling` draws)."""
    settings = env_settings(out_dir, runs)
    runs = runs.assign(**{x: [settings[e].get(x) for e in runs["env"]]})
    if runs[x].isna().any():
        missing = sorted(set(runs.loc[runs[x].isna(), "env"]))
        raise ValueError(f"scaling plot: env(s) {missing} have no argument {x!r}; set plots[].x to an env argument")
    keys = ["agent", "family", "env", x]
    points = runs.groupby(keys, sort=False).agg(final_regret=("final_regret", "mean"),
                                                peak_memory_bytes=("peak_memory_bytes", "max"),
                                                seeds=("seed", "nunique"))
    cost = {"ms_per_round": ("ms_per_round", "mean"), "timing": ("timing", "first")}
    if "wall_ms_per_round" in runs:
        cost["wall_ms_per_round"] = ("wall_ms_per_round", "mean")
    points = points.join(timed_runs(runs, keys).groupby(keys, sort=False).agg(**cost))
    return points[["ms_per_round", "final_regret", "peak_memory_bytes", "seeds",
                   *(["wall_ms_per_round"] if "wall_ms_per_round" in runs else []), "timing"]].reset_index()


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
            # mean ± std over the seeds; the mean alone for one seed, which has no spread
            "final regret": [mean_spread(m, s, n, digits=1) for m, s, n in
                             zip(table["final_regret_mean"], table["final_regret_std"], table["seeds"])],
            "CPU time (s)": table["time_s"].map(lambda v: f"{v:.2f}"),
            "ms/round": table["ms_per_round"].map(lambda v: f"{v:.3f}"),
            "wall ms/round": (table["wall_ms_per_round"] if "wall_ms_per_round" in table
                              else pd.Series(np.nan, index=table.index)).map(_ms_or_blank),
            "timing": _timing_words(table),
            "peak memory (KiB)": table["peak_memory_kib"].map(_kib_or_not_reported),
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


def _timing_words(table: pd.DataFrame) -> list[str]:
    """How each row's times were measured, in words: ``"alone, 1 seed"``, ``"alone, best of 3, 1
    seed"`` or ``"batch share, 3 seeds"``."""
    if "timing" not in table:
        return [""] * len(table)
    repeats = table["timing_repeats"] if "timing_repeats" in table else pd.Series(1, index=table.index)
    words = []
    for timing, seeds, plays in zip(table["timing"], table["timed_seeds"], repeats.fillna(1)):
        best = f", best of {int(plays)}" if timing == "alone" and plays > 1 else ""
        words.append(f"{timing}{best}, {count(int(seeds), 'seed')}")
    return words


def _shared_times_note(table: pd.DataFrame) -> str:
    """A caption line naming the agents whose times are shares of batches (empty when all were timed alone)."""
    if "timing" not in table:
        return ""
    shared = table.loc[table["timing"] == "batch share", "agent"].drop_duplicates().tolist()
    if not shared:
        return ""
    names = ", ".join(map(str, shared[:4])) + (f" and {len(shared) - 4} more" if len(shared) > 4 else "")
    return f"\ntimes of {names}: shares of batched runs, not measured alone"


def _kib_or_not_reported(value: float) -> str:
    return f"{value:.1f}" if reported_bytes(value) else NOT_REPORTED


def _ms_or_blank(value: float) -> str:
    return "" if pd.isna(value) else f"{value:.3f}"


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
            fig = plot_matrix_error(records[records["agent"].isin(labels)], bound=spec.get("bound", True))
            data = raw.get("data") or {}
            caption = (f"N(0, I) rows, normalised: n={data.get('n')}, d={data.get('d')}, "
                       f"{count(runs['seed'].nunique(), 'seed')}")
            _title(fig.axes[0], spec.get("title") or "spectral norm error of the sketch", caption)
            written += save_figure(fig, plot_dir / (spec.get("name") or f"matrix_error_{i}"), formats)
        return written

    spectral = spectral_series(out, runs)
    specs = raw.get("plots") or _default_plots(runs, not spectral.empty)
    settings = env_settings(out, runs)
    all_envs = list(dict.fromkeys(runs["env"]))
    records = None
    for spec in specs:
        kind = spec["kind"]
        envs = select_labels(all_envs, [spec["env"]]) if spec.get("env") else all_envs
        if kind in ("scaling", "fronts"):  # one figure over all the matching envs
            written += _across_envs(out, runs[runs["env"].isin(envs)], spec, settings, plot_dir, formats)
            continue
        for env in envs:
            env_runs = runs[runs["env"] == env]
            labels = select_labels(env_runs["agent"], spec.get("agents"))
            if not labels:
                continue
            caption = _caption(settings[env], env_runs[env_runs["agent"].isin(labels)])
            suffix = "" if len(all_envs) == 1 else f"_{_slug(env)}"
            name = spec.get("name")
            if kind in ("regret", "sketch_size"):
                if records is None:
                    records = load_records(out, columns=["agent", "env", "seed", "t", "cumulative_regret", "sketch_size"])
                sub = records[(records["env"] == env) & records["agent"].isin(labels)]
                if kind == "regret":
                    fig = plot_cumulative_regret(sub)
                    default = f"{env}: cumulative regret (mean ± std over seeds)"
                    _title(fig.axes[0], spec.get("title") or default, caption)
                else:
                    grows = sub.groupby("agent")["sketch_size"].nunique()
                    keep = grows[grows > 1].index if not spec.get("agents") else grows.index
                    sub = sub[sub["agent"].isin(keep)]
                    if sub.empty or sub["sketch_size"].isna().all():
                        continue
                    fig = plot_sketch_size(sub)
                    _title(fig.axes[0], spec.get("title") or f"{env}: sketch size over time", caption)
                written += save_figure(fig, plot_dir / f"{name or kind}{suffix}", formats)
            elif kind == "pareto":
                table = summary_table(env_runs[env_runs["agent"].isin(labels)])
                for x, tag in (("time_s", "time"), ("peak_memory_kib", "memory")):
                    fig = plot_pareto(table, x)
                    note = _shared_times_note(table) if x == "time_s" else ""
                    _title(fig.axes[0], spec.get("title") or f"{env}: regret vs {tag} (Pareto fronts)", caption + note)
                    written += save_figure(fig, plot_dir / f"{name or 'pareto'}_{tag}{suffix}", formats)
            elif kind == "spectral":
                sub = spectral[(spectral["env"] == env) & spectral["agent"].isin(labels)] if not spectral.empty else spectral
                if sub.empty:
                    continue
                fig = plot_spectral_exponent(sub)
                _title(fig.axes[0], spec.get("title") or f"{env}: spectral error exponent log(Δ_t)/log t", caption)
                written += save_figure(fig, plot_dir / f"{name or 'spectral_exponent'}{suffix}", formats)
            elif kind == "param":
                fam = env_runs[(env_runs["family"] == spec["family"]) & env_runs["agent"].isin(labels)]
                if fam.empty or f"arg.{spec['x']}" not in fam:
                    continue
                fig = plot_param_effect(fam, spec["x"], spec.get("group"))
                default = f"{env}: {spec['family']} vs {spec['x']}"
                fig.suptitle((spec.get("title") or default) + "\n" + caption, fontsize=10)
                fig.tight_layout()
                written += save_figure(fig, plot_dir / f"{name or 'param_' + _slug(spec['family'])}{suffix}", formats)
            elif kind == "matrix_error":
                continue
    return written


def _title(ax, title: str, caption: str) -> None:
    """The figure's title and, below it in smaller type, what was run (env, d, K, T, seeds)."""
    ax.set_title(f"{title}\n{caption}", fontsize=10)


def _across_envs(out: Path, runs: pd.DataFrame, spec: dict, settings: dict, plot_dir: Path, formats) -> list[Path]:
    """``scaling``: ms/round and peak memory against the env argument ``x`` (log-log, fitted
    slopes, written to ``plots/NAME_slopes.csv|md``); ``fronts``: the Pareto panels of the envs
    side by side, ordered by ``x``."""
    x = spec.get("x") or "d"
    runs = runs[runs["agent"].isin(select_labels(runs["agent"], spec.get("agents")))]
    if runs.empty:
        return []
    kind, name = spec["kind"], spec.get("name") or f"{spec['kind']}_{_slug(spec.get('env') or 'all')}"
    points = scaling_points(out, runs, x)
    first = settings[runs["env"].iloc[0]]
    varying = {x}
    envs = set(runs["env"])
    same = {k: v for k, v in first.items() if k not in varying and all(settings[e].get(k) == v for e in envs)}
    xs = sorted(points[x].unique())
    caption = _caption({**same, "id": first["id"]}, runs) + f"; {x} in {{{', '.join(f'{v:g}' for v in xs)}}}"
    if kind == "scaling":
        fig, slopes = plot_scaling(points, x=x)
        fig.suptitle((spec.get("title") or f"cost against {x}, log-log (fitted slope in the legend)") + "\n" + caption
                     + _shared_times_note(points), fontsize=10)
        fig.tight_layout()
        written = save_figure(fig, plot_dir / name, formats)
        slopes.to_csv(plot_dir / f"{name}_slopes.csv", index=False)
        names = {"ms_per_round": "ms/round", "peak_memory_bytes": "peak memory"}
        wide = pd.DataFrame({"agent": list(dict.fromkeys(slopes["agent"]))})
        for metric, label in names.items():
            sub = slopes[slopes["metric"] == metric].set_index("agent")
            for col, head in (("slope", f"slope of {label}"), ("upper-half slope", f"upper-half slope of {label}")):
                wide[head] = wide["agent"].map(sub[col]).map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
        ranges = slopes.drop_duplicates("agent").set_index("agent")[[f"{x} range", "points"]]
        wide = wide.join(ranges, on="agent")
        shared = points[points["timing"] != "alone"].groupby("agent", sort=False).size()
        # which times the ms/round slopes were fitted to: measured alone, or (some) shares of batches
        wide["ms/round timed"] = [f"batch shares at {shared[a]} of {int((points['agent'] == a).sum())} points"
                                  if a in shared.index else "alone" for a in wide["agent"]]
        (plot_dir / f"{name}_slopes.md").write_text(markdown_table(wide) + "\n")
        return written + [plot_dir / f"{name}_slopes.csv", plot_dir / f"{name}_slopes.md"]
    order = points.drop_duplicates("env").sort_values(x)["env"].tolist()
    tables = {env: summary_table(runs[runs["env"] == env]) for env in order}
    titles = {env: f"{x} = {settings[env].get(x):g}" for env in order}
    fig = plot_fronts(tables, titles=titles)
    fig.suptitle((spec.get("title") or "final regret against agent CPU time (top) and peak memory (bottom)") + "\n"
                 + caption + _shared_times_note(pd.concat(tables.values(), ignore_index=True)), fontsize=10)
    fig.tight_layout(rect=fig._legend_rect)
    return save_figure(fig, plot_dir / name, formats)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (no dependency on ``tabulate``)."""
    cells = [[str(c) for c in frame.columns]] + [[str(v).replace("|", "\\|") for v in row] for row in frame.itertuples(index=False)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(frame.columns))]
    line = lambda r: "| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells[1:]])
