"""An exact DBSLinUCB round against OFUL's: the same arithmetic, so the same time.

DBSLinUCB switches to exact (OFUL) updates when its next block would pass OFUL's bytes or its
cost per round, or at the block cap (``agents.sketches.dbs``); with ``l0 = 200`` at ``d = 784``
it is exact from the first row. Its round then scores the K arms against the ``d x d`` inverse
and updates it by Sherman-Morrison exactly as OFUL does (``agents.sketches.exact``), so its
ms/round should be OFUL's; the difference is what the Dyadic Block Sketch's own bookkeeping
adds around the exact estimator.

Both agents (``lam = 0.2``, ``beta = 0.01``, as in ``linbandit reproduce mnist``) play one pre-drawn
episode of ``LinBandit-MNIST-v0`` (d = 784, K = 10, the env's float32 arm sets, the same object
given to act and update, as ``run()`` does); ms/round is act + update. OFUL and DBSLinUCB
alternate, ``--repeats`` times each, 1 thread (torch and BLAS), and each reports

* ``run``: its fastest whole episode (ms/round), and
* ``round``: each round's fastest repeat, averaged (drops the rounds a loaded machine preempted,
  for both sides alike),

with the ratio DBSLinUCB / OFUL. ``--lockstep`` interleaves rounds instead of episodes: every agent
plays round t before any plays round t + 1 (their order turning each round), so a slow spell of
the machine hits all of them in the same rounds; each agent's inverse then leaves the caches
between its rounds (a round reads ~5 MB of other agents' state), so every round is slower than
in a whole episode, alike for all. ``same`` says whether both chose the same arm every round (an
exact DBSLinUCB is OFUL's arithmetic: it must). ``--against REV`` plays the ``agents`` package of
that git revision too, alternating with this checkout's in the same process (extracted as
``bench_agent_loop.py`` does), and says whether its DBSLinUCB chose what this one does.

    python benchmarks/bench_dbs_exact.py                   # T = 2000, best of 5
    python benchmarks/bench_dbs_exact.py --against main
    python benchmarks/bench_dbs_exact.py --against main --lockstep
    python benchmarks/bench_dbs_exact.py --sketch fd --eps 2 --rounds 600
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import gymnasium as gym
import numpy as np
import torch
from threadpoolctl import threadpool_limits

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_agent_loop import agents_of  # noqa: E402

import agents  # noqa: E402
import linbandit_gym  # noqa: E402, F401  (registers the envs)


def episode(rounds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``rounds`` arm sets of ``LinBandit-MNIST-v0`` (float32 ``(10, 784)``, as the env gives them)
    and each arm's reward; the env's draws do not depend on the arms played."""
    env = gym.make("LinBandit-MNIST-v0", dataset="mnist", target_class=0).unwrapped
    obs, _ = env.reset(seed=seed)
    out = []
    for _ in range(rounds):
        out.append((obs, env.arm_labels == env.target_class))
        obs, *_ = env.step(0)
    return out


def play_round(agent, obs, rewards) -> tuple[float, int]:
    """Seconds of act + update of one round, and the arm played."""
    pc = time.perf_counter
    start = pc()
    a = agent.act(obs)
    acted = pc()
    reward = float(rewards[a])
    begin = pc()
    agent.update(obs, a, reward)
    return pc() - begin + acted - start, a


def play(agent, rounds) -> tuple[np.ndarray, list[int]]:
    """Seconds of act + update per round, and the arms played."""
    spent, actions = np.zeros(len(rounds)), []
    for t, (obs, rewards) in enumerate(rounds):
        spent[t], a = play_round(agent, obs, rewards)
        actions.append(a)
    return spent, actions


def play_lockstep(agents_by_key: dict, rounds) -> tuple[dict, dict]:
    """:func:`play` for every agent at once, round by round, their order turning each round."""
    keys = list(agents_by_key)
    spent = {key: np.zeros(len(rounds)) for key in keys}
    actions = {key: [] for key in keys}
    for t, (obs, rewards) in enumerate(rounds):
        turn = t % len(keys)
        for key in keys[turn:] + keys[:turn]:
            spent[key][t], a = play_round(agents_by_key[key], obs, rewards)
            actions[key].append(a)
    return spent, actions


def check_exact(key: tuple[str, str], agent, args) -> None:
    """Stop when the DBSLinUCB played was not exact from its first row (the comparison would be
    another one)."""
    if key[1] == "DBSLinUCB" and agent.estimator.n_exact_rows != args.rounds:
        raise SystemExit(
            f"DBSLinUCB(l0={args.l0}, eps={args.eps:g}) added {agent.estimator.n_exact_rows} of "
            f"{args.rounds} rows exactly: choose an l0 for which it is exact from the first row "
            "(at d = 784 with the default caps, e.g. l0 = 200)"
        )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--against", default=None, help="a git revision whose agents to play too")
    p.add_argument("--rounds", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--l0", type=int, default=200, help="exact from the first row at d = 784")
    p.add_argument("--eps", type=float, default=8.0)
    p.add_argument("--sketch", choices=("fd", "rfd"), default="rfd")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lockstep", action="store_true", help="interleave rounds, not episodes")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rounds = episode(args.rounds, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        packages = {"this": agents}
        if args.against:
            packages[args.against] = agents_of(args.against, tmp)
        makers = {}
        for label, pkg in packages.items():
            makers[label, "OFUL"] = lambda pkg=pkg: pkg.OFUL(lam=0.2, beta=0.01)
            makers[label, "DBSLinUCB"] = lambda pkg=pkg: pkg.DBSLinUCB(
                lam=0.2, beta=0.01, l0=args.l0, eps=args.eps, sketch=args.sketch
            )
        times = {key: [] for key in makers}
        played = {}
        with threadpool_limits(limits=1):
            for _ in range(args.repeats):
                if args.lockstep:
                    built = {key: make() for key, make in makers.items()}
                    spent, played = play_lockstep(built, rounds)
                    for key, agent in built.items():
                        times[key].append(spent[key])
                        check_exact(key, agent, args)
                    continue
                for key, make in makers.items():  # alternately: a slow spell hits every side
                    agent = make()
                    spent, played[key] = play(agent, rounds)
                    times[key].append(spent)
                    check_exact(key, agent, args)
        print(
            f"LinBandit-MNIST-v0 (d = 784, K = 10), {args.rounds} rounds, OFUL against "
            f"DBSLinUCB-{args.sketch.upper()}(l0={args.l0}, eps={args.eps:g}) exact from t = 1, "
            f"lam = 0.2, beta = 0.01, float64, 1 thread, {args.repeats} repeats interleaved by "
            + ("round" if args.lockstep else "episode")
        )
        print(
            f"{'agents':>12} {'stat':>6} {'OFUL ms/round':>14} {'DBS ms/round':>13} "
            f"{'DBS / OFUL':>10} {'same':>5}"
        )
        for label in packages:
            same = played[label, "OFUL"] == played[label, "DBSLinUCB"]
            for stat in ("run", "round"):
                ms = {}
                for name in ("OFUL", "DBSLinUCB"):
                    runs = np.array(times[label, name])
                    per = runs.sum(axis=1).min() if stat == "run" else runs.min(axis=0).sum()
                    ms[name] = per / args.rounds * 1e3
                print(
                    f"{label[:12]:>12} {stat:>6} {ms['OFUL']:14.3f} {ms['DBSLinUCB']:13.3f} "
                    f"{ms['DBSLinUCB'] / ms['OFUL']:10.3f} {'yes' if same else 'NO':>5}"
                )
        if args.against:
            agree = played["this", "DBSLinUCB"] == played[args.against, "DBSLinUCB"]
            print(f"DBSLinUCB chose the same arms here and at {args.against}: {agree}")


if __name__ == "__main__":
    main()
