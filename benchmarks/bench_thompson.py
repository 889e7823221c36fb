"""Thompson sampling's per-round cost against optimism's on the same estimator and stream.

SLinTS against SOFUL (the same Frequent Directions sketch; goal: at most 1.3x SOFUL's time a
round) and LinTS against OFUL (the same exact inverse, plus LinTS's Potter factor; goal: at most
1.5x), at d = 784 (MNIST's dimension) and sketch size l = 50 by default. Each pair plays the same
pre-drawn stream of K unit-norm arms (rewards linear plus noise; every agent its own choices) for
``--rounds`` rounds after a warm-up; the runs are interleaved (TS, UCB, TS, UCB, ...) so both see
the same machine load, the best of ``--repeats`` is kept, one BLAS/torch thread (``--threads``).
Prints a table of ms/round and the ratio TS / UCB measured in this run.

    python benchmarks/bench_thompson.py               # d = 784, K in {10, 100}, l = 50
    python benchmarks/bench_thompson.py --quick       # fewer rounds, best of 2
    python benchmarks/bench_thompson.py --dtype float32
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from agents import OFUL, SOFUL, LinTS, SLinTS  # noqa: E402

GOALS = {"SLinTS / SOFUL": 1.3, "LinTS / OFUL": 1.5}


def stream(d: int, k: int, rounds: int, seed: int = 0):
    """``rounds`` sets of ``k`` unit-norm Gaussian arms, a unit ``theta`` and the reward noise."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    arms = rng.standard_normal((rounds, k, d))
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    return arms, theta, 0.1 * rng.standard_normal(rounds)


def ms_per_round(make, arms, theta, noise, warm: int) -> float:
    """``make()`` plays ``warm`` rounds untimed (the sketch fills), then the rest timed."""
    agent = make()
    for t in range(warm):
        a = agent.act(arms[t])
        agent.update(arms[t], a, float(arms[t, a] @ theta + noise[t]))
    start = time.perf_counter()
    for t in range(warm, arms.shape[0]):
        a = agent.act(arms[t])
        agent.update(arms[t], a, float(arms[t, a] @ theta + noise[t]))
    return (time.perf_counter() - start) / (arms.shape[0] - warm) * 1e3


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds, best of 2")
    parser.add_argument("--dims", type=int, nargs="+", default=[784])
    parser.add_argument("--arms", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--sketch-size", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 400)")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and torch threads")
    parser.add_argument("--repeats", type=int, default=None, help="best of (default 5, quick 2)")
    args = parser.parse_args(argv)
    repeats = args.repeats or (2 if args.quick else 5)
    rounds = args.rounds or (100 if args.quick else 400)
    warm = 2 * args.sketch_size  # past the first FD reductions
    dtype = getattr(torch, args.dtype)
    l = args.sketch_size
    torch.set_num_threads(args.threads)
    pairs = {
        "SLinTS / SOFUL": (
            lambda: SLinTS(lam=1.0, v=0.1, sketch_size=l, dtype=dtype, seed=0),
            lambda: SOFUL(lam=1.0, beta=0.1, sketch_size=l, dtype=dtype),
        ),
        "LinTS / OFUL": (
            lambda: LinTS(lam=1.0, v=0.1, dtype=dtype, seed=0),
            lambda: OFUL(lam=1.0, beta=0.1, dtype=dtype),
        ),
    }
    print(
        f"torch {torch.__version__}, numpy {np.__version__}, {args.threads} thread(s), "
        f"{args.dtype} on CPU; l={l}; {rounds} timed rounds after {warm}; best of {repeats}, "
        "interleaved"
    )
    print("| pair | d | K | TS ms/round | UCB ms/round | TS / UCB | goal |")
    print("|---|---|---|---|---|---|---|")
    with threadpool_limits(limits=args.threads):
        for d in args.dims:
            for k in args.arms:
                arms, theta, noise = stream(d, k, warm + rounds)
                for name, (ts, ucb) in pairs.items():
                    ms_per_round(ts, arms[:20], theta, noise, 10)  # warm-up of both code paths
                    ms_per_round(ucb, arms[:20], theta, noise, 10)
                    best_ts = best_ucb = float("inf")
                    for _ in range(repeats):
                        best_ts = min(best_ts, ms_per_round(ts, arms, theta, noise, warm))
                        best_ucb = min(best_ucb, ms_per_round(ucb, arms, theta, noise, warm))
                    ratio = best_ts / best_ucb
                    print(
                        f"| {name} | {d} | {k} | {best_ts:.3f} | {best_ucb:.3f} | {ratio:.2f} "
                        f"| <= {GOALS[name]} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
