"""SOFUL with a batch dimension: B independent FD-sketched OFUL agents as one tensor program."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..soful import SOFUL
from .base import BatchedLinUCB
from .fd import BatchedFrequentDirections

__all__ = ["BatchedSOFUL"]


class BatchedSOFUL(BatchedLinUCB):
    """B independent :class:`~agents.soful.SOFUL` agents (same keywords, plus ``batch_size``).

    Each member keeps its own FD sketch (:class:`~agents.batched.fd.BatchedFrequentDirections`);
    scoring is one ``(B, K, d) x (B, d, 2l)`` batched product and a batched triangular solve,
    reductions one batched ``eigh``. O(B d l) memory, O(B K d l) time a round.

    Example:

    >>> import numpy as np
    >>> agent = BatchedSOFUL(batch_size=2, lam=1.0, beta=0.1, sketch_size=4)
    >>> arms = np.stack([np.eye(3), np.eye(3)])
    >>> a = agent.act(arms); agent.update(arms, a, rewards=[1.0, -1.0])
    >>> [[round(v, 12) for v in row] for row in agent.theta_hat.tolist()]
    [[0.5, 0.0, 0.0], [-0.5, 0.0, 0.0]]
    """

    single_class = SOFUL
    _accumulates_logdet = False  # the "theory" radius reads the sketch's own log-det bound

    @staticmethod
    def params_of(agent: Any) -> dict[str, Any]:
        return {"sketch_size": agent._l, "fast": agent.fast}

    def _make_estimator(self, d: int) -> BatchedFrequentDirections:
        return BatchedFrequentDirections(
            self.batch_size, d, self.template._l, reg=self.lam, fast=self.template.fast, device=self.device, dtype=self.dtype
        )

    def confidence_radius(self) -> torch.Tensor | float:
        if self.beta != "theory":
            return self.beta
        # SOFUL.confidence_radius per member (seed 000 Thm. 2 for one FD block)
        est, lam = self.estimator, self.lam
        sb, logdet = est.total_shrinkage, est.log_det_ratio_bound()
        radius = self.noise_std * torch.sqrt(1.0 + sb / lam) * torch.sqrt(2.0 * math.log(1.0 / self.delta) + logdet)
        return (radius + self.theta_bound * (lam + sb) / math.sqrt(lam)).to(self.dtype)
