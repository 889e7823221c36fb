"""OFUL's exact inverse against a high-precision OFUL: ridge x arm scale x dtype.

OFUL keeps ``A^-1`` (``A = lam I + X^T X``) through Sherman-Morrison updates. An update whose
played arm has width ``q = x^T A^-1 x`` subtracts two numbers of size ``q`` to leave one of size
``q / (1 + q)`` in the direction of ``x``, so it leaves a relative error of about ``eps (1 + q)``
there (``agents.sketches.exact``); with ``lam`` far below ``||x||^2`` the first rows have
``q ~ ||x||^2 / lam``. Scaling the arms by ``s`` is the problem with ridge ``lam / s^2``, so the
three reproducers below are one case: ``q ~ 1e14`` on the first rows.

Each cell plays Synthetic (d = 8, K = 20, T = 600, beta = 0.1) with the env's unit arms times
``scale`` (the rewards, hence the regret, stay the env's) for seeds 0 and 1, once with OFUL and
once with the same rule computed in 50-digit arithmetic (mpmath), each on its own copy of the
env. Printed per cell: both final regrets (mean over the seeds), the rounds where both chose the
same arm (the arm sets do not depend on the choices; after a first disagreement the histories
differ, so agreement is expected to fall), the first round they disagree, and whether OFUL
raised a ``PrecisionWarning``.

    python benchmarks/oful_precision.py                  # the full table
    python benchmarks/oful_precision.py --quick          # the reproducers and their neighbours
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import mpmath as mp
import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
import gymnasium as gym  # noqa: E402

import linbandit_gym  # noqa: E402,F401  (registers the envs)
from agents import OFUL  # noqa: E402
from agents.sketches import PrecisionWarning  # noqa: E402

D, K, T, BETA = 8, 20, 600, 0.1


class ReferenceOFUL:
    """OFUL's rule in ``digits``-digit arithmetic: ``A^-1`` by Sherman-Morrison (exact at this
    precision for these sizes), scores ``x^T A^-1 b + beta sqrt(x^T A^-1 x)``, first maximum."""

    def __init__(self, lam: float, d: int, beta: float = BETA, digits: int = 50):
        self.ctx = mp.MPContext()
        self.ctx.dps = digits
        self.inv = self.ctx.eye(d) / self.ctx.mpf(lam)
        self.b = self.ctx.matrix(d, 1)
        self.beta = self.ctx.mpf(beta)

    def act(self, arms: np.ndarray) -> int:
        ctx = self.ctx
        theta = self.inv * self.b
        best, best_score = 0, None
        for k, row in enumerate(arms.tolist()):
            x = ctx.matrix(row)
            width = (x.T * self.inv * x)[0]
            score = (x.T * theta)[0] + self.beta * ctx.sqrt(width)
            if best_score is None or score > best_score:
                best, best_score = k, score
        return best

    def update(self, arms: np.ndarray, action: int, reward: float) -> None:
        ctx = self.ctx
        x = ctx.matrix(arms[action].tolist())
        u = self.inv * x
        self.inv = self.inv - (u * u.T) / (1 + (x.T * u)[0])
        self.b = self.b + x * ctx.mpf(reward)


def play(agent, scale: float, seed: int) -> tuple[float, list[int], bool]:
    """Final regret, the choices, and whether a PrecisionWarning was raised."""
    env = gym.make("LinBandit-Synthetic-v0", d=D, n_arms=K, horizon=T)
    obs, _ = env.reset(seed=seed)
    if hasattr(agent, "reset"):
        agent.reset(seed=seed)
    total, choices = 0.0, []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(T):
            arms = np.asarray(obs, dtype=np.float64) * scale
            a = agent.act(arms)
            obs, reward, _, _, info = env.step(a)
            agent.update(arms, a, float(reward))
            total += info["regret"]
            choices.append(a)
    return total, choices, any(issubclass(w.category, PrecisionWarning) for w in caught)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lams", type=float, nargs="+", default=[1e-4, 1e-6, 1e-8, 1e-10, 1e-12, 1e-13, 1e-14]
    )
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 1e3, 1e4])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the reproducers (1e-14 x 1, 1e-8 x 1e3, 1e-6 x 1e4) and one ridge "
        "above each, float64",
    )
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    cells = [(lam, s) for s in args.scales for lam in args.lams]
    dtypes = args.dtypes
    if args.quick:
        cells = [(1e-14, 1.0), (1e-12, 1.0), (1e-8, 1e3), (1e-6, 1e3), (1e-6, 1e4), (1e-4, 1e4)]
        dtypes = ["float64"]
    torch.set_num_threads(args.threads)
    print(f"Synthetic d={D} K={K} T={T} beta={BETA}, seeds {args.seeds}; reference: 50 digits")
    print(
        f"{'lam':>7} {'scale':>6} {'dtype':>8} {'regret':>8} {'reference':>9} "
        f"{'same arm':>8} {'first diff':>10} {'warned':>6}"
    )
    start = time.perf_counter()
    with threadpool_limits(limits=args.threads):
        for lam, scale in cells:
            ref = {s: play(ReferenceOFUL(lam, D), scale, s) for s in args.seeds}
            for name in dtypes:
                dtype = getattr(torch, name)
                ours = {
                    s: play(OFUL(lam=lam, beta=BETA, dtype=dtype), scale, s) for s in args.seeds
                }
                same = np.mean([np.mean(np.equal(ours[s][1], ref[s][1])) for s in args.seeds])
                first = min(
                    (
                        int(np.argmin(np.equal(ours[s][1], ref[s][1])))
                        for s in args.seeds
                        if ours[s][1] != ref[s][1]
                    ),
                    default=None,
                )
                print(
                    f"{lam:>7.0e} {scale:>6.0e} {name:>8} "
                    f"{np.mean([ours[s][0] for s in args.seeds]):>8.2f} "
                    f"{np.mean([ref[s][0] for s in args.seeds]):>9.2f} {same:>8.1%} "
                    f"{'-' if first is None else first:>10} "
                    f"{'yes' if any(ours[s][2] for s in args.seeds) else 'no':>6}",
                    flush=True,
                )
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
