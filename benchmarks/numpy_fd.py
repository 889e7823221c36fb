"""Plain numpy SOFUL / CBSCFD: the same algorithm as agents.soful / agents.cbscfd, as a baseline.

Fast Frequent Directions with a 2l-row buffer (Wen et al. (2025), Remark 1, Yang et al. (2025),
Sec. 3.2): the Gram ``S S^T`` and the Cholesky factor of ``S S^T + rho I`` are bordered at each
appended row; when the buffer is full one ``eigh`` of the small Gram shrinks every squared
singular value by the l-th largest and keeps at most ``l - 1`` rows. Robust FD (``robust=True``)
adds the shrink value to ``alpha`` and uses ``rho = lam + alpha``. Queries are Woodbury with the
Cholesky factor.
Only numpy and ``scipy.linalg.solve_triangular`` / ``cho_solve`` (the same LAPACK/BLAS calls
torch makes) are used; no validation, no device handling: the lean reference for timing.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

__all__ = ["NumpyFD", "NumpySketchedUCB"]


class NumpyFD:
    """Fast (2l-buffer) FD, or RFD with ``robust=True``, estimating ``rho I + S^T S``."""

    def __init__(self, d: int, l: int, reg: float = 1.0, robust: bool = False):
        self.d, self.l, self.reg, self.robust = d, l, reg, robust
        self.cap = 2 * l
        self.buf = np.zeros((self.cap, d))
        self.G = np.zeros((self.cap, self.cap))
        self.L = np.zeros((self.cap, self.cap))
        self.m = 0
        self.alpha = 0.0
        self.total_shrinkage = 0.0
        self.eps = np.finfo(np.float64).eps

    @property
    def rho(self) -> float:
        return self.reg + self.alpha

    def update(self, x: np.ndarray) -> None:
        if not x.any():
            return
        m, rho = self.m, self.rho
        xx = x @ x
        if m:
            g = self.buf[:m] @ x
            c = solve_triangular(self.L[:m, :m], g, lower=True)
            self.G[m, :m] = g
            self.G[:m, m] = g
            self.L[m, :m] = c
            schur = xx + rho - c @ c
        else:
            schur = xx + rho
        self.L[m, m] = math.sqrt(max(schur, rho))
        self.G[m, m] = xx
        self.buf[m] = x
        self.m = m + 1
        if self.m == self.cap:
            self._reduce()

    def _reduce(self) -> None:
        m, l = self.m, self.l
        lam, U = np.linalg.eigh(self.G[:m, :m])
        lam, U = lam[::-1], U[:, ::-1]
        tol = 64.0 * self.eps * (m + math.sqrt(self.d)) * max(lam[0], 0.0)
        delta = lam[l - 1] if m >= l else 0.0
        if delta <= tol:
            delta = 0.0
        keep = lam[: l - 1] - delta
        r = int((keep > tol).sum())
        keep = keep[:r]
        new = (U[:, :r] * np.sqrt(keep / lam[:r])).T @ self.buf[:m]
        self.buf[:r] = new
        self.buf[r:m] = 0.0
        self.G[:m, :m] = 0.0
        self.L[:m, :m] = 0.0
        if self.robust:
            self.alpha += delta
        idx = np.arange(r)
        self.G[idx, idx] = keep
        self.L[idx, idx] = np.sqrt(keep + self.rho)
        self.m = r
        self.total_shrinkage += delta

    def quad_inv(self, arms: np.ndarray) -> np.ndarray:
        sq = np.einsum("kd,kd->k", arms, arms)
        m = self.m
        if m == 0:
            return sq / self.rho
        W = solve_triangular(self.L[:m, :m], self.buf[:m] @ arms.T, lower=True)
        return np.maximum((sq - np.einsum("mk,mk->k", W, W)) / self.rho, 0.0)

    def solve(self, v: np.ndarray) -> np.ndarray:
        m = self.m
        if m == 0:
            return v / self.rho
        y = cho_solve((self.L[:m, :m], True), self.buf[:m] @ v)
        return (v - self.buf[:m].T @ y) / self.rho


class NumpySketchedUCB:
    """SOFUL (``robust=False``) or CBSCFD (``robust=True``) with a constant radius ``beta``."""

    def __init__(self, d: int, l: int, lam: float = 1.0, beta: float = 0.1, robust: bool = False):
        self.est = NumpyFD(d, l, reg=lam, robust=robust)
        self.beta = beta
        self.b = np.zeros(d)
        self.theta = np.zeros(d)

    def act(self, arms: np.ndarray) -> int:
        width = np.sqrt(self.est.quad_inv(arms))
        return int(np.argmax(arms @ self.theta + self.beta * width))

    def update(self, x: np.ndarray, reward: float) -> None:
        self.est.update(x)
        self.b += reward * x
        self.theta = self.est.solve(self.b)
