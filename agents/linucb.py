"""The optimism rule on any covariance estimator (OFUL, SOFUL, CBSCFD and DBSLinUCB are this rule).

    x_t = argmax_{x in X_t}  x^T theta_hat + beta_t ||x||_{A_hat^-1}          (Wen et al. (2025),
    eq. 2)

with ``beta_t`` a constant, as in the papers' experiments, or ``"theory"``: the confidence radius
of the agent's paper. :class:`LinUCB` is the rule alone; everything else an agent does (the
estimator's loop, batching, memory) is :class:`~agents.estimator_agent.EstimatorAgent`'s, and
each agent file pairs the rule with an estimator and states its paper's radius.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ._torch import DeviceLike, DTypeLike
from ._validate import Interval, Options
from .estimator_agent import EstimatorAgent, arm_scratch_bytes, as_arm_batch, state_dtypes
from .sketches.base import ScoreTerms

__all__ = ["LinUCB", "arm_scratch_bytes", "as_arm_batch", "state_dtypes"]


class LinUCB(EstimatorAgent):
    """Optimistic linear bandit agent over a pluggable covariance estimator.

    Args:
        lam: ridge regularisation lambda > 0 (``A_hat = lam I + ...``).
        beta: confidence radius. A float uses that constant every round, as in the papers'
            experiments (tuned on the grid {1e-4, ..., 1}); ``"theory"`` uses the
            self-normalised radius of Abbasi-Yadkori et al. (2011, Thm. 2),
            ``noise_std * sqrt(2 log(1/delta) + log det(A_hat)/lam^d) + sqrt(lam) * theta_bound``
            (a sketched agent: its paper's radius, :meth:`_theory_radius`).
        delta: confidence level of the ``"theory"`` radius.
        noise_std: sub-Gaussian scale R of the reward noise (``"theory"`` only).
        theta_bound: bound H on ||theta*||_2 (``"theory"`` only).
        batch_size: ``None`` (one agent) or B (B independent agents; member i of ``reset(seed=s)``
            gets seed ``s + i``, or pass a list of B seeds). Batched, each argument named in
            ``per_member_args`` (``lam``, ``beta`` and the estimator's sizes) may be B values,
            member i playing exactly as the single agent with the i-th values (``beta`` may mix
            ``"theory"`` and numbers); ``self.lam``/``self.beta`` are then arrays ``(B,)``.
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    Ties in the score are broken towards the lowest index (``torch.argmax``).

    ``update(obs, a, r)`` called with the same numpy array or tensor object that ``act`` just
    scored learns from the arm set as ``act`` saw it (validated once; an in-place change of
    ``obs`` in between is not looked at, or for a tensor makes ``update`` convert it afresh).
    """

    parameter_constraints = {"beta": [Interval(numbers.Real, 0, None), Options(("theory",))]}
    repr_args = ("lam", "beta")
    scores_name = "UCB scores"

    def __init__(
        self,
        *,
        lam: float = 1.0,
        beta: float | str = 1.0,
        delta: float = 0.05,
        noise_std: float = 1.0,
        theta_bound: float = 1.0,
        batch_size: int | None = None,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
    ):
        self.beta = beta
        # which members use the "theory" radius: True/False for all, or a mask when mixed
        if np.ndim(beta) and beta.dtype == object:
            self._theory = np.array([isinstance(b, str) for b in beta])
            self._beta_numbers = np.array([0.0 if isinstance(b, str) else b for b in beta])
        else:
            self._theory = isinstance(beta, str)
        # OFUL's radius reads log det(A_hat), accumulated row by row; a paper's reads its sketch
        self._accumulates_logdet = type(self)._theory_radius is LinUCB._theory_radius
        super().__init__(
            lam=lam,
            delta=delta,
            noise_std=noise_std,
            theta_bound=theta_bound,
            batch_size=batch_size,
            d=d,
            device=device,
            dtype=dtype,
            seed=seed,
        )

    def reset(self, seed: int | list[int | None] | None = None) -> None:
        super().reset(seed=seed)  # checks the seed before anything is cleared
        self._logdet = np.zeros(self.batch_size)  # log det(A_hat) - d log(lam), for beta="theory"

    @property
    def logdet_ratio(self):
        """``sum_s log(1 + ||x_s||^2_{A_hat^-1})`` = ``log det(A_hat) - d log(lam)`` (OFUL,
        ``"theory"``)."""
        return self.members.host(self._logdet)

    # -- the radius ------------------------------------------------------------------
    def _theory_radius(self) -> np.ndarray:
        """``beta="theory"``'s radius per member: Abbasi-Yadkori et al. (2011), Thm. 2,
        ``R sqrt(2 ln(1/delta) + ln(|A_hat| / |lam I|)) + sqrt(lam) H``, the log-determinant ratio
        accumulated row by row (:attr:`logdet_ratio`). A sketched agent states its paper's radius,
        read from its sketch, by overriding this (the log-determinant is then not accumulated)."""
        return (
            self.noise_std * np.sqrt(2.0 * math.log(1.0 / self.delta) + self._logdet)
            + np.sqrt(self.lam) * self.theta_bound
        )

    def _radius(self):
        """beta_t as a float, or per member as a float64 array ``(B,)``."""
        if self._theory is False:
            return self.beta
        # before the first row every paper's radius is OFUL's, with nothing accumulated
        r = self._theory_radius() if self.estimator is not None else LinUCB._theory_radius(self)
        if self._theory is not True:  # "theory" members mixed with numeric ones
            r = np.where(self._theory, r, self._beta_numbers)
        return self.members.host(np.broadcast_to(r, (self.batch_size,)))

    def confidence_radius(self):
        """beta_t used in the current round (a float; per member when batched, a float64 array
        ``(B,)``)."""
        return self._radius()

    # -- the rule --------------------------------------------------------------------
    def _arm_scores(self, arms, terms: ScoreTerms):
        """``x^T theta_hat + beta_t ||x||_{A_hat^-1}`` (Wen et al. (2025), eq. 2) of every arm,
        ``(B, K)``."""
        est = self.estimator
        xp = est.xp
        r = self._radius()
        width = xp.sqrt(terms.quad)  # quad >= the estimators' valid floor >= 0
        width = width * r if isinstance(r, float) else width * xp.asarray(r, est.cdtype)[:, None]
        return terms.mean + width

    def _before_step(self, rows, terms: ScoreTerms | None, actions: Any) -> None:
        if self._theory is not False and self._accumulates_logdet:
            self._logdet = self._logdet + self.estimator.logdet_increments(rows, terms, actions)
