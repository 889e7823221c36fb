"""OFUL (Abbasi-Yadkori, Pal & Szepesvari, 2011): the un-sketched baseline."""

from __future__ import annotations

from .base import Batching
from .linucb import LinUCB
from .sketches.exact import ExactCovariance

__all__ = ["OFUL"]


class OFUL(LinUCB):
    """Optimism in the Face of Uncertainty for Linear bandits, with the exact Gram matrix.

    Keeps ``A^-1`` with ``A = lam I + sum_s x_s x_s^T`` by Sherman-Morrison (Wen et al. (2025),
    Sec. 2.2, eq. 2): O(d^2) time and memory a round, all K arms scored in one matmul.

    Args:
        lam: ridge lambda > 0.
        beta: a constant radius (float, as in the papers' experiments) or ``"theory"``.
        delta, noise_std, theta_bound: used by ``beta="theory"`` only.
        d: optional dimension, allocates eagerly; read from the first observation otherwise.
        device, dtype: see :class:`~agents.base.TorchAgent`.
        seed: accepted for a uniform interface (OFUL is deterministic).
        batch_size: ``None`` (one agent) or B independent agents
            (:class:`agents.batched.BatchedOFUL`).

    Example:

    >>> import numpy as np
    >>> agent = OFUL(lam=1.0, beta=0.1)
    >>> arms = np.eye(3)
    >>> a = agent.act(arms); agent.update(arms, a, reward=1.0)
    >>> agent.theta_hat.tolist()
    [0.5, 0.0, 0.0]
    """

    estimator_class = ExactCovariance
    batching = Batching(per_member=("lam", "beta"))
