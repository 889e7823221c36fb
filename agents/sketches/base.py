"""The one interface every covariance sketch implements.

A *covariance estimator* sees a stream of rows x_1, x_2, ... in R^d and maintains an
approximation of the regularised Gram matrix

    A_hat = reg * I + (approximation of X^T X)          (X = [x_1; ...; x_t])

Agents only ever ask three things of it: ``update(x)``, ``quad_inv(arms)`` (the squared
norms ||x||^2_{A_hat^-1} of a batch of arms, one batched op) and ``solve(v)``
(A_hat^-1 v). So an agent never cares whether it holds the exact matrix (OFUL), a
Frequent Directions sketch (SOFUL), a Robust FD sketch (CBSCFD) or a Dyadic Block Sketch
(DBSLinUCB). No bandit logic lives here: this is pure linear algebra.

One more call serves the optimistic loop's refit, ``ridge_step(x, r, b, theta)``: add the row
and return the new ridge solution ``A_hat^-1 b``. The default is ``update`` then ``solve``; our
estimators override it because, whenever ``A_hat`` changed by exactly ``x x^T`` (every row of
OFUL, every row between two FD reductions), Sherman-Morrison gives the new solution from the
old one in the cost of ``A_hat^-1 x`` alone,

    theta' = theta + A_hat^-1 x (r - x^T theta) / (1 + x^T A_hat^-1 x),

and the ``S x`` (or ``A^-1 x``) that this needs is the played arm's row of the projection
``quad_inv`` computed for the whole arm set (``played=``). Same estimate, to rounding.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from .._torch import as_vector, resolve_device, resolve_dtype

__all__ = ["CovarianceEstimator"]


class CovarianceEstimator(ABC):
    """Streaming estimate of ``reg * I + X^T X``.

    Args:
        d: dimension of the rows.
        reg: ridge term added to the estimate (the bandit's lambda); must be > 0.
        device, dtype: where the state lives; see :func:`agents._torch.resolve_device`.
    """

    def __init__(self, d: int, *, reg: float = 1.0, device=None, dtype=None):
        if not isinstance(d, int) or isinstance(d, bool) or d < 1:
            raise ValueError(f"d must be a positive int, got {d!r}")
        if not (float(reg) > 0.0):
            raise ValueError(f"reg (the ridge lambda) must be > 0, got {reg!r}")
        self.d = d
        self.reg = float(reg)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.n_rows = 0

    # -- streaming -----------------------------------------------------------------
    def update(self, x) -> None:
        """Add one row ``x`` (shape ``(d,)``). Validates before touching any state."""
        x = as_vector(x, self.device, self.dtype, self.d)
        self._update(x)
        self.n_rows += 1

    @abstractmethod
    def _update(self, x: torch.Tensor) -> None:
        """Add a validated row."""

    # -- queries -------------------------------------------------------------------
    @abstractmethod
    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        """``x^T A_hat^-1 x`` for each row of ``arms`` (shape ``(K, d)``) -> shape ``(K,)``."""

    @abstractmethod
    def solve(self, v: torch.Tensor) -> torch.Tensor:
        """``A_hat^-1 v`` for a vector ``v`` of shape ``(d,)``."""

    @abstractmethod
    def covariance(self) -> torch.Tensor:
        """The dense ``d x d`` approximation of ``X^T X`` (without ``reg``); diagnostics only."""

    @property
    @abstractmethod
    def sketch_size(self) -> int:
        """Rows of sketch currently held (``d`` for the exact estimator)."""

    @abstractmethod
    def memory_bytes(self) -> int:
        """Bytes held by the estimator's tensors right now."""

    def ridge_step(self, x: torch.Tensor, reward: float, b: torch.Tensor, theta: torch.Tensor,
                   played: tuple | None = None) -> torch.Tensor:
        """Add the validated row ``x`` and return the new ridge solution ``A_hat'^-1 b``.

        ``b`` already includes ``reward * x``; ``theta`` is the solution before this row,
        ``A_hat^-1 (b - reward x)``. ``played=(arms, k)`` says that ``x`` is row ``k`` of the very
        tensor ``arms`` last passed to :meth:`quad_inv`, so an estimator may reuse that call's
        projection of it (it checks the identity of ``arms`` and that no row came in between).
        This default ignores both hints: ``update`` then ``solve``.
        """
        self._update(x)
        self.n_rows += 1
        return self.solve(b)

    @staticmethod
    def _rank_one_refit(theta: torch.Tensor, x: torch.Tensor, reward: float, v: torch.Tensor, kappa: float) -> torch.Tensor:
        """Sherman-Morrison on the ridge solution after ``A_hat' = A_hat + x x^T``, ``b' = b + r x``:
        ``theta' = theta + v (r - x^T theta) / kappa`` where ``v / kappa = A_hat^-1 x / (1 + x^T A_hat^-1 x)``
        (each estimator passes its own scaling of the pair, e.g. ``rho A_hat^-1 x`` and ``rho (1 + ...)``)."""
        return torch.add(theta, v, alpha=(reward - float(x @ theta)) / kappa)

    def logdet_increment(self, x: torch.Tensor) -> torch.Tensor:
        """``log det(A_hat + x x^T) - log det(A_hat)`` = ``log(1 + ||x||^2_{A_hat^-1})``."""
        return torch.log1p(self.quad_inv(x.reshape(1, -1))[0])
