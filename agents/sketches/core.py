"""The one state every sketch keeps: an orthonormal basis of its rows' span, the rows' coordinates
in it, and the inverse of the small core; with its operations, written once.

A sketch of ``B`` members holds, for member ``i``, ``N_i`` rows ``S_i`` (``N_i x d``) and a ridge
``c_i = reg_i + alpha_i`` (``alpha = 0`` for FD; RFD and Dyadic Block Sketching's RFD blocks add
each shrink value back), and stands for

    A_hat = c I + S^T S.

The rows are not stored as such. Member ``i`` keeps (padding is zero):

* ``V[i, :R_i]``: an orthonormal basis of the span of its rows (``R_i <= min(N_i, d)`` rows of
  ``d``, working dtype);
* ``C[i, :N_i, :R_i]``: the rows' coordinates in that basis, ``S = C V`` (core dtype);
* ``H[i, :R_i, :R_i] = (M + c I)^-1`` with ``M = C^T C`` (core dtype), so that

      A_hat^-1 = (I - V^T V) / c + V^T H V,
      x^T A_hat^-1 x = ||x - V^T p||^2 / c + p^T H p,          p = V x;

* ``b = b_perp + V^T b_coords`` split into its part outside the span (kept as
  ``theta_perp = b_perp / c``) and its coordinates, so that
  ``theta_hat = A_hat^-1 b = theta_perp + V^T H b_coords`` and
  ``x^T theta_hat = x . theta_perp + p^T H b_coords``.

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

The operations (batch dimension first; ``xp`` is the :class:`~agents.sketches.backend.Backend`):

* :meth:`SketchCore.expand` + :meth:`SketchCore.append`: a row ``x`` with ``p = V x`` gets its
  residual ``e`` by classical Gram-Schmidt, repeated once when it lost more than half its norm
  (Kahan-Parlett: "twice is enough"; a second pass that loses half again means ``x`` lies in the
  span up to rounding), extends the basis by ``v = e / ||e||`` if the residual is real, and its
  coordinates ``[p, ||e||]`` join ``C``. ``H`` follows by a bordered Sherman-Morrison step with no
  cancellation in the new direction: with ``h = H p``, ``q = p^T H p``,
  ``den = c (1 + q) + ||e||^2``,

      H <- [[H - (c / den) h h^T,  -(||e|| / den) h], [-(||e|| / den) h^T,  (1 + q) / den]].

  ``b`` gains ``r x = r (V^T p + ||e|| v)``: ``r p`` on the old coordinates, and the new coordinate
  ``r ||e||`` plus ``b_perp``'s share of ``v``, moved out of ``b_perp``. (Adding ``r e`` to
  ``b_perp`` and taking ``v``'s share out again would subtract numbers of size ``|r x|``, leaving
  ``eps |r x|`` there, which the mean reads amplified by ``|x| / c``.)
* :meth:`SketchCore.shrink`: the Frequent Directions shrink (Ghashami et al. 2016, Alg. 2; Wen
  et al. (2025), Alg. 2 lines 4-7) of a range of rows: the eigendecomposition of the range's Gram
  ``C_r^T C_r = W diag(s^2) W^T`` (``R x R`` numbers, not ``rows x d``), the shrink value
  ``delta = s_l^2`` and the new rows ``diag(sqrt(s^2 - delta)) W_k^T`` (:func:`fd_shrink`); the
  basis keeps the span of the rows that remain, ``c`` grows by ``delta`` where the mass is added
  back (RFD), and ``H`` is refactored.
* :meth:`SketchCore.score`: ``x^T A_hat^-1 x`` and ``x^T theta_hat`` of every arm from one
  product ``P = arms V^T``.
* :meth:`SketchCore.solve`: ``A_hat^-1 v``.
* :meth:`SketchCore.draw`: ``F z`` with ``F F^T = A_hat^-1`` (Thompson sampling), for standard
  normal ``z``: ``F z = (z - V^T V z) / sqrt(c) + V^T L V z`` with ``H = L L^T`` (Cholesky). Its
  two terms are independent (``V z`` is standard normal in ``R^R``, orthogonal to the residual
  ``z - V^T V z``), of covariances ``(I - V^T V) / c`` and ``V^T H V``: their sum is
  ``A_hat^-1``. O(d R) a draw beside the ``O(R^3)`` factorization.

FD is one range (all rows), RFD the same with the mass added back, Dyadic Block Sketching frozen
blocks (rows ``[0, start)``, which live on the first ``frozen_basis`` basis vectors) plus the
active block's range.

A sketch nobody queries (rows without responses, no scoring: matrix approximation) needs none of
``V``, ``C`` or ``H``. Until its first query it keeps its rows themselves in the basis buffer
(:meth:`SketchCore.append_raw`: the row stored, no product) and shrinks them from their own
``n x n`` Gram (:meth:`SketchCore.shrink_raw`), as Liberty's (2013) and Ghashami et al.'s (2016)
reference algorithm does with an SVD of its buffer; the first query gives them coordinates
(:meth:`SketchCore.settle`, one row append each), and from then on the state is the one above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .backend import Backend

__all__ = [
    "Expansion",
    "FDPlan",
    "Rounding",
    "SketchCore",
    "fd_shrink",
    "rounding",
    "shrink_groups",
]

Array = Any  # a numpy array or a torch tensor, as the backend says

_EMPTY = np.zeros(0, dtype=np.int64)
_TINY = np.finfo(np.float64).tiny

#: A bordered Sherman-Morrison step of ``H`` multiplies the rounding it meets by ``1 + q``
#: (``q = p^T H p``: how much more the row weighs in its directions than the sketch held there,
#: relative to ``c``). A step beyond this refactors ``H`` from the coordinates instead (O(R^3),
#: rare: early rows against a tiny ridge), so a kept ``H`` is the inverse to
#: ~``AMPLIFICATION_LIMIT eps`` per row since its factorization.
AMPLIFICATION_LIMIT = 2.0**10


def shrink_groups(
    idx: np.ndarray, rows: np.ndarray, ls: np.ndarray
) -> list[tuple[np.ndarray, int]]:
    """The members ``idx`` grouped for batched shrinks: ``(members, l)`` per distinct (rows held,
    sketch size ``l``) pair (``rows``, ``ls``: host ints, one per member of ``idx``), so that each
    member's decomposition has the shapes of its own single sketch's."""
    groups: dict[tuple[int, int], list[int]] = {}
    for member, key in zip(idx.tolist(), zip(rows.tolist(), ls.tolist())):
        groups.setdefault(key, []).append(member)
    return [(np.array(group, dtype=np.int64), key[1]) for key, group in sorted(groups.items())]


def _host64(xp: Backend, a) -> np.ndarray:
    """``a`` as a host float64 array."""
    return xp.host(a).astype(np.float64, copy=False)


@dataclass(frozen=True)
class Rounding:
    """The rounding of a range's eigenvalues ``lambda_i = s_i^2`` (host float64 ``(n,)`` each, per
    member): ``coord`` bounds ``||delta C_r||_2``, the rounding of the coordinates themselves, and
    ``gram`` that of forming and decomposing their Gram (:func:`rounding`)."""

    coord: np.ndarray
    gram: np.ndarray

    def zero_level(self) -> np.ndarray:
        """``||delta C_r||^2 + n eps ||M_r||``: an eigenvalue at or below it cannot be told from
        0."""
        return self.coord * self.coord + self.gram


def rounding(
    xp: Backend, eps_work: float, eps_core: float, n: int, lam, carried: Rounding | None = None
) -> Rounding:
    """The rounding of the eigenvalues ``lam`` (``(n_members, m)``, descending, ``>= 0``) of a
    range's Gram ``M_r = C_r^T C_r`` over ``n`` coordinates (rows plus basis vectors), at least
    the rounding ``carried`` its rows were left with by earlier shrinks
    (:meth:`SketchCore.carried`).

    Why these. Every coordinate of a row carries a relative rounding of ``eps_work`` (the product
    ``V x`` that formed it, in the working dtype) and ``eps_core`` (the core's arithmetic): by
    Weyl's inequality the singular values of the stored ``C_r`` lie within ``||delta C_r||_2 <=
    (eps_work + eps_core) sqrt(n) ||C_r||_F`` of those of the exact rows (``sqrt(n)``: the usual
    growth of a dot product's rounding), so ``lambda_i`` within ``2 s_i ||delta C_r|| + ||delta
    C_r||^2``. Forming the Gram and its symmetric eigendecomposition are backward stable: each
    eigenvalue within ``n eps_core ||M_r||_2`` more (LAPACK's bound, linear in the size).

    Why ``carried``. A shrink's new rows ``sqrt(s_i^2 - delta)`` are differences of larger numbers:
    they keep the rounding of the mass they were formed from, which a later range of far less mass
    (its own ``||C_r||``, ``||M_r||``) no longer sees. A tie with a kept value (a later row of
    exactly its scale) would then show as a difference above that range's own rounding, and the
    rank cut (:func:`fd_shrink`) would keep or drop it by the last bits of the route that computed
    it (numpy or torch, batched or single, raw rows or coordinates). So the rounding of a range is
    never below the one its rows were left with (that of the largest mass they were formed from;
    the same scale's rounding does not add up shrink after shrink)."""
    lam = _host64(xp, lam)
    coord = ((eps_work + eps_core) * math.sqrt(n)) * np.sqrt(lam.sum(axis=1))
    gram = (n * eps_core) * lam[:, 0]
    if carried is not None:
        coord, gram = np.maximum(coord, carried.coord), np.maximum(gram, carried.gram)
    return Rounding(coord, gram)


@dataclass(frozen=True)
class FDPlan:
    """Frequent Directions' shrink of one group of ranges (Alg. 2 lines 5-6), per member: ``delta``
    the shrink value (host float64 ``(n,)``), ``keep`` the kept squared singular values ``(n, k)``
    (backend array, 0 where dropped), ``kept`` how many survive (host ints ``(n,)``; always the
    leading ones) and ``mass`` their sum ``tr(S_new^T S_new)`` (host float64 ``(n,)``)."""

    delta: np.ndarray
    keep: Array
    kept: np.ndarray
    mass: np.ndarray


def fd_shrink(xp: Backend, lam, l: int, noise: Rounding) -> FDPlan:
    """Frequent Directions' shrink of rows whose squared singular values are ``lam`` (``(n, m)``,
    descending; fewer than ``l`` values count as zeros beyond): the shrink value
    ``delta = lambda_l`` (Wen et al. (2025), Alg. 2 line 5), and the ``k = min(l - 1, m)`` leading
    directions keep ``lambda_i - delta`` (line 6).

    The rank cut follows from FD's analysis and the rounding (:func:`rounding`): ``lambda_l`` at or
    below the rounding of a zero eigenvalue (:meth:`Rounding.zero_level`) cannot be told from 0,
    so the shrink value is 0 (FD of size l is exact on rank < l, and a low-rank stream reports no
    shrinkage); a kept ``lambda_i - delta`` below the rounding of that difference, ``4 s_i ||delta
    C|| + 2 n eps ||M||``, is a tie of ``lambda_i`` with ``lambda_l`` and is dropped, with every
    smaller one. Either way the mass left unaccounted is at the rounding level of the rows: FD's
    bounds hold up to it. (Host arithmetic on the ``n x m`` eigenvalues.)"""
    lam_h = _host64(xp, lam)
    n, m = lam_h.shape
    k = min(l - 1, m)
    lead = lam_h[:, :k]
    if m >= l:
        lam_l = lam_h[:, l - 1]
        delta = np.where(lam_l > noise.zero_level(), lam_l, 0.0)
        keep = lead - delta[:, None]
    else:
        delta, keep = np.zeros(n), lead
    alive = keep > np.sqrt(lead) * (4.0 * noise.coord)[:, None] + (2.0 * noise.gram)[:, None]
    alive = np.logical_and.accumulate(alive, axis=1)  # a prefix: past a tie, every smaller one goes
    keep = np.where(alive, keep, 0.0)
    return FDPlan(delta, xp.cast_like(keep, lam), alive.sum(axis=1), keep.sum(axis=1))


@dataclass(slots=True)
class Expansion:
    """A row's coordinates in the basis extended by its residual direction
    (:meth:`SketchCore.expand`): ``p`` ``(B, width)`` core, ``nu`` ``(B,)`` core (``||e||``, 0 where
    no new direction), ``e`` ``(B, d)`` working (the residual ``x - V^T p``; where ``new``, the new
    basis vector is ``e / ||e||``; None where no member had room for one), ``new`` ``(B,)`` host
    bools, ``sq`` ``(B,)`` core ``||x||^2``; ``hp = H p`` ``(B, width)`` and ``php = p^T H p``
    ``(B,)`` (core) when the scoring computed them for this very ``p`` (:meth:`SketchCore.score`),
    else None (the append forms them)."""

    p: Array
    nu: Array
    e: Array | None
    new: np.ndarray
    sq: Array
    hp: Array | None = None
    php: Array | None = None


class SketchCore:
    """The basis state of ``B`` sketches (see the module docstring). Host bookkeeping (``N``, ``R``,
    ``c``) is numpy; the arrays are the backend's, zero past each member's rows and basis.

    Args:
        xp: the backend (numpy or torch).
        B, d: members and dimension.
        dtype, cdtype: working dtype (the basis) and core dtype (coordinates, ``H``, ``b``).
        rows, basis: initial capacities (rows of ``C``, basis vectors, ``basis <= d``);
            :meth:`ensure` grows them.
        reg: the ridge per member before any mass is added back (host float64 ``(B,)``).

    Attributes:
        N, R: rows held in coordinates and basis size per member (host ints ``(B,)``).
        width: ``max R``, the width every member's products run over.
        reg, alpha, c: the ridge ``c = reg + alpha`` per member (host float64 ``(B,)``), ``alpha``
            the shrink values added back (:meth:`shrink` with ``add_back``).
        n_raw: raw rows every member holds (a sketch nobody queried yet: :meth:`append_raw`), in the
            first slots of ``V`` (zero rows past a member's own after a raw shrink).
        V, C, H, b_coords, theta_perp: the state of the module docstring.
        carried_coord, carried_gram: the rounding each member's rows were left with by its shrinks
            (host float64 ``(B,)``; :meth:`carried`), 0 while none kept a row.
    """

    def __init__(
        self,
        xp: Backend,
        B: int,
        d: int,
        dtype: torch.dtype,
        cdtype: torch.dtype,
        rows: int,
        basis: int,
        reg: np.ndarray,
    ):
        self.xp, self.B, self.d = xp, B, d
        self.dtype, self.cdtype = dtype, cdtype
        self.eps_w, self.eps_c = torch.finfo(dtype).eps, torch.finfo(cdtype).eps
        self.N = np.zeros(B, dtype=np.int64)
        self.R = np.zeros(B, dtype=np.int64)
        self.width = 0
        self._members = np.arange(B)
        self._member_column = xp.index(self._members[:, None])  # (B, 1): row i of a (B, m) index
        self.n_raw = 0
        self.reg = np.array(np.broadcast_to(np.asarray(reg, dtype=np.float64), (B,)))
        self.alpha = np.zeros(B)
        self.carried_coord, self.carried_gram = np.zeros(B), np.zeros(B)
        self.V = xp.zeros((B, 0, d), dtype)
        self.C = xp.zeros((B, 0, 0), cdtype)
        self.H = xp.zeros((B, 0, 0), cdtype)
        self.b_coords = xp.zeros((B, 0), cdtype)
        self.theta_perp = xp.zeros((B, d), cdtype)
        self._set_ridge()
        self.ensure(rows, basis)

    # -- storage -----------------------------------------------------------------------------------
    @property
    def rows_cap(self) -> int:
        return self.C.shape[1]

    @property
    def basis_cap(self) -> int:
        return self.V.shape[1]

    def ensure(self, rows: int, basis: int) -> None:
        """Grow the capacities to ``rows`` rows and ``basis`` basis vectors (copies, zero
        padding)."""
        rows, basis = max(rows, self.rows_cap), min(max(basis, self.basis_cap), self.d)
        if rows == self.rows_cap and basis == self.basis_cap:
            return
        xp, B = self.xp, self.B
        n0, r0 = self.rows_cap, self.basis_cap
        V = xp.zeros((B, basis, self.d), self.dtype)
        C = xp.zeros((B, rows, basis), self.cdtype)
        H = xp.zeros((B, basis, basis), self.cdtype)
        b_coords = xp.zeros((B, basis), self.cdtype)
        V[:, :r0], C[:, :n0, :r0], H[:, :r0, :r0], b_coords[:, :r0] = (
            self.V,
            self.C,
            self.H,
            self.b_coords,
        )
        self.V, self.C, self.H, self.b_coords = V, C, H, b_coords

    def held_bytes(self) -> int:
        arrays = (self.V, self.C, self.H, self.b_coords, self.theta_perp)
        return sum(self.xp.nbytes(a) for a in arrays)

    @staticmethod
    def layout_bytes(d: int, rows, basis, work_bytes: int, core_bytes: int):
        """Bytes one member holds with capacities ``rows`` x ``basis``: the basis (``basis x d``,
        working dtype); in the core dtype its coordinates (``rows x basis``), ``H`` (``basis^2``),
        ``b_coords`` (``basis``) and ``theta_perp`` (``d``). Accepts numpy int arrays."""
        return work_bytes * basis * d + core_bytes * (rows * basis + basis * basis + basis + d)

    def _set_ridge(self) -> None:
        """``c = reg + alpha`` per member, and its backend arrays ``c`` and ``1 / c``."""
        self.c = self.reg + self.alpha
        self.c_arr = self.xp.asarray(self.c, self.cdtype)
        self.inv_c = self.xp.asarray(1.0 / self.c, self.cdtype)[:, None]

    def _add_back(self, idx: np.ndarray, delta: np.ndarray) -> None:
        """RFD's Alg. 3 line 5 for the members ``idx``: ``alpha += delta``, so ``c`` grows and
        ``theta_perp = b_perp / c`` follows. ``H`` is the caller's to refactor."""
        old = self.c[idx]
        self.alpha[idx] += delta
        self._set_ridge()
        sel = self.xp.select(idx)
        self.theta_perp[sel] = (
            self.theta_perp[sel] * self.xp.asarray(old / self.c[idx], self.cdtype)[:, None]
        )

    def _set_R(self, R: np.ndarray) -> None:
        self.R = R
        self.width = max(R.tolist())

    def _outside(self, like):
        """1 for the members whose basis leaves a residual space (``R < d``), 0 for those spanning
        ``R^d``: ``(B, 1)`` in ``like``'s dtype."""
        return self.xp.cast_like(self.R < self.d, like)[:, None]

    # -- reading the state -------------------------------------------------------------------------
    def _basis_core(self):
        """The basis over the common width, in the core dtype ``(B, width, d)``."""
        return self.xp.astype(self.V[:, : self.width], self.cdtype)

    def b(self):
        """``b = b_perp + V^T b_coords`` ``(B, d)``, core dtype."""
        w = self.width
        return (
            self.theta_perp * self.c_arr[:, None]
            + (self.b_coords[:, None, :w] @ self._basis_core())[:, 0]
        )

    def theta(self):
        """``A_hat^-1 b = theta_perp + V^T H b_coords`` ``(B, d)``, core dtype."""
        w = self.width
        coords = (self.H[:, :w, :w] @ self.b_coords[:, :w, None])[:, :, 0]
        return self.theta_perp + (coords[:, None, :] @ self._basis_core())[:, 0]

    def gram(self):
        """``M = C^T C`` ``(B, width, width)`` over the rows held (core dtype)."""
        held = self.C[:, : int(self.N.max()), : self.width]
        return held.mT @ held

    def logdet(self) -> np.ndarray:
        """``log det(M + c I) - R log c = -log det(H) - R log c`` per member (host float64;
        O(R^3))."""
        w = self.width
        real = np.arange(w)[None, :] < self.R[:, None]
        padded = self.H[:, :w, :w] + self.xp.cast_like(~real, self.H)[:, :, None] * self.xp.eye(
            w, self.cdtype
        )
        return -self.xp.logdet(padded) - self.R * np.log(self.c)

    def frob2(self) -> np.ndarray:
        """``||C||_F^2 = tr(S^T S)`` per member (host float64; raw rows are not counted)."""
        flat = self.C.reshape(self.B, -1)
        return _host64(self.xp, self.xp.vecdot(flat, flat))

    def covariance(self):
        """``S^T S = V^T M V``, or the raw rows' ``S^T S``, ``(B, d, d)`` in the core dtype."""
        basis = self._basis_core()
        raw = self.xp.astype(self.V[:, : self.n_raw], self.cdtype)
        return basis.mT @ self.gram() @ basis + raw.mT @ raw

    def rows(self, i: int):
        """Member ``i``'s rows ``S``: ``C V`` ``(N_i, d)``, or its raw rows (core dtype;
        diagnostics)."""
        n, r = int(self.N[i]), int(self.R[i])
        held = self.C[i, :n, :r] @ self.xp.astype(self.V[i, :r], self.cdtype)
        return self.xp.concat(held, self.xp.astype(self.V[i, : self.n_raw], self.cdtype), axis=0)

    def inverse(self, idx: np.ndarray):
        """``A_hat^-1 = (I - V^T V) / c + V^T H V`` of the members ``idx``, ``(n, d, d)`` in the
        core dtype (symmetrised; O(d^2 R), for a switch to exact updates)."""
        xp = self.xp
        sel = xp.select(idx)
        w = int(self.R[idx].max()) if idx.size else 0
        basis = xp.astype(self.V[sel, :w], self.cdtype)
        eye = xp.eye(self.d, self.cdtype)[None]
        inv = (eye - basis.mT @ basis) / self.c_arr[sel][:, None, None] + basis.mT @ self.H[
            sel, :w, :w
        ] @ basis
        return 0.5 * (inv + inv.mT)

    # -- score, solve, draw ------------------------------------------------------------------------
    def project(self, arms):
        """``P = arms V^T`` ``(B, K, width)`` in the core dtype: the only ``K d R`` product of a
        round."""
        return self.xp.astype(arms @ self.V[:, : self.width].mT, self.cdtype)

    def score(self, arms, arms_c, sq, P, rel: float = 2.0**-10):
        """``(x^T theta_hat, x^T A_hat^-1 x, H p, p^T H p)`` of the arms ``(B, K, d)`` (working
        dtype; ``arms_c`` the same in the core dtype, ``sq`` their ``||x||^2``, ``P`` from
        :meth:`project`): ``(B, K)``, ``(B, K)``, ``(B, K, width)`` and ``(B, K)`` in the core
        dtype, with

            x^T theta_hat    = x . theta_perp + p^T H b_coords,
            x^T A_hat^-1 x   = ||x - V^T p||^2 / c + p^T H p,          p = V x.

        (``H p`` and ``p^T H p`` of the played arm are what its append's bordered step needs:
        :class:`Expansion`.) The residual ``||x - V^T p||^2`` is 0 for a member whose basis spans
        ``R^d``, and is taken as ``||x||^2 - ||p||^2`` except where the rounding of that difference,
        ``2 sqrt(R d) eps_work ||x||^2`` (``p`` comes from ``R`` dot products of length ``d`` in the
        working dtype), exceeds ``rel`` times the arm's whole ``c x^T A_hat^-1 x``: those arms'
        residuals, and only theirs, are formed explicitly (:meth:`_explicit_quad`)."""
        xp = self.xp
        w = P.shape[-1]
        PH = P @ self.H[:, :w, :w]  # H is symmetric: row k is H p_k
        mean = xp.matvec(arms_c, self.theta_perp) + xp.matvec(PH, self.b_coords[:, :w])
        pHp = xp.vecdot(PH, P)
        residual = sq - xp.vecdot(P, P)
        # the rounding of that difference, against rel of the width: (2 sqrt(R d) eps / rel) ||x||^2
        # / c
        noise = sq * ((2.0 * math.sqrt(w * self.d) * self.eps_w / rel) * self.inv_c)
        if self.width >= self.d:  # a member whose basis spans R^d has no residual
            outside = self._outside(sq)
            residual, noise = residual * outside, noise * outside
        quad = residual * self.inv_c + pHp
        cancels = noise > quad
        if xp.any(cancels):
            quad = self._explicit_quad(arms, P, pHp, quad, cancels)
        return mean, quad, PH, pHp

    def _explicit_quad(self, arms, P, pHp, quad, cancels):
        """``quad`` (``(B, K)``, core dtype) with the arms where ``cancels`` (bools ``(B, K)``)
        scored from their explicit residuals, ``||x - V^T p||^2 / c + p^T H p`` (``arms``, ``P``,
        ``pHp`` as :meth:`score`'s): an ``m d R`` product over the ``m`` arms of the member with
        the most such arms (each member's first ``m`` arms in the order ``cancels`` first), not
        the ``K d R`` of every arm. An arm's residual is its own row of that product: the same
        formula, and the same rounding bound, whichever arms are formed beside it."""
        xp = self.xp
        hit = xp.host(cancels)
        count = hit.sum(axis=1).tolist()
        m, K = max(count), hit.shape[1]
        ix = (slice(None), slice(None))
        if m < K:  # each member's first m arms, those that cancel first (a permutation: no repeat)
            order = np.argsort(~hit, axis=1, kind="stable")[:, :m]
            ix = (self._member_column, xp.index(order))
        residual = arms[ix] - xp.astype(P[ix], self.dtype) @ self.V[:, : P.shape[-1]]
        explicit = xp.norm_sq(residual, self.cdtype) * self.inv_c + pHp[ix]
        if min(count) < m:  # (a member with fewer such arms keeps the others' quad)
            explicit = xp.where(cancels[ix], explicit, quad[ix])
        quad[ix] = explicit
        return quad

    def solve(self, v):
        """``A_hat^-1 v = (v - V^T V v) / c + V^T H V v`` for ``v`` ``(B, d)`` (core dtype)."""
        w = self.width
        basis = self._basis_core()
        pv = (basis @ v[:, :, None])[:, :, 0]
        perp = (v - (pv[:, None, :] @ basis)[:, 0]) * self._outside(v)
        return perp * self.inv_c + ((self.H[:, :w, :w] @ pv[:, :, None]).mT @ basis)[:, 0]

    def h_factor(self):
        """``L`` with ``H = L L^T`` (lower Cholesky factor over the width, zero past each member's
        basis) ``(B, width, width)``, core dtype."""
        xp = self.xp
        w = self.width
        if min(self.R.tolist()) == w:  # (no member's basis is narrower: no padding to mask)
            return xp.cholesky(self.H[:, :w, :w])
        real = xp.cast_like(np.arange(w)[None, :] < self.R[:, None], self.H)
        padded = self.H[:, :w, :w] + (1.0 - real)[:, :, None] * xp.eye(w, self.cdtype)
        return xp.cholesky(padded) * (real[:, :, None] * real[:, None, :])

    def draw(self, z):
        """``F z = (z - V^T V z) / sqrt(c) + V^T L V z`` for standard normal ``z`` ``(B, n, d)``
        (core dtype): ``n`` draws of covariance ``A_hat^-1`` per member (module docstring),
        ``(B, n, d)``, with ``L`` from :meth:`h_factor`."""
        xp = self.xp
        basis = self._basis_core()
        pz = z @ basis.mT  # (B, n, width): V z
        perp = (z - pz @ basis) * (self._outside(z) * xp.sqrt(self.inv_c))[:, :, None]
        return perp + (pz @ self.h_factor().mT) @ basis

    def sample(self, z, scale):
        """``theta_hat + scale F z`` for standard normal ``z`` ``(B, n, d)`` (core dtype; ``scale``
        a float or host ``(B,)``), with :meth:`draw`'s factor: Thompson sampling's
        ``theta_tilde``, from two ``d R`` products instead of :meth:`theta`'s one and
        :meth:`draw`'s three, as

            theta_perp + s z + V^T (H b_coords + scale L V z - s V z),   s = scale / sqrt(c)

        (``s = 0`` for a member whose basis spans ``R^d``). The residual ``z - V^T V z`` is formed
        implicitly: its rounding is ``eps ||z||``, against draws of size ``||z|| / sqrt(c)``. The
        products with ``V`` run in the working dtype (as :meth:`project`), the rest in the core
        dtype."""
        xp = self.xp
        w = self.width
        basis = self.V[:, :w]  # working dtype
        scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (self.B,))
        scale = xp.asarray(scale, self.cdtype)
        # the two d R products in the working dtype, as the scoring's projection (no core copy of
        # the basis)
        pz = xp.astype(xp.astype(z, self.dtype) @ basis.mT, self.cdtype)  # (B, n, w): V z
        s = (self._outside(z) * xp.sqrt(self.inv_c))[:, 0] * scale  # (B,)
        coords = (self.H[:, :w, :w] @ self.b_coords[:, :w, None])[:, :, 0]  # H b_coords
        inner = coords[:, None, :] + (pz @ self.h_factor().mT) * scale[:, None, None]
        inner = inner - pz * s[:, None, None]
        span = xp.astype(xp.astype(inner, self.dtype) @ basis, self.cdtype)
        return self.theta_perp[:, None, :] + z * s[:, None, None] + span

    # -- the row append ----------------------------------------------------------------------------
    def expand(self, X, sq, sq_host: np.ndarray, p=None, hp=None, php=None) -> Expansion:
        """The rows ``X`` ``(B, d)`` (working dtype; ``sq = ||x||^2`` ``(B,)`` core, ``sq_host`` on
        the host) in the basis extended by their residual directions; ``p = V x`` ``(B, width)``
        when the caller has it (the played arm's row of the scoring's ``P``), with ``hp = H p`` and
        ``php = p^T H p`` (its rows of the scoring's, kept while ``p`` is). Changes nothing.

        Classical Gram-Schmidt against the basis, ``e = x - V^T p``; a second pass
        ``e <- e - V^T (V e)`` where the first kept less than half the squared norm; a new
        direction where the last pass kept at least half of what it was given (Kahan-Parlett: then
        the residual is orthogonal to the basis to working precision; if not, ``x`` lies in the
        span up to rounding), the residual exceeds the rounding of a residual of ``x`` in the
        span, ``tol = 8 sqrt((R + 1) d) eps ||x||`` (``R`` dot products of length ``d`` to form
        ``p``, ``R`` terms in each entry of ``V^T p``), and there is room (``R < basis_cap``).

        Why the second pass stays wherever a new direction lost half its norm, in any dtype. With
        ``E = V V^T - I`` (the basis' own loss of orthogonality) and ``delta`` the rounding of the
        pass, ``V e = -E p - V delta``: the new vector ``v = e / ||e||`` has

            ||V v|| <= (||E|| ||p|| + ||delta||) / ||e||,

        the basis' loss multiplied by ``||p|| / ||e||``, which exceeds 1 exactly when the pass kept
        less than half the squared norm (``||e||^2 < ||x||^2 / 2``), whatever ``eps``: no bound on
        ``||E||`` survives a single pass there, and the loss compounds row after row. After the
        second pass the loss enters only multiplied by the first pass' ``||V e|| / ||e||``, a
        rounding-level number: classical Gram-Schmidt twice keeps ``||V V^T - I||`` at the rounding
        level of the working dtype (Giraud et al. (2005)). The coordinates stay the first pass'
        ``p`` where the second pass corrects them by less than ``tol`` (:meth:`_second_pass`).

        The second pass is not run where it cannot change the result beyond the rounding a
        residual is dropped at: where the first pass left a residual within ``tol`` (a pass only
        removes the residual's part along the basis: no new direction either way, and ``e`` is
        dropped), and for a member with no room; where no member has room, ``e`` is not formed at
        all (None)."""
        xp = self.xp
        basis = self.V[:, : self.width]
        if p is None:
            p = xp.astype((basis @ X[:, :, None])[:, :, 0], self.cdtype)
        full = self.width >= self.basis_cap  # (some member's basis may be full)
        if full and min(self.R.tolist()) >= self.basis_cap:  # every basis is full
            none = np.zeros(self.B, dtype=bool)
            return Expansion(p, xp.zeros((self.B,), self.cdtype), None, none, sq, hp, php)
        e = X - (xp.astype(p, self.dtype)[:, None, :] @ basis)[:, 0]
        nu2 = xp.norm_sq(e, self.cdtype)
        kept = xp.host(nu2) / np.maximum(sq_host, _TINY)
        # each member's own R: its decision must not depend on the other members of a batch
        in_span = (self.R + 1) * (64.0 * self.d * self.eps_w**2)  # (tol / ||x||)^2
        if min(kept.tolist()) < 0.5:  # "twice is enough": a second pass where half of it was lost
            again = (kept < 0.5) & (kept > in_span)
            if full:  # (a member with no room takes no new vector)
                again &= self.R < self.basis_cap
            if again.any():
                e, nu2, kept, moved = self._second_pass(basis, e, kept, again, in_span, sq_host)
                if moved is not None:  # p moved: the append forms H p afresh
                    p, hp, php = p + moved, None, None
        new = kept > in_span
        if full:  # a full basis takes no new vector
            new &= self.R < self.basis_cap
        nu = xp.sqrt(nu2) * xp.cast_like(new, nu2)
        return Expansion(p, nu, e, new, sq, hp, php)

    def _second_pass(self, basis, e, kept: np.ndarray, again: np.ndarray, in_span, sq_host):
        """:meth:`expand`'s second classical Gram-Schmidt pass ``e <- e - V^T (V e)`` for the
        members ``again`` (host bools; ``kept`` the share ``||e||^2 / ||x||^2`` the first pass
        kept, ``in_span`` the squared drop tolerance ``(tol / ||x||)^2``, both host ``(B,)``).
        Returns the residual, its squared norm (core ``(B,)``), the share kept after both passes
        (0 where the second pass lost half again: ``x`` lies in the span up to rounding) and the
        correction ``V e`` to the coordinates (core ``(B, width)``) when some member's exceeds
        the tolerance, else None (the first pass' coordinates stand).

        The coordinates stay the first pass' ``p`` (and ``hp``, ``php`` with them), those of the
        row ``x - V^T (V e)``, wherever the correction ``||V e|| <= ||E|| ||p|| + ||delta||``
        (:meth:`expand`) is within ``tol``: a row perturbed within the rounding a residual is
        dropped at. Where it is not, ``p <- p + V e``."""
        xp = self.xp
        extra = (basis @ e[:, :, None])[:, :, 0] * xp.cast_like(again, e)[:, None]
        e = e - (extra[:, None, :] @ basis)[:, 0]
        correction = xp.host(xp.norm_sq(extra, self.cdtype))
        moved = max((correction - in_span * sq_host).tolist()) > 0.0  # beyond tol^2
        nu2 = xp.norm_sq(e, self.cdtype)
        kept_again = xp.host(nu2) / np.maximum(sq_host, _TINY)
        kept = np.where(again & (kept_again < 0.5 * kept), 0.0, np.where(again, kept_again, kept))
        return e, nu2, kept, xp.astype(extra, self.cdtype) if moved else None

    def append(self, ex: Expansion, r, live: np.ndarray | None = None) -> None:
        """Commit the expanded rows ``ex`` with responses ``r`` (a float, or core ``(B,)``) to the
        members where ``live`` (host bools; every member when None): the new basis vectors and
        coordinate rows, ``b``, and ``H`` by the bordered Sherman-Morrison step of the module
        docstring; a member whose step amplified rounding by more than :data:`AMPLIFICATION_LIMIT`
        (``1 + q`` large: the row carries far more mass in a direction than the sketch held there)
        is refactored from ``C`` instead (:meth:`refactor`)."""
        xp = self.xp
        p, nu, new, hp, php = ex.p, ex.nu, ex.new, ex.hp, ex.php
        rows = self._members
        if live is not None:  # the other members append nothing: their row is 0
            on = xp.cast_like(live, p)
            p, nu, new, r = p * on[:, None], nu * on, new & live, r * on
            hp, php = (None, None) if hp is None else (hp * on[:, None], php * on)
            rows = xp.members_where(live)
        w = p.shape[1]
        if rows.size:
            self.C[xp.at(rows, self.N, width=w)] = p if live is None else p[xp.select(rows)]
        self.b_coords[:, :w] += (r if isinstance(r, float) else r[:, None]) * p
        gained = xp.members_where(new)
        slot = xp.at(gained, self.R) if gained.size else None  # (the new basis vectors' slots)
        if slot is not None:
            self._extend_basis(gained, slot, ex.e, nu, r)
        stale = self._fold(p, nu, gained, slot, hp, php)
        self._set_R(self.R + new)
        self.N = self.N + (1 if live is None else live)
        if self.width >= self.d:
            self._no_perp_once_spanning(np.nonzero(new & (self.R >= self.d))[0])
        if stale.size:
            self.refactor(stale)

    def _extend_basis(self, gained: np.ndarray, slot: tuple, e, nu, r) -> None:
        """The new unit vectors ``v = e / nu`` of the members ``gained`` join the basis at slot
        ``R_i`` (``slot``: its key, :meth:`Backend.at`), with the row's coordinate ``nu`` there;
        ``b_perp``'s share of ``v`` moves to ``b_coords``: ``theta_perp`` loses
        ``(v . theta_perp) v`` and ``b_coords[R] = c (v . theta_perp) + r nu``."""
        xp = self.xp
        g = xp.select(gained)
        v = e[g] / xp.astype(nu[g], self.dtype)[:, None]
        vc = xp.astype(v, self.cdtype)
        share = xp.vecdot(vc, self.theta_perp[g])
        self.theta_perp[g] -= share[:, None] * vc
        self.V[slot] = v
        self.C[xp.at(gained, self.N, self.R)] = nu[g]
        r_g = r if isinstance(r, float) else r[g]
        self.b_coords[slot] = share * self.c_arr[g] + r_g * nu[g]

    def _no_perp_once_spanning(self, idx: np.ndarray) -> None:
        """``theta_perp = 0`` for the members ``idx`` whose basis spans ``R^d``: nothing lies
        outside it, and what rounding left there would reach the mean as ``x . theta_perp``."""
        if idx.size:
            self.theta_perp[self.xp.select(idx)] = 0.0

    def _fold(self, p, nu, gained: np.ndarray, slot: tuple | None, hp=None, php=None) -> np.ndarray:
        """``H <- ([[M, 0], [0, 0]] + [p, nu] [p, nu]^T + c I)^-1`` (bordered at slot ``R_i`` for
        the members ``gained``, ``slot`` its key or None when there are none); returns the members
        whose step amplified rounding past :data:`AMPLIFICATION_LIMIT`.

        The bordered step is one rank-1 update of the padded ``H``: with ``u = [h, nu / c]``
        (``h = H p`` is 0 at the new slot, ``H``'s padding), ``H - (c / den) u u^T`` has the block
        ``H - (c / den) h h^T`` and the border ``-(nu / den) h``; its corner,
        ``1/c - nu^2 / (c den) = (1 + q) / den``, is written directly (the difference would
        cancel)."""
        xp = self.xp
        w = p.shape[1]
        # rows over the whole width: 0 past the basis
        padded = xp.zeros((self.B, self.basis_cap), self.cdtype)
        if hp is None:
            padded[:, :w] = p
            u = xp.matvec(self.H, padded)
            one_plus_q = 1.0 + xp.vecdot(padded, u)
        else:
            u = padded
            u[:, :w] = hp
            one_plus_q = 1.0 + php
        den = self.c_arr * one_plus_q + nu * nu
        g = xp.select(gained)
        if slot is not None:
            u[slot] = nu[g] * self.inv_c[g, 0]
        xp.rank1_update_(self.H, u, -self.c_arr / den)
        if slot is not None:
            self.H[xp.at(gained, self.R, self.R)] = one_plus_q[g] / den[g]
        amplification = xp.host(one_plus_q)
        if max(amplification.tolist()) <= AMPLIFICATION_LIMIT:  # (the usual step: none)
            return _EMPTY
        return np.nonzero(amplification > AMPLIFICATION_LIMIT)[0]

    def refactor(self, idx: np.ndarray) -> None:
        """``H = (C^T C + c I)^-1`` of the members ``idx`` from their coordinates, by Cholesky
        (identity on the padding, then zeroed)."""
        xp = self.xp
        sel = xp.select(idx)
        w = int(self.R[idx].max())
        held = self.C[sel, : int(self.N[idx].max()), :w]
        real = xp.cast_like(np.arange(w)[None, :] < self.R[idx][:, None], held)
        A = held.mT @ held + (self.c_arr[sel][:, None] * real + (1.0 - real))[:, :, None] * xp.eye(
            w, self.cdtype
        )
        self.H[sel] = 0.0
        self.H[sel, :w, :w] = xp.inv_spd(A) * (real[:, :, None] * real[:, None, :])

    # -- ranges of rows ----------------------------------------------------------------------------
    def _range(self, idx: np.ndarray, start: np.ndarray, width: int):
        """The coordinates ``(n, rows, width)`` of the rows ``[start_i, N_i)`` of the members
        ``idx`` (every member holds as many there); a copy."""
        return self.xp.row_range(self.C, idx, start, int(self.N[idx[0]] - start[0]), width)

    def shrink_value(
        self, idx: np.ndarray, start: np.ndarray, l: int, ex: Expansion | None = None
    ) -> np.ndarray:
        """FD's shrink value (:func:`fd_shrink`) of the rows ``[start_i, N_i)`` of the members
        ``idx`` (all with the same count), with the expanded row ``ex`` appended when given: a
        look-ahead (Dyadic Block Sketching's willExcessSketch), the state unchanged. Host float64
        ``(n,)``."""
        xp = self.xp
        w = int(self.R[idx].max())
        Cr = self._range(idx, start, w)
        if ex is not None:  # the row's coordinates [p, nu] as one more row, one more column
            sel = xp.select(idx)
            wx = w + 1 if w < self.d else w
            row = xp.zeros((idx.size, 1, wx), self.cdtype)
            row[:, 0, :w] = ex.p[sel, :w]  # (the expansion's width is every member's: 0 past R)
            gained = np.flatnonzero(ex.new[idx])
            row[xp.index(gained), 0, xp.index(self.R[idx][gained])] = ex.nu[sel][xp.index(gained)]
            padded = xp.zeros((idx.size, Cr.shape[1], wx), self.cdtype)
            padded[:, :, :w] = Cr
            Cr, w = xp.concat(padded, row), wx
        lam = xp.maximum(xp.eigvalsh_desc(Cr.mT @ Cr), 0.0)
        noise = rounding(xp, self.eps_w, self.eps_c, Cr.shape[1] + w, lam, self.carried(idx))
        return fd_shrink(xp, lam, l, noise).delta

    def shrink(
        self,
        idx: np.ndarray,
        start: np.ndarray,
        l: int,
        frozen_basis: np.ndarray,
        add_back: bool = False,
    ) -> FDPlan:
        """The Frequent Directions shrink (Wen et al. (2025), Alg. 2 lines 4-7; :func:`fd_shrink`)
        of the rows ``[start_i, N_i)`` of the members ``idx`` (all with the same number of rows
        there and the same sketch size ``l``); ``add_back`` (RFD, Alg. 3 line 5):
        ``alpha += delta``. Rows before ``start_i`` (Dyadic Block Sketching's frozen blocks) are
        kept as they are; they live on the first ``frozen_basis_i`` basis vectors, which stay too.

        With ``C_r^T C_r = W diag(s^2) W^T``, the range becomes
        ``Y = diag(sqrt(s_i^2 - delta)) W_k^T`` in the old basis. The basis keeps the frozen vectors
        and an orthonormal basis ``Q`` of the new rows' part beyond them (:meth:`_kept_basis`),
        rotated into ``d`` dimensions as ``Q V``; ``b_coords``' share of the dropped directions
        moves to ``b_perp``. ``H`` is refactored; where nothing is frozen the new rows are
        ``diag(sqrt(s^2 - delta))`` on the basis ``W_k V``, and
        ``H = diag(1 / (s^2 - delta + c))``."""
        xp = self.xp
        w = int(self.R[idx].max())
        Cr = self._range(idx, start, w)
        lam, W = xp.eigh_desc(Cr.mT @ Cr)
        lam = xp.maximum(lam, 0.0)
        noise = rounding(xp, self.eps_w, self.eps_c, Cr.shape[1] + w, lam, self.carried(idx))
        plan = fd_shrink(xp, lam, l, noise)
        self._carry(idx, noise, plan.kept)
        k = plan.keep.shape[1]
        alive = xp.cast_like(np.arange(k)[None, :] < plan.kept[:, None], lam)
        kept_dirs = W.mT[:, :k] * alive[:, :, None]  # orthonormal rows, zero past kept
        sing = xp.sqrt(plan.keep)  # (n, k): the new rows' singular values
        nothing_frozen = not frozen_basis.any()
        if nothing_frozen:
            Q, n_basis = kept_dirs, plan.kept
        else:
            Q, n_basis = self._kept_basis(kept_dirs, frozen_basis, w)
        self._rotate_basis(idx, frozen_basis, Q, n_basis, w)
        if nothing_frozen:
            new_rows = sing[:, :, None] * xp.eye(k, self.cdtype)
        else:  # the new rows Y: on the frozen vectors as they are, on Q in columns frozen_basis + j
            Y = sing[:, :, None] * kept_dirs
            frozen = xp.cast_like(np.arange(w)[None, :] < frozen_basis[:, None], Y)
            shifted = xp.zeros((idx.size, w, k), self.cdtype)
            xp.put_rows(shifted, np.arange(idx.size), frozen_basis, (Y @ Q.mT).mT, n_basis, 0)
            new_rows = Y * frozen[:, None, :] + shifted.mT
        xp.put_rows(self.C, idx, start, new_rows, plan.kept, int(self.N[idx].max()))
        self.N[idx] = start + plan.kept
        R = self.R.copy()
        R[idx] = frozen_basis + n_basis
        self._set_R(R)
        self._perp_in_span_to_coords(idx, w)
        if add_back:
            self._add_back(idx, plan.delta)
        if nothing_frozen and not start.any():  # the rows diag(sing) on the basis: H is diagonal
            self._set_diagonal_H(idx, sing, n_basis)
        else:
            self.refactor(idx)
        return plan

    def carried(self, idx: np.ndarray | None = None) -> Rounding:
        """The rounding the rows of the members ``idx`` (all when None) were left with by their
        shrinks: a later shrink's or look-ahead's rounding is never below it (:func:`rounding`)."""
        if idx is None:
            return Rounding(self.carried_coord, self.carried_gram)
        return Rounding(self.carried_coord[idx], self.carried_gram[idx])

    def _carry(self, idx: np.ndarray, noise: Rounding, kept: np.ndarray) -> None:
        """After a shrink of the members ``idx`` at rounding ``noise``: the rows it kept carry that
        rounding; a member that kept none carries none."""
        self.carried_coord[idx] = np.where(kept > 0, noise.coord, 0.0)
        self.carried_gram[idx] = np.where(kept > 0, noise.gram, 0.0)

    def _set_diagonal_H(self, idx: np.ndarray, sing, n_basis: np.ndarray) -> None:
        """``H = diag(1 / (sing^2 + c))`` over the first ``n_basis_i`` slots of the members ``idx``,
        whose rows are ``diag(sing)`` on their basis (0 past them)."""
        xp = self.xp
        sel, k = xp.select(idx), sing.shape[1]
        real = xp.cast_like(np.arange(k)[None, :] < n_basis[:, None], sing)
        diagonal = real / (sing * sing + self.c_arr[sel][:, None])
        self.H[sel] = 0.0
        self.H[sel, :k, :k] = diagonal[:, :, None] * xp.eye(k, self.cdtype)

    def _kept_basis(self, kept_dirs, frozen_basis: np.ndarray, w: int):
        """An orthonormal basis ``Q`` (rows, in the old basis' coordinates) of the kept directions'
        part beyond the first ``frozen_basis_i`` basis vectors, and its size per member: the right
        singular vectors of that part above rounding (its rows are orthonormal: singular values <=
        1). A right singular vector of a small singular value ``s`` carries ``eps / s`` on the
        frozen columns, which are exactly zero in the rows it spans: they are zeroed and the rows
        orthonormalized again (Cholesky of a Gram within ``eps / s`` of ``I``)."""
        xp = self.xp
        k = kept_dirs.shape[1]
        beyond = xp.cast_like(np.arange(w)[None, :] >= frozen_basis[:, None], kept_dirs)
        _, sv, Q = xp.svd(kept_dirs * beyond[:, None, :])
        n_basis = (
            (xp.host(sv) > (self.eps_w + self.eps_c) * math.sqrt(k + w))
            .sum(axis=1)
            .astype(np.int64)
        )
        real = xp.cast_like(np.arange(Q.shape[1])[None, :] < n_basis[:, None], Q)
        Q = Q * real[:, :, None] * beyond[:, None, :]
        G = Q @ Q.mT + (1.0 - real)[:, :, None] * xp.eye(Q.shape[1], self.cdtype)
        return xp.solve_lower(xp.cholesky(G), Q), n_basis

    def _rotate_basis(
        self, idx: np.ndarray, frozen_basis: np.ndarray, Q, n_basis: np.ndarray, w: int
    ) -> None:
        """The basis of the members ``idx`` becomes ``[frozen | Q V]`` (``Q``: orthonormal rows in
        the old basis' coordinates, orthogonal to the frozen vectors); ``b_coords`` keeps its part
        on them, its part on the dropped directions moves to ``b_perp`` (``theta_perp``, divided by
        ``c``)."""
        xp = self.xp
        sel = xp.select(idx)
        old_basis, old_coords = self.V[sel, :w], self.b_coords[sel, :w]  # (views: read them first)
        coords_on_Q = (Q @ old_coords[:, :, None])[:, :, 0]
        frozen = xp.cast_like(np.arange(w)[None, :] < frozen_basis[:, None], old_coords)
        dropped = old_coords * (1.0 - frozen) - (coords_on_Q[:, None, :] @ Q)[:, 0]
        moved = (dropped[:, None, :] @ xp.astype(old_basis, self.cdtype))[:, 0]
        new_basis = xp.astype(Q, self.dtype) @ old_basis
        self.theta_perp[sel] = self.theta_perp[sel] + moved * self.inv_c[sel]
        xp.put_rows(self.V, idx, frozen_basis, new_basis, n_basis, w)
        xp.put_rows(self.b_coords, idx, frozen_basis, coords_on_Q, n_basis, w)

    def _perp_in_span_to_coords(self, idx: np.ndarray, w: int) -> None:
        """``theta_perp`` keeps ``b``'s part outside the (new) span only: what rounding left inside
        it moves to ``b_coords``."""
        xp = self.xp
        sel = xp.select(idx)
        basis = xp.astype(self.V[sel, :w], self.cdtype)
        inside = (basis @ self.theta_perp[sel][:, :, None])[:, :, 0]
        self.theta_perp[sel] = self.theta_perp[sel] - (inside[:, None, :] @ basis)[:, 0]
        self.b_coords[sel, :w] = self.b_coords[sel, :w] + inside * self.c_arr[sel][:, None]
        self._no_perp_once_spanning(idx[self.R[idx] >= self.d])

    def compress(self, idx: np.ndarray, start: np.ndarray) -> None:
        """Replace the rows ``[start_i, N_i)`` of the members ``idx`` (more rows than basis vectors)
        by the ``R_i`` rows of their QR factor: the same ``C^T C``, hence the same sketch, in fewer
        rows."""
        xp = self.xp
        count = int(self.N[idx[0]] - start[0])
        factor = xp.qr_factor(self._range(idx, start, int(self.R[idx].max())))
        keep = np.minimum(count, self.R[idx])
        xp.put_rows(self.C, idx, start, factor, keep, int(self.N[idx].max()))
        self.N[idx] = start + keep

    def drop(self, idx: np.ndarray) -> None:
        """Forget the members ``idx``' rows and ``b`` (a member switching to exact updates takes
        them elsewhere): no rows, no basis, zero arrays."""
        sel = self.xp.select(idx)
        for a in (self.V, self.C, self.H, self.b_coords, self.theta_perp):
            a[sel] = 0.0
        self.N[idx] = 0
        self.carried_coord[idx], self.carried_gram[idx] = 0.0, 0.0
        R = self.R.copy()
        R[idx] = 0
        self._set_R(R)

    # -- raw rows (a sketch nobody queried yet) ----------------------------------------------------
    def append_raw(self, X) -> None:
        """Keep every member's row ``X`` ``(B, d)`` as it is, in the basis buffer's slot ``n_raw``
        (no response: ``b`` is unchanged). Only while the basis is empty and the buffer has room."""
        self.V[:, self.n_raw] = X
        self.n_raw += 1

    def shrink_raw(self, l: int, add_back: bool = False) -> FDPlan:
        """The Frequent Directions shrink (:func:`fd_shrink`) of every member's raw rows ``S`` as
        Liberty's and Ghashami et al.'s sketch does it (``add_back``: ``alpha += delta``): from
        their own ``n x n`` Gram ``S S^T = U diag(s^2) U^T``, the ``k`` new rows
        ``diag(sqrt(w)) U_k^T S`` with ``w = (s^2 - delta) / s^2`` in [0, 1] (so
        ``S_new^T S_new <= S^T S`` however ``U`` is rounded). They stay raw, in the first
        ``max kept`` slots (zero rows past a member's own)."""
        xp = self.xp
        S = xp.astype(self.V[:, : self.n_raw], self.cdtype)
        lam, U = xp.eigh_desc(S @ S.mT)
        lam = xp.maximum(lam, 0.0)
        noise = rounding(xp, self.eps_w, self.eps_c, S.shape[1] + self.d, lam, self.carried())
        plan = fd_shrink(xp, lam, l, noise)
        self._carry(self._members, noise, plan.kept)
        k = plan.keep.shape[1]
        weights = plan.keep / xp.maximum(lam[:, :k], _TINY)
        new_rows = (U[:, :, :k].mT * xp.sqrt(weights)[:, :, None]) @ S  # (B, k, d): zero past kept
        self.V[:] = 0.0
        self.V[:, :k] = xp.astype(new_rows, self.dtype)
        self.n_raw = int(plan.kept.max())
        if add_back:
            self._add_back(self._members, plan.delta)
        return plan

    def settle(self) -> None:
        """Give the raw rows their coordinates, each in turn by the row append (O(d R) a row, what a
        queried sketch pays as it goes; a member's zero rows are skipped): from then on every row is
        in the basis state."""
        xp = self.xp
        raw = xp.copy(self.V[:, : self.n_raw])
        self.V[:, : self.n_raw] = 0.0
        self.n_raw = 0
        for j in range(raw.shape[1]):
            X = raw[:, j]
            sq = xp.norm_sq(X, self.cdtype)
            sq_host = xp.host(sq)
            live = sq_host > 0.0
            self.append(self.expand(X, sq, sq_host), 0.0, None if live.all() else live)
