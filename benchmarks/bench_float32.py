"""float32 against float64 for every sketched agent (and OFUL): final regret per seed, the first
round where the two dtypes choose differently, a float64 noise floor, and the float32 speed-up.

The one sketch core keeps the d-sized state in the working dtype and the small m x m core in
float64 (agents.sketches.base); ``||x||^2`` and the UCB scores are compared in float64 and FD's
reductions decide on the float64 Gram of the stored rows, so a float32 run chooses as the
float64 run until a near-tie closer than float32's own error (~eps32 cond(A_hat) of a score)
comes up. After that the runs are two different bandit trajectories: their regrets differ as
two runs of the same agent do. This script shows which case each gap is:

* ``f64``, ``f32``: mean final cumulative regret over the seeds (batched path, one batch per
  agent and dtype), and ``rel`` = |f32 - f64| / f64 (the target is <= 10%);
* ``first diff``: per seed, the first round at which float32 chose another arm than float64
  ("-" = never within the horizon);
* ``floor``: the same float64 agent seeing each arm entry moved by half a float32 ulp (random
  signs: a perturbation at float32's rounding level), played seed by seed: its relative regret
  gap to float64 and its own first-diff rounds. A float32 gap of the floor's size is the
  trajectory's sensitivity to rounding, not a defect of the float32 arithmetic;
* ``ms f64 / ms f32``: agent CPU ms per round of the batch (B = seeds), and their ratio.
* Last, at B = 1 (the single agent, d = 784, K = 10, 1 thread, lam = 0.2, beta = 0.01): ms per
  round of the thread's CPU time in float64 and float32, interleaved, best of 3, and their ratio
  (the speed-up README quotes for ``dtype=torch.float32``), as a Markdown table. ``--sizes``: the
  SOFUL and CBSCFD sketch sizes timed (DBSLinUCB keeps l0 = 50); ``--b1-stream``: unit-norm
  Gaussian arms with N(0, 1) rewards (``gauss``), or the arm sets of ``LinBandit-MNIST-v0``
  (seed 0) with reward 1 for the target digit's arm (``mnist``: images of one digit lie close to
  the span of the rows seen, where a float32 projection has to form an arm's residual
  explicitly, ``agents.sketches.core``); ``--b1-rounds``: rounds timed.

    python benchmarks/bench_float32.py            # horizon 2000, 3 seeds
    python benchmarks/bench_float32.py --quick    # horizon 500
    python benchmarks/bench_float32.py --b1-only --b1-stream mnist --b1-rounds 2000 \
        --sizes 20 100 403 600                    # the B = 1 table of docs/performance.md

``--parts`` (with ``--b1-only``) splits the B = 1 round of SOFUL and CBSCFD into the sketch
core's operations instead (``agents.sketches.core.SketchCore``), each timed by the thread's CPU
time around every call, best of 3 per part: ``project`` (the ``K d R`` product ``arms V^T``),
``score`` (the widths and means; ``explicit residual``, its part for arms whose residual
``||x||^2 - ||V x||^2`` cancels), ``expand`` and ``append`` (the played row's residual against the
basis and its commit), ``shrink`` (FD's shrinks), and ``rest`` (the round's other work: argument
checks, norms, the agent's own bookkeeping).

    python benchmarks/bench_float32.py --b1-only --parts --b1-stream mnist --b1-rounds 2000 \
        --sizes 20 100 403 --agents SOFUL CBSCFD
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import gymnasium as gym
import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from bench_sketch_floor import timed_methods  # noqa: E402  (its directory is on sys.path)

import linbandit_gym  # noqa: E402
from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB  # noqa: E402
from agents.sketches.core import SketchCore  # noqa: E402

AGENTS = {
    "OFUL": lambda lam, beta, l, dt: OFUL(lam=lam, beta=beta, dtype=dt),
    "SOFUL": lambda lam, beta, l, dt: SOFUL(lam=lam, beta=beta, sketch_size=l, dtype=dt),
    "CBSCFD": lambda lam, beta, l, dt: CBSCFD(lam=lam, beta=beta, sketch_size=l, dtype=dt),
    "DBSLinUCB-FD": lambda lam, beta, l, dt: DBSLinUCB(
        lam=lam, beta=beta, l0=l, eps=8.0, sketch="fd", dtype=dt
    ),
    "DBSLinUCB-RFD": lambda lam, beta, l, dt: DBSLinUCB(
        lam=lam, beta=beta, l0=l, eps=8.0, sketch="rfd", dtype=dt
    ),
}
# (env id, env kwargs, lam, beta, l = l0): MNIST as the paper's demo (l = l0 = 50); Synthetic
# d = 100 with l = l0 = 10 (with l0 = 50 > d/3 DBSLinUCB would be OFUL from the first row, and
# SOFUL l = 50 would hold more than OFUL at d = 100)
ENVS = {
    "MNIST": ("LinBandit-MNIST-v0", {}, 0.2, 0.01, 50),
    "Synthetic": ("LinBandit-Synthetic-v0", {"d": 100, "n_arms": 20}, 1.0, 0.1, 10),
}


class _PerturbedArms:
    """The float64 agent ``inner`` seeing every arm entry moved by a relative +-2^-24 (half a
    float32 ulp, random signs): a float64 run perturbed at float32's rounding level (the
    noise floor). Rewards are not perturbed: MNIST's are 0/1, exact in float32."""

    def __init__(self, inner):
        self.inner = inner
        self._last = None

    def reset(self, seed=None):
        self.inner.reset(seed=seed)
        self._rng = np.random.default_rng(None if seed is None else 10_000 + seed)

    def _perturbed(self, obs):
        if self._last is None or self._last[0] is not obs:
            x = np.asarray(obs, dtype=np.float64)
            self._last = (obs, x * (1.0 + 2.0**-24 * self._rng.choice((-1.0, 1.0), size=x.shape)))
        return self._last[1]

    def act(self, obs):
        return self.inner.act(self._perturbed(obs))

    def update(self, obs, action, reward):
        self.inner.update(self._perturbed(obs), action, reward)

    def memory_bytes(self):
        return self.inner.memory_bytes()


def _per_seed(rec):
    g = rec.sort_values("t").groupby("seed")
    return g["cumulative_regret"].last(), {s: df["action"].to_numpy() for s, df in g}


def _first_diff(a, b):
    return [
        str(int(np.flatnonzero(a[s] != b[s])[0])) if (a[s] != b[s]).any() else "-"
        for s in sorted(a)
    ]


def _stream_b1(kind: str, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """The B = 1 timing's arm sets ``(rounds, 10, 784)`` (float32) and the reward of each arm of
    each round ``(rounds, 10)``: unit-norm Gaussian arms with one N(0, 1) reward a round
    (``gauss``), or ``LinBandit-MNIST-v0``'s arm sets of seed 0 with reward 1 for the target
    digit's arm (``mnist``; the arm sets do not depend on the actions)."""
    if kind == "gauss":
        rng = np.random.default_rng(0)
        arms = rng.standard_normal((rounds, 10, 784))
        arms = (arms / np.linalg.norm(arms, axis=2, keepdims=True)).astype(np.float32)
        return arms, np.repeat(rng.standard_normal(rounds)[:, None], 10, axis=1)
    env = gym.make("LinBandit-MNIST-v0", horizon=rounds)
    obs, _ = env.reset(seed=0)
    arms, rewards = [], []
    for _ in range(rounds):
        arms.append(np.asarray(obs, dtype=np.float32))
        obs, _, _, _, info = env.step(0)
        rewards.append(np.arange(arms[-1].shape[0]) == info["best_arm"])
    return np.stack(arms), np.stack(rewards).astype(np.float64)


def _play_b1(agent, arms, rewards) -> float:
    """The thread's CPU seconds of ``agent`` playing the arm sets ``arms`` with ``rewards`` per arm
    (:func:`_stream_b1`), act then update each round."""
    start = time.thread_time()
    for t in range(len(arms)):
        a = agent.act(arms[t])
        agent.update(arms[t], a, rewards[t, a])
    return time.thread_time() - start


def _ms_per_round_b1(make, arms, rewards, repeats: int = 3) -> tuple[float, float]:
    """B = 1 agent ms/round (the thread's CPU time) on the arm sets ``arms`` with ``rewards`` per
    arm (:func:`_stream_b1`), float64 and float32 interleaved, best of N."""
    best = {torch.float64: np.inf, torch.float32: np.inf}
    for _ in range(repeats):
        for dt in best:
            best[dt] = min(best[dt], _play_b1(make(dt), arms, rewards) / len(arms) * 1e3)
    return best[torch.float64], best[torch.float32]


#: (label, SketchCore method) of the ``--parts`` split; ``rest`` is the round minus the others
#: (the explicit residual runs inside ``score``)
PARTS = (
    ("project", "project"),
    ("score", "score"),
    ("explicit residual", "_explicit_quad"),
    ("expand", "expand"),
    ("append", "append"),
    ("shrink", "shrink"),
)


def _parts_table(args) -> None:
    """The ``--parts`` split (module docstring) as a Markdown table, microseconds per round."""
    arms, rewards = _stream_b1(args.b1_stream, args.b1_rounds)
    rounds = len(arms)
    print(
        f"B = 1 (single agent), d = 784, K = 10, {rounds} rounds of {args.b1_stream} arms, "
        f"{args.threads} thread(s), float64 and float32 interleaved, best of 3 per part: us per "
        "round (the thread's CPU time)"
    )
    print("| agent | part | f64 us/round | f32 us/round | f32 / f64 |\n|---|---|---|---|---|")
    for name in (n for n in args.agents if n in ("SOFUL", "CBSCFD")):
        for l in args.sizes:
            best = {dt: {} for dt in (torch.float64, torch.float32)}
            for _ in range(3):
                for dt in best:
                    agent = AGENTS[name](0.2, 0.01, l, dt)
                    # (a method this revision lacks counts 0)
                    seconds = {m: 0.0 for _, m in PARTS if hasattr(SketchCore, m)}
                    with timed_methods(SketchCore, seconds):
                        whole = _play_b1(agent, arms, rewards)
                    own = {label: seconds.get(m, 0.0) for label, m in PARTS}
                    own["rest"] = whole - sum(v for k, v in own.items() if k != "explicit residual")
                    own["round"] = whole
                    for k, v in own.items():
                        best[dt][k] = min(best[dt].get(k, np.inf), v / rounds * 1e6)
            for part in (*(label for label, _ in PARTS), "rest", "round"):
                us64, us32 = best[torch.float64][part], best[torch.float32][part]
                ratio = f"{us32 / us64:.2f}" if us64 > 0.05 else "-"
                print(f"| {name} l={l} | {part} | {us64:.1f} | {us32:.1f} | {ratio} |", flush=True)


def _b1_table(args) -> None:
    """The B = 1 timing (module docstring) as a Markdown table."""
    arms, rewards = _stream_b1(args.b1_stream, args.b1_rounds)
    print(
        f"B = 1 (single agent), d = 784, K = 10, {args.b1_rounds} rounds of {args.b1_stream} "
        f"arms, {args.threads} thread(s), float64 and float32 interleaved, best of 3: ms per round "
        "(the thread's CPU time)"
    )
    print("| agent | f64 ms/round | f32 ms/round | f32 / f64 |\n|---|---|---|---|")
    for name in args.agents:
        sized = name in ("SOFUL", "CBSCFD")
        for l in args.sizes if sized else [50]:
            label = f"{name} l={l}" if sized else name if name == "OFUL" else f"{name} l0={l}"
            ms64, ms32 = _ms_per_round_b1(
                lambda dt, name=name, l=l: AGENTS[name](0.2, 0.01, l, dt), arms, rewards
            )
            print(f"| {label} | {ms64:.3f} | {ms32:.3f} | {ms32 / ms64:.2f} |", flush=True)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--envs", nargs="+", choices=list(ENVS), default=list(ENVS))
    p.add_argument("--agents", nargs="+", choices=list(AGENTS), default=list(AGENTS))
    p.add_argument("--no-floor", action="store_true", help="skip the float64 noise-floor runs")
    p.add_argument("--no-b1", action="store_true", help="skip the B = 1 timing")
    p.add_argument("--b1-only", action="store_true", help="only the B = 1 timing")
    p.add_argument(
        "--parts", action="store_true", help="with --b1-only: the sketch round's split by part"
    )
    p.add_argument("--b1-stream", choices=("gauss", "mnist"), default="gauss")
    p.add_argument("--b1-rounds", type=int, default=300)
    p.add_argument(
        "--sizes", type=int, nargs="+", default=[50], help="SOFUL/CBSCFD l of the B = 1 timing"
    )
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.b1_only:
        with threadpool_limits(limits=args.threads), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (_parts_table if args.parts else _b1_table)(args)
        return
    horizon = 500 if args.quick else 2000
    seeds = list(range(args.seeds))
    print(
        f"{args.seeds} seeds, horizon {horizon}, {args.threads} thread(s), "
        f"torch {torch.__version__}; regret = final cumulative regret (mean over seeds); "
        "first diff = first round f32 (floor) chose otherwise"
    )
    print(
        f"{'env':>9} {'agent':>13} {'f64':>7} {'f32':>7} {'rel':>6} {'per-seed rel':>20} "
        f"{'first diff':>16} {'floor rel':>9} {'floor 1st diff':>16} {'ms f64':>7} {'ms f32':>7} "
        f"{'f64/f32':>7}"
    )
    worst = 0.0
    with threadpool_limits(limits=args.threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for env_name in args.envs:
            env_id, kw, lam, beta, l = ENVS[env_name]
            kw = dict(kw, horizon=horizon)
            for name in args.agents:
                make = AGENTS[name]
                out = {}
                for dt in (torch.float64, torch.float32):
                    rec = linbandit_gym.run(
                        env_id, make(lam, beta, l, dt), seeds=seeds, env_kwargs=kw, progress=False
                    )
                    ms = (
                        rec.groupby("seed")["agent_time"].last().mean() / horizon * 1e3
                    )  # agent_time is cumulative
                    out[dt] = (*_per_seed(rec), ms)
                (r64, a64, ms64), (r32, a32, ms32) = out[torch.float64], out[torch.float32]
                rel = abs(r32.mean() - r64.mean()) / max(abs(r64.mean()), 1e-12)
                worst = max(worst, rel)
                per_seed = ",".join(
                    f"{abs(r32[s] - r64[s]) / max(r64[s], 1e-12):.0%}" for s in seeds
                )
                floor_rel, floor_diff = "", ""
                if not args.no_floor:
                    rec = linbandit_gym.run(
                        env_id,
                        _PerturbedArms(make(lam, beta, l, torch.float64)),
                        seeds=seeds,
                        env_kwargs=kw,
                        progress=False,
                        batched=False,
                    )
                    rf, af = _per_seed(rec)
                    floor_rel = f"{abs(rf.mean() - r64.mean()) / max(abs(r64.mean()), 1e-12):.1%}"
                    floor_diff = ",".join(_first_diff(af, a64))
                print(
                    f"{env_name:>9} {name:>13} {r64.mean():>7.2f} {r32.mean():>7.2f} {rel:>6.1%} "
                    f"{per_seed:>20} {','.join(_first_diff(a32, a64)):>16} {floor_rel:>9} "
                    f"{floor_diff:>16} {ms64:>7.3f} {ms32:>7.3f} {ms64 / ms32:>6.2f}x",
                    flush=True,
                )
        print(f"largest relative difference of mean final regret float32 vs float64: {worst:.1%}")
        if not args.no_b1:
            _b1_table(args)


if __name__ == "__main__":
    main()
