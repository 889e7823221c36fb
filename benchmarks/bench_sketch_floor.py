"""A sketched agent's round beside the floor of its arithmetic, at d = 784 (MNIST-sized).

The floor of a Frequent Directions round (SOFUL, CBSCFD) with a sketch of R basis rows in
dimension d and K arms is the dense arithmetic any sketched UCB round performs, each piece timed
alone here with numpy (float64, 1 BLAS thread) on arrays of those sizes:

* scoring: the arms against the basis, ``arms (K x d) @ V^T (d x R)``: ``K d R`` multiply-adds;
* core: the arms' coordinates against the ``R x R`` core inverse, ``P (K x R) @ H``, and its
  rank-one update by the played row: ``K R^2 + 2 R^2``. Every sketch of rank ``R`` pays it (the
  Woodbury form of Kuzborskij et al. (2019) and Wen et al. (2025) solves ``K`` triangular
  systems of size ``R``); it matters once ``R`` nears ``d``;
* the append: the new row's residual against the basis, ``x - V^T c``: ``d R`` (its coordinates
  ``c = V x`` are the played arm's row of the scoring's product);
* the shrink, amortised over the rows it frees: the Gram of the rows' coordinates (``R x R``), its
  ``eigh`` and the rotation of the basis, ``W_k^T V``. The fast FD buffer (Wen et al. (2025),
  Remark 1) shrinks when it holds ``2 l`` rows and keeps ``l - 1``: a shrink frees ``l + 1``
  rows.

R cycles from ``l - 1`` to ``min(2 l, d)`` between shrinks; the scoring, core and append are
timed at the mean of that cycle. OFUL's floor is its scoring against the ``d x d`` inverse
(``K d^2``) and the Sherman-Morrison update (``2 d^2``). The measured round is the agent's
``act`` + ``update`` on a pre-drawn stream (K unit-norm Gaussian arms, reward ``x^T theta* +
noise``; both calls given the same arm-set object, as from an environment, so that ``update``
reuses ``act``'s scoring), after ``2 l`` warm-up rounds (the sketch has filled and shrunk once),
over whole cycles of ``l + 1`` rounds (each with its one shrink: ``--rounds`` rounded up to a
multiple), best of ``--repeats``. Times are the thread's CPU time (1 thread: all the work runs
on it), which other processes on a shared machine do not inflate. Printed per agent and l: the
floor's pieces (ms a round), their sum, the measured round and the ratio measured / floor.

    python benchmarks/bench_sketch_floor.py                       # l in {20, 100, 403, 600}
    python benchmarks/bench_sketch_floor.py --sizes 50 --arms 100 --rounds 600
    python benchmarks/bench_sketch_floor.py --sizes 403 600 --split   # + where the round goes

``--split`` adds one run per sketched agent and l with the ``SketchCore`` methods of a round
timed (thread time): the scoring's product (``project``), the scores against ``H`` (``score``),
the append's Gram-Schmidt (``expand``), its bordered step of ``H`` (``_fold``), the shrink and
the coordinate rows' compression, in ms a round, and the rest of that run's round ("other").
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import time
import warnings

import numpy as np
from scipy.linalg.blas import dger
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root


#: The ``SketchCore`` methods ``--split`` times (none calls another).
SPLIT = ("project", "score", "expand", "_fold", "shrink", "compress")


@contextlib.contextmanager
def timed_methods(cls, totals: dict[str, float]):
    """Within the block, each method of ``cls`` named in ``totals`` adds its thread time there."""
    originals = {name: getattr(cls, name) for name in totals}

    def timed(name, method):
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            start = time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                totals[name] += time.thread_time() - start

        return wrapper

    try:
        for name, method in originals.items():
            setattr(cls, name, timed(name, method))
        yield
    finally:
        for name, method in originals.items():
            setattr(cls, name, method)


def _best(fn, repeats: int, calls: int) -> float:
    """CPU seconds of one call of ``fn``: the least of ``repeats`` means over ``calls`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.thread_time() - start) / calls)
    return best


def fd_floor(d: int, k: int, l: int, repeats: int) -> dict[str, float]:
    """Seconds a round of the floor's pieces for an FD sketch of size ``l`` (module docstring)."""
    rng = np.random.default_rng(0)
    full = min(2 * l, d)
    mean_rows = max(1, round((l - 1 + full) / 2))
    basis = np.linalg.qr(rng.standard_normal((d, mean_rows)))[0].T  # R x d, orthonormal rows
    core = np.linalg.inv(np.eye(mean_rows) + np.diag(rng.random(mean_rows)))
    arms = rng.standard_normal((k, d))
    coords = arms @ basis.T
    x, c = arms[0], coords[0]
    rows = rng.standard_normal((full, full))  # the rows' coordinates at the shrink
    full_basis = np.linalg.qr(rng.standard_normal((d, full)))[0].T

    def core_step():  # H p of every arm; H's rank-one step by BLAS ger (in place, as the core)
        hp = coords @ core
        h = hp[0]
        return hp, dger(-1.0 / (1.0 + c @ h), h, h, a=core.T, overwrite_a=1)

    def shrink():
        gram = rows.T @ rows
        _, vectors = np.linalg.eigh(gram)
        return vectors[:, -(l - 1) :].T @ full_basis if l > 1 else None

    return {
        "scoring": _best(lambda: arms @ basis.T, repeats, 50),
        "core": _best(core_step, repeats, 50),
        "append": _best(lambda: x - basis.T @ c, repeats, 50),
        "shrink": _best(shrink, repeats, 3) / (l + 1),
    }


def oful_floor(d: int, k: int, repeats: int) -> dict[str, float]:
    """Seconds a round of OFUL's floor: scoring against the inverse, the rank-1 update."""
    rng = np.random.default_rng(0)
    inverse = np.eye(d)
    arms = rng.standard_normal((k, d))
    x = rng.standard_normal(d)

    def update():  # Sherman-Morrison: A^-1 - A^-1 x x^T A^-1 / (1 + x^T A^-1 x), in place (ger)
        v = inverse @ x
        return dger(-1.0 / (1.0 + x @ v), v, v, a=inverse.T, overwrite_a=1)

    return {
        "scoring": _best(lambda: arms @ inverse, repeats, 20),
        "core": 0.0,
        "append": _best(update, repeats, 20),
        "shrink": 0.0,
    }


def measured(
    name: str, d: int, k: int, l: int, rounds: int, repeats: int, split: dict | None = None
) -> float:
    """Seconds of the agent's round (act + update) after its sketch has filled and shrunk once,
    over whole cycles of ``l + 1`` rounds (``rounds`` rounded up), best of ``repeats``; with
    ``split`` (method name -> 0.0), one more run with those ``SketchCore`` methods timed, their
    seconds a round written there, and the rest of that run's round as ``"other"``."""
    from agents import CBSCFD, OFUL, SOFUL
    from agents.sketches.core import SketchCore

    rng = np.random.default_rng(1)
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    warm = 2 * l if name != "OFUL" else 20
    if name != "OFUL":
        rounds = -(-rounds // (l + 1)) * (l + 1)
    arms = rng.standard_normal((warm + rounds, k, d))
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    noise = 0.1 * rng.standard_normal(warm + rounds)

    def play(totals: dict[str, float]) -> float:
        if name == "OFUL":
            agent = OFUL(lam=1.0, beta=0.1, d=d)
        else:
            agent = (SOFUL if name == "SOFUL" else CBSCFD)(lam=1.0, beta=0.1, sketch_size=l, d=d)
        for t in range(warm + rounds):
            if t == warm:
                start = time.thread_time()
                totals.update(dict.fromkeys(totals, 0.0))
            obs = arms[t]  # one object for act and update, as an env loop: the scoring is reused
            a = agent.act(obs)
            agent.update(obs, a, float(obs[a] @ theta + noise[t]))
        return (time.thread_time() - start) / rounds

    best = min(play({}) for _ in range(repeats))
    if split is not None:
        with timed_methods(SketchCore, split):
            whole = play(split)
        split.update({key: value / rounds for key, value in split.items()})
        split["other"] = whole - sum(split.values())
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=784)
    parser.add_argument("--arms", type=int, default=10)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 100, 403, 600])
    parser.add_argument("--agents", nargs="+", default=["OFUL", "SOFUL", "CBSCFD"])
    parser.add_argument("--rounds", type=int, default=400, help="timed rounds after the warm-up")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--split", action="store_true", help="time a round's SketchCore methods (one more run)"
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the sketch-size warning of l with 2 l >= d
    import torch

    torch.set_num_threads(1)
    print(
        f"d = {args.d}, K = {args.arms}, 1 thread, float64; ms a round; load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(
        "agent   l    | scoring    core  append  shrink/row | floor   | measured | measured/floor"
    )
    with threadpool_limits(1):
        for name in args.agents:
            for l in [args.d] if name == "OFUL" else args.sizes:
                floor = (
                    oful_floor(args.d, args.arms, args.repeats)
                    if name == "OFUL"
                    else fd_floor(args.d, args.arms, l, args.repeats)
                )
                split = dict.fromkeys(SPLIT, 0.0) if args.split and name != "OFUL" else None
                round_s = measured(name, args.d, args.arms, l, args.rounds, args.repeats, split)
                total = sum(floor.values())
                label = "-" if name == "OFUL" else str(l)
                pieces = " ".join(
                    f"{1e3 * floor[key]:{width}.3f}"
                    for key, width in (("scoring", 7), ("core", 7), ("append", 7), ("shrink", 10))
                )
                print(
                    f"{name:7s} {label:4s} | {pieces} | {1e3 * total:7.3f} | "
                    f"{1e3 * round_s:8.3f} | {round_s / total:6.2f}x",
                    flush=True,
                )
                if split is not None:
                    parts = "  ".join(f"{key} {1e3 * value:.3f}" for key, value in split.items())
                    print(f"    split (ms a round): {parts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
