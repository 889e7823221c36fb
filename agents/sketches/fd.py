"""Frequent Directions (Liberty 2013; Ghashami et al. 2016), seed 000 Alg. 2 and Remark 1.

FD streams rows x_1, x_2, ... in R^d into a small sketch ``S`` (at most ``2 l`` rows) with

    0  <=  X^T X - S^T S  <=  total_shrinkage * I          (PSD order)
    total_shrinkage  <=  min_{0 <= k < l} ||X - X_[k]||_F^2 / (l - k)      (seed 000 eq. 1, Lemma 1)

and serves the regularised inverse ``A_hat^-1 = (rho I + S^T S)^-1`` through Woodbury
(seed 000 eq. 4 / Alg. 5 line 8), never forming a d x d matrix:

    A_hat^-1 = (1/rho) (I_d - S^T (S S^T + rho I_m)^-1 S),        rho = reg (FD) or reg + alpha (RFD).

Two variants (``fast=``):

* ``fast=True`` (default; seed 000 Remark 1 / App. B.2, seed 003 Sec. 3.2 "FFD"): a buffer of
  ``2 l`` rows. Rows are appended until it is full, then ONE reduction shrinks every squared
  singular value by ``delta = sigma_l^2`` (the l-th largest of the buffer) and keeps the at
  most ``l - 1`` surviving rows. One O(d l^2) reduction every >= l + 1 rows: O(d l) amortised.
* ``fast=False``: the textbook Alg. 2, one reduction after every row with an ``l``-row sketch
  whose last row is always zero. O(d l^2) per row; kept as the reference for tests.

Implementation choices (documented here because the seeds leave them open):

* Reduction via the small Gram matrix. We maintain ``G = S S^T`` (m x m, m <= 2l) incrementally
  (each append costs the O(m d) product ``S x`` that the inverse update needs anyway), and a
  reduction is ``eigh(G) = U diag(lam) U^T`` followed by ``S <- diag(sqrt(w)) U^T S`` with
  ``w_j = (lam_j - delta) / lam_j`` in [0, 1]. This equals the SVD step of Alg. 2 line 4-5
  (``sqrt(Sigma^2 - delta) V^T`` = ``sqrt(w) U^T S``) at O(l^3 + d l^2) cost, and because the
  weights lie in [0, 1] the identity ``S_new^T S_new = S^T U diag(w) U^T S <= S^T S`` holds for
  any orthonormal U, so "FD never over-estimates" survives rounding. Precision: directions
  whose squared singular value is below ~eps * ||S||_2^2 are at the Gram's noise level;
  the spectral guarantees are quadratic quantities, for which that is the natural precision.
* Between reductions the buffer rows are not orthogonal (Remark 1's "doubling space"), so
  ``M = (S S^T + rho I)^-1`` is not diagonal. Instead of the bordered inverse of seed 000
  eq. 7 we keep the lower Cholesky factor ``L`` of ``S S^T + rho I`` and border IT: appending x
  adds the row ``[c^T, s]`` with ``L c = S x`` and ``s^2 = ||x||^2 + rho - ||c||^2``
  (= rho (1 + ||x||^2_{A_hat^-1}) >= rho, so it is clamped at rho, never at 0). Same
  O(m d + m^2) cost as eq. 7, but no explicit inverse is ever formed, so float32 stays stable.
  After a reduction the rows are orthogonal and ``L`` is diagonal (the paper's diagonal M).
  The factor is bordered lazily, when a query first needs it: Dyadic Block Sketching keeps its
  own ``M`` over all blocks and never queries a block, so its blocks never pay for ``L``.
  Rows of the ``L`` buffer not yet bordered are identity rows, so a triangular solve with the
  whole (contiguous) buffer gives the leading entries exactly, without torch copying a slice.
  Likewise an append writes only the new row of the Gram below the diagonal (its diagonal entry
  is kept as a float); the rest is filled in (:meth:`_sync_gram`) only for the few readers that
  need all of it (``gram``, ``eigh`` at a reduction, the look-ahead): each tensor write costs
  more than its arithmetic at these sizes.
* The agents' refit (:meth:`ridge_step`) follows the solution by Sherman-Morrison while rows are
  only appended: ``rho A_hat^-1 x = x - S^T L^-T c`` with the ``c`` of the new factor row and
  ``rho (1 + x^T A_hat^-1 x) = s^2``, one O(d m) pass; after a reduction it solves afresh.
* The shrink value. Alg. 2 line 5 uses ``sigma_l^2`` of the l x d sketch; the fast variant uses
  the l-th largest of the 2l-row buffer (seed 003 Sec. 3.2; GAP 13 of the reference notes),
  which keeps the bound above with the same ``l``. With fewer than ``l`` rows (or a stream of
  rank < l) the shrink value is 0: FD of size l is exact on rank <= l - 1 data. Hence FD is
  exact (SOFUL == OFUL) for ``sketch_size > d``, and NOT for ``sketch_size = d`` (it keeps
  ``l - 1`` directions), an off-by-one some texts gloss over. An l-th eigenvalue below the
  Gram's rounding level (``2 eps (m + sqrt d) lambda_max``) counts as 0, so low-rank streams
  report no shrinkage (what Dyadic Block Sketching's ``willExcessSketch`` test needs).
* Zero rows (``||x||^2 == 0`` in the working dtype) carry no information and are skipped (textbook FD would compute
  sigma_l = 0 and leave S unchanged; the fast buffer would only fill earlier).

Example:

>>> import torch
>>> fd = FrequentDirections(d=4, sketch_size=3, fast=False, dtype=torch.float64)
>>> for x in torch.eye(4, dtype=torch.float64):
...     fd.update(x)
>>> fd.total_shrinkage                     # rank 4 >= l = 3: something was discarded
1.0
>>> float(fd.quad_inv(torch.eye(4, dtype=torch.float64)).max()) <= 1.0
True
"""

from __future__ import annotations

import math
import numbers

import torch

from .._torch import as_vector, tensor_bytes
from .base import CovarianceEstimator

__all__ = ["FrequentDirections"]


class FrequentDirections(CovarianceEstimator):
    """Frequent Directions sketch of ``X^T X`` with Woodbury queries of ``(reg I + S^T S)^-1``.

    Args:
        d: dimension of the rows.
        sketch_size: ``l >= 1``; FD keeps at most ``l - 1`` directions after a reduction and its
            error is at most ``min_k ||X - X_[k]||_F^2 / (l - k)``.
        reg: ridge lambda > 0 added to the estimate (``A_hat = reg I + S^T S``).
        fast: ``True`` for the 2l-row buffer (one reduction every ~l rows, O(d l) amortised),
            ``False`` for the textbook one-reduction-per-row Alg. 2 (O(d l^2) per row).
        device, dtype: where the state lives (float64 default on CPU).
        _buffer: private; zeroed storage of shape ``(capacity, d)`` for the rows (Dyadic Block
            Sketching stacks its blocks' rows in one tensor, so that one product serves all).

    Attributes:
        total_shrinkage: sum of the shrink values applied so far (seed 000's sigma-bar):
            ``0 <= X^T X - S^T S <= total_shrinkage * I``.
        n_reductions: number of reductions (eigendecompositions) so far.
        shrinkages: list of the shrink value of each reduction, in order.
        last_shrinkage: shrink value of the latest reduction (0.0 before any).
    """

    def __init__(self, d: int, sketch_size: int, *, reg: float = 1.0, fast: bool = True, device=None, dtype=None,
                 _buffer: torch.Tensor | None = None):
        if isinstance(sketch_size, bool) or not isinstance(sketch_size, numbers.Integral):
            raise ValueError(
                f"sketch_size must be a positive int (the number l of sketch rows), got {sketch_size!r} "
                f"({type(sketch_size).__name__})"
            )
        if sketch_size < 1:
            raise ValueError(f"sketch_size must be >= 1, got {sketch_size}")
        if not isinstance(fast, bool):
            raise ValueError(f"fast must be True (2l-row buffer) or False (textbook FD), got {fast!r}")
        try:
            reg_ok = math.isfinite(float(reg))
        except (TypeError, ValueError):
            reg_ok = False
        if not reg_ok:
            raise ValueError(f"reg (the ridge lambda) must be a finite number > 0, got {reg!r}")
        super().__init__(d, reg=reg, device=device, dtype=dtype)
        self._l = int(sketch_size)
        self.fast = fast
        self._cap = 2 * self._l if fast else self._l
        kw = {"device": self.device, "dtype": self.dtype}
        if _buffer is not None and (tuple(_buffer.shape) != (self._cap, d) or _buffer.dtype != self.dtype
                                    or _buffer.device != self.device):
            raise ValueError(f"_buffer must be a zeroed ({self._cap}, {d}) {self.dtype} tensor on {self.device}")
        self._buf = torch.zeros(self._cap, d, **kw) if _buffer is None else _buffer  # rows [0, m) are the sketch S
        self._G = torch.zeros(self._cap, self._cap, **kw)  # S S^T; complete on rows [0, _n_sym), see _sync_gram
        self._n_sym = 0
        # chol(S S^T + rho I), lower, bordered lazily: rows [0, _n_chol) are factored, the others
        # are identity rows (see _factor), so the full buffer is always a valid triangular matrix.
        self._L = torch.eye(self._cap, **kw)
        self._L_diag = self._L.diagonal()  # a view, kept: indexing it is one op fewer than L[j, j]
        self._n_chol = 0
        self._xx: list[float] = [0.0] * self._cap  # ||row||^2 of the appended rows (the Gram's diagonal)
        # (arms, S arms^T, L^-1 S arms^T) of the last quad_inv, both (cap, K) and zero past row m;
        # ridge_step reuses the played arm's columns, any update drops them
        self._proj: tuple | None = None
        self._m = 0
        self._n_orth = 0  # the leading rows known mutually orthogonal (L diagonal there)
        self._lookahead: tuple | None = None  # (x, eigh of the bordered Gram) from shrinkage_if_added
        self._eps = torch.finfo(self.dtype).eps
        self.total_shrinkage = 0.0
        self.n_reductions = 0
        self.shrinkages: list[float] = []
        self.last_shrinkage = 0.0

    # -- hooks RFD overrides ---------------------------------------------------------
    @property
    def rho(self) -> float:
        """The scalar ridge of ``A_hat = rho I + S^T S`` (``reg`` for FD, ``reg + alpha`` for RFD)."""
        return self.reg

    def _on_shrink(self, delta: float) -> None:
        """Called once per reduction with its shrink value, before ``rho`` is used again."""

    # -- read-only views -------------------------------------------------------------
    @property
    def sketch_size(self) -> int:
        """The nominal sketch size ``l``."""
        return self._l

    @property
    def rows_in_use(self) -> int:
        """Rows of ``S`` held now (<= l - 1 right after a reduction, <= 2l in the fast buffer)."""
        return self._m

    @property
    def capacity(self) -> int:
        """Rows allocated for the buffer (``2l`` fast, ``l`` textbook)."""
        return self._cap

    @property
    def S(self) -> torch.Tensor:
        """The sketch rows now, shape ``(rows_in_use, d)`` (a view: do not modify)."""
        return self._buf[: self._m]

    @property
    def gram(self) -> torch.Tensor:
        """``S S^T`` (shape ``(m, m)``), maintained incrementally (a view: do not modify)."""
        self._sync_gram()
        return self._G[: self._m, : self._m]

    @property
    def chol(self) -> torch.Tensor:
        """Lower Cholesky factor of ``S S^T + rho I`` (a view: do not modify)."""
        self._factor()
        return self._L[: self._m, : self._m]

    @property
    def is_orthogonal(self) -> bool:
        """True when the rows of ``S`` are mutually orthogonal (right after a reduction)."""
        return self._n_orth == self._m

    @property
    def M(self) -> torch.Tensor:
        """``(S S^T + rho I)^-1`` (m x m; diagonal when :attr:`is_orthogonal`). O(m^3), diagnostics."""
        if self._m == 0:
            return torch.zeros(0, 0, device=self.device, dtype=self.dtype)
        if self.is_orthogonal:
            return torch.diag(1.0 / torch.diagonal(self.chol) ** 2)
        return torch.cholesky_inverse(self.chol)

    # -- streaming -------------------------------------------------------------------
    def _update(self, x: torch.Tensor, g: torch.Tensor | None = None) -> None:
        self._add(x, float(x @ x), g)  # scalars stay Python floats: each tensor op costs more than its arithmetic here

    def _add(self, x: torch.Tensor, xx: float, g: torch.Tensor | None = None) -> None:
        """Insert the validated row ``x`` (``xx = ||x||^2``); ``g``, if given, is ``S x`` already."""
        self._proj = None
        cached, self._lookahead = self._lookahead, None
        if not xx > 0.0:
            return  # a zero row adds nothing to X^T X (and would shrink by 0)
        self._append(x, xx, g)
        if not self.fast or self._m == self._cap:
            # shrinkage_if_added(x) just decomposed this very Gram (same ops, same bits): reuse it
            eig = cached[1] if cached is not None and torch.equal(cached[0], x) else None
            self._reduce(eig)

    def _append(self, x: torch.Tensor, xx: float, g: torch.Tensor | None = None) -> None:
        """``g``: ``S x`` over the m rows held, or a full-capacity column that is zero past m
        (the scoring's projection), written as the whole Gram row in one copy."""
        m = self._m
        if m:
            # the lower triangle only; its mirror and the diagonal wait for _sync_gram
            if g is None:
                self._G[m, :m] = self._buf[:m] @ x  # S x: the O(m d) part
            elif g.shape[0] == m:
                self._G[m, :m] = g
            else:
                self._G[m].copy_(g)  # zero past m: nothing above the diagonal is written
        self._xx[m] = xx
        self._buf[m] = x
        self._m = m + 1

    def _sync_gram(self) -> None:
        """Complete ``S S^T`` in the buffer for the rows appended since the last call: their
        diagonal (from ``_xx``) and the upper triangle (the mirror of what appends wrote)."""
        j0, m = self._n_sym, self._m
        if j0 >= m:
            return
        G = self._G
        G.diagonal()[j0:m] = torch.tensor(self._xx[j0:m], device=self.device, dtype=self.dtype)
        if j0:
            G[:j0, j0:m] = G[j0:m, :j0].T
        block = G[j0:m, j0:m]
        block.copy_(torch.tril(block) + torch.tril(block, -1).mT)
        self._n_sym = m

    def _factor(self, upto: int | None = None) -> None:
        """Border ``L`` with the rows [_n_chol, upto) appended since it was last needed (lazy;
        module docstring): row j gets ``[c^T, s]`` with ``L_j c = S_j x_j``, a solve with the whole
        buffer (rows >= j of ``L`` are identity rows, so its first j entries are exactly
        ``L_j^-1 G[j, :j]``, whatever the rest of row j of the Gram buffer holds)."""
        for j in range(self._n_chol, self._m if upto is None else upto):
            c = torch.linalg.solve_triangular(self._L, self._G[j].unsqueeze(1), upper=False)[:, 0] if j else None
            self._set_chol_row(j, c)

    def _set_chol_row(self, j: int, c: torch.Tensor | None, zero_tail: bool = False) -> float:
        """Write row j of ``L``: ``c[:j]`` (= L_j^-1 S_j x_j) and ``s = sqrt(s2)``; returns
        ``s2 = max(||x_j||^2 + rho - ||c||^2, rho)``. ``zero_tail``: ``c`` is zero past j (the
        scoring's projection), so it is copied as the whole row in one op."""
        rho = self.rho
        if j:
            if zero_tail:
                schur = self._xx[j] + rho - float(c @ c)
                self._L[j].copy_(c)  # the diagonal entry is set below; past it, zeros as required
            else:
                cj = c[:j]
                schur = self._xx[j] + rho - float(cj @ cj)
                self._L[j, :j] = cj
        else:
            schur = self._xx[0] + rho
        # Schur complement of the bordered Gram = rho (1 + x^T A_hat^-1 x) >= rho: clamp, never 0.
        s2 = max(schur, rho)
        self._L_diag[j] = math.sqrt(s2)
        self._n_chol = j + 1
        return s2

    def ridge_step(self, x, reward, b, theta, played=None):
        """Add ``x`` and return ``A_hat'^-1 b`` (see :meth:`CovarianceEstimator.ridge_step`).

        While the row is only appended, ``A_hat' = A_hat + x x^T`` exactly, and the solution follows
        by Sherman-Morrison with ``rho A_hat^-1 x = x - S^T L^-T c``, ``rho (1 + x^T A_hat^-1 x) = s^2``
        from the new factor row (module docstring): one O(d m) pass instead of a full solve's two.
        When ``played`` names the arms of the last :meth:`quad_inv`, ``S x`` and ``c = L^-1 S x``
        are the played arm's columns of its projections: no product with ``S`` and no solve for
        them. If the row fills the buffer (a reduction) or is skipped, it solves afresh.
        """
        proj = self._proj
        xx = float(x @ x)
        m = self._m
        rank_one = xx > 0.0 and self.fast and m + 1 < self._cap
        g = c = None
        hit = bool(m) and played is not None and proj is not None and proj[0] is played[0]
        if hit:  # the played arm's columns, zero past row m (see quad_inv)
            k = played[1]
            g, c = proj[1].select(1, k), proj[2].narrow(1, k, 1)
        self._add(x, xx, g)
        self.n_rows += 1
        if not rank_one:
            return self._solve(b)
        q = None
        if m:
            if c is None:
                self._factor(upto=m)
                c = torch.linalg.solve_triangular(self._L, self._G[m].unsqueeze(1), upper=False)
            # q = L_m^-T c, before row m is written (rows >= m of L are identity rows: no slicing)
            q = torch.linalg.solve_triangular(self._L.mT, c, upper=True)[:m, 0]
            c = c[:, 0]
        s2 = self._set_chol_row(m, c, zero_tail=hit)
        v = torch.addmv(x, self._buf[:m].T, q, alpha=-1.0) if m else x
        return self._rank_one_refit(theta, x, reward, v, s2)

    def _zero_tol(self, m: int, top: float) -> float:
        """Eigenvalues of the Gram below this are rounding noise (see module docstring)."""
        return 2.0 * self._eps * (m + math.sqrt(self.d)) * max(top, 0.0)

    def _shrink_value(self, evals_desc: torch.Tensor) -> float:
        """Alg. 2 line 5: sigma_l^2 (the l-th largest eigenvalue of the Gram), 0 if < l rows."""
        m = evals_desc.shape[0]
        if m < self._l:
            return 0.0
        delta = float(evals_desc[self._l - 1])
        if delta <= self._zero_tol(m, float(evals_desc[0])):
            return 0.0
        return delta

    def _eigh_desc(self, G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        evals, evecs = torch.linalg.eigh(G)
        return evals.flip(0), evecs.flip(1)

    def _reduce(self, eig: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        m = self._m
        if eig is None:
            self._sync_gram()  # eigh reads the lower triangle, but the diagonal is written lazily
            eig = self._eigh_desc(self._G[:m, :m])
        evals, evecs = eig
        delta = self._shrink_value(evals)
        tol = self._zero_tol(m, float(evals[0]))
        # Alg. 2 line 6: Sigma^2 - delta on the l - 1 leading directions; the l-th and beyond vanish.
        keep = evals[: self._l - 1] - delta
        r = int((keep > tol).sum())  # keep is sorted, so these are the leading r
        keep = keep[:r]
        w = keep / evals[:r]  # in (0, 1]
        new_rows = (evecs[:, :r] * torch.sqrt(w)).T @ self._buf[:m]
        self._buf[:r] = new_rows
        self._buf[r:m] = 0.0
        self._G[:m, :m] = 0.0
        self._L[:m, :m] = 0.0
        self._on_shrink(delta)  # RFD: alpha += delta before rho is read below
        # Alg. 2 line 7: M = diag{1/(rho + sigma_j^2 - delta)}: the rows are now orthogonal.
        self._G.diagonal()[:r] = keep
        L_diag = self._L_diag
        L_diag[:r] = torch.sqrt(keep + self.rho)
        L_diag[r:m] = 1.0  # identity rows past the factored ones (the lazy factor's invariant)
        self._m = r
        self._n_orth = r
        self._n_chol = r
        self._n_sym = r
        self.total_shrinkage += delta
        self.n_reductions += 1
        self.shrinkages.append(delta)
        self.last_shrinkage = delta

    # -- look-ahead (state unchanged) --------------------------------------------------
    def _bordered_evals(self, x: torch.Tensor | None) -> torch.Tensor:
        m = self._m
        self._sync_gram()
        if x is None:
            return self._eigh_desc(self._G[:m, :m])[0] if m else torch.zeros(0, device=self.device, dtype=self.dtype)
        G = torch.empty(m + 1, m + 1, device=self.device, dtype=self.dtype)  # temporary copy
        G[:m, :m] = self._G[:m, :m]
        g = self._buf[:m] @ x
        G[m, :m] = g
        G[:m, m] = g
        G[m, m] = x @ x
        evals, evecs = self._eigh_desc(G)
        # Kept until the next update: if that update is update(x) and reduces, it reuses this
        # decomposition instead of repeating it (the look-ahead + insert pattern of DBS).
        self._lookahead = (x.clone(), (evals, evecs))
        return evals

    def shrinkage_if_added(self, x) -> float:
        """The shrink value that ``update(x)`` would apply now (0.0 if no reduction would happen
        or it would discard nothing). Computed on a temporary Gram; the state is unchanged.

        In the fast variant a reduction happens only when ``x`` fills the 2l-row buffer, so this
        is 0.0 on most rows; see :meth:`pending_shrinkage` for "would a reduction discard
        anything". (Dyadic Block Sketching's ``willExcessSketch`` test, seed 000 Sec. 3.1.)
        """
        x = as_vector(x, self.device, self.dtype, self.d)
        if not float(x @ x) > 0.0:  # the same test update() uses to skip zero rows
            return 0.0
        if self.fast and self._m + 1 < self._cap:
            return 0.0
        return self._shrink_value(self._bordered_evals(x))

    def pending_shrinkage(self, x=None) -> float:
        """The shrink value a reduction of the current sketch (with ``x`` appended, if given)
        would apply now, whether or not the buffer is full; 0.0 while the rank is < l.
        State unchanged. Equals :meth:`shrinkage_if_added` for ``fast=False``."""
        if x is not None:
            x = as_vector(x, self.device, self.dtype, self.d)
            if not float(x @ x) > 0.0:
                x = None
        return self._shrink_value(self._bordered_evals(x))

    # -- queries ---------------------------------------------------------------------
    def _check_arms(self, arms) -> torch.Tensor:
        if not isinstance(arms, torch.Tensor):
            arms = torch.as_tensor(arms)
        arms = arms.to(device=self.device, dtype=self.dtype)
        if arms.ndim != 2 or arms.shape[1] != self.d:
            raise ValueError(f"arms must have shape (K, {self.d}), got {tuple(arms.shape)}")
        return arms

    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        """``x^T A_hat^-1 x`` for each row of ``arms`` (K, d) in O(K d m): Woodbury with the
        Cholesky factor, ``(||x||^2 - ||L^-1 S x||^2) / rho``."""
        given = arms
        arms = self._check_arms(arms)
        sq = torch.linalg.vector_norm(arms, dim=1).square()  # one fused pass (3x faster than (a*a).sum)
        m, rho = self._m, self.rho
        if m == 0:
            self._proj = None
            return sq / rho
        # S arms^T, the only O(K d m) step, into a (cap, K) buffer that is zero past row m, so the
        # solve below uses the whole L buffer (no slicing copy). S arms^T rather than arms S^T:
        # with K ~ 10-20 rows on the left MKL's gemm is ~1.5x slower (d = 784 and d = 8192).
        Zt = torch.zeros(self._cap, arms.shape[0], device=self.device, dtype=self.dtype)
        torch.mm(self._buf[:m], arms.T, out=Zt[:m])
        if self.is_orthogonal:  # right after a reduction L is diagonal (identity past row m)
            W = Zt / self._L_diag.unsqueeze(1)
        else:
            self._factor()
            W = torch.linalg.solve_triangular(self._L, Zt, upper=False)
        self._proj = (given, Zt, W)  # ridge_step reuses the played arm's columns
        proj = (W * W).sum(dim=0)
        return torch.sub(sq, proj).clamp_(min=0.0).div_(rho)

    def solve(self, v: torch.Tensor) -> torch.Tensor:
        """``A_hat^-1 v = (v - S^T (S S^T + rho I)^-1 S v) / rho`` in O(d m + m^2)."""
        return self._solve(as_vector(v, self.device, self.dtype, self.d, name="v"))

    def _solve(self, v: torch.Tensor) -> torch.Tensor:
        m, rho = self._m, self.rho
        if m == 0:
            return v / rho
        S = self._buf[:m]
        z = S @ v
        if self.is_orthogonal:  # right after a reduction M is diagonal (Alg. 2 line 7)
            y = z / torch.diagonal(self._L[:m, :m]).square()
        else:
            self._factor()
            y = torch.cholesky_solve(z[:, None], self._L[:m, :m], upper=False)[:, 0]
        return (v - S.T @ y) / rho

    def covariance(self) -> torch.Tensor:
        """``S^T S`` (d x d; diagnostics only)."""
        S = self.S
        return S.T @ S

    def log_det_ratio_bound(self) -> float:
        """An upper bound on ``ln det(reg I + X^T X) - d ln(reg)`` for the rows seen so far.

        FD: ``X^T X <= S^T S + sigma_bar I`` (sigma_bar = :attr:`total_shrinkage`) gives
        ``d ln(1 + sigma_bar/reg) + sum_j ln(1 + s_j^2/(reg + sigma_bar))`` (the first step of seed 000
        Lemma 6); the sum is bounded by the smaller of ``sum_j ln(1 + s_j^2/reg)`` (exact, from the
        Cholesky diagonal) and the trace/AM-GM bound ``m ln(1 + ||S||_F^2/(m (reg + sigma_bar)))``
        (Lemma 6 before ``||S||_F^2 <= t L^2``). Exact when nothing was discarded. O(m).
        """
        lam, sig, m = self.reg, self.total_shrinkage, self._m
        out = self.d * math.log1p(sig / lam)
        if m:
            self._factor()
            exact = float(2.0 * torch.log(torch.diagonal(self._L[:m, :m])).sum()) - m * math.log(lam)
            self._sync_gram()
            trace = float(torch.diagonal(self._G[:m, :m]).sum())
            amgm = m * math.log1p(max(trace, 0.0) / (m * (lam + sig)))
            out += min(exact, amgm)
        return out

    def memory_bytes(self) -> int:
        """Bytes of the allocated buffer, Gram and Cholesky factor."""
        return tensor_bytes(self._buf, self._G, self._L)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(d={self.d}, sketch_size={self._l}, reg={self.reg}, fast={self.fast}, "
            f"rows_in_use={self._m}, total_shrinkage={self.total_shrinkage:.4g})"
        )
