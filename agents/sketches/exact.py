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

What one update loses (the threshold of :class:`~agents.sketches.base.PrecisionWarning` for this
estimator): with ``u = A^-1 x`` and ``q = x^T u``, the update leaves in the direction of ``x``

    x^T A_new^-1 x = q - q^2 / (1 + q) = q / (1 + q),

the difference of two numbers of size ``q``: rounded to ``eps`` of the working dtype, its
relative error is about ``eps (1 + q)``. (Ordinary rounding is ``eps``; the factor ``1 + q`` is
the cancellation.) The kept matrix is then the exact inverse of ``A + F``, ``F`` of relative size
``eps (1 + q)`` in that direction, and later updates carry ``F`` over unchanged (Sherman-Morrison on
the inverse of ``A + F`` is the inverse of ``A + F + x x^T``) while ``A`` only grows: the largest
``eps (1 + q)`` of the stream bounds the loss (up to the few updates, at most ``d``, that reach
it). ``q`` is largest on the first rows, ``||x||^2 / lam``: with ``lam`` 14 decades below
``||x||^2`` (``lam = 1e-14`` for unit arms, ``1e-8`` for arms of norm ``1e3``) float64 loses 2% of
the widths on the first ``d`` rows and OFUL's choices follow. :attr:`ExactCovariance.largest_width`
keeps the largest played ``q``; :meth:`ExactCovariance.inexact_updates` says when
``eps (1 + q)`` passes :data:`UPDATE_TOLERANCE`.

Draws (Thompson sampling, :meth:`ExactCovariance.draw_all`): a square-root factor ``S``
(``d x d``, not triangular) with ``S S^T = A^-1``, kept only once the estimator has drawn. The first
draw takes the lower Cholesky factor of the kept ``A^-1`` (``I / sqrt(reg)`` before any row), and
every row ``x`` then updates ``S`` as Potter's square-root filter does (:func:`potter_update_`):

    u = S^T x,   s = u^T u,   S <- S - (S u) u^T / (sqrt(1 + s) (1 + sqrt(1 + s))),

so that ``S S^T`` follows Sherman-Morrison's ``A^-1 - (A^-1 x)(A^-1 x)^T / (1 + s)`` (``S u =
S S^T x``; the coefficient ``c = (1 - 1/sqrt(1 + s)) / s`` written without the cancellation at small
``s``, and ``2 c - c^2 s = 1 / (1 + s)``): two ``d^2`` products a row (``S^T x`` and the outer
update; ``S u = A^-1 x`` is the one the Sherman-Morrison step of the kept inverse forms), and
``S S^T`` stays positive semi-definite whatever the rounding. A draw is one more ``d^2`` product;
no ``O(d^3)`` factorization after the first.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .backend import Backend
from .base import CovarianceEstimator, ScoreTerms

__all__ = [
    "UPDATE_TOLERANCE",
    "ExactCovariance",
    "below_floor",
    "guarded_sherman_morrison_",
    "potter_update_",
    "repair_inverse_",
]

#: The largest relative error ``eps (1 + q)`` one Sherman-Morrison update may leave (the module
#: docstring) before the estimator says its updates lost accuracy
#: (:meth:`ExactCovariance.inexact_updates`): a thousandth of the widths.
UPDATE_TOLERANCE = 1e-3


def repair_inverse_(xp: Backend, A_inv, lo, hi) -> None:
    """Project each ``(d, d)`` inverse of the stack ``A_inv`` (in place) onto the symmetric matrices
    with spectrum in ``[lo_i, hi_i]`` (host float64 ``(n,)``): the valid inverses of
    ``reg_i I + X^T X``."""
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


def guarded_sherman_morrison_(est: ExactCovariance, Ax, raw, floor, X) -> None:
    """``A^-1 <- A^-1 - (A^-1 x)(A^-1 x)^T / (1 + q)`` per member (in place), ``q`` the width
    clamped at ``floor``; members whose ``raw`` width fell below the floor (:func:`below_floor`) are
    repaired first and their ``A^-1 x`` recomputed. ``Ax`` ``(B, d)`` working, ``raw``/``floor``
    ``(B,)`` core."""
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
    np.maximum(est.largest_width, xp.host(q), out=est.largest_width)
    xp.rank1_update_(est.A_inv, Ax, xp.astype(-1.0 / (1.0 + q), est.dtype))


def potter_update_(xp: Backend, S, X, Ax=None) -> None:
    """Potter's square-root update of each factor ``S_i`` (``(B, d, d)``, in place) with the row
    ``x_i`` (``X`` ``(B, d)``, same dtype): ``S S^T <- S S^T - (S S^T x)(S S^T x)^T / (1 + x^T S
    S^T x)``, the Sherman-Morrison step of ``A <- A + x x^T`` on ``A^-1 = S S^T`` (module
    docstring). ``Ax``: ``A^-1 x`` when the caller has it (the kept inverse's, equal to ``S S^T x``
    up to rounding; it saves the product ``S u``). ``S S^T`` stays positive semi-definite either
    way."""
    u = (S.mT @ X[:, :, None])[:, :, 0]  # S^T x
    root = xp.sqrt(1.0 + xp.vecdot(u, u))
    Su = (S @ u[:, :, None])[:, :, 0] if Ax is None else Ax  # S S^T x = A^-1 x
    xp.outer_update_(S, Su, u, -1.0 / (root * (1.0 + root)))


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

    def __init__(
        self,
        d: int,
        *,
        reg: float = 1.0,
        device=None,
        dtype=None,
        keep_gram: bool = False,
        batch_size: int | None = None,
        backend: Backend | None = None,
    ):
        super().__init__(
            d, reg=reg, device=device, dtype=dtype, batch_size=batch_size, backend=backend
        )
        xp = self.xp
        inv_reg = xp.asarray(1.0 / self._reg_host(), self.dtype)
        self.A_inv = inv_reg[:, None, None] * xp.eye(self.d, self.dtype)[None]
        self._b = xp.zeros((self.batch_size, self.d), self.cdtype)
        self.gram = xp.zeros((self.batch_size, self.d, self.d), self.dtype) if keep_gram else None
        #: The largest width ``x^T A^-1 x`` an update has played, per member (host float64
        #: ``(B,)``): one update's rounding error is about ``eps (1 + q)`` (the module docstring).
        self.largest_width = np.zeros(self.batch_size)
        # the largest width whose update stays within the tolerance: eps (1 + q) <= tolerance
        self._quiet_width = UPDATE_TOLERANCE / torch.finfo(self.dtype).eps - 1.0
        # S (B, d, d) with S S^T = A^-1, working dtype: None until the first draw (draw_all);
        # members joined without one (joined) hold zeros (Potter's update leaves them so) until
        # their first draw
        self.factor = None
        self._unfactored = np.zeros(self.batch_size, dtype=bool)

    @classmethod
    def peak_member_bytes(
        cls,
        d: int,
        dtype: torch.dtype = torch.float64,
        keep_gram: bool = False,
        core_bytes: int = 8,
    ) -> int:
        """Bytes one member holds at its peak (always), without building anything: the ``d x d``
        inverse (and Gram) in ``dtype``, and ``b`` (``d``, core dtype of ``core_bytes`` per
        number)."""
        es = dtype.itemsize
        return es * d * d * (2 if keep_gram else 1) + core_bytes * d

    # -- byte estimate, asked by the agents before building one (agents.estimator_agent) ------
    @classmethod
    def estimate_member_bytes(
        cls,
        d: int,
        *,
        keep_gram: bool = False,
        n_arms: int = 1,
        initial: bool = False,
        dtype: torch.dtype = torch.float64,
        core_dtype: torch.dtype = torch.float64,
    ) -> int:
        """:meth:`peak_member_bytes`: the state is allocated whole, so the first allocation is the
        peak (``n_arms`` and ``initial`` change nothing)."""
        return cls.peak_member_bytes(d, dtype, keep_gram, core_dtype.itemsize)

    @classmethod
    def draw_state_bytes(cls, d: int, dtype: torch.dtype = torch.float64) -> int:
        """The square-root factor ``S`` (``d x d``, ``dtype``) kept once the estimator draws."""
        return dtype.itemsize * d * d

    # -- end of the byte estimate --------------------------------------------------------------

    @classmethod
    def from_inverse(
        cls,
        A_inv,
        b,
        *,
        reg,
        trace=None,
        n_rows: int = 0,
        gram=None,
        device=None,
        dtype=None,
        batch_size: int | None = None,
        largest_width=None,
        backend: Backend | None = None,
    ) -> ExactCovariance:
        """An exact estimator that already holds ``A^-1`` ``(B, d, d)`` and ``b`` ``(B, d)`` (arrays
        of the backend it chooses, or tensors), e.g. the ``A_hat^-1`` of a sketch that switches to
        exact updates: ``reg`` its ridge (one value or B), ``trace`` ``tr X^T X`` so far (host
        ``(B,)``; the widths' valid floor is ``||x||^2 / (reg + trace)``), ``n_rows`` the rows it
        counts as seen, ``gram`` the Gram ``X^T X`` to keep with it (``keep_gram``),
        ``largest_width`` the largest width its updates have played so far (host ``(B,)``; 0 by
        default), ``backend`` the array backend (the builder's own; ``None``: the device's)."""
        est = cls(
            A_inv.shape[-1],
            reg=reg,
            device=device,
            dtype=dtype,
            keep_gram=gram is not None,
            batch_size=batch_size,
            backend=backend,
        )
        est.A_inv = est.xp.asarray(A_inv, est.dtype)
        est._b = est.xp.asarray(b, est.cdtype)
        est.trace = np.zeros(est.batch_size) if trace is None else np.array(trace, dtype=np.float64)
        est.n_rows = n_rows
        if largest_width is not None:
            est.largest_width = np.array(largest_width, dtype=np.float64)
        if gram is not None:
            est.gram = est.xp.asarray(gram, est.dtype)
        return est

    @classmethod
    def from_state(
        cls,
        A_inv,
        b,
        trace: np.ndarray,
        n_rows: int,
        reg,
        *,
        device,
        dtype,
        gram=None,
        batch_size: int | None,
    ) -> ExactCovariance:
        """:meth:`from_inverse` with positional ``trace``, ``n_rows`` and ``reg`` (the former
        spelling)."""
        return cls.from_inverse(
            A_inv,
            b,
            reg=reg,
            trace=trace,
            n_rows=n_rows,
            gram=gram,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
        )

    def joined(self, other: ExactCovariance, order: np.ndarray) -> ExactCovariance:
        """One estimator of this one's members and ``other``'s: member ``j`` of the result is member
        ``order[j]`` of the two lists one after the other (a batch of ``len(order)``, in this one's
        backend, counting this one's rows as seen)."""
        xp = self.xp
        oi = xp.index(order)
        gram = (
            None
            if self.gram is None
            else xp.concat(self.gram, xp.asarray(other.gram, self.dtype), axis=0)[oi]
        )
        reg = np.concatenate([self._reg_host(), other._reg_host()])[order]
        joined = ExactCovariance.from_inverse(
            xp.concat(self.A_inv, xp.asarray(other.A_inv, self.dtype), axis=0)[oi],
            xp.concat(self._b, xp.asarray(other._b, self.cdtype), axis=0)[oi],
            reg=reg.tolist(),
            trace=np.concatenate([self.trace, other.trace])[order],
            n_rows=self.n_rows,
            gram=gram,
            device=self.device,
            dtype=self.dtype,
            batch_size=len(order),
            largest_width=np.concatenate([self.largest_width, other.largest_width])[order],
            backend=xp,
        )
        if self.factor is not None:  # members that draw keep their factors; others start theirs
            theirs = other.factor
            if theirs is None:
                theirs = xp.zeros(other.A_inv.shape, self.dtype)
            joined.factor = xp.concat(self.factor, xp.asarray(theirs, self.dtype), axis=0)[oi]
            unfactored = np.concatenate(
                [self._unfactored, np.full(other.batch_size, other.factor is None)]
            )
            joined._unfactored = unfactored[order]
        return joined

    def inexact_updates(self) -> str | None:
        """What the Sherman-Morrison updates lost, when one update's rounding error ``eps (1 + q)``
        (the module docstring) passed :data:`UPDATE_TOLERANCE` for some member; else None."""
        q = float(self.largest_width.max())
        if q <= self._quiet_width:
            return None
        eps = torch.finfo(self.dtype).eps
        raise_by = eps * (1.0 + q) / UPDATE_TOLERANCE
        float64 = "" if self.dtype == torch.float64 else "dtype=torch.float64, "
        return (
            f"an update of A^-1 = (lam I + X^T X)^-1 played a width x^T A^-1 x = {q:.3g}, where "
            f"Sherman-Morrison's subtraction cancels: one update's rounding error is up to "
            f"eps (1 + q) = {eps * (1.0 + q):.2g} of the widths ({self.dtype}), beyond "
            f"{UPDATE_TOLERANCE:g}, and the choices can differ from exact arithmetic's. Use "
            f"{float64}a lam about {raise_by:.2g} times larger, rescaled arms, or SOFUL/CBSCFD "
            "with sketch_size > d (the same A_hat, kept without that cancellation)"
        )

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

    def step(self, X, r, terms: ScoreTerms | None = None, actions=None, before=None) -> None:
        xp = self.xp
        rows = self._admit_rows(X, r, terms, actions, before)
        sq, sq_host = rows.sq, rows.sq_host
        if rows.played is not None:
            Ax = self._pick(terms.proj, rows.played)
            raw = self._pick(terms.raw, rows.played)
        else:
            Ax = (self.A_inv @ X[:, :, None])[:, :, 0]
            raw = xp.astype(xp.vecdot(Ax, X), self.cdtype)
        floor = sq / xp.asarray(self._reg_host() + self.trace, self.cdtype)
        if self.factor is not None:  # (before the inverse moves: its A^-1 x is the factor's)
            potter_update_(xp, self.factor, X, Ax)
        guarded_sherman_morrison_(self, Ax, raw, floor, X)
        if self.gram is not None:
            xp.rank1_update_(self.gram, X, xp.asarray(np.ones(self.batch_size), self.dtype))
        Xc = xp.astype(X, self.cdtype)
        self._b += (r if isinstance(r, float) else xp.asarray(r, self.cdtype)[:, None]) * Xc
        self.trace += sq_host
        self.n_rows += 1

    def quad_all(self, arms):
        xp = self.xp
        raw = xp.astype(xp.vecdot(arms @ self.A_inv, arms), self.cdtype)
        return xp.maximum(raw, self._floor(xp.norm_sq(arms, self.cdtype)))

    def solve_all(self, V):
        xp = self.xp
        return xp.astype((self.A_inv @ xp.astype(V, self.dtype)[:, :, None])[:, :, 0], self.cdtype)

    def theta_all(self):
        return self.solve_all(self._b)

    def b_all(self):
        return self._b

    def draw_all(self, Z):
        """``S z`` with the kept square-root factor ``S`` (``S S^T = A^-1``; module docstring):
        the lower Cholesky factor of ``A^-1`` at the first draw (:meth:`_first_factor`), Potter's
        update of it with every row since. ``d^2`` a draw."""
        xp = self.xp
        if self.factor is None:
            self.factor = self._first_factor(np.arange(self.batch_size))
        elif self._unfactored.any():
            idx = np.flatnonzero(self._unfactored)
            self.factor[xp.index(idx)] = self._first_factor(idx)
            self._unfactored[:] = False
        # in the working dtype, as the inverse's products (no core copy of the d x d factor)
        return xp.astype(xp.astype(Z, self.dtype) @ self.factor.mT, self.cdtype)

    def _first_factor(self, idx: np.ndarray):
        """The lower Cholesky factors ``L`` of the kept ``A^-1 = L L^T`` of the members ``idx``
        ``(n, d, d)``, working dtype (O(d^3 / 3)); a member whose kept inverse rounding made
        indefinite is first projected onto the valid inverses (:func:`repair_inverse_` on a
        copy)."""
        xp = self.xp
        A_inv = self.A_inv[xp.index(idx)]
        inv = xp.astype(0.5 * (A_inv + A_inv.mT), self.cdtype)
        L, failed = xp.cholesky_ex(inv)
        bad = np.flatnonzero(failed)
        if bad.size:
            bi = xp.index(bad)
            sub = inv[bi]
            top, reg = (self._reg_host() + self.trace)[idx], self._reg_host()[idx]
            repair_inverse_(xp, sub, 1.0 / top[bad], 1.0 / reg[bad])
            L[bi] = xp.cholesky(sub)
        return xp.astype(L, self.dtype)

    def covariance_all(self):
        xp = self.xp
        if self.gram is not None:
            return xp.copy(self.gram)
        # X^T X = A - reg I recovered from the inverse (diagnostics only; O(d^3))
        return xp.inv(self.A_inv) - xp.asarray(self._reg_host(), self.dtype)[
            :, None, None
        ] * xp.eye(self.d, self.dtype)

    def sketch_sizes(self):
        return np.full(self.batch_size, self.d, dtype=np.int64)

    def member_memory_bytes(self):
        ec = self.cdtype.itemsize
        return np.full(
            self.batch_size,
            self.peak_member_bytes(self.d, self.dtype, self.gram is not None, ec)
            + (0 if self.factor is None else self.draw_state_bytes(self.d, self.dtype)),
            dtype=np.int64,
        )

    def _held_bytes(self):
        arrays = (self.A_inv, self.gram, self._b, self.factor)
        return sum(self.xp.nbytes(a) for a in arrays if a is not None)
