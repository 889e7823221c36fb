"""float32 against float64 for every sketched agent: final regret (3 seeds) and ms per round.

The one sketch core keeps the d-sized state in the working dtype and the small m x m core in
float64 (agents.sketches.base), so float32 should choose (almost) as float64 does at normal
scales. This script plays MNIST (lam=0.2, beta=0.01, the paper's demo) and Synthetic (d=100,
K=20) with SOFUL, CBSCFD, DBSLinUCB-FD and DBSLinUCB-RFD in both dtypes, 3 seeds each, through
the batched path (one batch of 3 seeds per agent and dtype), and prints the mean final regret
of each dtype, their relative difference (the issue asks for <= 10%) and the float32 speed-up
of ms/round (CPU, 1 thread).

    python benchmarks/bench_float32.py            # horizon 2000 (MNIST's) / 2000
    python benchmarks/bench_float32.py --quick    # horizon 500
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
import linbandit_gym  # noqa: E402
from agents import CBSCFD, SOFUL, DBSLinUCB  # noqa: E402

AGENTS = {
    "SOFUL": lambda lam, beta, l, dt: SOFUL(lam=lam, beta=beta, sketch_size=l, dtype=dt),
    "CBSCFD": lambda lam, beta, l, dt: CBSCFD(lam=lam, beta=beta, sketch_size=l, dtype=dt),
    "DBSLinUCB-FD": lambda lam, beta, l, dt: DBSLinUCB(lam=lam, beta=beta, l0=l, eps=8.0, sketch="fd", dtype=dt),
    "DBSLinUCB-RFD": lambda lam, beta, l, dt: DBSLinUCB(lam=lam, beta=beta, l0=l, eps=8.0, sketch="rfd", dtype=dt),
}
# (env id, env kwargs, lam, beta, l = l0): MNIST as the paper's demo (l = l0 = 50); Synthetic d = 100
# with l = l0 = 10 (with l0 = 50 > d/3 DBSLinUCB would be OFUL from the first row, and SOFUL l = 50
# would hold more than OFUL at d = 100)
ENVS = {
    "MNIST": ("LinBandit-MNIST-v0", {}, 0.2, 0.01, 50),
    "Synthetic": ("LinBandit-Synthetic-v0", {"d": 100, "n_arms": 20}, 1.0, 0.1, 10),
}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--envs", nargs="+", choices=list(ENVS), default=list(ENVS))
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    horizon = 500 if args.quick else 2000
    print(f"{args.seeds} seeds, horizon {horizon}, {args.threads} thread(s), torch {torch.__version__}; "
          "regret = mean final cumulative regret over seeds")
    print(f"{'env':>10} {'agent':>14} {'regret f64':>11} {'regret f32':>11} {'rel diff':>9} "
          f"{'ms f64':>8} {'ms f32':>8} {'f32 speed-up':>13}")
    worst = 0.0
    with threadpool_limits(limits=args.threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for env_name in args.envs:
            env_id, kw, lam, beta, l = ENVS[env_name]
            for name, make in AGENTS.items():
                out = {}
                for dt in (torch.float64, torch.float32):
                    rec = linbandit_gym.run(env_id, make(lam, beta, l, dt), seeds=list(range(args.seeds)),
                                            env_kwargs=dict(kw, horizon=horizon), progress=False)
                    final = rec.groupby("seed")["cumulative_regret"].last().mean()
                    ms = rec.groupby("seed")["agent_time"].last().mean() / horizon * 1e3
                    out[dt] = (final, ms)
                (r64, ms64), (r32, ms32) = out[torch.float64], out[torch.float32]
                rel = abs(r32 - r64) / max(abs(r64), 1e-12)
                worst = max(worst, rel)
                print(f"{env_name:>10} {name:>14} {r64:>11.2f} {r32:>11.2f} {rel:>9.1%} {ms64:>8.3f} {ms32:>8.3f} "
                      f"{ms64 / ms32:>12.2f}x", flush=True)
    print(f"largest relative difference of final regret float32 vs float64: {worst:.1%}")


if __name__ == "__main__":
    main()
