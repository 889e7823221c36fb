"""The one state every sketch keeps: an orthonormal basis of its rows' span, the rows' coordinates
in it, and the inverse of the small core; with its four operations, written once.

A sketch of ``B`` members holds, for member ``i``, ``N_i`` rows ``S_i`` (``N_i x d``) and a ridge
``c_i`` (``reg`` for FD, ``reg + alpha`` for RFD and Dyadic Block Sketching's RFD blocks), and stands for

    A_hat = c I + S^T S.

The rows are not stored as such. Member ``i`` keeps (padding is zero):

* ``V[i, :R_i]``: an orthonormal basis of the span of its rows (``R_i <= min(N_i, d)`` rows of
  ``d``, working dtype);
* ``C[i, :N_i, :R_i]``: the rows' coordinates in that basis, ``S = C V`` (core dtype);
* ``H[i, :R_i, :R_i] = (M + c I)^-1`` with ``M = C^T C`` (core dtype), so that

      A_hat^-1 = (I - V^T V) / c + V^T H V,
      x^T A_hat^-1 x = ||x - V^T p||^2 / c + p^T H p,          p = V x;

* ``b = b_perp + V^T bV`` split into its part outside the span (kept as ``theta_perp = b_perp / c``)
  and its coordinates, so that ``theta_hat = A_hat^-1 b = theta_perp + V^T H bV`` and
  ``x^T theta_hat = x . theta_perp + p^T H bV``.

Why a basis. The Woodbury form ``(||x||^2 - ||Linv S x||^2) / c`` subtracts two numbers of size
``||x||^2`` whose difference is ``c x^T A_hat^-1 x``: it keeps ``eps ||x||^2 / c`` of absolute
error, a relative error of ``eps (c + lambda_max) / c``, whatever the spectrum in between (and a
buffer of more rows than its rank adds zero eigenvalues to ``S S^T + c I``, through which the
rounding of ``S x`` is amplified by ``1 / c``). Here both terms are sums of non-negative numbers:
``p^T H p`` with ``H`` the inverse of an ``R x R`` matrix no larger than the span, and the
residual ``||x - V^T p||^2``, which is formed explicitly wherever ``||x||^2 - ||p||^2`` would
cancel (:meth:`SketchCore.score`) and is exactly 0 once the basis spans ``R^d``. The common case
keeps one ``K d R`` product a round; the price is one ``d R`` product per appended row (its
residual against the basis, to extend the basis).

The four operations (batch dimension first; ``xp`` is the :class:`~agents.sketches.backend.Backend`):

* :meth:`SketchCore.expand` + :meth:`SketchCore.append`: a row ``x`` with ``p = V x`` gets its
  residual by classical Gram-Schmidt, repeated once when it lost more than half its norm
  (Kahan-Parlett: "twice is enough"; a second pass that loses half again means ``x`` lies in the
  span up to rounding), extends the basis by ``v = e / ||e||`` if the residual is real, and its
  coordinates ``[p, ||e||]`` join ``C``. ``H`` follows by a bordered Sherman-Morrison step with no
  cancellation in the new direction: with ``h = H p``, ``q = p^T h``,
  ``den = c (1 + q) + ||e||^2``,

      H <- [[H - (c / den) h h^T,  -(||e|| / den) h], [-(||e|| / den) h^T,  (1 + q) / den]].

  ``b`` gains ``r x = r (V^T p + ||e|| v)``: ``r p`` on the old coordinates, and the new coordinate
  ``r ||e||`` plus ``b_perp``'s share of ``v``, moved out of ``b_perp``. (Adding ``r e`` to ``b_perp`` and
  taking ``v``'s share out again would subtract numbers of size ``|r x|``, leaving ``eps |r x|`` there,
  which the mean reads amplified by ``|x| / c``.)

* :meth:`SketchCore.shrink`: the Frequent Directions shrink (Ghashami et al. 2016, Alg. 2; Wen
  et al. (2025), Alg. 2 lines 4-7) of a range of rows: the SVD of the range's coordinates
  ``C_r = U diag(s) W^T`` (rows of ``R`` numbers, not ``d``), the shrink value ``delta = s_l^2``
  and the new rows ``diag(sqrt(s^2 - delta)) W^T V`` (:func:`fd_shrink`); the basis keeps the span
  of the rows that remain (a rotation of ``V`` by ``W``), ``H`` is refactored.
* :meth:`SketchCore.score`: ``x^T A_hat^-1 x`` and ``x^T theta_hat`` of every arm from one
  product ``P = arms V^T``.
* :meth:`SketchCore.solve`: ``A_hat^-1 v``.

FD is one range (all rows), RFD the same with ``c`` raised at each shrink, Dyadic Block Sketching
frozen blocks (rows ``[0, start)``, which live on the first ``Rf`` basis vectors) plus the
active block's range.

A sketch nobody queries (rows without responses, no scoring: matrix approximation) needs none of
``V``, ``C`` or ``H`` between queries. Its rows are kept raw in the basis buffer's free slots
(:meth:`SketchCore.append_raw`: a copy a row) and shrunk from their own ``n x n`` Gram
(:meth:`SketchCore.shrink_rows`), as Liberty's (2013) and Ghashami et al.'s (2016) reference
algorithm does with an SVD of its buffer; the first query gives them coordinates, one row append
each, and from then on the state is the one above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .backend import Backend

__all__ = ["SketchCore", "Expansion", "fd_shrink", "FDPlan", "Rounding", "rounding", "shrink_groups"]


def _same(a: np.ndarray) -> bool:
    """Whether every entry of the host array ``a`` is equal (the members share a slot)."""
    return a.size == 1 or bool(a.min() == a.max())


def shrink_groups(idx: np.ndarray, rows: np.ndarray, ls: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """The members ``idx`` grouped for batched shrinks: ``(members, l)`` per distinct (rows held, sketch size
    ``l``) pair (``rows``, ``ls``: host ints, one per member of ``idx``); one group when they all agree."""
    if _same(rows) and _same(ls):
        return [(idx, int(ls[0]))]
    keys = np.stack([rows, ls], axis=1)
    return [(idx[(keys == key).all(axis=1)], int(key[1])) for key in np.unique(keys, axis=0)]

Array = Any  # a numpy array or a torch tensor, as the backend says


def _host64(xp: Backend, a) -> np.ndarray:
    """``a`` as a host float64 array (``a`` itself when it already is one)."""
    a = xp.host(a)
    return a if a.dtype == np.float64 else a.astype(np.float64)


@dataclass(frozen=True)
class Rounding:
    """The rounding of a range's eigenvalues ``lambda_i = s_i^2`` (host float64 ``(n,)`` each, per
    member): ``coord`` bounds ``||delta C_r||_2``, the rounding of the coordinates themselves, and
    ``gram`` that of forming and decomposing their Gram (:func:`rounding`)."""

    coord: np.ndarray
    gram: np.ndarray


def rounding(xp: Backend, eps_work: float, eps_core: float, n: int, lam) -> Rounding:
    """The rounding of the eigenvalues ``lam`` (``(n_members, m)``, descending, ``>= 0``) of a range's Gram
    ``M_r = C_r^T C_r`` over ``n`` coordinates (rows plus basis vectors).

    Why these. Every coordinate of a row carries a relative rounding of ``eps_work`` (the product
    ``V x`` that formed it, in the working dtype) and ``eps_core`` (the core's arithmetic): by Weyl's
    inequality the singular values of the stored ``C_r`` lie within ``||delta C_r||_2 <= (eps_work +
    eps_core) sqrt(n) ||C_r||_F`` of those of the exact rows (``sqrt(n)``: the usual growth of a dot
    product's rounding), so ``lambda_i`` within ``2 s_i ||delta C_r|| + ||delta C_r||^2``. Forming the Gram
    and its symmetric eigendecomposition are backward stable: each eigenvalue within
    ``n eps_core ||M_r||_2`` more (LAPACK's bound, linear in the size)."""
    lam = _host64(xp, lam)
    coord = ((eps_work + eps_core) * math.sqrt(n)) * np.sqrt(lam.sum(axis=1))
    return Rounding(coord, (n * eps_core) * lam[:, 0])


@dataclass(frozen=True)
class FDPlan:
    """Frequent Directions' shrink of one group of ranges (Alg. 2 lines 5-6), per member:
    ``delta`` the shrink value (host float64 ``(n,)``), ``keep`` the kept squared singular values
    ``(n, k)`` (backend array, 0 where dropped), ``kept`` how many survive (host ints ``(n,)``; always
    the leading ones) and ``mass`` their sum ``tr(S_new^T S_new)`` (host float64 ``(n,)``)."""

    delta: np.ndarray
    keep: Array
    kept: np.ndarray
    mass: np.ndarray


def fd_shrink(xp: Backend, lam, l: int, noise: Rounding) -> FDPlan:
    """Frequent Directions' shrink of rows whose squared singular values are ``lam`` (``(n, m)``,
    descending; fewer than ``l`` values count as zeros beyond): the shrink value ``delta = lambda_l``
    (Wen et al. (2025), Alg. 2 line 5), and the ``k = min(l - 1, m)`` leading directions keep
    ``lambda_i - delta`` (line 6).

    The rank cut follows from FD's analysis and the rounding (:func:`rounding`): ``lambda_l`` below
    the rounding of a zero eigenvalue, ``||delta C||^2 + n eps ||M||``, cannot be told from 0, so the
    shrink value is 0 (FD of size l is exact on rank < l, and a low-rank stream reports no
    shrinkage); a kept ``lambda_i - delta`` below the rounding of that difference, ``4 s_i ||delta C||
    + 2 n eps ||M||``, is a tie of ``lambda_i`` with ``lambda_l`` and is dropped, with every smaller
    one. Either way the mass left unaccounted is at the rounding level of the rows: FD's bounds hold
    up to it. (Host arithmetic on the ``n x m`` eigenvalues.)"""
    lam_h = _host64(xp, lam)
    n, m = lam_h.shape
    k = min(l - 1, m)
    lead = lam_h[:, :k]
    if m >= l:
        ll = lam_h[:, l - 1]
        delta = np.where(ll > noise.coord * noise.coord + noise.gram, ll, 0.0)
        keep = lead - delta[:, None]
    else:
        delta, keep = np.zeros(n), lead
    alive = keep > np.sqrt(lead) * (4.0 * noise.coord)[:, None] + (2.0 * noise.gram)[:, None]
    alive = np.logical_and.accumulate(alive, axis=1)  # (a prefix: past a tie, every smaller one goes)
    keep = np.where(alive, keep, 0.0)
    return FDPlan(delta, xp.cast_like(keep, lam), alive.sum(axis=1), keep.sum(axis=1))


@dataclass(slots=True)
class Expansion:
    """A row's coordinates in the basis extended by its residual direction (:meth:`SketchCore.expand`):
    ``p`` ``(B, Rw)`` core, ``nu`` ``(B,)`` core (``||e||``, 0 where no new direction), ``v`` ``(B, d)``
    working (the new unit vector ``e / ||e||``, 0 where none), ``new`` ``(B,)`` host bools, ``xx`` ``(B,)``
    core ``||x||^2``; ``hp = H p`` ``(B, Rw)`` and ``q = p^T H p`` ``(B,)`` (core) when the scoring computed
    them for this very ``p`` (:meth:`SketchCore.score`), else None (the append forms them)."""

    p: Array
    nu: Array
    v: Array
    new: np.ndarray
    xx: Array
    hp: Array | None = None
    q: Array | None = None


_EMPTY = np.zeros(0, dtype=np.int64)
_TINY = np.finfo(np.float64).tiny

#: A bordered Sherman-Morrison step of ``H`` multiplies the rounding it meets by ``1 + q`` (``q = p^T H p``:
#: how much more the row weighs in its directions than the sketch held there, relative to ``c``). A
#: step beyond this refactors ``H`` from the coordinates instead (O(R^3), rare: early rows against a
#: tiny ridge), so a kept ``H`` is the inverse to ~``AMPLIFICATION_LIMIT eps`` per row since its factorization.
AMPLIFICATION_LIMIT = 2.0 ** 10


class SketchCore:
    """The basis state of ``B`` sketches (see the module docstring). Host bookkeeping (``N``, ``R``,
    ``c``) is numpy; the arrays are the backend's, padded with zeros past each member's rows and basis.

    Args:
        xp: the backend (numpy or torch).
        B, d: members and dimension.
        dtype, cdtype: working dtype (the basis) and core dtype (coordinates, ``H``, ``b``).
        rows, basis: initial capacities (rows of ``C``, basis vectors, ``basis <= d``); :meth:`ensure` grows them.
        c: the ridge per member (host float64 ``(B,)``).
    """

    def __init__(self, xp: Backend, B: int, d: int, dtype: torch.dtype, cdtype: torch.dtype, rows: int, basis: int,
                 c: np.ndarray):
        self.xp, self.B, self.d = xp, B, d
        self.dtype, self.cdtype = dtype, cdtype
        self.eps_w, self.eps_c = torch.finfo(dtype).eps, torch.finfo(cdtype).eps
        self.N = np.zeros(B, dtype=np.int64)  # rows held in coordinates
        self.R = np.zeros(B, dtype=np.int64)  # basis size
        #: rows held raw, not yet in the basis (a sketch nobody queries: :meth:`append_raw`); they sit in the
        #: basis buffer's free slots ``[R_i, R_i + pend_i)``
        self._pend = np.zeros(B, dtype=np.int64)
        self._plag = 0  # appended to every member's pend, not yet added in (pend)
        self.Pmax = 0  # pend.max()
        self._uniform = True  # every member holds as many basis vectors and raw rows (the same free slot)
        self.Rmax = 0  # R.max(), the width every member's products run over
        self.c = np.zeros(B)
        self.V = xp.zeros((B, 0, d), dtype)
        self.C = xp.zeros((B, 0, 0), cdtype)
        self.H = xp.zeros((B, 0, 0), cdtype)
        self.bV = xp.zeros((B, 0), cdtype)
        self.tperp = xp.zeros((B, d), cdtype)  # theta_perp = b_perp / c
        self._pp = xp.zeros((B, 0), cdtype)  # scratch: a coordinate row padded to the capacity
        #: members whose rows are ``diag(s)`` on their basis (a shrink with nothing frozen leaves them so, until the
        #: next row): ``M + c I`` is diagonal and :meth:`refactor` inverts it entrywise
        self._diagonal = np.zeros(B, dtype=bool)
        self._any_diagonal = False
        self.set_ridge(np.arange(B), np.broadcast_to(np.asarray(c, dtype=np.float64), (B,)))
        self.ensure(rows, basis)

    # -- storage -----------------------------------------------------------------------------------
    @property
    def rows_cap(self) -> int:
        return self.C.shape[1]

    @property
    def basis_cap(self) -> int:
        return self.V.shape[1]

    def ensure(self, rows: int, basis: int) -> None:
        """Grow the capacities to ``rows`` rows and ``basis`` basis vectors (copies, zero padding)."""
        rows, basis = max(rows, self.rows_cap), min(max(basis, self.basis_cap), self.d)
        if rows == self.rows_cap and basis == self.basis_cap:
            return
        xp, B = self.xp, self.B
        n0, r0 = self.rows_cap, self.basis_cap
        V = xp.zeros((B, basis, self.d), self.dtype)
        C = xp.zeros((B, rows, basis), self.cdtype)
        H = xp.zeros((B, basis, basis), self.cdtype)
        bV = xp.zeros((B, basis), self.cdtype)
        V[:, :r0], C[:, :n0, :r0], H[:, :r0, :r0], bV[:, :r0] = self.V, self.C, self.H, self.bV
        self.V, self.C, self.H, self.bV = V, C, H, bV
        self._pp = xp.zeros((B, basis), self.cdtype)

    def held_bytes(self) -> int:
        arrays = (self.V, self.C, self.H, self.bV, self.tperp)
        if self.xp.is_numpy:
            return int(sum(a.nbytes for a in arrays))
        return int(sum(a.element_size() * a.nelement() for a in arrays))

    @staticmethod
    def layout_bytes(d: int, rows, basis, work_bytes: int, core_bytes: int):
        """Bytes one member holds with capacities ``rows`` x ``basis``: the basis (``basis x d``, working
        dtype); in the core dtype its coordinates (``rows x basis``), ``H`` (``basis^2``), ``bV``
        (``basis``) and ``theta_perp`` (``d``). Accepts numpy int arrays."""
        return work_bytes * basis * d + core_bytes * (rows * basis + basis * basis + basis + d)

    def set_ridge(self, idx: np.ndarray, c: np.ndarray) -> None:
        """New ridges ``c`` for the members ``idx``: ``theta_perp = b_perp / c`` follows; the caller
        refactors their ``H`` next (:meth:`refactor`)."""
        old = self.c[idx].copy()
        self.c[idx] = c
        xp = self.xp
        self.c_arr = xp.asarray(self.c, self.cdtype)
        self.inv_c = xp.asarray(1.0 / self.c, self.cdtype)[:, None]
        if (old > 0).all():
            self.tperp[self._sel(idx)] = self.tperp[self._sel(idx)] * xp.asarray(old / self.c[idx], self.cdtype)[:, None]

    def _set_R(self, R: np.ndarray) -> None:
        self.R = R
        sizes = R.tolist()
        self.Rmax = max(sizes)
        self._uniform = min(sizes) == self.Rmax and (self.Pmax == 0 or _same(self.pend))

    @property
    def pend(self) -> np.ndarray:
        """Raw rows held per member (host ints ``(B,)``)."""
        if self._plag:
            self._pend += self._plag
            self._plag = 0
        return self._pend

    @pend.setter
    def pend(self, value: np.ndarray) -> None:
        self._pend, self._plag = value, 0
        self.Pmax = max(value.tolist())
        self._uniform = _same(self.R) and _same(value)

    # -- reading the state -------------------------------------------------------------------------
    def _basis_c(self):
        """The basis over every member's width, in the core dtype."""
        return self.xp.astype(self.V[:, :self.Rmax], self.cdtype)

    def b(self):
        """``b = b_perp + V^T bV`` ``(B, d)``, core dtype."""
        return self.tperp * self.c_arr[:, None] + (self.bV[:, None, :self.Rmax] @ self._basis_c())[:, 0]

    def theta(self):
        """``A_hat^-1 b = theta_perp + V^T H bV`` ``(B, d)``, core dtype."""
        Rw = self.Rmax
        t = (self.H[:, :Rw, :Rw] @ self.bV[:, :Rw, None])[:, :, 0]
        return self.tperp + (t[:, None, :] @ self._basis_c())[:, 0]

    def gram(self):
        """``M = C^T C`` ``(B, Rw, Rw)`` over the rows held (core dtype)."""
        Cw = self.C[:, :int(self.N.max()), :self.Rmax]
        return Cw.mT @ Cw

    def logdet(self) -> np.ndarray:
        """``log det(M + c I) - R log c = -log det(H) - R log c`` per member (host float64; O(R^3))."""
        Rw = self.Rmax
        real = np.arange(Rw)[None, :] < self.R[:, None]
        Hw = self.H[:, :Rw, :Rw] + self.xp.cast_like(~real, self.H)[:, :, None] * self.xp.eye(Rw, self.cdtype)
        return -self.xp.logdet(Hw) - self.R * np.log(self.c)

    def frob2(self) -> np.ndarray:
        """``||C||_F^2 = tr(S^T S)`` per member (host float64)."""
        Cf = self.C.reshape(self.B, -1)
        return self.xp.host(self.xp.vecdot(Cf, Cf)).astype(np.float64)

    def covariance(self):
        """``S^T S = V^T M V`` (plus the raw rows' ``X^T X``) ``(B, d, d)`` in the core dtype."""
        Vc = self._basis_c()
        cov = Vc.mT @ self.gram() @ Vc
        if self.pend.any():
            raw = self._raw_rows()
            cov = cov + raw.mT @ raw
        return cov

    def rows(self, i: int):
        """Member ``i``'s rows ``S`` ``(N_i + pend_i, d)``: ``C V``, then the raw ones (core dtype; diagnostics)."""
        n, r, k = int(self.N[i]), int(self.R[i]), int(self.pend[i])
        held = self.C[i, :n, :r] @ self.xp.astype(self.V[i, :r], self.cdtype)
        return self.xp.concat(held, self.xp.astype(self.V[i, r:r + k], self.cdtype), axis=0)

    # -- raw rows (a sketch nobody queries) ----------------------------------------------------------
    def raw_room(self) -> bool:
        """Whether every member has a free basis slot for one more raw row (:meth:`append_raw`)."""
        return self.Rmax + self.Pmax < self.V.shape[1]  # (the basis capacity)

    def append_raw(self, X, live: np.ndarray | None = None) -> None:
        """Keep the rows ``X`` ``(B, d)`` raw (no response: ``b`` is unchanged) in the free slots of the basis
        buffer, for a sketch nobody queries: O(d) a row. Their coordinates are formed when the basis is
        needed (the caller absorbs them, :meth:`take_raw`) or the shrink takes them with the rest
        (:meth:`shrink_rows`). The caller makes sure there is a free slot (:meth:`raw_room`)."""
        xp = self.xp
        if live is None and self._uniform:  # one free slot for every member
            self.V[:, self.Rmax + self.Pmax] = X
            self._plag += 1
            self.Pmax += 1
            return
        idx = np.arange(self.B) if live is None else np.flatnonzero(live)
        ii = xp.index(idx)
        pend = self.pend.copy()
        self.V[ii, xp.index(self.R[idx] + pend[idx])] = X[ii]
        pend[idx] += 1
        self.pend = pend

    def _raw_block(self, idx: np.ndarray, src):
        """The raw rows of the members ``idx`` in ``src`` (the basis buffer, or a copy of it):
        ``(n, P, d)``, ``P = max pend``, zero rows past each member's (a view when they share the slots)."""
        if idx.size == self.B and self._uniform:
            return src[:, self.Rmax:self.Rmax + self.Pmax]
        R, pend = self.R[idx], self.pend[idx]
        P = int(pend.max())
        if _same(R) and _same(pend):
            r0 = int(R[0])
            return src[self._sel(idx), r0:r0 + P]
        out = self.xp.zeros((idx.size, P, self.d), self.dtype)
        which = np.repeat(np.arange(idx.size), pend)
        j = np.arange(which.size) - np.repeat(np.cumsum(pend) - pend, pend)
        xp = self.xp
        out[xp.index(which), xp.index(j)] = src[xp.index(idx[which]), xp.index(R[which] + j)]
        return out

    def _raw_rows(self):
        """The raw rows ``(B, P, d)`` (core dtype, zero rows past each member's), ``P = max pend``."""
        return self.xp.astype(self._raw_block(np.arange(self.B), self.V), self.cdtype)

    def take_raw(self):
        """Hand the raw rows over (``(B, P, d)`` working dtype, zero past each member's) and free their slots."""
        out = self.xp.copy(self._raw_block(np.arange(self.B), self.V))
        self._mask_rows(self.V, np.arange(self.B), self.R, self.basis_cap)
        self.pend = np.zeros(self.B, dtype=np.int64)
        return out

    # -- score and solve ---------------------------------------------------------------------------
    def project(self, arms):
        """``P = arms V^T`` ``(B, K, Rw)`` in the core dtype: the only ``K d R`` product of a round."""
        return self.xp.astype(arms @ self.V[:, :self.Rmax].mT, self.cdtype)

    def score(self, arms, arms_c, sq, P, top: np.ndarray | None = None, rel: float = 2.0 ** -10):
        """``(x^T theta_hat, x^T A_hat^-1 x, H p, p^T H p)`` of the arms ``(B, K, d)`` (working dtype; ``arms_c``
        the same in the core dtype, ``sq`` their ``||x||^2``, ``P`` from :meth:`project`): ``(B, K)``, ``(B, K)``,
        ``(B, K, Rw)`` and ``(B, K)`` in the core dtype, with

            x^T theta_hat    = x . theta_perp + p^T H bV,
            x^T A_hat^-1 x   = ||x - V^T p||^2 / c + p^T H p,          p = V x.

        (``H p`` and ``p^T H p`` of the played arm are what its append's bordered step needs: :class:`Expansion`.)

        The residual ``||x - V^T p||^2`` is taken as ``||x||^2 - ||p||^2`` except where the rounding of
        that difference, ``2 sqrt(R d) eps_work ||x||^2`` (``p`` comes from ``R`` dot products of length
        ``d`` in the working dtype), exceeds ``rel`` times the arm's whole ``c x^T A_hat^-1 x``: those
        arms' residuals are formed explicitly (one more ``K d R`` product, only in such rounds). A
        member whose basis spans ``R^d`` has no residual.

        ``top`` (host ``(B,)``, optional) bounds ``lambda_max(A_hat)`` (the estimator's ``reg + tr X^T X + alpha``),
        so every width is at least ``||x||^2 / top``. The computed width is within ``2 R d eps_work ||x||^2 / c``
        of the exact one (the worst case of the difference's rounding, ``R`` squares of ``p_i`` each within
        ``d eps_work ||x||``), so no arm needs the explicit residual while ``(k + 2 R d eps_work) top / c <= 1/2``,
        ``k`` the test's factor above; the test is then skipped."""
        xp = self.xp
        Rw = P.shape[-1]
        mean = xp.matvec(arms_c, self.tperp)
        if Rw == 0:
            return mean, sq * self.inv_c, P, sq * 0.0
        PH = P @ self.H[:, :Rw, :Rw]  # (H is symmetric: row k is H p_k)
        mean = mean + xp.matvec(PH, self.bV[:, :Rw])  # (new arrays here: cheaper than in-place on (B, K))
        quad = (sq - xp.vecdot(P, P)) * self.inv_c
        if self.Rmax >= self.d:  # members whose basis spans R^d have no residual
            quad *= xp.cast_like(self.R < self.d, quad)[:, None]
        pHp = xp.vecdot(PH, P)
        quad = quad + pHp
        # the rounding of the residual against rel of the width: (2 sqrt(R d) eps / rel) ||x||^2 / c > quad
        k = 2.0 * math.sqrt(Rw * self.d) * self.eps_w / rel
        if top is not None and (k + 2.0 * Rw * self.d * self.eps_w) * max((top / self.c).tolist()) <= 0.5:
            return mean, quad, PH, pHp
        cancels = sq * (k * self.inv_c) > quad
        if xp.any(cancels):
            if self.Rmax >= self.d:
                cancels &= xp.cast_like(self.R < self.d, quad)[:, None] > 0
            E = arms - xp.astype(P, self.dtype) @ self.V[:, :Rw]
            quad = xp.where(cancels, xp.norm_sq(E, self.cdtype) * self.inv_c + pHp, quad)
        return mean, quad, PH, pHp

    def solve(self, v):
        """``A_hat^-1 v = (v - V^T V v) / c + V^T H V v`` for ``v`` ``(B, d)`` (core dtype)."""
        xp = self.xp
        Rw = self.Rmax
        if Rw == 0:
            return v * self.inv_c
        Vc = self._basis_c()
        pv = (Vc @ v[:, :, None])[:, :, 0]
        perp = (v - (pv[:, None, :] @ Vc)[:, 0]) * xp.cast_like(self.R < self.d, v)[:, None]
        return perp * self.inv_c + ((self.H[:, :Rw, :Rw] @ pv[:, :, None]).mT @ Vc)[:, 0]

    # -- the row append ----------------------------------------------------------------------------
    def expand(self, X, xx, xx_h: np.ndarray, p=None, hp=None, q=None) -> Expansion:
        """The rows ``X`` ``(B, d)`` (working dtype; ``xx = ||x||^2`` ``(B,)`` core, ``xx_h`` on the host) in
        the basis extended by their residual directions; ``p = V x`` ``(B, Rw)`` when the caller has it
        (the played arm's row of the scoring's ``P``), with ``hp = H p`` and ``q = p^T H p`` (its rows of
        the scoring's, kept while ``p`` is). Changes nothing.

        Classical Gram-Schmidt against the basis; a second pass where the first kept less than half
        the squared norm; a new direction where the last pass kept at least half of what it was
        given (Kahan-Parlett: then the residual is orthogonal to the basis to working precision; if
        not, ``x`` lies in the span up to rounding), the residual exceeds the rounding of a residual of
        ``x`` in the span, ``8 sqrt((R + 1) d) eps ||x||`` (``R`` dot products of length ``d`` to form
        ``p``, ``R`` terms in each entry of ``V^T p``), and there is room (``R < basis capacity``)."""
        xp = self.xp
        Rw = self.Rmax
        norms = np.maximum(xx_h, _TINY)
        if Rw == 0:
            p = xp.zeros((self.B, 0), self.cdtype)
            e, nu2 = X, xx
            ratio = (xx_h > 0.0).astype(np.float64)  # all of a nonzero row is new
        else:
            Vw = self.V[:, :Rw]
            if p is None:
                p = xp.astype((Vw @ X[:, :, None])[:, :, 0], self.cdtype)
            e = X - (xp.astype(p, self.dtype)[:, None, :] @ Vw)[:, 0]
            nu2 = xp.norm_sq(e, self.cdtype)
            ratio = xp.host(nu2) / norms
            if min(ratio.tolist()) < 0.5:
                again = ratio < 0.5
                w = xp.cast_like(again, p)
                c2 = (Vw @ e[:, :, None])[:, :, 0] * xp.astype(w, self.dtype)[:, None]
                e = e - (c2[:, None, :] @ Vw)[:, 0]
                p = p + xp.astype(c2, self.cdtype)
                hp = q = None  # (p moved: the append forms H p afresh)
                nu2 = xp.norm_sq(e, self.cdtype)
                ratio2 = xp.host(nu2) / norms
                ratio = np.where(again & (ratio2 < 0.5 * ratio), 0.0, np.where(again, ratio2, ratio))
        # each member's own R: its decision must not depend on the other members of a batch
        new = ratio > (self.R + 1) * (64.0 * self.d * self.eps_w ** 2)
        if Rw >= self.basis_cap - 1:
            new &= self.R < self.basis_cap
        if np.count_nonzero(new) == new.size:
            nu = xp.sqrt(nu2)
            return Expansion(p, nu, e / xp.astype(nu, self.dtype)[:, None], new, xx, hp, q)
        w = xp.cast_like(new, nu2)
        nu = xp.sqrt(nu2) * w
        return Expansion(p, nu, e * xp.astype(w / (nu + (1.0 - w)), self.dtype)[:, None], new, xx, hp, q)

    def append(self, ex: Expansion, r, live: np.ndarray | None = None, fold: bool = True) -> None:
        """Commit the expanded rows ``ex`` with responses ``r`` (a float, or core ``(B,)``) to the members
        where ``live`` (host bools; all when None): the new basis vectors and coordinate rows, ``b``
        and (``fold``) ``H`` by the bordered Sherman-Morrison step of the module docstring; a member
        whose step amplified rounding by more than :data:`AMPLIFICATION_LIMIT` (``1 + q`` large: the row
        carries far more mass in a direction than the sketch held there) is refactored from ``C``
        instead (:meth:`refactor`). ``fold=False`` leaves ``H`` stale for a caller that refactors next
        (a shrink)."""
        xp = self.xp
        new, p, nu, hp, q = ex.new, ex.p, ex.nu, ex.hp, ex.q
        if live is not None:
            new = new & live
            w = xp.cast_like(live, p)
            p, nu = p * w[:, None], nu * w
            if hp is not None:
                hp, q = hp * w[:, None], q * w
            r = r * w
        Rw = p.shape[1]
        R, N = self.R, self.N
        fresh = np.count_nonzero(new)
        # one slot for every member's row and new vector, or one each
        shared = live is None and self._uniform and _same(N) and fresh in (0, self.B)
        if shared:
            n0, r0 = int(N[0]), int(R[0])
            self.C[:, n0, :Rw] = p
        else:
            idx = np.arange(self.B) if live is None else np.flatnonzero(live)
            ii = xp.index(idx)
            self.C[ii, xp.index(N[idx]), :Rw] = p[ii]
        if fresh:
            v = ex.v
            vc = xp.astype(v, self.cdtype)
            # b_perp's share of v moves to bV: theta_perp loses (v . theta_perp) v, bV[R] = c (v . theta_perp) + r nu
            beta = xp.vecdot(vc, self.tperp)
            self.tperp -= beta[:, None] * vc
            slot_b = beta * self.c_arr + r * nu
            if shared:
                self.V[:, r0] = v
                self.C[:, n0, r0] = nu
                self.bV[:, r0] = slot_b
            else:
                wi, ri = xp.index(np.flatnonzero(new)), xp.index(R[new])
                self.V[wi, ri] = v[wi]
                self.C[wi, xp.index(N[new]), ri] = nu[wi]
                self.bV[wi, ri] = slot_b[wi]
        self.bV[:, :Rw] += (r if isinstance(r, float) else r[:, None]) * p
        if self._any_diagonal:
            self._set_diagonal(np.arange(self.B) if live is None else np.flatnonzero(live), False)
        stale = self._fold(p, nu, new, R, shared, hp, q) if fold else _EMPTY
        if shared and fresh:  # every member gained a basis vector in the shared slot: still uniform
            self.R = R + 1
            self.Rmax += 1
        else:
            self._set_R(R + new)
        self.N = N + (1 if live is None else live)
        if fresh and self.Rmax >= self.d:
            self._no_perp_once_spanning(np.flatnonzero(new & (self.R >= self.d)))
        if stale.size:
            self.refactor(stale)

    def _no_perp_once_spanning(self, idx: np.ndarray) -> None:
        """``theta_perp = 0`` for the members ``idx`` whose basis spans ``R^d``: nothing lies outside it, and
        what rounding left there would reach the mean as ``x . theta_perp``."""
        if idx.size:
            self.tperp[self.xp.index(idx)] = 0.0

    def _fold(self, p, nu, new: np.ndarray, R: np.ndarray, shared: bool, hp=None, q=None) -> np.ndarray:
        """``H <- ([[M, 0], [0, 0]] + [p, nu] [p, nu]^T + c I)^-1`` (bordered where ``new``, at slot ``R_i``);
        returns the members whose step amplified rounding past :data:`AMPLIFICATION_LIMIT`. ``H`` is updated
        whole (its padding is zero, and so stays): one BLAS rank-1 update per member. ``hp = H p`` and
        ``q = p^T H p`` are formed here unless given."""
        xp = self.xp
        w = p.shape[1]
        if hp is None:
            pp = self._pp
            pp[:, :w] = p  # (entries past it are stale but meet H's zero rows and columns)
            h = xp.matvec(self.H, pp)
            q1 = 1.0 + xp.vecdot(pp, h)
        else:
            h = self._pp  # H p over the whole width: zero past the basis (H's padding)
            h[:, :w] = hp
            h[:, w:] = 0.0
            q1 = 1.0 + q
        den = self.c_arr * q1 + nu * nu
        # The bordered step as one rank-1 update of the padded H: with u = [h, nu / c] (h is 0 at the new slot,
        # H's padding), H - (c / den) u u^T has the block H - (c / den) h h^T and the border -(nu / den) h; its
        # corner, 1/c - nu^2 / (c den) = (1 + q) / den, is written directly (the difference would cancel).
        if np.count_nonzero(new):
            if shared:
                r0 = int(R[0])
                h[:, r0] = nu * self.inv_c[:, 0]
                xp.rank1_update_(self.H, h, -self.c_arr / den)
                self.H[:, r0, r0] = q1 / den
            else:
                wi, ri = xp.index(np.flatnonzero(new)), xp.index(R[new])
                h[wi, ri] = (nu * self.inv_c[:, 0])[wi]
                xp.rank1_update_(self.H, h, -self.c_arr / den)
                self.H[wi, ri, ri] = (q1 / den)[wi]
        else:
            xp.rank1_update_(self.H, h, -self.c_arr / den)
        q1_h = xp.host(q1)
        return np.flatnonzero(q1_h > AMPLIFICATION_LIMIT) if max(q1_h.tolist()) > AMPLIFICATION_LIMIT else _EMPTY

    # -- factorizations ----------------------------------------------------------------------------
    def _set_diagonal(self, idx: np.ndarray, value: bool) -> None:
        self._diagonal[idx] = value
        self._any_diagonal = bool(np.count_nonzero(self._diagonal))

    def refactor(self, idx: np.ndarray | None = None) -> None:
        """``H = (C^T C + c I)^-1`` of the members ``idx`` (all when None) from their coordinates, by
        Cholesky (identity on the padding, then zeroed); entrywise, ``H = diag(1 / (s^2 + c))``, where every
        member's rows are ``diag(s)`` (after a shrink with nothing frozen)."""
        xp = self.xp
        idx = np.arange(self.B) if idx is None else np.asarray(idx)
        if idx.size == 0:
            return
        Rw, Nw = int(self.R[idx].max()), int(self.N[idx].max())
        ii = self._sel(idx)
        C = self.C[ii, :Nw, :Rw]
        real = xp.cast_like((np.arange(Rw)[None, :] < self.R[idx][:, None]), C)  # (n, Rw)
        c = self.c_arr[ii]
        if np.count_nonzero(self._diagonal[idx]) == idx.size and Nw == Rw:
            s = C[:, xp.arange(Rw), xp.arange(Rw)]  # (n, Rw): the rows' diagonal
            self.H[ii] = 0.0
            self.H[ii, :Rw, :Rw] = (real / (s * s + c[:, None]))[:, :, None] * xp.eye(Rw, self.cdtype)
            return
        A = C.mT @ C + (c[:, None] * real + (1.0 - real))[:, :, None] * xp.eye(Rw, self.cdtype)
        self.H[ii] = 0.0
        self.H[ii, :Rw, :Rw] = xp.inv_spd(A) * (real[:, :, None] * real[:, None, :])

    # -- the Frequent Directions shrink of a range of rows -----------------------------------------
    def _range(self, idx: np.ndarray, start: np.ndarray, nr: int, Rw: int):
        """Rows ``[start_i, start_i + nr)`` of the members ``idx``: ``(n, nr, Rw)`` coordinates."""
        xp = self.xp
        ii = self._sel(idx)
        if _same(start):
            s0 = int(start[0])
            return self.C[ii, s0:s0 + nr, :Rw]
        rows = xp.index(start[:, None] + np.arange(nr)[None, :])
        return self.C[ii[:, None], rows, :Rw]

    def _sel(self, idx: np.ndarray):
        """The members ``idx`` as an index: a plain slice when they are all members in order (views, no
        copies), else the backend's index array."""
        return slice(None) if idx.size == self.B and (idx.size == 1 or bool((np.diff(idx) == 1).all())) \
            else self.xp.index(idx)

    def _place(self, dst, idx: np.ndarray, offset: np.ndarray, src, count: np.ndarray) -> None:
        """``dst[idx_i, offset_i + j, :w] = src[i, j]`` for ``j < count_i`` (rows along axis 1; ``w`` the
        width of ``src``'s rows, when it has any)."""
        xp = self.xp
        count = np.asarray(count, dtype=np.int64)
        if count.sum() == 0:
            return
        offset = np.asarray(offset)
        if _same(offset) and _same(count):  # one block for every member: basic slicing
            o, c = int(offset[0]), int(count[0])
            sel = self._sel(idx)
            if src.ndim == 3:
                dst[sel, o:o + c, :src.shape[2]] = src[:, :c]
            else:
                dst[sel, o:o + c] = src[:, :c]
            return
        which = np.repeat(np.arange(idx.size), count)
        j = np.arange(which.size) - np.repeat(np.cumsum(count) - count, count)
        rows, cols = xp.index(idx[which]), xp.index(offset[which] + j)
        vals = src[xp.index(which), xp.index(j)]
        if src.ndim == 3:
            dst[rows, cols, :src.shape[2]] = vals
        else:
            dst[rows, cols] = vals

    def _mask_rows(self, a, idx: np.ndarray, keep_below: np.ndarray, width: int) -> None:
        """Zero ``a[idx_i, j]`` for ``keep_below_i <= j < width`` (rows along axis 1)."""
        xp = self.xp
        if width == 0:
            return
        keep_below = np.asarray(keep_below)
        if _same(keep_below):
            a[self._sel(idx), int(keep_below[0]):width] = 0.0
            return
        ii = xp.index(idx)
        m = xp.cast_like(np.arange(width)[None, :] < keep_below[:, None], a)
        shape = (idx.size, width) + (1,) * (a.ndim - 2)
        a[ii, :width] = a[ii, :width] * m.reshape(shape)

    def range_eigvals(self, idx: np.ndarray, start: np.ndarray, ex: Expansion | None = None):
        """Eigenvalues ``(n, m)`` (descending: the squared singular values) of the Gram of the rows
        ``[start_i, N_i)`` of the members ``idx`` (all with the same count), with the expanded row ``ex``
        appended when given (a look-ahead: the state is unchanged), and their :func:`rounding`."""
        xp = self.xp
        nr = int(self.N[idx[0]] - start[0])
        Rw = int(self.R[idx].max())
        Cr = self._range(idx, start, nr, Rw)
        if ex is not None:
            ii = xp.index(idx)
            Rx = Rw + 1 if Rw < self.d else Rw
            row = xp.zeros((idx.size, 1, Rx), self.cdtype)
            w = min(Rw, ex.p.shape[1])  # (the expansion's width is every member's; beyond the group's R it is 0)
            row[:, 0, :w] = ex.p[ii, :w]
            if ex.new[idx].any():
                w = np.flatnonzero(ex.new[idx])
                row[xp.index(w), 0, xp.index(self.R[idx][w])] = ex.nu[ii][xp.index(w)]
            pad = xp.zeros((idx.size, nr, Rx), self.cdtype)
            pad[:, :, :Rw] = Cr
            Cr = xp.concat(pad, row)
            nr, Rw = nr + 1, Rx
        lam = xp.maximum(xp.eigvalsh_desc(Cr.mT @ Cr), 0.0)
        return lam, rounding(xp, self.eps_w, self.eps_c, nr + Rw, lam)

    def shrink(self, idx: np.ndarray, start: np.ndarray, l: int, Rf: np.ndarray) -> FDPlan:
        """The Frequent Directions shrink (Wen et al. (2025), Alg. 2 lines 4-7; :func:`fd_shrink`) of the
        rows ``[start_i, N_i)`` of the members ``idx`` (all with the same number of rows there and the
        same sketch size ``l``). Rows before ``start_i`` (Dyadic Block Sketching's frozen blocks) are
        kept as they are; they live on the first ``Rf_i`` basis vectors, which stay too.

        With the range's coordinates ``C_r = U diag(s) W^T`` (``W`` from the eigendecomposition of
        ``C_r^T C_r = W diag(s^2) W^T``, ``R x R`` numbers, not ``rows x d``), the range becomes
        ``diag(sqrt(s_i^2 - delta)) W_k^T`` in the old basis. The basis
        keeps the old frozen vectors and an orthonormal basis ``Q`` of the new rows' part beyond them,
        rotated into ``d`` dimensions as ``Q V`` (``W_k`` itself when nothing is frozen, since ``W``'s rows
        are orthonormal). ``bV``'s share of the dropped directions moves to ``b_perp``. ``H`` is left zero: the
        caller refactors it (:meth:`refactor`), after raising the ridge for RFD."""
        xp = self.xp
        n = idx.size
        ii = self._sel(idx)
        nr = int(self.N[idx[0]] - start[0])
        Rw = int(self.R[idx].max())
        Rf = np.asarray(Rf, dtype=np.int64)
        Cr = self._range(idx, start, nr, Rw)
        lam, W = xp.eigh_desc(Cr.mT @ Cr)
        lam = xp.maximum(lam, 0.0)
        plan = fd_shrink(xp, lam, l, rounding(xp, self.eps_w, self.eps_c, nr + Rw, lam))
        Wh = W.mT
        k, kept = plan.keep.shape[1], plan.kept
        alive = xp.asarray(np.arange(k)[None, :] < kept[:, None], self.cdtype)
        Wk = Wh[:, :k] * alive[:, :, None]  # the kept directions, orthonormal rows (zero rows past kept)
        sk = xp.sqrt(plan.keep)  # (n, k): the new rows' singular values
        Y = sk[:, :, None] * Wk  # the range's new rows in the old basis
        frozen_any = bool(Rf.any())
        if frozen_any:  # the new rows' part beyond the frozen basis: an orthonormal basis of it
            beyond = xp.asarray(np.arange(Rw)[None, :] >= Rf[:, None], self.cdtype)
            _, sr, Q = xp.svd(Wk * beyond[:, None, :])  # its rows are orthonormal: s <= 1
            nq = (xp.host(sr) > (self.eps_w + self.eps_c) * math.sqrt(k + Rw)).sum(axis=1).astype(np.int64)
            # a right singular vector of a small singular value s carries eps / s on the frozen columns,
            # which are exactly zero in the rows it spans: zero them and orthonormalize again (Cholesky of
            # a Gram within eps / s of I)
            keep = xp.asarray(np.arange(Q.shape[1])[None, :] < nq[:, None], self.cdtype)
            Q = Q * keep[:, :, None] * beyond[:, None, :]
            G = Q @ Q.mT + (1.0 - keep)[:, :, None] * xp.eye(Q.shape[1], self.cdtype)
            Q = xp.solve_lower(xp.cholesky(G), Q)
        else:
            Q, nq = Wk, kept
        Vold = self.V[ii, :Rw]
        bVold = self.bV[ii, :Rw]
        newV = xp.astype(Q, self.dtype) @ Vold  # (n, kq, d): orthonormal, orthogonal to the frozen basis
        qb = (Q @ bVold[:, :, None])[:, :, 0]  # bV's coordinates on Q
        frozen = xp.asarray(np.arange(Rw)[None, :] < Rf[:, None], self.cdtype)
        lost = bVold * (1.0 - frozen) - (qb[:, None, :] @ Q)[:, 0]  # bV's part in dropped directions
        self.tperp[ii] = self.tperp[ii] + (lost[:, None, :] @ xp.astype(Vold, self.cdtype))[:, 0] * self.inv_c[ii]
        # write back: basis [frozen | Q V], the range's rows, bV
        self._mask_rows(self.V, idx, Rf, Rw)
        self._place(self.V, idx, Rf, newV, nq)
        self._mask_rows(self.bV, idx, Rf, Rw)
        self._place(self.bV, idx, Rf, qb, nq)
        Nw = int(self.N[idx].max())
        self._mask_rows(self.C, idx, start, Nw)
        if frozen_any:
            coords_new = Y @ Q.mT  # (n, k, kq): the new rows on Q
            coords_frozen = Y * frozen[:, None, :]  # (n, k, Rw): on the frozen vectors
            shifted = xp.zeros((n, Rw, k), self.cdtype)  # the new coordinates as columns Rf_i + j
            self._place(shifted, np.arange(n), Rf, coords_new.mT, nq)
            self._place(self.C, idx, start, coords_frozen + shifted.mT, kept)
        else:  # the basis is W_k V: the new rows are diag(sqrt(s^2 - delta)) on it, FD's rows themselves
            self._place(self.C, idx, start, sk[:, :, None] * xp.eye(k, self.cdtype), kept)
        self._set_diagonal(idx, not frozen_any and not np.asarray(start).any())
        self.N[idx] = start + kept
        R = self.R.copy()
        R[idx] = Rf + nq
        self._set_R(R)
        # theta_perp keeps b's part outside the new span only: what rounding left inside it moves to bV
        Vn = xp.astype(self.V[ii, :Rw], self.cdtype)
        inside = (Vn @ self.tperp[ii][:, :, None])[:, :, 0]
        self.tperp[ii] = self.tperp[ii] - (inside[:, None, :] @ Vn)[:, 0]
        self.bV[ii, :Rw] = self.bV[ii, :Rw] + inside * self.c_arr[ii][:, None]
        self._no_perp_once_spanning(idx[self.R[idx] >= self.d])
        self.H[ii] = 0.0  # stale past the new basis; the caller refactors (with a new ridge, for RFD)
        return plan

    def held_rows(self, idx: np.ndarray):
        """The members ``idx``' rows as rows of ``d`` numbers, ``C V`` then the raw ones, ``(n, N + pend, d)`` in
        the core dtype (every member of ``idx`` holds as many)."""
        xp = self.xp
        everyone = idx.size == self.B
        raw = xp.astype(self._raw_block(idx, self.V), self.cdtype) \
            if (self.Pmax if everyone else self.pend[idx].any()) else None
        if not (self.Rmax if everyone else self.N[idx].any()):
            return raw
        ii = self._sel(idx)
        Rw, Nw = int(self.R[idx].max()), int(self.N[idx].max())
        held = self.C[ii, :Nw, :Rw] @ xp.astype(self.V[ii, :Rw], self.cdtype)
        return held if raw is None else xp.concat(held, raw, axis=1)

    def row_eigvals(self, idx: np.ndarray, x=None):
        """:meth:`range_eigvals` of all rows of the members ``idx`` from their row-space Gram (rows of ``d``
        numbers: raw rows need no basis), with the rows ``x`` ``(n, d)`` appended when given."""
        xp = self.xp
        S = self.held_rows(idx)
        if x is not None:
            S = xp.concat(S, xp.astype(x, self.cdtype)[:, None, :], axis=1)
        lam = xp.maximum(xp.eigvalsh_desc(S @ S.mT), 0.0)
        return lam, rounding(xp, self.eps_w, self.eps_c, S.shape[1] + self.d, lam)

    def shrink_rows(self, idx: np.ndarray, l: int) -> FDPlan:
        """The Frequent Directions shrink (:func:`fd_shrink`) of all rows of the members ``idx`` (raw ones
        included) as Liberty's and Ghashami et al.'s sketch does it, for members without responses
        (``b = 0``): from the rows' own ``n x n`` Gram ``S S^T = U diag(s^2) U^T``, the ``k`` new rows
        ``diag(sqrt(w)) U_k^T S`` with ``w = (s^2 - delta) / s^2`` in [0, 1] (so ``S_new^T S_new <= S^T S``
        however ``U`` is rounded; they are orthogonal to the rounding of ``U``). They are kept raw: the
        members hold no basis after it (``N = R = 0``) until a query settles them."""
        xp = self.xp
        ii = self._sel(idx)
        S = self.held_rows(idx)
        lam, U = xp.eigh_desc(S @ S.mT)
        lam = xp.maximum(lam, 0.0)
        plan = fd_shrink(xp, lam, l, rounding(xp, self.eps_w, self.eps_c, S.shape[1] + self.d, lam))
        k = plan.keep.shape[1]  # (at most min(l - 1, rows) directions; kept <= basis_cap: a rank <= d)
        w = plan.keep / xp.maximum(lam[:, :k], _TINY)
        S_new = (U[:, :, :k].mT * xp.sqrt(w)[:, :, None]) @ S  # (n, k, d); zero rows past each member's kept
        k = min(k, self.basis_cap)
        self._set_diagonal(idx, False)
        if np.count_nonzero(self.N[idx]):  # (rows held in coordinates: the basis goes; the caller refactors nothing)
            self.C[ii] = 0.0
            self.H[ii] = 0.0
            self.N[idx] = 0
            R = self.R.copy()
            R[idx] = 0
            self._set_R(R)
        self.V[ii, :k] = xp.astype(S_new[:, :k], self.dtype)
        self.V[ii, k:] = 0.0
        pend = self.pend.copy()
        pend[idx] = plan.kept
        self.pend = pend
        return plan

    def compress(self, idx: np.ndarray, start: np.ndarray) -> None:
        """Replace the rows ``[start_i, N_i)`` of the members ``idx`` (more rows than basis vectors) by the
        ``R_i`` rows of their QR factor: the same ``C^T C``, hence the same sketch, in fewer rows."""
        xp = self.xp
        nr = int(self.N[idx[0]] - start[0])
        Rw = int(self.R[idx].max())
        self._set_diagonal(idx, False)
        _, Rq = xp.qr(self._range(idx, start, nr, Rw))
        Nw = int(self.N[idx].max())
        self._mask_rows(self.C, idx, start, Nw)
        keep = np.minimum(nr, self.R[idx])
        self._place(self.C, idx, start, Rq, keep)
        self.N[idx] = start + keep
