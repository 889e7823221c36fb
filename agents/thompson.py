"""The Thompson sampling rule on any covariance estimator (LinTS, SLinTS, DBSLinTS are this rule).

Round t (Agrawal & Goyal (2013), Alg. 1, on the estimator's ``A_hat`` and ``theta_hat``)::

    z ~ N(0, I_d)                                    (the member's own generator)
    theta_tilde = theta_hat + v_t F z,               F F^T = A_hat^-1
    x_t = argmax_{x in X_t}  x^T theta_tilde

so ``theta_tilde ~ N(theta_hat, v_t^2 A_hat^-1)``. ``F z`` is the estimator's draw
(:meth:`~agents.sketches.base.CovarianceEstimator.draw_all`), each estimator applying its own factor
in its own cost: the exact estimator a square-root factor kept by Potter's update (``d^2`` a round),
a sketch ``(z - V^T V z) / sqrt(c) + V^T L V z`` on its basis state (``O(d R + R^3)``). Different
factors of one ``A_hat^-1`` give the same distribution, not the same draw from one ``z``.

A round reads ``theta_hat`` and one draw, then scores the K arms by one ``K x d`` product: no
arm's width is formed, so the update projects the played row alone.
:class:`ThompsonSampling` is the rule; everything else an agent does (the estimator's loop,
batching, memory) is :class:`~agents.estimator_agent.EstimatorAgent`'s, and each agent file pairs
the rule with an estimator.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ._torch import DeviceLike, DTypeLike
from ._validate import Interval, Options
from .estimator_agent import EstimatorAgent, _member_seeds, state_dtypes
from .sketches.base import ScoreTerms

__all__ = ["ThompsonSampling", "theory_scale"]


def theory_scale(noise_std: float, d: int, t: int, delta: float) -> float:
    """``v_t = R sqrt(9 d ln(t / delta))`` (round ``t >= 1``): the scale of Agrawal & Goyal's
    linear Thompson sampling in the revised statement of their analysis (arXiv:1209.3352, Alg. 1
    and Thm. 1, regret ``O(d^{3/2} sqrt(T))``; the ICML 2013 version states the constant
    ``R sqrt((24 / eps) d ln(1 / delta))`` with a parameter ``eps`` in (0, 1]), for rewards of
    ``R``-sub-Gaussian noise, ``||theta*|| <= 1`` and ``||x|| <= 1``.

    >>> round(theory_scale(1.0, 4, 1, 0.05), 6)
    10.38491
    """
    return noise_std * math.sqrt(9.0 * d * math.log(t / delta))


class ThompsonSampling(EstimatorAgent):
    """Linear Thompson sampling over a pluggable covariance estimator.

    Args:
        lam: ridge regularisation lambda > 0 (``A_hat = lam I + ...``).
        v: the posterior scale. A float uses that constant every round (tuned on a grid, as
            OFUL's ``beta``); ``"theory"`` uses :func:`theory_scale`, Agrawal & Goyal's
            ``R sqrt(9 d ln(t / delta))`` with ``R = noise_std``, for every estimator (the sketched
            analyses' inflation by the sketch's error is not added).
        delta: confidence level of the ``"theory"`` scale.
        noise_std: sub-Gaussian scale R of the reward noise (``"theory"`` only).
        theta_bound: accepted for the interface the UCB agents share (unused).
        batch_size: ``None`` (one agent) or B independent agents; member i draws from its own
            generator, seeded as the single agent with its seed (``reset(seed=s)``: ``s + i``).
            Each argument named in ``per_member_args`` (``lam``, ``v`` and the estimator's sizes)
            may be B values (``v`` may mix ``"theory"`` and numbers).
        d, device, dtype: see :class:`~agents.base.TorchAgent`.
        seed: seed of the normal draws (numpy's ``default_rng``, one per member: the same
            choices on every device and backend).

    Ties in ``x^T theta_tilde`` are broken towards the lowest index (``torch.argmax``).
    """

    parameter_constraints = {
        "v": [
            Interval(numbers.Real, 0, None, hint="the posterior scale"),
            Options(("theory",)),
        ]
    }
    repr_args = ("lam", "v")
    scores_name = "sampled rewards x^T theta_tilde"

    def __init__(
        self,
        *,
        lam: float = 1.0,
        v: float | str = 1.0,
        delta: float = 0.05,
        noise_std: float = 1.0,
        theta_bound: float = 1.0,
        batch_size: int | None = None,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
    ):
        self.v = v
        # which members use the "theory" scale: True/False for all, or a mask when mixed
        if np.ndim(v) and v.dtype == object:
            self._theory = np.array([isinstance(x, str) for x in v])
            self._v_numbers = np.array([0.0 if isinstance(x, str) else x for x in v])
        else:
            self._theory = isinstance(v, str)
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
        # reset() without a seed replays the last one given (the constructor's at first)
        seeds = self.seeds if seed is not None else _member_seeds(self.seed, self.members)
        self._normals = [np.random.default_rng(s) for s in seeds]

    # -- the scale -------------------------------------------------------------------
    def _scale(self):
        """v_t as a float, or per member as a float64 array ``(B,)``."""
        if self._theory is False:
            return self.v
        v = theory_scale(self.noise_std, self.d, self.t + 1, self.delta)
        if self._theory is True:
            return v if self.members.unbatched else np.full(self.batch_size, v)
        return np.where(self._theory, v, self._v_numbers)

    def posterior_scale(self):
        """v_t of the current round (a float; per member when batched, a float64 array
        ``(B,)``); ``"theory"`` needs the dimension (known after the first observation)."""
        if self._theory is not False and self.d is None:
            raise ValueError("v='theory' depends on d, known after the first observation")
        return self.members.host(np.broadcast_to(self._scale(), (self.batch_size,)))

    # -- the rule --------------------------------------------------------------------
    def _score_terms(self, arms) -> ScoreTerms:
        """The arms alone: the rule reads ``theta_hat`` and a draw, no width."""
        return ScoreTerms(arms, None, None, None, None, self.estimator.n_rows)

    def normals(self):
        """The round's ``z`` ``(B, d)`` (host float64), one row from each member's generator."""
        if len(self._normals) == 1:
            return self._normals[0].standard_normal((1, self.d))
        return np.stack([g.standard_normal(self.d) for g in self._normals])

    def _arm_scores(self, arms, terms: ScoreTerms):
        """``x^T theta_tilde`` of every arm ``(B, K)`` (core dtype), ``theta_tilde = theta_hat +
        v_t F z`` per member (the estimator's ``sample_all``: its ``theta_all`` and ``draw_all``,
        fused where it can)."""
        est = self.estimator
        xp = est.xp
        z = xp.asarray(self.normals()[:, None, :], est.cdtype)
        theta_tilde = est.sample_all(z, self._scale())[:, 0]
        return xp.matvec(xp.astype(arms, est.cdtype), theta_tilde)

    # -- memory ----------------------------------------------------------------------
    @classmethod
    def estimate_state_bytes(
        cls, d: int, n_arms: int, *, initial: bool = False, **args: Any
    ) -> int | None:
        """The estimator's state and ``theta_hat`` (:meth:`EstimatorAgent.estimate_state_bytes`)
        plus what the estimator keeps to draw (``draw_state_bytes``: the exact estimator's
        ``d x d`` square-root factor, allocated at the first round)."""
        state = super().estimate_state_bytes(d, n_arms, initial=initial, **args)
        if state is None:
            return None
        dtype, _ = state_dtypes(args)
        return state + cls.estimator_class.draw_state_bytes(d, dtype)
