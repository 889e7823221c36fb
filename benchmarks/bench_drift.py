"""Long-run float32 drift: does a float32 sketched agent keep choosing as float64 OFUL over many
rounds?

The arms lie in a random ``rank``-dimensional subspace of R^d (``rank = d`` by default), so
sketches of ``rank + 5`` rows never discard anything (FD of size l is exact on rank < l data):
SOFUL, CBSCFD and, when ``3 (rank + 5) <= d``, DBSLinUCB (one block: ``eps`` large,
``memory_cap=False``) equal OFUL in exact arithmetic, and every disagreement with float64 OFUL
is rounding. float32 OFUL is printed too: its own drift (Sherman-Morrison's error grows with
``cond(A) ~ t``) is the yardstick.
The agents share ONE trajectory: float64 OFUL chooses, every agent learns from that arm and its
reward, and each round counts whether an agent's own choice (its ``act``) would have differed.
A count that grows window after window is drift: an error that grows with t (e.g. a cancelling
``x^T b`` term, with ``|b| ~ t``) instead of staying at float32's rounding of each score.

    python benchmarks/bench_drift.py  # d = 20 (full rank), K = 20, 20,000 rounds, windows of 5,000
    python benchmarks/bench_drift.py --d 80 --rank 20  # DBSLinUCB too
    python benchmarks/bench_drift.py --rounds 50000 --window 10000
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB  # noqa: E402


def agents_under_test(d: int, rank: int, lam: float, beta: float) -> dict:
    """float32 agents that equal OFUL in exact arithmetic on rank-``rank`` arms, and float32
    OFUL."""
    f32 = {"dtype": torch.float32, "lam": lam, "beta": beta, "d": d}
    l = rank + 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "the sketch holds more than OFUL": wanted here
        out = {
            "OFUL f32": OFUL(**f32),
            f"SOFUL l={l} f32": SOFUL(sketch_size=l, **f32),
            f"CBSCFD l={l} f32": CBSCFD(sketch_size=l, **f32),
        }
        if 3 * l <= d:  # block_cap >= 2: a sketched block exists
            out[f"DBSLinUCB l0={l} f32"] = DBSLinUCB(l0=l, eps=1e12, memory_cap=False, **f32)
        return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d", type=int, default=20)
    p.add_argument(
        "--rank",
        type=int,
        default=None,
        help="dimension of the arms' subspace (default d; DBSLinUCB runs when 3 (rank + 5) <= d)",
    )
    p.add_argument("--arms", type=int, default=20)
    p.add_argument("--rounds", type=int, default=20000)
    p.add_argument("--window", type=int, default=5000)
    p.add_argument("--lam", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.1)
    p.add_argument("--noise", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    threadpool_limits(1)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    d, K, T = args.d, args.arms, args.rounds
    args.rank = d if args.rank is None else args.rank
    basis = np.linalg.qr(rng.standard_normal((d, args.rank)))[0].T  # (rank, d), orthonormal rows
    theta = rng.standard_normal(args.rank) @ basis
    theta /= np.linalg.norm(theta)
    reference = OFUL(lam=args.lam, beta=args.beta, d=d, dtype=torch.float64)
    others = agents_under_test(d, args.rank, args.lam, args.beta)
    counts = {name: [] for name in others}
    for start in range(0, T, args.window):
        window = {name: 0 for name in others}
        for _ in range(min(args.window, T - start)):
            arms = rng.standard_normal((K, args.rank)) @ basis
            arms /= np.linalg.norm(arms, axis=1, keepdims=True)
            a = reference.act(arms)
            reward = float(arms[a] @ theta + args.noise * rng.standard_normal())
            for name, agent in others.items():
                window[name] += int(agent.act(arms) != a)
                agent.update(arms, a, reward)
            reference.update(arms, a, reward)
        for name in others:
            counts[name].append(window[name])
    print(
        f"d={d}, rank {args.rank}, K={K}, lam={args.lam}, beta={args.beta}, {T} rounds; "
        "rounds per window where the float32 agent's choice differs from float64 OFUL's "
        f"(shared trajectory), windows of {args.window}:"
    )
    for name, c in counts.items():
        print(f"  {name:>24}: {' '.join(f'{v:5d}' for v in c)}   total {sum(c)}")


if __name__ == "__main__":
    main()
