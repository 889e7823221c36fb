"""Final regret of tuned linear Thompson sampling (LinTS) against tuned OFUL on
``LinBandit-Synthetic-v0`` (d = 50, K = 20 arms, T = 2000; the env's default noise 0.01): is
LinTS's within 2x of OFUL's?

    python benchmarks/ts_regret_against_oful.py [--workers 2] [--out DIR]

Both are tuned the same way, by :func:`linbandit_gym.experiments.tune.tune` (the project's
tuner) over the full grid (``schedule="grid"``, the paper's protocol) on tuning seeds
1000..1009, and evaluated on seeds 0..9, which no tuning run played. OFUL's confidence radius
``beta`` and LinTS's posterior scale ``v`` range over one grid (the paper grid of ``beta``, Wen
et al. (2025), App. F.1: 1e-4 .. 1) and both agents' ridge ``lam`` over the paper's lambda grid
(2e-4 .. 2e4). The tuner knows ``beta`` and ``lam``: LinTS takes no ``beta``, so it is tuned for
``lam`` once per value of ``v`` (one label per value), and the value of ``v`` whose tuned label
has the least mean final regret on the tuning seeds is kept. Prints the choices, the mean ±
standard error of the final regret over the 10 evaluation seeds of each agent, and the ratio of
the means.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from linbandit_gym.experiments import load_runs, sweep  # noqa: E402
from linbandit_gym.experiments.config import PAPER_BETA_GRID, PAPER_LAM_GRID  # noqa: E402
from linbandit_gym.experiments.tune import tune  # noqa: E402

ENV = {"id": "LinBandit-Synthetic-v0", "args": {"d": 50, "n_arms": 20}, "label": "synthetic-d50"}
HORIZON = 2000
EVALUATION_SEEDS = list(range(10))
TUNING_SEEDS = list(range(1000, 1010))
#: LinTS's posterior scale v ranges over the grid of OFUL's beta: one grid for both.
SCALE_GRID = PAPER_BETA_GRID


def tuning_config() -> dict:
    """OFUL, and LinTS once per value of ``v`` (the tuner tunes ``lam`` of each label)."""
    return {
        "name": "ts-against-oful",
        "horizon": HORIZON,
        "envs": [ENV],
        "agents": [
            {"name": "OFUL"},
            {"name": "LinTS", "grid": {"v": list(SCALE_GRID)}, "label": "LinTS v={v}"},
        ],
        "tune": {"beta": list(SCALE_GRID), "lam": list(PAPER_LAM_GRID), "seeds": TUNING_SEEDS},
    }


def choices(tuned: dict) -> dict[str, dict]:
    """From the tuner's ``{env: {label: {beta?, lam, final_regret}}}``: OFUL's tuned arguments
    and LinTS's (the ``v`` label of least tuning regret, with its tuned ``lam``)."""
    per_label = tuned[ENV["label"]]
    oful = per_label["OFUL"]
    ts_labels = {label: values for label, values in per_label.items() if label.startswith("LinTS")}
    best = min(ts_labels, key=lambda label: ts_labels[label]["final_regret"])
    v = float(best.split("v=", 1)[1])
    return {
        "OFUL": {
            "args": {"beta": oful["beta"], "lam": oful["lam"]},
            "tuning": oful["final_regret"],
        },
        "LinTS": {
            "args": {"v": v, "lam": ts_labels[best]["lam"]},
            "tuning": ts_labels[best]["final_regret"],
        },
    }


def evaluate(chosen: dict[str, dict], out: Path, workers: int) -> dict[str, tuple[float, float]]:
    """Mean and standard error of the final regret over the evaluation seeds, per agent."""
    config = {
        "name": "ts-against-oful-evaluation",
        "seeds": EVALUATION_SEEDS,
        "horizon": HORIZON,
        "envs": [ENV],
        "agents": [{"name": name, "args": entry["args"]} for name, entry in chosen.items()],
    }
    result = sweep(config, out, workers=workers, log=None)
    if not result.ok:
        raise SystemExit(f"evaluation runs failed: {result.failed}")
    runs = load_runs(out)
    final = runs.groupby("agent")["final_regret"]
    return {
        name: (float(final.mean()[name]), float(final.std()[name] / math.sqrt(final.count()[name])))
        for name in chosen
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--out", default=None, help="directory of the runs (default: a temporary one)"
    )
    args = parser.parse_args()
    base = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="ts-against-oful-"))
    print(
        f"LinBandit-Synthetic-v0, d = 50, K = 20, T = {HORIZON}; tuning seeds "
        f"{TUNING_SEEDS[0]}..{TUNING_SEEDS[-1]}, evaluation seeds {EVALUATION_SEEDS[0]}.."
        f"{EVALUATION_SEEDS[-1]}; beta and v in {SCALE_GRID}, lam in {PAPER_LAM_GRID}; "
        f"runs in {base}"
    )
    tuned = tune(tuning_config(), base / "tune", schedule="grid", workers=args.workers, log=None)
    if not tuned.ok:
        raise SystemExit(f"tuning runs failed: {tuned.failed}")
    chosen = choices(tuned.tuned)
    regret = evaluate(chosen, base / "evaluation", args.workers)
    print()
    print("| agent | tuned | tuning regret (seeds 1000..1009) | final regret (seeds 0..9) |")
    print("|---|---|---|---|")
    for name, entry in chosen.items():
        words = ", ".join(f"{key}={value:g}" for key, value in entry["args"].items())
        mean, se = regret[name]
        print(f"| {name} | {words} | {entry['tuning']:.2f} | {mean:.2f} ± {se:.2f} (se) |")
    ratio = regret["LinTS"][0] / regret["OFUL"][0]
    print(
        f"\nLinTS / OFUL final regret: {ratio:.2f}x ({'within' if ratio <= 2 else 'NOT within'} 2x)"
    )


if __name__ == "__main__":
    main()
