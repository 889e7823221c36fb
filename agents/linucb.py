"""Optimism in the face of uncertainty over any covariance estimator.

Every regret agent of the papers (OFUL, SOFUL, CBSCFD, DBSLinUCB) is the same loop

    x_t = argmax_{x in X_t}  x^T theta_hat + beta * ||x||_{A_hat^-1}          (seed 000, eq. 2)
    A_hat <- A_hat + x_t x_t^T (exactly, or through a sketch);  b <- b + r_t x_t
    theta_hat = A_hat^-1 b

and differs only in how ``A_hat`` is kept. :class:`LinUCB` owns that loop once; each
agent file supplies its :class:`~agents.sketches.CovarianceEstimator`.

Per round, the fixed cost of many small torch calls rivals the O(d l) arithmetic at d ~ 1000,
so the loop does each thing once: ``update(obs, ...)`` of the very arm set ``act(obs)`` just
scored reuses act's validated tensor, and the refit ``theta_hat = A_hat^-1 b`` goes through
:meth:`~agents.sketches.CovarianceEstimator.ridge_step`, which follows the solution by
Sherman-Morrison while ``A_hat`` only gains ``x x^T`` and reuses the played arm's projection from
the scoring (same estimate, to rounding; fresh solves after sketch reductions).
"""

from __future__ import annotations

import math
import numbers
from abc import abstractmethod
from typing import Any

import numpy as np
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

    ``update(obs, a, r)`` called with the same numpy array or tensor object that ``act`` just
    scored learns from the arm set as ``act`` saw it (validated once; an in-place change of
    ``obs`` in between is not looked at, or for a tensor makes ``update`` convert it afresh).
    """

    #: whether ``beta="theory"`` accumulates ``log(1 + ||x||^2_{A_hat^-1})`` (OFUL's radius);
    #: the sketched agents' radii read their sketch instead, so they skip that work
    _accumulates_logdet = True

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
        self._scored = None  # what act() scored last, for update() of the same obs (see _round_arms)
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
        if isinstance(obs, np.ndarray) and arms.device.type == "cpu" and (
            arms.data_ptr() == obs.__array_interface__["data"][0]
        ):
            arms = arms.clone()  # a snapshot, see _remember_scored
        quad = self.estimator.quad_inv(arms)
        self._remember_scored(obs, arms, quad)
        width = torch.clamp(quad, min=0.0).sqrt_()
        # x^T theta_hat + beta ||x||_{A_hat^-1} (seed 000 eq. 2) as one fused addmv
        return torch.addmv(width, arms, self.theta_hat, beta=self.confidence_radius())

    def act(self, obs: Any) -> int:
        return self.scores(obs).argmax().item()

    def _remember_scored(self, obs: Any, arms: torch.Tensor, quad: torch.Tensor) -> None:
        """Keep act's validated arms for update() of the same obs object (the usual loop).

        Holding ``obs`` keeps its id from being reused. A tensor obs (or an equal view of the
        same memory, e.g. ``arms[t]`` indexed twice) is tied to its in-place version counter. A
        numpy obs whose memory the tensor would share (float64 on CPU) was snapshotted by
        :meth:`scores`, so an in-place change before update() cannot make the row update() learns
        from differ from what was scored (the estimators reuse the scored projection of it).
        Other inputs (lists, float32 arrays) were copied by the conversion already.
        """
        if isinstance(obs, torch.Tensor):
            self._scored = (obs, arms, obs._version, quad, self.estimator.n_rows)
        elif isinstance(obs, np.ndarray):
            self._scored = (obs, arms, None, quad, self.estimator.n_rows)
        else:
            self._scored = None

    def _round_arms(self, obs: Any) -> tuple[torch.Tensor, tuple | None]:
        """The round's validated arm tensor, and act's record if it is reused (else None)."""
        sc = self._scored
        if sc is not None:
            seen = sc[0]
            if sc[2] is None:  # numpy: the very object, same shape
                same = seen is obs and obs.shape == tuple(sc[1].shape)
            else:  # torch: the same tensor or an equal view of it (arms[t] twice), unmodified since
                same = isinstance(obs, torch.Tensor) and (seen is obs or (
                    obs.data_ptr() == seen.data_ptr() and obs.shape == seen.shape and obs.stride() == seen.stride()
                    and obs.dtype == seen.dtype and obs.device == seen.device
                )) and obs._version == sc[2]
            if same:
                return sc[1], sc
        return self._arms(obs), None

    def update(self, obs: Any, action: int, reward: float) -> None:
        arms, scored = self._round_arms(obs)
        action, reward = self._check_feedback(arms.shape[0], action, reward)
        x = arms[action]
        est = self.estimator
        if self.beta == "theory" and self._accumulates_logdet:
            if scored is not None and scored[4] == est.n_rows:  # act's widths are of this A_hat
                self.logdet_ratio += math.log1p(max(scored[3][action].item(), 0.0))
            else:
                self.logdet_ratio += float(est.logdet_increment(x))
        self.b.add_(x, alpha=reward)
        # A_hat += x x^T (exactly or through the sketch) and theta_hat = A_hat^-1 b, refitted by
        # Sherman-Morrison from the previous theta_hat when the estimator allows (ridge_step)
        played = (arms, action) if scored is not None else None
        self.theta_hat = est.ridge_step(x, reward, self.b, self.theta_hat, played)
        self._scored = None
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
