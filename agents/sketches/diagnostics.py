"""Exact diagnostics of a covariance sketch against the full data (tests, small d).

These form d x d matrices and eigendecompose them (O(n d^2 + d^3)): never call them inside a
bandit loop. They are what the sketches' guarantees are stated in terms of (Wen et al. (2025),
eq. 1, Lemma 1, Lemma 4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .base import CovarianceEstimator

__all__ = ["fd_error_bound", "psd_gap", "spectral_error"]


def _as_data(X: Any, estimator: CovarianceEstimator) -> torch.Tensor:
    t = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X, dtype=np.float64))
    t = t.to(device=estimator.device, dtype=torch.float64)
    if t.ndim == 1:
        t = t.reshape(1, -1)
    if t.ndim != 2 or t.shape[1] != estimator.d:
        raise ValueError(
            f"X must have shape (n, {estimator.d}) (the rows fed to the estimator), "
            f"got {tuple(t.shape)}"
        )
    return t


def _gap(X: Any, estimator: CovarianceEstimator) -> torch.Tensor:
    Xt = _as_data(X, estimator)
    return Xt.T @ Xt - estimator.covariance().to(torch.float64)


def spectral_error(X: Any, estimator: CovarianceEstimator) -> float:
    """``||X^T X - estimator.covariance()||_2`` exactly (eigvalsh, computed in float64).

    ``X`` holds the rows the estimator has seen, shape ``(n, d)`` (numpy or torch).

    >>> import torch
    >>> from agents.sketches import FrequentDirections
    >>> X = torch.eye(3, dtype=torch.float64)
    >>> fd = FrequentDirections(3, sketch_size=5)
    >>> for x in X: fd.update(x)
    >>> spectral_error(X, fd)
    0.0
    """
    ev = torch.linalg.eigvalsh(_gap(X, estimator))
    return float(ev.abs().max()) if ev.numel() else 0.0


def psd_gap(X: Any, estimator: CovarianceEstimator) -> tuple[float, float]:
    """``(lambda_min, lambda_max)`` of ``X^T X - estimator.covariance()`` (float64).

    FD promises ``0 <= lambda_min`` and ``lambda_max <= total_shrinkage``; RFD promises
    ``-alpha <= lambda_min`` and ``lambda_max <= 0``.
    """
    ev = torch.linalg.eigvalsh(_gap(X, estimator))
    return float(ev[0]), float(ev[-1])


def fd_error_bound(X: Any, sketch_size: int) -> float:
    """``min_{0 <= k < l} ||X - X_[k]||_F^2 / (l - k)`` (Wen et al. (2025), eq. 1): FD's error
    bound."""
    Xt = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X, dtype=np.float64))
    s2 = torch.linalg.svdvals(Xt.to(torch.float64)) ** 2
    tails = torch.flip(torch.cumsum(torch.flip(s2, [0]), 0), [0])  # tails[k] = sum_{i >= k} s2_i
    best = float("inf")
    for k in range(sketch_size):
        tail = float(tails[k]) if k < tails.numel() else 0.0
        best = min(best, tail / (sketch_size - k))
    return best
