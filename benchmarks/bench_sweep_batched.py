"""A sweep with batched seeds vs the per-run loop: wall time and final regrets.

The sweep is ``mnist-quick``-like: MNIST (the shipped 5,000-image subset, target digit 0),
OFUL, SOFUL l in {20, 100}, CBSCFD l = 20, DBSLinUCB-FD l0 = 50 eps = 8 and DBSLinUCB-RFD, all
with lam = 0.2, beta = 0.01, over ``--seeds`` seeds of ``--horizon`` rounds. Compared, each in a
fresh output directory, interleaved, best of ``--repeats`` wall times:

* ``batched``          -- ``sweep(..., batched=None)`` (the default), 1 process;
* ``batched-w2``       -- the same with ``workers=2`` (batches go to the 2 workers as units);
* ``no-batched-w2``    -- ``sweep(..., batched=False, workers=2)``: one run at a time on 2 workers.

Printed: each mode's wall time, the ratios to ``no-batched-w2``, and the mean final regret per
agent of each mode (they must agree: the records are the same apart from timing columns).
Torch and BLAS run 1 thread per run (the sweep's default thread policy).

    python benchmarks/bench_sweep_batched.py                    # 8 seeds, 1000 rounds, best of 2
    python benchmarks/bench_sweep_batched.py --quick            # 4 seeds, 300 rounds, 1 repeat
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from threadpoolctl import threadpool_limits  # noqa: E402

from linbandit_gym.experiments.sweep import load_runs, sweep  # noqa: E402

MODES = {
    "batched": {"batched": None, "workers": 1},
    "batched-w2": {"batched": None, "workers": 2},
    "no-batched-w2": {"batched": False, "workers": 2},
}


def config(seeds: int, horizon: int) -> dict:
    common = {"lam": 0.2, "beta": 0.01}
    return {
        "name": "bench-sweep-batched",
        "seeds": seeds,
        "horizon": horizon,
        "envs": [{"id": "LinBandit-MNIST-v0", "args": {"dataset": "mnist", "target_class": 0}, "label": "mnist"}],
        "agents": [
            {"name": "OFUL", "args": common},
            {"name": "SOFUL", "args": common, "grid": {"sketch_size": [20, 100]}, "label": "SOFUL l={sketch_size}"},
            {"name": "CBSCFD", "args": {**common, "sketch_size": 20}, "label": "CBSCFD l=20"},
            {"name": "DBSLinUCB", "args": {**common, "sketch": "fd", "l0": 50, "eps": 8}, "label": "DBSLinUCB-FD"},
            {"name": "DBSLinUCB", "args": {**common, "sketch": "rfd", "l0": 50, "eps": 8}, "label": "DBSLinUCB-RFD"},
        ],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="4 seeds, 300 rounds, 1 repeat")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.horizon, args.repeats = 4, 300, 1
    cfg = config(args.seeds, args.horizon)
    times: dict[str, list[float]] = {m: [] for m in MODES}
    regrets: dict[str, dict] = {}
    with threadpool_limits(1):
        for _ in range(args.repeats):
            for mode, options in MODES.items():  # interleaved: load on the box hits every mode alike
                out = tempfile.mkdtemp(prefix=f"bench-{mode}-")
                try:
                    start = time.perf_counter()
                    result = sweep(cfg, out, log=None, **options)
                    times[mode].append(time.perf_counter() - start)
                    assert result.ok, result.failed
                    runs = load_runs(out)
                    regrets[mode] = runs.groupby("agent", sort=False)["final_regret"].mean().round(6).to_dict()
                finally:
                    shutil.rmtree(out, ignore_errors=True)
    print(f"sweep: MNIST, {len(cfg['agents']) + 1} agent configs x {args.seeds} seeds, T = {args.horizon} "
          f"(best of {args.repeats})")
    base = min(times["no-batched-w2"])
    for mode in MODES:
        best = min(times[mode])
        print(f"  {mode:14s} {best:7.1f} s   speed-up vs no-batched-w2: {base / best:.2f}x")
    print("mean final regret per agent:")
    agents = list(regrets["no-batched-w2"])
    print("  " + " | ".join(["agent"] + list(MODES)))
    for agent in agents:
        print("  " + " | ".join([agent] + [f"{regrets[m][agent]:.4f}" for m in MODES]))
    same = all(regrets[m] == regrets["no-batched-w2"] for m in MODES)
    print(f"final regrets identical across modes: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
