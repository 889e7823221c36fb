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

from ..evaluate import timed_runs
from ..records import (
    atomic_path,
    check_output_dir,
    completeness,
    load_meta,
    load_records,
    load_runs,
    write_text_atomic,
)
from ..text import NOT_REPORTED, count, exact_updates, mean_spread, reported_bytes
from .config import ConfigError, _validate_plots, select_labels, tuned_arguments
from .sweep import read_sweep_config, run_warnings, summary_table, warning_lines

__all__ = [
    "make_plots",
    "write_tables",
    "spectral_series",
    "format_table",
    "markdown_table",
    "env_settings",
    "scaling_points",
    "seeds_in_words",
    "with_tuned",
]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-").lower() or "plot"


def spectral_series(out_dir: str | Path, runs: pd.DataFrame) -> pd.DataFrame:
    """The recorded ``Delta_t`` checkpoints as a long frame (agent, env, seed, t, l, delta,
    cov_error)."""
    rows = []
    for rid, agent, env, seed in zip(runs["run_id"], runs["agent"], runs["env"], runs["seed"]):
        spec = load_meta(out_dir, rid).get("spectral")
        if not spec:
            continue
        for l, deltas in spec["delta"].items():
            for t, delta, err in zip(spec["t"], deltas, spec["cov_error"]):
                rows.append(
                    {
                        "agent": agent,
                        "env": env,
                        "seed": seed,
                        "t": t,
                        "l": int(l),
                        "delta": delta,
                        "cov_error": err,
                    }
                )
    return pd.DataFrame(rows)


def env_settings(out_dir: str | Path, runs: pd.DataFrame) -> dict[str, dict]:
    """Per env label: the env id and arguments its runs were made with (from a run's metadata)."""
    settings = {}
    for rid, env in zip(runs["run_id"], runs["env"]):
        if env not in settings:
            meta = load_meta(out_dir, rid)
            settings[env] = {"id": meta["config"]["env"]["id"], **meta["config"]["env"]["args"]}
    return settings


_ARG_NAMES = (
    ("d", "d"),
    ("n_arms", "K"),
    ("horizon", "T"),
    ("rank", "rank"),
    ("alpha", "alpha"),
    ("dataset", "data"),
)


def seeds_in_words(runs: pd.DataFrame) -> str:
    """How many seeds each agent of ``runs`` has, in words: ``"3 seeds"`` when every agent has
    as many, else the most and the agents with fewer (``"6 seeds (OFUL beta=0.1: 5)"``), so that
    a caption never claims seeds a curve does not average over (a run deleted, or not finished)."""
    per_agent = runs.groupby("agent", sort=False)["seed"].nunique()
    most = int(per_agent.max()) if len(per_agent) else 0
    fewer = per_agent[per_agent < most]
    if fewer.empty:
        return count(most, "seed")
    listed = ", ".join(f"{agent}: {int(n)}" for agent, n in fewer.iloc[:3].items())
    more = f" and {len(fewer) - 3} more with fewer" if len(fewer) > 3 else ""
    return f"{count(most, 'seed')} ({listed}{more})"


def _caption(settings: dict, runs: pd.DataFrame) -> str:
    """``"LinBandit-Synthetic-v0: d=100, K=100, T=2000, 3 seeds"``: what a figure of these runs
    shows."""
    parts = [
        f"{short}={settings[key]}" for key, short in _ARG_NAMES if settings.get(key) is not None
    ]
    rounds = runs["rounds"].max() if "rounds" in runs and "horizon" not in settings else None
    if rounds is not None and pd.notna(rounds):
        parts.append(f"T={int(rounds)}")
    parts.append(seeds_in_words(runs))
    return f"{settings.get('id', '')}: " + ", ".join(parts)


def scaling_points(out_dir: str | Path, runs: pd.DataFrame, x: str = "d") -> pd.DataFrame:
    """One row per (agent, env) of ``runs``: the env argument ``x``, the means over seeds of the
    final regret and, over the seeds timed alone where there are any, of ms/round (CPU) and wall
    ms/round (``timing`` says which), and the peak memory (what :func:`plot_scaling` draws)."""
    settings = env_settings(out_dir, runs)
    runs = runs.assign(**{x: [settings[e].get(x) for e in runs["env"]]})
    if runs[x].isna().any():
        missing = sorted(set(runs.loc[runs[x].isna(), "env"]))
        raise ValueError(
            f"scaling plot: env(s) {missing} have no argument {x!r}; "
            "set plots[].x to an env argument"
        )
    keys = ["agent", "family", "env", x]
    points = runs.groupby(keys, sort=False).agg(
        final_regret=("final_regret", "mean"),
        peak_memory_bytes=("peak_memory_bytes", "max"),
        seeds=("seed", "nunique"),
    )
    cost = {"ms_per_round": ("ms_per_round", "mean"), "timing": ("timing", "first")}
    if "wall_ms_per_round" in runs:
        cost["wall_ms_per_round"] = ("wall_ms_per_round", "mean")
    points = points.join(timed_runs(runs, keys).groupby(keys, sort=False).agg(**cost))
    return points[
        [
            "ms_per_round",
            "final_regret",
            "peak_memory_bytes",
            "seeds",
            *(["wall_ms_per_round"] if "wall_ms_per_round" in runs else []),
            "timing",
        ]
    ].reset_index()


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """The summary table with rounded, human-readable columns (what is printed and reported)."""
    if table.empty:
        return table
    if "final_regret_mean" in table:
        return pd.DataFrame(
            {
                "env": table["env"],
                "agent": table["agent"],
                **({"tuned": table["tuned"]} if "tuned" in table else {}),
                "seeds": table["seeds"],
                "rounds": table["rounds"],
                # mean ± std over the seeds; the mean alone for one seed, which has no spread
                "final regret": [
                    mean_spread(m, s, n, digits=1)
                    for m, s, n in zip(
                        table["final_regret_mean"], table["final_regret_std"], table["seeds"]
                    )
                ],
                "CPU time (s)": table["time_s"].map(lambda v: f"{v:.2f}"),
                "ms/round": table["ms_per_round"].map(lambda v: f"{v:.3f}"),
                "wall ms/round": (
                    table["wall_ms_per_round"]
                    if "wall_ms_per_round" in table
                    else pd.Series(np.nan, index=table.index)
                ).map(_ms_or_blank),
                "timing": _timing_words(table),
                "peak memory (KiB)": table["peak_memory_kib"].map(_kib_or_not_reported),
                "final sketch size": table["final_sketch_size"].map(
                    lambda v: "" if pd.isna(v) else f"{v:.0f}"
                ),
                **({"exact updates": _exact_words(table)} if _reports_exact(table) else {}),
            }
        )
    return pd.DataFrame(
        {
            "agent": table["agent"],
            "seeds": table["seeds"],
            "rows": table["rows"],
            "final error": table["final_error_mean"].map(lambda v: f"{v:.3f}"),
            "max error": table["max_error_mean"].map(lambda v: f"{v:.3f}"),
            "final bound": table["final_bound"].map(lambda v: f"{v:.3f}"),
            "ms/row": table["ms_per_row"].map(lambda v: f"{v:.3f}"),
            "peak memory (KiB)": table["peak_memory_kib"].map(lambda v: f"{v:.1f}"),
            "final sketch size": table["final_sketch_size"].map(lambda v: f"{v:.0f}"),
        }
    )


def _reports_exact(table: pd.DataFrame) -> bool:
    """Whether some agent of a summary says whether it updates exactly (DBSLinUCB)."""
    return "exact_seeds" in table and bool(table["exact_seeds"].notna().any())


def _exact_words(table: pd.DataFrame) -> list[str]:
    """Per row, whether and from which round its agent updated exactly
    (:func:`~linbandit_gym.text.exact_updates`)."""
    return [
        exact_updates(n, seeds, first, last)
        for n, seeds, first, last in zip(
            table["exact_seeds"],
            table["seeds"],
            table["exact_from_first"],
            table["exact_from_last"],
        )
    ]


def _timing_words(table: pd.DataFrame) -> list[str]:
    """How each row's times were measured, in words: ``"alone, 1 seed"``, ``"alone, best of 3, 1
    seed"`` or ``"batch share, 3 seeds"``."""
    if "timing" not in table:
        return [""] * len(table)
    repeats = (
        table["timing_repeats"] if "timing_repeats" in table else pd.Series(1, index=table.index)
    )
    words = []
    for timing, seeds, plays in zip(table["timing"], table["timed_seeds"], repeats.fillna(1)):
        best = f", best of {int(plays)}" if timing == "alone" and plays > 1 else ""
        words.append(f"{timing}{best}, {count(int(seeds), 'seed')}")
    return words


def _shared_times_note(table: pd.DataFrame) -> str:
    """A caption line naming the agents whose times are shares of batches (empty when all were
    timed alone)."""
    if "timing" not in table:
        return ""
    shared = table.loc[table["timing"] == "batch share", "agent"].drop_duplicates().tolist()
    if not shared:
        return ""
    names = ", ".join(map(str, shared[:4])) + (
        f" and {len(shared) - 4} more" if len(shared) > 4 else ""
    )
    return f"\ntimes of {names}: shares of batched runs, not measured alone"


def _kib_or_not_reported(value: float) -> str:
    return f"{value:.1f}" if reported_bytes(value) else NOT_REPORTED


def _ms_or_blank(value: float) -> str:
    return "" if pd.isna(value) else f"{value:.3f}"


def with_tuned(table: pd.DataFrame, raw: dict) -> pd.DataFrame:
    """``table`` (a summary, one row per env and agent) with a ``tuned`` column after ``agent``:
    the arguments the config's ``tuned:`` section gives that row over its entry's ``args:``
    (``beta=0.1, lam=2.0``), so that rows tuned apart from their siblings say so; ``table``
    as it is when no row is tuned."""
    if table.empty or not raw.get("tuned"):
        return table
    words = [
        ", ".join(f"{k}={v}" for k, v in tuned_arguments(raw, env, agent).items())
        for env, agent in zip(table["env"], table["agent"])
    ]
    if not any(words):
        return table
    out = table.copy()
    out.insert(list(out.columns).index("agent") + 1, "tuned", words)
    return out


def write_tables(out_dir: str | Path) -> tuple[pd.DataFrame, list[Path]]:
    """Write ``summary.csv`` (exact numbers) and ``summary.md`` (rounded, then the distinct
    warnings of the runs, each with where it came from) into ``out_dir``; a row whose arguments
    the config's ``tuned:`` section sets says which (:func:`with_tuned`). ``summary.md`` says so
    below the table when runs of the config are not finished (yet)
    (:func:`~linbandit_gym.experiments.sweep.completeness`)."""
    out = check_output_dir(out_dir)
    runs = load_runs(out)
    table = with_tuned(summary_table(runs), read_sweep_config(out) or {})
    csv, md = out / "summary.csv", out / "summary.md"
    note = completeness(out).note()
    with atomic_path(csv, out) as tmp:
        table.to_csv(tmp, index=False)
    text = markdown_table(format_table(table)) + "\n" if not table.empty else "(no finished runs)\n"
    if note:
        text += f"\n{note}\n"
    warnings = warning_lines(run_warnings(out, runs))
    if warnings:
        text += "\nWarnings of the runs (each once):\n\n"
        text += "".join(f"- {line}\n" for line in warnings)
    write_text_atomic(text, md, out)
    return table, [csv, md]


def _varying_numeric_args(runs: pd.DataFrame) -> list[str]:
    out = []
    for col in runs.columns:
        if col.startswith("arg.") and col not in ("arg.seed",):
            values = runs[col].dropna().unique()
            if len(values) > 1 and all(
                isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values
            ):
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
    """Draw every figure of a sweep into ``DIR/plots`` and write the summary tables; returns the
    files."""
    from ..plots import (  # (matplotlib: imported where a figure is drawn, not for the tables)
        check_formats,
        plot_cumulative_regret,
        plot_matrix_error,
        plot_param_effect,
        plot_pareto,
        plot_sketch_size,
        plot_spectral_exponent,
        save_figure,
    )

    out = check_output_dir(out_dir)
    formats = check_formats(formats)
    runs = load_runs(out)
    if runs.empty:
        raise FileNotFoundError(f"{out} has no finished runs yet: run the sweep first")
    raw = read_sweep_config(out) or {}
    try:  # DIR/config.yaml may have been edited since the sweep checked it: plot names stay names
        _validate_plots(raw.get("plots"))
    except ConfigError as exc:
        raise ConfigError(f"{out / 'config.yaml'}: {exc}") from None
    if raw.get("task") != "matrix-approx":
        _check_scaling_arguments(out, runs, raw.get("plots") or [])
    plot_dir = out / "plots"
    written: list[Path] = []
    captions: dict[
        str, dict
    ] = {}  # figure file stem -> what the figure shows, in words (the report's captions)
    _, tables = write_tables(out)
    written += tables
    if raw.get("task") == "matrix-approx":
        records = load_records(out)
        specs = raw.get("plots") or [{"kind": "matrix_error"}]
        for i, spec in enumerate(specs):
            labels = select_labels(records["agent"], spec.get("agents"))
            fig = plot_matrix_error(
                records[records["agent"].isin(labels)], bound=spec.get("bound", True)
            )
            data = raw.get("data") or {}
            caption = (
                f"N(0, I) rows, normalised: n={data.get('n')}, d={data.get('d')}, "
                f"{seeds_in_words(runs)}"
            )
            _title(fig.axes[0], spec.get("title") or "spectral norm error of the sketch", caption)
            stem = spec.get("name") or f"matrix_error_{i}"
            captions[stem] = _in_words(spec, "matrix_error", caption)
            written += save_figure(fig, plot_dir / stem, formats, out)
        return written + [_write_captions(out, captions)]

    spectral = spectral_series(out, runs)
    specs = raw.get("plots") or _default_plots(runs, not spectral.empty)
    settings = env_settings(out, runs)
    all_envs = list(dict.fromkeys(runs["env"]))
    records = None
    for spec in specs:
        kind = spec["kind"]
        envs = select_labels(all_envs, [spec["env"]]) if spec.get("env") else all_envs
        if kind in ("scaling", "fronts"):  # one figure over all the matching envs
            written += _across_envs(
                out, runs[runs["env"].isin(envs)], spec, settings, plot_dir, formats, captions
            )
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
                    records = load_records(
                        out,
                        columns=["agent", "env", "seed", "t", "cumulative_regret", "sketch_size"],
                    )
                sub = records[(records["env"] == env) & records["agent"].isin(labels)]
                if kind == "regret":
                    fig = plot_cumulative_regret(sub)
                    several = sub["seed"].nunique() > 1
                    default = f"{env}: cumulative regret" + (
                        " (mean ± std over seeds)" if several else ""
                    )
                    _title(fig.axes[0], spec.get("title") or default, caption)
                else:
                    grows = sub.groupby("agent")["sketch_size"].nunique()
                    keep = grows[grows > 1].index if not spec.get("agents") else grows.index
                    sub = sub[sub["agent"].isin(keep)]
                    if sub.empty or sub["sketch_size"].isna().all():
                        continue
                    fig = plot_sketch_size(sub)
                    _title(
                        fig.axes[0], spec.get("title") or f"{env}: sketch size over time", caption
                    )
                captions[f"{name or kind}{suffix}"] = _in_words(
                    spec, kind, caption, env=env, several=several if kind == "regret" else False
                )
                written += save_figure(fig, plot_dir / f"{name or kind}{suffix}", formats, out)
            elif kind == "pareto":
                chosen = env_runs[env_runs["agent"].isin(labels)]
                table = with_agent_args(summary_table(chosen), chosen)
                for x, tag in (("time_s", "time"), ("peak_memory_kib", "memory")):
                    note = _shared_times_note(table) if x == "time_s" else ""
                    title = (
                        spec.get("title") or f"{env}: regret vs {tag} (Pareto fronts)"
                    ) + f"\n{caption}{note}"
                    fig = plot_pareto(table, x, title=title)
                    stem = f"{name or 'pareto'}_{tag}{suffix}"
                    captions[stem] = _in_words(spec, f"pareto_{tag}", caption, env=env)
                    written += save_figure(fig, plot_dir / stem, formats, out)
            elif kind == "spectral":
                sub = (
                    spectral[(spectral["env"] == env) & spectral["agent"].isin(labels)]
                    if not spectral.empty
                    else spectral
                )
                if sub.empty:
                    continue
                fig = plot_spectral_exponent(sub)
                _title(
                    fig.axes[0],
                    spec.get("title") or f"{env}: spectral error exponent log(Δ_t)/log t",
                    caption,
                )
                captions[f"{name or 'spectral_exponent'}{suffix}"] = _in_words(
                    spec, kind, caption, env=env
                )
                stem = f"{name or 'spectral_exponent'}{suffix}"
                written += save_figure(fig, plot_dir / stem, formats, out)
            elif kind == "param":
                fam = env_runs[
                    (env_runs["family"] == spec["family"]) & env_runs["agent"].isin(labels)
                ]
                if fam.empty or f"arg.{spec['x']}" not in fam:
                    continue
                fig = plot_param_effect(fam, spec["x"], spec.get("group"))
                default = f"{env}: {spec['family']} vs {spec['x']}"
                fig.suptitle((spec.get("title") or default) + "\n" + caption, fontsize=10)
                fig.tight_layout()
                stem = f"{name or 'param_' + _slug(spec['family'])}{suffix}"
                captions[stem] = _in_words(spec, kind, caption, env=env)
                written += save_figure(fig, plot_dir / stem, formats, out)
            elif kind == "matrix_error":
                continue
    return written + [_write_captions(out, captions)]


def _check_scaling_arguments(out: Path, runs: pd.DataFrame, specs: list[dict]) -> None:
    """Before any file is written: every env a ``scaling`` or ``fronts`` figure puts on its x
    axis has the argument ``x`` it is drawn against (:func:`scaling_points` needs it)."""
    settings = None
    all_envs = list(dict.fromkeys(runs["env"]))
    for spec in specs:
        if spec.get("kind") not in ("scaling", "fronts"):
            continue
        settings = settings or env_settings(out, runs)
        x = spec.get("x") or "d"
        envs = select_labels(all_envs, [spec["env"]]) if spec.get("env") else all_envs
        missing = sorted(env for env in envs if settings[env].get(x) is None)
        if missing:
            raise ValueError(
                f"{spec['kind']} plot: env(s) {missing} have no argument {x!r}; set "
                "plots[].x to an env argument"
            )


def with_agent_args(table: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a summary, one row per env and agent) with the agents' numeric arguments as
    ``arg.NAME`` columns (from ``runs``), which the Pareto figures size the markers by."""
    columns = [c for c in runs.columns if str(c).startswith("arg.")]
    if table.empty or not columns:
        return table
    args = runs.groupby(["env", "agent"], sort=False)[columns].first().reset_index()
    return table.merge(args, on=["env", "agent"], how="left")


#: What each kind of figure shows, in words; {env} and {what} (env id, d, K, T, seeds) filled in.
_FIGURE_WORDS = {
    "regret": "Cumulative regret against the round t on {env} ({what}): the mean over the "
    "seeds{band}, one line per agent configuration. Regret is what the agent lost against always "
    "playing the best arm; lower is better, and a curve that flattens has learnt.",
    "pareto_time": "Final cumulative regret against the agent's total CPU time on {env} ({what}). "
    "Each point is one agent configuration (mean over the seeds); colour and marker give its "
    "family, marker size the argument the family varies where it varies one. Each point carries a "
    "number, which the key beside the figure gives its configuration, regret and cost. The "
    "stepped line joins a family's Pareto front: the least regret it reaches at each cost. Lower "
    "and further left is better.",
    "pareto_memory": "Final cumulative regret against the agent's peak memory on {env} ({what}). "
    "Each point is one agent configuration (mean over the seeds); colour and marker give its "
    "family, marker size the argument the family varies where it varies one. Each point carries a "
    "number, which the key beside the figure gives its configuration, regret and cost; points "
    "drawn over each other share one label. The stepped line joins a family's Pareto front: the "
    "least regret it reaches with that much memory. Lower and further left is better.",
    "spectral": "The spectral-error exponent log(Δ_t)/log t on {env} ({what}): while it stays "
    "below the dashed line y = 1/3, SOFUL's regret bound stays sublinear (Wen et al., 2025, Fig. "
    "1c).",
    "sketch_size": "The rows each agent's sketch holds against the round on {env} ({what}): "
    "DBSLinUCB's grows l0, 2 l0, 4 l0, ... as the data need, up to d.",
    "param": "Final cumulative regret (left) and total agent CPU time (right) of one family "
    "against one of its arguments on {env} ({what}), one line per value of a second argument "
    "where it varies too; lower is better on both.",
    "fronts": "Pareto fronts side by side ({what}): final cumulative regret against agent CPU "
    "time (top row) and peak memory (bottom row), one column per env, all on one regret scale. "
    "Colour and marker give the family, marker size the argument it varies; the numbers are the "
    "configurations of the key beside the panels, and a panel that lacks some says so under its "
    "title. The stepped lines are the families' Pareto fronts. Lower and further left is better.",
    "scaling": "Agent CPU ms per round (left) and peak memory (right) against the env size on "
    "log-log axes ({what}): a slope of 1 grows linearly with it, 2 quadratically (the grey "
    "guides); each agent's fitted slope is in the legend. Lower is better.",
    "matrix_error": "Spectral-norm error of each covariance sketch, ||A^T A - S^T S||_2, against "
    "the rows streamed ({what}), solid, with its guaranteed bound, dashed; lower is better.",
}


#: A figure's short name (its alt text) when the config gives it no title.
_FIGURE_NAMES = {
    "regret": "Cumulative regret on {env}",
    "pareto_time": "Regret against CPU time on {env}",
    "pareto_memory": "Regret against memory on {env}",
    "spectral": "Spectral-error exponent on {env}",
    "sketch_size": "Sketch size over time on {env}",
    "param": "Regret and time against an argument on {env}",
    "fronts": "Pareto fronts across envs",
    "scaling": "Cost against the env size",
    "matrix_error": "Spectral-norm error of the sketches",
}


def _in_words(
    spec: dict, kind: str, what: str, env: str | None = None, several: bool = True
) -> dict[str, str]:
    """A figure's ``title`` (the config's, else a short name) and ``caption``: the title (when the
    config gives one), then what the figure shows, in words."""
    text = _FIGURE_WORDS[kind].format(
        env=env, what=what, band=", the band one standard deviation either side" if several else ""
    )
    title = spec.get("title") or _FIGURE_NAMES[kind].format(env=env)
    return {"title": title, "caption": f"{spec['title']}. {text}" if spec.get("title") else text}


def _write_captions(out: Path, captions: dict[str, dict]) -> Path:
    """``plots/captions.json``: figure file stem -> ``{title, caption}`` in words, in the order the
    figures were drawn (what ``linbandit report`` shows)."""
    text = json.dumps(captions, indent=1, ensure_ascii=False)
    return write_text_atomic(text, out / "plots" / "captions.json", out)


def read_captions(out_dir: str | Path) -> dict[str, dict]:
    """The ``{stem: {title, caption}}`` :func:`make_plots` wrote (empty for plots drawn before
    captions existed)."""
    path = Path(out_dir) / "plots" / "captions.json"
    try:
        captions = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):  # damaged: the figures keep their file names as captions
        return {}
    return captions if isinstance(captions, dict) else {}


def _title(ax, title: str, caption: str) -> None:
    """The figure's title and, below it in smaller type, what was run (env, d, K, T, seeds)."""
    ax.set_title(f"{title}\n{caption}", fontsize=10)


def _across_envs(
    out: Path,
    runs: pd.DataFrame,
    spec: dict,
    settings: dict,
    plot_dir: Path,
    formats,
    captions: dict[str, dict],
) -> list[Path]:
    """``scaling``: ms/round and peak memory against the env argument ``x`` (log-log, fitted
    slopes, written to ``plots/NAME_slopes.csv|md``); ``fronts``: the Pareto panels of the envs
    side by side, ordered by ``x``."""
    from ..plots import plot_fronts, plot_scaling, save_figure

    x = spec.get("x") or "d"
    runs = runs[runs["agent"].isin(select_labels(runs["agent"], spec.get("agents")))]
    if runs.empty:
        return []
    kind, name = (
        spec["kind"],
        spec.get("name") or f"{spec['kind']}_{_slug(spec.get('env') or 'all')}",
    )
    points = scaling_points(out, runs, x)
    first = settings[runs["env"].iloc[0]]
    varying = {x}
    envs = set(runs["env"])
    same = {
        k: v
        for k, v in first.items()
        if k not in varying and all(settings[e].get(k) == v for e in envs)
    }
    xs = sorted(points[x].unique())
    ids = list(dict.fromkeys(settings[e]["id"] for e in runs["env"]))
    caption = (
        _caption({**same, "id": " and ".join(ids)}, runs)
        + f"; {x} in {{{', '.join(f'{v:g}' for v in xs)}}}"
    )
    if kind == "scaling":
        fig, slopes = plot_scaling(points, x=x)
        fig.suptitle(
            (spec.get("title") or f"cost against {x}, log-log (fitted slope in the legend)")
            + "\n"
            + caption
            + _shared_times_note(points),
            fontsize=10,
        )
        fig.tight_layout()
        captions[name] = _in_words(spec, kind, caption)
        written = save_figure(fig, plot_dir / name, formats, out)
        with atomic_path(plot_dir / f"{name}_slopes.csv", out) as tmp:
            slopes.to_csv(tmp, index=False)
        names = {"ms_per_round": "ms/round", "peak_memory_bytes": "peak memory"}
        wide = pd.DataFrame({"agent": list(dict.fromkeys(slopes["agent"]))})
        for metric, label in names.items():
            sub = slopes[slopes["metric"] == metric].set_index("agent")
            for col, head in (
                ("slope", f"slope of {label}"),
                ("upper-half slope", f"upper-half slope of {label}"),
            ):
                wide[head] = (
                    wide["agent"].map(sub[col]).map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
                )
        ranges = slopes.drop_duplicates("agent").set_index("agent")[[f"{x} range", "points"]]
        wide = wide.join(ranges, on="agent")
        shared = points[points["timing"] != "alone"].groupby("agent", sort=False).size()
        # which times the ms/round slopes were fitted to: measured alone, or (some) shares of
        # batches
        wide["ms/round timed"] = [
            f"batch shares at {shared[a]} of {int((points['agent'] == a).sum())} points"
            if a in shared.index
            else "alone"
            for a in wide["agent"]
        ]
        write_text_atomic(markdown_table(wide) + "\n", plot_dir / f"{name}_slopes.md", out)
        return written + [plot_dir / f"{name}_slopes.csv", plot_dir / f"{name}_slopes.md"]
    order = points.drop_duplicates("env").sort_values(x)["env"].tolist()
    tables = {
        env: with_agent_args(summary_table(runs[runs["env"] == env]), runs[runs["env"] == env])
        for env in order
    }
    # each panel names its env id when the panels are not all of one (the caption names it then)
    titles = {
        env: (f"{settings[env]['id']}\n" if len(ids) > 1 else "")
        + f"{x} = {settings[env].get(x):g}"
        for env in order
    }
    title = (
        (spec.get("title") or "final regret against agent CPU time (top) and peak memory (bottom)")
        + "\n"
        + caption
        + _shared_times_note(pd.concat(tables.values(), ignore_index=True))
    )
    fig = plot_fronts(tables, titles=titles, title=title)
    captions[name] = _in_words(spec, kind, caption)
    return save_figure(fig, plot_dir / name, formats, out)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (no dependency on ``tabulate``)."""
    cells = [[str(c) for c in frame.columns]] + [
        [str(v).replace("|", "\\|") for v in row] for row in frame.itertuples(index=False)
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(frame.columns))]
    line = lambda r: "| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join(
        [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        + [line(r) for r in cells[1:]]
    )
