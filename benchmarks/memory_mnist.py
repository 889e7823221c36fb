"""Peak memory_bytes() of each agent on MNIST (T=2000, seed 0), next to Wen et al. (2025), Table 2.

    python benchmarks/memory_mnist.py [--horizon 2000]

Prints peak KiB per agent (float64 state, the default on CPU) and the paper's number where it
has one (v2 Table 2, KB: OFUL 4802.0, SOFUL-20 682.9, SOFUL-100 1528.3, SOFUL-150 2529.3,
DBSLinUCB 2842.0).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
import linbandit_gym  # noqa: E402
from agents import OFUL, SOFUL, DBSLinUCB  # noqa: E402

PAPER = {"OFUL": 4802.0, "SOFUL l=20": 682.9, "SOFUL l=100": 1528.3, "SOFUL l=150": 2529.3, "DBSLinUCB": 2842.0}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--horizon", type=int, default=2000)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    agents = {
        "OFUL": OFUL(lam=0.2, beta=0.01),
        "SOFUL l=20": SOFUL(lam=0.2, beta=0.01, sketch_size=20),
        "SOFUL l=100": SOFUL(lam=0.2, beta=0.01, sketch_size=100),
        "SOFUL l=150": SOFUL(lam=0.2, beta=0.01, sketch_size=150),
        "DBSLinUCB": DBSLinUCB(lam=0.2, beta=0.01, l0=50, eps=8.0),
        "DBSLinUCB literal cap": DBSLinUCB(lam=0.2, beta=0.01, l0=50, eps=8.0, memory_cap=False),
    }
    print(f"MNIST, T={args.horizon}, seed 0, float64; peak memory_bytes() in KiB (paper: v2 Table 2, KB)")
    print(f"{'agent':>22} {'peak KiB':>9} {'paper KB':>9} {'final regret':>13}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, agent in agents.items():
            rec = linbandit_gym.run("LinBandit-MNIST-v0", agent, seeds=[0], env_kwargs={"horizon": args.horizon},
                                    progress=False)
            peak = rec["memory_bytes"].max() / 1024
            paper = PAPER.get(name)
            print(f"{name:>22} {peak:>9.1f} {'' if paper is None else f'{paper:.1f}':>9} "
                  f"{rec['cumulative_regret'].iloc[-1]:>13.1f}", flush=True)


if __name__ == "__main__":
    main()
