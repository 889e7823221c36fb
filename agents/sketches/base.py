"""The one interface every covariance estimator implements, batch dimension first.

A *covariance estimator* sees, for each of B independent members, a stream of rows
x_1, x_2, ... in R^d (and their responses r_1, r_2, ...) and maintains

    A_hat = reg * I + (approximation of X^T X)          (X = [x_1; ...; x_t])
    b     = sum_s r_s x_s                                (the ridge right-hand side)

Each estimator (exact, FD, RFD, Dyadic Block Sketch) exists ONCE, with a leading batch
dimension, as ``torch.distributions`` does with batch shapes: ``batch_size=B`` gives B
members advanced as one tensor program, ``batch_size=None`` (the default) a single estimator
whose public methods take and return unbatched shapes. The single estimator *is* B = 1 of the
same code (same state, same operations); nothing is implemented twice. Where a batch of one
costs more in per-call overhead than in arithmetic (the scoring products and the O(m) append
of a round, at d = 784 ~half of a round), FD and DBS take the same steps on member 0's
unbatched views (``_score_terms_one``, ``_step_one``, :func:`~agents.sketches.fd.border_one_`,
which the batched append also calls at B = 1); reductions, look-aheads and the exact mode are
the batched code.

Public API (shapes for ``batch_size=None``; add a leading B otherwise):

* ``update(x, r=0.0)``: add the row ``x`` (d,) with response ``r``; validated first.
* ``quad_inv(arms)``: ``x^T A_hat^-1 x`` for the K rows of ``arms`` (K, d) -> (K,).
* ``solve(v)``: ``A_hat^-1 v``; ``theta()``: ``A_hat^-1 b``.
* ``covariance()``: the dense approximation of ``X^T X`` (diagnostics only).
* ``sketch_size``, ``memory_bytes()``, ``logdet_increment(x)``.

The optimistic loop (:class:`agents.linucb.LinUCB`) calls the batched internals: ``score_terms``
(both UCB terms of every arm from ONE projection of the arms) and ``step`` (add the played rows,
reusing that projection). No bandit logic lives here: this is pure linear algebra.

Numerics, shared by every estimator (DESIGN.md: "make float32 a tested citizen"):

* The big state (rows, the exact inverse) lives in the working dtype; ``b``, the sketches' anchor
  and the small ``m x m`` core of a sketch (Gram, inverse Cholesky factor, ``y = Linv S r / rho``) live in float64
  (float32 on MPS, which has no float64) whatever the working dtype. Its cost is O(m^2) a
  round, and it removes the squaring of the condition number from float32 runs.
* Widths are clamped from below by the cheap valid bound ``||x||^2 / (reg + tr(X^T X))``
  (``lambda_max(A_hat) <= reg + tr``), never by 0, so rounding cannot make an arm look known.
* float32 decides as float64 wherever float32's own error allows (issue 10; measured with
  ``benchmarks/bench_float32.py``): ``||x||^2`` is summed in the core dtype and ``score_terms``
  returns both UCB terms in the core dtype, so the loop compares scores there
  (:meth:`_sq_norms`: unit-norm arms tie exactly in the first round, and float32 rounding
  broke that tie otherwise than float64); FD/DBS reductions decide on the Gram of the stored
  rows recomputed in the core dtype (:meth:`_reduction_gram`), so their rank cut sits at
  float64's rounding level, not float32's; ``b`` is summed in the core dtype and the sketches'
  mean goes through an anchor (:meth:`_reanchor`), so no term of size ``|b| ~ t`` cancels. What
  remains is ~``eps32 lambda_max / rho`` in each score (the float32 rows and the one ``arms S^T``
  product in the Woodbury form), which decides only near-ties (``benchmarks/bench_drift.py``).
* Scalars never leave the device through ``float(tensor)`` inside a round (a float32 value
  passed back as a Python scalar can overflow), and any row whose squared norm overflows the
  working dtype is rejected before the state changes, with an error naming the fix.
"""

from __future__ import annotations

import math
import operator
from abc import ABC, abstractmethod

import numpy as np
import torch
from scipy.linalg.blas import daxpy, saxpy

from .._torch import as_vector, numpy_blas_threads, resolve_device, resolve_dtype
from .._validate import per_member

__all__ = ["CovarianceEstimator", "core_dtype"]


def core_dtype(device: torch.device) -> torch.dtype:
    """The dtype of the small ``m x m`` core of a sketch: float64, except on MPS (no float64)."""
    return torch.float32 if device.type == "mps" else torch.float64


def _check_reg(name: str, reg) -> float:
    try:
        reg_f = float(reg)
    except (TypeError, ValueError):
        reg_f = float("nan")
    if isinstance(reg, bool) or not (reg_f > 0.0 and np.isfinite(reg_f)):
        raise ValueError(f"{name} (the ridge lambda) must be a finite number > 0, got {reg!r}")
    return reg_f


_NUMPY_DTYPES = {torch.float64: np.float64, torch.float32: np.float32}


# The B = 1 round is written once, with operators numpy arrays and torch tensors share (``@``,
# ``*``, slicing, item stores) and these three where their spellings differ, so that it runs on
# numpy views on CPU (:meth:`CovarianceEstimator._member0`) and on tensors elsewhere.
_np_rowdot = getattr(np, "vecdot", None) or (lambda x, y: np.einsum("ij,ij->i", x, y))  # the ufunc: numpy >= 2


def rowdot(x, y):
    """``x_k . y_k`` for every row k (numpy arrays or tensors)."""
    return _np_rowdot(x, y) if isinstance(x, np.ndarray) else torch.linalg.vecdot(x, y)


def maximum(x, y):
    """Elementwise maximum (numpy arrays or tensors)."""
    return np.maximum(x, y) if isinstance(x, np.ndarray) else torch.maximum(x, y)


_AXPY = {np.dtype(np.float64): daxpy, np.dtype(np.float32): saxpy}


def axpy_(y, a: float, x) -> None:
    """``y += a x`` in place (numpy arrays or tensors). On the host path BLAS's axpy on the
    contiguous views: ~0.25 us against ~1.6 us for numpy's ``y += a * x`` (a temporary and two
    passes), and the single agent's round makes four such updates (``b``, ``r / rho``, ``u``, ``y``)."""
    if isinstance(y, np.ndarray):
        _AXPY[y.dtype](x, y, a=a)  # f2py updates y in place (a contiguous array of its dtype)
    else:
        y.add_(x, alpha=a)


def as_tensor(t) -> torch.Tensor:
    """A tensor (a numpy result of the host path becomes a tensor sharing its memory)."""
    return torch.from_numpy(t) if isinstance(t, np.ndarray) else t


def eigh_desc(G):
    """Eigenvalues (descending) and eigenvectors of the symmetric matrices ``G`` (``(..., m, m)``,
    lower triangle read): numpy's LAPACK for numpy arrays (the B = 1 host path), torch's for tensors.

    The two round differently in the last bits, so on a stream whose eigenvalues tie in exact
    arithmetic (orthogonal rows of equal norms) the host and batched paths see the tie split
    differently, by ~tens of eps. The rank cut sits far above that (``_rank_tol``, 64 (m + sqrt d)
    eps lambda_max), so both keep the same rows; with the old 2 (m + sqrt d) they did not, which is
    why the host path once called torch here too. numpy's own LAPACK keeps the host reduction on
    the library the rest of the round uses: inside the loop torch's (MKL) eigh and GEMM took
    ~1.1-1.26 ms a reduction against ~1.01-1.06 ms (d = 784, l = 50), ~4-7 us a round."""
    if isinstance(G, np.ndarray):
        evals, evecs = np.linalg.eigh(G)
        return evals[..., ::-1], evecs[..., ::-1]
    evals, evecs = torch.linalg.eigh(G)
    return evals.flip(-1), evecs.flip(-1)


def set_anchor_(anchor, theta0) -> None:
    """Anchor rows ``[theta0; r / rho; u]`` (``(..., 3, d)``, numpy or tensor) set to a fresh anchor
    ``theta0`` ``(..., d)``: residual 0, ``u = theta0`` (``CovarianceEstimator._reanchor``)."""
    anchor[..., 0, :] = theta0
    anchor[..., 1, :] = 0.0
    anchor[..., 2, :] = theta0


def ridge_solution(b, S, Linv, ridge):
    """``A_hat^-1 b = (b - S^T Linv^T Linv S b) / ridge`` (seed 000 eq. 4 applied to ``b``) for a stack
    of members: ``b`` ``(..., d)``, rows ``S`` ``(..., R, d)`` and the inverse Cholesky factor ``Linv``
    ``(..., R, R)`` of ``S S^T + ridge I``, all in the core dtype; ``ridge`` a float or ``(..., 1)``.
    numpy arrays or tensors."""
    y = Linv @ (S @ b[..., None])  # Linv S b
    return (b - (S.swapaxes(-1, -2) @ (Linv.swapaxes(-1, -2) @ y))[..., 0]) / ridge


class CovarianceEstimator(ABC):
    """Streaming estimate of ``reg * I + X^T X`` and of ``b = sum r x``, for B members at once.

    The sketches (FD, RFD, Dyadic Block Sketch: ``anchored = True``) compute the mean term
    ``x^T A_hat^-1 b`` around an *anchor* (:meth:`_reanchor`); the exact estimator reads it off
    its inverse, ``(A^-1 x) . b``, which does not cancel.

    Args:
        d: dimension of the rows.
        reg: ridge term added to the estimate (the bandit's lambda); must be > 0. Batched, a
            sequence of B values gives member i the ridge ``reg[i]`` (``self.reg`` is then a
            float64 array ``(B,)``; it stays a float when the members agree).
        device, dtype: where the state lives; see :func:`agents._torch.resolve_device`.
        batch_size: ``None`` (default) for one estimator with unbatched shapes, or B >= 1.
    """

    #: whether the mean term goes through an anchor ``theta0`` and the residual ``r = b - A_hat theta0``
    anchored = False
    #: whether :meth:`step` at B = 1 takes ``X = None`` for a scored arm (``actions`` an int right
    #: after :meth:`_score_terms_one`): the row is then read from the scoring cache (FD, DBS)
    row_from_cache = False

    def __init__(self, d: int, *, reg: float = 1.0, device=None, dtype=None, batch_size: int | None = None):
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 1:
            raise ValueError(f"d must be a positive int, got {d!r}")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                                       or batch_size < 1):
            raise ValueError(f"batch_size must be None or an int >= 1, got {batch_size!r}")
        # the ridge may differ across members (a sequence of B values); one value when they agree
        reg_v = per_member("reg", reg, None if batch_size is None else int(batch_size), _check_reg)
        self.d = int(d)
        self.reg = reg_v  # a float, or (members differing) a float64 array (B,)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.cdtype = core_dtype(self.device)
        self._same = self.cdtype == self.dtype  # .to() calls are skipped then (each costs a dispatch)
        # relative accuracy of the Grams the reductions decide on (see _reduction_gram)
        self._eps_gram = torch.finfo(self.dtype).eps if self._same else (
            torch.finfo(self.cdtype).eps + torch.finfo(self.dtype).eps ** 2)
        self.single = batch_size is None
        self.batch_size = 1 if batch_size is None else int(batch_size)
        self._kw = {"device": self.device, "dtype": self.dtype}
        self._ckw = {"device": self.device, "dtype": self.cdtype}
        self._members = torch.arange(self.batch_size, device=self.device)
        # b = sum r x in the core dtype: a sum of t terms, and the anchored sketches solve with it (_reanchor)
        self.b = torch.zeros(self.batch_size, self.d, **self._ckw)
        #: the anchored sketches' ``[theta0; r / rho; u]`` per member, ``(B, 3, d)`` core (see _reanchor); None
        #: when not anchored (or, DBS, once every member is exact)
        self._anchor = torch.zeros(self.batch_size, 3, self.d, **self._ckw) if self.anchored else None
        self._unanchored = np.zeros(self.batch_size, dtype=np.bool_)  # members to re-anchor (see _unanchor)
        self._r_hi = self._b_lo = None  # B = 1 host rounds: bounds |r| <= _r_hi, |b| >= _b_lo (_reanchor_one_if_stale)
        self.trace = np.zeros(self.batch_size)  # tr(X^T X) per member, for the width floor
        self.n_rows = 0
        self._views0: dict = {}  # see _member0
        #: B = 1 rounds run their steps on numpy views of member 0 (:meth:`_member0`): only on
        #: CPU, where a tensor and its ``.numpy()`` share memory, and while numpy's BLAS uses one
        #: thread (:func:`agents._torch.numpy_blas_threads`). Set it False to run the very same
        #: code on tensor views, as every other device does.
        self.host = self.device.type == "cpu"

    # -- the batched internals the optimistic loop calls ------------------------------------
    @abstractmethod
    def score_terms(self, arms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x^T A_hat_i^-1 b_i, x^T A_hat_i^-1 x)`` for every arm of every member, each ``(B, K)``
        in the core dtype (the loop compares scores there), from one projection of the
        ``(B, K, d)`` arms, kept for the next :meth:`step`."""

    def _score_terms_one(self, arms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """B = 1: :meth:`score_terms` of one ``(K, d)`` arm set, as ``(K,)`` terms. Estimators with
        a cheaper unbatched path (FD, DBS) override it, returning the terms in the core dtype
        (numpy arrays on the host path); their cache then serves :meth:`step`."""
        mean, quad = self.score_terms(arms.unsqueeze(0))
        return mean[0], quad[0]

    def _woodbury_terms_one(self, arms: torch.Tensor, S: torch.Tensor, Linv: torch.Tensor, y: torch.Tensor, rows: int,
                            ridge: float, diag: int = 0) -> tuple:
        """The sketches' (FD, DBS) :meth:`_score_terms_one` from member 0 of their rows ``S``
        ``(1, R, d)``, inverse factor ``Linv`` ``(1, R, R)`` of ``S S^T + ridge I`` and ``y = Linv S r / ridge``
        ``(1, R)``, of which the first ``rows`` are held: 2-D products on member 0's views (numpy on
        CPU, :meth:`_member0`, else tensors) and host scalars, the same arithmetic as their
        batched ``score_terms``. Returns ``(mean, quad, (U, W, sq, a, ac))`` with the ``(K,)`` terms in
        the core dtype (float64: the single agent ranks its arms there also when working in
        float32) and, for the estimator's :meth:`step`, ``U = arms S^T``, ``W = U Linv^T`` (``(K, rows)``,
        None without rows), ``||arms||^2``, the arms and the arms in the core dtype (numpy arrays on
        the host path):

            mean = x^T u - w^T y   (= x^T theta0 + x^T A_hat^-1 r, :meth:`_reanchor`)
            quad = max((||x||^2 - ||w||^2) / ridge, ||x||^2 / (reg + tr X^T X + alpha))  (:meth:`_floor`)

        ``diag``: the leading rows of ``Linv`` that are diagonal (FD's rows kept by its last
        reduction, Alg. 2 line 7): their columns of ``W`` are ``U`` scaled, and only the rows
        appended since go through the product, ``K (rows - diag) rows`` multiply-adds instead of
        ``K rows^2`` (~3x fewer on average at l = 50; at K = 10 the scaling's own ~2 us leave a
        gain of ~0.3-1 us, growing with the rows held, and with K)."""
        S, Linv, y, anchor = self._member0("one", (S, Linv, y, self._anchor), big=True)
        a = arms.numpy() if isinstance(S, np.ndarray) else arms
        ac = self._core(a)
        sq = rowdot(ac, ac)  # ||x||^2 in the core dtype: float32 runs rank near-tied widths as float64 runs do
        xu = ac @ anchor[2]  # x^T u, u = theta0 + r / ridge
        floor = sq / float(self.reg + self.trace[0] + self._alpha_total()[0])  # host floats: no (1, 1) arrays
        if rows == 0:
            return xu, maximum(sq / ridge, floor), (None, None, sq, a, ac)
        # the only O(K d R) step. On the host path as (S a^T)^T, a transposed view: numpy's BLAS runs
        # that orientation ~6% faster at K = 10, d = 784 (measured inside the loop: ~41 against
        # ~44 us at R = 75); torch's runs the other one faster (S a^T: ~2x slower on CPU)
        U = self._core((S[:rows] @ a.T).T if isinstance(S, np.ndarray) else a @ S[:rows].T)
        Li = Linv[:rows, :rows]
        if diag:
            W = U * Li.diagonal()  # right on the first diag columns (numpy arrays and tensors alike)
            W[:, diag:] = U @ Li[diag:].T
        else:
            W = U @ Li.T  # rows Linv S x
        xu -= W @ y[:rows]  # the mean (in place on fresh arrays: the same arithmetic, no temporaries)
        ww = rowdot(W, W)
        ww -= sq
        ww /= -ridge  # (||x||^2 - ||w||^2) / ridge
        return xu, maximum(ww, floor), (U, W, sq, a, ac)

    @abstractmethod
    def step(self, X: torch.Tensor, r: torch.Tensor, actions: torch.Tensor | None = None) -> None:
        """Add row ``X[i]`` with response ``r[i]`` to member i. ``actions``: ``X[i]`` is row
        ``actions[i]`` of the arms of the last :meth:`score_terms` (unchanged since), so its
        projection may be reused; ``None``: no such promise. ``X`` is validated (finite); it may be
        ``None`` where :attr:`row_from_cache` says so."""

    @abstractmethod
    def _quad(self, arms: torch.Tensor) -> torch.Tensor:
        """``(B, K, d) -> (B, K)`` without touching the projection cache."""

    @abstractmethod
    def _solve(self, V: torch.Tensor) -> torch.Tensor:
        """``(B, d) -> (B, d)``: ``A_hat_i^-1 v_i``."""

    @abstractmethod
    def _covariance(self) -> torch.Tensor:
        """``(B, d, d)``: the dense approximation of ``X_i^T X_i`` (without ``reg``)."""

    @abstractmethod
    def sketch_sizes(self) -> np.ndarray:
        """Rows of sketch held now per member (``d`` when exact): int array ``(B,)``."""

    @abstractmethod
    def member_memory_bytes(self) -> np.ndarray:
        """Bytes one member's estimator holds (what ``memory_bytes()`` reports at B = 1): ``(B,)``."""

    def theta(self) -> torch.Tensor:
        """``A_hat_i^-1 b_i`` per member, ``(B, d)`` (unbatched: ``(d,)``), in the working dtype."""
        return self._out(self._theta_all())

    def _theta_all(self) -> torch.Tensor:
        """``A_hat_i^-1 b_i`` for every member, ``(B, d)`` in the working dtype: the anchor plus
        ``A_hat^-1 r`` for the anchored sketches (:meth:`_reanchor`), ``A_hat^-1 b`` otherwise."""
        if self._anchor is None:
            return self._solve(self._work(self.b))
        r = self._anchor[:, 1] * self._ridge().unsqueeze(1)  # the residual (kept divided by the ridge)
        return self._work(self._anchor[:, 0] + self._core(self._solve(self._work(r))))

    def _ridge(self) -> torch.Tensor:
        """The ridge of ``A_hat`` per member, ``(B,)`` core tensor (``rho``, or DBS's ``c``); the
        anchored sketches define it."""
        raise NotImplementedError

    # -- the anchored mean term (FD, RFD, Dyadic Block Sketch) ---------------------------------
    def _reanchor(self, t, S: torch.Tensor, Linv: torch.Tensor, ridge: torch.Tensor) -> torch.Tensor:
        """Move the anchor of the members ``t`` (an index tensor, or ``None`` for all) to their
        ridge solution now: ``theta0 = A_hat^-1 b`` and residual ``r = b - A_hat theta0 = 0``.
        Returns ``theta0`` ``(n, d)``; the caller zeroes ``y = Linv z`` of those members.

        Why an anchor. The sketches' mean term used to be ``(x^T b - w^T Linv S b) / rho`` with
        ``w = Linv S x``: two numbers of size ``|x| |b| ~ t`` whose difference is
        ``x^T theta_hat ~ 1``. ``S x`` comes from the one big product in the working dtype, so in
        float32 the difference carried an error ~``eps32 |x| |b|`` that grew with t: over 20,000
        rounds float32 SOFUL (l > d, equal to OFUL in exact arithmetic) chose otherwise than
        float64 OFUL in 2, 10, 17, 41 rounds of consecutive 5,000-round windows
        (``benchmarks/bench_drift.py``; anchored: 2, 0, 5, 4). Now

            x^T A_hat^-1 b  =  x^T theta0  +  x^T A_hat^-1 r  =  x^T u - w^T y,
            r = b - A_hat theta0,   u = theta0 + r / rho,   y = Linv z,   z = S r / rho,

        (Woodbury applied to ``r``), where ``x^T u`` is a core-dtype product without cancellation:
        each appended row ``x`` (response ``v``) adds ``(v - x^T theta0) x`` to ``r`` (``A_hat``
        gains ``x x^T``, ``b`` gains ``v x``), so ``r`` sums residuals, not responses, and stays
        small. The state is ``[theta0; r / rho; u]`` (``_anchor``, ``(B, 3, d)``): one K x d product
        with ``u`` gives the mean's large part, and ``rho`` changes only where the anchor moves.
        The sketch keeps ``y`` itself (``(B, R)``), updated in O(R) per append from the append's
        own ``Linv S x`` (:func:`~agents.sketches.fd.border_at_`), so no R^2 product a round forms it.
        The anchor moves whenever ``A_hat`` changes otherwise than by an appended row, i.e. at
        every reduction (FD shrinks, RFD raises rho), which also bounds the rows ``r`` collects to
        one buffer's worth, and whenever ``|r| > |b|`` (:meth:`_stale_anchors`): the anchor is
        then a worse guess than 0 (the old formula), which happens when ``A_hat`` moved far since
        it was set (a huge row right after a reduction that kept nothing: the correction
        cancelled ``theta0`` to ~eps (|x|^2/rho)^2, 1e-3 relative in a hypothesis stream). Never
        in a stream of comparable rows. Cost: one O(R d) solve per reduction, here, in the core
        dtype on the stored rows ``S`` (so exactly the ``A_hat`` the scores use).

        ``S`` ``(n, R, d)`` are the members' rows (zero rows past them), ``Linv`` ``(n, R, R)`` the
        inverse Cholesky factor of ``S S^T + ridge I`` (identity on the padding), ``ridge`` ``(n,)``."""
        b = self.b if t is None else self.b[t]
        theta0 = ridge_solution(b, self._core(S), Linv, ridge.view(-1, 1))
        if t is None:
            set_anchor_(self._anchor, theta0)
        else:
            anchor = self._anchor[t]
            set_anchor_(anchor, theta0)
            self._anchor[t] = anchor
        return theta0

    def _unanchor(self, t: torch.Tensor | None) -> None:
        """Mark the members ``t`` (an index tensor; None: nobody) for a new anchor at the round's
        end (:meth:`_reanchor_stale`): their factor was rebuilt (:func:`~agents.sketches.fd.border_at_`),
        so the kept ``y = Linv z`` no longer matches it, and a new anchor makes it 0 (O(R d), rare)."""
        if t is not None:
            self._unanchored[t.cpu().numpy()] = True

    def _stale_anchors(self) -> np.ndarray:
        """Members whose residual outgrew ``b`` (``|r| > |b|``: the anchor is worse than none; see
        :meth:`_reanchor`) or marked by :meth:`_unanchor`, to re-anchor now (the marks are
        cleared). An empty array without an anchor."""
        if self._anchor is None:
            return np.zeros(0, dtype=np.int64)
        r = self._anchor[:, 1] * self._ridge().unsqueeze(1)
        stale = (torch.linalg.vecdot(r, r) > torch.linalg.vecdot(self.b, self.b)).cpu().numpy() | self._unanchored
        self._unanchored[:] = False
        return np.flatnonzero(stale)

    def _reanchor_stale(self, S: torch.Tensor, Linv: torch.Tensor, y: torch.Tensor, skip: np.ndarray | None = None) -> None:
        """Re-anchor now the members whose anchor went stale (:meth:`_stale_anchors`), from their
        rows ``S`` ``(B, R, d)`` and factor ``Linv`` ``(B, R, R)`` as they stand (zero rows and identity
        past each member's rows), and zero their ``y`` ``(B, R)``; ``skip``: a ``(B,)`` mask of
        members without a live anchor (DBS's exact ones)."""
        stale = self._stale_anchors()
        if skip is not None and stale.size:
            stale = stale[~skip[stale]]
        if stale.size:
            t = torch.as_tensor(stale, device=self.device)
            self._reanchor(t, S[t], Linv[t], self._ridge()[t])
            y[t] = 0.0

    def _advance_anchor_one(self, anchor, b, xc, r: float, ridge: float, xx: float) -> float:
        """:meth:`_advance_anchor` for member 0's views (B = 1, numpy or tensors; host floats):
        ``b += r x``; ``r / ridge`` and ``u`` gain ``step x``, ``step = (r - x^T theta0) / ridge``
        (returned, for ``y``). BLAS axpy on the host path (:func:`axpy_`). ``xx = ||x||^2`` moves the
        bounds of :meth:`_reanchor_one_if_stale` (the triangle inequality, host floats)."""
        e = r - float(xc @ anchor[0])
        step = e / ridge
        axpy_(b, r, xc)
        axpy_(anchor[1], step, xc)
        axpy_(anchor[2], step, xc)
        if self._r_hi is not None:
            norm = math.sqrt(xx)
            self._r_hi += abs(e) * norm  # r gains e x
            self._b_lo -= abs(r) * norm  # b gains r x
        return step

    def _reanchor_one_if_stale(self, anchor, b, S, Linv, y, rows: int, ridge: float, rebuilt: bool = False) -> None:
        """:meth:`_reanchor_stale` for member 0's views: ``S`` ``(>= m, d)`` with its ``rows = m`` rows
        first, ``Linv`` ``(>= m, >= m)`` their factor, ``y`` ``(>= m,)``; ``rebuilt``: the append rebuilt
        the factor (:meth:`_unanchor`).

        The test ``|r| > |b|`` costs two dot products of length d; most rounds skip them: an upper
        bound on ``|r|`` and a lower bound on ``|b|`` follow each row in host floats
        (:meth:`_advance_anchor_one`), and while the bounds say ``|r| <= |b|`` the anchor is not
        stale. Otherwise the exact test runs and resets them (a reduction's new anchor, r = 0,
        leaves them valid; a round on the batched path, :meth:`_advance_anchor`, voids them)."""
        if not rebuilt and self._r_hi is not None and self._r_hi <= self._b_lo:
            return
        rr = anchor[1]
        r_norm, b_norm = ridge * math.sqrt(float(rr @ rr)), math.sqrt(float(b @ b))
        if rebuilt or r_norm > b_norm:  # |r| > |b|: the anchor is worse than none
            set_anchor_(anchor, ridge_solution(b, self._core(S[:rows]), Linv[:rows, :rows], ridge))
            y[:rows] = 0.0
            r_norm = 0.0
        self._r_hi, self._b_lo = r_norm, b_norm

    def _advance_anchor(self, Xc: torch.Tensor, r) -> torch.Tensor | None:
        """Add the rows ``Xc`` ``(B, d)`` (core dtype) with responses ``r`` (a float or ``(B,)``) to
        ``b`` and, with ``e = r - x^T theta0``, ``e x / rho`` to the residual and to ``u``
        (:meth:`_reanchor`). Returns ``e / rho`` ``(B,)`` (``z = S r / rho`` gains ``(e / rho) S x``,
        ``y = Linv z`` gains ``(e / rho) Linv S x``), or None (only ``b`` moves) when there is no anchor."""
        rc = r if isinstance(r, float) else self._core(r)
        self._r_hi = None  # the host path's bounds on |r| and |b| (_reanchor_one_if_stale) no longer hold
        if isinstance(r, float):
            self.b.add_(Xc, alpha=r)
        else:
            self.b.addcmul_(Xc, rc.unsqueeze(1))
        if self._anchor is None:
            return None
        step = (rc - torch.linalg.vecdot(Xc, self._anchor[:, 0])) / self._ridge()
        self._anchor[:, 1:].addcmul_(Xc.unsqueeze(1), step.view(-1, 1, 1))  # r / rho and u together
        return step

    def _core(self, t):
        """``t`` in the core dtype (a no-op, without a dispatch, when the dtypes agree); a tensor
        or, on the B = 1 host path, a numpy array."""
        if self._same:
            return t
        return t.astype(_NUMPY_DTYPES[self.cdtype]) if isinstance(t, np.ndarray) else t.to(self.cdtype)

    def _work(self, t):
        """``t`` in the working dtype (a no-op when the dtypes agree); tensor or numpy array."""
        if self._same:
            return t
        return t.astype(_NUMPY_DTYPES[self.dtype]) if isinstance(t, np.ndarray) else t.to(self.dtype)

    def _member0(self, key: str, tensors: tuple, host: bool = True, big: bool = False) -> tuple:
        """B = 1: member 0 of each state tensor, unbatched. ``host=True`` on CPU (with :attr:`host`
        and one numpy BLAS thread) gives numpy views sharing the tensors' memory: a round's small
        products, item stores and elementwise steps then cost ~0.5-2 us a call against ~2-4 us
        per torch dispatch, which at d = 784, K = 10 is most of a round beside the one big
        product; otherwise (other devices, ``host=False``) tensor views. ``big``: the views feed
        products large enough for numpy's BLAS to spread over its threads (the scoring), so they
        are numpy views only while it uses one (:func:`~agents._torch.numpy_blas_threads`); the
        m-sized products of an append stay below that. Cached under ``key`` while the very same
        tensors are held (a reduction or a growth that replaces a tensor gets fresh views)."""
        to_host = host and self.host and (not big or numpy_blas_threads() == 1)
        hit = self._views0.get((key, to_host))
        if hit is not None and all(map(operator.is_, hit[0], tensors)):
            return hit[1]
        views = tuple(t[0].numpy() if to_host else t[0] for t in tensors)
        self._views0[(key, to_host)] = (tensors, views)
        return views

    def _reg_of(self, idx=None):
        """The ridge of the members ``idx`` (all when None): the float when every member shares
        it, else a float64 host array."""
        if isinstance(self.reg, float):
            return self.reg
        return self.reg if idx is None else self.reg[idx]

    def _reg_tensor(self, idx=None, dtype=None) -> torch.Tensor | float:
        """:meth:`_reg_of` as a ``(n, 1, 1)`` tensor (for ``(n, d, d)`` products), or the float."""
        reg = self._reg_of(idx)
        if isinstance(reg, float):
            return reg
        return torch.as_tensor(reg, device=self.device, dtype=dtype or self.dtype).view(-1, 1, 1)

    def _inverse_ceiling(self, idx) -> float | torch.Tensor:
        """``1 / reg`` of the members ``idx``: the largest eigenvalue a valid ``A_hat^-1`` can have
        (the repair's upper clamp, :func:`~agents.sketches.exact.repair_inverse_`)."""
        reg = self._reg_of(idx)
        if isinstance(reg, float):
            return 1.0 / reg
        idx = idx.cpu().numpy() if isinstance(idx, torch.Tensor) else idx
        return torch.as_tensor(1.0 / np.asarray(self.reg)[idx], device=self.device, dtype=torch.float64)

    def _reduction_gram(self, rows: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
        """The Gram ``S S^T`` ``(n, m, m)`` whose eigenvalues an FD reduction (or its look-ahead)
        decides on, for stored rows ``rows`` ``(n, m, d)``; ``G`` is the incrementally kept one.

        In float64 that is ``G``. With float32 rows, ``G``'s entries come from float32 products
        (the scoring projection), accurate to ~``eps32 |s_i| |x|`` each, so eigenvalues below
        ~``eps32 (m + sqrt d) lambda_max`` were noise, and FD's rank cut (``_rank_tol``) had to
        drop every direction whose kept eigenvalue was below that: at cond(A_hat) ~ 1e4 (MNIST,
        lam = 0.2) that is ~15% of lam, and float32 SOFUL kept 84 rows where float64 kept 90
        (UCB scores 0.1-0.3 apart after ~600 rounds). Here the Gram of the STORED float32 rows
        is recomputed in the core dtype instead (O(m^2 d), the order of the reduction's own
        product, once per reduction), so float32 decides with float64's accuracy, up to the
        rounding of the rows themselves (``eps32^2`` relative in the Gram)."""
        if self._same:
            return G
        R = self._core(rows)
        return R @ R.swapaxes(-1, -2)

    def _rank_tol(self, m: int, top):
        """Eigenvalues of an m x m :meth:`_reduction_gram` below this are rounding noise (count as 0):
        ``64 (m + sqrt d) eps_gram lambda_max`` with ``eps_gram`` the working eps when the Gram
        comes from working-dtype products, ``eps_core + eps_work^2`` when recomputed.

        Why 64. The decomposed Gram carries the rounding of the products that built it and of the
        earlier reductions (each ~``eps (m + sqrt d) lambda_max``, accumulating), so exactly tied
        eigenvalues (orthogonal rows of equal norms, an adversarial stream of the suite) come out
        split by tens of eps: an exact 4-fold tie of ``[1, 1, 1, 1]`` split by 63 eps in one run
        and by 0 in a run whose Gram differed in the last bits (the single agent's host products
        against the batched torch ones), and with the old ``2 (m + sqrt d)`` the two runs then
        kept different numbers of rows. At 64 the cut sits ~6x above that spread and still ~1e-12
        ``lambda_max`` at m = 100, d = 784: below anything float64 resolves in a sketch."""
        return 64.0 * self._eps_gram * (m + math.sqrt(self.d)) * top.clip(min=0.0)  # tensors or numpy (host path)

    # -- Frequent Directions' reduction plan (FD and the blocks of Dyadic Block Sketching) ------
    def _shrink_values(self, evals, m: int, l: int):
        """Alg. 2 line 5 per member: sigma_l^2 (the l-th largest eigenvalue), 0 if < l rows or
        at the rounding level (:meth:`_rank_tol`); ``l`` the members' common sketch size.
        ``evals`` ``(n, m)`` descending, a tensor or (B = 1 host path) a numpy array."""
        tol = self._rank_tol(m, evals[:, 0])
        if m < l:
            return tol * 0.0
        delta = evals[:, l - 1]
        return delta * (delta > tol)

    def _shrink_plan(self, evals, evecs, m: int, l: int):
        """Alg. 2 lines 5-6 for a stack of n members with m rows each (eigenpairs of their Grams,
        descending; tensors, or numpy arrays on the B = 1 host path): ``(delta, keep, kept, coeff)``
        with the shrink values ``(n,)``, the kept squared singular values ``(n, k)`` (0 where
        dropped), the mask of kept directions ``(n, k)`` and ``coeff`` ``(n, k, m)``, the new rows
        being ``coeff S`` (``k = min(l - 1, m)``)."""
        delta = self._shrink_values(evals, m, l)
        tol = self._rank_tol(m, evals[:, 0])
        k = min(l - 1, m)
        keep = evals[:, :k] - delta[:, None]  # Alg. 2 line 6 on the l - 1 leading directions
        kept = keep > tol[:, None]  # keep is sorted: the leading ones survive
        keep = keep * kept
        w = (keep / evals[:, :k].clip(min=torch.finfo(self.cdtype).tiny)).clip(0.0, 1.0)  # in [0, 1]: never over-estimates
        coeff = (evecs[:, :, :k] * w[:, None, :] ** 0.5).swapaxes(-1, -2)
        return delta, keep, kept, coeff

    def _sq_norms(self, arms: torch.Tensor) -> torch.Tensor:
        """``||x||^2`` of every row of ``arms`` (last dimension), summed in the core dtype.

        Why not in the working dtype: unit-norm arms (every env of the suite normalises them)
        make the first round an exact tie in real arithmetic (``b = 0``, width ``||x||/sqrt(reg)``),
        decided by how far each float32 arm's norm is from 1 (~1e-8). float64 sees those
        differences; float32 sums round them away (or invert them), so a float32 agent chose
        another first arm than the float64 one and the two runs went different ways from round 1.
        The cast costs ``K d`` element copies; the values of float32 arms are exact in float64,
        so both dtypes compute the very same norms."""
        return torch.linalg.vector_norm(arms, dim=-1, dtype=self.cdtype).square()

    def _floor(self, sq: torch.Tensor) -> torch.Tensor:
        """``||x||^2 / (reg + tr(X^T X))``: a lower bound on ``x^T A_hat^-1 x`` (``(B, K)``)."""
        top = self.reg + self.trace + self._alpha_total()
        if self.batch_size == 1:
            return sq / float(top[0])  # a host float: one op fewer than a (1, 1) tensor
        return sq / torch.as_tensor(top, device=self.device, dtype=sq.dtype).unsqueeze(1)

    def _alpha_total(self) -> np.ndarray | float:
        """Mass added back as ``alpha I`` (RFD); 0 otherwise."""
        return 0.0

    def _check_rows(self, X: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
        """``||x||^2`` per row (tensor and float64 host copy), or a ``ValueError`` (state untouched)
        when it overflows the dtype."""
        xx = torch.linalg.vector_norm(X, dim=-1).square()
        xx_h = np.array([xx.item()]) if self.batch_size == 1 else xx.double().cpu().numpy()
        if not np.isfinite(xx_h).all():
            raise ValueError(
                f"a row's squared norm overflows {self.dtype} (|x| up to {float(X.abs().max()):.3g}); "
                "rescale the features or use dtype=torch.float64"
            )
        return xx, xx_h

    # -- public API (unbatched shapes when batch_size is None) ------------------------------
    def _out(self, t):
        return t[0] if self.single else t

    def _one(self, a):
        """A per-member host array as one sketch reports it (a Python scalar), or a copy when batched."""
        if self.single:
            v = a[0]
            return v.item() if hasattr(v, "item") else v
        return a.copy() if isinstance(a, np.ndarray) else a

    def _rows_in(self, x, name: str = "x") -> torch.Tensor:
        if self.single:
            return as_vector(x, self.device, self.dtype, self.d, name=name).unsqueeze(0)
        X = x.to(**self._kw) if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x, dtype=np.float64), **self._kw)
        if X.shape != (self.batch_size, self.d):
            raise ValueError(f"{name} must have shape ({self.batch_size}, {self.d}), got {tuple(X.shape)}")
        if not bool(torch.isfinite(X).all()):
            raise ValueError(f"{name} contains NaN or infinite entries")
        return X

    def _arms_in(self, arms) -> torch.Tensor:
        if not isinstance(arms, torch.Tensor):
            arms = torch.as_tensor(np.asarray(arms, dtype=np.float64))
        arms = arms.to(**self._kw)
        if self.single:
            if arms.ndim != 2 or arms.shape[1] != self.d:
                raise ValueError(f"arms must have shape (K, {self.d}), got {tuple(arms.shape)}")
            return arms.unsqueeze(0)
        if arms.ndim != 3 or arms.shape[0] != self.batch_size or arms.shape[2] != self.d:
            raise ValueError(f"arms must have shape ({self.batch_size}, K, {self.d}), got {tuple(arms.shape)}")
        return arms

    def update(self, x, r=None, actions=None) -> None:
        """Add one row per member (``(d,)`` unbatched) with response ``r`` (default 0). Validates
        before touching any state."""
        X = self._rows_in(x)
        if r is None:
            R = torch.zeros(self.batch_size, **self._kw)
        else:
            R = torch.as_tensor(np.asarray(r.cpu() if isinstance(r, torch.Tensor) else r, dtype=np.float64)).reshape(-1)
            if R.shape != (self.batch_size,) or not bool(torch.isfinite(R).all()):
                raise ValueError(f"r must be {self.batch_size} finite response(s), got {r!r}")
            R = R.to(**self._kw)
        if actions is not None and not isinstance(actions, torch.Tensor):
            actions = torch.as_tensor(np.asarray(actions), device=self.device)
        self.step(X, R, actions)

    def quad_inv(self, arms) -> torch.Tensor:
        """``x^T A_hat^-1 x`` for each row of ``arms``: ``(K, d) -> (K,)`` (batched ``(B, K, d) -> (B, K)``)."""
        return self._out(self._quad(self._arms_in(arms)))

    def solve(self, v) -> torch.Tensor:
        """``A_hat^-1 v``: ``(d,) -> (d,)`` (batched ``(B, d) -> (B, d)``)."""
        return self._out(self._solve(self._rows_in(v, name="v")))

    def covariance(self) -> torch.Tensor:
        """The dense ``d x d`` approximation of ``X^T X`` (without ``reg``); diagnostics only."""
        return self._out(self._covariance())

    def logdet_increment(self, x) -> torch.Tensor:
        """``log det(A_hat + x x^T) - log det(A_hat)`` = ``log(1 + ||x||^2_{A_hat^-1})``."""
        X = self._rows_in(x)
        return self._out(torch.log1p(self._quad(X.unsqueeze(1))[:, 0]))

    @property
    def sketch_size(self):
        """Rows of sketch held now (``d`` for the exact estimator); an array ``(B,)`` when batched."""
        s = self.sketch_sizes()
        return int(s[0]) if self.single else s

    def memory_bytes(self) -> int:
        """Bytes held by the estimator's tensors (one member's formula when unbatched; all members,
        padding included, when batched)."""
        if self.single:
            return int(self.member_memory_bytes()[0])
        return self._held_bytes()

    @abstractmethod
    def _held_bytes(self) -> int:
        """Bytes the batched tensors actually hold."""
