"""Exact ``lambda I + X^T X`` kept through its inverse (Sherman-Morrison), O(d^2) a row.

One projection ``W = arms A^-1`` per round gives both UCB terms (``x^T A^-1 x = w . x`` and,
``A^-1`` being symmetric, ``x^T A^-1 b = w . b``) and the played arm's row is the ``A^-1 x``
of the rank-1 update: the d x d inverse is read once for scoring and written once for the
update. That is the floor for this representation: ``K d^2`` multiply-adds for the scoring GEMM
and ``d^2`` for the rank-1 ``addr``/``baddbmm``. Measured at d = 784, K = 10 (1 thread, float64,
AMD EPYC) the GEMM takes ~0.39-0.44 ms (~30 GFlop/s, near one core's FMA peak: compute-bound)
and the rank-1 pass ~0.09 ms, so a round is ~80% GEMM. Buffering the rank-1 corrections
(``A^-1 = A0^-1 - U U^T``, folded every 16 rows) was tried and saves only the ~0.09 ms pass
minus its own ~0.05 ms: not kept. ``dtype=torch.float32`` halves the GEMM (~2x measured).

Numerics: Sherman-Morrison on the inverse loses accuracy in the directions where ``A`` is
large (``A^-1`` small) when rows are huge: the subtraction ``A^-1 - p p^T / kappa`` cancels to
``eps ||A^-1||``, and once an eigenvalue of the kept inverse turns negative the next updates
amplify it (rows of norm 1e8 in float64 overflow within ~30 rounds). Safeguards:

* the width is clamped from below by the valid bound ``||x||^2 / (reg + tr X^T X)`` (never by
  0), and ``kappa = 1 + x^T A^-1 x`` uses the clamped width;
* a width that falls below that bound proves the inverse has left the set of valid inverses
  (``spec(A^-1)`` lies in ``[1/(reg + tr), 1/reg]``); the inverse is then repaired once by an
  eigendecomposition whose eigenvalues are clamped to that interval (O(d^3), only on such
  rounds, :func:`repair_inverse_`), before the update. So the state stays finite and positive
  definite at every row scale; what accuracy ``eps * cond(A)`` allows is kept.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._torch import tensor_bytes
from .base import CovarianceEstimator

__all__ = ["ExactCovariance", "below_floor", "project", "repair_inverse_", "sherman_morrison_"]


def repair_inverse_(A_inv: torch.Tensor, lo: torch.Tensor, hi: float | torch.Tensor) -> None:
    """Project each ``(d, d)`` inverse of the batch ``A_inv`` (in place) onto the symmetric
    matrices with spectrum in ``[lo_i, hi_i]``: the valid inverses of ``reg_i I + X^T X``
    (``hi = 1 / reg``: a float shared by the batch, or one value per member)."""
    sym = 0.5 * (A_inv + A_inv.mT)
    evals, evecs = torch.linalg.eigh(sym.double())
    hi_t = hi.double().view(-1, 1).expand_as(evals) if isinstance(hi, torch.Tensor) else torch.full_like(evals, hi)
    evals = torch.minimum(torch.maximum(evals, lo.double().view(-1, 1)), hi_t)
    A_inv.copy_(((evecs * evals.unsqueeze(1)) @ evecs.mT).to(A_inv.dtype))


def project(arms: torch.Tensor, A_inv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``W = arms A^-1`` ``(B, K, d)`` (row k is ``(A^-1 x_k)^T``, A^-1 being symmetric) and
    ``x^T A^-1 x`` ``(B, K)``: the only O(K d^2) step of an exact round. The K-row operand goes on
    the left for every B: measured on this project's CI machine (AMD EPYC, torch 2.13 CPU, 1
    thread, d = 784, float64) ``arms @ A^-1`` takes 0.39-0.44 ms at K = 10 (~30 GFlop/s, near
    one core's FMA peak) against 0.85 ms for ``A^-1 @ arms^T``, and 2.52 vs 2.61 ms at K = 100;
    its rows are contiguous for the elementwise pass and the played arm's gather."""
    W = torch.bmm(arms, A_inv)
    return W, (W * arms).sum(dim=2)


def below_floor(raw: torch.Tensor, floor: torch.Tensor, d: int, dtype: torch.dtype) -> torch.Tensor:
    """Where a computed width ``x^T A^-1 x`` (``raw``) lies below the valid floor by more than a
    few roundings: proof that the kept inverse has left the valid set and needs a repair.

    On the first round raw and floor are the same number ``||x||^2 / reg`` rounded two ways, and
    an exact comparison "repaired" there: an O(d^3) eigendecomposition, ~0.3 ms a round of a
    300-round OFUL run at d = 784. The slack is a relative ``8 sqrt(d) eps``, the typical
    rounding of a d-term dot product: a broken inverse (the case the repair exists for) falls
    far below the floor, not by 1e-14. ``eps`` is that of ``dtype``, the working dtype the
    width was computed in (``raw`` may have been cast to the core dtype since)."""
    return raw < floor * (1.0 - 8.0 * math.sqrt(d) * torch.finfo(dtype).eps)


def sherman_morrison_(A_inv: torch.Tensor, Ax: torch.Tensor, q: torch.Tensor) -> None:
    """``A_inv <- A_inv - (A^-1 x)(A^-1 x)^T / (1 + q)`` per member, in one fused pass (in place)."""
    scale = (-1.0 / (1.0 + q)).to(Ax.dtype)  # q may be scored in the core dtype
    if A_inv.shape[0] == 1:  # addr_ on the matrix: no (1, d, 1) views, one op
        A_inv[0].addr_(Ax[0], Ax[0], alpha=float(scale[0]))
    else:
        A_inv.baddbmm_((Ax * scale.unsqueeze(1)).unsqueeze(2), Ax.unsqueeze(1))


class ExactCovariance(CovarianceEstimator):
    """The un-sketched baseline: holds ``A^-1`` with ``A = reg I + X^T X`` (shape ``(B, d, d)``).

    Each row costs one Sherman-Morrison update (O(d^2)); queries are one matmul.
    The Gram matrix itself is kept only when ``keep_gram=True`` (for diagnostics).

    >>> import torch
    >>> est = ExactCovariance(3, reg=1.0)
    >>> est.update(torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))
    >>> float(est.quad_inv(torch.eye(3, dtype=torch.float64))[0])
    0.5
    """

    def __init__(self, d: int, *, reg: float = 1.0, device=None, dtype=None, keep_gram: bool = False,
                 batch_size: int | None = None):
        super().__init__(d, reg=reg, device=device, dtype=dtype, batch_size=batch_size)
        eye = torch.eye(self.d, **self._kw)
        # A^-1 = I / reg, each member its own ridge (the same division as one member's)
        self.A_inv = (eye / self.reg if isinstance(self.reg, float) else eye / self._reg_tensor()).expand(
            self.batch_size, self.d, self.d).clone()
        self.gram = torch.zeros_like(self.A_inv) if keep_gram else None
        self._cache = None  # (arms, W = arms A^-1 (B, K, d), quad, raw, floor) of the last score_terms

    def _proj(self, arms):
        """:func:`project` of the arms through this estimator's inverse."""
        return project(arms, self.A_inv)

    def _played(self, W, actions):
        """The played arms' ``A^-1 x`` ``(B, d)`` from the projection of :meth:`_proj`."""
        if isinstance(actions, int):  # one member: a contiguous row view, no index tensor
            return W[:, actions]
        return W[self._members, actions]

    def score_terms(self, arms):
        """Both terms in the core dtype (the loop compares scores there). A member that has
        seen no nonzero row still holds ``A^-1 = I / reg`` exactly, and its width IS the floor
        ``||x||^2 / reg``: it is taken from there, not from the working-dtype product, so a
        float32 OFUL breaks the first round's tie of unit-norm arms as float64 does
        (:meth:`~agents.sketches.base.CovarianceEstimator._sq_norms`)."""
        P, raw = self._proj(arms)
        floor = self._floor(self._sq_norms(arms))
        raw = self._core(raw)
        fresh = self.trace == 0.0
        quad = torch.maximum(raw, floor)
        if fresh.all():
            quad = floor
        elif fresh.any():
            quad = torch.where(torch.as_tensor(fresh, device=self.device).unsqueeze(1), floor, quad)
        self._cache = (arms, P, quad, raw, floor)
        mean = self._core(torch.bmm(P, self._work(self.b).unsqueeze(2)).squeeze(2))  # b is kept in the core dtype
        return mean, quad

    def _repair_if_invalid(self, raw: torch.Tensor, floor: torch.Tensor) -> bool:
        """Repair the members whose widths fell below the valid floor (:func:`below_floor`)."""
        bad = below_floor(raw, floor, self.d, self.dtype).any(dim=1)
        if not bool(bad.any()):
            return False
        t = torch.nonzero(bad).flatten()
        lo = 1.0 / torch.as_tensor(self.reg + self.trace, **self._kw)[t]
        sub = self.A_inv[t]
        repair_inverse_(sub, lo, self._inverse_ceiling(t))
        self.A_inv[t] = sub
        return True

    def step(self, X, r, actions=None):
        xx, xx_h = self._check_rows(X)
        cache, self._cache = self._cache, None
        if actions is not None and cache is not None and not self._repair_if_invalid(cache[3], cache[4]):
            Ax = self._played(cache[1], actions)
            q = cache[2][:, actions] if isinstance(actions, int) else cache[2][self._members, actions]
        else:
            Ax = torch.bmm(self.A_inv, X.unsqueeze(2)).squeeze(2)
            raw = (Ax * X).sum(dim=1)
            floor = xx / torch.as_tensor(self.reg + self.trace, **self._kw)
            if self._repair_if_invalid(raw.unsqueeze(1), floor.unsqueeze(1)):
                Ax = torch.bmm(self.A_inv, X.unsqueeze(2)).squeeze(2)
                raw = (Ax * X).sum(dim=1)
            q = torch.maximum(raw, floor)
        # Sherman-Morrison: (A + x x^T)^-1 = A^-1 - (A^-1 x)(A^-1 x)^T / (1 + x^T A^-1 x), one fused pass
        sherman_morrison_(self.A_inv, Ax, q)
        if self.gram is not None:
            self.gram.baddbmm_(X.unsqueeze(2), X.unsqueeze(1))
        if isinstance(r, float):
            self.b.add_(X, alpha=r)
        else:
            self.b.add_(self._core(X) * self._core(r).unsqueeze(1))
        self.trace += xx_h
        self.n_rows += 1

    def logdet_increments(self, X, actions=None) -> torch.Tensor:
        """``log(1 + ||x_i||^2_{A_i^-1})`` per member, reusing the scored widths when ``actions``."""
        if actions is not None and self._cache is not None:
            q = self._cache[2][:, actions] if isinstance(actions, int) else self._cache[2][self._members, actions]
            return torch.log1p(q)
        return torch.log1p(self._quad(X.unsqueeze(1))[:, 0])

    def _quad(self, arms):
        return torch.maximum(self._proj(arms)[1], self._floor(torch.linalg.vector_norm(arms, dim=2).square()))

    def _solve(self, V):
        return torch.bmm(self.A_inv, V.unsqueeze(2)).squeeze(2)

    def _covariance(self):
        if self.gram is not None:
            return self.gram.clone()
        # Recover X^T X = A - reg I from the inverse (diagnostics only; O(d^3)).
        return torch.linalg.inv(self.A_inv) - self._reg_tensor() * torch.eye(self.d, **self._kw)

    def sketch_sizes(self):
        return np.full(self.batch_size, self.d, dtype=np.int64)

    def member_memory_bytes(self):
        es = self.A_inv.element_size()
        per = es * self.d * self.d * (2 if self.gram is not None else 1)
        return np.full(self.batch_size, per, dtype=np.int64)

    def _held_bytes(self):
        return tensor_bytes(self.A_inv, self.gram)
