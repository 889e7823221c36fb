"""Exact ``lambda I + X^T X`` kept through its inverse (Sherman-Morrison), O(d^2) a row.

One projection ``P = arms A^-1`` per round gives both UCB terms (``x^T A^-1 x = p . x`` and,
``A^-1`` being symmetric, ``x^T A^-1 b = p . b``), and the played arm's row of ``P`` is the
``A^-1 x`` of the rank-1 update: the d x d inverse is read once for scoring (``K d^2``
multiply-adds) and written once for the update (``d^2``).

Numerics: Sherman-Morrison on the inverse loses accuracy in the directions where ``A`` is large
(``A^-1`` small) when rows are huge: the subtraction ``A^-1 - p p^T / (1 + q)`` cancels to
``eps ||A^-1||``, and once an eigenvalue of the kept inverse turns negative the next updates
amplify it. Safeguards (:func:`guarded_sherman_morrison_`):

* the width is clamped from below by the valid bound ``||x||^2 / (reg + tr X^T X)`` (never by 0),
  and ``1 + q`` uses the clamped width;
* a width that falls below that bound (beyond rounding, :func:`below_floor`) proves the inverse
  has left the set of valid inverses (``spec(A^-1)`` lies in ``[1/(reg + tr), 1/reg]``); it is then
  repaired by an eigendecomposition whose eigenvalues are clamped to that interval (O(d^3), only
  on such rounds, :func:`repair_inverse_`), before the update.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .backend import Backend
from .base import CovarianceEstimator, ScoreTerms

__all__ = ["ExactCovariance", "below_floor", "repair_inverse_", "guarded_sherman_morrison_"]


def repair_inverse_(xp: Backend, A_inv, lo, hi) -> None:
    """Project each ``(d, d)`` inverse of the stack ``A_inv`` (in place) onto the symmetric matrices
    with spectrum in ``[lo_i, hi_i]`` (host float64 ``(n,)``): the valid inverses of ``reg_i I + X^T X``."""
    sym = 0.5 * (A_inv + A_inv.mT)
    w, U = xp.eigh_desc(sym)
    lo_a, hi_a = xp.cast_like(np.asarray(lo)[:, None], w), xp.cast_like(np.asarray(hi)[:, None], w)
    w = xp.where(w < lo_a, lo_a, w)
    w = xp.where(w > hi_a, hi_a, w)
    A_inv[...] = (U * w[:, None, :]) @ U.mT


def below_floor(raw, floor, d: int, dtype: torch.dtype):
    """Where a computed width ``x^T A^-1 x`` (``raw``) lies below the valid floor by more than a few
    roundings: proof that the kept inverse has left the valid set and needs a repair. The slack is
    a relative ``8 sqrt(d) eps`` (the typical rounding of a length-d dot product in the working
    dtype): on the first round raw and floor are the same number ``||x||^2 / reg`` rounded two
    ways, and a broken inverse falls far below the floor, not by a rounding."""
    return raw < floor * (1.0 - 8.0 * math.sqrt(d) * torch.finfo(dtype).eps)


def guarded_sherman_morrison_(est: "ExactCovariance", Ax, raw, floor, X) -> None:
    """``A^-1 <- A^-1 - (A^-1 x)(A^-1 x)^T / (1 + q)`` per member (in place), ``q`` the width clamped
    at ``floor``; members whose ``raw`` width fell below the floor (:func:`below_floor`) are repaired
    first and their ``A^-1 x`` recomputed. ``Ax`` ``(B, d)`` working, ``raw``/``floor`` ``(B,)`` core."""
    xp = est.xp
    bad = xp.host(below_floor(raw, floor, est.d, est.dtype))
    if bad.any():
        w = np.flatnonzero(bad)
        wi = xp.index(w)
        sub = est.A_inv[wi]
        top = est._reg_host() + est.trace
        repair_inverse_(xp, sub, 1.0 / top[w], 1.0 / est._reg_host()[w])
        est.A_inv[wi] = sub
        Ax = (est.A_inv @ X[:, :, None])[:, :, 0]
        raw = xp.astype(xp.vecdot(Ax, X), est.cdtype)
    q = xp.maximum(raw, floor)
    xp.rank1_update_(est.A_inv, Ax, xp.astype(-1.0 / (1.0 + q), est.dtype))


class ExactCovariance(CovarianceEstimator):
    """The un-sketched baseline: holds ``A^-1`` with ``A = reg I + X^T X`` (shape ``(B, d, d)``).

    Each row costs one Sherman-Morrison update (O(d^2)); queries are one product. The Gram
    matrix itself is kept only when ``keep_gram=True`` (for diagnostics).

    >>> import torch
    >>> est = ExactCovariance(3, reg=1.0)
    >>> est.update(torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))
    >>> float(est.quad_inv(torch.eye(3, dtype=torch.float64))[0])
    0.5
    """

    def __init__(self, d: int, *, reg: float = 1.0, device=None, dtype=None, keep_gram: bool = False,
                 batch_size: int | None = None):
        super().__init__(d, reg=reg, device=device, dtype=dtype, batch_size=batch_size)
        xp = self.xp
        inv_reg = xp.asarray(1.0 / self._reg_host(), self.dtype)
        self.A_inv = inv_reg[:, None, None] * xp.eye(self.d, self.dtype)[None]
        self._b = xp.zeros((self.batch_size, self.d), self.cdtype)
        self.gram = xp.zeros((self.batch_size, self.d, self.d), self.dtype) if keep_gram else None

    @classmethod
    def peak_member_bytes(cls, d: int, dtype: torch.dtype = torch.float64, keep_gram: bool = False,
                          core_bytes: int = 8) -> int:
        """Bytes one member holds at its peak (always), without building anything: the ``d x d`` inverse
        (and Gram) in ``dtype``, and ``b`` (``d``, core dtype of ``core_bytes`` per number)."""
        es = dtype.itemsize
        return es * d * d * (2 if keep_gram else 1) + core_bytes * d

    # -- byte estimate, asked by the agents before building one (agents.estimator_agent) ------
    @classmethod
    def estimate_member_bytes(cls, d: int, *, keep_gram: bool = False, n_arms: int = 1,
                              initial: bool = False, dtype: torch.dtype = torch.float64,
                              core_dtype: torch.dtype = torch.float64) -> int:
        """:meth:`peak_member_bytes`: the state is allocated whole, so the first allocation is the
        peak (``n_arms`` and ``initial`` change nothing)."""
        return cls.peak_member_bytes(d, dtype, keep_gram, core_dtype.itemsize)
    # -- end of the byte estimate --------------------------------------------------------------

    @classmethod
    def from_state(cls, A_inv, b, trace: np.ndarray, n_rows: int, reg, *, device, dtype, gram=None,
                   batch_size: int | None) -> "ExactCovariance":
        """An exact estimator holding the given inverse ``(B, d, d)`` and ``b`` ``(B, d)`` (backend arrays of
        the backend it would choose), e.g. a sketch that switches to exact updates."""
        est = cls(A_inv.shape[-1], reg=reg, device=device, dtype=dtype, keep_gram=gram is not None,
                  batch_size=batch_size)
        est.A_inv = est.xp.astype(A_inv, est.dtype)
        est._b = est.xp.astype(b, est.cdtype)
        est.trace = np.array(trace, dtype=np.float64)
        est.n_rows = n_rows
        if gram is not None:
            est.gram = est.xp.astype(gram, est.dtype)
        return est

    def score_terms(self, arms) -> ScoreTerms:
        """Both terms in the core dtype (the loop compares scores there). A member that has seen no
        nonzero row holds ``A^-1 = I / reg`` exactly, and its width is the floor ``||x||^2 / reg``
        itself, not the working-dtype product: a float32 OFUL breaks the first round's tie of
        unit-norm arms as float64 does."""
        xp = self.xp
        arms_c, sq = self._arm_norms(arms)
        P = arms @ self.A_inv  # (B, K, d): rows A^-1 x; the only K d^2 step
        floor = self._floor(sq)
        raw = xp.astype(xp.vecdot(P, arms), self.cdtype)
        fresh = self.trace == 0.0
        quad = xp.maximum(raw, floor)
        if fresh.any():
            quad = xp.where(xp.cast_like(fresh, quad)[:, None] > 0, floor, quad)
        # in the core dtype: x^T A^-1 b can pass float32's range where A^-1 x and b do not
        mean = (xp.astype(P, self.cdtype) @ self._b[:, :, None])[:, :, 0]
        return ScoreTerms(arms, sq, mean, quad, P, self.n_rows, raw=raw)

    def step(self, X, r, terms: ScoreTerms | None = None, actions=None) -> None:
        xp = self.xp
        if self._fresh(terms, actions):
            ix = self._played(actions)
            xx = self._pick(terms.sq, ix)
            xx_h = xp.host(xx).astype(np.float64)
            Ax = self._pick(terms.proj, ix)
            raw = self._pick(terms.raw, ix)
        else:
            xx, xx_h = self._row_norms(X)
            Ax = (self.A_inv @ X[:, :, None])[:, :, 0]
            raw = xp.astype(xp.vecdot(Ax, X), self.cdtype)
        floor = xx / xp.asarray(self._reg_host() + self.trace, self.cdtype)
        guarded_sherman_morrison_(self, Ax, raw, floor, X)
        if self.gram is not None:
            xp.rank1_update_(self.gram, X, xp.asarray(np.ones(self.batch_size), self.dtype))
        Xc = xp.astype(X, self.cdtype)
        self._b += (r if isinstance(r, float) else xp.asarray(r, self.cdtype)[:, None]) * Xc
        self.trace += xx_h
        self.n_rows += 1

    def _quad(self, arms):
        xp = self.xp
        raw = xp.astype(xp.vecdot(arms @ self.A_inv, arms), self.cdtype)
        return xp.maximum(raw, self._floor(xp.norm_sq(arms, self.cdtype)))

    def _solve(self, V):
        xp = self.xp
        return xp.astype((self.A_inv @ xp.astype(V, self.dtype)[:, :, None])[:, :, 0], self.cdtype)

    def _theta_all(self):
        return self._solve(self._b)

    def _b_all(self):
        return self._b

    def _covariance(self):
        xp = self.xp
        if self.gram is not None:
            return xp.copy(self.gram)
        # X^T X = A - reg I recovered from the inverse (diagnostics only; O(d^3))
        inv = np.linalg.inv(self.A_inv) if xp.is_numpy else torch.linalg.inv(self.A_inv)
        return inv - xp.asarray(self._reg_host(), self.dtype)[:, None, None] * xp.eye(self.d, self.dtype)

    def sketch_sizes(self):
        return np.full(self.batch_size, self.d, dtype=np.int64)

    def member_memory_bytes(self):
        ec = self.cdtype.itemsize
        return np.full(self.batch_size, self.peak_member_bytes(self.d, self.dtype, self.gram is not None, ec),
                       dtype=np.int64)

    def _held_bytes(self):
        xp = self.xp
        arrays = [a for a in (self.A_inv, self.gram, self._b) if a is not None]
        return int(sum(a.nbytes for a in arrays) if xp.is_numpy else sum(a.element_size() * a.nelement() for a in arrays))
