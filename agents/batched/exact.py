"""B exact ``reg I + X_i^T X_i`` kept through their inverses: batched Sherman-Morrison."""

from __future__ import annotations

import numpy as np
import torch

from .._torch import tensor_bytes
from .base import BatchedEstimator

__all__ = ["BatchedExactCovariance"]


class BatchedExactCovariance(BatchedEstimator):
    """The batched twin of :class:`agents.sketches.exact.ExactCovariance`: ``A_inv`` of shape ``(B, d, d)``.

    One row per member costs one batched rank-1 update (``baddbmm``, no ``(B, d, d)``
    temporary); queries are one batched matmul. O(B d^2) time and memory per round.

    >>> import torch
    >>> est = BatchedExactCovariance(2, 3, reg=1.0, device=torch.device("cpu"), dtype=torch.float64)
    >>> est.update(torch.tensor([[1.0, 0, 0], [0, 1.0, 0]], dtype=torch.float64), torch.ones(2, dtype=torch.float64))
    >>> est.quad_inv(torch.eye(3, dtype=torch.float64).expand(2, 3, 3)).tolist()
    [[0.5, 1.0, 1.0], [1.0, 0.5, 1.0]]
    """

    def __init__(self, batch_size: int, d: int, *, reg: float, device, dtype):
        super().__init__(batch_size, d, reg=reg, device=device, dtype=dtype)
        eye = torch.eye(d, device=device, dtype=dtype) / self.reg
        self.A_inv = eye.expand(batch_size, d, d).clone()
        self._cache = None

    def score_terms(self, arms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # One projection W = arms A^-1 gives both terms (A^-1 symmetric: x^T A^-1 b = w^T b); the
        # played arm's row of W is A^-1 x for the Sherman-Morrison step of the next update.
        W = torch.bmm(arms, self.A_inv)
        quad = (W * arms).sum(dim=2)
        self._cache = (W, quad)
        return torch.bmm(W, self.b.unsqueeze(2)).squeeze(2), quad

    def update(self, X: torch.Tensor, r: torch.Tensor, actions: torch.Tensor | None = None) -> None:
        # Sherman-Morrison per member: A^-1 -= (A^-1 x)(A^-1 x)^T / (1 + x^T A^-1 x)
        if actions is not None and self._cache is not None:
            Ax = self._cache[0][torch.arange(self.batch_size, device=self.device), actions]
        else:
            Ax = torch.bmm(self.A_inv, X.unsqueeze(2)).squeeze(2)  # (B, d)
        scale = -1.0 / (1.0 + (X * Ax).sum(dim=1))
        self.A_inv.baddbmm_((Ax * scale.unsqueeze(1)).unsqueeze(2), Ax.unsqueeze(1))
        self.b += r.unsqueeze(1) * X
        self._cache = None
        self.n_rows += 1

    def logdet_increment(self, X: torch.Tensor, actions: torch.Tensor | None = None) -> torch.Tensor:
        if actions is not None and self._cache is not None:
            return torch.log1p(self._cache[1][torch.arange(self.batch_size, device=self.device), actions])
        return super().logdet_increment(X)

    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        return (torch.bmm(arms, self.A_inv) * arms).sum(dim=2)

    def solve(self, V: torch.Tensor) -> torch.Tensor:
        return torch.bmm(self.A_inv, V.unsqueeze(2)).squeeze(2)

    def sketch_sizes(self) -> np.ndarray:
        return np.full(self.batch_size, self.d, dtype=np.int64)

    def member_memory_bytes(self) -> np.ndarray:
        return np.full(self.batch_size, tensor_bytes(self.A_inv) // self.batch_size, dtype=np.int64)

    def memory_bytes(self) -> int:
        return tensor_bytes(self.A_inv)
