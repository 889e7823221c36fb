"""CBSCFD with a batch dimension: B independent Robust-FD-sketched OFUL agents as one tensor program."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..cbscfd import CBSCFD
from .base import BatchedLinUCB
from .rfd import BatchedRobustFrequentDirections

__all__ = ["BatchedCBSCFD"]


class BatchedCBSCFD(BatchedLinUCB):
    """B independent :class:`~agents.cbscfd.CBSCFD` agents (same keywords, plus ``batch_size``).

    Each member keeps its own RFD sketch
    (:class:`~agents.batched.rfd.BatchedRobustFrequentDirections`); O(B d l) memory.

    Example:

    >>> import numpy as np
    >>> agent = BatchedCBSCFD(batch_size=2, lam=1.0, beta=0.1, sketch_size=4)
    >>> arms = np.stack([np.eye(3), np.eye(3)])
    >>> a = agent.act(arms); agent.update(arms, a, rewards=[1.0, -1.0])
    >>> [[round(v, 12) for v in row] for row in agent.theta_hat.tolist()]
    [[0.5, 0.0, 0.0], [-0.5, 0.0, 0.0]]
    """

    single_class = CBSCFD
    _accumulates_logdet = False

    @staticmethod
    def params_of(agent: Any) -> dict[str, Any]:
        return {"sketch_size": agent._l, "fast": agent.fast}

    def _make_estimator(self, d: int) -> BatchedRobustFrequentDirections:
        return BatchedRobustFrequentDirections(
            self.batch_size, d, self.template._l, reg=self.lam, fast=self.template.fast, device=self.device, dtype=self.dtype
        )

    def confidence_radius(self) -> torch.Tensor | float:
        if self.beta != "theory":
            return self.beta
        # CBSCFD.confidence_radius per member (seed 000 Thm. 6 for one RFD block)
        est = self.estimator
        radius = self.noise_std * torch.sqrt(2.0 * math.log(1.0 / self.delta) + est.log_det_ratio_bound())
        return (radius + self.theta_bound * torch.sqrt(self.lam + est.alpha)).to(self.dtype)
