"""Plain numpy DBSLinUCB: the same algorithm as agents.dbslinucb (fast Alg. 4 + Alg. 5), a baseline.

Dyadic Block Sketching over fast (2l-buffer) FD or RFD blocks (``NumpyFD`` of numpy_fd.py, the
same shrink rule as agents.sketches.fd): block ``i`` has sketch size ``l0 2^i``; the active block
closes when ``BlockSize + ||x||^2 >= eps l0`` and willExcessSketch (App. B.1 sentinel while the
block has received fewer than ``l_i`` rows, else "would this insert make FD discard mass");
after ``floor(log2(d/l0 + 1)) - 1`` closed blocks every row is added exactly (Sherman-Morrison
on a d x d inverse). ``M = (S S^T + c I)^-1`` over the stacked rows is grown by the bordered
inverse (Wen et al. (2025), eq. 7) and re-formed by eq. 3 (Cholesky of the Gram, frozen part cached)
after each reduction of the active block. Only numpy and scipy.linalg, no validation: the lean
reference for timing, and a cross-check of the torch agent's choices.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np
from scipy.linalg import solve_triangular

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_fd import NumpyFD  # noqa: E402

__all__ = ["NumpyDBS", "NumpyDBSLinUCB"]


def _cap(d: int, l0: int) -> int:
    c = 0
    while l0 * (2 ** (c + 1) - 1) <= d:
        c += 1
    return c


class NumpyDBS:
    """Dyadic Block Sketching estimating ``c I + sum_i S_i^T S_i`` (then exact rows)."""

    def __init__(
        self,
        d: int,
        l0: int,
        eps: float,
        reg: float = 1.0,
        robust: bool = False,
        sentinel: bool = True,
    ):
        self.d, self.l0, self.reg, self.robust, self.sentinel = d, l0, reg, robust, sentinel
        self.threshold = eps * l0
        self.cap = _cap(d, l0)
        self.S_in = np.zeros((0, d))
        self.G_in = np.zeros((0, 0))
        self.alpha_in = 0.0
        self.n_closed = 0
        self.M = np.zeros((0, 0))
        self.r = 0
        self.A_inv = None
        self.fd = None
        self.eps_mach = np.finfo(np.float64).eps
        if self.cap <= 1:
            self.A_inv = np.eye(d) / reg
        else:
            self._open(l0)

    def _open(self, size: int) -> None:
        self.fd = NumpyFD(self.d, size, reg=self.reg, robust=self.robust)
        self.size, self.mass, self.rows, self.held = size, 0.0, 0, 0
        cap = self.S_in.shape[0] + 2 * size
        M = np.zeros((cap, cap))
        M[: self.r, : self.r] = self.M[: self.r, : self.r]
        self.M = M

    @property
    def c(self) -> float:
        return self.reg + self.alpha_in + (self.fd.alpha if self.fd is not None else 0.0)

    # -- willExcessSketch ------------------------------------------------------------------
    def _will_excess(self, x: np.ndarray) -> bool:
        if self.sentinel and 0 < self.rows < self.size:
            return True
        fd = self.fd
        m = fd.m
        if not x.any() or m + 1 < fd.cap:  # the 2l buffer only reduces when it fills
            return False
        G = np.empty((m + 1, m + 1))
        G[:m, :m] = fd.G[:m, :m]
        g = fd.buf[:m] @ x
        G[m, :m] = g
        G[:m, m] = g
        G[m, m] = x @ x
        lam = np.linalg.eigvalsh(G)[::-1]
        tol = 64.0 * self.eps_mach * (m + 1 + math.sqrt(self.d)) * max(lam[0], 0.0)
        return m + 1 >= fd.l and lam[fd.l - 1] > tol

    # -- streaming -------------------------------------------------------------------------
    def update(self, x: np.ndarray) -> None:
        if self.A_inv is not None:
            self._sherman_morrison(x)
            return
        norm2 = float(x @ x)
        if self.mass + norm2 < self.threshold or not self._will_excess(x):
            self._insert(x, norm2)
            return
        size = 2 * self.size
        self._close()
        if self.n_closed >= self.cap - 1:
            S = self.S_in
            A_inv = np.eye(self.d)
            if self.r:
                A_inv -= S.T @ (self.M[: self.r, : self.r] @ S)
            self.A_inv = A_inv / self.c
            self.S_in = self.G_in = self.M = None
            self._sherman_morrison(x)
            return
        self._open(size)
        self._insert(x, norm2)

    def _insert(self, x: np.ndarray, norm2: float) -> None:
        fd = self.fd
        held = self.held
        fd.update(x)
        self.mass += norm2
        self.rows += 1
        if fd.m == held:  # zero row skipped
            return
        if fd.m == held + 1:  # no reduction: eq. 7
            r, c = self.r, self.c
            M = self.M
            if r:
                Sx = np.concatenate((self.S_in @ x, fd.buf[:held] @ x))
                phi = M[:r, :r] @ Sx
                xi = max(norm2 - Sx @ phi + c, c)
                M[:r, :r] += np.outer(phi, phi) / xi
                M[:r, r] = -phi / xi
                M[r, :r] = -phi / xi
            else:
                xi = norm2 + c
            M[r, r] = 1.0 / xi
            self.r += 1
            self.held += 1
            return
        # a reduction: eq. 3 from the cached frozen Gram
        m = fd.m
        r_in = self.S_in.shape[0]
        r = r_in + m
        G = np.empty((r, r))
        G[:r_in, :r_in] = self.G_in
        if r_in and m:
            cross = self.S_in @ fd.buf[:m].T
            G[:r_in, r_in:] = cross
            G[r_in:, :r_in] = cross.T
        G[r_in:, r_in:] = fd.G[:m, :m]
        G[np.diag_indices(r)] += self.c
        if r:
            L = np.linalg.cholesky(G)
            Linv = solve_triangular(L, np.eye(r), lower=True)
            self.M[:r, :r] = Linv.T @ Linv
        self.r, self.held = r, m

    def _close(self) -> None:
        fd = self.fd
        m = fd.m
        r_in = self.S_in.shape[0]
        G = np.empty((r_in + m, r_in + m))
        G[:r_in, :r_in] = self.G_in
        if r_in and m:
            cross = self.S_in @ fd.buf[:m].T
            G[:r_in, r_in:] = cross
            G[r_in:, :r_in] = cross.T
        G[r_in:, r_in:] = fd.G[:m, :m]
        self.G_in = G
        self.S_in = np.vstack((self.S_in, fd.buf[:m]))
        self.alpha_in += fd.alpha
        self.n_closed += 1
        self.fd = None

    def _sherman_morrison(self, x: np.ndarray) -> None:
        Ax = self.A_inv @ x
        self.A_inv -= np.outer(Ax, Ax) / (1.0 + x @ Ax)

    # -- queries ---------------------------------------------------------------------------
    @property
    def sketch_size(self) -> int:
        return self.d if self.A_inv is not None else self.r

    def quad_inv(self, arms: np.ndarray) -> np.ndarray:
        if self.A_inv is not None:
            return np.einsum("kd,kd->k", arms @ self.A_inv, arms)
        sq = np.einsum("kd,kd->k", arms, arms)
        if self.r == 0:
            return sq / self.c
        U = np.hstack((arms @ self.S_in.T, arms @ self.fd.buf[: self.held].T))
        proj = np.einsum("kr,kr->k", U @ self.M[: self.r, : self.r], U)
        return np.maximum((sq - proj) / self.c, 0.0)

    def solve(self, v: np.ndarray) -> np.ndarray:
        if self.A_inv is not None:
            return self.A_inv @ v
        if self.r == 0:
            return v / self.c
        r_in = self.S_in.shape[0]
        S_a = self.fd.buf[: self.held]
        w = self.M[: self.r, : self.r] @ np.concatenate((self.S_in @ v, S_a @ v))
        return (v - self.S_in.T @ w[:r_in] - S_a.T @ w[r_in:]) / self.c


class NumpyDBSLinUCB:
    """DBSLinUCB-FD (``robust=False``) or -RFD (``robust=True``) with a constant radius ``beta``."""

    def __init__(
        self, d: int, l0: int, eps: float, lam: float = 1.0, beta: float = 0.1, robust: bool = False
    ):
        self.est = NumpyDBS(d, l0, eps, reg=lam, robust=robust)
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
