"""Plots read back from run records (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: the CLI and CI have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_cumulative_regret"]


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
