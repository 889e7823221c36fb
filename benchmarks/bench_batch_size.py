"""Per member-round CPU time of a batch of B runs against the same B runs one after another.

For each setting and B, the same B runs (seeds 0..B-1 of one agent config on one env, T rounds)
are played as one batched program (``execute_batch``: a vector env and a batched agent) and one
by one (``execute_run``), interleaved, best of ``--repeats``; each side's CPU time covers the
whole run (building the env and agent, the rounds, the records). Printed: both times and their
ratio (above 1: the batch is faster). This is what the planner's ``MIN_BATCH`` and
``SMALL_STATE`` (``linbandit_gym.batched``) rest on. 1 torch and 1 BLAS thread.

    python benchmarks/bench_batch_size.py                  # Synthetic d = 50 and MNIST, B in 2..32
    python benchmarks/bench_batch_size.py --setting mnist --sizes 2 8 19 38
    python benchmarks/bench_batch_size.py --backend torch  # the batches on torch (a GPU's backend)
    python benchmarks/bench_batch_size.py --setting mnist --agents SOFUL:100 --sizes 19

The runs one by one are on numpy (the CPU's backend) either way.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root

SETTINGS = {
    "synthetic": (
        {"id": "LinBandit-Synthetic-v0", "args": {"d": 50, "n_arms": 20}},
        [("OFUL", {}), ("SOFUL", {"sketch_size": 5})],
        400,
    ),
    "mnist": (
        {"id": "LinBandit-MNIST-v0", "args": {"dataset": "mnist", "target_class": 0}},
        [
            ("OFUL", {}),
            ("SOFUL", {"sketch_size": 20}),
            ("CBSCFD", {"sketch_size": 10}),
            ("SOFUL", {"sketch_size": 150}),
        ],
        300,
    ),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", choices=["all", *SETTINGS], default="all")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--backend",
        choices=("numpy", "torch"),
        default="numpy",
        help="the batches' backend: numpy (the CPU's, default) or torch (a GPU's, on the CPU)",
    )
    parser.add_argument(
        "--agents",
        nargs="+",
        metavar="NAME[:l]",
        help="only these agents of the setting, e.g. SOFUL:20 OFUL (default: all of them)",
    )
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from agents.sketches.backend import torch_on_cpu
    from linbandit_gym.experiments.config import parse_config
    from linbandit_gym.experiments.runner import execute_batch, execute_run

    warnings.simplefilter("ignore")  # sketch-size warnings of the small d
    with threadpool_limits(1):
        chosen = SETTINGS if args.setting == "all" else {args.setting: SETTINGS[args.setting]}
        for name, (env, agents, horizon) in chosen.items():
            for agent, extra in _chosen(agents, args.agents):
                for size in args.sizes:
                    agent_config = {"name": agent, "args": {"lam": 1.0, "beta": 0.1, **extra}}
                    cfg = parse_config(
                        {
                            "name": "b",
                            "seeds": size,
                            "horizon": horizon,
                            "envs": [env],
                            "agents": [agent_config],
                        }
                    )
                    specs = [spec.to_dict() for spec in cfg.runs]
                    best = {"alone": float("inf"), "batch": float("inf")}
                    for _ in range(args.repeats):
                        for mode in ("alone", "batch"):
                            start = time.process_time()
                            if mode == "alone":
                                for spec in specs:
                                    execute_run(spec)
                            else:
                                with torch_on_cpu(args.backend == "torch"):
                                    execute_batch(specs)
                            best[mode] = min(best[mode], time.process_time() - start)
                    per = {mode: 1e3 * value / (size * horizon) for mode, value in best.items()}
                    print(
                        f"{name:9s} {agent} {extra or ''} B={size:3d}: one by one "
                        f"(numpy) "
                        f"{per['alone']:.3f}, batched ({args.backend}) {per['batch']:.3f} ms per "
                        "member-round"
                        f" -> batch {best['alone'] / best['batch']:.2f}x",
                        flush=True,
                    )
    return 0


def _chosen(agents: list, names: list[str] | None) -> list:
    """The setting's ``(agent, extra)`` pairs, or ``names`` (``NAME`` or ``NAME:l``, the sketch
    size) with the setting's horizon."""
    if not names:
        return agents
    chosen = []
    for name in names:
        agent, _, size = name.partition(":")
        chosen.append((agent, {"sketch_size": int(size)} if size else {}))
    return chosen


if __name__ == "__main__":
    sys.exit(main())
