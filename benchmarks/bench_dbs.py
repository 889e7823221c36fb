"""DBSLinUCB ms per round (act + update): ours (torch) vs plain numpy (numpy_dbs.py) vs our OFUL.

Every agent plays the same stream (K unit-norm Gaussian arms a round, drawn from a seeded
generator; reward x^T theta* + noise of the chosen arm), so the torch and numpy DBSLinUCB do
the same arithmetic; the "same arms" column checks they chose the same arm every round. All
numbers are measured in one run of this script. The DBS setting is the paper's (l0 = 50,
eps = 8): with unit rows a block absorbs >= 400 rows, so the default rounds stay in the
sketched regime (the column "rows" is the sketch size at the end) and the comparison with
OFUL's O(d^2) round is the one the paper makes. "growth" prints ms/round relative to the
smallest d next to the ratio of the d's: DBS grows ~linearly in d at fixed l0, OFUL ~d^2.

    python benchmarks/bench_dbs.py          # d in {784, 2048, 8192}, 600 rounds, best of 3
    python benchmarks/bench_dbs.py --quick  # 200 rounds, best of 2; OFUL only 5 rounds at d = 8192

OFUL keeps a 512 MiB inverse at d = 8192 and costs ~d^2 K flops a round, so at d > 2048 it runs
only --oful-rounds-big rounds (its per-round cost does not depend on the round).
BLAS threads are pinned to --threads for both torch and numpy. Torch and numpy DBSLinUCB runs
are interleaved (--repeats times each, the best kept), so both see the same machine load.
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_dbs import NumpyDBSLinUCB  # noqa: E402

from agents import OFUL, DBSLinUCB  # noqa: E402


class Stream:
    """The same arm sets and rewards for every agent, generated round by round (no T x K x d
    array)."""

    def __init__(self, d: int, k: int, seed: int = 0):
        self.d, self.k, self.seed = d, k, seed
        rng = np.random.default_rng(seed)
        self.theta = rng.standard_normal(d)
        self.theta /= np.linalg.norm(self.theta)

    def rounds(self, n: int):
        rng = np.random.default_rng(self.seed + 1)
        for _ in range(n):
            arms = rng.standard_normal((self.k, self.d))
            arms /= np.linalg.norm(arms, axis=1, keepdims=True)
            yield arms, 0.1 * rng.standard_normal()


def play(agent, stream: Stream, n: int, kind: str):
    """Seconds spent in act + update per round (ms), the actions, the agent."""
    actions, spent = [], 0.0
    for t, (arms, noise) in enumerate(stream.rounds(n)):
        obs = torch.from_numpy(arms) if kind == "torch" else arms
        start = time.perf_counter()
        a = agent.act(obs) if t else 0  # round 1 is an exact tie (theta_hat = 0, unit arms): fix it
        reward = float(arms[a] @ stream.theta + noise)
        if kind == "torch":
            agent.update(obs, a, reward)
        else:
            agent.update(arms[a], reward)
        spent += time.perf_counter() - start
        actions.append(a)
    return spent / n * 1e3, actions, agent


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="fewer rounds per setting")
    p.add_argument("--dims", type=int, nargs="+", default=[784, 2048, 8192])
    p.add_argument("--l0", type=int, default=50)
    p.add_argument("--eps", type=float, default=8.0)
    p.add_argument("--sketch", choices=["fd", "rfd"], default="fd")
    p.add_argument("--arms", type=int, default=20, help="arms per round K")
    p.add_argument(
        "--rounds", type=int, default=None, help="rounds per setting (default 600, quick 200)"
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
        help="timed repeats of each DBSLinUCB, torch and numpy interleaved; the best is kept "
        "(default 3, quick 2)",
    )
    args = p.parse_args(argv)
    rounds = args.rounds or (200 if args.quick else 600)
    repeats = args.repeats or (2 if args.quick else 3)
    oful_big = args.oful_rounds_big or (5 if args.quick else 20)
    torch.set_num_threads(args.threads)
    kw = dict(lam=1.0, beta=0.1)
    print(
        f"DBSLinUCB-{args.sketch.upper()} l0={args.l0} eps={args.eps}, K={args.arms} arms, "
        f"{rounds} rounds, {args.threads} BLAS thread(s), torch {torch.__version__} on CPU, "
        f"float64; ms/round = act + update; best of {repeats} interleaved repeats"
    )
    header = (
        f"{'d':>6} {'rows':>5} {'DBS torch':>10} {'DBS numpy':>10} {'numpy/torch':>12} "
        f"{'same arms':>10} {'OFUL':>9} {'OFUL/DBS':>9}"
    )
    print(header)
    print("-" * len(header))
    results = []
    with threadpool_limits(limits=args.threads):
        for d in args.dims:
            stream = Stream(d, args.arms)
            play(
                DBSLinUCB(l0=args.l0, eps=args.eps, sketch=args.sketch, d=d, **kw),
                stream,
                5,
                "torch",
            )  # warm-up
            ms_t = ms_n = float("inf")
            for _ in range(repeats):  # interleaved, so both see the same machine load
                ms, act_t, agent = play(
                    DBSLinUCB(l0=args.l0, eps=args.eps, sketch=args.sketch, d=d, **kw),
                    stream,
                    rounds,
                    "torch",
                )
                ms_t = min(ms_t, ms)
                ms, act_n, _ = play(
                    NumpyDBSLinUCB(d, args.l0, args.eps, robust=args.sketch == "rfd", **kw),
                    stream,
                    rounds,
                    "numpy",
                )
                ms_n = min(ms_n, ms)
            n_oful = rounds if d <= 2048 else min(rounds, oful_big)
            ms_o, _, _ = play(OFUL(d=d, **kw), stream, n_oful, "torch")
            same = float(np.mean(np.asarray(act_t) == np.asarray(act_n)))
            results.append((d, ms_t, ms_o))
            oful_note = "" if n_oful == rounds else f"  (OFUL: {n_oful} rounds)"
            print(
                f"{d:>6} {agent.sketch_size:>5} {ms_t:>10.2f} {ms_n:>10.2f} {ms_n / ms_t:>12.2f} "
                f"{same:>10.1%} {ms_o:>9.2f} {ms_o / ms_t:>9.1f}{oful_note}",
                flush=True,
            )
    d0, t0, o0 = results[0]
    print("\ngrowth with d at fixed l0 (relative to the smallest d):")
    print(f"{'d':>6} {'d ratio':>8} {'DBS ms ratio':>13} {'OFUL ms ratio':>14}")
    for d, ms_t, ms_o in results:
        print(f"{d:>6} {d / d0:>8.2f} {ms_t / t0:>13.2f} {ms_o / o0:>14.2f}")


if __name__ == "__main__":
    main()
