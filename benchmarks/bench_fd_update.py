"""The bare sketch's cost per row: ``FrequentDirections.update`` against the FD authors' plain
numpy algorithm.

A sketch used alone (matrix approximation, ``linbandit reproduce matrix-approx``) is updated row by
row and queried rarely. Both sides stream the same normalised Gaussian rows (``--n`` rows of
dimension ``--d``, sketch size ``--l``): ours is ``FrequentDirections(d, l).update(x)`` per row (the
public call, validation included), the baseline :class:`reference_fd.ReferenceFD` (a 2l-row buffer,
an SVD when full). Reported: microseconds per row, best of ``--repeats`` interleaved runs, one
BLAS thread, the ratio reference/ours (> 1: ours is faster), and the spectral gap between the two
sketches' ``S^T S`` relative to ``||X||_F^2`` (the same algorithm: rounding only). ``--queried``
adds the bandit pattern for comparison: a ``quad_inv`` of 10 arms before every row. ``--settled``
adds ours after one query before the first row: every row then goes to the basis state (a row
append each) instead of being kept raw until a query (what the raw phase saves:
``docs/architecture.md``, special cases kept).

    python benchmarks/bench_fd_update.py                 # d = 100, l = 20, 5000 rows
    python benchmarks/bench_fd_update.py --d 500 --l 50 --queried --settled
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_fd import ReferenceFD  # noqa: E402

from agents.sketches import FrequentDirections  # noqa: E402


def run_ours(
    rows: np.ndarray, l: int, queried: bool, settled: bool = False
) -> tuple[float, FrequentDirections]:
    est = FrequentDirections(rows.shape[1], l)
    arms = rows[:10]
    if settled:
        est.quad_inv(arms)
    start = time.perf_counter()
    for x in rows:
        if queried:
            est.quad_inv(arms)
        est.update(x)
    return (time.perf_counter() - start) / len(rows) * 1e6, est


def run_reference(rows: np.ndarray, l: int) -> tuple[float, ReferenceFD]:
    ref = ReferenceFD(rows.shape[1], l)
    start = time.perf_counter()
    for x in rows:
        ref.update(x)
    return (time.perf_counter() - start) / len(rows) * 1e6, ref


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--d", type=int, default=100)
    p.add_argument("--l", type=int, default=20)
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--queried", action="store_true", help="also time ours with a quad_inv before every row"
    )
    p.add_argument(
        "--settled", action="store_true", help="also time ours queried once before the first row"
    )
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((args.n, args.d))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    with threadpool_limits(limits=1):
        run_ours(rows[:200], args.l, False)  # warm-up
        run_reference(rows[:200], args.l)
        best_ours = best_ref = best_queried = best_settled = float("inf")
        for _ in range(args.repeats):
            us, est = run_ours(rows, args.l, False)
            best_ours = min(best_ours, us)
            us, ref = run_reference(rows, args.l)
            best_ref = min(best_ref, us)
            if args.queried:
                best_queried = min(best_queried, run_ours(rows, args.l, True)[0])
            if args.settled:
                best_settled = min(best_settled, run_ours(rows, args.l, False, settled=True)[0])
    gap = np.linalg.eigvalsh(est.covariance().numpy() - ref.covariance())
    frob = float((rows * rows).sum())
    print(
        f"d={args.d}, l={args.l}, {args.n} rows, best of {args.repeats} interleaved, 1 BLAS thread"
    )
    print(f"{'':>28} {'us/row':>8}")
    print(f"{'reference FD (numpy, SVD)':>28} {best_ref:8.2f}")
    print(
        f"{'FrequentDirections.update':>28} {best_ours:8.2f}   "
        f"reference/ours = {best_ref / best_ours:.2f}"
    )
    if args.queried:
        print(f"{'  with quad_inv every row':>28} {best_queried:8.2f}")
    if args.settled:
        print(
            f"{'  queried once, then rows':>28} {best_settled:8.2f}   "
            f"settled/raw = {best_settled / best_ours:.2f}"
        )
    print(
        f"|S^T S difference| / ||X||_F^2 = {float(np.abs(gap).max()) / frob:.1e} "
        f"(shrinkage: ours {est.total_shrinkage:.4g}, reference {ref.shrinkage:.4g})"
    )


if __name__ == "__main__":
    main()
