"""Plots read back from run records (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: the CLI and CI have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = [
    "plot_cumulative_regret",
    "plot_pareto",
    "plot_fronts",
    "plot_scaling",
    "loglog_slope",
    "plot_spectral_exponent",
    "plot_sketch_size",
    "plot_param_effect",
    "plot_matrix_error",
    "save_figure",
    "line_styles",
]

_COLORS = plt.get_cmap("tab10").colors
_DASHES = ["-", "--", "-.", ":"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]


def line_styles(n: int) -> list[dict]:
    """``n`` distinct (colour, line style, marker) combinations for ``ax.plot``.

    Colour, dash pattern and marker all change from one curve to the next; the marker also
    shifts once per colour cycle, so no two of the first 100 curves share all three. Curves
    that coincide (e.g. DBSLinUCB-FD and -RFD while neither sketch has shrunk) stay visible:
    a dashed curve over a solid one shows both.
    """
    return [
        {"color": _COLORS[i % len(_COLORS)], "linestyle": _DASHES[i % len(_DASHES)],
         "marker": _MARKERS[(i + i // len(_COLORS)) % len(_MARKERS)]}
        for i in range(n)
    ]


def _readable_log_axis(ax, axis: str = "x") -> None:
    """Log scale with ticks that do not collide: plain numbers at 1, 2, 5 x 10^k on short
    ranges, only the powers of ten on ranges over three decades, no minor-tick labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    getattr(ax, f"set_{axis}scale")("log")
    target = ax.xaxis if axis == "x" else ax.yaxis
    low, high = (ax.get_xlim() if axis == "x" else ax.get_ylim())
    decades = np.log10(max(high, 1e-300) / max(low, 1e-300))
    subs = (1.0,) if decades > 3 else (1.0, 2.0, 5.0)
    target.set_major_locator(LogLocator(base=10.0, subs=subs))
    target.set_major_formatter(FuncFormatter(lambda v, _pos: _log_tick(v)))
    target.set_minor_formatter(NullFormatter())


def _log_tick(value: float) -> str:
    """``0.5``, ``20``, ``5000`` as plain numbers; ``10^6`` and ``2 x 10^6`` beyond."""
    if value <= 0:
        return ""
    k = int(np.floor(np.log10(value) + 1e-9))
    if -2 <= k <= 4:
        return f"{value:g}"
    mantissa = value / 10.0**k
    return rf"$10^{{{k}}}$" if abs(mantissa - 1) < 1e-6 else rf"${mantissa:g}\times 10^{{{k}}}$"


def _legend_outside(ax, fontsize: int = 8, **kwargs):
    """The legend to the right of the axes, where it cannot cover points or text."""
    return ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)


def plot_cumulative_regret(records: pd.DataFrame, path: str | Path | None = None, *, band: str = "std", ax=None):
    """Cumulative regret against round: the mean over seeds and a band, one line per (agent, env).

    Args:
        records: per-round records from :func:`linbandit_gym.run`.
        path: where to save (PNG/PDF by suffix); ``None`` leaves the figure open.
        band: ``"std"`` (mean +- one standard deviation over seeds), ``"se"`` (standard error)
            or ``"minmax"``.
        ax: draw into this axes instead of a new figure.

    Returns:
        The matplotlib Figure.
    """
    if band not in ("std", "se", "minmax"):
        raise ValueError(f"band must be 'std', 'se' or 'minmax', got {band!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    multi_env = records["env"].nunique() > 1
    groups = list(records.groupby(["agent", "env"], sort=False))
    for ((agent, env), group), style in zip(groups, line_styles(len(groups))):
        curves = group.pivot_table(index="t", columns="seed", values="cumulative_regret")
        mean = curves.mean(axis=1)
        if band == "minmax":
            low, high = curves.min(axis=1), curves.max(axis=1)
        else:
            spread = curves.std(axis=1).fillna(0.0)
            if band == "se":
                spread = spread / np.sqrt(curves.shape[1])
            low, high = mean - spread, mean + spread
        label = f"{agent} ({env})" if multi_env else str(agent)
        (line,) = ax.plot(mean.index, mean.values, label=label, markevery=_mark_every(len(mean), len(groups), style),
                          ms=4, **style)
        if curves.shape[1] > 1:
            ax.fill_between(mean.index, low.values, high.values, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret")
    n_seeds = records["seed"].nunique()
    title_env = records["env"].iloc[0] if not multi_env else "several envs"
    ax.set_title(f"{title_env}: T = {int(records['t'].max())}, "
                 + (f"mean over {n_seeds} seeds, band = {band}" if n_seeds > 1 else "1 seed"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def _mark_every(points: int, curves: int, style: dict) -> tuple[int, int]:
    """About 10 markers per curve, staggered between curves so coinciding curves show each marker."""
    step = max(1, points // 10)
    return (_MARKERS.index(style["marker"]) * max(1, step // max(curves, 1)) % step, step)


# -- experiment figures (Wen et al., 2025, Fig. 1c, 3a-3d, 4; used by `linbandit plot`) -------

def save_figure(fig, path: str | Path, formats=("png", "pdf")) -> list[Path]:
    """Save ``fig`` as ``path`` with each suffix in ``formats`` (e.g. PNG and PDF) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    if not getattr(fig, "_keep_layout", False):
        fig.tight_layout()  # again: titles are usually set after the plotting function returns
    for fmt in formats:
        target = path.with_suffix("." + fmt)
        fig.savefig(target, dpi=120)
        written.append(target)
    plt.close(fig)
    return written


def _pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Points no other point beats in both x and y (both minimised)."""
    keep = np.ones(len(x), dtype=bool)
    for i in range(len(x)):
        dominated = (x <= x[i]) & (y <= y[i]) & ((x < x[i]) | (y < y[i]))
        keep[i] = not dominated.any()
    return keep


_COST_NAMES = {"time_s": "total agent CPU time (s)", "ms_per_round": "agent CPU ms / round",
               "peak_memory_kib": "peak memory (KiB)"}


def _point_styles(table: pd.DataFrame) -> dict[str, dict]:
    """Marker style per agent of a Pareto table: the family's colour, a marker of its own (a star
    for a family of one), and sizes that shrink along the table, so a point drawn on top of an
    identical one (e.g. SOFUL and CBSCFD with an exact sketch) sits inside it and both show."""
    agents = list(dict.fromkeys(table["agent"]))
    families = list(dict.fromkeys(table["family"]))
    styles = {}
    for i, agent in enumerate(agents):
        family = table.loc[table["agent"] == agent, "family"].iloc[0]
        single = (table["family"] == family).sum() == 1 or table.loc[table["family"] == family, "agent"].nunique() == 1
        styles[agent] = {"color": _COLORS[families.index(family) % len(_COLORS)],
                         "marker": "*" if single else _MARKERS[i % len(_MARKERS)],
                         "ms": max(4.5, 11.0 - 0.5 * i) + (2.0 if single else 0.0),
                         "markeredgecolor": "k", "markeredgewidth": 0.5, "alpha": 0.9, "zorder": 3 + i}
    return styles


def plot_pareto(table: pd.DataFrame, x: str = "time_s", *, y: str = "final_regret_mean", ax=None,
                annotate: bool = False, legend: bool = True):
    """Final regret against a cost (time or memory), one colour per agent family (Fig. 3c/3d).

    Each point is one agent config (mean over seeds) with its own marker, named in the legend
    (beside the axes, so no label covers a point or another label); the line joins the
    family's Pareto-optimal points (lowest regret for the cost). ``table`` is
    :func:`linbandit_gym.experiments.summary_table` for one env, with columns ``agent``,
    ``family``, ``x`` and ``y``. ``annotate=True`` writes the labels next to the points instead
    (only sensible for a few well-separated points). Log axes (when the values span > 20x)
    get tick labels that do not collide.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(8.5, 4.5))
    else:
        fig = ax.figure
    style = _point_styles(table)
    for family in dict.fromkeys(table["family"]):
        group = table[table["family"] == family]
        xs, ys = group[x].to_numpy(dtype=float), group[y].to_numpy(dtype=float)
        color = style[group["agent"].iloc[0]]["color"]
        for label, xi, yi in zip(group["agent"], xs, ys):
            ax.plot([xi], [yi], ls="none", label=str(label), **style[label])
            if annotate:
                short = str(label).replace(str(family), "").strip() or str(label)
                ax.annotate(short, (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points")
        mask = _pareto_mask(xs, ys)
        order = np.argsort(xs[mask])
        if mask.sum() > 1:
            ax.step(xs[mask][order], ys[mask][order], where="post", color=color, alpha=0.6, lw=1.2)
    ax.set_xlabel(_COST_NAMES.get(x, x))
    ax.set_ylabel("final cumulative regret" if y == "final_regret_mean" else y)
    if _wants_log(table[x]):
        _readable_log_axis(ax, "x")
    ax.grid(alpha=0.3)
    if legend:
        _legend_outside(ax)
    fig.tight_layout()
    return fig


def plot_fronts(tables: dict[str, pd.DataFrame], *, y: str = "final_regret_mean", costs=("time_s", "peak_memory_kib"),
                titles: dict[str, str] | None = None):
    """Pareto fronts side by side: one column per env (e.g. per d), one row per cost.

    ``tables`` maps an env label to its :func:`summary_table`; the agents keep one marker and
    colour across panels and are named once, in a legend below the panels.
    """
    envs = list(tables)
    fig, axes = plt.subplots(len(costs), len(envs), figsize=(3.3 * len(envs) + 0.5, 3.0 * len(costs) + 1.2),
                             squeeze=False)
    everyone = pd.concat(list(tables.values()), ignore_index=True)
    agents = list(dict.fromkeys(everyone["agent"]))
    style = _point_styles(everyone)  # one style per agent across every panel
    for col, env in enumerate(envs):
        table = tables[env]
        for row, cost in enumerate(costs):
            ax = axes[row, col]
            for family in dict.fromkeys(table["family"]):
                group = table[table["family"] == family]
                xs, ys = group[cost].to_numpy(dtype=float), group[y].to_numpy(dtype=float)
                for agent, xi, yi in zip(group["agent"], xs, ys):
                    ax.plot([xi], [yi], ls="none", label=agent, **style[agent])
                mask = _pareto_mask(xs, ys)
                order = np.argsort(xs[mask])
                if mask.sum() > 1:
                    ax.step(xs[mask][order], ys[mask][order], where="post",
                            color=style[group["agent"].iloc[0]]["color"],
                            alpha=0.5, lw=1.0)
            if _wants_log(table[cost]):
                _readable_log_axis(ax, "x")
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
            if row == 0:
                ax.set_title((titles or {}).get(env, env), fontsize=9)
            ax.set_xlabel(_COST_NAMES.get(cost, cost), fontsize=8)
            if col == 0:
                ax.set_ylabel("final cumulative regret" if y == "final_regret_mean" else y, fontsize=8)
    handles = [plt.Line2D([], [], ls="none", **style[a]) for a in agents]
    fig.legend(handles, agents, loc="lower center", ncol=min(len(agents), 6), fontsize=8, frameon=False)
    fig._legend_rect = (0, 0.05 + 0.035 * ((len(agents) - 1) // 6 + 1), 1, 1)  # room for the legend below
    fig.tight_layout(rect=fig._legend_rect)
    fig._keep_layout = True  # save_figure must not redo tight_layout over the legend
    return fig


def _wants_log(values: pd.Series) -> bool:
    """A cost axis is logarithmic when its values are positive and span more than 5x."""
    return bool(len(values)) and bool((values > 0).all()) and values.max() / max(values.min(), 1e-12) > 5


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x`` (nan with fewer than 2 distinct x)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    if np.unique(x[ok]).size < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def plot_scaling(points: pd.DataFrame, *, x: str = "d", metrics=(("ms_per_round", "agent CPU ms / round"),
                                                                   ("peak_memory_bytes", "peak memory (bytes)"))):
    """Cost against a problem size on log-log axes, one line per agent, slope in the legend.

    ``points`` has one row per (agent, ``x``) with the columns ``agent`` and each metric
    (means over seeds). The legend gives every agent's fitted slope (``log y`` on ``log x``)
    over all its points and, in brackets, over its upper half of ``x`` (where fixed per-call
    costs no longer hide the asymptotic one); two grey guides of slope 1 and 2 through the
    panel's lowest first point show O(d l) and O(d^2).

    Returns ``(figure, slopes)`` with ``slopes`` a frame: agent, metric, slope, upper-half
    slope, points, x range.
    """
    fig, axes = plt.subplots(1, len(metrics), figsize=(6.0 * len(metrics), 5.6), squeeze=False)
    agents = list(dict.fromkeys(points["agent"]))
    styles = dict(zip(agents, line_styles(len(agents))))
    rows = []
    for ax, (metric, name) in zip(axes[0], metrics):
        for agent in agents:
            sub = points[points["agent"] == agent].sort_values(x)
            slope = loglog_slope(sub[x], sub[metric])
            upper = sub[sub[x] >= np.median(sub[x].unique())]
            upper_slope = loglog_slope(upper[x], upper[metric]) if 2 <= upper[x].nunique() < sub[x].nunique() else slope
            rows.append({"agent": agent, "metric": metric, "slope": slope, "upper-half slope": upper_slope,
                         "points": len(sub), f"{x} range": f"{sub[x].min():g}-{sub[x].max():g}"})
            if not np.isfinite(slope):
                label = f"{agent}: one point"
            elif upper_slope != slope and np.isfinite(upper_slope):
                label = f"{agent}: slope {slope:.2f} ({upper_slope:.2f} upper half)"
            else:
                label = f"{agent}: slope {slope:.2f}"
            ax.plot(sub[x], sub[metric], label=label, ms=6, **styles[agent])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ylim = ax.get_ylim()
        xs = np.sort(points[x].unique()).astype(float)
        first = points[points[x] == xs[0]][metric]
        if len(xs) > 1 and (first > 0).any():
            y0 = float(first[first > 0].min())
            for power, text in ((1, "slope 1"), (2, "slope 2")):
                guide = y0 * (xs / xs[0]) ** power
                ax.plot(xs, guide, color="0.6", lw=0.8, ls=(0, (1, 3)), zorder=0)
                inside = np.flatnonzero(guide <= ylim[1])  # label the guide where it leaves the data's range
                ax.annotate(text, (xs[inside[-1]], guide[inside[-1]]), fontsize=7, color="0.4",
                            xytext=(-4, 2), textcoords="offset points", ha="right", va="bottom")
            ax.set_ylim(ylim)  # the guides do not stretch the axes
        _readable_log_axis(ax, "x")
        _readable_log_axis(ax, "y")
        ax.set_xlabel(x)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3, which="both")
        # below the panel: the legend covers neither the lines nor the guides' labels
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    return fig, pd.DataFrame(rows)


def plot_spectral_exponent(series: pd.DataFrame, *, ax=None, reference: float = 1.0 / 3.0):
    """``log(Delta_t) / log t`` against ``t`` with the line ``y = 1/3`` (Wen et al., 2025, Fig. 1c).

    ``series`` has columns ``agent``, ``seed``, ``t``, ``l`` (sketch size) and ``delta``
    (``Delta_t = min_k ||X_t - [X_t]_k||_F^2 / (l - k)``); one line per (agent, l), mean over seeds.
    Above 1/3, SOFUL's bound ``(1 + Delta_T)^{3/2} sqrt(T)`` is no longer sublinear.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    # Delta_t is exactly 0 while the stream has rank < l; eigensolver noise (~1e-12 t) would
    # show as a spurious large negative exponent, so such points are left out.
    data = series[(series["t"] > 1) & (series["delta"] > 1e-9 * series["t"])].copy()
    data["exponent"] = np.log(data["delta"]) / np.log(data["t"])
    multi_agent = data["agent"].nunique() > 1
    groups = list(data.groupby(["agent", "l"], sort=False))
    for ((agent, l), group), style in zip(groups, line_styles(len(groups))):
        mean = group.groupby("t")["exponent"].mean()
        label = f"l = {l}" + (f" ({agent})" if multi_agent else "")
        ax.plot(mean.index, mean.values, label=label, ms=4, markevery=_mark_every(len(mean), len(groups), style),
                **style)
    ax.axhline(reference, color="k", ls="--", lw=1, label="y = 1/3")
    ax.set_xlabel("round t")
    ax.set_ylabel(r"$\log(\Delta_t) / \log t$")
    ax.set_title("spectral error exponent")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_sketch_size(records: pd.DataFrame, *, ax=None):
    """Sketch size (rows held) against round, mean over seeds, one line per agent."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    groups = list(records.groupby("agent", sort=False))
    for (agent, group), style in zip(groups, line_styles(len(groups))):
        mean = group.groupby("t")["sketch_size"].mean()
        # distinct dash patterns and staggered markers: identical curves (e.g. DBSLinUCB-FD and
        # -RFD before either sketch shrinks) stay distinguishable
        ax.plot(mean.index, mean.values, label=str(agent), drawstyle="steps-post", ms=5,
                markevery=_mark_every(len(mean), len(groups), style), **style)
    ax.set_xlabel("round t")
    ax.set_ylabel("sketch size (rows)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_param_effect(runs: pd.DataFrame, x: str, group: str | None = None, *, metrics=None):
    """Final regret and total time against one agent argument, a line per value of another (Fig. 3a/3b).

    ``runs`` holds one row per run (:func:`linbandit_gym.experiments.load_runs`) with argument
    columns ``arg.<name>``; values are averaged over seeds.
    """
    metrics = metrics or [("final_regret", "final cumulative regret"), ("agent_time_s", "total agent CPU time (s)")]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 4.2))
    axes = np.atleast_1d(axes)
    xcol = f"arg.{x}"
    gcol = f"arg.{group}" if group else None
    keys = [gcol, xcol] if gcol else [xcol]
    mean = runs.groupby(keys)[[m for m, _ in metrics]].mean().reset_index()
    for ax, (metric, name) in zip(axes, metrics):
        if gcol:
            groups = list(mean.groupby(gcol))
            for (value, sub), style in zip(groups, line_styles(len(groups))):
                sub = sub.sort_values(xcol)
                shown = int(value) if isinstance(value, float) and value.is_integer() else value
                ax.plot(sub[xcol], sub[metric], label=f"{group} = {shown}", **style)
            ax.legend(fontsize=8)
        else:
            sub = mean.sort_values(xcol)
            ax.plot(sub[xcol], sub[metric], "o-")
        ax.set_xlabel(x)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_matrix_error(records: pd.DataFrame, *, ax=None, bound: bool = True):
    """``||A_t^T A_t - S_t^T S_t||_2`` against rows ``t`` (Wen et al., 2025, Fig. 4), bounds dashed."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    for agent, group in records.groupby("agent", sort=False):
        mean = group.groupby("t")[["spectral_error", "error_bound"]].mean()
        (line,) = ax.plot(mean.index, mean["spectral_error"], label=f"{agent}")
        if bound and mean["error_bound"].notna().any():
            ax.plot(mean.index, mean["error_bound"], ls="--", color=line.get_color(), alpha=0.8, label=f"{agent}: bound")
    ax.set_xlabel("rows t")
    ax.set_ylabel(r"$\|A_t^\top A_t - S_t^\top S_t\|_2$")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
