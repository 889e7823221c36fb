"""DBSLinUCB with a batch dimension: B independent Dyadic-Block-Sketched agents as one tensor program."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..dbslinucb import DBSLinUCB
from .base import BatchedLinUCB
from .dbs import BatchedDyadicBlockSketch

__all__ = ["BatchedDBSLinUCB"]


class BatchedDBSLinUCB(BatchedLinUCB):
    """B independent :class:`~agents.dbslinucb.DBSLinUCB` agents (same keywords, plus ``batch_size``).

    Every member closes its blocks, grows its sketch and reaches the block cap on its own
    rounds; :class:`~agents.batched.dbs.BatchedDyadicBlockSketch` keeps the divergent block
    structures in one padded layout (see there). Also batches ``DBSLinUCBFD`` / ``DBSLinUCBRFD``.

    Example:

    >>> import numpy as np
    >>> agent = BatchedDBSLinUCB(batch_size=2, lam=1.0, beta=0.1, l0=2, eps=1.0)
    >>> rng = np.random.default_rng(0)
    >>> for t in range(30):
    ...     arms = rng.standard_normal((2, 5, 8))
    ...     a = agent.act(arms); agent.update(arms, a, rewards=arms[[0, 1], a, 0])
    >>> bool((agent.n_blocks <= agent.estimator.block_cap).all()), bool((agent.sketch_size <= 8).all())
    (True, True)
    """

    single_class = DBSLinUCB
    _accumulates_logdet = False

    @staticmethod
    def params_of(agent: Any) -> dict[str, Any]:
        return {"l0": agent.l0, "eps": agent.eps, "sketch": agent.sketch, "fast": agent.fast, "sentinel": agent.sentinel}

    def _allocate(self, d: int) -> None:
        t = self.template
        if t.l0 > d:  # as DBSLinUCB._allocate: nothing is created, the message names the fix
            raise ValueError(
                f"l0={t.l0} exceeds the arm dimension d={d}; choose 1 <= l0 <= d "
                f"(the paper uses l0 much smaller than d, e.g. l0=50 for d=500)"
            )
        super()._allocate(d)

    def _make_estimator(self, d: int) -> BatchedDyadicBlockSketch:
        t = self.template
        return BatchedDyadicBlockSketch(
            self.batch_size, d, t.l0, t.eps, sketch=t.sketch, reg=self.lam, fast=t.fast, sentinel=t.sentinel,
            device=self.device, dtype=self.dtype,
        )

    def confidence_radius(self) -> torch.Tensor | float:
        """beta_t per member: the constant, or DBSLinUCB's Theorem 2 / 6 radius (vectorised)."""
        if self.beta != "theory":
            return self.beta
        est, lam, d = self.estimator, self.lam, self.d
        s, T = est.total_shrinkage, est.frobenius_mass
        m = np.where(est.exact, d, np.minimum(d, est.sketch_sizes())).astype(np.float64)
        safe = np.maximum(m, 1.0)
        base = 2.0 * math.log(1.0 / self.delta)
        if self.template.sketch == "fd":
            ld = (d - m) * np.log1p(s / lam) + np.where(m > 0, m * np.log1p(s / lam + T / (safe * lam)), 0.0)
            r = self.noise_std * np.sqrt(1.0 + s / lam) * np.sqrt(base + ld) + self.theta_bound * (lam + s) / math.sqrt(lam)
        else:
            h = s - est.blocks_weighted_shrinkage() / safe
            ld = np.where(
                m > 0, (d - m) * np.log1p(s / lam) + m * np.log1p(np.maximum(T / safe + h, 0.0) / lam), d * np.log1p(s / lam)
            )
            r = self.noise_std * np.sqrt(base + ld) + self.theta_bound * np.sqrt(lam + s)
        return torch.as_tensor(r, device=self.device).to(self.dtype)

    @property
    def n_blocks(self) -> np.ndarray | None:
        """Blocks of each member's sketch (``None`` before the first observation)."""
        return None if self.estimator is None else self.estimator.n_blocks

    @property
    def exact_mode(self) -> np.ndarray | None:
        """Per member, whether its sketch reached the block cap (exact, OFUL-like updates)."""
        return None if self.estimator is None else self.estimator.exact.copy()
