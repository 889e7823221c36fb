"""Frequent Directions (Liberty 2013; Ghashami et al. 2016), seed 000 Alg. 2 and Remark 1.

FD streams rows x_1, x_2, ... in R^d into a small sketch ``S`` (at most ``2 l`` rows) with

    0  <=  X^T X - S^T S  <=  total_shrinkage * I          (PSD order)
    total_shrinkage  <=  min_{0 <= k < l} ||X - X_[k]||_F^2 / (l - k)      (seed 000 eq. 1, Lemma 1)

and serves the regularised inverse ``A_hat^-1 = (rho I + S^T S)^-1`` through Woodbury
(seed 000 eq. 4 / Alg. 5 line 8), never forming a d x d matrix:

    A_hat^-1 = (1/rho) (I_d - S^T (S S^T + rho I_m)^-1 S),        rho = reg (FD) or reg + alpha (RFD).

One implementation with a leading batch dimension (``batch_size=B``; ``None`` = one sketch):
member i holds its own rows ``S_i`` in slots ``[0, m_i)`` of a ``(B, cap, d)`` buffer (zero
rows after), so every query is one batched product whatever the members' row counts.

Two variants (``fast=``):

* ``fast=True`` (default; seed 000 Remark 1 / App. B.2, seed 003 Sec. 3.2 "FFD"): a buffer of
  ``2 l`` rows. Rows are appended until it is full, then ONE reduction shrinks every squared
  singular value by ``delta = sigma_l^2`` (the l-th largest of the buffer) and keeps the at
  most ``l - 1`` surviving rows. One O(d l^2) reduction every >= l + 1 rows: O(d l) amortised.
* ``fast=False``: the textbook Alg. 2, one reduction after every row with an ``l``-row sketch
  whose last row is always zero. O(d l^2) per row; kept as the reference for tests.

Implementation choices (the seeds leave them open):

* **The small core in float64.** ``G = S S^T`` (kept incrementally: each append costs the
  O(m d) product ``S x`` that the scoring computed already), the inverse Cholesky factor
  ``Linv`` of ``G + rho I`` and ``y = Linv S r / rho`` are ``m x m`` / ``m`` tensors in float64 whatever
  the working dtype (float32 only on MPS). ``G`` squares the condition number of ``S``; in
  float32 that alone loses the small directions once rows are large (1e3 and up), in float64
  it costs O(m^2) a round. The big ``(cap, d)`` buffer stays in the working dtype, so float32
  still halves the bytes of the one O(K d m) product.
* **Reduction via the small Gram.** ``eigh(G) = U diag(lam) U^T`` then ``S <- diag(sqrt(w)) U^T S``
  with ``w_j = (lam_j - delta) / lam_j`` in [0, 1]. This equals the SVD step of Alg. 2 lines
  4-5 at O(l^3 + d l^2) cost, and because the weights lie in [0, 1] the identity
  ``S_new^T S_new = S^T U diag(w) U^T S <= S^T S`` holds for any orthonormal U, so "FD never
  over-estimates" survives rounding. After it the rows are orthogonal, ``G`` and ``Linv``
  diagonal (the paper's diagonal M, Alg. 2 line 7).
* **Between reductions** the buffer rows are not orthogonal (Remark 1's "doubling space"), so
  ``(S S^T + rho I)^-1 = Linv^T Linv`` is kept through the inverse factor, bordered per
  append: with ``c = Linv S x`` and ``s^2 = ||x||^2 + rho - ||c||^2`` (the Schur complement,
  ``= rho (1 + ||x||^2_{A_hat^-1}) >= rho``, clamped at rho, never at 0), the new row is
  ``[-(c^T Linv) / s, 1/s]``. Same O(m d + m^2) cost as seed 000 eq. 7, batched as products.
* **Both UCB terms from one projection.** ``U = arms S^T`` (the only O(K d m) step) gives
  ``W = U Linv^T`` and ``x^T A_hat^-1 x = (||x||^2 - ||w||^2) / rho`` and, with ``y = Linv S r / rho``
  (kept up to date in O(m) per append, :func:`border_at_`), the mean
  ``x^T A_hat^-1 b = x^T u - w^T y`` around the anchor ``theta0`` (the
  ridge solution at the last reduction, residual ``r = b - A_hat theta0``, ``u = theta0 + r / rho``; see
  :meth:`~agents.sketches.base.CovarianceEstimator._reanchor`: ``(x^T b - w^T Linv S b) / rho``
  cancelled to ~``eps32 |x| |b|``, an error growing with t). The played arm's row of ``U`` is the
  ``S x`` of its append, and its row of ``W`` the append's ``c = Linv S x``: the buffer is read
  once a round for scoring and written once for the new row.
  The width is clamped below by ``||x||^2 / (rho + tr S^T S)`` (valid: ``lambda_max(A_hat)``
  is at most that), not by 0. Its relative accuracy is about ``eps_dtype * cond(A_hat)``:
  float32 matches float64's choices while ``cond(A_hat) = (rho + sigma_1^2)/rho`` stays below
  ~1e5 (unit-norm arms, lam >= 0.01, T up to 1e4); beyond, the scores stay finite.
* **The shrink value.** Alg. 2 line 5 uses ``sigma_l^2`` of the l x d sketch; the fast variant
  uses the l-th largest of the 2l-row buffer (seed 003 Sec. 3.2), which keeps the bound above
  with the same ``l``. With fewer than ``l`` rows (or rank < l) the shrink value is 0: FD of
  size l is exact on rank <= l - 1 data. Hence FD is exact (SOFUL == OFUL) for
  ``sketch_size > d``, and NOT for ``sketch_size = d`` (it keeps ``l - 1`` directions). An
  l-th eigenvalue below the Gram's rounding level (``64 eps (m + sqrt d) lambda_max``, base._rank_tol) counts as
  0, so low-rank streams report no shrinkage, and so does a kept direction below it. ``eps`` is
  float64's (plus ``eps32^2`` for the rows' own rounding) also in a float32 run, because the
  reduction and its look-ahead decompose the Gram of the stored rows recomputed in float64
  (:meth:`~agents.sketches.base.CovarianceEstimator._reduction_gram`, O(m^2 d) per reduction);
  the incremental Gram built from float32 products would need float32's eps there, a cut that
  at cond(A_hat) ~ 1e4 dropped directions worth ~15% of lam which float64 keeps.
* Zero rows carry no information and are skipped.

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

import numpy as np
import torch
from scipy.linalg.lapack import dtrtri, strtri

from .._torch import as_vector, tensor_bytes
from .._validate import per_member
from .base import CovarianceEstimator, as_tensor, axpy_, eigh_desc, ridge_solution, set_anchor_

__all__ = ["FrequentDirections", "border_at_", "border_one_", "border_scattered_", "check_sketch_size", "safe_inverse_factor"]


_TRTRI = {np.dtype(np.float64): dtrtri, np.dtype(np.float32): strtri}


def _check_l(name: str, sketch_size) -> int:
    if isinstance(sketch_size, bool) or not isinstance(sketch_size, numbers.Integral):
        raise ValueError(
            f"{name} must be a positive int (the number l of sketch rows), got {sketch_size!r} "
            f"({type(sketch_size).__name__})"
        )
    if sketch_size < 1:
        raise ValueError(f"{name} must be >= 1, got {sketch_size}")
    return int(sketch_size)


def check_sketch_size(sketch_size, fast, batch_size: int | None = None):
    """Validate FD's ``sketch_size`` and ``fast`` (before any state exists). ``sketch_size`` may
    give one value per member when ``batch_size`` is set (see :func:`agents._validate.per_member`):
    returns the int, or an int array ``(B,)`` when the members' sizes differ."""
    if not isinstance(fast, bool):
        raise ValueError(f"fast must be True (2l-row buffer) or False (textbook FD), got {fast!r}")
    return per_member("sketch_size", sketch_size, batch_size, _check_l)


def safe_inverse_factor(G: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
    """Inverse lower Cholesky factors of ``G + rho_i I`` for a batch of Grams ``(n, m, m)`` whose
    LOWER triangles hold ``S S^T`` (``rho``: ``(n,)``). Safeguarded: where rounding made
    ``G + rho I`` look indefinite, its eigenvalues are clamped at ``rho`` (the smallest they can
    be) and that matrix is factored, so every entry stays bounded by ``1 / sqrt(rho)``."""
    Gs = torch.tril(G) + torch.tril(G, -1).mT
    H = Gs + rho.view(-1, 1, 1) * torch.eye(G.shape[-1], dtype=G.dtype, device=G.device)
    L, info = torch.linalg.cholesky_ex(H)
    for j in torch.nonzero(info).flatten().tolist():
        evals, evecs = torch.linalg.eigh(H[j])
        # the clamp is raised to the eigensolver's own rounding level when that is above rho
        # (cond(G + rho I) beyond 1/eps of the core dtype): a factorable matrix, bounded entries
        tiny = 4.0 * G.shape[-1] * torch.finfo(G.dtype).eps * float(evals.abs().max())
        floor = max(float(rho[j]), tiny)
        for _ in range(4):
            Lj, bad = torch.linalg.cholesky_ex((evecs * torch.clamp(evals, min=floor)) @ evecs.mT)
            if not int(bad):
                break
            floor *= 16.0
        L[j] = Lj
    eye = torch.eye(G.shape[-1], dtype=G.dtype, device=G.device).expand_as(L)
    return torch.linalg.solve_triangular(L, eye, upper=False)


def inverse_factor_one(G, rho: float):
    """:func:`safe_inverse_factor` of ONE Gram ``G`` ``(r, r)`` (lower triangle read): on a numpy
    array (the B = 1 host path) numpy's Cholesky and LAPACK's triangular inverse (``dtrtri``), with
    the safeguarded tensor route only where that factorization fails; a tensor goes that route."""
    if isinstance(G, np.ndarray):
        try:
            L = np.linalg.cholesky(G + rho * np.eye(G.shape[0], dtype=G.dtype))
            Linv, info = _TRTRI[G.dtype](L, lower=1)
            if info == 0:
                return Linv
        except np.linalg.LinAlgError:
            pass
        return safe_inverse_factor(torch.from_numpy(G)[None], torch.tensor([rho], dtype=torch.float64))[0].numpy()
    return safe_inverse_factor(G[None], torch.tensor([rho], dtype=G.dtype, device=G.device))[0]


def border_at_(Linv, G, S, y, j: int, X, xx, g, rho, zx, step, eps: float):
    """Append row ``X[i]`` of every member at slot ``j`` of its sketch (FD's append, and eq. 7 of
    Dyadic Block Sketching, which is the same bordering): with ``c = Linv S x`` and the Schur
    complement ``s^2 = ||x||^2 + rho - ||c||^2 = rho (1 + x^T A_hat^-1 x) >= rho`` (clamped at
    rho against rounding, never at 0), the new row of ``Linv`` is ``[-(c^T Linv) / s, 1/s]``.
    ``g = S x`` over the first ``j`` slots (core dtype), ``xx = ||x||^2``, ``rho`` ``(B,)`` core
    tensors; ``G`` gets the new row of its lower triangle (all its readers read that).

    ``y = Linv z`` (``z = S r / rho``, the anchor's residual seen by the rows,
    :meth:`~agents.sketches.base.CovarianceEstimator._reanchor`) follows in O(j): the caller's
    anchor step ``step = (r - x^T theta0) / rho`` moves ``z`` on the held rows by ``step g``, so
    ``y`` by ``step c``, and the new entry is ``(zx - c . y) / s`` with ``zx = x^T r / rho`` (the
    new row's entry of ``z``). The scores then read ``y`` as it is (no m^2 product a round).

    Safeguard: ``s^2`` is a difference of numbers of size ``||x||^2``, computed from ``S x`` in
    the working precision ``eps``. When it falls below ``8 eps ||x||^2`` (x inside the sketch's
    span with rows much larger than ``sqrt(rho)``: ``cond(A_hat) > ~1/eps``) it is rounding
    noise, and the bordered row would be too (entries up to ``||c|| / sqrt(rho)``). Those members'
    factors are then rebuilt from their Gram by :func:`safe_inverse_factor` (O(j^3), only then),
    their ``y`` no longer matches, and the index tensor of them is returned (None when there are
    none): the caller moves their anchors (``y = 0``). One member (B = 1) goes through
    :func:`border_one_` (the same arithmetic, host scalars)."""
    if X.shape[0] == 1:
        gj = g[0, :j] if j else None
        rebuilt = border_one_(Linv[0], G[0], S[0], y[0], j, X[0], float(xx[0]), gj, float(rho[0]), float(zx[0]),
                              float(step[0]), eps)
        return torch.zeros(1, dtype=torch.long, device=Linv.device) if rebuilt else None
    if j:
        Li = Linv[:, :j, :j]
        c = torch.bmm(Li, g[:, :j].unsqueeze(2))  # (B, j, 1)
        raw = xx + rho - c.square().sum(dim=(1, 2))
        s = torch.maximum(raw, rho).sqrt_()
        torch.div(torch.bmm(c.mT, Li), -s.view(-1, 1, 1), out=Linv[:, j : j + 1, :j])
        G[:, j, :j] = g[:, :j]
        y[:, :j].addcmul_(c[:, :, 0], step.unsqueeze(1))
        y[:, j] = (zx - torch.linalg.vecdot(c[:, :, 0], y[:, :j])) / s
        noisy = raw < 8.0 * eps * xx
    else:
        s = (xx + rho).sqrt_()
        y[:, j] = zx / s
        noisy = None
    Linv[:, j, j] = s.reciprocal_()
    G[:, j, j] = xx
    S[:, j] = X
    if noisy is not None and bool(noisy.any()):
        t = torch.nonzero(noisy).flatten()
        Linv[t, : j + 1, : j + 1] = safe_inverse_factor(G[t, : j + 1, : j + 1], rho[t])
        return t
    return None


def border_one_(Linv, G, S, y, j: int, x, xx: float, g, rho: float, zx: float, step: float, eps: float,
                c=None) -> bool:
    """:func:`border_at_` for ONE member, on its unbatched state: ``Linv``, ``G`` ``(cap, cap)``,
    ``S`` ``(cap, d)``, ``y`` ``(cap,)``, the row ``x`` ``(d,)``, ``g = S x`` ``(j,)``, ``xx``, ``rho``,
    ``zx``, ``step`` and the Schur complement as Python floats (same arithmetic as the batched
    rule). ``c = Linv S x`` when the caller has it (the scoring's ``W = U Linv^T`` holds it as the
    played arm's row: one m^2 product fewer). Returns whether the factor was rebuilt (``y`` then
    needs a new anchor). (``c^T Linv`` stays one product also where FD's leading rows of ``Linv``
    are diagonal: splitting it took ~2.3 us against ~1.3 us at j = 75.)

    Written with operators numpy arrays and torch tensors share (``@``, ``*``, slicing, item
    stores), so the caller may pass either: on CPU the estimators pass numpy views of their
    torch state (:meth:`CovarianceEstimator._member0`: same memory, a store or a small product
    costs ~0.1-2 us there against ~1-4 us per torch dispatch, and this runs every round),
    elsewhere the tensors themselves."""
    if j:
        Li = Linv[:j, :j]
        if c is None:
            c = Li @ g
        raw = xx + rho - float(c @ c)
        s = math.sqrt(max(raw, rho))
        Linv[j, :j] = (Li.T @ c) * (-1.0 / s)
        G[j, :j] = g
        axpy_(y[:j], step, c)
        y[j] = (zx - float(c @ y[:j])) / s
    else:
        raw, s = xx + rho, math.sqrt(xx + rho)
        y[j] = zx / s
    Linv[j, j] = 1.0 / s
    G[j, j] = xx
    S[j] = x
    if j and raw < 8.0 * eps * xx:  # rounding noise: rebuild the factor (see border_at_)
        Gt = torch.as_tensor(G)  # shares the memory of a numpy view
        fresh = safe_inverse_factor(Gt[: j + 1, : j + 1].unsqueeze(0), torch.tensor([rho], dtype=Gt.dtype, device=Gt.device))[0]
        Linv[: j + 1, : j + 1] = fresh.cpu().numpy() if isinstance(Linv, np.ndarray) else fresh
        return True
    return False


def border_scattered_(Linv, G, S, y, idx, pos, X, xx, g, rho, zx, step) -> None:
    """:func:`border_at_` for the members ``idx`` at their own slots ``pos`` (index tensors);
    ``g`` spans the full capacity (zero past each member's rows), ``zx``, ``step`` ``(B,)`` as there."""
    c = torch.bmm(Linv, g.unsqueeze(2)).squeeze(2)  # zero on the padding
    s = torch.maximum(xx + rho - c.square().sum(dim=1), rho).sqrt_()
    new_row = -torch.bmm(c.unsqueeze(1), Linv).squeeze(1) / s.unsqueeze(1)
    y_held = y[idx] + step[idx].unsqueeze(1) * c[idx]  # (zero past each member's rows, as c)
    y_held[torch.arange(idx.numel(), device=idx.device), pos] = (zx[idx] - torch.linalg.vecdot(c[idx], y_held)) / s[idx]
    y[idx] = y_held
    Linv[idx, pos] = new_row[idx]
    Linv[idx, pos, pos] = 1.0 / s[idx]
    G[idx, pos] = g[idx]
    G[idx, pos, pos] = xx[idx]
    S[idx, pos] = X[idx]


def _listed(value):
    """A per-member array as a list (for repr), anything else as is."""
    return value.tolist() if isinstance(value, np.ndarray) else value


class FrequentDirections(CovarianceEstimator):
    """Frequent Directions sketch of ``X^T X`` with Woodbury queries of ``(rho I + S^T S)^-1``.

    Args:
        d: dimension of the rows.
        sketch_size: ``l >= 1``; FD keeps at most ``l - 1`` directions after a reduction and its
            error is at most ``min_k ||X - X_[k]||_F^2 / (l - k)``. Batched, B values give member i
            the size ``l_i``: the buffer is padded to the largest, and member i reduces when its
            own ``2 l_i`` (``l_i``) rows are full, exactly as the single sketch of size ``l_i``.
        reg: ridge lambda > 0 added to the estimate (``A_hat = reg I + S^T S``); batched, one value
            or B values.
        fast: ``True`` for the 2l-row buffer (one reduction every ~l rows, O(d l) amortised),
            ``False`` for the textbook one-reduction-per-row Alg. 2 (O(d l^2) per row).
        device, dtype: where the state lives (float64 default on CPU).
        batch_size: ``None`` for one sketch (unbatched shapes), or B independent sketches.

    Attributes (floats/lists for one sketch, arrays ``(B,)`` / lists of lists when batched):
        total_shrinkage: sum of the shrink values applied so far (seed 000's sigma-bar):
            ``0 <= X^T X - S^T S <= total_shrinkage * I``.
        n_reductions: number of reductions (eigendecompositions) so far.
        shrinkages: the shrink value of each reduction, in order.
        last_shrinkage: shrink value of the latest reduction (0.0 before any).
        rows_in_use: rows of ``S`` held now.
    """

    robust = False
    anchored = True  # the mean term goes through the anchor moved at each reduction (base._reanchor)
    row_from_cache = True  # B = 1: step(None, r, a) after _score_terms_one (the single agent's round)

    def __init__(self, d: int, sketch_size: int, *, reg: float = 1.0, fast: bool = True, device=None, dtype=None,
                 batch_size: int | None = None):
        l = check_sketch_size(sketch_size, fast, None if batch_size is None else int(batch_size))
        super().__init__(d, reg=reg, device=device, dtype=dtype, batch_size=batch_size)
        self._l = l  # an int, or (members' sizes differing) an int array (B,)
        self.fast = fast
        # per member: sketch size l_i and rows buffered before a reduction (2 l_i fast, l_i textbook);
        # the buffer holds the largest, a smaller member's slots past its capacity stay padding
        self._ls = np.broadcast_to(np.asarray(l, dtype=np.int64), (self.batch_size,)).copy()
        self._caps = 2 * self._ls if fast else self._ls.copy()
        self._cap = int(self._caps.max())
        B, cap = self.batch_size, self._cap
        self._buf = torch.zeros(B, cap, self.d, **self._kw)  # rows [0, m_i) are member i's S
        self._G = torch.zeros(B, cap, cap, **self._ckw)  # S S^T, lower triangle (eigh reads it; zero on the padding)
        self._Linv = torch.eye(cap, **self._ckw).expand(B, cap, cap).clone()  # identity on the padding
        self._y = torch.zeros(B, cap, **self._ckw)  # Linv S r / rho, r = b - A_hat theta0 (border_at_, base._reanchor)
        self._m = np.zeros(B, dtype=np.int64)
        # leading rows known orthogonal, their rows of Linv diagonal (kept by the last reduction; 0 after a rebuilt factor)
        self._n_orth = np.zeros(B, dtype=np.int64)
        self._alpha = np.zeros(B)  # RFD's added-back mass (stays 0 for FD)
        self._shrink = np.zeros(B)
        self._n_red = np.zeros(B, dtype=np.int64)
        self._shrinkages: list[list[float]] = [[] for _ in range(B)]
        self._rho_t = None  # rho as a (B, 1) core tensor, refreshed when alpha changes
        self._eps = torch.finfo(self.dtype).eps
        self._cache = None  # (U = arms S^T (B, K, mm) core, mm, ||arms||^2) of the last score_terms (B = 1: _score_terms_one's)
        self._lookahead = None  # single sketch: (x, eigh of the bordered Gram) from shrinkage_if_added

    # -- per-member scalars ------------------------------------------------------------------

    @property
    def rho_all(self) -> np.ndarray:
        """``reg + alpha`` per member: the ridge of ``A_hat`` (``reg`` for FD)."""
        return self.reg + self._alpha

    @property
    def rho(self):
        """``reg`` for FD, ``reg + alpha`` for RFD (per member when batched)."""
        return self._one(self.rho_all)

    def _ridge(self) -> torch.Tensor:
        return self._rho()[:, 0]

    def _rho_one(self) -> float:
        """``rho`` of the single sketch as a host float (``reg`` itself for FD: no numpy scalar op)."""
        return float(self.reg + self._alpha[0]) if self.robust else self.reg

    def _rho(self) -> torch.Tensor:
        if self._rho_t is None:
            self._rho_t = torch.as_tensor(self.rho_all, **self._ckw).unsqueeze(1)
        return self._rho_t

    def _alpha_total(self):
        return self._alpha

    @property
    def total_shrinkage(self):
        return self._one(self._shrink)

    @property
    def n_reductions(self):
        return self._one(self._n_red)

    @property
    def shrinkages(self):
        return self._shrinkages[0] if self.single else self._shrinkages

    @property
    def last_shrinkage(self):
        last = np.array([s[-1] if s else 0.0 for s in self._shrinkages])
        return self._one(last)

    @property
    def rows_in_use(self):
        return self._one(self._m)

    @property
    def capacity(self) -> int:
        """Rows allocated for the buffer (``2l`` fast, ``l`` textbook; the largest member's when batched)."""
        return self._cap

    # -- single-sketch views (diagnostics) ----------------------------------------------------
    def _need_single(self, what):
        if not self.single:
            raise AttributeError(f"{what} is a view of one sketch; index the batched tensors instead")

    @property
    def S(self) -> torch.Tensor:
        """The sketch rows now, shape ``(rows_in_use, d)`` (a view: do not modify)."""
        self._need_single("S")
        return self._buf[0, : self._m[0]]

    @property
    def gram(self) -> torch.Tensor:
        """``S S^T`` (``(m, m)``, in the working dtype)."""
        self._need_single("gram")
        m = self._m[0]
        G = self._G[0, :m, :m]
        return (torch.tril(G) + torch.tril(G, -1).mT).to(self.dtype)

    @property
    def chol(self) -> torch.Tensor:
        """Lower Cholesky factor of ``S S^T + rho I`` (the inverse of the kept ``Linv``)."""
        self._need_single("chol")
        m = self._m[0]
        Li = self._Linv[0, :m, :m]
        return torch.linalg.solve_triangular(Li, torch.eye(m, **self._ckw), upper=False).to(self.dtype)

    @property
    def is_orthogonal(self) -> bool:
        """True when the rows of ``S`` are mutually orthogonal (right after a reduction)."""
        self._need_single("is_orthogonal")
        return bool(self._n_orth[0] == self._m[0])

    @property
    def M(self) -> torch.Tensor:
        """``(S S^T + rho I)^-1`` (m x m; diagonal when :attr:`is_orthogonal`). Diagnostics."""
        self._need_single("M")
        m = self._m[0]
        Li = self._Linv[0, :m, :m]
        return (Li.T @ Li).to(self.dtype)

    # -- streaming -------------------------------------------------------------------------------
    def step(self, X, r, actions=None):
        """Add the rows (see :meth:`CovarianceEstimator.step`). ``r`` may be a Python float and
        ``actions`` an int when B = 1 (the single agent's loop: no index tensors are built)."""
        cache, self._cache = self._cache, None
        if self.batch_size == 1 and cache is not None and actions is not None:
            self._step_one(r if isinstance(r, float) else float(r[0]), actions if isinstance(actions, int) else int(actions[0]),
                           cache)
            return
        if isinstance(actions, int) and cache is not None:  # ||x||^2 of the played arm was scored (and finite)
            xx = cache[2][:, actions]
            xx_h = np.array([xx.item()])
        else:
            xx, xx_h = self._check_rows(X)
        lookahead, self._lookahead = self._lookahead, None
        m = self._m
        j = int(m[0])
        uniform = self.batch_size == 1 or bool((m == j).all())  # every member's next row goes to slot j
        mm = j if uniform else int(m.max())
        Xc = self._core(X)
        if mm == 0:
            g = None
        elif actions is not None and cache is not None:  # S x = the played arm's row of U = arms S^T
            g = cache[0][:, actions] if isinstance(actions, int) else cache[0][self._members, actions]
        else:
            g = self._core(torch.bmm(self._buf[:, :mm], X.unsqueeze(2)).squeeze(2))
        step = self._advance_anchor(Xc, r)  # b += r x; r / rho and u gain (r - x^T theta0) x / rho
        zx = torch.linalg.vecdot(Xc, self._anchor[:, 1])  # the new row's entry of S r / rho
        self.trace += xx_h
        live = xx_h > 0.0  # a zero row adds nothing to X^T X (and g = S x = 0 leaves y): skipped
        if live.all() and uniform:
            self._append_at(j, X, self._core(xx), g, zx, step)
        elif live.any():
            gp = torch.zeros(self.batch_size, self._cap, **self._ckw)
            if g is not None:
                gp[:, :mm] = g
            self._append(np.flatnonzero(live), X, self._core(xx), gp, zx, step)
        else:
            self.n_rows += 1
            return
        full = live & ((self._m == self._caps) | (not self.fast))
        if full.any():
            eig = None
            if self.single and lookahead is not None and torch.equal(lookahead[0], X[0]):
                eig = lookahead[1]  # shrinkage_if_added(x) just decomposed this very Gram
            self._reduce(np.flatnonzero(full), eig)
        self._reanchor_stale(self._buf, self._Linv, self._y)  # (a reduction just re-anchored: r = 0, never stale)
        self.n_rows += 1

    def _step_one(self, r: float, a: int, cache) -> None:
        """B = 1 of :meth:`step` for the played arm ``a`` of the last scored set (the single
        agent's round): the same operations on member 0's unbatched state, the O(m) part on
        host views (:meth:`~agents.sketches.base.CovarianceEstimator._member0`)."""
        # from _score_terms_one: U = arms S^T and W = U Linv^T (K, j), ||arms||^2, the arms, the arms in the core dtype
        j, U, W, sq, arms, ac = cache
        xx = float(sq[a])  # scored, hence finite
        lookahead, self._lookahead = self._lookahead, None
        S, G, Linv, y, b, anchor = self._member0("step", (self._buf, self._G, self._Linv, self._y, self.b, self._anchor))
        # X[0] (working, core dtype); S x and Linv S x: the played arm's rows of U and W
        x, g, c = arms[a], (U[a] if j else None), (W[a] if j else None)
        xc = x if ac is arms else ac[a]
        if isinstance(S, np.ndarray) and not isinstance(x, np.ndarray):  # scored on tensors (see _member0)
            x, xc, g, c = x.numpy(), xc.numpy(), (g.numpy() if j else None), (c.numpy() if j else None)
        rho = self._rho_one()
        step = self._advance_anchor_one(anchor, b, xc, r, rho, xx)  # b += r x; r / rho and u gain step x
        if not xx > 0.0:  # a zero row adds nothing to X^T X (and g = c = 0 leave y) and is skipped
            self.n_rows += 1
            return
        self.trace[0] += xx
        rebuilt = border_one_(Linv, G, S, y, j, x, xx, g, rho, float(xc @ anchor[1]), step, self._eps, c)
        if rebuilt:
            self._n_orth[0] = 0
        self._m[0] += 1
        if self._m[0] == self._cap or not self.fast:
            same = lookahead is not None and torch.equal(lookahead[0], as_tensor(arms[a]))
            eig = lookahead[1] if same else None
            self._reduce_one(eig)
        else:
            self._reanchor_one_if_stale(anchor, b, S, Linv, y, j + 1, rho, rebuilt)
        self.n_rows += 1

    def _append_at(self, j: int, X, xx, g, zx, step) -> None:
        """Every member appends its row at slot ``j`` (the common case; no index tensors)."""
        rebuilt = border_at_(self._Linv, self._G, self._buf, self._y, j, X, xx, g, self._rho()[:, 0], zx, step, self._eps)
        if rebuilt is not None:
            self._n_orth[rebuilt.cpu().numpy()] = 0
        self._unanchor(rebuilt)
        self._m += 1

    def _append(self, idx: np.ndarray, X, xx, g, zx, step) -> None:
        """The live members ``idx`` append at their own slots; ``g`` spans the capacity."""
        t = torch.as_tensor(idx, device=self.device)
        pos = torch.as_tensor(self._m[idx], device=self.device)
        border_scattered_(self._Linv, self._G, self._buf, self._y, t, pos, X, xx, g, self._rho()[:, 0], zx, step)
        self._m[idx] += 1

    def _eigh_desc(self, G):
        """The reductions' one decomposition (:func:`~agents.sketches.base.eigh_desc`; a method so
        tests can count the calls)."""
        return eigh_desc(G)

    def _after_reduction(self, idx: np.ndarray | slice, delta_h, rows, trace) -> None:
        """Host bookkeeping of a reduction of the members ``idx`` (shrink values, rows kept, ``tr S^T S``):
        arrays, or (the single sketch: basic indexing, no index arrays) ``slice(0, 1)`` and floats."""
        self._m[idx] = rows
        self._n_orth[idx] = rows
        self._shrink[idx] += delta_h
        self._n_red[idx] += 1
        self.trace[idx] = trace  # tr S^T S now (the width floor's bound)
        if isinstance(idx, slice):
            self._shrinkages[0].append(float(delta_h))
            return
        for i, v in zip(idx, delta_h):
            self._shrinkages[i].append(float(v))

    def _reduce(self, idx: np.ndarray, eig=None) -> None:
        """FD reduction (seed 000 Alg. 2 lines 4-7) of the members ``idx``, grouped by row count
        (and by sketch size when the members' sizes differ)."""
        if self.batch_size == 1:  # the single sketch: in place on member 0's views
            self._reduce_one(eig)
            return
        counts = self._m[idx]
        if isinstance(self._l, int):
            for m in np.unique(counts):
                self._reduce_group(idx[counts == m], int(m), self._l, eig)
            return
        sizes = self._ls[idx]
        for m, l in sorted(set(zip(counts.tolist(), sizes.tolist()))):
            self._reduce_group(idx[(counts == m) & (sizes == l)], m, l, eig)

    def _reduce_group(self, idx: np.ndarray, m: int, l: int, eig=None) -> None:
        t = torch.as_tensor(idx, device=self.device)
        full = idx.size == self.batch_size
        buf = self._buf[:, :m] if full else self._buf[t, :m]
        if eig is None:
            eig = self._eigh_desc(self._reduction_gram(buf, self._G[:, :m, :m] if full else self._G[t, :m, :m]))
        delta, keep, kept, coeff = self._shrink_plan(*eig, m, l)
        k = keep.shape[1]
        r = kept.sum(dim=1)
        new_rows = torch.bmm(coeff.to(self.dtype), buf)
        delta_h = delta.double().cpu().numpy()
        r_h = r.cpu().numpy()
        if self.robust:  # Alg. 3 line 5: alpha <- alpha + sigma, before rho is read below
            self._alpha[idx] += delta_h
            self._rho_t = None
        rho = self._rho()[t] if not full else self._rho()
        # Alg. 2 line 7: the rows are now orthogonal, so G and Linv are diagonal. Fresh tensors
        # (measured faster than strided in-place writes batched; B = 1 is _reduce_one, in place)
        linv_diag = torch.where(kept, (keep + rho).rsqrt(), torch.ones_like(keep))
        cap = self._cap
        n = idx.size
        S = torch.zeros(n, cap, self.d, **self._kw)
        S[:, :k] = new_rows
        y = torch.zeros(n, cap, **self._ckw)  # the anchor moves to the new A_hat below: r_b = 0
        G = torch.zeros(n, cap, cap, **self._ckw)
        G[:, :k, :k] = torch.diag_embed(keep)
        Linv = torch.eye(cap, **self._ckw).repeat(n, 1, 1)
        Linv[:, :k, :k] = torch.diag_embed(linv_diag)
        if full:
            self._buf, self._y, self._G, self._Linv = S, y, G, Linv
        else:
            self._buf[t], self._y[t], self._G[t], self._Linv[t] = S, y, G, Linv
        # the anchor moves to the new A_hat (base._reanchor): its rows are the k new, orthogonal ones
        self._reanchor(None if full else t, new_rows, torch.diag_embed(linv_diag), rho.view(-1))
        self._after_reduction(idx, delta_h, r_h, keep.sum(dim=1).double().cpu().numpy())

    def _reduce_one(self, eig=None) -> None:
        """B = 1 of :meth:`_reduce_group` (the single agent's reduction), in place on member 0's views
        (:meth:`~agents.sketches.base.CovarianceEstimator._member0`): numpy on CPU, where the ~40 small
        torch calls of the batched code cost ~0.8 ms a reduction inside a run (their code is cold
        after a round of numpy work: ~20 us each; d = 784, l = 50: ~15 us a round amortised, as
        much as the rest of the round's small steps), tensors elsewhere. The same plan
        (:meth:`_shrink_plan`) and the same arithmetic (on numpy's LAPACK and BLAS there,
        :func:`~agents.sketches.base.eigh_desc`); ``eig``: a look-ahead's decomposition."""
        m, l, cap = int(self._m[0]), int(self._ls[0]), self._cap
        S, G, Linv, y, b, anchor = self._member0("step", (self._buf, self._G, self._Linv, self._y, self.b, self._anchor))
        if eig is None:
            evals, evecs = self._eigh_desc(self._reduction_gram(S[None, :m], G[None, :m, :m]))
        else:
            evals, evecs = (eig[0].cpu().numpy(), eig[1].cpu().numpy()) if isinstance(S, np.ndarray) else eig
        delta, keep, kept, coeff = self._shrink_plan(evals, evecs, m, l)
        k = keep.shape[1]
        delta_h = float(delta[0])
        if self.robust:  # Alg. 3 line 5: alpha <- alpha + sigma, before rho is read below
            self._alpha[0] += delta_h
            self._rho_t = None
        rho = self._rho_one()
        S[:k] = self._work(coeff[0]) @ S[:m]  # the new rows (formed before any row is overwritten)
        S[k:m] = 0.0
        y[:m] = 0.0  # the anchor moves to the new A_hat below: r_b = 0
        # Alg. 2 line 7: the rows are now orthogonal, so G and Linv are diagonal (identity on freed slots)
        G[:m, :m] = 0.0
        Linv[:m, :m] = 0.0
        Linv.reshape(-1)[0 : m * (cap + 1) : cap + 1] = 1.0  # (flat strided views of the diagonals)
        G.reshape(-1)[0 : k * (cap + 1) : cap + 1] = keep[0]
        Linv.reshape(-1)[0 : k * (cap + 1) : cap + 1] = (keep[0] + rho) ** -0.5 * kept[0] + ~kept[0]
        set_anchor_(anchor, ridge_solution(b, self._core(S[:k]), Linv[:k, :k], rho))  # base._reanchor
        self._after_reduction(slice(0, 1), delta_h, int(kept.sum()), float(keep.sum()))

    # -- look-ahead (state unchanged; one sketch) ---------------------------------------------
    def _bordered_evals(self, x: torch.Tensor | None) -> torch.Tensor:
        m = int(self._m[0])
        G = self._G[0, :m, :m]
        if x is None:
            return self._eigh_desc(G.unsqueeze(0))[0][0] if m else torch.zeros(0, **self._ckw)
        if self._same:
            Gb = torch.empty(m + 1, m + 1, **self._ckw)
            Gb[:m, :m] = G
            g = self._buf[0, :m] @ x
            Gb[m, :m] = g
            Gb[:m, m] = g
            Gb[m, m] = x @ x
        else:  # the reduction's Gram of the stored rows (CovarianceEstimator._reduction_gram)
            Gb = self._reduction_gram(torch.cat([self._buf[:, :m], x.view(1, 1, -1)], dim=1), None)[0]
        evals, evecs = self._eigh_desc(Gb.unsqueeze(0))
        # kept until the next update: if that update is update(x) and reduces, it reuses this
        # decomposition instead of repeating it (the look-ahead + insert pattern)
        self._lookahead = (x.clone(), (evals, evecs))
        return evals[0]

    def _shrink_value_1(self, evals: torch.Tensor) -> float:
        m = evals.shape[0]
        if m == 0:
            return 0.0
        return float(self._shrink_values(evals.unsqueeze(0), m, self._l)[0])

    def shrinkage_if_added(self, x) -> float:
        """The shrink value that ``update(x)`` would apply now (0.0 if no reduction would happen
        or it would discard nothing), from a temporary bordered Gram; the state is unchanged.
        In the fast variant a reduction happens only when ``x`` fills the 2l-row buffer
        (Dyadic Block Sketching's ``willExcessSketch`` test, seed 000 Sec. 3.1)."""
        self._need_single("shrinkage_if_added")
        x = as_vector(x, self.device, self.dtype, self.d)
        if not float(x @ x) > 0.0:  # the test update() uses to skip zero rows
            return 0.0
        if self.fast and self._m[0] + 1 < self._cap:
            return 0.0
        return self._shrink_value_1(self._bordered_evals(x))

    def pending_shrinkage(self, x=None) -> float:
        """The shrink value a reduction of the current sketch (with ``x`` appended, if given)
        would apply now, whether or not the buffer is full; 0.0 while the rank is < l."""
        self._need_single("pending_shrinkage")
        if x is not None:
            x = as_vector(x, self.device, self.dtype, self.d)
            if not float(x @ x) > 0.0:
                x = None
        return self._shrink_value_1(self._bordered_evals(x))

    # -- queries ---------------------------------------------------------------------------------
    def _project(self, arms):
        """``(sq, U, W)``: squared norms (core dtype), ``U = arms S^T`` and ``W = U Linv^T`` over the
        first ``mm`` slots (every member's rows lie there); ``U = W = None`` while all are empty."""
        sq = self._sq_norms(arms)
        mm = int(self._m.max())
        if mm == 0:
            return sq, None, None, 0
        # the only O(B K d m) step (arms S^T: K-row operand on the left is the batched layout here)
        U = self._core(torch.bmm(arms, self._buf[:, :mm].mT))
        W = torch.bmm(U, self._Linv[:, :mm, :mm].mT)
        return sq, U, W, mm

    def _quad_from(self, sq, W):
        rho = self._rho()
        quad = sq if W is None else sq - W.square().sum(dim=2)
        return torch.maximum(quad / rho, self._floor(sq))

    def score_terms(self, arms):
        if self.batch_size == 1:
            mean, quad = self._score_terms_one(arms[0])
            return as_tensor(mean).unsqueeze(0), as_tensor(quad).unsqueeze(0)  # core dtype, as below
        sq, U, W, mm = self._project(arms)
        mean = torch.bmm(self._core(arms), self._anchor[:, 2].unsqueeze(2)).squeeze(2)  # x^T u (base._reanchor)
        self._cache = (U, mm, sq)
        if W is not None:  # - w^T Linv S r / rho (y kept by border_at_)
            mean = mean - torch.bmm(W, self._y[:, :mm].unsqueeze(2)).squeeze(2)
        return mean, self._quad_from(sq, W)  # core dtype: the loop compares scores there

    def _score_terms_one(self, arms):
        """B = 1 of :meth:`score_terms` (:meth:`~agents.sketches.base.CovarianceEstimator._woodbury_terms_one`);
        its projection is cached unbatched, with the row count, for :meth:`_step_one`."""
        mm = int(self._m[0])
        mean, quad, one = self._woodbury_terms_one(arms, self._buf, self._Linv, self._y, mm, self._rho_one(),
                                                   int(self._n_orth[0]))
        self._cache = (mm, *one)
        return mean, quad

    def logdet_increments(self, X, actions=None) -> torch.Tensor:
        return torch.log1p(self._quad(X.unsqueeze(1))[:, 0])

    def _quad(self, arms):
        sq, _, W, _ = self._project(arms)
        return self._work(self._quad_from(sq, W))

    def _solve(self, V):
        """``(v - S^T (S S^T + rho I)^-1 S v) / rho`` per member, O(d m + m^2)."""
        rho = self._rho()
        mm = int(self._m.max())
        if mm == 0:
            return (self._core(V) / rho).to(self.dtype)
        S = self._buf[:, :mm]
        Li = self._Linv[:, :mm, :mm]
        y = torch.bmm(Li.mT, torch.bmm(Li, torch.bmm(S, V.unsqueeze(2)).to(self.cdtype)))
        out = self._core(V) - self._core(torch.bmm(y.mT.to(self.dtype), S).squeeze(1))
        return (out / rho).to(self.dtype)

    def _covariance(self):
        """``S^T S`` (plus ``alpha I`` for RFD), ``(B, d, d)``."""
        cov = torch.bmm(self._buf.mT, self._buf)
        if self.robust:
            cov = cov + torch.as_tensor(self._alpha, **self._kw).view(-1, 1, 1) * torch.eye(self.d, **self._kw)
        return cov

    def log_det_ratio_bound(self):
        """An upper bound on ``ln det(reg I + X^T X) - d ln(reg)`` for the rows seen so far.

        FD: ``X^T X <= S^T S + sigma_bar I`` gives ``d ln(1 + sigma_bar/reg) + sum_j ln(1 + s_j^2/(reg +
        sigma_bar))`` (the first step of seed 000 Lemma 6); the sum is bounded by the smaller of
        ``sum_j ln(1 + s_j^2/reg)`` (exact, from the factor's diagonal) and the trace/AM-GM bound
        ``m ln(1 + ||S||_F^2/(m (reg + sigma_bar)))``. Exact when nothing was discarded. O(m).
        RFD (overridden): ``ln det(A_hat) - d ln(reg)`` exactly (``A <= A_hat``).
        """
        lam, sig = self.reg, self._shrink
        m = self._m.astype(np.float64)
        logdiag = -torch.log(torch.diagonal(self._Linv, dim1=1, dim2=2)).sum(dim=1).double().cpu().numpy()  # padding: 0
        out = self.d * np.log1p(sig / lam)
        exact = 2.0 * logdiag - m * (math.log(lam) if isinstance(lam, float) else np.array([math.log(v) for v in lam]))
        trace = torch.diagonal(self._G, dim1=1, dim2=2).sum(dim=1).double().cpu().numpy()
        amgm = m * np.log1p(np.maximum(trace, 0.0) / (np.maximum(m, 1.0) * (lam + sig)))
        return self._one(out + np.where(m > 0, np.minimum(exact, amgm), 0.0))

    # -- introspection ---------------------------------------------------------------------------
    def sketch_sizes(self):
        return self._ls.copy()

    def member_memory_bytes(self):
        """The buffer (``cap x d``, working dtype), Gram and inverse factor (``cap x cap`` each, core
        dtype), ``y = Linv S r / rho`` (``cap``, core) and the anchor (``theta0``, ``r / rho``, ``u``: ``3 d``, core;
        base._reanchor): ``cap = 2l`` fast, ``l`` textbook."""
        cap = self._caps  # each member's own capacity: what its single sketch allocates
        ec = self._G.element_size()
        return (self._buf.element_size() * cap * self.d + ec * (2 * cap * cap + cap + 3 * self.d)).astype(np.int64)

    def _held_bytes(self):
        return tensor_bytes(self._buf, self._G, self._Linv, self._y, self.b, self._anchor)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(d={self.d}, sketch_size={_listed(self._l)}, reg={_listed(self.reg)}, fast={self.fast}, "
                f"batch_size={None if self.single else self.batch_size}, rows_in_use={self.rows_in_use})")
