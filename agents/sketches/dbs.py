"""Dyadic Block Sketching (seed 000 Sec. 3: Alg. 1, fast Alg. 4, eq. 3, eq. 7, Theorem 1).

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
sketch). Member i's rows ``[S~_i; S*_i]`` (frozen blocks, then the active block's FD buffer)
sit in slots ``[0, r_i)`` of ``S (B, R, d)`` (working dtype, zero rows after); the Gram
``G = S S^T`` and the inverse Cholesky factor ``Linv`` of ``G + c I`` (identity on the
padding) are ``(B, R, R)`` and ``y = Linv S r / c`` (the anchored mean's term,
:meth:`~agents.sketches.base.CovarianceEstimator._reanchor`) is ``(B, R)``, all three in float64
(the small core, see :mod:`agents.sketches.base`). ``M = (S S^T + c I)^-1 = Linv^T Linv`` (eq. 3, corrected
below) is never formed: eq. 7's bordering is the bordering of ``Linv`` (as in FD), and after a
reduction of the active block ``Linv`` is rebuilt by one Cholesky of ``G + c I`` (the single
agent's on numpy's LAPACK, :func:`~agents.sketches.fd.inverse_factor_one`). Members close
blocks on their own rounds; the decisions of Alg. 1 line 7 are taken for all at once with
masks, reductions and look-aheads are grouped by (rows, sketch size) into batched ``eigh`` calls.

Cost (``fast=True``, Alg. 4): O(K d r + K r^2) to score K arms (one product with ``S``), O(d r + r^2)
to insert, O(d r l + r^3) per reduction (once per ~l rows). ``fast=False`` runs Alg. 1 over
textbook FD blocks (one reduction per row).

**Memory never above OFUL (``memory_cap=True``, the default; our extension of Invariant 2).**
A sketched member holds ``R = r_in + cap`` rows (frozen rows plus the active block's full FD
buffer, ``cap = 2 l_B`` fast, ``l_B`` textbook; allocated once per block, no spare capacity):
``es * R d + es64 * (2 R^2 + R)`` bytes, against ``es * d^2`` for OFUL's inverse. When closing a
block would open one whose layout costs more than the d x d inverse, the sketch switches to
exact updates at that moment (as at the cap: the new row is folded into the inverse), so its
memory never exceeds OFUL's (the exact mode holds exactly OFUL's ``d^2``). With
``memory_cap=False`` only the literal cap of Alg. 1 line 3 applies (the paper's rule; its peak
can be ~2x OFUL's at d = 784, l0 = 50). Both keep Theorem 1: exact rows add no error.

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
* **threshold.** Seed 000 (Alg. 1 line 7 and Alg. 4 line 9) keeps x in the block iff
  ``BlockSize + ||x||^2 < eps l0`` (strict) or not willExcessSketch; v1's fast algorithm used
  ``eps/2``, we follow seed 000 (``eps l0`` for both variants).
* **willExcessSketch.** Computed as the paper says, by inserting x into a temporary copy of the
  active sketch and reading the shrink value (``FrequentDirections.shrinkage_if_added``, which
  already treats rounding-level values as 0 so low-rank streams are not split). With the fast
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

from .._torch import tensor_bytes
from .._validate import per_member
from .base import CovarianceEstimator, as_tensor, eigh_desc, ridge_solution, set_anchor_
from .exact import below_floor, project, repair_inverse_, sherman_morrison_
from .fd import _listed, border_at_, border_one_, border_scattered_, inverse_factor_one, safe_inverse_factor

__all__ = ["DyadicBlockSketch", "BlockInfo", "block_cap", "check_dbs_params"]

_SKETCHES = ("fd", "rfd")


def block_cap(d: int, l0: int) -> int:
    """Invariant 2's cap ``floor(log2(d/l0 + 1))``, in integers: the largest C with ``l0 (2^C - 1) <= d``."""
    c = 0
    while l0 * (2 ** (c + 1) - 1) <= d:
        c += 1
    return c


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
        block_size: squared Frobenius mass of the rows the block received (seed 000's BlockSize).
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
    """Dyadic Block Sketching over FD or RFD blocks, with eq. 5 Woodbury queries of ``A_hat^-1``.

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
        fast: ``True``: fast Alg. 4 (2l-row FD buffers, bordered factor between reductions);
            ``False``: Alg. 1 over textbook FD (the factor rebuilt every row).
        sentinel: App. B.1's sentinel (see the module docstring); ``True`` follows the paper.
        memory_cap: ``True`` (default): also switch to exact updates as soon as the next block's
            layout would hold more bytes than OFUL's d x d inverse (module docstring);
            ``False``: only the literal block cap of Alg. 1 line 3.
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

    anchored = True  # the sketched mean term goes through the anchor moved at each reduction (base._reanchor)

    def __init__(self, d: int, l0: int, eps: float, *, sketch: str = "fd", reg: float = 1.0, fast: bool = True,
                 sentinel: bool = True, memory_cap: bool = True, keep_gram: bool = False, device=None, dtype=None,
                 batch_size: int | None = None):
        if not isinstance(d, numbers.Integral) or isinstance(d, bool) or d < 1:
            raise ValueError(f"d must be a positive int, got {d!r}")
        l0, eps = check_dbs_params(l0, eps, sketch, fast, sentinel, d=int(d),
                                   batch_size=None if batch_size is None else int(batch_size))
        if not isinstance(memory_cap, bool):
            raise ValueError(f"memory_cap must be True or False, got {memory_cap!r}")
        super().__init__(int(d), reg=reg, device=device, dtype=dtype, batch_size=batch_size)
        # l0 and eps may differ across members (ints/floats when they agree, arrays (B,) otherwise);
        # each member's blocks, threshold and cap are its single sketch's, in a layout padded to the largest
        self.l0, self.eps, self.sketch = l0, eps, sketch
        self.robust = sketch == "rfd"
        self.fast, self.sentinel, self.memory_cap = fast, sentinel, memory_cap
        self.keep_gram = bool(keep_gram)
        self.threshold = self.eps * self.l0  # Alg. 1 line 7: BlockSize + ||x||^2 < eps * l0
        l0s = np.broadcast_to(np.asarray(self.l0, dtype=np.int64), (self.batch_size,))
        self._block_caps = np.array([block_cap(self.d, int(v)) for v in l0s], dtype=np.int64)
        self.block_cap = self._block_caps if isinstance(self.l0, np.ndarray) else int(self._block_caps[0])
        self._eps = torch.finfo(self.dtype).eps
        B = self.batch_size
        ints = lambda: np.zeros(B, dtype=np.int64)  # noqa: E731
        floats = lambda: np.zeros(B, dtype=np.float64)  # noqa: E731
        self.rows, self.rows_in = ints(), ints()  # rows held: all / in frozen blocks
        self.m_act = ints()  # rows of the active block's sketch
        self.l_act = l0s.copy()  # its sketch size l0 2^i
        self.act_rows, self.act_mass = ints(), floats()  # rows it received, its BlockSize
        self.act_shrink, self.act_alpha = floats(), floats()  # its FD shrinkage / RFD alpha
        self.n_frozen = ints()
        self.frozen_shrink, self.alpha_in, self.frozen_ls = floats(), floats(), floats()  # sums over frozen blocks
        self.exact = np.zeros(B, dtype=np.bool_)
        self._n_exact_rows = ints()
        self._frob = floats()
        self._frozen: list[list[BlockInfo]] = [[] for _ in range(B)]
        self._everyone = np.arange(B)
        self._any_exact = False  # kept equal to self.exact.any() (a host bool read every round)
        self._R = 0
        self.S = torch.zeros(B, 0, self.d, **self._kw)
        self.G = torch.zeros(B, 0, 0, **self._ckw)
        self.Linv = torch.zeros(B, 0, 0, **self._ckw)
        self._y = torch.zeros(B, 0, **self._ckw)  # Linv S r / c over each member's rows, r = b - A_hat theta0 (base._reanchor)
        self._cache = None  # projections of the last score_terms, for the next step
        self._c_t = None  # c() as a core tensor (see _c_tensor)
        self.A_inv: torch.Tensor | None = None
        self.gram: torch.Tensor | None = None
        # Alg. 1 line 3 holds from the start (or the first block costs more than OFUL): exact from row 1
        start_exact = (self._block_caps <= 1) | (
            self.memory_cap & (self._layout_bytes(0, self._cap_of(l0s)) > self._exact_bytes()))
        sketched = np.flatnonzero(~start_exact)
        if sketched.size:
            self._ensure_rows(int(self._cap_of(l0s[sketched]).max()))
        exact = np.flatnonzero(start_exact)
        if exact.size:
            for i in exact:
                self._frozen[i] = [BlockInfo(0, int(l0s[i]), 0.0, 0, 0, 0.0, 0.0, False)]
            self.n_frozen[exact] = 1
            self._switch_to_exact(exact)

    # -- sizes and bytes -----------------------------------------------------------------------
    def _cap_of(self, l):
        """Rows an FD block of sketch size l buffers at most (2l fast, l textbook)."""
        return 2 * l if self.fast else l

    def _layout_bytes(self, r_in, cap):
        """Bytes a sketched member holds with ``r_in`` frozen rows and an active buffer of ``cap`` rows:
        ``R d`` rows (working dtype), ``2 R^2 + R`` core numbers (Gram, factor, ``y = Linv S r / c``) and the anchor's
        ``3 d`` (``theta0``, ``r / c``, ``u``: base._reanchor), ``R = r_in + cap``."""
        R = np.asarray(r_in) + cap
        es, ec = self.S.element_size(), self.G.element_size()
        return es * R * self.d + ec * (2 * R * R + R + 3 * self.d)

    def _exact_bytes(self):
        return self.S.element_size() * self.d * self.d * (2 if self.keep_gram else 1)

    @property
    def cap_act(self) -> np.ndarray:
        return self._cap_of(self.l_act)

    # -- per-member scalars ----------------------------------------------------------------------

    def c(self) -> np.ndarray:
        """The ridge of ``A_hat_i``: reg, plus every block's alpha for RFD (host float64 ``(B,)``)."""
        return self.reg + self.alpha_in + self.act_alpha

    @property
    def row_from_cache(self) -> bool:
        """B = 1 while sketched: step(None, r, a) after _score_terms_one (base.row_from_cache)."""
        return not self._any_exact

    def _ridge(self) -> torch.Tensor:
        return self._c_tensor()

    def _c_tensor(self, idx=None) -> torch.Tensor:
        if idx is not None:
            return torch.as_tensor(self.c()[idx], **self._ckw)
        if self._c_t is None:  # cached: rebuilt only when an alpha changes (a reduction or a close)
            self._c_t = torch.as_tensor(self.c(), **self._ckw)
        return self._c_t

    def _alpha_total(self):
        return self.alpha_in + self.act_alpha

    @property
    def exact_mode(self):
        """Whether the sketch switched to exact (OFUL-like) rank-1 updates."""
        return self._one(self.exact)

    @property
    def n_exact_rows(self):
        return self._one(self._n_exact_rows)

    @property
    def frobenius_mass(self):
        return self._one(self._frob)

    @property
    def total_shrinkage(self):
        """``sum_i sigma_bar_i``: bounds ``X^T X - S^T S``; ``< 2 eps`` (Theorem 1)."""
        return self._one(self.frozen_shrink + np.where(self.exact, 0.0, self.act_shrink))

    @property
    def alpha(self):
        """Total RFD counter ``sum_i alpha_i`` added back as ``alpha I`` (0 for FD blocks); summed
        as :attr:`total_shrinkage` is, not read back as ``c - reg`` (which rounds at ``eps reg``)."""
        return self._one(self.alpha_in + self.act_alpha)

    @property
    def n_blocks(self):
        """Blocks so far, inactive and active (<= :attr:`block_cap`)."""
        return self._one(self.n_frozen + (~self.exact))

    @property
    def active_sketch_size(self):
        """``l_{B_t}``: sketch size of the active block (of the last block in exact mode)."""
        return self._one(self.l_act)

    def blocks_weighted_shrinkage(self):
        """``sum_i l_i sigma_bar_i`` over each member's blocks (DBSLinUCB-RFD's theory radius)."""
        return self._one(self.frozen_ls + np.where(self.exact, 0.0, self.l_act * self.act_shrink))

    def blocks(self, member: int = 0) -> list[BlockInfo]:
        """A snapshot of every block of ``member`` (0 for one sketch), oldest first (the last one is
        the active block, if any)."""
        out = list(self._frozen[member])
        if not self.exact[member]:
            out.append(BlockInfo(len(out), int(self.l_act[member]), float(self.act_mass[member]),
                                 int(self.act_rows[member]), int(self.m_act[member]), float(self.act_shrink[member]),
                                 float(self.act_alpha[member]), True))
        return out

    def active_rows(self, member: int = 0) -> torch.Tensor:
        """The active block's sketch rows ``S*`` of ``member`` (a view: do not modify)."""
        return self.S[member, self.rows_in[member]: self.rows[member]]

    def held_rows(self, member: int = 0) -> torch.Tensor:
        """All sketch rows ``[S~; S*]`` of ``member``, in the factor's order (a view)."""
        return self.S[member, : self.rows[member]]

    def stats(self) -> dict:
        """Flat scalars for a per-round history (e.g. ``records.append(dbs.stats())``)."""
        return {
            "n_rows": self.n_rows, "n_blocks": self.n_blocks, "sketch_size": self.sketch_size,
            "active_sketch_size": self.active_sketch_size, "exact_mode": self.exact_mode,
            "total_shrinkage": self.total_shrinkage, "alpha": self.alpha,
        }

    # -- storage ---------------------------------------------------------------------------------
    def _ensure_rows(self, n: int) -> None:
        """Grow the row capacity R to ``n`` exactly (once per block opening: no spare capacity)."""
        if n <= self._R:
            return
        R, B, old = n, self.batch_size, self._R
        S = torch.zeros(B, R, self.d, **self._kw)
        G = torch.zeros(B, R, R, **self._ckw)
        Linv = torch.eye(R, **self._ckw).repeat(B, 1, 1)
        y = torch.zeros(B, R, **self._ckw)
        if old:
            S[:, :old], G[:, :old, :old], Linv[:, :old, :old], y[:, :old] = self.S, self.G, self.Linv, self._y
        self.S, self.G, self.Linv, self._y, self._R = S, G, Linv, y, R

    def _groups(self, idx: np.ndarray, *keys: np.ndarray):
        """Split member indices ``idx`` by the values of ``keys`` (one batched op per group)."""
        if idx.size == 0:
            return
        stacked = np.stack([k[idx] for k in keys], axis=1)
        values, inverse = np.unique(stacked, axis=0, return_inverse=True)
        for j, value in enumerate(values):
            yield idx[inverse.reshape(-1) == j], [int(v) for v in value]

    # -- streaming -------------------------------------------------------------------------------
    def step(self, X, r, actions=None):
        """Add the rows (see :meth:`CovarianceEstimator.step`; ``r`` a float and ``actions`` an int
        are accepted when B = 1)."""
        cache0 = self._cache
        if cache0 is not None and cache0[6] is not None:  # from _score_terms_one (B = 1, unbatched views)
            if actions is not None and cache0[0] is not None and self._step_one(
                r if isinstance(r, float) else float(r[0]), actions if isinstance(actions, int) else int(actions[0]), cache0,
            ):
                return
            if X is None:  # row_from_cache: the scored arm, as a (1, d) tensor
                a = actions if isinstance(actions, int) else int(actions[0])
                X = as_tensor(cache0[6])[a : a + 1]
            U = None if cache0[0] is None else as_tensor(cache0[0]).unsqueeze(0)  # the batched path's shapes
            cache0 = self._cache = (U, cache0[1], None, None, None, as_tensor(cache0[5]).unsqueeze(0), None, None, None)
        if isinstance(actions, int) and cache0 is not None and cache0[5] is not None:
            xx = cache0[5][:, actions]  # ||x||^2 of the played arm was scored (and finite)
            norm2 = np.array([xx.item()])
        else:
            xx, norm2 = self._check_rows(X)
        self._frob += norm2
        self.trace += norm2
        cache, self._cache = self._cache, None
        if actions is None:
            cache = None
        elif isinstance(actions, int) and cache is not None and cache[2] is not None:
            actions = torch.tensor([actions], device=self.device)  # the exact path indexes with tensors
        pick = (lambda T: T[:, actions]) if isinstance(actions, int) else (lambda T: T[self._members, actions])
        if cache is not None and cache[0] is not None:  # S x = the played arm's row of arms S^T (first Rm slots)
            g = pick(cache[0])
        elif self._R:
            g = self._core(torch.bmm(self.S, X.unsqueeze(2)).squeeze(2))  # zero on the padding and for exact members
        else:
            g = None
        Xc = self._core(X)
        # b += r x; r / c and u gain (r - x^T theta0) x / c (exact members: unused; no anchor once all are)
        step = self._advance_anchor(Xc, r)
        zx = None if self._anchor is None else torch.linalg.vecdot(Xc, self._anchor[:, 1])  # the new row's S r / c
        if g is None:
            g = torch.zeros(self.batch_size, 0, **self._ckw)
        if not self._any_exact and (self.act_mass + norm2 < self.threshold).all():
            # the common round: every member sketched and under its block's mass threshold, so
            # Alg. 1 line 7 keeps x in the active block without a look-ahead
            self._insert_active(self._everyone, X, self._core(xx), norm2, g, zx, step)
            self._reanchor_stale(self.S, self.Linv, self._y, skip=self.exact)
            self.n_rows += 1
            return
        was_exact = self.exact.copy()
        # Alg. 1 line 7 for every sketched member at once (the look-ahead only where the mass test fails)
        need = ~was_exact & ~(self.act_mass + norm2 < self.threshold)
        close = need & self.sentinel & (self.act_rows > 0) & (self.act_rows < self.l_act)  # App. B.1's sentinel
        look = np.flatnonzero(need & ~close)
        if look.size:
            close[look] = self._shrinkage_if_added(look, X, norm2, g) > 0.0
        switch = np.zeros(self.batch_size, dtype=np.bool_)
        closing = np.flatnonzero(close)
        if closing.size:
            switch[self._close_active(closing, norm2)] = True
        inserting = np.flatnonzero(~was_exact & ~switch)
        if inserting.size:
            self._insert_active(inserting, X, self._core(xx), norm2, g, zx, step)
        exact_rows = np.flatnonzero(was_exact | switch)
        if exact_rows.size:
            Ax = q = None
            if cache is not None and cache[2] is not None and np.array_equal(cache[3], exact_rows):
                sel = torch.as_tensor(exact_rows, device=self.device)
                pos = torch.arange(exact_rows.size, device=self.device)
                Ax = cache[2][pos, actions[sel]]
                q = cache[4][pos, actions[sel]]
            self._sherman_morrison(exact_rows, X, xx, Ax, q)
        self._n_exact_rows[was_exact] += 1
        self._reanchor_stale(self.S, self.Linv, self._y, skip=self.exact)
        self.n_rows += 1

    def _step_one(self, r: float, a: int, cache) -> bool:
        """B = 1, sketched, the common round (a nonzero row that Alg. 1 line 7 keeps in the active
        block by the mass test alone): :meth:`step` and :meth:`_insert_active` on host scalars and
        member 0's host views (:meth:`~agents.sketches.base.CovarianceEstimator._member0`), the
        played arm's ``S x`` taken from the scored projection. Returns False, having changed
        nothing, for any other round (the general path then runs)."""
        U, sq, arms, ac, W = cache[0], cache[5], cache[6], cache[7], cache[8]  # unbatched views (numpy on the host path)
        norm2 = float(sq[a])  # scored, hence finite
        if not (norm2 > 0.0 and self.act_mass[0] + norm2 < self.threshold):
            return False
        self._cache = None
        self._frob[0] += norm2
        self.trace[0] += norm2
        Linv, G, S, y, b, anchor = self._member0("step", (self.Linv, self.G, self.S, self._y, self.b, self._anchor))
        j = int(self.rows[0])
        # X[0] (working, core dtype), and S x, Linv S x: the played arm's rows of arms S^T and of W
        x, g, w = arms[a], U[a], W[a]
        xc = x if ac is arms else ac[a]
        if isinstance(S, np.ndarray) and not isinstance(g, np.ndarray):  # scored on tensors (see _member0)
            x, xc, g, w = x.numpy(), xc.numpy(), g.numpy(), w.numpy()
        c = float(self.c()[0])
        step = self._advance_anchor_one(anchor, b, xc, r, c, norm2)  # b += r x; r / c and u gain step x
        self.act_mass[0] += norm2
        self.act_rows[0] += 1
        rebuilt = border_one_(Linv, G, S, y, j, x, norm2, g, c, float(xc @ anchor[1]), step, self._eps, w)  # eq. 7
        self.m_act[0] += 1
        self.rows[0] += 1
        m, l = int(self.m_act[0]), int(self.l_act[0])
        if m == self._cap_of(l) or not self.fast:
            self._reduce_active_one(m, l)
        else:
            self._reanchor_one_if_stale(anchor, b, S, Linv, y, j + 1, c, rebuilt)
        self.n_rows += 1
        return True

    def _close_active(self, idx: np.ndarray, norm2: np.ndarray) -> np.ndarray:
        """Alg. 1 lines 10-12: freeze the active blocks of ``idx`` (their rows stay where they
        are, now counted as frozen) and open blocks of twice the size; members reaching the cap
        (or, with ``memory_cap``, whose next block would cost more than OFUL) switch to exact
        updates (returned)."""
        for i in idx:
            self._frozen[i].append(BlockInfo(len(self._frozen[i]), int(self.l_act[i]), float(self.act_mass[i]),
                                             int(self.act_rows[i]), int(self.m_act[i]), float(self.act_shrink[i]),
                                             float(self.act_alpha[i]), False))
        self.frozen_shrink[idx] += self.act_shrink[idx]
        self.alpha_in[idx] += self.act_alpha[idx]
        self._c_t = None
        self.frozen_ls[idx] += self.l_act[idx] * self.act_shrink[idx]
        self.n_frozen[idx] += 1
        self.rows_in[idx] = self.rows[idx]
        self.l_act[idx] *= 2
        for arr in (self.m_act, self.act_rows):
            arr[idx] = 0
        for arr in (self.act_mass, self.act_shrink, self.act_alpha):
            arr[idx] = 0.0
        over = self.n_frozen[idx] >= self._block_caps[idx] - 1
        if self.memory_cap:
            over |= self._layout_bytes(self.rows_in[idx], self.cap_act[idx]) > self._exact_bytes()
        switching = idx[over]
        if switching.size:
            for i in switching:  # the new block holds x alone, exactly
                self._frozen[i].append(BlockInfo(len(self._frozen[i]), int(self.l_act[i]), float(norm2[i]), 1, 0,
                                                 0.0, 0.0, False))
            self.n_frozen[switching] += 1
            self._switch_to_exact(switching)
        opening = idx[~over]
        if opening.size:
            self._ensure_rows(int((self.rows_in[opening] + self.cap_act[opening]).max()))
        return switching

    def _switch_to_exact(self, idx: np.ndarray) -> None:
        """Form ``A_hat^-1 = (I - W^T W) / c`` with ``W = Linv S`` (eq. 5) once (O(d^2 r)); the
        sketches live on inside it and are dropped."""
        if self.A_inv is None:
            self.A_inv = torch.zeros(self.batch_size, self.d, self.d, **self._kw)
            if self.keep_gram:
                self.gram = torch.zeros(self.batch_size, self.d, self.d, **self._kw)
        t = torch.as_tensor(idx, device=self.device)
        eye = torch.eye(self.d, **self._kw)
        c = self._c_tensor(idx).to(self.dtype).view(-1, 1, 1)
        if self._R:
            W = torch.bmm(self.Linv[t], self._core(self.S[t]))  # (n, R, d)
            A = eye - torch.bmm(W.mT, W).to(self.dtype)
            if self.gram is not None:
                self.gram[t] = torch.bmm(self.S[t].mT, self.S[t]) + (c - self._reg_tensor(idx)) * eye
            self.S[t] = 0.0
            self.G[t] = 0.0
            self._y[t] = 0.0
            self.Linv[t] = torch.eye(self._R, **self._ckw)
        else:
            A = eye.expand(idx.size, self.d, self.d).clone()
        self.A_inv[t] = A / c
        self.exact[idx] = True
        self._any_exact = True
        for arr in (self.rows, self.rows_in, self.m_act):
            arr[idx] = 0
        if self.exact.all():  # nobody is sketched any more: free the anchor and the row layout
            self._anchor = None
        if self.exact.all() and self._R:
            self._R = 0
            self.S = torch.zeros(self.batch_size, 0, self.d, **self._kw)
            self.G = torch.zeros(self.batch_size, 0, 0, **self._ckw)
            self.Linv = torch.zeros(self.batch_size, 0, 0, **self._ckw)
            self._y = torch.zeros(self.batch_size, 0, **self._ckw)

    def _insert_active(self, idx, X, xx, norm2, g, zx, step) -> None:
        """FD update of the active blocks of ``idx`` with their rows (Alg. 4 lines 11-19)."""
        if idx is self._everyone and (norm2 > 0.0).all():  # whole-array bookkeeping, no fancy indexing
            self.act_mass += norm2
            self.act_rows += 1
            self._append(idx, X, xx, g, zx, step)
            self.m_act += 1
            self.rows += 1
            full = (self.m_act == self.cap_act) if self.fast else np.ones(self.batch_size, dtype=np.bool_)
            if full.any():
                for group, (m, l) in self._groups(np.flatnonzero(full), self.m_act, self.l_act):
                    self._reduce_active(group, m, l)
            return
        self.act_mass[idx] += norm2[idx]
        self.act_rows[idx] += 1
        live = idx[norm2[idx] > 0.0]  # FD skips zero rows: A_hat unchanged
        if live.size == 0:
            return
        self._append(live, X, xx, g, zx, step)
        self.m_act[live] += 1
        self.rows[live] += 1
        reducing = live[self.m_act[live] == self.cap_act[live]] if self.fast else live
        for group, (m, l) in self._groups(reducing, self.m_act, self.l_act):
            self._reduce_active(group, m, l)

    def _append(self, idx, X, xx, g, zx, step) -> None:
        """eq. 7: border every factor with its member's new row (:func:`~agents.sketches.fd.border_at_`)."""
        pos_h = self.rows if idx is self._everyone else self.rows[idx]
        j = int(pos_h[0])
        if self.batch_size == 1 and idx.size == 1:  # the O(r) bordering on host views (fd.border_one_)
            Linv, G, S, y = self._member0("host", (self.Linv, self.G, self.S, self._y))
            gj, x = (g[0, :j] if j else None), X[0]
            if isinstance(S, np.ndarray):
                gj, x = (gj.numpy() if j else None), x.numpy()
            self._unanchored[0] |= border_one_(Linv, G, S, y, j, x, float(xx[0]), gj, float(self.c()[0]), float(zx[0]),
                                               float(step[0]), self._eps)
            return
        if idx.size == self.batch_size and (self.batch_size == 1 or (pos_h == j).all()):
            self._unanchor(border_at_(self.Linv, self.G, self.S, self._y, j, X, xx, g, self._c_tensor(), zx, step,
                                      self._eps))
            return
        if g.shape[1] < self._R:
            g = torch.nn.functional.pad(g, (0, self._R - g.shape[1]))
        t = torch.as_tensor(idx, device=self.device)
        pos = torch.as_tensor(pos_h, device=self.device)
        border_scattered_(self.Linv, self.G, self.S, self._y, t, pos, X, xx, g, self._c_tensor(), zx, step)

    def _active_block(self, t: torch.Tensor, off: torch.Tensor, m: int):
        """The active blocks' rows ``(n, m, d)`` and Gram ``(n, m, m)`` at per-member offsets."""
        A = off.unsqueeze(1) + torch.arange(m, device=self.device)
        rows = self.S[t.unsqueeze(1), A]
        gram = self.G[t.view(-1, 1, 1), A.unsqueeze(2), A.unsqueeze(1)]
        return rows, gram

    def _shrinkage_if_added(self, idx, X, norm2, g_all) -> np.ndarray:
        """willExcessSketch: the shrink value inserting x would apply to each active block now
        (0 for a zero row, or while a fast buffer is not about to fill; else the l-th eigenvalue
        of the bordered Gram, rounding-level -> 0)."""
        out = np.zeros(idx.size)
        cand = norm2[idx] > 0.0
        if self.fast:
            cand &= self.m_act[idx] + 1 >= self.cap_act[idx]
        where = {int(i): j for j, i in enumerate(idx)}
        for group, (m, l) in self._groups(idx[cand], self.m_act, self.l_act):
            if m + 1 < l:
                continue  # fewer than l rows: FD discards nothing
            t = torch.as_tensor(group, device=self.device)
            off = torch.as_tensor(self.rows_in[group], device=self.device)
            rows, gram = self._active_block(t, off, m)
            if self._same:
                bordered = torch.zeros(group.size, m + 1, m + 1, **self._ckw)
                bordered[:, :m, :m] = gram
                gx = g_all[t.unsqueeze(1), off.unsqueeze(1) + torch.arange(m, device=self.device)]  # S* x
                bordered[:, m, :m] = gx
                bordered[:, :m, m] = gx
                bordered[:, m, m] = torch.as_tensor(norm2[group], **self._ckw)
            else:  # what _reduce_active would decompose (CovarianceEstimator._reduction_gram)
                bordered = self._reduction_gram(torch.cat([rows, X[t].unsqueeze(1)], dim=1), None)
            delta = self._shrink_values(torch.linalg.eigvalsh(bordered).flip(-1), m + 1, l)
            for i, value in zip(group, delta.tolist()):
                out[where[int(i)]] = value
        return out

    def _reduce_active(self, idx: np.ndarray, m: int, l: int) -> None:
        """FD reduction (seed 000 Alg. 2 lines 4-7) of the active blocks of ``idx`` (all with m
        rows and sketch size l), then eq. 3: the combined factor rebuilt from the Gram."""
        t = torch.as_tensor(idx, device=self.device)
        n, R = idx.size, self._R
        off = torch.as_tensor(self.rows_in[idx], device=self.device)
        rows, gram = self._active_block(t, off, m)
        delta, keep, kept, coeff = self._shrink_plan(*eigh_desc(self._reduction_gram(rows, gram)), m, l)  # new S* = coeff S*
        k, kept_n = keep.shape[1], kept.sum(dim=1)
        new_rows = torch.bmm(coeff.to(self.dtype), rows)  # (n, k, d)
        # Frozen rows stay; the active block's rows are replaced, its Gram becomes diag(keep)
        # and its cross terms with the frozen rows are recomputed (eq. 3's off-diagonal blocks).
        frozen = torch.arange(R, device=self.device).unsqueeze(0) < off.unsqueeze(1)  # (n, R)
        S = self.S[t] * frozen.unsqueeze(2)
        Ak = off.unsqueeze(1) + torch.arange(k, device=self.device)
        ar = torch.arange(n, device=self.device).unsqueeze(1)
        S[ar, Ak] = new_rows
        cross = self._core(torch.bmm(new_rows, S.mT)) * frozen.unsqueeze(1)  # (n, k, R)
        cross.scatter_(2, Ak.unsqueeze(2), keep.unsqueeze(2))
        G = self.G[t] * (frozen.unsqueeze(2) & frozen.unsqueeze(1))
        G[ar, Ak] = cross
        G[ar, :, Ak] = cross
        delta_np = delta.double().cpu().numpy()
        self.act_shrink[idx] += delta_np
        if self.robust:  # Alg. 3 line 5: alpha += sigma, before c is used below
            self.act_alpha[idx] += delta_np
            self._c_t = None
        self.m_act[idx] = kept_n.cpu().numpy()
        self.rows[idx] = self.rows_in[idx] + self.m_act[idx]
        self.trace[idx] = torch.diagonal(G, dim1=1, dim2=2).sum(dim=1).double().cpu().numpy()
        self.S[t], self.G[t] = S, G
        Linv = self._inverse_factor(G, self.rows[idx], self.c()[idx])
        self.Linv[t] = Linv
        # A_hat changed otherwise than by a row: the anchor moves to it (base._reanchor), r_b = 0
        self._reanchor(t, S, Linv, self._c_tensor(idx))
        self._y[t] = 0.0

    def _reduce_active_one(self, m: int, l: int) -> None:
        """B = 1 of :meth:`_reduce_active` (the single agent's reduction), in place on member 0's views
        (:meth:`~agents.sketches.base.CovarianceEstimator._member0`: numpy on CPU, tensors elsewhere),
        as FD's :meth:`~agents.sketches.fd.FrequentDirections._reduce_one`: the same plan, without the
        batched code's gathers and masked copies of the whole row stack, and on numpy's LAPACK
        (:func:`~agents.sketches.base.eigh_desc`, :func:`~agents.sketches.fd.inverse_factor_one`)
        where the round runs."""
        off = int(self.rows_in[0])
        # (the views of _step_one, in its order: one cache entry under the key, not two evicting each other)
        Linv, G, S, y, b, anchor = self._member0("step", (self.Linv, self.G, self.S, self._y, self.b, self._anchor))
        act = slice(off, off + m)
        evals, evecs = eigh_desc(self._reduction_gram(S[None, act], G[None, act, act]))
        delta, keep, kept, coeff = self._shrink_plan(evals, evecs, m, l)  # new S* = coeff S*
        k = keep.shape[1]
        S[off : off + k] = self._work(coeff[0]) @ S[act]  # (formed before any row is overwritten)
        S[off + k : off + m] = 0.0
        # eq. 3's off-diagonal blocks: the new rows against the frozen ones, the active Gram diag(keep)
        cross = self._core(S[off : off + k] @ S[:off].T)  # (k, off)
        G[off:] = 0.0
        G[:, off:] = 0.0
        G[off : off + k, :off] = cross  # (the lower triangle: every reader of G reads that)
        R = self._R
        G.reshape(-1)[off * (R + 1) : (off + k) * (R + 1) : R + 1] = keep[0]  # (a flat strided view of the diagonal)
        delta_h = float(delta[0])
        self.act_shrink[0] += delta_h
        if self.robust:  # Alg. 3 line 5: alpha += sigma, before c is used below
            self.act_alpha[0] += delta_h
            self._c_t = None
        self.m_act[0] = int(kept.sum())
        rows = self.rows[0] = off + self.m_act[0]
        self.trace[0] = float(G.trace())
        c = float(self.c()[0])
        Linv[rows:] = 0.0  # identity on the padding
        Linv[:, rows:] = 0.0
        Linv.reshape(-1)[rows * (R + 1) :: R + 1] = 1.0
        Linv[:rows, :rows] = inverse_factor_one(G[:rows, :rows], c)
        # A_hat changed otherwise than by a row: the anchor moves to it (base._reanchor), r_b = 0
        set_anchor_(anchor, ridge_solution(b, self._core(S[:rows]), Linv[:rows, :rows], c))
        y[:] = 0.0

    def _inverse_factor(self, G: torch.Tensor, r: np.ndarray, c: np.ndarray) -> torch.Tensor:
        """Inverse Cholesky factors of ``G + c I`` on each member's first r rows, identity on the
        padding (:func:`~agents.sketches.fd.safe_inverse_factor`: safeguarded, bounded entries)."""
        R = G.shape[1]
        real = torch.arange(R, device=self.device).unsqueeze(0) < torch.as_tensor(r, device=self.device).unsqueeze(1)
        ct = torch.as_tensor(c, **self._ckw)
        # padding rows: G is zero there, so (G + diag(c on the real rows, 1 - c elsewhere... )) is
        # factored as the identity by giving them the value 1 through the mask
        Gm = torch.where(real.unsqueeze(2) & real.unsqueeze(1), G, torch.zeros_like(G))
        Gm = Gm + torch.diag_embed((~real).to(G.dtype) * (1.0 - ct.unsqueeze(1)))
        return safe_inverse_factor(Gm, ct)

    def _sherman_morrison(self, idx, X, xx, Ax=None, q=None) -> None:
        """Exact rank-1 update of the members ``idx`` (Alg. 1 line 4), with the safeguard of
        :mod:`agents.sketches.exact`: a width below the valid floor (beyond rounding,
        :func:`~agents.sketches.exact.below_floor`) triggers a repair first."""
        full = idx.size == self.batch_size
        t = torch.as_tensor(idx, device=self.device)
        A = self.A_inv if full else self.A_inv[t]
        x = X if full else X[t]
        top = torch.as_tensor(self._reg_of(idx) + self.trace[idx] + self._alpha_total()[idx], **self._kw)
        if Ax is None:
            Ax = torch.bmm(A, x.unsqueeze(2)).squeeze(2)
        floor = (xx if full else xx[t]) / top
        raw = (x * Ax).sum(dim=1)
        bad = below_floor(raw, floor, self.d, self.dtype)
        if bool(bad.any()):
            b = torch.nonzero(bad).flatten()
            sub = A[b]
            repair_inverse_(sub, 1.0 / top[b], self._inverse_ceiling(idx[b.cpu().numpy()]))
            A[b] = sub
            Ax = torch.bmm(A, x.unsqueeze(2)).squeeze(2)
            raw = (x * Ax).sum(dim=1)
        q = torch.maximum(raw, floor)
        sherman_morrison_(A, Ax, q)
        if not full:
            self.A_inv[t] = A
        if self.gram is not None:
            self.gram[t] += torch.bmm(x.unsqueeze(2), x.unsqueeze(1))

    # -- queries ---------------------------------------------------------------------------------
    def score_terms(self, arms):
        """``(x^T A_hat^-1 b, x^T A_hat^-1 x)`` for every arm of every member from one projection:
        ``arms S^T`` for the sketched members (eq. 5 around the anchor, with ``y = Linv S r / c`` kept
        up to date), ``arms A^-1`` for the exact ones. The projections are kept for the next step."""
        if self.batch_size == 1 and not self._any_exact:
            mean, quad = self._score_terms_one(arms[0])
            return as_tensor(mean).unsqueeze(0), as_tensor(quad).unsqueeze(0)  # core dtype, as below
        c = self._c_tensor().unsqueeze(1)
        sq = self._sq_norms(arms)
        floor = self._floor(sq)
        U, Rm, P, e, qe = None, 0, None, None, None
        mean = quad = None
        if not self.exact.all():
            sqc = sq
            mean = torch.bmm(self._core(arms), self._anchor[:, 2].unsqueeze(2)).squeeze(2)  # x^T u (base._reanchor)
            Rm = int(self.rows.max()) if self._R else 0  # exact members hold no rows (0)
            if Rm:
                U = self._core(torch.bmm(arms, self.S[:, :Rm].mT))  # (B, K, Rm): the only O(B K d r) step
                Linv = self.Linv[:, :Rm, :Rm]
                W = torch.bmm(U, Linv.mT)  # rows Linv S x
                quad = (sqc - W.square().sum(dim=2)) / c
                mean = mean - torch.bmm(W, self._y[:, :Rm].unsqueeze(2)).squeeze(2)  # y = Linv S r / c (fd.border_at_)
            else:
                quad = sqc / c
            quad = torch.maximum(quad, floor)
        if self.exact.any():
            e = np.flatnonzero(self.exact)
            if e.size == self.batch_size:
                P, raw = project(arms, self.A_inv)  # (B, K, d): rows A^-1 x (OFUL's layout)
                quad = torch.maximum(self._core(raw), floor)
                mean = self._core(torch.bmm(P, self._work(self.b).unsqueeze(2)).squeeze(2))
                qe = quad
            else:
                t = torch.as_tensor(e, device=self.device)
                P, raw = project(arms[t], self.A_inv[t])
                qe = torch.maximum(self._core(raw), floor[t])
                quad[t] = qe
                mean[t] = self._core(torch.bmm(P, self._work(self.b[t]).unsqueeze(2)).squeeze(2))  # core dtype
        self._cache = (U, Rm, P, e, qe, sq, None, None, None)
        return mean, quad  # core dtype: the loop compares scores there

    def _score_terms_one(self, arms):
        """B = 1, sketched: :meth:`score_terms` (:meth:`~agents.sketches.base.CovarianceEstimator._woodbury_terms_one`);
        exact mode goes through :meth:`score_terms`. The cache holds the unbatched projection
        ``U`` (slot 0), norms (5), arms (6), arms in the core dtype (7) and ``W = U Linv^T`` (8)."""
        if self._any_exact:
            return super()._score_terms_one(arms)
        Rm = int(self.rows[0])
        mean, quad, (U, W, sq, a, ac) = self._woodbury_terms_one(arms, self.S, self.Linv, self._y, Rm, float(self.c()[0]))
        self._cache = (U, Rm, None, None, None, sq, a, ac, W)
        return mean, quad

    def logdet_increments(self, X, actions=None) -> torch.Tensor:
        return torch.log1p(self._quad(X.unsqueeze(1))[:, 0])

    def _quad(self, arms):
        """eq. 5 per sketched member, ``x^T A_inv x`` per exact member: ``(B, K, d) -> (B, K)``."""
        sq = torch.linalg.vector_norm(arms, dim=2).square()
        floor = self._floor(sq)
        out = sq.clone()
        if not self.exact.all():
            q = self._core(sq)
            if self._R:
                W = torch.bmm(self._core(torch.bmm(arms, self.S.mT)), self.Linv.mT)
                q = q - W.square().sum(dim=2)
            out = torch.maximum((q / self._c_tensor().unsqueeze(1)).to(self.dtype), floor)
        if self.exact.any():
            e = np.flatnonzero(self.exact)
            t = torch.as_tensor(e, device=self.device)
            out[t] = torch.maximum(project(arms[t], self.A_inv[t])[1], floor[t])
        return out

    def _solve(self, V):
        """``A_hat_i^-1 v_i`` per member (eq. 5, or the exact inverse past the switch)."""
        c = self._c_tensor().unsqueeze(1)
        out = (self._core(V) / c).to(self.dtype)
        if not self.exact.all() and self._R:
            y = torch.bmm(self.Linv.mT, torch.bmm(self.Linv, torch.bmm(self.S, V.unsqueeze(2)).to(self.cdtype)))
            out = ((self._core(V) - self._core(torch.bmm(y.mT.to(self.dtype), self.S).squeeze(1))) / c).to(self.dtype)
        if self.exact.any():
            t = torch.as_tensor(np.flatnonzero(self.exact), device=self.device)
            out[t] = torch.bmm(self.A_inv[t], V[t].unsqueeze(2)).squeeze(2)
        return out

    def _theta_all(self):
        """The anchored ridge solution for sketched members; ``A^-1 b`` for exact ones."""
        if self._anchor is None:  # every member exact
            return super()._theta_all()
        out = super()._theta_all()
        if self.exact.any():
            t = torch.as_tensor(np.flatnonzero(self.exact), device=self.device)
            out[t] = torch.bmm(self.A_inv[t], self._work(self.b[t]).unsqueeze(2)).squeeze(2)
        return out

    def _covariance(self):
        """``sum_i S_i^T S_i (+ alpha I for RFD)``; after the switch the exact Gram (``keep_gram``) or
        ``A_hat - reg I`` recovered from the inverse (O(d^3), accurate to ~eps cond(A_hat))."""
        eye = torch.eye(self.d, **self._kw)
        # the summed alpha (as the alpha property), not c - reg, which rounds at eps * reg
        alpha = torch.as_tensor(self.alpha_in + self.act_alpha, **self._kw).view(-1, 1, 1)
        cov = (torch.bmm(self.S.mT, self.S) if self._R else torch.zeros(self.batch_size, self.d, self.d, **self._kw))
        cov = cov + alpha * eye
        if self.exact.any():
            t = torch.as_tensor(np.flatnonzero(self.exact), device=self.device)
            e = np.flatnonzero(self.exact)
            cov[t] = self.gram[t] if self.gram is not None else torch.linalg.inv(self.A_inv[t]) - self._reg_tensor(e) * eye
        return cov

    # -- introspection ---------------------------------------------------------------------------
    def sketch_sizes(self):
        """Rows held per member (``d`` once exact): the paper's adaptive sketch size."""
        return np.where(self.exact, self.d, self.rows)

    def member_memory_bytes(self):
        """What one member holds: its frozen rows and the active block's full buffer with their
        Gram, factor, ``S r`` and anchor (:meth:`_layout_bytes`), or the d x d inverse once exact."""
        sketched = self._layout_bytes(self.rows_in, self.cap_act)
        return np.where(self.exact, self._exact_bytes(), sketched).astype(np.int64)

    def _held_bytes(self):
        return tensor_bytes(self.S, self.G, self.Linv, self._y, self.A_inv, self.gram, self.b, self._anchor)

    def __repr__(self) -> str:
        return (f"DyadicBlockSketch(d={self.d}, l0={_listed(self.l0)}, eps={_listed(self.eps)}, sketch={self.sketch!r}, reg={_listed(self.reg)}, "
                f"fast={self.fast}, batch_size={None if self.single else self.batch_size}, "
                f"n_blocks={self.n_blocks}, exact_mode={self.exact_mode})")
