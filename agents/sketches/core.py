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

* ``b = b_perp + V^T bV`` split into its part outside the span and its coordinates, and
  ``t = H bV``, so that ``theta_hat = A_hat^-1 b = b_perp / c + V^T t``.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .backend import Backend

__all__ = ["SketchCore", "Expansion", "fd_shrink", "FDPlan", "Rounding", "rounding"]


def _same(a: np.ndarray) -> bool:
    """Whether every entry of the host array ``a`` is equal (the members share a slot)."""
    return a.size == 1 or bool(a.min() == a.max())

Array = Any  # a numpy array or a torch tensor, as the backend says


@dataclass(frozen=True)
class Rounding:
    """The rounding level of a range's eigenvalues ``lambda_i = s_i^2`` (``(n,)`` each, backend arrays):
    ``coord`` bounds ``||delta C_r||_2``, the rounding of the coordinates themselves, and ``gram`` that of
    forming and decomposing their Gram (:func:`rounding`)."""

    coord: Array
    gram: Array


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
    frob2 = lam.sum(axis=1)
    coord = (eps_work + eps_core) * math.sqrt(n) * xp.sqrt(frob2)
    return Rounding(coord, n * eps_core * lam[:, 0])


@dataclass(frozen=True)
class FDPlan:
    """Frequent Directions' shrink of one group of ranges (Alg. 2 lines 5-6), per member:
    ``delta`` the shrink value ``(n,)``, ``keep`` the kept squared singular values ``(n, k)`` (0
    where dropped), ``kept`` how many survive ``(n,)`` host ints."""

    delta: Array
    keep: Array
    kept: np.ndarray


def fd_shrink(xp: Backend, lam, l: int, noise: Rounding) -> FDPlan:
    """Frequent Directions' shrink of rows whose squared singular values are ``lam`` (``(n, m)``,
    descending; fewer than ``l`` values count as zeros beyond): the shrink value ``delta = lambda_l``
    (Wen et al. (2025), Alg. 2 line 5), and the ``k = min(l - 1, m)`` leading directions keep
    ``lambda_i - delta`` (line 6).

    The rank cut follows from FD's analysis and the rounding (:func:`rounding`): ``lambda_l`` below
    the rounding of a zero eigenvalue, ``||delta C||^2 + n eps ||M||``, cannot be told from 0, so the
    shrink value is 0 (FD of size l is exact on rank < l, and a low-rank stream reports no
    shrinkage); a kept ``lambda_i - delta`` below the rounding of that difference, ``4 s_i ||delta C||
    + 2 n eps ||M||``, is a tie of ``lambda_i`` with ``lambda_l`` and is dropped. Either way the mass left
    unaccounted is at the rounding level of the rows: FD's bounds hold up to it."""
    m = lam.shape[-1]
    zero_level = noise.coord * noise.coord + noise.gram
    if m >= l:
        ll = lam[:, l - 1]
        delta = ll * xp.cast_like(xp.host(ll > zero_level), ll)
    else:
        delta = 0.0 * zero_level
    k = min(l - 1, m)
    lead = lam[:, :k]
    keep = lead - delta[:, None]
    alive = keep > 4.0 * noise.coord[:, None] * xp.sqrt(xp.maximum(lead, 0.0)) + 2.0 * noise.gram[:, None]
    keep = keep * xp.cast_like(xp.host(alive), keep)
    return FDPlan(delta, keep, xp.host(alive).sum(axis=1).astype(np.int64))


@dataclass(frozen=True)
class Expansion:
    """A row's coordinates in the basis extended by its residual direction (:meth:`SketchCore.expand`):
    ``p`` ``(B, Rw)`` core, ``nu`` ``(B,)`` core (``||e||``, 0 where no new direction), ``v`` ``(B, d)``
    working (the new unit vector, 0 where none), ``e`` ``(B, d)`` core (the residual kept), ``new``
    ``(B,)`` host bools, ``xx`` ``(B,)`` core ``||x||^2``."""

    p: Array
    nu: Array
    v: Array
    e: Array
    new: np.ndarray
    xx: Array


class SketchCore:
    """The basis state of ``B`` sketches (see the module docstring). Host bookkeeping (``N``, ``R``,
    ``c``) is numpy; the arrays are the backend's.

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
        self.N = np.zeros(B, dtype=np.int64)  # rows held
        self.R = np.zeros(B, dtype=np.int64)  # basis size
        self.c = np.broadcast_to(np.asarray(c, dtype=np.float64), (B,)).copy()
        self.c_arr = xp.asarray(self.c, cdtype)
        self.V = xp.zeros((B, 0, d), dtype)
        self.C = xp.zeros((B, 0, 0), cdtype)
        self.H = xp.zeros((B, 0, 0), cdtype)
        self.bV = xp.zeros((B, 0), cdtype)
        self.t = xp.zeros((B, 0), cdtype)
        self.bperp = xp.zeros((B, d), cdtype)
        self.members = xp.arange(B)
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
        t = xp.zeros((B, basis), self.cdtype)
        V[:, :r0], C[:, :n0, :r0], H[:, :r0, :r0], bV[:, :r0], t[:, :r0] = self.V, self.C, self.H, self.bV, self.t
        self.V, self.C, self.H, self.bV, self.t = V, C, H, bV, t

    def held_bytes(self) -> int:
        xp = self.xp
        arrays = (self.V, self.C, self.H, self.bV, self.t, self.bperp)
        return int(sum(a.nbytes for a in arrays) if xp.is_numpy else sum(a.element_size() * a.nelement() for a in arrays))

    @staticmethod
    def layout_bytes(d: int, rows, basis, work_bytes: int, core_bytes: int):
        """Bytes one member holds with capacities ``rows`` x ``basis``: the basis (``basis x d``, working
        dtype); in the core dtype its coordinates (``rows x basis``), ``H`` (``basis^2``), ``bV`` and ``t``
        (``2 basis``) and ``b_perp`` (``d``). Accepts numpy int arrays."""
        return work_bytes * basis * d + core_bytes * (rows * basis + basis * basis + 2 * basis + d)

    def set_ridge(self, idx: np.ndarray, c: np.ndarray) -> None:
        """New ridges ``c`` for the members ``idx`` (the caller refactors their ``H`` next)."""
        self.c[idx] = c
        self.c_arr = self.xp.asarray(self.c, self.cdtype)

    # -- reading the state -------------------------------------------------------------------------
    def b(self):
        """``b = b_perp + V^T bV`` ``(B, d)``, core dtype."""
        Rw = int(self.R.max())
        if Rw == 0:
            return self.xp.copy(self.bperp)
        return self.bperp + (self.bV[:, None, :Rw] @ self.xp.astype(self.V[:, :Rw], self.cdtype))[:, 0]

    def theta(self):
        """``A_hat^-1 b = b_perp / c + V^T t`` ``(B, d)``, core dtype."""
        out = self.bperp / self.c_arr[:, None]
        Rw = int(self.R.max())
        if Rw:
            out = out + (self.t[:, None, :Rw] @ self.xp.astype(self.V[:, :Rw], self.cdtype))[:, 0]
        return out

    def gram(self):
        """``M = C^T C`` ``(B, Rw, Rw)`` over the rows held (core dtype)."""
        Rw, Nw = int(self.R.max()), int(self.N.max())
        Cw = self.C[:, :Nw, :Rw]
        return Cw.mT @ Cw

    def logdet(self) -> np.ndarray:
        """``log det(M + c I) - R log c = -log det(H) - R log c`` per member (host float64; O(R^3))."""
        Rw = int(self.R.max())
        real = np.arange(Rw)[None, :] < self.R[:, None]
        Hw = self.H[:, :Rw, :Rw] + self.xp.cast_like(~real, self.H)[:, :, None] * self.xp.eye(Rw, self.cdtype)
        return -self.xp.logdet(Hw) - self.R * np.log(self.c)

    def frob2(self) -> np.ndarray:
        """``||C||_F^2 = tr(S^T S)`` per member (host float64)."""
        Cf = self.C.reshape(self.B, -1)
        return self.xp.host(self.xp.vecdot(Cf, Cf)).astype(np.float64)

    def covariance(self):
        """``S^T S = V^T M V`` ``(B, d, d)`` in the core dtype."""
        Rw = int(self.R.max())
        Vc = self.xp.astype(self.V[:, :Rw], self.cdtype)
        return Vc.mT @ self.gram() @ Vc

    def rows(self, i: int):
        """Member ``i``'s rows ``S = C V`` ``(N_i, d)`` (core dtype; diagnostics)."""
        n, r = int(self.N[i]), int(self.R[i])
        return self.C[i, :n, :r] @ self.xp.astype(self.V[i, :r], self.cdtype)

    # -- score and solve ---------------------------------------------------------------------------
    def project(self, arms):
        """``P = arms V^T`` ``(B, K, Rw)`` in the core dtype: the only ``K d R`` product of a round."""
        Rw = int(self.R.max())
        return self.xp.astype(arms @ self.V[:, :Rw].mT, self.cdtype)

    def score(self, arms, arms_c, sq, P, rel: float = 2.0 ** -10):
        """``(x^T theta_hat, x^T A_hat^-1 x)`` ``(B, K)`` (core dtype) for the arms ``(B, K, d)`` (working
        dtype; ``arms_c`` the same in the core dtype, ``sq`` their ``||x||^2``, ``P`` from :meth:`project`).

        The residual ``||x - V^T p||^2`` is taken as ``||x||^2 - ||p||^2`` except where the rounding of
        that difference, ``2 sqrt(R d) eps_work ||x||^2`` (``p`` comes from ``R`` dot products of length
        ``d`` in the working dtype), exceeds ``rel`` times the arm's whole ``c x^T A_hat^-1 x``: those
        arms' residuals are formed explicitly (one more ``K d R`` product, only in such rounds). A
        member whose basis spans ``R^d`` has no residual."""
        xp = self.xp
        c = self.c_arr[:, None]
        Rw = P.shape[-1]
        mean = (arms_c @ (self.bperp / self.c_arr[:, None])[:, :, None])[:, :, 0]
        if Rw == 0:
            return mean, sq / c
        core = xp.vecdot(P @ self.H[:, :Rw, :Rw], P)
        mean = mean + (P @ self.t[:, :Rw, None])[:, :, 0]
        res = sq - xp.vecdot(P, P)
        open_ = self.R < self.d
        slack = 2.0 * math.sqrt(Rw * self.d) * self.eps_w / rel
        cancels = slack * sq > res + c * core
        if not open_.all():
            cancels = cancels & (xp.asarray(open_, self.cdtype)[:, None] > 0)
            res = res * xp.asarray(open_, self.cdtype)[:, None]
        if xp.any(cancels):
            E = arms - xp.astype(P, self.dtype) @ self.V[:, :Rw]
            res = xp.where(cancels, xp.norm_sq(E, self.cdtype), res)
        return mean, xp.maximum(res, 0.0) / c + core

    def solve(self, v):
        """``A_hat^-1 v = (v - V^T V v) / c + V^T H V v`` for ``v`` ``(B, d)`` (core dtype)."""
        xp = self.xp
        Rw = int(self.R.max())
        if Rw == 0:
            return v / self.c_arr[:, None]
        Vc = xp.astype(self.V[:, :Rw], self.cdtype)
        pv = (Vc @ v[:, :, None])[:, :, 0]
        perp = (v - (pv[:, None, :] @ Vc)[:, 0]) * xp.asarray(self.R < self.d, self.cdtype)[:, None]
        return perp / self.c_arr[:, None] + ((self.H[:, :Rw, :Rw] @ pv[:, :, None]).mT @ Vc)[:, 0]

    # -- the row append ----------------------------------------------------------------------------
    def expand(self, X, xx, p=None) -> Expansion:
        """The rows ``X`` ``(B, d)`` (working dtype; ``xx = ||x||^2`` ``(B,)`` core) in the basis extended by
        their residual directions; ``p = V x`` ``(B, Rw)`` when the caller has it (the played arm's row
        of the scoring's ``P``). Changes nothing.

        Classical Gram-Schmidt against the basis; a second pass where the first kept less than half
        the squared norm; a new direction where the last pass kept at least half of what it was
        given (Kahan-Parlett: then the residual is orthogonal to the basis to working precision; if
        not, ``x`` lies in the span up to rounding), the residual exceeds the rounding of a residual of
        ``x`` in the span, ``8 sqrt((R + 1) d) eps ||x||`` (``R`` dot products of length ``d`` to form
        ``p``, ``R`` terms in each entry of ``V^T p``), and there is room (``R < basis capacity``)."""
        xp = self.xp
        Rw = int(self.R.max())
        if Rw == 0:
            p = xp.zeros((self.B, 0), self.cdtype)
            e, nu2 = X, xx
            accept = np.ones(self.B, dtype=bool)
            ratio = (xp.host(xx) > 0.0).astype(np.float64)  # all of a nonzero row is new
        else:
            Vw = self.V[:, :Rw]
            if p is None:
                p = xp.astype((Vw @ X[:, :, None])[:, :, 0], self.cdtype)
            e = X - (xp.astype(p, self.dtype)[:, None, :] @ Vw)[:, 0]
            nu2 = xp.norm_sq(e, self.cdtype)
            ratio = xp.host(nu2) / np.maximum(xp.host(xx), np.finfo(np.float64).tiny)
            again = ratio < 0.5
            accept = ~again
            if np.count_nonzero(again):
                w = xp.cast_like(again, p)
                c2 = (Vw @ e[:, :, None])[:, :, 0] * xp.astype(w, self.dtype)[:, None]
                e = e - (c2[:, None, :] @ Vw)[:, 0]
                p = p + xp.astype(c2, self.cdtype)
                nu2b = xp.norm_sq(e, self.cdtype)
                ratio2 = xp.host(nu2b) / np.maximum(xp.host(xx), np.finfo(np.float64).tiny)
                accept = accept | (ratio2 >= 0.5 * ratio)
                ratio = np.where(again, ratio2, ratio)
                nu2 = nu2b
        new = accept & (ratio > 64.0 * (self.R + 1) * self.d * self.eps_w ** 2) & (self.R < self.basis_cap)
        if np.count_nonzero(new) == self.B:
            nu = xp.sqrt(nu2)
            return Expansion(p, nu, e * xp.astype(1.0 / nu, self.dtype)[:, None], xp.astype(e, self.cdtype), new, xx)
        w = xp.cast_like(new, nu2)
        nu = xp.sqrt(nu2) * w
        inv = w / (nu + (1.0 - w))
        return Expansion(p, nu, e * xp.astype(inv, self.dtype)[:, None], xp.astype(e, self.cdtype) * w[:, None], new, xx)

    def append(self, ex: Expansion, r, live: np.ndarray | None = None, fold: bool = True) -> None:
        """Commit the expanded rows ``ex`` with responses ``r`` (a float, or core ``(B,)``) to the members
        where ``live`` (host bools; all when None): the new basis vectors and coordinate rows, ``b``
        and (``fold``) ``H`` and ``t`` by the bordered Sherman-Morrison step of the module docstring;
        a member whose step would amplify rounding by more than ``1 / sqrt(eps_core)`` (``1 + q``
        large: the row carries far more mass in a direction than the sketch holds there) is
        refactored from ``C`` instead (:meth:`refactor`). ``fold=False`` leaves ``H`` and ``t`` stale for
        a caller that refactors next (a shrink)."""
        xp = self.xp
        new, p, nu = ex.new, ex.p, ex.nu
        everyone = live is None or np.count_nonzero(live) == self.B
        if not everyone:
            new = new & live
            w = xp.cast_like(live, p)
            p, nu = p * w[:, None], nu * w
            r = r * w
        Rw = p.shape[1]
        R, N = self.R, self.N
        # the slots the rows and the new basis vectors go to: one shared slot, or one per member
        shared = everyone and _same(R) and _same(N)
        rc = r if isinstance(r, float) else r[:, None]
        if shared:
            n0, r0 = int(N[0]), int(R[0])
            self.C[:, n0, :Rw] = p
        else:
            idx = np.flatnonzero(live) if not everyone else np.arange(self.B)
            self.C[xp.index(idx), xp.index(N[idx]), :Rw] = p[xp.index(idx)]
        fresh = np.count_nonzero(new)
        if fresh:
            vc = xp.astype(ex.v, self.cdtype)
            if shared and fresh == self.B:
                self.V[:, r0] = ex.v
                self.C[:, n0, r0] = nu
            else:
                wi, ri = xp.index(np.flatnonzero(new)), xp.index(R[new])
                self.V[wi, ri] = ex.v[wi]
                self.C[wi, xp.index(N[new]), ri] = nu[wi]
        # b = b_perp + V^T bV gains r x = r (V^T p + nu v): r p on the old coordinates and, with the new
        # direction v, r nu on its own plus b_perp's share of v (moved out of b_perp: no r e is ever
        # added to b_perp and taken out again, a difference of numbers of size |r x| that would leave
        # eps |r x| there, amplified by |x| / c in the mean)
        self.bV[:, :Rw] += rc * p
        if fresh:
            beta = xp.vecdot(vc, self.bperp)
            self.bperp -= beta[:, None] * vc
            self._put(self.bV, beta + (r if isinstance(r, float) else r) * nu, new, R, shared)
        if fold:
            stale = self._fold(p, nu, new, R, shared and fresh == self.B)
        self.R = R + new
        self.N = N + (1 if everyone else live)
        if fresh:
            self._no_perp_once_spanning(np.flatnonzero(new & (self.R >= self.d)))
        if fold:
            self.t[...] = (self.H @ self.bV[:, :, None])[:, :, 0]
            if stale.size:
                self.refactor(stale)

    def _no_perp_once_spanning(self, idx: np.ndarray) -> None:
        """``b_perp = 0`` for the members ``idx`` whose basis spans ``R^d``: nothing lies outside it, and what
        rounding left there would reach the mean as ``x^T b_perp / c``, amplified by ``|x| / c``."""
        if idx.size:
            self.bperp[self.xp.index(idx)] = 0.0

    def _put(self, arr, values, new: np.ndarray, R: np.ndarray, shared: bool) -> None:
        """``arr[i, R_i] = values[i]`` where ``new``."""
        if shared and np.count_nonzero(new) == self.B:
            arr[:, int(R[0])] = values
            return
        xp = self.xp
        wi = xp.index(np.flatnonzero(new))
        arr[wi, xp.index(R[new])] = values[wi]

    def _fold(self, p, nu, new: np.ndarray, R: np.ndarray, shared: bool) -> np.ndarray:
        """``H <- ([[M, 0], [0, 0]] + [p, nu] [p, nu]^T + c I)^-1`` (bordered where ``new``, at slot ``R_i``);
        returns the members whose step amplified rounding past ``1 / sqrt(eps_core)``."""
        xp = self.xp
        Rw = p.shape[1]
        pp = xp.zeros((self.B, self.basis_cap), self.cdtype)  # H is updated whole (zero padding): BLAS rank-1
        pp[:, :Rw] = p
        h = (self.H @ pp[:, :, None])[:, :, 0]
        q = xp.vecdot(pp, h)
        c = self.c_arr
        den = c * (1.0 + q) + nu * nu
        xp.rank1_update_(self.H, h, -c / den)
        if np.count_nonzero(new):
            col = h * (-nu / den)[:, None]
            diag = (1.0 + q) / den
            if shared:
                r0 = int(R[0])
                self.H[:, r0] = col
                self.H[:, :, r0] = col
                self.H[:, r0, r0] = diag
            else:
                wi, ri = xp.index(np.flatnonzero(new)), xp.index(R[new])
                self.H[wi, ri] = col[wi]
                self.H[wi, :, ri] = col[wi]
                self.H[wi, ri, ri] = diag[wi]
        return np.flatnonzero(xp.host(q) > 1.0 / math.sqrt(self.eps_c))

    # -- factorizations ----------------------------------------------------------------------------
    def refactor(self, idx: np.ndarray | None = None) -> None:
        """``H = (C^T C + c I)^-1``, ``t = H bV`` and the log-determinant of the members ``idx`` (all
        when None) from their coordinates, by Cholesky (identity on the padding)."""
        xp = self.xp
        idx = np.arange(self.B) if idx is None else np.asarray(idx)
        if idx.size == 0:
            return
        Rw, Nw = int(self.R[idx].max()), int(self.N[idx].max())
        full = idx.size == self.B
        ii = None if full else xp.index(idx)
        C = self.C[:, :Nw, :Rw] if full else self.C[ii, :Nw, :Rw]
        c = self.c_arr if full else self.c_arr[ii]
        real = xp.asarray((np.arange(Rw)[None, :] < self.R[idx][:, None]), self.cdtype)  # (n, Rw)
        A = C.mT @ C + (c[:, None] * real + (1.0 - real))[:, :, None] * xp.eye(Rw, self.cdtype)
        H = xp.inv_spd(A) * (real[:, :, None] * real[:, None, :])
        bV = self.bV[:, :Rw] if full else self.bV[ii, :Rw]
        t = (H @ bV[:, :, None])[:, :, 0]
        if full:
            self.H[:, :Rw, :Rw], self.t[:, :Rw] = H, t
        else:
            self.H[ii, :Rw, :Rw], self.t[ii, :Rw] = H, t

    # -- the Frequent Directions shrink of a range of rows -----------------------------------------
    def _range(self, idx: np.ndarray, start: np.ndarray, nr: int, Rw: int):
        """Rows ``[start_i, start_i + nr)`` of the members ``idx``: ``(n, nr, Rw)`` coordinates."""
        xp = self.xp
        ii = xp.index(idx)
        if (start == start[0]).all():
            s0 = int(start[0])
            return self.C[ii, s0:s0 + nr, :Rw]
        rows = xp.index(start[:, None] + np.arange(nr)[None, :])
        return self.C[ii[:, None], rows, :Rw]

    def _place(self, dst, idx: np.ndarray, offset: np.ndarray, src, count: np.ndarray) -> None:
        """``dst[idx_i, offset_i + j, :w] = src[i, j]`` for ``j < count_i`` (rows along axis 1; ``w`` the
        width of ``src``'s rows, when it has any)."""
        xp = self.xp
        count = np.asarray(count, dtype=np.int64)
        if count.sum() == 0:
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
        ii = xp.index(idx)
        m = xp.cast_like(np.arange(width)[None, :] < np.asarray(keep_below)[:, None], a)
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
        are orthonormal). ``bV``'s share of the dropped directions moves to ``b_perp``. ``H`` and ``t`` are left
        zero: the caller refactors them (:meth:`refactor`), after raising the ridge for RFD."""
        xp = self.xp
        n = idx.size
        ii = xp.index(idx)
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
        Y = xp.sqrt(plan.keep)[:, :, None] * Wk  # the range's new rows in the old basis
        if Rf.any():  # the new rows' part beyond the frozen basis: an orthonormal basis of it
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
        self.bperp[ii] = self.bperp[ii] + (lost[:, None, :] @ xp.astype(Vold, self.cdtype))[:, 0]
        coords_new = Y @ Q.mT  # (n, k, kq): the new rows on Q
        coords_frozen = Y * frozen[:, None, :]  # (n, k, Rw): on the frozen vectors (0 without)
        # write back: basis [frozen | Q V], the range's rows, bV
        self._mask_rows(self.V, idx, Rf, Rw)
        self._place(self.V, idx, Rf, newV, nq)
        self._mask_rows(self.bV, idx, Rf, Rw)
        self._place(self.bV, idx, Rf, qb, nq)
        Nw = int(self.N[idx].max())
        self._mask_rows(self.C, idx, start, Nw)
        shifted = xp.zeros((n, Rw, k), self.cdtype)  # the new coordinates as columns Rf_i + j
        self._place(shifted, np.arange(n), Rf, coords_new.mT, nq)
        self._place(self.C, idx, start, coords_frozen + shifted.mT, kept)
        self.N[idx] = start + kept
        self.R[idx] = Rf + nq
        # b_perp keeps b's part outside the new span only: what rounding left inside it moves to bV
        Vn = xp.astype(self.V[ii, :Rw], self.cdtype)
        inside = (Vn @ self.bperp[ii][:, :, None])[:, :, 0]
        self.bperp[ii] = self.bperp[ii] - (inside[:, None, :] @ Vn)[:, 0]
        self.bV[ii, :Rw] = self.bV[ii, :Rw] + inside
        self._no_perp_once_spanning(idx[self.R[idx] >= self.d])
        self.H[ii] = 0.0  # stale past the new basis; the caller refactors (with a new ridge, for RFD)
        self.t[ii] = 0.0
        return plan

    def compress(self, idx: np.ndarray, start: np.ndarray) -> None:
        """Replace the rows ``[start_i, N_i)`` of the members ``idx`` (more rows than basis vectors) by the
        ``R_i`` rows of their QR factor: the same ``C^T C``, hence the same sketch, in fewer rows."""
        xp = self.xp
        nr = int(self.N[idx[0]] - start[0])
        Rw = int(self.R[idx].max())
        _, Rq = xp.qr(self._range(idx, start, nr, Rw))
        Nw = int(self.N[idx].max())
        self._mask_rows(self.C, idx, start, Nw)
        keep = np.minimum(nr, self.R[idx])
        self._place(self.C, idx, start, Rq, keep)
        self.N[idx] = start + keep
