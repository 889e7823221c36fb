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
        self._proj = None  # (arms, A^-1 arms^T) of the last quad_inv; dropped by any update

    def _update(self, x: torch.Tensor, Ax: torch.Tensor | None = None) -> tuple[torch.Tensor, float]:
        # Sherman-Morrison: (A + x x^T)^-1 = A^-1 - (A^-1 x)(A^-1 x)^T / (1 + x^T A^-1 x)
        self._proj = None
        if Ax is None:
            Ax = self.A_inv @ x
        kappa = 1.0 + float(x @ Ax)
        # one fused rank-1 pass over the d x d matrix (addr_), no d x d temporaries
        self.A_inv.addr_(Ax, Ax, alpha=-1.0 / kappa)
        if self.gram is not None:
            self.gram.addr_(x, x)
        return Ax, kappa

    def ridge_step(self, x, reward, b, theta, played=None):
        """Sherman-Morrison on both ``A^-1`` and the solution: O(d^2) for the rank-1 pass only.
        ``A^-1 x`` is the played arm's column of the last :meth:`quad_inv` projection when
        ``played`` names it, so no d x d product is redone (and ``theta`` needs no ``A^-1 b``)."""
        proj = self._proj
        # .contiguous(): addr_ with a strided vector takes a path ~4x slower than with a contiguous one
        Ax = proj[1][:, played[1]].contiguous() if played is not None and proj is not None and proj[0] is played[0] else None
        Ax, kappa = self._update(x, Ax)
        self.n_rows += 1
        return self._rank_one_refit(theta, x, reward, Ax, kappa)

    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        # the only O(K d^2) step; its columns are A^-1 x, kept for ridge_step. A^-1 (K arms)^T, not
        # arms A^-1: MKL's gemm is up to 2.5x slower with the K-row operand on the left (d = 2048)
        P = self.A_inv @ arms.T
        self._proj = (arms, P)
        return (P * arms.T).sum(dim=0)

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
