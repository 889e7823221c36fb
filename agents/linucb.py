"""Optimism in the face of uncertainty over any covariance estimator.

Every regret agent of the papers (OFUL, SOFUL, CBSCFD, DBSLinUCB) is the same loop

    x_t = argmax_{x in X_t}  x^T theta_hat + beta * ||x||_{A_hat^-1}          (seed 000, eq. 2)
    A_hat <- A_hat + x_t x_t^T (exactly, or through a sketch);  b <- b + r_t x_t
    theta_hat = A_hat^-1 b

and differs only in how ``A_hat`` is kept. :class:`LinUCB` owns that loop once; each
agent file supplies its :class:`~agents.sketches.CovarianceEstimator`.
"""

from __future__ import annotations

import math
import numbers
from abc import abstractmethod
from typing import Any

import torch

from ._torch import tensor_bytes
from .base import TorchAgent
from .sketches.base import CovarianceEstimator

__all__ = ["LinUCB"]


class LinUCB(TorchAgent):
    """Optimistic linear bandit agent over a pluggable covariance estimator.

    Args:
        lam: ridge regularisation lambda > 0 (``A_hat = lam I + ...``).
        beta: confidence radius. A float uses that constant every round, as in the papers'
            experiments (tuned on the grid {1e-4, ..., 1}); ``"theory"`` uses the
            self-normalised radius of Abbasi-Yadkori et al. (2011, Thm. 2),
            ``noise_std * sqrt(2 log(1/delta) + log det(A_hat)/lam^d) + sqrt(lam) * theta_bound``.
        delta: confidence level of the ``"theory"`` radius.
        noise_std: sub-Gaussian scale R of the reward noise (``"theory"`` only).
        theta_bound: bound H on ||theta*||_2 (``"theory"`` only).
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    Ties in the score are broken towards the lowest index (``torch.argmax``).
    """

    def __init__(
        self,
        *,
        lam: float = 1.0,
        beta: float | str = 1.0,
        delta: float = 0.05,
        noise_std: float = 1.0,
        theta_bound: float = 1.0,
        d: int | None = None,
        device=None,
        dtype=None,
        seed: int | None = None,
    ):
        if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not (lam > 0 and math.isfinite(lam)):
            raise ValueError(f"lam (ridge lambda) must be a finite number > 0, got {lam!r}")
        if isinstance(beta, str):
            if beta != "theory":
                raise ValueError(f"beta must be a float >= 0 or 'theory', got {beta!r}")
        elif isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not (beta >= 0 and math.isfinite(beta)):
            raise ValueError(f"beta must be a float >= 0 or 'theory', got {beta!r}")
        if not (0 < delta < 1):
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        if not (noise_std >= 0):
            raise ValueError(f"noise_std must be >= 0, got {noise_std!r}")
        if not (theta_bound >= 0):
            raise ValueError(f"theta_bound must be >= 0, got {theta_bound!r}")
        self.lam = float(lam)
        self.beta = beta if isinstance(beta, str) else float(beta)
        self.delta = float(delta)
        self.noise_std = float(noise_std)
        self.theta_bound = float(theta_bound)
        self._repr_params = {"lam": self.lam, "beta": self.beta}
        self.estimator: CovarianceEstimator | None = None
        super().__init__(d=d, device=device, dtype=dtype, seed=seed)

    # -- what each agent file supplies ---------------------------------------------
    @abstractmethod
    def _make_estimator(self, d: int) -> CovarianceEstimator:
        """The covariance estimator this agent plays with."""

    # -- state ---------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        self.estimator = None
        self.b = None
        self.theta_hat = None
        self.logdet_ratio = 0.0  # log det(A_hat) - d log(lam), for beta="theory"
        super().reset(seed=seed)

    def _allocate(self, d: int) -> None:
        super()._allocate(d)
        self.estimator = self._make_estimator(d)
        self.b = torch.zeros(d, device=self.device, dtype=self.dtype)
        self.theta_hat = torch.zeros(d, device=self.device, dtype=self.dtype)

    # -- the loop ------------------------------------------------------------------
    def confidence_radius(self) -> float:
        """beta_t used in the current round."""
        if self.beta != "theory":
            return self.beta
        return self.noise_std * math.sqrt(2.0 * math.log(1.0 / self.delta) + self.logdet_ratio) + math.sqrt(
            self.lam
        ) * self.theta_bound

    def scores(self, obs: Any) -> torch.Tensor:
        """Upper confidence bounds of all K arms, one batched op (shape ``(K,)``)."""
        arms = self._arms(obs)
        width = torch.sqrt(torch.clamp(self.estimator.quad_inv(arms), min=0.0))
        return arms @ self.theta_hat + self.confidence_radius() * width

    def act(self, obs: Any) -> int:
        return int(torch.argmax(self.scores(obs)))

    def update(self, obs: Any, action: int, reward: float) -> None:
        arms = self._arms(obs)
        action, reward = self._check_feedback(arms.shape[0], action, reward)
        x = arms[action]
        if self.beta == "theory":
            self.logdet_ratio += float(self.estimator.logdet_increment(x))
        self.estimator.update(x)
        self.b += reward * x
        self.theta_hat = self.estimator.solve(self.b)
        self.t += 1

    # -- introspection -------------------------------------------------------------
    @property
    def sketch_size(self) -> int | None:
        """Rows of sketch held now (``d`` for OFUL); ``None`` before the first observation."""
        return None if self.estimator is None else self.estimator.sketch_size

    def memory_bytes(self) -> int:
        if self.estimator is None:
            return 0
        return self.estimator.memory_bytes() + tensor_bytes(self.b, self.theta_hat)
