"""OFUL ms/round: our torch agent against a plain numpy Sherman-Morrison OFUL, same data.

Both play the same pre-drawn arm stream with the same rewards (linear + Gaussian noise),
so they do the same algorithm on the same numbers; the script also checks they chose the same
arms. Torch and numpy runs are interleaved (--repeats times each, the best kept), so both see
the same machine load, and BLAS threads are pinned to --threads on both sides.

    python benchmarks/bench_oful.py            # d in {256, 784, 2048}, K in {10, 100}
    python benchmarks/bench_oful.py --quick    # fewer rounds, best of 2
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
from agents import OFUL  # noqa: E402


class NumpyOFUL:
    """Textbook OFUL in numpy: A^-1 by Sherman-Morrison, constant beta."""

    def __init__(self, d: int, lam: float, beta: float):
        self.A_inv = np.eye(d) / lam
        self.b = np.zeros(d)
        self.theta = np.zeros(d)
        self.beta = beta

    def act(self, arms: np.ndarray) -> int:
        width = np.sqrt(np.maximum(np.einsum("kd,kd->k", arms @ self.A_inv, arms), 0.0))
        return int(np.argmax(arms @ self.theta + self.beta * width))

    def update(self, x: np.ndarray, reward: float) -> None:
        Ax = self.A_inv @ x
        self.A_inv -= np.outer(Ax, Ax) / (1.0 + x @ Ax)
        self.b += reward * x
        self.theta = self.A_inv @ self.b


def stream(d: int, k: int, rounds: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    arms = rng.standard_normal((rounds, k, d))
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    noise = 0.1 * rng.standard_normal(rounds)
    return arms, theta, noise


def time_numpy(arms, theta, noise, lam, beta):
    agent = NumpyOFUL(arms.shape[2], lam, beta)
    actions = []
    start = time.perf_counter()
    for t in range(arms.shape[0]):
        a = agent.act(arms[t]) if t else 0  # round 1 is an exact tie (theta=0, unit arms): fix it
        agent.update(arms[t, a], float(arms[t, a] @ theta + noise[t]))
        actions.append(a)
    return (time.perf_counter() - start) / arms.shape[0] * 1e3, actions


def time_torch(arms, tensors, theta, noise, lam, beta):
    agent = OFUL(lam=lam, beta=beta, d=arms.shape[2])
    actions = []
    start = time.perf_counter()
    for t in range(arms.shape[0]):
        a = agent.act(tensors[t]) if t else 0
        agent.update(tensors[t], a, float(arms[t, a] @ theta + noise[t]))
        actions.append(a)
    return (time.perf_counter() - start) / arms.shape[0] * 1e3, actions


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds per setting, best of 2")
    parser.add_argument("--dims", type=int, nargs="+", default=[256, 784, 2048])
    parser.add_argument("--arms", type=int, nargs="+", default=[10, 100])
    parser.add_argument(
        "--threads", type=int, default=1, help="BLAS threads for torch and numpy (default 1)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repeats per side, torch and numpy interleaved; the best is kept "
        "(default 3, quick 2)",
    )
    args = parser.parse_args(argv)
    repeats = args.repeats or (2 if args.quick else 3)
    lam, beta = 1.0, 0.1
    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, numpy {np.__version__}, {args.threads} BLAS thread(s); "
        f"OFUL float64 on CPU; lam={lam}, beta={beta}; best of {repeats} interleaved repeats"
    )
    print(
        f"{'d':>6} {'K':>5} {'rounds':>7} {'numpy ms':>9} {'torch ms':>9} {'numpy/torch':>12} "
        f"{'same arms':>10}"
    )
    with threadpool_limits(limits=args.threads):
        for d in args.dims:
            for k in args.arms:
                base = 60 if args.quick else 300
                rounds = max(20, int(base * (784 / d) ** 1.5)) if d > 784 else base
                arms, theta, noise = stream(d, k, rounds)
                tensors = torch.as_tensor(
                    arms
                )  # conversion outside the timed loop, like the numpy side
                time_torch(arms[:5], tensors[:5], theta, noise, lam, beta)  # warm-up
                np_ms = torch_ms = float("inf")
                for _ in range(repeats):  # interleaved, so both see the same machine load
                    ms, torch_actions = time_torch(arms, tensors, theta, noise, lam, beta)
                    torch_ms = min(torch_ms, ms)
                    ms, np_actions = time_numpy(arms, theta, noise, lam, beta)
                    np_ms = min(np_ms, ms)
                print(
                    f"{d:>6} {k:>5} {rounds:>7} {np_ms:>9.3f} {torch_ms:>9.3f} "
                    f"{np_ms / torch_ms:>12.2f} {str(np_actions == torch_actions):>10}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
