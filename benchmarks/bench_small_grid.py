"""A small-state grid as a default sweep against one run at a time: wall and CPU time, the ratio.

The grid is ``benchmarks/small_grid.yaml`` (Synthetic, d = 50, K = 20, OFUL lam x beta and SOFUL
l x beta, 3 seeds, T = 400: 30 runs). Each mode is the ``linbandit sweep`` command, in a fresh
output directory, as a user runs it (its start-up included), without plots:

* ``default``  -- ``--workers W``: the planner packs the runs whose state is small into batches
  and plays the first seed of every configuration alone (its timing run);
* ``per-run``  -- ``--workers W --no-batched``: one run at a time.

``--workers`` is an upper bound: either mode starts only the worker processes its planned runs
pay for (none here: the runs are estimated at a few seconds of CPU). Two more measurements bound
what any mode can reach:

* ``floor``    -- the default command again, into the directory it has just filled: nothing left
  to run, so its time is what every mode pays whatever it runs (the interpreter, importing the
  package and torch, planning, the summary table). No mode is faster than this, so
  ``per-run / default`` is at most ``per-run / floor``, which the bench prints: where that
  bound is below a goal, it is the process's own start-up that stands in the way, not the runs;
* ``worker start-up`` -- the CPU time of an interpreter importing what a worker process
  imports (``linbandit_gym.cli`` and :func:`linbandit_gym.experiments.runner.prepare_worker`),
  what :data:`linbandit_gym.experiments.backends.WORKER_START_S` stands for.

Every run has 1 torch and 1 BLAS thread (the sweep's thread policy; the environment pins
OpenMP, MKL and OpenBLAS to 1 thread too). The modes alternate, ``--repeats`` times each; the
best wall time of each is kept, with the CPU time (user + system of the command and its worker
processes) of that repeat. Printed: each mode's times, the ratio per-run / default, the bound,
what the default sweep itself says of its CPU time (the share outside the agents' act/update),
whether each mode started worker processes, the load of the machine before and after, and
whether both modes gave every run the same final regret.

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
#: what a worker process imports before its first unit
WORKER_IMPORTS = (
    "import linbandit_gym.cli; from linbandit_gym.experiments.runner import prepare_worker; "
    "prepare_worker()"
)
ENV = {**os.environ, **{f"{lib}_NUM_THREADS": "1" for lib in ("OMP", "MKL", "OPENBLAS")}}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``command`` (and its children), and what it printed."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=ENV, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return wall, _children_cpu() - cpu, done.stdout


def _sweep(out: str, workers: int, extra: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one ``linbandit sweep`` into ``out``, and what it printed."""
    command = [sys.executable, "-m", "linbandit_gym.cli", "sweep", CONFIG, "--out", out]
    command += ["--workers", str(workers), "--quiet", "--no-plots", *extra]
    return _timed(command)


def _started_workers(printed: str) -> bool:
    """Whether the sweep's CPU account has a worker start-up (its lines are wrapped)."""
    return "worker start-up" in " ".join(printed.split())


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

    def keep(mode: str, repeat: int, timed: tuple[float, float, str]) -> None:
        wall, cpu, _ = timed
        print(f"  {mode:15s} repeat {repeat + 1}: {wall:6.2f} s wall, {cpu:6.2f} s CPU")
        if mode not in best or wall < best[mode][0]:
            best[mode] = timed

    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for mode, extra in MODES.items():
                out = os.path.join(tmp, f"{mode}-{repeat}")
                keep(mode, repeat, _sweep(out, args.workers, extra))
                regrets[mode] = _final_regrets(out)
                if mode == "default":  # again, with every run finished: the start-up floor
                    keep("floor", repeat, _sweep(out, args.workers, extra))
                shutil.rmtree(out)
            keep("worker start-up", repeat, _timed([sys.executable, "-c", WORKER_IMPORTS]))
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for mode in (*MODES, "floor"):
        wall, cpu, printed = best[mode]
        started = (
            "" if mode == "floor" else f"; worker processes started: {_started_workers(printed)}"
        )
        print(f"{mode:8s} best {wall:6.2f} s wall ({cpu:.2f} s CPU of that repeat{started})")
    from linbandit_gym.experiments.backends import WORKER_START_S

    print(
        f"worker start-up (an interpreter importing what a worker imports): best "
        f"{best['worker start-up'][1]:.2f} s CPU; backends.WORKER_START_S = {WORKER_START_S:g} s"
    )
    ratio = best["per-run"][0] / best["default"][0]
    cpu_ratio = best["per-run"][1] / best["default"][1]
    print(f"per-run / default, {args.workers} workers: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU")
    bound = best["per-run"][0] / best["floor"][0]
    print(
        f"bound: no sweep is faster than the floor, so per-run / default is at most per-run / "
        f"floor = {bound:.2f}x; the floor ({best['floor'][0]:.2f} s: interpreter, imports, "
        f"planning, summary) is {best['floor'][0] / best['default'][0]:.0%} of the default "
        "sweep's wall time"
    )
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
