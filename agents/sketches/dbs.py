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

Cost (``fast=True``, Alg. 4): the active FD block buffers up to ``2 l`` rows; between two of
its reductions the combined ``M`` is grown by one row/column per inserted row with the
bordered inverse of eq. 7 (O(d r + r^2), r = total rows held), and after a reduction it is
re-formed by eq. 3 from the cached Gram of the frozen rows (O(d r l + r^3) once per ~l rows).
``quad_inv`` of K arms costs O(K d r + K r^2), ``solve`` O(d r + r^2); no d x d matrix exists
before the cap (there ``r <= 2 sum_{i <= C-2} l_i <= d - l0``). After the cap a d x d inverse is kept by design
(the "degenerate to OFUL" regime of seed 000 Sec. 4.1). ``fast=False`` runs Alg. 1 over
textbook FD blocks (one reduction per row, so ``M`` is re-formed by eq. 3 every row).

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

import torch

from .._torch import as_vector, tensor_bytes
from .base import CovarianceEstimator
from .fd import FrequentDirections
from .rfd import RobustFrequentDirections

__all__ = ["DyadicBlockSketch", "BlockInfo", "block_cap", "check_dbs_params"]

_SKETCHES = {"fd": FrequentDirections, "rfd": RobustFrequentDirections}


def block_cap(d: int, l0: int) -> int:
    """Invariant 2's cap ``floor(log2(d/l0 + 1))``, in integers: the largest C with ``l0 (2^C - 1) <= d``."""
    c = 0
    while l0 * (2 ** (c + 1) - 1) <= d:
        c += 1
    return c


def check_dbs_params(l0, eps, sketch, fast=True, sentinel=True, d: int | None = None) -> float:
    """Validate Dyadic Block Sketching's parameters (``d=None``: dimension not known yet).

    Raises ``ValueError`` naming the bad parameter and the fix; returns ``eps`` as a float.
    """
    if isinstance(l0, bool) or not isinstance(l0, numbers.Integral) or l0 < 1:
        raise ValueError(f"l0 (the initial sketch size) must be an int >= 1, got {l0!r}")
    if d is not None and l0 > d:
        raise ValueError(
            f"l0={l0} exceeds the dimension d={d}: a sketch larger than the space is pointless and the "
            f"block cap floor(log2(d/l0 + 1)) would be 0; choose 1 <= l0 <= d (l0 > d/3 means exact updates)"
        )
    try:
        eps_f = float(eps)
    except (TypeError, ValueError):
        eps_f = float("nan")
    if isinstance(eps, bool) or not (math.isfinite(eps_f) and eps_f > 0):
        raise ValueError(f"eps (the error parameter) must be a finite number > 0, got {eps!r}")
    if not isinstance(sketch, str) or sketch not in _SKETCHES:
        raise ValueError(f"sketch must be 'fd' or 'rfd', got {sketch!r}")
    if not isinstance(fast, bool):
        raise ValueError(f"fast must be True (fast Alg. 4) or False (Alg. 1), got {fast!r}")
    if not isinstance(sentinel, bool):
        raise ValueError(f"sentinel must be True or False, got {sentinel!r}")
    return eps_f


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
        sketch: ``"fd"`` (Frequent Directions blocks) or ``"rfd"`` (Robust FD: the discarded
            mass is added back as ``alpha I``).
        reg: the ridge ``lambda > 0`` of ``A_hat = reg I + ...``.
        fast: ``True``: fast Alg. 4 (2l-row FD buffers, bordered inverse eq. 7 between
            reductions); ``False``: Alg. 1 over textbook FD (eq. 3 recomputed every row).
        sentinel: App. B.1's sentinel (see the module docstring); ``True`` follows the paper.
        keep_gram: also keep the d x d Gram after the cap, so that :meth:`covariance` is exact
            there (diagnostics and tests; otherwise it is recovered by inverting ``A_hat^-1``).
        device, dtype: where the state lives (float64 default on CPU).

    Attributes:
        block_cap: ``floor(log2(d/l0 + 1))``, the most blocks there will ever be.
        n_exact_rows: rows added exactly after the cap.
        frobenius_mass: ``||X||_F^2``, the squared norms of all rows so far.
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
        keep_gram: bool = False,
        device=None,
        dtype=None,
    ):
        if not isinstance(d, numbers.Integral) or isinstance(d, bool) or d < 1:
            raise ValueError(f"d must be a positive int, got {d!r}")
        eps_f = check_dbs_params(l0, eps, sketch, fast, sentinel, d=int(d))
        super().__init__(int(d), reg=reg, device=device, dtype=dtype)
        self.l0 = int(l0)
        self.eps = eps_f
        self.sketch = sketch
        self.fast = fast
        self.sentinel = sentinel
        self.keep_gram = bool(keep_gram)
        self.threshold = self.eps * self.l0  # Alg. 1 line 7: BlockSize + ||x||^2 < eps * l0
        self.block_cap = block_cap(self.d, self.l0)
        self._kw = {"device": self.device, "dtype": self.dtype}
        # Frozen (inactive) blocks: their stacked rows S~, its Gram S~ S~^T (eq. 3's corrected M~).
        # S~ and the active block's row buffer are consecutive rows of one tensor, so [S~; S*] (in
        # M's order) is one slice _rows[:r] and each query is one product with it, not two and a cat.
        self._rows: torch.Tensor | None = None
        self._S_in = torch.zeros(0, self.d, **self._kw)
        self._G_in = torch.zeros(0, 0, **self._kw)
        self._alpha_in = 0.0
        self._frozen: list[BlockInfo] = []
        # The active block B*.
        self._active: FrequentDirections | None = None
        self._act_size = self.l0
        self._act_mass = 0.0
        self._act_rows = 0
        self._act_held = 0  # rows of the active sketch that M currently accounts for
        self._act_reductions = 0
        # M = (S S^T + c I)^-1 over [S~; S*], kept in a buffer with spare capacity (eq. 7 grows it);
        # the buffer is zero outside M's r x r block, so eq. 7 is one rank-1 update (see _border)
        self._M_buf = torch.zeros(0, 0, **self._kw)
        self._r = 0
        self._minus_one = torch.full((1,), -1.0, **self._kw)
        # Exact part (after the cap): A_hat^-1 as a d x d matrix, Sherman-Morrison per row.
        self._A_inv: torch.Tensor | None = None
        # (arms, projection) of the last quad_inv: [S~; S*] arms^T, or A_hat^-1 arms^T after the cap;
        # ridge_step reuses the played arm's column, any update drops it
        self._proj: tuple | None = None
        self._gram: torch.Tensor | None = None  # exact mode with keep_gram: covariance() exactly
        self.n_exact_rows = 0
        self.frobenius_mass = 0.0  # ||X||_F^2 = sum_s ||x_s||^2 (Tr X^T X), for confidence radii
        if self.block_cap <= 1:  # Alg. 1 line 3 holds from the start: length(L) = 0 >= C - 1
            self._frozen.append(BlockInfo(0, self.l0, 0.0, 0, 0, 0.0, 0.0, False))
            self._A_inv = torch.eye(self.d, **self._kw) / self.reg
            if self.keep_gram:
                self._gram = torch.zeros(self.d, self.d, **self._kw)
        else:
            self._active = self._new_block(self.l0)

    # -- construction helpers ----------------------------------------------------------
    def _new_block(self, size: int) -> FrequentDirections:
        """A block of sketch size ``size`` whose row buffer follows S~ in a new ``_rows`` tensor."""
        r_in = self._S_in.shape[0]
        cap = 2 * size if self.fast else size
        rows = torch.zeros(r_in + cap, self.d, **self._kw)
        rows[:r_in] = self._S_in
        self._rows, self._S_in = rows, rows[:r_in]
        return _SKETCHES[self.sketch](self.d, size, reg=self.reg, fast=self.fast, _buffer=rows[r_in:], **self._kw)

    @property
    def _c(self) -> float:
        """The scalar ridge of ``A_hat``: reg, plus every block's alpha for RFD."""
        return self.reg + self._alpha_in + float(getattr(self._active, "alpha", 0.0) or 0.0)

    def _M(self) -> torch.Tensor:
        return self._M_buf[: self._r, : self._r]

    def _ensure_capacity(self, r: int) -> None:
        """Grow the M buffer so that an r x r M fits, sized for the active block's full buffer
        (frozen rows + the FD capacity 2l or l): eq. 7 then never reallocates within a block."""
        cap = self._M_buf.shape[0]
        if r <= cap:
            return
        new_cap = max(r, self._S_in.shape[0] + (self._active.capacity if self._active is not None else 0))
        buf = torch.zeros(new_cap, new_cap, **self._kw)
        buf[: self._r, : self._r] = self._M()
        self._M_buf = buf

    # -- streaming -----------------------------------------------------------------------
    def _update(self, x: torch.Tensor, Sx: torch.Tensor | None = None) -> tuple[torch.Tensor, float] | None:
        """Insert the validated row ``x``. ``Sx``: its projection from the last :meth:`quad_inv`
        (``S x`` over the rows M accounts for, or ``A_hat^-1 x`` after the cap), if known.

        Returns ``(v, kappa)`` with ``v / kappa = A_hat^-1 x / (1 + x^T A_hat^-1 x)`` (the old A_hat)
        when ``A_hat`` gained exactly ``x x^T``, else ``None`` (a reduction, a zero row, the switch
        to exact mode): what :meth:`ridge_step` needs to refit by Sherman-Morrison.
        """
        self._proj = None
        norm2 = float(x @ x)
        self.frobenius_mass += norm2
        if self._A_inv is not None:  # Alg. 1 line 3-4: exact rank-1 modification
            self.n_exact_rows += 1
            # .contiguous(): addr_ with a strided vector takes a path ~4x slower than with a contiguous one
            return self._sherman_morrison(x, None if Sx is None else Sx.contiguous())
        # Alg. 1 line 7 (short-circuit: the look-ahead SVD only when the mass test fails).
        if self._act_mass + norm2 < self.threshold or not self._will_excess(x):
            return self._insert_active(x, norm2, Sx)
        # Lines 10-12: freeze B*, open a block of twice its sketch size, x goes into it.
        size = 2 * self._act_size
        self._close_active()
        if len(self._frozen) >= self.block_cap - 1:
            # Line 3 holds from the next row on; the new block would hold x alone, exactly.
            self._frozen.append(BlockInfo(len(self._frozen), size, norm2, 1, 0, 0.0, 0.0, False))
            self._switch_to_exact()
            self._sherman_morrison(x)
            return None
        self._active = self._new_block(size)
        self._act_size, self._act_mass, self._act_rows = size, 0.0, 0
        self._act_held, self._act_reductions = 0, 0
        # closing changed neither A_hat nor M's row order: Sx is still S x over [S~; S*] (S* now empty)
        return self._insert_active(x, norm2, Sx)

    def ridge_step(self, x, reward, b, theta, played=None):
        """Add ``x`` and return ``A_hat'^-1 b`` (see :meth:`CovarianceEstimator.ridge_step`): by
        Sherman-Morrison when the row was bordered into M (eq. 7) or added exactly after the cap,
        a fresh solve (eq. 5) after a reduction or the switch to exact mode. The played arm's
        ``S x`` (or ``A_hat^-1 x``) comes from the last :meth:`quad_inv` when ``played`` names it."""
        proj = self._proj
        Sx = proj[1].select(1, played[1]) if played is not None and proj is not None and proj[0] is played[0] else None
        step = self._update(x, Sx)
        self.n_rows += 1
        if step is None:
            return self._solve(b)
        return self._rank_one_refit(theta, x, reward, *step)

    def _will_excess(self, x: torch.Tensor) -> bool:
        """willExcessSketch (Sec. 3.1), with App. B.1's sentinel while the block is not yet full."""
        if self.sentinel and 0 < self._act_rows < self._act_size:
            return True
        return self._active.shrinkage_if_added(x) > 0.0

    def _insert_active(self, x: torch.Tensor, norm2: float, Sx: torch.Tensor | None = None):
        blk = self._active
        held_before = self._act_held
        r_in = self._S_in.shape[0]
        # x is already validated (CovarianceEstimator.update): feed the block through its
        # validated-row hook. M accounts for all its rows (held_before == its row count), so
        # the active part of Sx is the block's own S* x.
        blk._add(x, norm2, None if Sx is None else Sx[r_in:])
        blk.n_rows += 1
        self._act_mass += norm2
        self._act_rows += 1
        if blk.n_reductions == self._act_reductions:
            if blk.rows_in_use == held_before:  # FD skipped a zero row: A_hat unchanged
                return None
            if blk.rows_in_use == held_before + 1:  # no reduction, one more row: x was appended
                # fast Alg. 4 line 19: eq. 7; the block's Gram already holds S* x (its new row)
                if Sx is None:  # the block's append wrote S* x as its Gram row (lower triangle, no sync needed)
                    S_act_x = blk._G[held_before, :held_before]
                    Sx = torch.cat((self._S_in @ x, S_act_x)) if r_in else S_act_x
                return self._border(x, norm2, Sx)
        # A reduction happened (Alg. 4 lines 14-16, or every row for Alg. 1): eq. 3.
        self._act_reductions = blk.n_reductions
        self._recompute_M()
        return None

    def _border(self, x: torch.Tensor, norm2: float, Sx: torch.Tensor) -> tuple[torch.Tensor, float]:
        """eq. 7: M <- [[M + phi phi^T/xi, -phi/xi], [-phi^T/xi, 1/xi]] for the appended row x,
        phi = M S x, xi = ||x||^2 - (S x)^T phi + c (= c (1 + ||x||^2_{A_hat^-1}) >= c).
        ``Sx`` is ``S x`` over the rows already in M, in M's order ([S~; S*]).

        Returns ``(x - S^T phi, xi)``: ``c A_hat^-1 x = x - S^T M S x`` (eq. 5) and
        ``c (1 + x^T A_hat^-1 x) = xi``, the Sherman-Morrison pair of :meth:`ridge_step`.

        The bordered matrix is ``[[M, 0], [0, 0]] + u u^T / xi`` with ``u = [phi; -1]``: with the
        buffer zero outside M (an invariant), one rank-1 update of its leading (r+1) x (r+1) block
        writes all of it (one op instead of five block and entry writes)."""
        r, c = self._r, self._c
        self._ensure_capacity(r + 1)
        if r:
            phi = self._M_buf[:r, :r] @ Sx
            xi = max(norm2 - float(Sx @ phi) + c, c)  # rounding can only push it below c
            v = torch.addmv(x, self._rows[:r].T, phi, alpha=-1.0)  # rows [0, r) are M's rows [S~; S*]
            u = torch.cat((phi, self._minus_one))
        else:
            xi, v, u = norm2 + c, x, self._minus_one
        self._M_buf[: r + 1, : r + 1].addr_(u, u, alpha=1.0 / xi)
        self._r = r + 1
        self._act_held += 1
        return v, xi

    def _recompute_M(self) -> None:
        """eq. 3 (corrected): M = (G + c I)^-1 with G the Gram of [S~; S*], from the cached S~ S~^T."""
        blk = self._active
        S_act = blk.S
        r_in, r_a = self._S_in.shape[0], S_act.shape[0]
        r = r_in + r_a
        G = torch.empty(r, r, **self._kw)
        G[:r_in, :r_in] = self._G_in
        if r_in and r_a:
            cross = self._S_in @ S_act.T
            G[:r_in, r_in:] = cross
            G[r_in:, :r_in] = cross.T
        G[r_in:, r_in:] = blk.gram
        self._act_held = r_a
        self._ensure_capacity(r)
        if self._r > r:  # keep the buffer zero outside M (eq. 7's single rank-1 update relies on it)
            self._M_buf[: self._r, : self._r] = 0.0
        self._r = r
        if r:
            self._M_buf[:r, :r] = _spd_inverse(G, self._c)

    def _close_active(self) -> None:
        """Alg. 1 line 10: freeze B*; its rows join S~ and its Gram block joins the cached S~ S~^T.
        A_hat does not change, so M (already over [S~; S*]) is kept as it is."""
        blk = self._active
        S_act = blk.S
        r_in, r_a = self._S_in.shape[0], S_act.shape[0]
        G = torch.empty(r_in + r_a, r_in + r_a, **self._kw)
        G[:r_in, :r_in] = self._G_in
        if r_in and r_a:
            cross = self._S_in @ S_act.T
            G[:r_in, r_in:] = cross
            G[r_in:, :r_in] = cross.T
        G[r_in:, r_in:] = blk.gram
        self._G_in = G
        self._S_in = self._rows[: r_in + r_a]  # the block's rows follow S~ in _rows already
        alpha = float(getattr(blk, "alpha", 0.0) or 0.0)
        self._alpha_in += alpha
        self._frozen.append(
            BlockInfo(len(self._frozen), self._act_size, self._act_mass, self._act_rows, r_a, blk.total_shrinkage, alpha, False)
        )
        self._active = None

    def _switch_to_exact(self) -> None:
        """Invariant 2 reached: form A_hat^-1 = (1/c)(I - S^T M S) once (O(d^2 r)); the frozen
        sketches live on inside it and are dropped."""
        c, S = self._c, self._S_in
        A_inv = torch.eye(self.d, **self._kw)
        if self._r:
            A_inv -= S.T @ (self._M() @ S)
        self._A_inv = A_inv / c
        if self.keep_gram:
            self._gram = S.T @ S
            self._gram.diagonal().add_(c - self.reg)
        self._frozen = [
            BlockInfo(b.index, b.sketch_size, b.block_size, b.n_rows, 0, b.shrinkage, b.alpha, False) for b in self._frozen
        ]
        self._S_in = torch.zeros(0, self.d, **self._kw)
        self._rows = None
        self._G_in = torch.zeros(0, 0, **self._kw)
        self._M_buf = torch.zeros(0, 0, **self._kw)
        self._r = 0

    def _sherman_morrison(self, x: torch.Tensor, Ax: torch.Tensor | None = None) -> tuple[torch.Tensor, float]:
        if Ax is None:
            Ax = self._A_inv @ x
        kappa = 1.0 + float(x @ Ax)
        self._A_inv.addr_(Ax, Ax, alpha=-1.0 / kappa)
        if self._gram is not None:
            self._gram.addr_(x, x)
        return Ax, kappa

    # -- queries -------------------------------------------------------------------------
    def _check_arms(self, arms) -> torch.Tensor:
        if not isinstance(arms, torch.Tensor):
            arms = torch.as_tensor(arms)
        arms = arms.to(device=self.device, dtype=self.dtype)
        if arms.ndim != 2 or arms.shape[1] != self.d:
            raise ValueError(f"arms must have shape (K, {self.d}), got {tuple(arms.shape)}")
        return arms

    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        """``x^T A_hat^-1 x = (||x||^2 - (S x)^T M (S x)) / c`` for the K rows of ``arms``:
        O(K d r + K r^2) before the cap, O(K d^2) after it."""
        given = arms
        arms = self._check_arms(arms)
        if self._A_inv is not None:
            # columns A_hat^-1 x (ridge_step reuses the played one); A^-1 arms^T rather than
            # arms A^-1: MKL's gemm is much slower with the K-row operand on the left
            P = self._A_inv @ arms.T
            self._proj = (given, P)
            return (P * arms.T).sum(dim=0)
        sq = torch.linalg.vector_norm(arms, dim=1).square()  # one fused pass
        if self._r == 0:
            self._proj = None
            return sq / self._c
        # (r, K): the only O(K d r) step (S arms^T: the faster gemm orientation, see FD.quad_inv)
        Ut = self._rows[: self._r] @ arms.T  # rows [0, r) of _rows are [S~; S*], M's order
        self._proj = (given, Ut)  # ridge_step reuses the played arm's column as S x
        proj = ((self._M() @ Ut) * Ut).sum(dim=0)
        return torch.sub(sq, proj).clamp_(min=0.0).div_(self._c)

    def solve(self, v: torch.Tensor) -> torch.Tensor:
        """``A_hat^-1 v = (v - S^T M S v) / c`` in O(d r + r^2) (O(d^2) after the cap)."""
        return self._solve(as_vector(v, self.device, self.dtype, self.d, name="v"))

    def _solve(self, v: torch.Tensor) -> torch.Tensor:
        if self._A_inv is not None:
            return self._A_inv @ v
        if self._r == 0:
            return v / self._c
        S = self._rows[: self._r]  # [S~; S*] in M's order
        w = self._M() @ (S @ v)
        return torch.addmv(v, S.T, w, alpha=-1.0) / self._c

    def covariance(self) -> torch.Tensor:
        """``sum_i S_i^T S_i (+ alpha I for RFD)``, plus the exact rows after the cap (d x d; diagnostics)."""
        eye = torch.eye(self.d, **self._kw)
        if self._gram is not None:
            return self._gram.clone()
        if self._A_inv is not None:
            # The frozen sketches live inside A_hat^-1: O(d^3) recovery, accurate to about
            # eps * cond(A_hat) relative (pass keep_gram=True for an exact Gram).
            return torch.linalg.inv(self._A_inv) - self.reg * eye
        cov = self._S_in.T @ self._S_in + (self._c - self.reg) * eye
        if self._active is not None:
            S_act = self._active.S
            cov += S_act.T @ S_act
        return cov

    # -- introspection -------------------------------------------------------------------
    @property
    def exact_mode(self) -> bool:
        """True once Invariant 2's cap is reached: rows are then added exactly (no more error)."""
        return self._A_inv is not None

    @property
    def n_blocks(self) -> int:
        """Blocks so far, inactive and active (<= :attr:`block_cap`)."""
        return len(self._frozen) + (self._active is not None)

    @property
    def active_sketch_size(self) -> int:
        """``l_{B_t}``: sketch size of the active block (of the last block in exact mode)."""
        return self._act_size if self._active is not None else self._frozen[-1].sketch_size

    @property
    def sketch_size(self) -> int:
        """Sketch rows held now over all blocks (``d`` in exact mode): the paper's adaptive size."""
        if self._A_inv is not None:
            return self.d
        return self._S_in.shape[0] + (self._active.S.shape[0] if self._active is not None else 0)

    @property
    def total_shrinkage(self) -> float:
        """``sum_i sigma_bar_i``: bounds ``X^T X - S^T S`` (and ``||X^T X - covariance()||_2``); ``< 2 eps``."""
        active = self._active.total_shrinkage if self._active is not None else 0.0
        return sum(b.shrinkage for b in self._frozen) + active

    @property
    def alpha(self) -> float:
        """Total RFD counter ``sum_i alpha_i`` added back as ``alpha I`` (0 for FD blocks)."""
        return self._c - self.reg

    def blocks(self) -> list[BlockInfo]:
        """A snapshot of every block, oldest first (the last one is the active block, if any)."""
        out = list(self._frozen)
        if self._active is not None:
            blk = self._active
            out.append(
                BlockInfo(
                    len(self._frozen), self._act_size, self._act_mass, self._act_rows, blk.S.shape[0],
                    blk.total_shrinkage, float(getattr(blk, "alpha", 0.0) or 0.0), True,
                )
            )
        return out

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

    def memory_bytes(self) -> int:
        """Bytes held now: frozen rows and their Gram, M, the active FD block, the exact inverse."""
        active = self._active.memory_bytes() if self._active is not None else 0
        return tensor_bytes(self._S_in, self._G_in, self._M_buf, self._A_inv, self._gram) + active

    def __repr__(self) -> str:
        return (
            f"DyadicBlockSketch(d={self.d}, l0={self.l0}, eps={self.eps}, sketch={self.sketch!r}, reg={self.reg}, "
            f"fast={self.fast}, n_blocks={self.n_blocks}/{self.block_cap}, sketch_size={self.sketch_size}, "
            f"exact_mode={self.exact_mode})"
        )


def _spd_inverse(G: torch.Tensor, c: float) -> torch.Tensor:
    """``(G + c I)^-1`` for a PSD Gram ``G`` and ``c > 0`` through Cholesky (eigh fallback)."""
    A = G.clone()
    A.diagonal().add_(c)
    L, info = torch.linalg.cholesky_ex(A)
    if int(info) == 0:
        return torch.cholesky_inverse(L)
    evals, evecs = torch.linalg.eigh(A)  # rounding made G + cI look indefinite: clamp at c
    return (evecs / torch.clamp(evals, min=c)) @ evecs.T
