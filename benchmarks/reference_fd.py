"""Frequent Directions as its authors publish it, in plain numpy: the baseline of
bench_fd_update.py.

Liberty (2013), Alg. 1 with the doubled buffer of Ghashami et al. (2016), Sec. 3: a ``2l x d``
buffer is filled row by row; when it is full, one SVD ``B = U diag(s) V^T`` shrinks every squared
singular value by the l-th, ``s_i <- sqrt(max(s_i^2 - s_l^2, 0))``, and ``B <- diag(s) V^T`` keeps
the ``l - 1`` nonzero rows, so the next ``l + 1`` rows go into free slots without an SVD. No
validation, no queries: the cost of the sketch alone, written independently for this benchmark.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ReferenceFD"]


class ReferenceFD:
    """A ``2l x d`` Frequent Directions buffer (Liberty 2013; Ghashami et al. 2016)."""

    def __init__(self, d: int, l: int):
        self.l = l
        self.buffer = np.zeros((2 * l, d))
        self.filled = 0  # rows in use; the rest are zero
        self.shrinkage = 0.0  # sum of the shrink values: X^T X - B^T B <= shrinkage I

    def update(self, x: np.ndarray) -> None:
        if self.filled == self.buffer.shape[0]:
            self._shrink()
        self.buffer[self.filled] = x
        self.filled += 1

    def _shrink(self) -> None:
        _, s, vt = np.linalg.svd(self.buffer, full_matrices=False)
        delta = s[self.l - 1] ** 2
        kept = np.sqrt(np.maximum(s[: self.l - 1] ** 2 - delta, 0.0))
        self.buffer[:] = 0.0
        self.buffer[: self.l - 1] = kept[:, None] * vt[: self.l - 1]
        self.filled = self.l - 1
        self.shrinkage += delta

    def covariance(self) -> np.ndarray:
        return self.buffer.T @ self.buffer
