"""Batched sweeps, tuning and reproductions vs the per-run loop: wall time and final regrets.

Workloads (``--workload``, default ``all``):

* ``tune``      -- ``linbandit tune`` on the shipped ``mnist-quick`` config with its own ``tune:``
  grid (4 agents x 3 beta x 3 lambda, 1 tuning seed, T = 1000): grid points of one agent family
  share a batch (members differ in lam / beta / sketch_size);
* ``reproduce`` -- ``linbandit reproduce mnist --quick`` (13 configs x 2 seeds, T = 2000, plots
  and report included);
* ``sweep``     -- the sweep below;
* ``grid``      -- a small-state grid where the default packs: Synthetic d = 50, K = 20, T = 2000,
  OFUL and SOFUL l = 10 over lam in {0.2, 2} x beta in {0.01, 0.1, 1} x 4 seeds (48 runs).

The sweep is ``mnist-quick``-like: MNIST (the shipped 5,000-image subset, target digit 0),
OFUL, SOFUL l in {20, 100}, CBSCFD l = 20, DBSLinUCB-FD l0 = 50 eps = 8 and DBSLinUCB-RFD, all
with lam = 0.2, beta = 0.01, over ``--seeds`` seeds of ``--horizon`` rounds. Compared, each in a
fresh output directory, interleaved, best of ``--repeats`` wall times:

* ``batched``          -- ``sweep(..., batched=True, timing_runs=False)``
  (``--batched --no-timing-runs``: pack all that can be packed, every seed), 1 process;
* ``batched-w2``       -- the same with ``workers=2`` (batches go to the 2 workers as units);
* ``default-w2``       -- ``sweep(..., workers=2)``: the default ``batched=None`` packs only runs
  whose agent state is small (``linbandit_gym.batched.SMALL_STATE``), and the first seed of every
  configuration runs alone (its timing run);
* ``no-batched-w2``    -- ``sweep(..., batched=False, workers=2)``: one run at a time on 2 workers.

Printed: each mode's wall time, the ratios to ``no-batched-w2``, and the mean final regret per
agent of each mode (they must agree: the records are the same apart from timing columns).
Torch and BLAS run 1 thread per run (the sweep's default thread policy).

Each workload prints each mode's best wall time, its ratio to ``no-batched-w2``, and the final
regrets of every run side by side (tune: the mean final regret of every grid point and the
chosen beta / lambda; they must be identical).

    python benchmarks/bench_sweep_batched.py  # all workloads, best of 2
    python benchmarks/bench_sweep_batched.py --workload tune --repeats 3
    python benchmarks/bench_sweep_batched.py --workload sweep --quick  # 4 seeds, T = 300, 1 repeat
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from threadpoolctl import threadpool_limits  # noqa: E402

from linbandit_gym.experiments.config import load_config  # noqa: E402
from linbandit_gym.experiments.reproduce import config_path, reproduce  # noqa: E402
from linbandit_gym.experiments.sweep import load_runs, sweep  # noqa: E402
from linbandit_gym.experiments.tune import tune  # noqa: E402

MODES = {
    "batched": {"batched": True, "workers": 1, "timing_runs": False},
    "batched-w2": {"batched": True, "workers": 2, "timing_runs": False},
    "default-w2": {"batched": None, "workers": 2},
    "no-batched-w2": {"batched": False, "workers": 2},
}


def config(seeds: int, horizon: int) -> dict:
    common = {"lam": 0.2, "beta": 0.01}
    return {
        "name": "bench-sweep-batched",
        "seeds": seeds,
        "horizon": horizon,
        "envs": [
            {
                "id": "LinBandit-MNIST-v0",
                "args": {"dataset": "mnist", "target_class": 0},
                "label": "mnist",
            }
        ],
        "agents": [
            {"name": "OFUL", "args": common},
            {
                "name": "SOFUL",
                "args": common,
                "grid": {"sketch_size": [20, 100]},
                "label": "SOFUL l={sketch_size}",
            },
            {"name": "CBSCFD", "args": {**common, "sketch_size": 20}, "label": "CBSCFD l=20"},
            {
                "name": "DBSLinUCB",
                "args": {**common, "sketch": "fd", "l0": 50, "eps": 8},
                "label": "DBSLinUCB-FD",
            },
            {
                "name": "DBSLinUCB",
                "args": {**common, "sketch": "rfd", "l0": 50, "eps": 8},
                "label": "DBSLinUCB-RFD",
            },
        ],
    }


def grid_config() -> dict:
    grid = {"lam": [0.2, 2.0], "beta": [0.01, 0.1, 1.0]}
    return {
        "name": "bench-grid",
        "seeds": 4,
        "envs": [
            {
                "id": "LinBandit-Synthetic-v0",
                "args": {"d": 50, "n_arms": 20, "horizon": 2000},
                "label": "syn",
            }
        ],
        "agents": [
            {"name": "OFUL", "grid": grid, "label": "OFUL lam={lam} beta={beta}"},
            {
                "name": "SOFUL",
                "args": {"sketch_size": 10},
                "grid": grid,
                "label": "SOFUL lam={lam} beta={beta}",
            },
        ],
    }


def _final_regrets(out: str) -> dict:
    """Final regret of every run, by (agent label, seed), rounded for printing."""
    runs = load_runs(out)
    return {
        (a, int(s)): round(float(r), 6)
        for a, s, r in zip(runs["agent"], runs["seed"], runs["final_regret"])
    }


def _play(workload: str, out: str, options: dict, cfg: dict):
    """Run one workload into ``out``; return what must be identical across modes."""
    if workload in ("sweep", "grid"):
        result = sweep(cfg if workload == "sweep" else grid_config(), out, log=None, **options)
        assert result.ok, result.failed
        return _final_regrets(out)
    if workload == "tune":
        tuning = {
            k: v for k, v in options.items() if k != "timing_runs"
        }  # tuning times nothing alone
        result = tune(load_config(config_path("mnist", quick=True)), out, log=None, **tuning)
        assert result.ok, result.failed
        return {"tuned": result.tuned, "runs": _final_regrets(out)}
    with contextlib.redirect_stdout(io.StringIO()):  # the summary table and file list
        code = reproduce("mnist", quick=True, out=out, log=None, **options)
    assert code == 0
    return _final_regrets(out)


def _report(workload: str, times: dict, outcomes: dict) -> bool:
    base = min(times["no-batched-w2"])
    for mode in MODES:
        best = min(times[mode])
        print(
            f"  {mode:14s} {best:7.1f} s   speed-up vs no-batched-w2: {base / best:.2f}x   "
            f"(all: {', '.join(f'{t:.1f}' for t in times[mode])})"
        )
    ref = outcomes["no-batched-w2"]
    runs = ref["runs"] if workload == "tune" else ref
    if workload == "tune":
        for env, per_agent in ref["tuned"].items():
            for agent, values in per_agent.items():
                print(
                    f"  tuned {agent} on {env}: beta={values.get('beta')}, "
                    f"lam={values.get('lam')}, regret {values['final_regret']:.4f}"
                )
    print("  final regret per run: " + " | ".join(["run (agent, seed)"] + list(MODES)))
    for key in runs:
        vals = [
            (outcomes[m]["runs"] if workload == "tune" else outcomes[m]).get(key) for m in MODES
        ]
        print(
            "    "
            + " | ".join(
                [f"{key[0]} seed {key[1]}"] + [f"{v:.4f}" if v is not None else "-" for v in vals]
            )
        )
    same = all(outcomes[m] == ref for m in MODES)
    print(f"  final regrets (and tuned values) identical across modes: {same}")
    return same


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workload", choices=["all", "tune", "reproduce", "sweep", "grid"], default="all"
    )
    parser.add_argument("--seeds", type=int, default=8, help="sweep workload: seeds")
    parser.add_argument("--horizon", type=int, default=1000, help="sweep workload: rounds")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--quick", action="store_true", help="sweep workload: 4 seeds, 300 rounds; 1 repeat"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.horizon, args.repeats = 4, 300, 1
    cfg = config(args.seeds, args.horizon)
    workloads = (
        ["tune", "reproduce", "grid", "sweep"] if args.workload == "all" else [args.workload]
    )
    ok = True
    with threadpool_limits(1):
        for workload in workloads:
            times: dict[str, list[float]] = {m: [] for m in MODES}
            outcomes: dict[str, object] = {}
            for _ in range(args.repeats):
                for (
                    mode,
                    options,
                ) in MODES.items():  # interleaved: load on the box hits every mode alike
                    out = tempfile.mkdtemp(prefix=f"bench-{workload}-{mode}-")
                    try:
                        start = time.perf_counter()
                        outcomes[mode] = _play(workload, out, options, cfg)
                        times[mode].append(time.perf_counter() - start)
                    finally:
                        shutil.rmtree(out, ignore_errors=True)
            what = {
                "tune": "linbandit tune on mnist-quick's tune: grid (36 runs, T = 1000)",
                "reproduce": (
                    "linbandit reproduce mnist --quick (26 runs, T = 2000, plots and report)"
                ),
                "grid": (
                    "grid: Synthetic d = 50, K = 20, T = 2000, (OFUL, SOFUL l = 10) x lam x beta "
                    "x 4 seeds"
                ),
                "sweep": (
                    f"sweep: MNIST, {len(cfg['agents']) + 1} agent configs x {args.seeds} seeds, "
                    f"T = {args.horizon}"
                ),
            }[workload]
            print(f"{what} (best of {args.repeats})", flush=True)
            ok = _report(workload, times, outcomes) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
