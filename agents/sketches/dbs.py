"""Dyadic Block Sketching (Wen et al. (2025), Sec. 3: Alg. 1, fast Alg. 4, eq. 3, eq. 7, Theorem 1).

The stream of rows is cut into consecutive *blocks*. Block ``i`` is summarised by its own
Frequent Directions (or Robust FD) sketch of size ``l_i = l0 * 2^i``; only the last block is
*active* (receives rows), the others are frozen. The estimate of ``X^T X`` is the sum of the
blocks' ``S_i^T S_i`` (decomposability, Lemma 3), i.e. the row stack ``S = [S_0; S_1; ...]``:

    A_hat   = c I + S^T S,                  c = reg (FD) or reg + sum_i alpha_i (RFD)
    A_hat^-1 = (1/c) (I_d - S^T M S),       M = (S S^T + c I)^-1            (eq. 5 and eq. 3)

The active block is closed (Alg. 1 line 7) when BOTH

    BlockSize + ||x||^2 >= eps * l0        (BlockSize = squared Frobenius mass of the block)
    willExcessSketch(x)                    (inserting x would make the block's FD discard mass)

and ``x`` then opens a new block of twice the sketch size (lines 10-12). Once the number of
closed blocks reaches ``block_cap - 1`` with ``block_cap = floor(log2(d/l0 + 1))``
(Invariant 2, line 3) every further row is added exactly (rank-1 / Sherman-Morrison), so the
error stops growing. Theorem 1: ``||X^T X - S^T S||_2 <= 2 eps``; more precisely, with
``total_shrinkage`` the sum over blocks of the FD shrink values,

    0  <=  X^T X - S^T S  <=  total_shrinkage * I,     total_shrinkage < sum_i eps l0 / l_i < 2 eps

because a block only ever shrinks while its mass (including the row being inserted) is
``< eps l0``, and FD of size ``l_i`` discards at most (mass)/l_i (Liberty 2013). For RFD
blocks the discarded mass is added back, ``alpha = sum_i alpha_i = total_shrinkage``, so

    -alpha I <= X^T X - (S^T S + alpha I) <= 0,   so   ||X^T X - covariance()||_2 <= alpha < 2 eps.

Layout (one implementation, batch dimension first: ``batch_size=B`` members, ``None`` = one sketch).
Member i's rows ``[S~_i; S*_i]`` (frozen blocks, then the active block's FD buffer) live in the
basis state of :mod:`agents.sketches.core`: an orthonormal basis ``V`` of their span whose first
``frozen_basis_i`` vectors span the frozen rows, the rows' coordinates ``C`` (the ``frozen_rows_i``
frozen rows first) and ``H = (C^T C + c I)^-1``, so ``A_hat^-1 = (I - V^T V) / c + V^T H V`` is eq.
5 evaluated without cancellation. eq. 7 (a row appended to the active block) is the core's bordered
append; eq. 3 (the inverse of the stacked Gram after the active block shrinks) is its
refactorization; the active block's FD shrink is the core's shrink of the rows
``[frozen_rows_i, N_i)``, which leaves the frozen rows and their basis as they are. The blocks'
bookkeeping is one record, :class:`BlockState`. Members close blocks on their own rounds; the
decisions of Alg. 1 line 7 are taken for all at once with masks, shrinks and look-aheads are grouped
by (rows, sketch size) into batched decompositions. A member that switches to exact updates hands
its ``A_hat^-1`` (formed once from the basis state) and ``b`` to an
:class:`~agents.sketches.exact.ExactCovariance`
(:meth:`~agents.sketches.exact.ExactCovariance.from_inverse`), which holds every exact member.

Cost (``fast=True``, Alg. 4): O(K d R + K R^2) to score K arms (one product with the basis),
O(d R + R^2) to insert, O(R^3 + l R d) per shrink (once per ~l rows). ``fast=False`` runs Alg. 1
over textbook FD blocks (one shrink per row).

**Never above OFUL, in memory or in time (``memory_cap=True``, ``time_cap=True``, the defaults; our
extension of Invariant 2).** When closing a block would open one whose layout holds more bytes than
OFUL's ``d x d`` inverse (:meth:`DyadicBlockSketch.layout_bytes`), or whose cost per round at its
peak, the scoring product ``K d R`` (``R`` basis vectors, ``K`` the arms of the last scored round)
plus its appends and its shrinks amortised over the rows between them (:func:`block_round_cost`),
would pass OFUL's ``(K + 1) d^2`` (:func:`exact_round_cost`), the member switches to exact updates
at that moment (as at the cap: the new row is folded into the inverse). Both are operation counts,
not timings, so the switch is deterministic. Before the switch nothing changes: the blocks and
choices are the paper's. With both caps off only the literal cap of Alg. 1 line 3 applies (the
paper's rule; its peak can pass OFUL's memory). All keep Theorem 1: exact rows add no error.

Paper slips and gaps, settled here (tests in ``tests/test_dbs.py``):

* **eq. 3's M-blocks.** eq. 3 puts the inverses ``M~``, ``M*`` in the diagonal blocks of a Gram
  matrix and adds ``lambda I`` again. Read literally it is not ``(S S^T + lambda I)^-1``. We use
  the Gram blocks, ``M = ([[S~ S~^T, S~ S*^T], [S* S~^T, S* S*^T]] + c I)^-1``, the only reading
  that makes eq. 5 the inverse of ``c I + S^T S`` (the frozen part's Gram ``S~ S~^T`` is what we
  cache when a block closes; eq. 7 then agrees exactly, which the tests check).
* **RFD prefactor.** eq. 5 / Alg. 5 line 8 print ``1/lambda``; with RFD blocks the ridge is
  ``c = lambda + sum_i alpha_i`` (App. E.3 uses
  ``A_hat = lambda I + sum alpha_i I + sum S_i^T S_i``), and eq. 7's ``xi`` uses the same
  ``alpha + lambda``.
* **log base of the cap.** Invariant 2 writes ``floor(log(d/l0 + 1))``. We use log2: it is the
  unique base for which the cap means "the sketch sizes of all blocks sum to at most d",
  ``l0 (2^C - 1) <= d``; we compute C in integers as the largest such C (no float log).
  natural log would give 1-2 sketched blocks in the paper's settings.
* **the cap (line 3).** ``length(L) >= C - 1`` switches to exact updates. The row that closes
  block ``C - 2`` opens block ``C - 1`` (size ``l0 2^(C-1)``) per lines 10-12; it holds that one
  row exactly (a single row never shrinks), so we switch to the exact d x d inverse at that
  moment and fold that row into it. Hence ``n_blocks <= block_cap`` always, ``n_blocks ==
  block_cap`` in exact mode, and the sketch sizes of all blocks sum to ``<= d``. If ``C = 1``
  (``l0 > d/3``) the algorithm is exact (OFUL) from the first row; ``l0 > d`` (C = 0, a sketch
  larger than the space) is rejected.
* **threshold.** Wen et al. (2025) (Alg. 1 line 7 and Alg. 4 line 9) keeps x in the block iff
  ``BlockSize + ||x||^2 < eps l0`` (strict) or not willExcessSketch; Wen et al. (2024)'s fast
  algorithm used ``eps/2``, we follow Wen et al. (2025) (``eps l0`` for both variants).
* **willExcessSketch.** Computed as the paper says, by inserting x into a temporary copy of the
  active block and reading FD's shrink value (:func:`~agents.sketches.core.fd_shrink` on the
  eigenvalues of the bordered Gram, which treats rounding-level values as 0, so low-rank streams
  are not split). With the fast
  2l buffer a shrink happens only when x fills the buffer, so a block may keep absorbing
  (exactly held) rows past the mass threshold until that moment: Theorem 1's proof only needs
  "a block never discards mass once its BlockSize reaches eps l0", which this keeps.
* **the sentinel (App. B.1).** "When the number of rows currently stored in a block is smaller than
  its sketch size l (or d), set willExcessSketch to True": with ``sentinel=True`` (default, the
  paper's practice) a block that has received fewer than ``l_i`` rows closes on the mass threshold
  alone. We count rows *received by the block* (the fast buffer's stored count oscillates between
  ``l - 1`` and ``2l``), and never close an EMPTY block on the sentinel (it would be an inactive
  block holding nothing): an empty block is closed only if FD would actually discard the first row
  (possible only when ``l = 1``). ``sentinel=False`` always uses the shrink test; it keeps low-rank
  streams in fewer blocks: on rank-k data the last block index is at most ``floor(log2(k/l0)) + 1``
  (Theorem 1's ``ceil(log2(k/l0))``, plus one when k/l0 is a power of two because FD of size l holds
  l - 1 directions exactly), with no condition like ``eps l0 >= l_i ||x||^2`` that the sentinel
  needs for the same count). App. D.2's "at least d rows" is a slip for "l rows". Either way the
  error bound is unaffected (the sentinel only closes blocks earlier).
* **Invariant 1 as printed** ("each inactive block has sketch size >= its rank, or block size
  < eps l0") is not what line 7 maintains: "or willExcessSketch is False" lets a block that has
  already shrunk keep absorbing rows that need no shrink, past ``eps l0``. What does hold, and
  what Theorem 1's proof uses, is that a block discards mass only while its block size
  (including the row being inserted) is ``< eps l0``, so its ``sigma_bar_i < eps l0 / l_i``.
* **Theorem 1's constant.** Blocks are 0-indexed (Alg. 1), so the per-block bound is
  ``eps / 2^i`` for ``i >= 0`` and the sum is ``< 2 eps`` (the proofs of Thm. 2-4 substitute
  ``sum sigma_bar <= eps``, a slip: it is ``2 eps``; we expose the exact ``total_shrinkage``).

Example: ``d = 40``, ``l0 = 4``, so ``block_cap = 3`` (sketch sizes 4, 8, 16 sum to 28 <= 40).
The literal cap of Alg. 1 line 3, with OFUL's caps off: the third block opens, holding its one
row exactly, and the sketch turns exact; Theorem 1 bounds the error.

>>> import torch
>>> X = torch.randn(300, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
>>> X = X / X.norm(dim=1, keepdim=True)
>>> dbs = DyadicBlockSketch(40, l0=4, eps=2.0, dtype=torch.float64, memory_cap=False,
...                         time_cap=False)
>>> for x in X:
...     dbs.update(x)
>>> dbs.block_cap, dbs.n_blocks, dbs.exact_mode
(3, 3, True)
>>> err = torch.linalg.matrix_norm(X.T @ X - dbs.covariance(), ord=2)
>>> bool(err <= dbs.total_shrinkage + 1e-9) and dbs.total_shrinkage < 2 * 2.0
True

With the defaults the sketch turns exact one block sooner: at ``d = 40`` the second block
(sketch size 8) would already hold more bytes than OFUL's ``40 x 40`` inverse and cost more per
round, so the row that closes block 0 is folded into the exact inverse.

>>> capped = DyadicBlockSketch(40, l0=4, eps=2.0, dtype=torch.float64)
>>> for x in X:
...     capped.update(x)
>>> capped.block_cap, capped.n_blocks, capped.exact_mode
(3, 2, True)
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import Interval, Options, check_value, per_member
from .base import CovarianceEstimator, ScoreTerms
from .core import SketchCore, shrink_groups
from .exact import ExactCovariance
from .fd import _listed

__all__ = [
    "BlockInfo",
    "BlockState",
    "DyadicBlockSketch",
    "block_cap",
    "block_round_cost",
    "check_dbs_params",
    "exact_round_cost",
]

_SKETCHES = ("fd", "rfd")


def block_cap(d: int, l0: int) -> int:
    """Invariant 2's cap ``floor(log2(d/l0 + 1))``, in integers: the largest C with
    ``l0 (2^C - 1) <= d``."""
    c = 0
    while l0 * (2 ** (c + 1) - 1) <= d:
        c += 1
    return c


def exact_round_cost(d: int, n_arms) -> np.ndarray:
    """Multiply-adds of one exact (OFUL) round: scoring ``K d^2`` (``arms A^-1``) and the rank-1
    update ``d^2``."""
    return (np.asarray(n_arms, dtype=np.float64) + 1.0) * d * d


def block_round_cost(d: int, n_arms, rows, l, fast: bool) -> np.ndarray:
    """Multiply-adds of one round of a sketched member whose block of sketch size ``l`` is at its
    peak, ``rows`` held rows (frozen plus the full buffer; the basis has ``R = min(rows, d)``
    vectors): scoring ``K d R`` (``arms V^T``) and ``K R^2`` (``P H``); the append ``d R`` (its
    residual) and ``3 R^2`` (the core inverse's bordered update and ``H b_coords``); and the shrink
    every ``l + 1`` rows (fast; every row textbook) amortised: the range's Gram ``2 l R^2``, its
    eigendecomposition and the refactorization ``5 R^3``, the rotation of the new basis
    ``l R d``."""
    R = np.minimum(np.asarray(rows, dtype=np.float64), d)
    l = np.asarray(l, dtype=np.float64)
    K = np.asarray(n_arms, dtype=np.float64)
    per_shrink = 2.0 * l * R * R + 5.0 * R**3 + l * R * d
    return K * d * R + K * R * R + d * R + 3.0 * R * R + per_shrink / (l + 1.0 if fast else 1.0)


#: The rule of ``l0`` alone (checked by agents._validate.check_value, which writes the message)
L0_RULE = [Interval(numbers.Integral, 1, None, hint="the initial sketch size")]


def _l0_check(d: int | None):
    def check(name: str, l0) -> int:
        l0 = check_value(name, l0, L0_RULE)
        if d is not None and l0 > d:
            raise ValueError(
                f"{name}={l0} exceeds the dimension d={d}: a sketch larger than the space is "
                "pointless and the block cap floor(log2(d/l0 + 1)) would be 0; choose "
                "1 <= l0 <= d (l0 > d/3 means exact updates)"
            )
        return int(l0)

    return check


def _eps_check(name: str, eps) -> float:
    try:
        eps_f = float(eps)
    except (TypeError, ValueError):
        eps_f = float("nan")
    if isinstance(eps, bool) or not (math.isfinite(eps_f) and eps_f > 0):
        raise ValueError(f"{name} (the error parameter) must be a finite number > 0, got {eps!r}")
    return eps_f


def check_dbs_params(
    l0, eps, sketch, fast=True, sentinel=True, d: int | None = None, batch_size: int | None = None
):
    """Validate Dyadic Block Sketching's parameters (``d=None``: dimension not known yet).

    Raises ``ValueError`` naming the bad parameter and the fix; returns ``(l0, eps)`` as an int
    and a float, or (``batch_size`` set and the members' values differ, see
    :func:`agents._validate.per_member`) as per-member arrays ``(B,)``.
    """
    l0 = per_member("l0", l0, batch_size, _l0_check(d))
    eps = per_member("eps", eps, batch_size, _eps_check)
    if not isinstance(sketch, str) or sketch not in _SKETCHES:
        raise ValueError(f"sketch must be 'fd' or 'rfd', got {sketch!r}")
    check_value("fast", fast, [Options((True, False), hint="True: fast Alg. 4, False: Alg. 1")])
    check_value("sentinel", sentinel, [bool])
    return l0, eps


@dataclass(frozen=True)
class BlockInfo:
    """One block of the sketch (a snapshot; see :meth:`DyadicBlockSketch.blocks`).

    Attributes:
        index: 0-based block index ``i``.
        sketch_size: ``l_i = l0 * 2^i``.
        block_size: squared Frobenius mass of the rows the block received (Wen et al. (2025)'s
            BlockSize).
        n_rows: rows the block received.
        rows_held: sketch rows it holds now (0 once folded into the exact part).
        shrinkage: sum of its FD shrink values (its sigma_bar_i).
        alpha: its RFD counter (0 for FD).
        active: whether it is the block receiving rows.
    """

    index: int
    sketch_size: int
    block_size: float
    n_rows: int
    rows_held: int
    shrinkage: float
    alpha: float
    active: bool


@dataclass
class BlockState:
    """Dyadic Block Sketching's block bookkeeping, one entry per member (host arrays ``(B,)``),
    changed only by its own methods. A member's frozen blocks hold the first ``frozen_rows`` rows
    of its basis state (:mod:`agents.sketches.core`), on the first ``frozen_basis`` basis vectors;
    the active block's FD sketch holds the rows after them.

    Attributes:
        n_frozen: closed blocks (including the one a member switching to exact updates is in).
        frozen_rows, frozen_basis: rows and basis vectors of the frozen blocks.
        frozen_shrinkage, frozen_alpha, frozen_weighted_shrinkage: sums over the closed blocks of
            ``sigma_bar_i``, ``alpha_i`` and ``l_i sigma_bar_i``.
        size: the active block's sketch size ``l0 2^i``.
        buffer: rows its FD buffer holds before a shrink (``2 size`` fast, ``size`` textbook).
        held: rows its FD sketch holds.
        received: rows it received.
        mass: its BlockSize, the squared Frobenius mass of the rows it received.
        shrinkage, alpha: its FD shrinkage ``sigma_bar`` and RFD counter ``alpha``.
        exact: whether the member switched to exact updates.
        exact_since: the row count from which its rows are added exactly.
        closed: each member's closed blocks, oldest first.
    """

    n_frozen: np.ndarray
    frozen_rows: np.ndarray
    frozen_basis: np.ndarray
    frozen_shrinkage: np.ndarray
    frozen_alpha: np.ndarray
    frozen_weighted_shrinkage: np.ndarray
    size: np.ndarray
    buffer: np.ndarray
    held: np.ndarray
    received: np.ndarray
    mass: np.ndarray
    shrinkage: np.ndarray
    alpha: np.ndarray
    exact: np.ndarray
    exact_since: np.ndarray
    closed: list[list[BlockInfo]]
    fast: bool

    @classmethod
    def start(cls, l0: np.ndarray, fast: bool) -> BlockState:
        """Every member in its first, empty block of sketch size ``l0`` (host ints ``(B,)``);
        ``fast``: 2l-row FD buffers (Alg. 4), else textbook FD (Alg. 1)."""
        B = l0.size
        ints, floats = (lambda: np.zeros(B, dtype=np.int64)), (lambda: np.zeros(B))
        size = np.array(l0, dtype=np.int64)
        return cls(
            ints(),
            ints(),
            ints(),
            floats(),
            floats(),
            floats(),
            size,
            size * (2 if fast else 1),
            ints(),
            ints(),
            floats(),
            floats(),
            floats(),
            np.zeros(B, dtype=bool),
            ints(),
            [[] for _ in range(B)],
            fast,
        )

    def active(self, i: int) -> BlockInfo:
        """Member ``i``'s active block."""
        return BlockInfo(
            len(self.closed[i]),
            int(self.size[i]),
            float(self.mass[i]),
            int(self.received[i]),
            int(self.held[i]),
            float(self.shrinkage[i]),
            float(self.alpha[i]),
            True,
        )

    def receive(
        self, members: np.ndarray | None, mass: np.ndarray, live: np.ndarray | None
    ) -> None:
        """The active blocks of ``members`` (host bools; every member when None) receive a row:
        their BlockSize becomes ``mass``; the sketch holds it where ``live`` (FD skips zero
        rows)."""
        self.mass = mass if members is None else np.where(members, mass, self.mass)
        self.received += 1 if members is None else members
        self.held += 1 if live is None else live

    def shrunk(
        self, group: np.ndarray, delta: np.ndarray, kept: np.ndarray, add_back: bool
    ) -> None:
        """The active blocks of ``group`` shrank by ``delta`` to ``kept`` rows (RFD:
        ``alpha += delta``)."""
        self.shrinkage[group] += delta
        if add_back:
            self.alpha[group] += delta
        self.held[group] = kept

    def close(self, idx: np.ndarray, rows: np.ndarray, basis: np.ndarray) -> None:
        """Alg. 1 lines 10-12: the active blocks of ``idx`` join the frozen ones, which now hold the
        members' first ``rows`` rows on ``basis`` basis vectors, and an empty block of twice the
        sketch size opens."""
        for i in idx.tolist():
            self.closed[i].append(dataclasses.replace(self.active(i), active=False))
        self.frozen_shrinkage[idx] += self.shrinkage[idx]
        self.frozen_alpha[idx] += self.alpha[idx]
        self.frozen_weighted_shrinkage[idx] += self.size[idx] * self.shrinkage[idx]
        self.n_frozen[idx] += 1
        self.frozen_rows[idx], self.frozen_basis[idx] = rows, basis
        self.size[idx] *= 2
        self.buffer[idx] = self.size[idx] * (2 if self.fast else 1)
        for counter in (self.held, self.received, self.mass, self.shrinkage, self.alpha):
            counter[idx] = 0

    def go_exact(self, idx: np.ndarray, mass: np.ndarray, rows: int, since: int) -> None:
        """The members ``idx`` switch to exact updates in the block they are in, which holds
        ``rows`` rows (the switching row, or none from the start) of ``mass`` exactly; their sketch
        is gone and their rows are exact from the ``since``-th on."""
        for i, m in zip(idx.tolist(), mass.tolist()):
            self.closed[i].append(
                BlockInfo(len(self.closed[i]), int(self.size[i]), m, rows, 0, 0.0, 0.0, False)
            )
        self.n_frozen[idx] += 1
        self.exact[idx] = True
        self.exact_since[idx] = since
        self.frozen_rows[idx] = self.frozen_basis[idx] = self.held[idx] = 0


class DyadicBlockSketch(CovarianceEstimator):
    """Dyadic Block Sketching over FD or RFD blocks, with eq. 5 queries of ``A_hat^-1``.

    Args:
        d: dimension of the rows.
        l0: initial sketch size, ``1 <= l0 <= d``; block ``i`` has sketch size ``l0 * 2^i``.
        eps: error parameter > 0; a block closes once its mass would reach ``eps * l0``
            (and its sketch would have to shrink). Global error ``<= 2 eps`` (Theorem 1).
            Batched, ``l0``, ``eps`` and ``reg`` may each give one value per member: member i then
            runs its single sketch's blocks, threshold and cap in the row layout of the batch.
        sketch: ``"fd"`` (Frequent Directions blocks) or ``"rfd"`` (Robust FD: the discarded
            mass is added back as ``alpha I``).
        reg: the ridge ``lambda > 0`` of ``A_hat = reg I + ...``.
        fast: ``True``: fast Alg. 4 (2l-row FD buffers, one shrink per ~l rows); ``False``: Alg. 1
            over textbook FD (a shrink per row).
        sentinel: App. B.1's sentinel (see the module docstring); ``True`` follows the paper.
        memory_cap: ``True`` (default): also switch to exact updates as soon as the next block's
            layout would hold more bytes than OFUL's d x d inverse (module docstring);
            ``False``: only the literal block cap of Alg. 1 line 3 (and ``time_cap``).
        time_cap: ``True`` (default): also switch as soon as the next block would cost more
            multiply-adds per round at its peak than an exact round (module docstring).
        keep_gram: also keep the d x d Gram after the switch to exact updates, so that
            :meth:`covariance` is exact there (diagnostics and tests).
        device, dtype: where the state lives (float64 default on CPU).
        batch_size: ``None`` for one sketch (unbatched shapes), or B independent sketches.

    Attributes (per member arrays when batched):
        block_cap: ``floor(log2(d/l0 + 1))``, the most blocks there will ever be (an int array
            ``(B,)`` when the members' ``l0`` differ).
        n_exact_rows: rows added exactly after the switch.
        frobenius_mass: ``||X||_F^2``, the squared norms of all rows so far.
        block_state: the blocks of every member (:class:`BlockState`).
        core: the sketched members' basis state (None once every member is exact).
    """

    def __init__(
        self,
        d: int,
        l0: int,
        eps: float,
        *,
        sketch: str = "fd",
        reg: float = 1.0,
        fast: bool = True,
        sentinel: bool = True,
        memory_cap: bool = True,
        time_cap: bool = True,
        keep_gram: bool = False,
        device=None,
        dtype=None,
        batch_size: int | None = None,
    ):
        d = check_value("d", d, [Interval(numbers.Integral, 1, None)])
        l0, eps = check_dbs_params(
            l0,
            eps,
            sketch,
            fast,
            sentinel,
            d=int(d),
            batch_size=None if batch_size is None else int(batch_size),
        )
        for name, flag in (("memory_cap", memory_cap), ("time_cap", time_cap)):
            check_value(name, flag, [bool])
        super().__init__(int(d), reg=reg, device=device, dtype=dtype, batch_size=batch_size)
        self.l0, self.eps, self.sketch = l0, eps, sketch
        self.robust = sketch == "rfd"
        self.fast, self.sentinel = fast, sentinel
        self.memory_cap, self.time_cap = memory_cap, time_cap
        self.keep_gram = bool(keep_gram)
        self.threshold = self.eps * self.l0  # Alg. 1 line 7: BlockSize + ||x||^2 < eps * l0
        B = self.batch_size
        l0s = np.broadcast_to(np.asarray(self.l0, dtype=np.int64), (B,))
        self._block_caps = np.array([block_cap(self.d, int(v)) for v in l0s], dtype=np.int64)
        self.block_cap = self._block_caps if np.ndim(self.l0) else int(self._block_caps[0])
        self.block_state = BlockState.start(l0s, fast)
        self._members = np.arange(B)
        self._frob = np.zeros(B)  # ||X||_F^2 of the rows so far
        self._n_arms = 1  # arms per round of the last scoring (the time cap's K)
        self._exact: ExactCovariance | None = None  # the exact members, in member order
        self.core: SketchCore | None = SketchCore(
            self.xp, B, self.d, self.dtype, self.cdtype, 0, 0, self._reg_host()
        )
        # exact from row 1 where Alg. 1 line 3 holds from the start (or the first block costs more)
        start_exact = (self._block_caps <= 1) | self._over_caps(np.arange(B))
        sketched = np.flatnonzero(~start_exact)
        if sketched.size:
            rows = int(self.block_state.buffer[sketched].max())
            self.core.ensure(rows, rows)
        if start_exact.any():
            self._switch_to_exact(np.flatnonzero(start_exact), np.zeros(B), 0)

    # -- sizes, bytes and costs ------------------------------------------------------------------
    def layout_bytes(self, frozen_rows, buffer):
        """Bytes a sketched member holds with ``frozen_rows`` frozen rows and an active buffer of
        ``buffer`` rows (:meth:`agents.sketches.core.SketchCore.layout_bytes` with
        ``frozen_rows + buffer`` rows and as many basis vectors, at most ``d``)."""
        rows = np.asarray(frozen_rows) + buffer
        es = self.dtype.itemsize
        ec = self.cdtype.itemsize
        return SketchCore.layout_bytes(self.d, rows, np.minimum(rows, self.d), es, ec)

    def _exact_bytes(self) -> int:
        ec = self.cdtype.itemsize
        return ExactCovariance.peak_member_bytes(self.d, self.dtype, self.keep_gram, ec)

    def _over_caps(self, idx: np.ndarray) -> np.ndarray:
        """Whether the members ``idx``, about to open their block of the active size after their
        frozen rows, would hold more than OFUL (``memory_cap``) or cost more per round
        (``time_cap``)."""
        bs = self.block_state
        return self.opens_over_caps(
            self.d,
            bs.frozen_rows[idx],
            bs.size[idx],
            n_arms=self._n_arms,
            fast=self.fast,
            memory_cap=self.memory_cap,
            time_cap=self.time_cap,
            keep_gram=self.keep_gram,
            dtype=self.dtype,
            core_dtype=self.cdtype,
        )

    @classmethod
    def opens_over_caps(
        cls,
        d: int,
        frozen_rows,
        l,
        *,
        n_arms: int,
        fast: bool,
        memory_cap: bool,
        time_cap: bool,
        keep_gram: bool = False,
        dtype: torch.dtype = torch.float64,
        core_dtype: torch.dtype = torch.float64,
    ) -> np.ndarray:
        """The switch rule, for an estimator (:meth:`_over_caps`) and for an estimate made before
        any exists: whether a member about to open a block of sketch size ``l`` after
        ``frozen_rows`` frozen rows would hold more bytes than the exact inverse (``memory_cap``) or
        cost more multiply-adds per round of ``n_arms`` arms (``time_cap``). Accepts numpy int
        arrays."""
        frozen_rows, l = np.asarray(frozen_rows), np.asarray(l)
        rows = frozen_rows + (2 * l if fast else l)
        over = np.zeros(rows.shape, dtype=bool)
        if memory_cap:
            es = dtype.itemsize
            ec = core_dtype.itemsize
            exact = ExactCovariance.peak_member_bytes(d, dtype, keep_gram, ec)
            over |= SketchCore.layout_bytes(d, rows, np.minimum(rows, d), es, ec) > exact
        if time_cap:
            over |= block_round_cost(d, n_arms, rows, l, fast) > exact_round_cost(d, n_arms)
        return over

    @classmethod
    def first_member_bytes(
        cls,
        d: int,
        l0: int,
        n_arms: int,
        fast: bool = True,
        memory_cap: bool = True,
        time_cap: bool = True,
        keep_gram: bool = False,
        dtype: torch.dtype = torch.float64,
        core_dtype: torch.dtype = torch.float64,
    ) -> int:
        """Bytes one member allocates first, without building anything: its first block's layout
        (``l0``'s buffer, :meth:`layout_bytes` with no frozen rows), or the exact inverse where the
        sketch is exact from the first row (Alg. 1 line 3's cap is reached at once, or the first
        block is over a cap at one arm per round, as at construction, or at ``n_arms``, as at the
        first scoring)."""
        ec = core_dtype.itemsize
        caps = dict(
            fast=fast,
            memory_cap=memory_cap,
            time_cap=time_cap,
            keep_gram=keep_gram,
            dtype=dtype,
            core_dtype=core_dtype,
        )
        if (
            block_cap(d, l0) <= 1
            or cls.opens_over_caps(d, 0, l0, n_arms=1, **caps)
            or cls.opens_over_caps(d, 0, l0, n_arms=n_arms, **caps)
        ):
            return int(ExactCovariance.peak_member_bytes(d, dtype, keep_gram, ec))
        rows = 2 * l0 if fast else l0
        es = dtype.itemsize
        return int(SketchCore.layout_bytes(d, rows, min(rows, d), es, ec))

    @classmethod
    def peak_member_bytes(
        cls,
        d: int,
        l0: int,
        fast: bool = True,
        dtype: torch.dtype = torch.float64,
        memory_cap: bool = True,
        keep_gram: bool = False,
        core_dtype: torch.dtype = torch.float64,
    ) -> int:
        """Bytes one member can hold at its peak, without building anything: the largest layout of
        the blocks it may open (block ``i`` after at most ``sum_{j<i} (cap_j - 1)`` frozen rows, a
        block closing with up to one row less than its buffer, while Alg. 1 line 3's cap and, with
        ``memory_cap``, OFUL's bytes allow) and the exact inverse it ends with. The time cap only
        ever switches earlier, so it does not raise the peak."""
        es = dtype.itemsize
        ec = core_dtype.itemsize
        exact = ExactCovariance.peak_member_bytes(d, dtype, keep_gram, ec)
        cap_blocks = block_cap(d, l0)
        peak, frozen_rows, l = exact, 0, l0
        for _ in range(max(cap_blocks - 1, 0)):
            if cls.opens_over_caps(
                d,
                frozen_rows,
                l,
                n_arms=1,
                fast=fast,
                memory_cap=memory_cap,
                time_cap=False,
                keep_gram=keep_gram,
                dtype=dtype,
                core_dtype=core_dtype,
            ):
                break
            rows = frozen_rows + (2 * l if fast else l)
            layout = int(SketchCore.layout_bytes(d, rows, min(rows, d), es, ec))
            peak = max(peak, layout)
            frozen_rows += (2 * l if fast else l) - 1
            l *= 2
        return int(peak)

    # -- byte estimate, asked by the agents before building one (agents.estimator_agent) ------
    @classmethod
    def estimate_member_bytes(
        cls,
        d: int,
        l0,
        eps=None,
        *,
        sketch: str = "fd",
        fast: bool = True,
        sentinel: bool = True,
        memory_cap: bool = True,
        time_cap: bool = True,
        keep_gram: bool = False,
        n_arms: int = 1,
        initial: bool = False,
        dtype: torch.dtype = torch.float64,
        core_dtype: torch.dtype = torch.float64,
    ) -> int:
        """Bytes one member holds, for the largest over the members' ``l0`` (one value, or one per
        member; ``eps``, ``sketch`` and ``sentinel`` change no size). ``initial``:
        :meth:`first_member_bytes`, its first block (or the exact inverse where it is exact from the
        first row). The peak is a bound, not an equality: :meth:`peak_member_bytes` plus the exact
        inverse, because a member of a batch keeps its row of the padded sketch state until every
        member is exact, beside its own inverse (a single sketch drops its blocks when it
        switches)."""
        l0s = [int(l) for l in np.atleast_1d(l0)]
        caps = dict(
            fast=fast,
            memory_cap=memory_cap,
            keep_gram=keep_gram,
            dtype=dtype,
            core_dtype=core_dtype,
        )
        if initial:
            return max(cls.first_member_bytes(d, l, n_arms, time_cap=time_cap, **caps) for l in l0s)
        exact = ExactCovariance.peak_member_bytes(d, dtype, keep_gram, core_dtype.itemsize)
        return exact + max(cls.peak_member_bytes(d, l, **caps) for l in l0s)

    # -- end of the byte estimate --------------------------------------------------------------

    def _set_n_arms(self, k: int) -> None:
        """The arms per round the time cap assumes (``K``, seen at scoring). Members that have not
        received a row yet decide their first block's cap again with it (nothing to convert)."""
        self._n_arms = k
        bs = self.block_state
        fresh = np.flatnonzero(~bs.exact & (bs.n_frozen == 0) & (bs.received == 0))
        if self.time_cap and fresh.size:
            over = fresh[self._over_caps(fresh)]
            if over.size:
                self._switch_to_exact(over, np.zeros(self.batch_size), 0)

    # -- per-member scalars ------------------------------------------------------------------------
    def c(self) -> np.ndarray:
        """The ridge of ``A_hat_i``: reg, plus every block's alpha for RFD (host float64
        ``(B,)``)."""
        return self._reg_host() + self._alpha_total()

    def inexact_updates(self) -> str | None:
        """The exact members' (:meth:`~agents.sketches.exact.ExactCovariance.inexact_updates`);
        the sketched blocks' basis form does not cancel."""
        return None if self._exact is None else self._exact.inexact_updates()

    def _alpha_total(self):
        return self.block_state.frozen_alpha + self.block_state.alpha

    @property
    def exact(self) -> np.ndarray:
        """Per member, whether it switched to exact updates (host bools ``(B,)``, read only)."""
        return self.block_state.exact

    @property
    def rows(self) -> np.ndarray:
        """Sketch rows held per member (0 once exact)."""
        return np.where(self.exact, 0, self.core.N if self.core is not None else 0)

    @property
    def exact_mode(self):
        """Whether the sketch switched to exact (OFUL-like) rank-1 updates."""
        return self._host_out(self.exact)

    @property
    def n_exact_rows(self):
        return self._host_out(np.where(self.exact, self.n_rows - self.block_state.exact_since, 0))

    @property
    def frobenius_mass(self):
        return self._host_out(self._frob)

    @property
    def total_shrinkage(self):
        """``sum_i sigma_bar_i``: bounds ``X^T X - S^T S``; ``< 2 eps`` (Theorem 1)."""
        bs = self.block_state
        return self._host_out(bs.frozen_shrinkage + np.where(bs.exact, 0.0, bs.shrinkage))

    @property
    def alpha(self):
        """Total RFD counter ``sum_i alpha_i`` added back as ``alpha I`` (0 for FD blocks); summed
        as :attr:`total_shrinkage` is, not read back as ``c - reg`` (which rounds at
        ``eps reg``)."""
        return self._host_out(self._alpha_total())

    @property
    def n_blocks(self):
        """Blocks so far, inactive and active (<= :attr:`block_cap`)."""
        return self._host_out(self.block_state.n_frozen + (~self.exact))

    @property
    def active_sketch_size(self):
        """``l_{B_t}``: sketch size of the active block (of the last block in exact mode)."""
        return self._host_out(self.block_state.size)

    def blocks_weighted_shrinkage(self):
        """``sum_i l_i sigma_bar_i`` over each member's blocks (DBSLinUCB-RFD's theory radius)."""
        bs = self.block_state
        return self._host_out(
            bs.frozen_weighted_shrinkage + np.where(bs.exact, 0.0, bs.size * bs.shrinkage)
        )

    def blocks(self, member: int = 0) -> list[BlockInfo]:
        """A snapshot of every block of ``member`` (0 for one sketch), oldest first (the last one is
        the active block, if any)."""
        out = list(self.block_state.closed[member])
        if not self.exact[member]:
            out.append(self.block_state.active(member))
        return out

    def held_rows(self, member: int = 0) -> torch.Tensor:
        """All sketch rows ``[S~; S*]`` of ``member`` ``(rows, d)`` in the working dtype (a
        copy)."""
        if self.exact[member]:
            return torch.zeros(0, self.d, dtype=self.dtype)
        return self.xp.to_torch(self.xp.astype(self.core.rows(member), self.dtype))

    def active_rows(self, member: int = 0) -> torch.Tensor:
        """The active block's sketch rows ``S*`` of ``member`` (a copy)."""
        return self.held_rows(member)[int(self.block_state.frozen_rows[member]) :]

    def stats(self) -> dict:
        """Flat scalars for a per-round history (e.g. ``records.append(dbs.stats())``)."""
        return {
            "n_rows": self.n_rows,
            "n_blocks": self.n_blocks,
            "sketch_size": self.sketch_size,
            "active_sketch_size": self.active_sketch_size,
            "exact_mode": self.exact_mode,
            "total_shrinkage": self.total_shrinkage,
            "alpha": self.alpha,
        }

    # -- streaming ---------------------------------------------------------------------------------
    def step(self, X, r, terms: ScoreTerms | None = None, actions=None, before=None) -> None:
        """Add the rows (see :meth:`CovarianceEstimator.step`): Alg. 1 (fast: Alg. 4) for the
        sketched members, rank-1 updates (line 4) for the exact ones."""
        rows = self._admit_rows(X, r, terms, actions, before)
        fresh = rows.played is not None
        sq, sq_host = rows.sq, rows.sq_host
        self._frob = self._frob + sq_host
        self.trace = self.trace + sq_host
        r = r if isinstance(r, float) else np.asarray(r, dtype=np.float64)
        if self.core is None:  # every member exact: the terms are the exact estimator's own
            self._exact.step(X, r, terms, actions)
            self.n_rows += 1
            return
        p = hp = php = None  # the played arm's V x, H V x and x^T V^T H V x from the scoring
        if fresh:
            sketched = terms if terms.parts is None else terms.parts.sketched
            p, hp, php = self._played_coordinates(sketched, rows.played)
        self._sketched_step(X, sq, sq_host, r, p, hp, php)
        if self._exact is not None:
            exact = np.flatnonzero(self.exact)
            own = None  # the exact estimator's terms of this round, unless a member just switched
            if fresh and terms.parts is not None:
                same = np.array_equal(terms.parts.exact_members, exact)
                own = terms.parts.exact if same else None
            self._exact_step(exact, X, r, own, actions)
        self.n_rows += 1

    def _sketched_step(self, X, sq, sq_host: np.ndarray, r, p, hp, php) -> None:
        """Alg. 1 line 7 (Alg. 4 line 9) for every sketched member at once: ``x`` joins the active
        block unless ``BlockSize + ||x||^2 >= eps l0`` and willExcessSketch, in which case the block
        closes and ``x`` opens the next one (lines 10-12), or goes exact at the cap."""
        bs = self.block_state
        ex = self.core.expand(X, sq, sq_host, p, hp, php)
        mass = bs.mass + sq_host  # BlockSize + ||x||^2
        keep = mass < self.threshold
        n_sketched = self.batch_size
        if self._exact is not None:  # exact members take no rows into blocks
            keep &= ~bs.exact
            n_sketched -= self._exact.batch_size
        n_insert = np.count_nonzero(keep)
        if n_insert < n_sketched:
            full = ~(keep | bs.exact)
            closing = np.flatnonzero(full & self._will_excess(full, ex, sq_host))
            switched = self._close_active(closing, sq_host)
            keep |= full & ~switched
            # (a closed block's row opens the next: its BlockSize is ||x||^2)
            mass = bs.mass + sq_host
            n_insert = np.count_nonzero(keep)
        if n_insert:
            self._insert_active(None if n_insert == keep.size else keep, ex, r, sq_host, mass)

    def _will_excess(self, full: np.ndarray, ex, sq_host: np.ndarray) -> np.ndarray:
        """willExcessSketch per member (host bools ``(B,)``, read where ``full``): App. B.1's
        sentinel (a block that received fewer than its sketch size of rows, but some) or FD's shrink
        value of the active block with ``x`` inserted."""
        bs = self.block_state
        excess = self.sentinel & (bs.received > 0) & (bs.received < bs.size)
        look = full & ~excess
        if np.count_nonzero(look):
            excess[look] = self._shrinkage_if_added(np.flatnonzero(look), ex, sq_host) > 0.0
        return excess

    def _insert_active(self, insert: np.ndarray | None, ex, r, sq_host: np.ndarray, mass) -> None:
        """FD update of the active blocks of the members ``insert`` (every member when None; Alg. 4
        lines 11-19; eq. 7), whose BlockSize becomes ``mass``: the append of the nonzero rows (FD
        skips zero rows), and the shrink of the blocks whose buffer it fills."""
        bs = self.block_state
        live = insert  # the members that append: None for every one
        if min(sq_host.tolist()) <= 0.0:
            live = sq_host > 0.0 if insert is None else insert & (sq_host > 0.0)
        bs.receive(insert, mass, live)
        if live is not None and not np.count_nonzero(live):
            return
        self.core.append(ex, r if isinstance(r, float) else self.xp.asarray(r, self.cdtype), live)
        if self.fast:  # (a member without a row was below its buffer's size)
            fills = np.nonzero(bs.held >= bs.buffer)[0]
        else:
            fills = self._members if live is None else np.flatnonzero(live)
        if fills.size:
            self._shrink_active(fills)

    def _shrink_active(self, idx: np.ndarray) -> None:
        """FD shrink (Wen et al. (2025), Alg. 2 lines 4-7; RFD: Alg. 3 line 5) of the active blocks
        of ``idx``, grouped by their rows and sketch size: the core's shrink of the rows after the
        frozen ones, whose refactorization is eq. 3."""
        bs, core = self.block_state, self.core
        for group, l in shrink_groups(idx, bs.held[idx], bs.size[idx]):
            plan = core.shrink(
                group, bs.frozen_rows[group], l, bs.frozen_basis[group], add_back=self.robust
            )
            bs.shrunk(group, plan.delta, plan.kept, self.robust)
        self.trace[idx] = core.frob2()[
            idx
        ]  # tr(S^T S) of the rows held now (the width floor's bound)

    def _shrinkage_if_added(self, idx: np.ndarray, ex, sq_host: np.ndarray) -> np.ndarray:
        """willExcessSketch's shrink value per member of ``idx``: what inserting ``x`` would discard
        from its active block now (0 for a zero row, while the block holds fewer than ``l - 1``
        rows, or while a fast buffer is not about to fill; else FD's shrink value of the bordered
        Gram)."""
        bs = self.block_state
        value = np.zeros(self.batch_size)
        cand = idx[(sq_host[idx] > 0.0) & (bs.held[idx] + 1 >= bs.size[idx])]
        if self.fast:
            cand = cand[bs.held[cand] + 1 >= bs.buffer[cand]]
        for group, l in shrink_groups(cand, bs.held[cand], bs.size[cand]):
            value[group] = self.core.shrink_value(group, bs.frozen_rows[group], l, ex)
        return value[idx]

    def _close_active(self, idx: np.ndarray, sq_host: np.ndarray) -> np.ndarray:
        """Alg. 1 lines 10-12: freeze the active blocks of ``idx`` (their rows and basis stay where
        they are, now counted as frozen) and open blocks of twice the size; members reaching the cap
        (or whose next block would cost more than OFUL, in bytes or in operations) switch to exact
        updates with the row in hand. Returns which members switched (host bools ``(B,)``)."""
        switched = np.zeros(self.batch_size, dtype=bool)
        if not idx.size:
            return switched
        self.block_state.close(idx, self.core.N[idx], self.core.R[idx])
        over = (self.block_state.n_frozen[idx] >= self._block_caps[idx] - 1) | self._over_caps(idx)
        switched[idx[over]] = True
        if over.any():
            self._switch_to_exact(idx[over], sq_host, 1)
        opening = idx[~over]
        if opening.size:
            rows = int(
                (self.block_state.frozen_rows[opening] + self.block_state.buffer[opening]).max()
            )
            self.core.ensure(rows, rows)
        return switched

    def _switch_to_exact(self, idx: np.ndarray, mass: np.ndarray, rows: int) -> None:
        """The members ``idx`` switch to exact updates in the block they are in (holding ``rows``
        rows of ``mass``, per member of the batch): ``A_hat^-1 = (I - V^T V) / c + V^T H V`` (eq. 5)
        and ``b`` are formed once (O(d^2 R)) and handed to the exact estimator; the core forgets
        them. The handed ``A_hat^-1`` does not hold the row in hand (the exact estimator's step
        adds it, with its ``||x||^2`` to the trace), so the trace handed over is ``tr`` without
        ``mass``: counted twice, the width floor ``||x||^2 / (reg + tr)`` would sit below the one
        the rows prove."""
        xp, core = self.xp, self.core
        ii = xp.index(idx)
        gram = core.covariance()[ii] if self.keep_gram else None
        ridge = core.c[idx]
        new = ExactCovariance.from_inverse(
            core.inverse(idx),
            core.b()[ii],
            reg=float(ridge[0]) if self.members.unbatched else ridge.tolist(),
            trace=self.trace[idx] - mass[idx],
            n_rows=self.n_rows,
            gram=gram,
            device=self.device,
            dtype=self.dtype,
            batch_size=self.members.of(idx.size),
            backend=xp,
        )
        held = np.flatnonzero(self.exact)  # the exact estimator's members, in order
        self._exact = (
            new
            if self._exact is None
            else self._exact.joined(new, np.argsort(np.concatenate([held, idx]), kind="stable"))
        )
        core.drop(idx)
        # (the row in hand, if any, is not counted in n_rows yet)
        self.block_state.go_exact(idx, mass[idx], rows, self.n_rows + rows)
        if self.exact.all():  # from now on the exact estimator does all
            self.core = None

    def _exact_step(self, idx: np.ndarray, X, r, terms: ScoreTerms | None, actions) -> None:
        """Exact rank-1 updates (Alg. 1 line 4) of the members ``idx`` (all the exact ones, in
        order) through the exact estimator, with its own terms of this round when given."""
        Xe = X if idx.size == self.batch_size else X[self.xp.index(idx)]
        re = r if isinstance(r, float) else r[idx]
        if terms is not None and not isinstance(actions, (int, np.integer)):
            actions = np.asarray(actions)[idx]
        self._exact.step(Xe, re, terms, actions if terms is not None else None)

    # -- queries -----------------------------------------------------------------------------------
    def score_terms(self, arms) -> ScoreTerms:
        """Both terms for every arm of every member: eq. 5 through the basis state for the sketched
        members (one product ``arms V^T``), the exact estimator's for the exact ones."""
        xp = self.xp
        if int(arms.shape[1]) != self._n_arms:
            self._set_n_arms(int(arms.shape[1]))
        if self.core is None:  # every member exact: the exact estimator's terms, as they are
            return self._exact.score_terms(arms)
        arms_c, sq = self._arm_norms(arms)
        P = self.core.project(arms)
        mean, quad, PH, pHp = self.core.score(arms, arms_c, sq, P)
        sketched = ScoreTerms(
            arms, sq, mean, xp.maximum(quad, self._floor(sq)), P, self.n_rows, hp=PH, php=pHp
        )
        if self._exact is None:  # every member sketched
            return sketched
        exact = np.flatnonzero(self.exact)
        ei = xp.index(exact)
        sub = self._exact.score_terms(arms[ei])
        mean, quad = sketched.mean, sketched.quad
        mean[ei], quad[ei] = sub.mean, sub.quad
        return ScoreTerms(
            arms, sq, mean, quad, None, self.n_rows, parts=_Parts(sketched, sub, exact)
        )

    def _merged(self, sketched, exact):
        """Per member: the sketched members' values from ``sketched(core)`` (all B rows), the exact
        members' from ``exact(estimator, index)`` (rows ``index`` of a batch-first input)."""
        members = np.flatnonzero(self.exact)
        ei = self.xp.index(members)
        if self.core is None:
            return exact(self._exact, ei)
        out = sketched(self.core)
        if members.size:
            out[ei] = exact(self._exact, ei)
        return out

    def quad_all(self, arms):
        def sketched(core):
            arms_c, sq = self._arm_norms(arms)
            return self.xp.maximum(
                core.score(arms, arms_c, sq, core.project(arms))[1], self._floor(sq)
            )

        return self._merged(sketched, lambda est, ei: est.quad_all(arms[ei]))

    def solve_all(self, V):
        return self._merged(lambda core: core.solve(V), lambda est, ei: est.solve_all(V[ei]))

    def theta_all(self):
        return self._merged(lambda core: core.theta(), lambda est, ei: est.theta_all())

    def b_all(self):
        return self._merged(lambda core: core.b(), lambda est, ei: est.b_all())

    @classmethod
    def draw_state_bytes(cls, d: int, dtype: torch.dtype = torch.float64) -> int:
        """The exact hand-over's square-root factor, once it draws
        (:meth:`agents.sketches.exact.ExactCovariance.draw_state_bytes`)."""
        return ExactCovariance.draw_state_bytes(d, dtype)

    def draw_all(self, Z):
        """The sketched members' ``F z = (z - V^T V z) / sqrt(c) + V^T L V z`` (``H = L L^T``; eq.
        5's ``A_hat^-1``, :meth:`agents.sketches.core.SketchCore.draw`), the exact members' ``S z``
        with their square-root factor ``S S^T = A^-1`` (the Cholesky factor of the handed-over
        inverse at their first draw, Potter's update since:
        :meth:`agents.sketches.exact.ExactCovariance.draw_all`)."""
        return self._merged(lambda core: core.draw(Z), lambda est, ei: est.draw_all(Z[ei]))

    def sample_all(self, Z, scale):
        """The sketched members' fused ``theta_hat + scale F z``
        (:meth:`agents.sketches.core.SketchCore.sample`), the exact members' own."""
        scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (self.batch_size,))
        exact = np.flatnonzero(self.exact)
        return self._merged(
            lambda core: core.sample(Z, scale),
            lambda est, ei: est.sample_all(Z[ei], scale[exact]),
        )

    def covariance_all(self):
        """``sum_i S_i^T S_i (+ alpha I for RFD)``; after the switch the exact Gram (``keep_gram``)
        or ``A_hat - c I`` recovered from the inverse (O(d^3), accurate to ~eps cond(A_hat)), plus
        alpha I."""
        xp = self.xp
        alpha = xp.asarray(self._alpha_total(), self.cdtype)[:, None, None] * xp.eye(
            self.d, self.cdtype
        )
        cov = self._merged(
            lambda core: core.covariance(),
            lambda est, ei: xp.astype(est.covariance_all(), self.cdtype),
        )
        return cov + alpha

    # -- introspection -----------------------------------------------------------------------------
    def sketch_sizes(self):
        """Rows held per member (``d`` once exact): the paper's adaptive sketch size."""
        return np.where(self.exact, self.d, self.rows)

    def member_memory_bytes(self):
        """What one member holds: its frozen rows and the active block's full buffer in the basis
        state (:meth:`layout_bytes`), or the exact inverse (and ``b``) once exact."""
        bs = self.block_state
        sketched = self.layout_bytes(bs.frozen_rows, bs.buffer)
        return np.where(self.exact, self._exact_bytes(), sketched).astype(np.int64)

    def _held_bytes(self):
        core = self.core.held_bytes() if self.core is not None else 0
        return core + (self._exact._held_bytes() if self._exact is not None else 0)

    def __repr__(self) -> str:
        return (
            f"DyadicBlockSketch(d={self.d}, l0={_listed(self.l0)}, eps={_listed(self.eps)}, "
            f"sketch={self.sketch!r}, reg={_listed(self.reg)}, fast={self.fast}, "
            f"batch_size={self.members.given}, n_blocks={self.n_blocks}, "
            f"exact_mode={self.exact_mode})"
        )


@dataclass(frozen=True)
class _Parts:
    """Dyadic Block Sketching's terms of its sketched members (the basis state's, all B rows) and of
    its exact members (the exact estimator's, rows ``exact_members``)."""

    sketched: ScoreTerms | None
    exact: ScoreTerms | None
    exact_members: np.ndarray
