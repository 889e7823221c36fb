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
    "plot_spectral_exponent",
    "plot_sketch_size",
    "plot_param_effect",
    "plot_matrix_error",
    "save_figure",
]


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
    for (agent, env), group in records.groupby(["agent", "env"], sort=False):
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
        (line,) = ax.plot(mean.index, mean.values, label=label)
        if curves.shape[1] > 1:
            ax.fill_between(mean.index, low.values, high.values, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret")
    n_seeds = records["seed"].nunique()
    title_env = records["env"].iloc[0] if not multi_env else "several envs"
    ax.set_title(f"{title_env}: mean over {n_seeds} seed(s)" + (f", band = {band}" if n_seeds > 1 else ""))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


# -- experiment figures (seed 000 Fig. 1c, 3a-3d, 4; used by `linbandit plot`) ---------------

def save_figure(fig, path: str | Path, formats=("png", "pdf")) -> list[Path]:
    """Save ``fig`` as ``path`` with each suffix in ``formats`` (e.g. PNG and PDF) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
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


def plot_pareto(table: pd.DataFrame, x: str = "time_s", *, y: str = "final_regret_mean", ax=None, annotate: bool | None = None):
    """Final regret against a cost (time or memory), one colour per agent family (Fig. 3c/3d).

    Each point is one agent config (mean over seeds); the line joins the family's Pareto-optimal
    points (lowest regret for the cost). ``table`` is :func:`linbandit_gym.experiments.summary_table`
    for one env, with columns ``agent``, ``family``, ``x`` and ``y``.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    if annotate is None:
        annotate = len(table) <= 16
    for family, group in table.groupby("family", sort=False):
        xs, ys = group[x].to_numpy(dtype=float), group[y].to_numpy(dtype=float)
        marker = "*" if len(group) == 1 else "o"
        (pts,) = ax.plot(xs, ys, marker, ms=11 if marker == "*" else 6, alpha=0.85, label=str(family))
        mask = _pareto_mask(xs, ys)
        order = np.argsort(xs[mask])
        if mask.sum() > 1:
            ax.step(xs[mask][order], ys[mask][order], where="post", color=pts.get_color(), alpha=0.7)
        if annotate:
            for label, xi, yi in zip(group["agent"], xs, ys):
                short = str(label).replace(str(family), "").strip() or str(label)
                ax.annotate(short, (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points")
    names = {"time_s": "total agent time (s)", "ms_per_round": "ms / round", "peak_memory_kib": "peak memory (KiB)"}
    ax.set_xlabel(names.get(x, x))
    ax.set_ylabel("final cumulative regret" if y == "final_regret_mean" else y)
    if len(table) and (table[x] > 0).all() and table[x].max() / max(table[x].min(), 1e-12) > 20:
        ax.set_xscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_spectral_exponent(series: pd.DataFrame, *, ax=None, reference: float = 1.0 / 3.0):
    """``log(Delta_t) / log t`` against ``t`` with the line ``y = 1/3`` (seed 000 Fig. 1c).

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
    for (agent, l), group in data.groupby(["agent", "l"], sort=False):
        mean = group.groupby("t")["exponent"].mean()
        label = f"l = {l}" + (f" ({agent})" if multi_agent else "")
        ax.plot(mean.index, mean.values, label=label)
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
    for agent, group in records.groupby("agent", sort=False):
        mean = group.groupby("t")["sketch_size"].mean()
        ax.plot(mean.index, mean.values, label=str(agent), drawstyle="steps-post")
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
    metrics = metrics or [("final_regret", "final cumulative regret"), ("agent_time_s", "total agent time (s)")]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 4.2))
    axes = np.atleast_1d(axes)
    xcol = f"arg.{x}"
    gcol = f"arg.{group}" if group else None
    keys = [gcol, xcol] if gcol else [xcol]
    mean = runs.groupby(keys)[[m for m, _ in metrics]].mean().reset_index()
    for ax, (metric, name) in zip(axes, metrics):
        if gcol:
            for value, sub in mean.groupby(gcol):
                sub = sub.sort_values(xcol)
                shown = int(value) if isinstance(value, float) and value.is_integer() else value
                ax.plot(sub[xcol], sub[metric], "o-", label=f"{group} = {shown}")
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
    """``||A_t^T A_t - S_t^T S_t||_2`` against rows ``t`` (seed 000 Fig. 4), bounds dashed."""
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
