"""Per-round cost of OFUL, SOFUL, CBSCFD and DBSLinUCB against plain numpy implementations, with a
profile.

The four agents (at B = 1 on the CPU they run on the numpy backend, ``agents.sketches.backend``)
and the plain numpy versions of the same algorithms (NumpyOFUL of
bench_oful.py, numpy_fd.py, numpy_dbs.py) play the same pre-drawn stream (K unit-norm Gaussian
arms a round, reward x^T theta* + noise of the chosen arm); ms/round is act + update, best of
--repeats interleaved runs (ours, numpy, ours, ...), BLAS pinned to --threads on both sides,
and "same" says whether both chose the same arm every round. ``--stat round`` takes each
round's fastest repeat instead (on a loaded machine a run is preempted for milliseconds at a
time; the per-round minimum drops those rounds' waits, for both sides alike). With --profile,
one extra run of each agent is profiled by cProfile and the functions with the largest own time
are printed (where the fixed per-call overhead of small array operations shows up).

    python benchmarks/profile_agents.py --quick                  # d = 784, K in {10, 100}, l = 50
    python benchmarks/profile_agents.py --profile --agents SOFUL --arms 10
    python benchmarks/profile_agents.py --count-ops --arms 10    # + torch (aten) calls per round
    python benchmarks/profile_agents.py --quick --stat round --backend torch   # the other backend

``--backend torch`` builds our agents inside ``agents.sketches.backend.torch_on_cpu``: the same
single agents on the torch backend, which a GPU runs. Against the default (numpy, the CPU's) it
measures what that choice of backend saves (``docs/architecture.md``).

``--count-ops`` counts the torch (aten) operations dispatched per round (views included) in one
extra run: a load-independent measure of the fixed per-call overhead on the torch backend (0 on
the numpy backend, which the CPU uses).

``--floor`` says how far each agent is from the floor of its arithmetic, the one big product a
round (``K d m`` multiply-adds: the arms against the ``m`` basis vectors of the sketch, or against
OFUL's ``d x d`` inverse): one extra run records the ``m`` the product reads every round (``d`` for
OFUL and for DBSLinUCB once exact), then the same products alone (numpy ``arms V^T``, ``arms A^-1``)
are timed over those rounds, best of --repeats. Printed per agent: mean ``m``, MFLOP and KiB read of
one product (``2 K d m`` flops, ``8 (m + K) d`` bytes in float64), the product's ms/round alone,
and its share of the agent's ms/round.

    python benchmarks/profile_agents.py --floor --count-ops --arms 10 100
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_oful import NumpyOFUL  # noqa: E402
from numpy_dbs import NumpyDBSLinUCB  # noqa: E402
from numpy_fd import NumpySketchedUCB  # noqa: E402

from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB  # noqa: E402
from agents.sketches.backend import torch_on_cpu  # noqa: E402

AGENT_NAMES = ("OFUL", "SOFUL", "CBSCFD", "DBSLinUCB")


def make(
    name: str,
    d: int,
    l: int,
    l0: int,
    eps: float,
    lam: float = 1.0,
    beta: float = 0.1,
    backend: str = "numpy",
):
    """(our agent, the plain numpy implementation) with the same parameters; ``backend="torch"``:
    our agent on the torch backend (:func:`~agents.sketches.backend.torch_on_cpu`; ``d`` given, the
    estimator is built here)."""
    kw = dict(lam=lam, beta=beta, d=d)
    with torch_on_cpu(backend == "torch"):
        return _make(name, l, l0, eps, kw)


def _make(name: str, l: int, l0: int, eps: float, kw: dict):
    d, lam, beta = kw["d"], kw["lam"], kw["beta"]
    if name == "OFUL":
        ours, plain = OFUL(**kw), NumpyOFUL(d, lam, beta)
    elif name in ("SOFUL", "CBSCFD"):
        cls, robust = (SOFUL, False) if name == "SOFUL" else (CBSCFD, True)
        ours, plain = cls(sketch_size=l, **kw), NumpySketchedUCB(d, l, lam, beta, robust)
    else:
        ours, plain = DBSLinUCB(l0=l0, eps=eps, **kw), NumpyDBSLinUCB(d, l0, eps, lam, beta)
    return ours, plain


def stream(d: int, k: int, rounds: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    arms = rng.standard_normal((rounds, k, d))
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    return arms, theta, 0.1 * rng.standard_normal(rounds)


def play(agent, arms, obs, theta, noise, numpy_side: bool, per_round: list | None = None):
    """ms/round (act + update) and the actions; ``obs[t]`` is what the agent is given.
    ``per_round``: also append each round's seconds there."""
    actions = []
    start = now = time.perf_counter()
    for t in range(arms.shape[0]):
        a = (
            agent.act(obs[t]) if t else 0
        )  # round 1 is an exact tie (theta_hat = 0, unit arms): fix it
        reward = float(arms[t, a] @ theta + noise[t])
        if numpy_side:
            agent.update(arms[t, a], reward)
        else:
            agent.update(obs[t], a, reward)
        actions.append(a)
        if per_round is not None:
            last, now = now, time.perf_counter()
            per_round.append(now - last)
    return (time.perf_counter() - start) / arms.shape[0] * 1e3, actions


def count_ops(agent, arms, obs, theta, noise) -> float:
    """aten operations dispatched per round (act + update), after 20 warm-up rounds."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    play(agent, arms[:20], obs[:20], theta, noise, False)
    with Count():
        play(agent, arms[20:], obs[20:], theta, noise, False)
    return Count.n / (arms.shape[0] - 20)


def product_rows(agent) -> int:
    """Rows ``m`` the round's one big product reads: the basis vectors of the sketch (``d`` for an
    inverse)."""
    est = agent.estimator
    core = getattr(est, "core", None)
    if core is not None and not getattr(est, "exact_mode", False):  # FD / RFD / DBS while sketched
        return int(core.width)
    return agent.d  # OFUL (and DBS once exact): the d x d inverse


def floor(
    make_agent, arms, obs, theta, noise, repeats: int, stat: str = "run"
) -> tuple[float, float, float]:
    """(mean rows m, ms/round of the one big product replayed alone, bytes read per product);
    ``stat`` as for the rounds (fastest whole replay, or each product's fastest repeat)."""
    agent = make_agent()
    rows = []
    for t in range(arms.shape[0]):
        rows.append(product_rows(agent))
        a = agent.act(obs[t]) if t else 0
        agent.update(obs[t], a, float(arms[t, a] @ theta + noise[t]))
    k, d = arms.shape[1], arms.shape[2]
    rng = np.random.default_rng(1)
    rows = np.array(rows)
    exact = rows == d
    inv = rng.standard_normal((d, d)) if exact.any() else None
    S = rng.standard_normal((int(rows[~exact].max()) if (~exact).any() else 1, d))
    times = np.zeros((repeats, arms.shape[0]))
    for i in range(repeats):
        for t in range(arms.shape[0]):
            m = rows[t]
            start = time.perf_counter()
            if m == d and inv is not None:
                arms[t] @ inv  # the exact estimator's arms A^-1
            elif m:
                arms[t] @ S[:m].T  # the sketch's projection arms V^T
            times[i, t] = time.perf_counter() - start
    per = times.min(axis=0).mean() if stat == "round" else times.sum(axis=1).min() / arms.shape[0]
    return float(rows.mean()), float(per * 1e3), float(8 * (rows.mean() + k) * d)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="fewer rounds, best of 2")
    p.add_argument("--d", type=int, default=784)
    p.add_argument("--arms", type=int, nargs="+", default=[10, 100])
    p.add_argument("--agents", nargs="+", choices=AGENT_NAMES, default=list(AGENT_NAMES))
    p.add_argument("--l", type=int, default=50, help="SOFUL/CBSCFD sketch size")
    p.add_argument("--l0", type=int, default=50)
    p.add_argument("--eps", type=float, default=8.0)
    p.add_argument("--rounds", type=int, default=None, help="default 600, quick 250")
    p.add_argument("--repeats", type=int, default=None, help="default 3, quick 2")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--profile",
        action="store_true",
        help="print the cProfile top functions of each of our agents",
    )
    p.add_argument("--top", type=int, default=18, help="functions listed per profile")
    p.add_argument(
        "--count-ops",
        action="store_true",
        help="print the torch (aten) operations per round of each of our agents",
    )
    p.add_argument(
        "--stat",
        choices=("run", "round"),
        default="run",
        help="run: the fastest whole run (default); round: the mean over rounds of each round's "
        "fastest repeat (robust to preemption on a loaded machine)",
    )
    p.add_argument(
        "--backend",
        choices=("numpy", "torch"),
        default="numpy",
        help="numpy: the CPU's backend (default); torch: the torch backend (a GPU's), on the CPU",
    )
    p.add_argument(
        "--floor",
        action="store_true",
        help="print the one big product's size and its time alone against the agent's round",
    )
    args = p.parse_args(argv)
    rounds = args.rounds or (250 if args.quick else 600)
    repeats = args.repeats or (2 if args.quick else 3)
    torch.set_num_threads(args.threads)
    print(
        f"d={args.d}, l={args.l}, l0={args.l0}, eps={args.eps}, {rounds} rounds, best of "
        f"{repeats} interleaved (per {args.stat}); {args.threads} BLAS thread(s), "
        f"torch {torch.__version__}, numpy {np.__version__}, float64 CPU, "
        f"our agents on the {args.backend} backend"
    )
    print(f"{'agent':>10} {'K':>4} {'ours ms':>9} {'numpy ms':>9} {'numpy/ours':>12} {'same':>5}")
    with threadpool_limits(limits=args.threads):
        for k in args.arms:
            arms, theta, noise = stream(args.d, k, rounds)
            tensors = torch.as_tensor(arms)
            for name in args.agents:

                def build(name=name):  # (our agent, the plain numpy implementation)
                    return make(name, args.d, args.l, args.l0, args.eps, backend=args.backend)

                play(build()[0], arms[:5], tensors[:5], theta, noise, False)
                best_t = best_n = float("inf")
                rounds_t, rounds_n = [], []
                for _ in range(repeats):
                    ours, plain = build()
                    rounds_t.append([])
                    ms, a_t = play(ours, arms, tensors, theta, noise, False, rounds_t[-1])
                    best_t = min(best_t, ms)
                    rounds_n.append([])
                    ms, a_n = play(plain, arms, arms, theta, noise, True, rounds_n[-1])
                    best_n = min(best_n, ms)
                if (
                    args.stat == "round"
                ):  # each round's fastest repeat: a preempted round does not count
                    best_t = float(np.min(rounds_t, axis=0).mean() * 1e3)
                    best_n = float(np.min(rounds_n, axis=0).mean() * 1e3)
                print(
                    f"{name:>10} {k:>4} {best_t:>9.3f} {best_n:>9.3f} {best_n / best_t:>12.2f} "
                    f"{str(a_t == a_n):>5}",
                    flush=True,
                )
                if args.floor:
                    m, ms, nbytes = floor(
                        lambda: build()[0], arms, tensors, theta, noise, repeats, args.stat
                    )
                    print(
                        f"{'':>10} {'':>4} floor: m={m:.1f} rows, "
                        f"{2 * k * args.d * m / 1e6:.2f} MFLOP and {nbytes / 1024:.0f} KiB a "
                        f"product, {ms:.3f} ms/round alone = {ms / best_t:.0%} of the round",
                        flush=True,
                    )
                if args.count_ops:
                    ops = count_ops(build()[0], arms, tensors, theta, noise)
                    print(f"{'':>10} {'':>4} {ops:.1f} torch (aten) ops/round", flush=True)
                if args.profile:
                    prof = cProfile.Profile()
                    ours = build()[0]
                    prof.enable()
                    play(ours, arms, tensors, theta, noise, False)
                    prof.disable()
                    out = io.StringIO()
                    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
                    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
                    start = next(
                        i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")
                    )
                    print("\n".join("      " + ln for ln in lines[start:]), flush=True)


if __name__ == "__main__":
    main()
