"""SOFUL / CBSCFD ms per round (act + update): ours (torch) vs plain numpy vs our OFUL, same data.

Every agent plays the same pre-drawn stream (K unit-norm Gaussian arms a round, reward
x^T theta* + noise of the chosen arm), so the torch and numpy versions of an algorithm do
identical arithmetic; the "same arms" column checks that they chose the same arm every round.
All numbers come from one run. Rounds are long enough to include several FD reductions
(one every l + 1 rows after the first 2l), so ms/round is the amortised cost.

    python benchmarks/bench_fd_agents.py          # d in {784, 2048, 8192}, l in {20, 50, 100}
    python benchmarks/bench_fd_agents.py --quick  # 220 rounds, best of 2; OFUL at d=8192 5 rounds

OFUL is O(d^2) per round (a 512 MiB inverse at d=8192), so at d=8192 it runs only a few rounds
(--oful-rounds-big). BLAS threads are pinned to --threads for both torch and numpy.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_fd import NumpySketchedUCB  # noqa: E402

from agents import CBSCFD, OFUL, SOFUL  # noqa: E402


def stream(d: int, k: int, rounds: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    arms = rng.standard_normal((rounds, k, d))
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    noise = 0.1 * rng.standard_normal(rounds)
    return arms, theta, noise


def run_numpy(agent, arms, theta, noise):
    actions = []
    start = time.perf_counter()
    for t in range(arms.shape[0]):
        a = agent.act(arms[t]) if t else 0  # round 1 is an exact tie (theta = 0, unit arms): fix it
        agent.update(arms[t, a], float(arms[t, a] @ theta + noise[t]))
        actions.append(a)
    return (time.perf_counter() - start) / arms.shape[0] * 1e3, actions


def run_torch(agent, arms, tensors, theta, noise):
    actions = []
    start = time.perf_counter()
    for t in range(arms.shape[0]):
        a = agent.act(tensors[t]) if t else 0
        agent.update(tensors[t], a, float(arms[t, a] @ theta + noise[t]))
        actions.append(a)
    return (time.perf_counter() - start) / arms.shape[0] * 1e3, actions


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="fewer rounds per setting")
    p.add_argument("--dims", type=int, nargs="+", default=[784, 2048, 8192])
    p.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 100])
    p.add_argument("--arms", type=int, default=20, help="arms per round K")
    p.add_argument(
        "--rounds", type=int, default=None, help="rounds per setting (default 600, quick 260)"
    )
    p.add_argument(
        "--oful-rounds-big",
        type=int,
        default=None,
        help="OFUL rounds at d > 2048 (default 20, quick 5)",
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repeats per agent, torch and numpy interleaved; the best is kept "
        "(default 3, quick 2)",
    )
    args = p.parse_args(argv)
    rounds = args.rounds or (220 if args.quick else 600)
    repeats = args.repeats or (2 if args.quick else 3)
    oful_big = args.oful_rounds_big or (5 if args.quick else 20)
    lam, beta = 1.0, 0.1
    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, numpy {np.__version__}, {args.threads} BLAS thread(s); "
        f"float64 CPU; K={args.arms} arms, lam={lam}, beta={beta}, {rounds} rounds "
        f"(OFUL: {rounds} at d <= 2048, {oful_big} above); best of {repeats} interleaved repeats; "
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}"
    )
    header = (
        f"{'d':>5} {'l':>4} | {'SOFUL':>7} {'np':>7} {'np/ours':>7} {'same':>5} | "
        f"{'CBSCFD':>7} {'np':>7} {'np/ours':>7} {'same':>5} | {'OFUL':>8} {'OFUL/SOFUL':>10}"
    )
    print("ms/round (act + update)")
    print(header)
    print("-" * len(header))
    results: dict[tuple[int, int], float] = {}
    with threadpool_limits(limits=args.threads):
        for d in args.dims:
            arms, theta, noise = stream(d, args.arms, rounds)
            tensors = torch.as_tensor(arms)  # conversion outside the timed loops
            n_oful = rounds if d <= 2048 else oful_big
            oful_ms, _ = run_torch(
                OFUL(lam=lam, beta=beta, d=d), arms[:n_oful], tensors[:n_oful], theta, noise
            )
            for l in args.sizes:
                row = []
                for cls, robust in ((SOFUL, False), (CBSCFD, True)):
                    run_torch(
                        cls(lam=lam, beta=beta, sketch_size=l, d=d),
                        arms[:5],
                        tensors[:5],
                        theta,
                        noise,
                    )  # warm-up
                    ours = base = float("inf")
                    for _ in range(repeats):  # interleaved, so both see the same machine load
                        ms, a_ours = run_torch(
                            cls(lam=lam, beta=beta, sketch_size=l, d=d), arms, tensors, theta, noise
                        )
                        ours = min(ours, ms)
                        ms, a_np = run_numpy(
                            NumpySketchedUCB(d, l, lam, beta, robust), arms, theta, noise
                        )
                        base = min(base, ms)
                    row.append((ours, base, a_ours == a_np))
                results[(d, l)] = row[0][0]
                (s_ms, s_np, s_same), (c_ms, c_np, c_same) = row
                print(
                    f"{d:>5} {l:>4} | {s_ms:>7.3f} {s_np:>7.3f} {s_np / s_ms:>7.2f} "
                    f"{str(s_same):>5} | {c_ms:>7.3f} {c_np:>7.3f} {c_np / c_ms:>7.2f} "
                    f"{str(c_same):>5} | {oful_ms:>8.3f} {oful_ms / s_ms:>10.1f}"
                )
    print()
    print(
        "growth with d at fixed l (SOFUL, ours): ms/round relative to the smallest d; "
        "linear => ratio ~ d ratio"
    )
    d0 = args.dims[0]
    print(
        f"{'l':>4} "
        + " ".join(f"{'d=' + str(d):>16}" for d in args.dims)
        + f" {'log-log slope':>14}"
    )
    for l in args.sizes:
        cells = [
            f"{results[(d, l)] / results[(d0, l)]:>6.2f}x (d {d / d0:>4.1f}x)" for d in args.dims
        ]
        dl = args.dims[-1]
        slope = (
            math.log(results[(dl, l)] / results[(d0, l)]) / math.log(dl / d0)
            if dl != d0
            else float("nan")
        )
        print(f"{l:>4} " + " ".join(f"{c:>16}" for c in cells) + f" {slope:>14.2f}")


if __name__ == "__main__":
    main()
