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

    -alpha I  <=  X^T X - (S^T S + alpha I)  <=  0,   i.e.  ||X^T X - covariance()||_2 <= alpha < 2 eps.

Layout (one implementation, batch dimension first: ``batch_size=B`` members, ``None`` = one
sketch). Member i's rows ``[S~_i; S*_i]`` (frozen blocks, then the active block's FD buffer) live
in the basis state of :mod:`agents.sketches.core`: an orthonormal basis ``V`` of their span whose
first ``Rf_i`` vectors span the frozen rows, the rows' coordinates ``C`` (frozen rows first) and
``H = (C^T C + c I)^-1``, so ``A_hat^-1 = (I - V^T V) / c + V^T H V`` is eq. 5 evaluated without
cancellation. eq. 7 (a row appended to the active block) is the core's bordered append; eq. 3
(the inverse of the stacked Gram after the active block shrinks) is its refactorization; the
active block's FD shrink is the core's shrink of the rows ``[rows_in_i, N_i)``, which leaves the
frozen rows and their basis as they are. Members close blocks on their own rounds; the decisions
of Alg. 1 line 7 are taken for all at once with masks, shrinks and look-aheads are grouped by
(rows, sketch size) into batched decompositions. A member that switches to exact updates hands
its ``A_hat^-1`` (formed once from the basis state) and ``b`` to an
:class:`~agents.sketches.exact.ExactCovariance`, which holds every exact member.

Cost (``fast=True``, Alg. 4): O(K d R + K R^2) to score K arms (one product with the basis),
O(d R + R^2) to insert, O(R^3 + l R d) per shrink (once per ~l rows). ``fast=False`` runs Alg. 1
over textbook FD blocks (one shrink per row).

**Never above OFUL, in memory or in time (``memory_cap=True``, ``time_cap=True``, the defaults; our
extension of Invariant 2).** When closing a block would open one whose layout holds more bytes
than OFUL's ``d x d`` inverse (:meth:`DyadicBlockSketch.layout_bytes`), or whose cost per round at
its peak, the scoring product ``K d R`` (``R`` basis vectors, ``K`` the arms of the last scored
round) plus its appends and its shrinks amortised over the rows between them
(:func:`block_round_cost`), would pass OFUL's ``(K + 1) d^2`` (:func:`exact_round_cost`), the
member switches to exact updates at that moment (as at the cap: the new row is folded into the
inverse). Both are operation counts, not timings, so the switch is deterministic. Before the
switch nothing changes: the blocks and choices are the paper's. With both caps off only the
literal cap of Alg. 1 line 3 applies (the paper's rule; its peak can pass OFUL's memory). All keep Theorem 1: exact rows add no error.

Paper slips and gaps, settled here (tests in ``tests/test_dbs.py``):

* **eq. 3's M-blocks.** eq. 3 puts the inverses ``M~``, ``M*`` in the diagonal blocks of a Gram
  matrix and adds ``lambda I`` again. Read literally it is not ``(S S^T + lambda I)^-1``. We use
  the Gram blocks, ``M = ([[S~ S~^T, S~ S*^T], [S* S~^T, S* S*^T]] + c I)^-1``, the only reading
  that makes eq. 5 the inverse of ``c I + S^T S`` (the frozen part's Gram ``S~ S~^T`` is what we
  cache when a block closes; eq. 7 then agrees exactly, which the tests check).
* **RFD prefactor.** eq. 5 / Alg. 5 line 8 print ``1/lambda``; with RFD blocks the ridge is
  ``c = lambda + sum_i alpha_i`` (App. E.3 uses ``A_hat = lambda I + sum alpha_i I + sum S_i^T S_i``),
  and eq. 7's ``xi`` uses the same ``alpha + lambda``.
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
  ``BlockSize + ||x||^2 < eps l0`` (strict) or not willExcessSketch; Wen et al. (2024)'s fast algorithm
  used ``eps/2``, we follow Wen et al. (2025) (``eps l0`` for both variants).
* **willExcessSketch.** Computed as the paper says, by inserting x into a temporary copy of the
  active block and reading FD's shrink value (:func:`~agents.sketches.core.fd_shrink` on the
  eigenvalues of the bordered Gram, which treats rounding-level values as 0, so low-rank streams
  are not split). With the fast
  2l buffer a shrink happens only when x fills the buffer, so a block may keep absorbing
  (exactly held) rows past the mass threshold until that moment: Theorem 1's proof only needs
  "a block never discards mass once its BlockSize reaches eps l0", which this keeps.
* **the sentinel (App. B.1).** "When the number of rows currently stored in a block is smaller
  than its sketch size l (or d), set willExcessSketch to True": with ``sentinel=True``
  (default, the paper's practice) a block that has received fewer than ``l_i`` rows closes on
  the mass threshold alone. We count rows *received by the block* (the fast buffer's stored
  count oscillates between l - 1 and 2l), and never close an EMPTY block on the sentinel
  (it would be an inactive block holding nothing): an empty block is closed only if FD would
  actually discard the first row (possible only when ``l = 1``). ``sentinel=False`` always
  uses the shrink test; it keeps low-rank streams in fewer blocks: on rank-k data the last
  block index is at most ``floor(log2(k/l0)) + 1`` (Theorem 1's ``ceil(log2(k/l0))``, plus one
  when k/l0 is a power of two because FD of size l holds l - 1 directions exactly), with no
  condition like ``eps l0 >= l_i ||x||^2`` that the sentinel needs for the same count). App. D.2's "at least d rows" is a slip for "l rows". Either way the error
  bound is unaffected (the sentinel only closes blocks earlier).
* **Invariant 1 as printed** ("each inactive block has sketch size >= its rank, or block size
  < eps l0") is not what line 7 maintains: "or willExcessSketch is False" lets a block that has
  already shrunk keep absorbing rows that need no shrink, past ``eps l0``. What does hold, and
  what Theorem 1's proof uses, is that a block discards mass only while its block size
  (including the row being inserted) is ``< eps l0``, so its ``sigma_bar_i < eps l0 / l_i``.
* **Theorem 1's constant.** Blocks are 0-indexed (Alg. 1), so the per-block bound is
  ``eps / 2^i`` for ``i >= 0`` and the sum is ``< 2 eps`` (the proofs of Thm. 2-4 substitute
  ``sum sigma_bar <= eps``, a slip: it is ``2 eps``; we expose the exact ``total_shrinkage``).

Example:

>>> import torch
>>> X = torch.randn(300, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
>>> X = X / X.norm(dim=1, keepdim=True)
>>> dbs = DyadicBlockSketch(40, l0=4, eps=2.0, dtype=torch.float64)
>>> for x in X:
...     dbs.update(x)
>>> dbs.block_cap, dbs.n_blocks, dbs.exact_mode
(3, 3, True)
>>> err = torch.linalg.matrix_norm(X.T @ X - dbs.covariance(), ord=2)
>>> bool(err <= dbs.total_shrinkage + 1e-9) and dbs.total_shrinkage < 2 * 2.0
True
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import per_member
from .base import CovarianceEstimator, ScoreTerms
from .core import SketchCore, fd_shrink, shrink_groups
from .exact import ExactCovariance
from .fd import _listed

__all__ = ["DyadicBlockSketch", "BlockInfo", "block_cap", "check_dbs_params", "block_round_cost", "exact_round_cost"]

_SKETCHES = ("fd", "rfd")


def block_cap(d: int, l0: int) -> int:
    """Invariant 2's cap ``floor(log2(d/l0 + 1))``, in integers: the largest C with ``l0 (2^C - 1) <= d``."""
    c = 0
    while l0 * (2 ** (c + 1) - 1) <= d:
        c += 1
    return c


def exact_round_cost(d: int, n_arms) -> np.ndarray:
    """Multiply-adds of one exact (OFUL) round: scoring ``K d^2`` (``arms A^-1``) and the rank-1 update ``d^2``."""
    return (np.asarray(n_arms, dtype=np.float64) + 1.0) * d * d


def block_round_cost(d: int, n_arms, rows, l, fast: bool) -> np.ndarray:
    """Multiply-adds of one round of a sketched member whose block of sketch size ``l`` is at its peak,
    ``rows`` held rows (frozen plus the full buffer; the basis has ``R = min(rows, d)`` vectors):
    scoring ``K d R`` (``arms V^T``) and ``K R^2`` (``P H``); the append ``d R`` (its residual) and
    ``3 R^2`` (the core inverse's bordered update and ``H bV``); and the shrink every ``l + 1`` rows
    (fast; every row textbook) amortised: the range's Gram ``2 l R^2``, its eigendecomposition and
    the refactorization ``5 R^3``, the rotation of the new basis ``l R d``."""
    R = np.minimum(np.asarray(rows, dtype=np.float64), d)
    l = np.asarray(l, dtype=np.float64)
    K = np.asarray(n_arms, dtype=np.float64)
    per_shrink = 2.0 * l * R * R + 5.0 * R ** 3 + l * R * d
    return K * d * R + K * R * R + d * R + 3.0 * R * R + per_shrink / (l + 1.0 if fast else 1.0)


def _l0_check(d: int | None):
    def check(name: str, l0) -> int:
        if isinstance(l0, bool) or not isinstance(l0, numbers.Integral) or l0 < 1:
            raise ValueError(f"{name} (the initial sketch size) must be an int >= 1, got {l0!r}")
        if d is not None and l0 > d:
            raise ValueError(
                f"{name}={l0} exceeds the dimension d={d}: a sketch larger than the space is pointless and the "
                f"block cap floor(log2(d/l0 + 1)) would be 0; choose 1 <= l0 <= d (l0 > d/3 means exact updates)"
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


def check_dbs_params(l0, eps, sketch, fast=True, sentinel=True, d: int | None = None, batch_size: int | None = None):
    """Validate Dyadic Block Sketching's parameters (``d=None``: dimension not known yet).

    Raises ``ValueError`` naming the bad parameter and the fix; returns ``(l0, eps)`` as an int
    and a float, or (``batch_size`` set and the members' values differ, see
    :func:`agents._validate.per_member`) as per-member arrays ``(B,)``.
    """
    l0 = per_member("l0", l0, batch_size, _l0_check(d))
    eps = per_member("eps", eps, batch_size, _eps_check)
    if not isinstance(sketch, str) or sketch not in _SKETCHES:
        raise ValueError(f"sketch must be 'fd' or 'rfd', got {sketch!r}")
    if not isinstance(fast, bool):
        raise ValueError(f"fast must be True (fast Alg. 4) or False (Alg. 1), got {fast!r}")
    if not isinstance(sentinel, bool):
        raise ValueError(f"sentinel must be True or False, got {sentinel!r}")
    return l0, eps


@dataclass(frozen=True)
class BlockInfo:
    """One block of the sketch (a snapshot; see :meth:`DyadicBlockSketch.blocks`).

    Attributes:
        index: 0-based block index ``i``.
        sketch_size: ``l_i = l0 * 2^i``.
        block_size: squared Frobenius mass of the rows the block received (Wen et al. (2025)'s BlockSize).
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
    """

    def __init__(self, d: int, l0: int, eps: float, *, sketch: str = "fd", reg: float = 1.0, fast: bool = True,
                 sentinel: bool = True, memory_cap: bool = True, time_cap: bool = True, keep_gram: bool = False,
                 device=None, dtype=None, batch_size: int | None = None):
        if not isinstance(d, numbers.Integral) or isinstance(d, bool) or d < 1:
            raise ValueError(f"d must be a positive int, got {d!r}")
        l0, eps = check_dbs_params(l0, eps, sketch, fast, sentinel, d=int(d),
                                   batch_size=None if batch_size is None else int(batch_size))
        for name, flag in (("memory_cap", memory_cap), ("time_cap", time_cap)):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be True or False, got {flag!r}")
        super().__init__(int(d), reg=reg, device=device, dtype=dtype, batch_size=batch_size)
        self.l0, self.eps, self.sketch = l0, eps, sketch
        self.robust = sketch == "rfd"
        self.fast, self.sentinel, self.memory_cap, self.time_cap = fast, sentinel, memory_cap, time_cap
        self.keep_gram = bool(keep_gram)
        self.threshold = self.eps * self.l0  # Alg. 1 line 7: BlockSize + ||x||^2 < eps * l0
        self._threshold_min = float(np.min(self.threshold))  # below it every member keeps its row
        B = self.batch_size
        l0s = np.broadcast_to(np.asarray(self.l0, dtype=np.int64), (B,))
        self._block_caps = np.array([block_cap(self.d, int(v)) for v in l0s], dtype=np.int64)
        self.block_cap = self._block_caps if np.ndim(self.l0) else int(self._block_caps[0])
        ints = lambda: np.zeros(B, dtype=np.int64)  # noqa: E731
        floats = lambda: np.zeros(B, dtype=np.float64)  # noqa: E731
        self.rows_in = ints()  # rows held by the frozen blocks (the first rows of the core)
        self.frozen_basis = ints()  # basis vectors spanning them (the first ones of the core)
        self.m_act = ints()  # rows of the active block's sketch
        self.l_act = l0s.copy()  # its sketch size l0 2^i
        self.act_rows, self.act_mass = ints(), floats()  # rows it received, its BlockSize
        self.act_shrink, self.act_alpha = floats(), floats()  # its FD shrinkage / RFD alpha
        self.n_frozen = ints()
        self.frozen_shrink, self.alpha_in, self.frozen_ls = floats(), floats(), floats()  # sums over frozen blocks
        self.exact = np.zeros(B, dtype=np.bool_)
        self._n_exact = 0  # members exact (count of ``exact``)
        self._until_fill = 0  # rows until some active buffer fills (0: count again; _count_until_fill)
        self._n_exact_rows = ints()
        self._frob = floats()  # the rows' Frobenius mass (beyond the trace once _shared_trace)
        self._shared_trace = False  # every member exact and the trace the exact estimator's (step)
        self._frozen: list[list[BlockInfo]] = [[] for _ in range(B)]
        self._n_arms = 1  # arms per round of the last scoring (the time cap's K)
        self._exact_est: ExactCovariance | None = None  # holds every exact member
        self._exact_pos = np.full(B, -1, dtype=np.int64)  # member -> its row in _exact_est
        self.core: SketchCore | None = SketchCore(self.xp, B, self.d, self.dtype, self.cdtype, 0, 0, self._reg_host())
        # Alg. 1 line 3 holds from the start (or the first block costs more than OFUL): exact from row 1
        start_exact = (self._block_caps <= 1) | self._over_caps(np.arange(B))
        sketched = np.flatnonzero(~start_exact)
        if sketched.size:
            rows = int((self._cap_of(l0s[sketched])).max())
            self.core.ensure(rows, rows)
        exact = np.flatnonzero(start_exact)
        if exact.size:
            for i in exact:
                self._frozen[i] = [BlockInfo(0, int(l0s[i]), 0.0, 0, 0, 0.0, 0.0, False)]
            self.n_frozen[exact] = 1
            self._switch_to_exact(exact)

    # -- sizes, bytes and costs ------------------------------------------------------------------
    def _cap_of(self, l):
        """Rows an FD block of sketch size l buffers at most (2l fast, l textbook)."""
        return 2 * np.asarray(l) if self.fast else np.asarray(l)

    def layout_bytes(self, rows_in, cap):
        """Bytes a sketched member holds with ``rows_in`` frozen rows and an active buffer of ``cap`` rows
        (:meth:`agents.sketches.core.SketchCore.layout_bytes` with ``rows_in + cap`` rows and as many
        basis vectors, at most ``d``)."""
        rows = np.asarray(rows_in) + cap
        es = self.dtype.itemsize
        ec = self.cdtype.itemsize
        return SketchCore.layout_bytes(self.d, rows, np.minimum(rows, self.d), es, ec)

    def _exact_bytes(self) -> int:
        ec = self.cdtype.itemsize
        return ExactCovariance.peak_member_bytes(self.d, self.dtype, self.keep_gram, ec)

    def _over_caps(self, idx: np.ndarray) -> np.ndarray:
        """Whether the members ``idx``, about to open their block ``l_act`` after ``rows_in`` frozen rows,
        would hold more than OFUL (``memory_cap``) or cost more per round (``time_cap``)."""
        return self.opens_over_caps(self.d, self.rows_in[idx], self.l_act[idx], n_arms=self._n_arms, fast=self.fast,
                                    memory_cap=self.memory_cap, time_cap=self.time_cap, keep_gram=self.keep_gram,
                                    dtype=self.dtype, core_dtype=self.cdtype)

    @classmethod
    def opens_over_caps(cls, d: int, rows_in, l, *, n_arms: int, fast: bool, memory_cap: bool, time_cap: bool,
                        keep_gram: bool = False, dtype: torch.dtype = torch.float64,
                        core_dtype: torch.dtype = torch.float64) -> np.ndarray:
        """The switch rule, for an estimator (:meth:`_over_caps`) and for an estimate made before any
        exists: whether a member about to open a block of sketch size ``l`` after ``rows_in`` frozen rows
        would hold more bytes than the exact inverse (``memory_cap``) or cost more multiply-adds per
        round of ``n_arms`` arms (``time_cap``). Accepts numpy int arrays."""
        rows_in, l = np.asarray(rows_in), np.asarray(l)
        rows = rows_in + (2 * l if fast else l)
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
    def first_member_bytes(cls, d: int, l0: int, n_arms: int, fast: bool = True, memory_cap: bool = True,
                           time_cap: bool = True, keep_gram: bool = False, dtype: torch.dtype = torch.float64,
                           core_dtype: torch.dtype = torch.float64) -> int:
        """Bytes one member allocates first, without building anything: its first block's layout (``l0``'s
        buffer, :meth:`layout_bytes` with no frozen rows), or the exact inverse where the sketch is exact
        from the first row (Alg. 1 line 3's cap is reached at once, or the first block is over a cap at
        one arm per round, as at construction, or at ``n_arms``, as at the first scoring)."""
        ec = core_dtype.itemsize
        caps = dict(fast=fast, memory_cap=memory_cap, time_cap=time_cap, keep_gram=keep_gram, dtype=dtype,
                    core_dtype=core_dtype)
        if block_cap(d, l0) <= 1 or cls.opens_over_caps(d, 0, l0, n_arms=1, **caps) or cls.opens_over_caps(
                d, 0, l0, n_arms=n_arms, **caps):
            return int(ExactCovariance.peak_member_bytes(d, dtype, keep_gram, ec))
        rows = 2 * l0 if fast else l0
        es = dtype.itemsize
        return int(SketchCore.layout_bytes(d, rows, min(rows, d), es, ec))

    def _set_n_arms(self, k: int) -> None:
        """The arms per round the time cap assumes (``K``, seen at scoring). Members that have not
        received a row yet decide their first block's cap again with it (nothing to convert)."""
        self._n_arms = k
        fresh = np.flatnonzero(~self.exact & (self.n_frozen == 0) & (self.act_rows == 0))
        if self.time_cap and fresh.size:
            over = self._over_caps(fresh)
            if over.any():
                for i in fresh[over]:
                    self._frozen[i] = [BlockInfo(0, int(self.l_act[i]), 0.0, 0, 0, 0.0, 0.0, False)]
                self.n_frozen[fresh[over]] = 1
                self._switch_to_exact(fresh[over])

    @property
    def cap_act(self) -> np.ndarray:
        return self._cap_of(self.l_act)

    @classmethod
    def peak_member_bytes(cls, d: int, l0: int, fast: bool = True, dtype: torch.dtype = torch.float64,
                          memory_cap: bool = True, keep_gram: bool = False, core_dtype: torch.dtype = torch.float64) -> int:
        """Bytes one member can hold at its peak, without building anything: the largest layout of the
        blocks it may open (block ``i`` after at most ``sum_{j<i} (cap_j - 1)`` frozen rows, a block
        closing with up to one row less than its buffer, while Alg. 1 line 3's cap and, with
        ``memory_cap``, OFUL's bytes allow) and the exact inverse it ends with. The time cap only ever
        switches earlier, so it does not raise the peak."""
        es = dtype.itemsize
        ec = core_dtype.itemsize
        exact = ExactCovariance.peak_member_bytes(d, dtype, keep_gram, ec)
        cap_blocks = block_cap(d, l0)
        peak, rows_in, l = exact, 0, l0
        for i in range(max(cap_blocks - 1, 0)):
            if cls.opens_over_caps(d, rows_in, l, n_arms=1, fast=fast, memory_cap=memory_cap, time_cap=False,
                                   keep_gram=keep_gram, dtype=dtype, core_dtype=core_dtype):
                break
            rows = rows_in + (2 * l if fast else l)
            layout = int(SketchCore.layout_bytes(d, rows, min(rows, d), es, ec))
            peak = max(peak, layout)
            rows_in += (2 * l if fast else l) - 1
            l *= 2
        return int(peak)

    # -- byte estimate, asked by the agents before building one (agents.estimator_agent) ------
    @classmethod
    def estimate_member_bytes(cls, d: int, l0, eps=None, *, sketch: str = "fd", fast: bool = True,
                              sentinel: bool = True, memory_cap: bool = True, time_cap: bool = True,
                              keep_gram: bool = False, n_arms: int = 1, initial: bool = False,
                              dtype: torch.dtype = torch.float64,
                              core_dtype: torch.dtype = torch.float64) -> int:
        """Bytes one member holds, for the largest over the members' ``l0`` (one value, or one per
        member; ``eps``, ``sketch`` and ``sentinel`` change no size). ``initial``:
        :meth:`first_member_bytes`, its first block (or the exact inverse where it is exact from the
        first row). The peak is a bound, not an equality: :meth:`peak_member_bytes` plus the exact
        inverse, because a member of a batch keeps its row of the padded sketch state until every
        member is exact, beside its own inverse (a single sketch drops its blocks when it
        switches)."""
        l0s = [int(l) for l in np.atleast_1d(l0)]
        caps = dict(fast=fast, memory_cap=memory_cap, keep_gram=keep_gram, dtype=dtype,
                    core_dtype=core_dtype)
        if initial:
            return max(cls.first_member_bytes(d, l, n_arms, time_cap=time_cap, **caps) for l in l0s)
        exact = ExactCovariance.peak_member_bytes(d, dtype, keep_gram, core_dtype.itemsize)
        return exact + max(cls.peak_member_bytes(d, l, **caps) for l in l0s)
    # -- end of the byte estimate --------------------------------------------------------------

    # -- per-member scalars ------------------------------------------------------------------------
    def c(self) -> np.ndarray:
        """The ridge of ``A_hat_i``: reg, plus every block's alpha for RFD (host float64 ``(B,)``)."""
        return self._reg_host() + self.alpha_in + self.act_alpha

    def _alpha_total(self):
        return self.alpha_in + self.act_alpha

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
        return self._host_out(self._n_exact_rows)

    @property
    def frobenius_mass(self):
        return self._host_out(self._frob + self.trace if self._shared_trace else self._frob)

    @property
    def total_shrinkage(self):
        """``sum_i sigma_bar_i``: bounds ``X^T X - S^T S``; ``< 2 eps`` (Theorem 1)."""
        return self._host_out(self.frozen_shrink + np.where(self.exact, 0.0, self.act_shrink))

    @property
    def alpha(self):
        """Total RFD counter ``sum_i alpha_i`` added back as ``alpha I`` (0 for FD blocks); summed
        as :attr:`total_shrinkage` is, not read back as ``c - reg`` (which rounds at ``eps reg``)."""
        return self._host_out(self.alpha_in + self.act_alpha)

    @property
    def n_blocks(self):
        """Blocks so far, inactive and active (<= :attr:`block_cap`)."""
        return self._host_out(self.n_frozen + (~self.exact))

    @property
    def active_sketch_size(self):
        """``l_{B_t}``: sketch size of the active block (of the last block in exact mode)."""
        return self._host_out(self.l_act)

    def blocks_weighted_shrinkage(self):
        """``sum_i l_i sigma_bar_i`` over each member's blocks (DBSLinUCB-RFD's theory radius)."""
        return self._host_out(self.frozen_ls + np.where(self.exact, 0.0, self.l_act * self.act_shrink))

    def blocks(self, member: int = 0) -> list[BlockInfo]:
        """A snapshot of every block of ``member`` (0 for one sketch), oldest first (the last one is
        the active block, if any)."""
        out = list(self._frozen[member])
        if not self.exact[member]:
            out.append(BlockInfo(len(out), int(self.l_act[member]), float(self.act_mass[member]),
                                 int(self.act_rows[member]), int(self.m_act[member]), float(self.act_shrink[member]),
                                 float(self.act_alpha[member]), True))
        return out

    def held_rows(self, member: int = 0) -> torch.Tensor:
        """All sketch rows ``[S~; S*]`` of ``member`` ``(rows, d)`` in the working dtype (a copy)."""
        if self.exact[member]:
            return torch.zeros(0, self.d, dtype=self.dtype)
        return self.xp.to_torch(self.xp.astype(self.core.rows(member), self.dtype))

    def active_rows(self, member: int = 0) -> torch.Tensor:
        """The active block's sketch rows ``S*`` of ``member`` (a copy)."""
        return self.held_rows(member)[int(self.rows_in[member]):]

    def stats(self) -> dict:
        """Flat scalars for a per-round history (e.g. ``records.append(dbs.stats())``)."""
        return {
            "n_rows": self.n_rows, "n_blocks": self.n_blocks, "sketch_size": self.sketch_size,
            "active_sketch_size": self.active_sketch_size, "exact_mode": self.exact_mode,
            "total_shrinkage": self.total_shrinkage, "alpha": self.alpha,
        }

    # -- streaming ---------------------------------------------------------------------------------
    def step(self, X, r, terms: ScoreTerms | None = None, actions=None) -> None:
        """Add the rows (see :meth:`CovarianceEstimator.step`): Alg. 1 (fast: Alg. 4) for every member at
        once, with masks for the decisions of line 7."""
        xp = self.xp
        if self.core is None:  # every member exact: the exact estimator's rank-1 updates (Alg. 1 line 4),
            # with its own terms (score_terms hands them out as they are); it keeps the trace (shared)
            own = terms is not None and terms.parts is None
            if not self._shared_trace:  # the exact estimator's trace is the width floor's from now on (>= the
                # rows' own: a row that switched a member counts twice there); the Frobenius mass follows it
                self._frob -= self._exact_est.trace
                self.trace, self._shared_trace = self._exact_est.trace, True
            self._exact_est.step(X, r, terms if own else None, actions if own else None)
            self._n_exact_rows += 1
            self.n_rows += 1
            return
        fresh = self._fresh(terms, actions)
        if fresh:
            ix = self._played(actions)
            xx = self._pick(terms.sq, ix)
            xx_h = xp.host(xx)
        else:
            xx, xx_h = self._row_norms(X)
        # (new arrays, here and for the block counters: cheaper than in-place adds for a few members)
        self._frob = self._frob + xx_h
        self.trace = self.trace + xx_h  # (not the exact estimator's yet: that is shared only once the core goes)
        rr = r if isinstance(r, float) else np.asarray(r, dtype=np.float64)
        n_exact = self._n_exact  # members already exact (host int: most rounds have none)
        was_exact = self.exact.copy() if n_exact else None
        p = hp = q = None
        if fresh:  # the sketched members' terms: the whole terms while no member is exact
            sk = terms.parts.sketched if terms.parts is not None else terms
            if sk is not None:
                p, hp, q = self._pick(sk.proj, ix), self._pick(sk.hp, ix), self._pick(sk.php, ix)
        ex = None
        mass = self.act_mass + xx_h  # BlockSize + ||x||^2
        if not n_exact and max(mass.tolist()) < self._threshold_min:  # Alg. 1 line 7 keeps x: the common round
            insert, n_insert = None, self.batch_size
        else:
            insert = mass < self.threshold
            if n_exact:
                insert &= ~was_exact
            n_insert = np.count_nonzero(insert)
        if n_insert < self.batch_size - n_exact:
            need = ~(insert | was_exact) if n_exact else ~insert
            close = need & self.sentinel & (self.act_rows > 0) & (self.act_rows < self.l_act)  # App. B.1's sentinel
            look = need & ~close
            if np.count_nonzero(look):
                ex = self.core.expand(X, xx, xx_h, p, hp, q)
                close[look] = self._shrinkage_if_added(np.flatnonzero(look), ex, xx_h) > 0.0
            switch = np.zeros(self.batch_size, dtype=bool)
            closing = np.flatnonzero(close)
            if closing.size:
                switch[self._close_active(closing, xx_h)] = True
            insert = insert | (need & ~switch)
            n_insert = np.count_nonzero(insert)
            mass = self.act_mass + xx_h  # (a closed block's row opens the next: its BlockSize starts at ||x||^2)
        if n_insert:
            if ex is None:
                ex = self.core.expand(X, xx, xx_h, p, hp, q)
            self._insert_active(None if n_insert == self.batch_size else insert, ex, rr, xx_h, mass)
        if self._n_exact:
            exact_rows = np.flatnonzero(self.exact)
            sub_terms = terms.parts.exact if fresh and terms.parts is not None else None
            if sub_terms is not None and not np.array_equal(terms.parts.exact_members, exact_rows):
                sub_terms = None  # a member switched this round: its row is folded in afresh
            self._exact_step(exact_rows, X, rr, sub_terms, actions)
        if n_exact:
            self._n_exact_rows[was_exact] += 1
        self.n_rows += 1

    def _insert_active(self, insert: np.ndarray | None, ex, r, xx_h, mass) -> None:
        """FD update of the active blocks of the members ``insert`` (all when None; Alg. 4 lines 11-19;
        eq. 7): the append, and the shrink of the blocks whose buffer it fills. ``mass``: every member's
        ``BlockSize + ||x||^2``, as tested (the members that insert take it as their BlockSize)."""
        xp, core = self.xp, self.core
        if insert is None:
            self.act_mass = mass
            live = None if min(xx_h.tolist()) > 0.0 else xx_h > 0.0  # FD skips zero rows: A_hat unchanged
        else:
            self.act_mass[insert] = mass[insert]
            live = insert & (xx_h > 0.0)
        if insert is None:
            self.act_rows = self.act_rows + 1
        else:
            self.act_rows[insert] += 1
        self.m_act = self.m_act + (1 if live is None else live)
        n_live = self.batch_size if live is None else np.count_nonzero(live)
        if not n_live:
            return
        rc = r if isinstance(r, float) else xp.asarray(r, self.cdtype)
        if self._until_fill > 1:  # no active buffer fills with this row
            core.append(ex, rc, live=None if n_live == self.batch_size else live)
            self._until_fill -= 1
            return
        fills = self.m_act >= self.cap_act if self.fast else np.ones(self.batch_size, dtype=bool)  # (m_act counts x)
        if live is not None:
            fills &= live
        n_fills = np.count_nonzero(fills)
        core.append(ex, rc, live=None if n_live == self.batch_size else live, fold=n_fills < n_live)
        if n_fills:
            self._shrink_active(np.flatnonzero(fills))
        self._count_until_fill()

    def _count_until_fill(self) -> None:
        """Rows until some sketched member's active buffer fills (fast Alg. 4; 1 textbook: a shrink a row). A
        lower bound, counted down by one a row: members whose buffer empties or grows (a shrink, a closed block,
        a switch to exact) count it again."""
        sketched = ~self.exact
        if not self.fast or not np.count_nonzero(sketched):
            self._until_fill = 1
            return
        self._until_fill = int((self.cap_act - self.m_act)[sketched].min())

    def _shrink_active(self, idx: np.ndarray) -> None:
        """FD shrink (Wen et al. (2025), Alg. 2 lines 4-7) of the active blocks of ``idx``, grouped by
        their rows and sketch size; then eq. 3, the core inverse of all rows refactored."""
        core = self.core
        for group, l in shrink_groups(idx, self.m_act[idx], self.l_act[idx]):
            plan = core.shrink(group, self.rows_in[group], l, self.frozen_basis[group])
            delta = plan.delta
            self.act_shrink[group] += delta
            if self.robust:  # Alg. 3 line 5: alpha += sigma, before H is refactored with the new ridge
                self.act_alpha[group] += delta
                core.set_ridge(group, self.c()[group])
            core.refactor(group)
            self.m_act[group] = plan.kept
        self.trace[idx] = core.frob2()[idx]  # tr(S^T S) of the rows held now (the width floor's bound)

    def _shrinkage_if_added(self, idx: np.ndarray, ex, xx_h) -> np.ndarray:
        """willExcessSketch: the shrink value inserting x would apply to each active block now (0 for a
        zero row, or while a fast buffer is not about to fill; else FD's shrink value of the bordered
        Gram, rounding-level -> 0)."""
        out = np.zeros(idx.size)
        cand = xx_h[idx] > 0.0
        if self.fast:
            cand &= self.m_act[idx] + 1 >= self.cap_act[idx]
        where = {int(i): j for j, i in enumerate(idx)}
        sel = idx[cand]
        if sel.size == 0:
            return out
        keys = np.stack([self.m_act[sel], self.l_act[sel]], axis=1)
        for key in np.unique(keys, axis=0):
            m, l = int(key[0]), int(key[1])
            group = sel[(keys == key).all(axis=1)]
            if m + 1 < l:
                continue  # fewer than l rows: FD discards nothing
            lam, noise = self.core.range_eigvals(group, self.rows_in[group], ex)
            delta = fd_shrink(self.xp, lam, l, noise).delta
            for i, value in zip(group, delta):
                out[where[int(i)]] = value
        return out

    def _close_active(self, idx: np.ndarray, xx_h: np.ndarray) -> np.ndarray:
        """Alg. 1 lines 10-12: freeze the active blocks of ``idx`` (their rows and basis stay where they
        are, now counted as frozen) and open blocks of twice the size; members reaching the cap (or
        whose next block would cost more than OFUL, in bytes or in operations) switch to exact
        updates (returned)."""
        for i in idx:
            self._frozen[i].append(BlockInfo(len(self._frozen[i]), int(self.l_act[i]), float(self.act_mass[i]),
                                             int(self.act_rows[i]), int(self.m_act[i]), float(self.act_shrink[i]),
                                             float(self.act_alpha[i]), False))
        self.frozen_shrink[idx] += self.act_shrink[idx]
        self.alpha_in[idx] += self.act_alpha[idx]
        self.frozen_ls[idx] += self.l_act[idx] * self.act_shrink[idx]
        self.n_frozen[idx] += 1
        self.rows_in[idx] = self.core.N[idx]
        self.frozen_basis[idx] = self.core.R[idx]
        self.l_act[idx] *= 2
        for arr in (self.m_act, self.act_rows):
            arr[idx] = 0
        self._until_fill = 0
        for arr in (self.act_mass, self.act_shrink, self.act_alpha):
            arr[idx] = 0.0
        over = (self.n_frozen[idx] >= self._block_caps[idx] - 1) | self._over_caps(idx)
        switching = idx[over]
        if switching.size:
            for i in switching:  # the new block holds x alone, exactly
                self._frozen[i].append(BlockInfo(len(self._frozen[i]), int(self.l_act[i]), float(xx_h[i]), 1, 0,
                                                 0.0, 0.0, False))
            self.n_frozen[switching] += 1
            self._switch_to_exact(switching)
        opening = idx[~over]
        if opening.size:
            rows = int((self.rows_in[opening] + self.cap_act[opening]).max())
            self.core.ensure(rows, rows)
        return switching

    def _switch_to_exact(self, idx: np.ndarray) -> None:
        """Form ``A_hat^-1 = (I - V^T V) / c + V^T H V`` (eq. 5) and ``b`` of the members ``idx`` once
        (O(d^2 R)) and hand them to the exact estimator; their sketch is dropped."""
        xp, core = self.xp, self.core
        ii = xp.index(idx)
        c = self.c()[idx]
        Rw = int(core.R[idx].max()) if idx.size else 0
        eye = xp.eye(self.d, self.cdtype)
        Vc = xp.astype(core.V[ii, :Rw], self.cdtype)
        A_inv = (eye[None] - Vc.mT @ Vc) / xp.asarray(c, self.cdtype)[:, None, None] + Vc.mT @ core.H[ii, :Rw, :Rw] @ Vc
        A_inv = 0.5 * (A_inv + A_inv.mT)
        b = core.b()[ii]
        gram = None
        if self.keep_gram:
            M = core.gram()[ii]
            Mw = M[:, :Rw, :Rw] if M.shape[-1] >= Rw else M
            gram = Vc.mT @ Mw @ Vc
        self._adopt_exact(idx, A_inv, b, gram, c)
        self.exact[idx] = True
        self._n_exact = int(np.count_nonzero(self.exact))
        # the members' sketch state is dropped (zeroed; freed with the core once nobody is sketched)
        core.N[idx] = 0
        R = core.R.copy()
        R[idx] = 0
        core._set_R(R)
        for arr in (core.V, core.C, core.H, core.bV, core.tperp):
            arr[ii] = 0.0
        self.rows_in[idx] = 0
        self.frozen_basis[idx] = 0
        self.m_act[idx] = 0
        if self.exact.all():  # from now on the exact estimator does all (step shares its trace)
            self.core = None

    def _adopt_exact(self, idx: np.ndarray, A_inv, b, gram, c: np.ndarray) -> None:
        """Add the members ``idx`` to the exact estimator (built at the first switch, rebuilt with the
        new members after; its rows follow the members' order)."""
        xp = self.xp
        old = self._exact_est
        members, reg, trace = idx, c, self.trace[idx]
        A_inv = xp.astype(A_inv, self.dtype)
        gram = None if gram is None else xp.astype(gram, self.dtype)
        if old is not None:
            held = np.flatnonzero(self._exact_pos >= 0)  # in order, as the old rows are
            members = np.concatenate([held, idx])
            A_inv = xp.concat(old.A_inv, A_inv, axis=0)
            b = xp.concat(old._b, b, axis=0)
            gram = None if gram is None else xp.concat(old.gram, gram, axis=0)
            reg, trace = np.concatenate([old._reg_host(), c]), np.concatenate([old.trace, trace])
        order = np.argsort(members, kind="stable")
        oi = xp.index(order)
        n = members.size
        self._exact_est = ExactCovariance.from_state(  # (its row count is the sketch's: their terms compare)
            A_inv[oi], b[oi], trace[order], self.n_rows, reg[order].tolist() if n > 1 else float(reg[0]), device=self.device,
            dtype=self.dtype, gram=None if gram is None else gram[oi], batch_size=self.members.of(n))
        self._exact_pos[members[order]] = np.arange(n)
        self._exact_est._warned_dtype = True  # the sketch's own check covers its exact members

    def _exact_step(self, idx: np.ndarray, X, r, terms: ScoreTerms | None, actions) -> None:
        """Exact rank-1 updates (Alg. 1 line 4) of the members ``idx`` through the exact estimator."""
        xp = self.xp
        est = self._exact_est
        pos = self._exact_pos[idx]
        if pos.size != est.batch_size or not np.array_equal(pos, np.arange(pos.size)):
            raise AssertionError("exact members out of order")  # pragma: no cover (kept sorted by _adopt_exact)
        Xe = X if idx.size == self.batch_size else X[xp.index(idx)]
        re = r if isinstance(r, float) else r[idx]
        sub_actions = None
        if terms is not None:
            sub_actions = actions if isinstance(actions, (int, np.integer)) else np.asarray(actions)[idx]
        est.step(Xe, re, terms, sub_actions)

    # -- queries -----------------------------------------------------------------------------------
    def score_terms(self, arms) -> ScoreTerms:
        """Both terms for every arm of every member: eq. 5 through the basis state for the sketched
        members (one product ``arms V^T``), the exact estimator's for the exact ones."""
        xp = self.xp
        if int(arms.shape[1]) != self._n_arms:
            self._set_n_arms(int(arms.shape[1]))
        if self.core is None:  # every member exact: the exact estimator's terms, as they are
            return self._exact_est.score_terms(arms)
        arms_c, sq = self._arm_norms(arms)
        P = self.core.project(arms)
        top = self._top()
        mean, quad, PH, pHp = self.core.score(arms, arms_c, sq, P, top)
        sk = ScoreTerms(arms, sq, mean, xp.maximum(quad, self._floor(sq, top)), P, self.n_rows, hp=PH, php=pHp)
        if not self._n_exact:  # every member sketched: the basis state's terms are the terms
            return sk
        e = np.flatnonzero(self.exact)
        ei = xp.index(e)
        sub = self._exact_est.score_terms(arms[ei])
        mean, quad = sk.mean, sk.quad
        mean[ei], quad[ei] = sub.mean, sub.quad
        return ScoreTerms(arms, sq, mean, quad, None, self.n_rows, parts=_Parts(sk, sub, e))

    def _quad(self, arms):
        xp = self.xp
        arms_c, sq = self._arm_norms(arms)
        out = sq / xp.asarray(self.c(), self.cdtype)[:, None]
        if self.core is not None:
            out = xp.maximum(self.core.score(arms, arms_c, sq, self.core.project(arms))[1], self._floor(sq))
        e = np.flatnonzero(self.exact)
        if e.size:
            ei = xp.index(e)
            out[ei] = self._exact_est._quad(arms[ei])
        return out

    def _per_member(self, sketched, exact_fn):
        """The sketched members' values from ``sketched`` (core dtype ``(B, ...)``), the exact members'
        from ``exact_fn(exact_estimator)``."""
        out = sketched
        e = np.flatnonzero(self.exact)
        if e.size:
            vals = exact_fn(self._exact_est)
            if out is None:
                return vals
            out[self.xp.index(e)] = vals
        return out

    def _solve(self, V):
        e = self.exact
        out = self.core.solve(V) if self.core is not None else None
        return self._per_member(out, lambda est: est._solve(V[self.xp.index(np.flatnonzero(e))]))

    def _theta_all(self):
        out = self.core.theta() if self.core is not None else None
        return self._per_member(out, lambda est: est._theta_all())

    def _b_all(self):
        out = self.core.b() if self.core is not None else None
        return self._per_member(out, lambda est: est._b_all())

    def _covariance(self):
        """``sum_i S_i^T S_i (+ alpha I for RFD)``; after the switch the exact Gram (``keep_gram``) or
        ``A_hat - c I`` recovered from the inverse (O(d^3), accurate to ~eps cond(A_hat)), plus alpha I."""
        xp = self.xp
        alpha = xp.asarray(self.alpha_in + self.act_alpha, self.cdtype)[:, None, None] * xp.eye(self.d, self.cdtype)
        cov = self.core.covariance() if self.core is not None else xp.zeros((self.batch_size, self.d, self.d), self.cdtype)
        cov = self._per_member(cov, lambda est: xp.astype(est._covariance(), self.cdtype))
        return cov + alpha

    # -- introspection -----------------------------------------------------------------------------
    def sketch_sizes(self):
        """Rows held per member (``d`` once exact): the paper's adaptive sketch size."""
        return np.where(self.exact, self.d, self.rows)

    def member_memory_bytes(self):
        """What one member holds: its frozen rows and the active block's full buffer in the basis state
        (:meth:`layout_bytes`), or the exact inverse (and ``b``) once exact."""
        sketched = self.layout_bytes(self.rows_in, self.cap_act)
        return np.where(self.exact, self._exact_bytes(), sketched).astype(np.int64)

    def _held_bytes(self):
        core = self.core.held_bytes() if self.core is not None else 0
        return core + (self._exact_est._held_bytes() if self._exact_est is not None else 0)

    def __repr__(self) -> str:
        return (f"DyadicBlockSketch(d={self.d}, l0={_listed(self.l0)}, eps={_listed(self.eps)}, sketch={self.sketch!r}, "
                f"reg={_listed(self.reg)}, fast={self.fast}, batch_size={self.members.given}, "
                f"n_blocks={self.n_blocks}, exact_mode={self.exact_mode})")


@dataclass(frozen=True)
class _Parts:
    """Dyadic Block Sketching's terms of its sketched members (the basis state's, all B rows) and of its
    exact members (the exact estimator's, rows ``exact_members``)."""

    sketched: ScoreTerms | None
    exact: ScoreTerms | None
    exact_members: np.ndarray
