"""Final regret of every LinUCB agent per dtype, arm scale and ridge, on one small synthetic
problem.

The probe of the sketches' accuracy against OFUL's in the same dtype: Synthetic d = 10, K = 5,
T = 2000, beta = 0.1 (one seed); the agents see the env's unit-norm arms multiplied by
a scale (``--cells scale:lam ...``; the rewards, hence the regret, stay the env's). SOFUL and
CBSCFD with sketch sizes l > d hold the exact ``lam I + X^T X``, and DBSLinUCB's blocks are
exact until they close, so in exact arithmetic every sketched agent here plays as OFUL: any gap
is rounding. A cell is "beyond the dtype" when ``(lam + tr X^T X) / lam`` at the end exceeds
~1/eps of the dtype.

    python benchmarks/probe_numerics.py                       # the default grid
    python benchmarks/probe_numerics.py --cells 1e8:1 --dtypes float64   # scale:lam pairs
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
import gymnasium as gym  # noqa: E402

import linbandit_gym  # noqa: E402,F401  (registers the envs)
from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB  # noqa: E402


def agents(lam: float, dtype: torch.dtype, sizes=(20, 64), beta: float = 0.1) -> dict:
    out = {"OFUL": OFUL(lam=lam, beta=beta, dtype=dtype)}
    for l in sizes:
        out[f"SOFUL l={l}"] = SOFUL(lam=lam, beta=beta, sketch_size=l, dtype=dtype)
        out[f"CBSCFD l={l}"] = CBSCFD(lam=lam, beta=beta, sketch_size=l, dtype=dtype)
    out["DBSLinUCB-FD l0=2"] = DBSLinUCB(lam=lam, beta=beta, l0=2, eps=8.0, dtype=dtype)
    out["DBSLinUCB-RFD l0=2"] = DBSLinUCB(
        lam=lam, beta=beta, l0=2, eps=8.0, sketch="rfd", dtype=dtype
    )
    return out


def final_regret(
    agent, scale: float, horizon: int = 2000, seed: int = 0, d: int = 10, k: int = 5
) -> float:
    """Cumulative pseudo-regret after ``horizon`` rounds of Synthetic(d, K) with arms times
    ``scale``."""
    env = gym.make("LinBandit-Synthetic-v0", d=d, n_arms=k, horizon=horizon, noise_std=0.01)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed=seed)
    total = 0.0
    for _ in range(horizon):
        arms = obs.astype(np.float64) * scale
        a = agent.act(arms)
        obs_next, reward, _, truncated, info = env.step(a)
        agent.update(arms, a, reward)
        total += info["regret"]
        obs = obs_next
        if truncated:
            break
    return total


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--cells",
        nargs="+",
        default=["1:1e-4", "1:2e-4", "1:1e-6", "1:1e-8", "1e3:1e-4", "1e3:1", "1e8:1"],
        help="scale:lam pairs",
    )
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    p.add_argument("--horizon", type=int, default=2000)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for cell in args.cells:
        scale, lam = (float(v) for v in cell.split(":"))
        rows = {}
        for name in args.dtypes:
            dtype = getattr(torch, name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for label, agent in agents(lam, dtype).items():
                    t0 = time.perf_counter()
                    rows.setdefault(label, {})[name] = (
                        final_regret(agent, scale, args.horizon),
                        time.perf_counter() - t0,
                    )
        print(f"scale={scale:g} lam={lam:g}")
        for label, by in rows.items():
            cells = "  ".join(f"{n}: {r:9.2f}" for n, (r, _) in by.items())
            print(f"  {label:>20}  {cells}", flush=True)


if __name__ == "__main__":
    main()
