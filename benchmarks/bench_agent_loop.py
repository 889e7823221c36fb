"""The single agent's loop cost: act + update outside the estimator, against another revision.

A round of a B = 1 agent is the estimator's work (``_score_terms_one``, ``step``, and
``logdet_increments`` for ``beta="theory"``) plus the loop around it in :mod:`agents.linucb`,
:mod:`agents.base` and :mod:`agents._torch`: converting and checking the arms, forming and
ranking the K scores, matching update()'s obs with act's, checking the feedback. This prints,
per agent and kind of observation, the round (act + update, us) and the loop's own part (the
round minus the estimator calls, timed by wrappers around them: ~0.3 us each is counted in the
loop), for this checkout and, with ``--against REV``, for the ``agents`` package of that git
revision (extracted to a temporary directory and imported under another name), the two played
alternately in one process on the same stream (d = 784, K unit-norm Gaussian arms a round), 1
thread, and each round's fastest repeat taken (``profile_agents.py --stat round``).

Observation kinds: ``tensor`` is profile_agents.py's loop (``obs[t]`` of a float64 tensor,
indexed once for act and again for update: an equal view); ``float32`` is run()'s loop on an env
(the env's float32 numpy arm set, the same object given to act and update).

    python benchmarks/bench_agent_loop.py --against HEAD~3
    python benchmarks/bench_agent_loop.py --against main --agents SOFUL OFUL --obs tensor
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_agents import AGENT_NAMES, stream  # noqa: E402

import agents  # noqa: E402

ESTIMATOR_CALLS = ("_score_terms_one", "step", "logdet_increments")


def agents_of(rev: str, tmp: str):
    """The ``agents`` package of git revision ``rev``, imported as ``agents_at_rev``."""
    archive = os.path.join(tmp, "agents.tar")
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", ROOT, "archive", rev, "agents"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    os.rename(
        os.path.join(tmp, "agents"), os.path.join(tmp, "agents_at_rev")
    )  # relative imports inside
    sys.path.insert(0, tmp)
    return importlib.import_module("agents_at_rev")


def make(pkg, name: str, d: int):
    """profile_agents.py's parameters (lam=1, beta=0.1, l=50, l0=50, eps=8)."""
    if name == "OFUL":
        return pkg.OFUL(lam=1.0, beta=0.1, d=d)
    if name in ("SOFUL", "CBSCFD"):
        return getattr(pkg, name)(lam=1.0, beta=0.1, sketch_size=50, d=d)
    return pkg.DBSLinUCB(lam=1.0, beta=0.1, l0=50, eps=8.0, d=d)


def play(
    agent, arms, obs_act, obs_update, theta, noise, wrapped: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Seconds per round of act + update, and of the estimator calls within (0 unless
    ``wrapped``)."""
    inner = [0.0]
    pc = time.perf_counter
    if wrapped:
        est = agent.estimator

        def timed(fn):
            def call(*args, **kwargs):
                start = pc()
                out = fn(*args, **kwargs)
                inner[0] += pc() - start
                return out

            return call

        for name in ESTIMATOR_CALLS:
            setattr(est, name, timed(getattr(est, name)))
    rounds = arms.shape[0]
    total, in_est = np.zeros(rounds), np.zeros(rounds)
    for t in range(rounds):
        inner[0] = 0.0
        start = pc()
        a = (
            agent.act(obs_act[t]) if t else 0
        )  # round 1 is an exact tie (theta_hat = 0, unit arms): fix it
        acted = pc()
        reward = float(arms[t, a] @ theta + noise[t])
        begin = pc()
        agent.update(obs_update[t], a, reward)
        total[t] = pc() - begin + acted - start
        in_est[t] = inner[0]
    return total, in_est


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--against", default=None, help="a git revision whose agents package to compare with"
    )
    p.add_argument("--agents", nargs="+", choices=AGENT_NAMES, default=list(AGENT_NAMES))
    p.add_argument("--obs", nargs="+", choices=("tensor", "float32"), default=["tensor", "float32"])
    p.add_argument("--d", type=int, default=784)
    p.add_argument("--arms", type=int, default=10)
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        packages = {"this": agents}
        if args.against:
            packages[args.against] = agents_of(args.against, tmp)
        print(
            f"d={args.d}, K={args.arms}, {args.rounds} rounds, per-round best of {args.repeats} "
            "interleaved, 1 thread; us per round: act + update, and the loop's part (minus the "
            "estimator calls)"
        )
        head = "".join(f" {lbl[:12] + ' round':>19} {lbl[:12] + ' loop':>18}" for lbl in packages)
        print(
            f"{'agent':>10} {'obs':>8}{head}"
            + (f" {'loop ratio':>10}" if len(packages) == 2 else "")
        )
        arms, theta, noise = stream(args.d, args.arms, args.rounds)
        with threadpool_limits(limits=1):
            for kind in args.obs:
                if kind == "tensor":
                    tensors = torch.as_tensor(arms)
                    obs_act, obs_update = (
                        [tensors[t] for t in range(args.rounds)],
                        [tensors[t] for t in range(args.rounds)],
                    )
                else:
                    obs_act = obs_update = list(arms.astype(np.float32))
                for name in args.agents:
                    rounds = {lbl: [] for lbl in packages}
                    loops = {lbl: [] for lbl in packages}
                    for _ in range(args.repeats):
                        for (
                            lbl,
                            pkg,
                        ) in packages.items():  # alternately: a slow spell of the box hits both
                            total, _ = play(
                                make(pkg, name, args.d),
                                arms,
                                obs_act,
                                obs_update,
                                theta,
                                noise,
                                False,
                            )
                            rounds[lbl].append(total)
                            total, in_est = play(
                                make(pkg, name, args.d),
                                arms,
                                obs_act,
                                obs_update,
                                theta,
                                noise,
                                True,
                            )
                            loops[lbl].append(total - in_est)
                    row = ""
                    for lbl in packages:
                        rnd = np.min(rounds[lbl], axis=0)[1:].mean() * 1e6
                        loop = np.min(loops[lbl], axis=0)[1:].mean() * 1e6
                        row += f" {rnd:19.1f} {loop:18.2f}"
                        loops[lbl] = loop
                    if len(packages) == 2:
                        row += f" {loops[args.against] / loops['this']:10.2f}"
                    print(f"{name:>10} {kind:>8}{row}", flush=True)


if __name__ == "__main__":
    main()
