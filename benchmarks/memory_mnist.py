"""Peak memory_bytes() of each agent on MNIST (T=2000, seed 0), next to Wen et al. (2025), Table 2.

    python benchmarks/memory_mnist.py [--horizon 2000]

Prints a Markdown table (the one on docs/performance.md, "Memory"): peak KiB per agent (float64
state, the default on CPU), the paper's number where it has one (v2 Table 2, KB: OFUL 4802.0,
SOFUL-20 682.9, SOFUL-100 1528.3, SOFUL-150 2529.3, DBSLinUCB 2842.0) and the final regret. Every
figure is the same on every run (no time is measured), so ``python scripts/doc_figures.py --check
memory_mnist`` holds the page to the code.
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

COMMON = {"lam": 0.2, "beta": 0.01}
#: row label -> (agent, the paper's KB or None)
AGENTS = {
    "OFUL": (lambda: OFUL(**COMMON), 4802.0),
    "SOFUL l = 20": (lambda: SOFUL(sketch_size=20, **COMMON), 682.9),
    "SOFUL l = 100": (lambda: SOFUL(sketch_size=100, **COMMON), 1528.3),
    "SOFUL l = 150": (lambda: SOFUL(sketch_size=150, **COMMON), 2529.3),
    "DBSLinUCB l0 = 50, eps = 8": (lambda: DBSLinUCB(l0=50, eps=8.0, **COMMON), 2842.0),
    "DBSLinUCB l0 = 50, eps = 8, the paper's cap alone (`memory_cap=False, time_cap=False`)": (
        lambda: DBSLinUCB(l0=50, eps=8.0, memory_cap=False, time_cap=False, **COMMON),
        None,
    ),
}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--horizon", type=int, default=2000)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print(
        f"MNIST, T={args.horizon}, seed 0, float64; peak memory_bytes() in KiB "
        "(paper: v2 Table 2, KB)\n"
    )
    print("| agent | peak KiB here | paper KB | final regret here |")
    print("|---|---|---|---|")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (make, paper) in AGENTS.items():
            rec = linbandit_gym.run(
                "LinBandit-MNIST-v0",
                make(),
                seeds=[0],
                env_kwargs={"horizon": args.horizon},
                progress=False,
            )
            peak = rec["memory_bytes"].max() / 1024
            paper_text = "" if paper is None else f"{paper:.1f}"
            print(
                f"| {name} | {peak:.1f} | {paper_text} | {rec['cumulative_regret'].iloc[-1]:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
