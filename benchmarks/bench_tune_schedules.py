"""Successive halving against the paper's full grid: the pair each picks, how both picks do on the
evaluation seeds, and what each tuning cost.

For a shipped experiment config (default ``mnist``: the paper's beta x lambda grid, 45 pairs, for
the 7 agents of its ``tune:`` section, 2 tuning seeds, T = 2000), ``linbandit tune`` runs twice,
``--schedule halving`` into ``OUT/halving`` and ``--schedule grid`` into ``OUT/grid`` (both
resumable: a rerun with the same ``--out`` plays only what is missing). Then every tuned agent is
evaluated with the pair of each schedule on the config's own seeds and horizon (the evaluation
seeds, not the tuning ones) in one sweep, ``OUT/eval`` (a pair both schedules picked runs once).

Printed per agent: the two picks; the final regret of each pick on the evaluation seeds, mean
and standard error over the seeds, and whether they are equal or within one standard error of
each other; and the tuning cost of each schedule: the rounds played over every pair and seed and
the agents' CPU seconds in ``act``/``update``. Then each tuning's whole CPU time as it printed it.

    python benchmarks/bench_tune_schedules.py --workers 2                  # hours on 2 cores
    python benchmarks/bench_tune_schedules.py --experiment mnist --quick   # mnist-quick's grid
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root

SCHEDULES = ("halving", "grid")


def _evaluation_config(raw: dict, picks: dict[str, dict]) -> dict:
    """The config's envs, seeds and horizon, with one agent entry per (tuned agent, distinct pick):
    labelled ``AGENT | halving`` / ``AGENT | grid`` / ``AGENT | both``."""
    from linbandit_gym.experiments.config import parse_config

    entries = []
    by_label = {spec.agent_label: spec for spec in parse_config(raw).runs}
    for agent, schedules in picks.items():
        spec = by_label[agent]
        args = dict(spec.config["agent"]["args"])
        distinct: dict[tuple, list[str]] = {}
        for schedule, values in schedules.items():
            distinct.setdefault((values.get("beta"), values.get("lam")), []).append(schedule)
        for (beta, lam), names in distinct.items():
            tag = "both" if len(names) == 2 else names[0]
            entries.append(
                {
                    "name": spec.config["agent"]["name"],
                    "family": spec.family,
                    "args": {**args, "beta": beta, "lam": lam},
                    "label": f"{agent} | {tag}".replace("{", "{{").replace("}", "}}"),
                }
            )
    cfg = {key: raw[key] for key in ("seeds", "horizon", "envs") if key in raw}
    return {"name": f"{raw.get('name', 'config')}-tune-schedules", **cfg, "agents": entries}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="mnist")
    parser.add_argument("--quick", action="store_true", help="the experiment's -quick config")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=None, help="default runs/tune-schedules-EXPERIMENT")
    args = parser.parse_args(argv)
    from linbandit_gym.experiments.config import load_config
    from linbandit_gym.experiments.reproduce import config_path
    from linbandit_gym.experiments.sweep import load_runs, sweep
    from linbandit_gym.experiments.tune import tune

    raw = load_config(config_path(args.experiment, args.quick))
    name = f"{args.experiment}{'-quick' * args.quick}"
    out = args.out or os.path.join("runs", f"tune-schedules-{name}")
    results = {}
    for schedule in SCHEDULES:
        results[schedule] = tune(
            raw, os.path.join(out, schedule), schedule=schedule, workers=args.workers, log=None
        )
    env = next(iter(results["halving"].tuned))
    picks = {
        agent: {s: results[s].tuned[env][agent] for s in SCHEDULES}
        for agent in results["halving"].tuned[env]
    }
    evaluated = sweep(
        _evaluation_config(raw, picks), os.path.join(out, "eval"), workers=args.workers, log=None
    )
    runs = load_runs(evaluated.out_dir)
    final = runs.groupby("agent")["final_regret"].agg(["mean", "std", "count"])

    def regret(agent: str, schedule: str) -> tuple[float, float]:
        for tag in (schedule, "both"):
            if f"{agent} | {tag}" in final.index:
                row = final.loc[f"{agent} | {tag}"]
                return float(row["mean"]), float(row["std"]) / math.sqrt(row["count"])
        raise KeyError(agent)

    seeds = int(final["count"].max())
    print(
        f"{args.experiment}{' (quick)' * args.quick}: final regret on {seeds} evaluation seeds "
        "(mean +- standard error); tuning cost as rounds played and agents' CPU seconds"
    )
    print(
        "| agent | halving pick | grid pick | regret, halving pick | regret, grid pick | "
        "within 1 SE | halving: rounds, CPU s | grid: rounds, CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for agent, chosen in picks.items():
        (mh, sh), (mg, sg) = regret(agent, "halving"), regret(agent, "grid")
        close = (
            "equal"
            if chosen["halving"] == chosen["grid"]
            else (
                "yes"
                if abs(mh - mg) <= max(sh, sg)
                else f"no: the {'halving' if mh < mg else 'grid'} pick's is lower"
            )
        )
        cost = {}
        for schedule in SCHEDULES:
            table = results[schedule].table
            mine = table[(table["env"] == env) & (table["agent"] == agent)]
            rounds, cpu = int(mine["rounds_played"].sum()), mine["agent_cpu_s"].sum()
            cost[schedule] = f"{rounds:,}, {cpu:.1f}"
        pair = {
            s: f"beta={chosen[s].get('beta'):g}, lam={chosen[s].get('lam'):g}" for s in SCHEDULES
        }
        print(
            f"| {agent} | {pair['halving']} | {pair['grid']} | {mh:.2f} +- {sh:.2f} | "
            f"{mg:.2f} +- {sg:.2f} | {close} | {cost['halving']} | {cost['grid']} |"
        )
    for schedule in SCHEDULES:
        lines = results[schedule].cost.lines("tuning")
        print(f"{schedule}: " + " ".join(line.strip() for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
