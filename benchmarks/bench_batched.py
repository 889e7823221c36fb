"""Batched agents vs a Python loop over seeds: member-rounds per second, same data, same choices.

For B in {1, 8, 32, 128} independent runs (seeds), both sides play the same pre-drawn arm
sets and rewards: the loop keeps B unbatched agents and calls ``act``/``update`` on each in
turn; the batched side keeps one batched agent (``agents.batched``) and makes one call per
round for all B. Reported: member-rounds per second (B x rounds / agent seconds), the
speed-up batched/loop, and whether both chose the same arms.

Settings (CPU, float64): OFUL d=500 with K=100 arms (the paper's synthetic set-up), SOFUL
l=50 and DBSLinUCB (l0=50, eps=8, FD blocks) at d=784 with K=10 arms (MNIST-sized). Each
member gets its own unit-norm arm sets and theta*. For DBSLinUCB the timed rounds are its
first-block phase (block 0 closes only after BlockSize reaches eps l0 = 400). The sketched
settings run 110 untimed warm-up rounds first, so that the timed rounds see full sketches
(the 2l-row FD buffer cycling between l - 1 and 2l rows), not the cheap first rounds.
Environments are not timed (the arm sets are drawn beforehand).

    python benchmarks/bench_batched.py --quick      # fewer rounds
    python benchmarks/bench_batched.py --threads 2  # torch and BLAS threads (default 1: shared box)
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
from agents import OFUL, SOFUL, DBSLinUCB  # noqa: E402
from agents.batched import batched  # noqa: E402


class Stream:
    """Per-member arm sets from a shared pool (member i, round t -> pool[(7919 i + 31 t) % P])
    and rewards."""

    def __init__(self, d: int, k: int, n_members: int, pool: int = 512, seed: int = 0):
        rng = np.random.default_rng(seed)
        arms = rng.standard_normal((pool, k, d))
        arms /= np.linalg.norm(arms, axis=2, keepdims=True)
        arms *= rng.uniform(0.9, 1.0, (pool, k, 1))  # norms <= 1, never exactly tied
        self.pool = torch.as_tensor(arms)  # float64; each agent converts to its dtype
        theta = rng.standard_normal((n_members, d))
        self.theta = torch.as_tensor(theta / np.linalg.norm(theta, axis=1, keepdims=True))
        self.noise = rng.standard_normal((n_members, 100_000)) * 0.1
        self.P = pool

    def arms(self, t: int, members: np.ndarray) -> torch.Tensor:
        return self.pool[(7919 * members + 31 * t) % self.P]  # (B, K, d)

    def rewards(self, t: int, members: np.ndarray, chosen: torch.Tensor) -> np.ndarray:
        return (chosen * self.theta[members]).sum(dim=1).numpy() + self.noise[members, t]


def time_loop(make, stream: Stream, B: int, rounds: int, warmup: int):
    members = np.arange(B)
    agents = [make() for _ in range(B)]
    for i, agent in enumerate(agents):
        agent.reset(seed=i)
    actions = np.zeros((warmup + rounds, B), dtype=np.int64)
    elapsed = 0.0
    for t in range(warmup + rounds):
        if t == warmup:
            elapsed = 0.0  # the warm-up rounds fill the sketches: time the steady state
        arms = stream.arms(t, members)  # drawn outside the timed region
        start = time.perf_counter()
        for i, agent in enumerate(agents):
            actions[t, i] = agent.act(arms[i])
        elapsed += time.perf_counter() - start
        rewards = stream.rewards(t, members, arms[members, actions[t]])
        start = time.perf_counter()
        for i, agent in enumerate(agents):
            agent.update(arms[i], int(actions[t, i]), float(rewards[i]))
        elapsed += time.perf_counter() - start
    return elapsed, actions


def time_batched(make, stream: Stream, B: int, rounds: int, warmup: int):
    members = np.arange(B)
    agent = batched(make(), B)
    agent.reset(seed=list(range(B)))
    actions = np.zeros((warmup + rounds, B), dtype=np.int64)
    elapsed = 0.0
    for t in range(warmup + rounds):
        if t == warmup:
            elapsed = 0.0
        arms = stream.arms(t, members)
        start = time.perf_counter()
        actions[t] = agent.act(arms).numpy()
        elapsed += time.perf_counter() - start
        rewards = stream.rewards(t, members, arms[members, actions[t]])
        start = time.perf_counter()
        agent.update(arms, torch.as_tensor(actions[t]), rewards)
        elapsed += time.perf_counter() - start
    return elapsed, actions


SETTINGS = {
    # name: (agent keywords -> factory, d, K, timed rounds, quick timed rounds,
    #        untimed warm-up rounds)
    "OFUL d=500": (lambda **kw: OFUL(lam=1.0, beta=0.1, **kw), 500, 100, 20, 8, 2),
    "SOFUL d=784 l=50": (
        lambda **kw: SOFUL(lam=1.0, beta=0.1, sketch_size=50, **kw),
        784,
        10,
        120,
        30,
        110,
    ),
    "DBSLinUCB d=784 l0=50": (
        lambda **kw: DBSLinUCB(lam=1.0, beta=0.1, l0=50, eps=8.0, **kw),
        784,
        10,
        120,
        30,
        110,
    ),
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds per setting")
    parser.add_argument(
        "--batches", type=int, nargs="+", default=[1, 8, 32, 128], help="values of B"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch and BLAS threads for both sides (default 1)"
    )
    parser.add_argument(
        "--only", nargs="+", choices=list(SETTINGS), default=list(SETTINGS), help="settings to run"
    )
    parser.add_argument(
        "--dtype",
        choices=["float64", "float32"],
        default="float64",
        help="both sides (default float64)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    threadpool_limits(
        limits=args.threads, user_api="blas"
    )  # numpy's BLAS too (the project's thread policy)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.dtype} on CPU; "
        "member-rounds/s = B x timed rounds / agent seconds (after untimed warm-up rounds)"
    )
    print(
        f"{'setting':<24} {'B':>4} {'rounds':>6} {'loop r/s':>10} {'batched r/s':>12} "
        f"{'speed-up':>9} {'same arms':>10}"
    )
    for name in args.only:
        factory, d, k, rounds, quick_rounds, warmup = SETTINGS[name]
        make = lambda factory=factory: factory(dtype=args.dtype)  # noqa: E731
        rounds = quick_rounds if args.quick else rounds
        stream = Stream(d, k, max(args.batches))
        time_batched(make, stream, 2, 3, 0)  # warm-up (allocations, lazy imports)
        for B in args.batches:
            loop_s, loop_actions = time_loop(make, stream, B, rounds, warmup)
            batch_s, batch_actions = time_batched(make, stream, B, rounds, warmup)
            loop_rate, batch_rate = B * rounds / loop_s, B * rounds / batch_s
            same = bool(np.array_equal(loop_actions, batch_actions))
            print(
                f"{name:<24} {B:>4} {rounds:>6} {loop_rate:>10.1f} {batch_rate:>12.1f} "
                f"{batch_rate / loop_rate:>8.2f}x {str(same):>10}",
                flush=True,
            )


if __name__ == "__main__":
    main()
