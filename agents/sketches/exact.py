"""Exact ``lambda I + X^T X`` kept through its inverse (Sherman-Morrison), O(d^2) a row."""

from __future__ import annotations

import torch

from .._torch import tensor_bytes
from .base import CovarianceEstimator

__all__ = ["ExactCovariance"]


class ExactCovariance(CovarianceEstimator):
    """The un-sketched baseline: holds ``A^-1`` with ``A = reg I + X^T X``.

    Each row costs one Sherman-Morrison update (O(d^2)); queries are one matmul.
    The Gram matrix itself is kept only when ``keep_gram=True`` (for diagnostics).

    >>> import torch
    >>> est = ExactCovariance(3, reg=1.0)
    >>> est.update(torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))
    >>> float(est.quad_inv(torch.eye(3, dtype=torch.float64))[0])
    0.5
    """

    def __init__(self, d: int, *, reg: float = 1.0, device=None, dtype=None, keep_gram: bool = False):
        super().__init__(d, reg=reg, device=device, dtype=dtype)
        eye = torch.eye(d, device=self.device, dtype=self.dtype)
        self.A_inv = eye / self.reg
        self.gram = torch.zeros_like(eye) if keep_gram else None

    def _update(self, x: torch.Tensor) -> None:
        # Sherman-Morrison: (A + x x^T)^-1 = A^-1 - (A^-1 x)(A^-1 x)^T / (1 + x^T A^-1 x)
        Ax = self.A_inv @ x
        # one fused rank-1 pass over the d x d matrix (addr_), no d x d temporaries
        self.A_inv.addr_(Ax, Ax, alpha=-1.0 / (1.0 + float(x @ Ax)))
        if self.gram is not None:
            self.gram += torch.outer(x, x)

    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        return ((arms @ self.A_inv) * arms).sum(dim=1)

    def solve(self, v: torch.Tensor) -> torch.Tensor:
        return self.A_inv @ v

    def covariance(self) -> torch.Tensor:
        if self.gram is not None:
            return self.gram.clone()
        # Recover X^T X = A - reg I from the inverse (diagnostics only; O(d^3)).
        return torch.linalg.inv(self.A_inv) - self.reg * torch.eye(self.d, device=self.device, dtype=self.dtype)

    @property
    def sketch_size(self) -> int:
        return self.d

    def memory_bytes(self) -> int:
        return tensor_bytes(self.A_inv, self.gram)
