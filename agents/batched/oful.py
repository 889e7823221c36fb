"""OFUL with a batch dimension: B independent exact-Gram agents as one tensor program."""

from __future__ import annotations

from ..oful import OFUL
from .base import BatchedLinUCB
from .exact import BatchedExactCovariance

__all__ = ["BatchedOFUL"]


class BatchedOFUL(BatchedLinUCB):
    """B independent :class:`~agents.oful.OFUL` agents (same keywords, plus ``batch_size``).

    O(B d^2) time and memory a round; every member makes the choices the unbatched OFUL makes
    on its data.

    Example:

    >>> import numpy as np
    >>> agent = BatchedOFUL(batch_size=2, lam=1.0, beta=0.1)
    >>> arms = np.stack([np.eye(3), np.eye(3)])          # (B, K, d)
    >>> a = agent.act(arms); agent.update(arms, a, rewards=[1.0, -1.0])
    >>> agent.theta_hat.tolist()
    [[0.5, 0.0, 0.0], [-0.5, 0.0, 0.0]]
    """

    single_class = OFUL

    def _make_estimator(self, d: int) -> BatchedExactCovariance:
        return BatchedExactCovariance(self.batch_size, d, reg=self.lam, device=self.device, dtype=self.dtype)
