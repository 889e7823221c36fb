"""A small-state grid as a default sweep against one run at a time: wall and CPU time, the ratio.

The grid is ``benchmarks/small_grid.yaml`` (Synthetic, d = 50, K = 20, OFUL lam x beta and SOFUL
l x beta, 3 seeds, T = 400: 30 runs). Each mode is the ``linbandit sweep`` command, in a fresh
output directory, as a user runs it (its start-up included), without plots:

* ``default``  -- ``--workers W``: the planner packs the runs whose state is small into batches
  and plays the first seed of every configuration alone (its timing run);
* ``per-run``  -- ``--workers W --no-batched``: one run at a time.

Every run has 1 torch and 1 BLAS thread (the sweep's thread policy; the environment pins
OpenMP, MKL and OpenBLAS to 1 thread too). The modes alternate, ``--repeats`` times each; the
best wall time of each is kept, with the CPU time (user + system of the command and its worker
processes) of that repeat. Printed: each mode's times, the ratio per-run / default, what the
default sweep itself says of its CPU time (the share outside the agents' act/update), the load
of the machine before and after, and whether both modes gave every run the same final regret.

    python benchmarks/bench_small_grid.py                 # 2 workers, best of 3
    python benchmarks/bench_small_grid.py --workers 1 --repeats 5
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "benchmarks", "small_grid.yaml")
sys.path.insert(0, ROOT)

MODES = {"default": [], "per-run": ["--no-batched"]}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sweep(out: str, workers: int, extra: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one ``linbandit sweep`` into ``out``, and what it printed."""
    env = {**os.environ, **{f"{lib}_NUM_THREADS": "1" for lib in ("OMP", "MKL", "OPENBLAS")}}
    command = [
        sys.executable,
        "-m",
        "linbandit_gym.cli",
        "sweep",
        CONFIG,
        "--out",
        out,
        "--workers",
        str(workers),
        "--quiet",
        "--no-plots",
        *extra,
    ]
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return wall, _children_cpu() - cpu, done.stdout


def _final_regrets(out: str) -> dict:
    from linbandit_gym.experiments.sweep import load_runs

    runs = load_runs(out)
    return dict(zip(zip(runs["agent"], runs["seed"]), runs["final_regret"]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    best: dict[str, tuple[float, float, str]] = {}
    regrets = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for mode, extra in MODES.items():
                out = os.path.join(tmp, f"{mode}-{repeat}")
                wall, cpu, printed = _sweep(out, args.workers, extra)
                print(f"  {mode:8s} repeat {repeat + 1}: {wall:6.2f} s wall, {cpu:6.2f} s CPU")
                if mode not in best or wall < best[mode][0]:
                    best[mode] = (wall, cpu, printed)
                regrets[mode] = _final_regrets(out)
                shutil.rmtree(out)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for mode, (wall, cpu, _) in best.items():
        print(f"{mode:8s} best {wall:6.2f} s wall ({cpu:.2f} s CPU of that repeat)")
    ratio = best["per-run"][0] / best["default"][0]
    cpu_ratio = best["per-run"][1] / best["default"][1]
    print(f"per-run / default, {args.workers} workers: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU")
    ledger = [
        line
        for line in best["default"][2].splitlines()
        if line.startswith(("CPU time", "  ")) and not line.startswith("  |")
    ]
    print("the default sweep's own account:\n" + "\n".join(ledger))
    same = regrets["default"] == regrets["per-run"]
    print(f"final regrets identical in both modes: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
