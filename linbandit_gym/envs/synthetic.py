"""Synthetic linear bandit with Gaussian arms (Wen et al. 2025, Sec. 5, "online regression")."""

from __future__ import annotations

import numpy as np

from .base import LinBanditEnv, check_bool
from .memory import Allocation, MemoryEstimate

__all__ = ["SyntheticLinBanditEnv"]


class SyntheticLinBanditEnv(LinBanditEnv):
    """Gaussian arms, unit-norm theta*, Gaussian reward noise.

    The synthetic setting of Wen et al. (2025), Sec. 5 (after Chen et al. 2020): every round
    ``n_arms`` arms are drawn i.i.d. from N(0, I_d) and scaled to unit norm; theta* ~ N(0, I_d) is
    normalised. The isotropic arms make the played design matrix's spectrum flat (a heavy tail), the
    regime where fixed-size sketches turn regret linear.

    ## Action Space
    ``Discrete(n_arms)``: the index of the arm to play.

    ## Observation Space
    ``Box(-1, 1, (n_arms, d), float32)`` (unbounded without ``normalize_arms``): this round's
    arm set, one arm per row, each of unit l2 norm when ``normalize_arms``.

    ## Rewards
    ``<x_a, theta*> + N(0, noise_std^2)``. ``info`` holds ``expected_reward``,
    ``best_expected_reward``, ``regret`` and ``best_arm``.

    ## Starting State
    ``reset(seed=s)`` draws theta* and fixes the arm and noise streams.

    ## Episode End
    Truncated after ``horizon`` rounds; never terminated.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``d`` | 500 | dimension (paper: 500) |
    | ``n_arms`` | 100 | arms per round K (paper: 100) |
    | ``horizon`` | 2000 | rounds per episode |
    | ``noise_std`` | 0.01 | std of the Gaussian reward noise (ours: the paper gives none) |
    | ``normalize_arms`` | True | scale every arm to unit l2 norm (L = 1) |
    | ``fixed_arms`` | False | draw one arm set at reset and keep it for the whole episode |
    | ``render_mode`` | None | None, ``"rgb_array"`` or ``"human"`` (see ``LinBanditEnv``) |

    The noise default is our choice: the paper gives none. With unit arms in d = 500 the mean
    rewards have spread ~ 1/sqrt(d) = 0.045, so at sigma = 0.1 no agent (OFUL included) has
    learnt theta* by T = 2000 and every curve is linear; at sigma = 0.01 the paper's Fig. 1
    picture appears (OFUL and DBSLinUCB bend over, SOFUL/CBSCFD with l = 50 stay linear).

    ## Version History
    * v0: initial version.
    """

    def __init__(
        self,
        d: int = 500,
        n_arms: int = 100,
        horizon: int = 2000,
        noise_std: float = 0.01,
        normalize_arms: bool = True,
        fixed_arms: bool = False,
        render_mode: str | None = None,
    ):
        normalize_arms = check_bool("normalize_arms", normalize_arms)
        fixed_arms = check_bool("fixed_arms", fixed_arms)
        self._refuse_if_too_large(
            self._memory_estimate(
                d=d, n_arms=n_arms, horizon=horizon, render_mode=render_mode, fixed_arms=fixed_arms
            )
        )
        super().__init__(
            d=d,
            n_arms=n_arms,
            horizon=horizon,
            noise_std=noise_std,
            arm_bound=1.0 if normalize_arms else np.inf,
            render_mode=render_mode,
        )
        self.normalize_arms = normalize_arms
        self.fixed_arms = fixed_arms
        self._fixed: np.ndarray | None = None

    @classmethod
    def _memory_estimate(cls, *, fixed_arms: bool = False, **arguments) -> MemoryEstimate:
        estimate = super()._memory_estimate(**arguments)
        if not check_bool("fixed_arms", fixed_arms):
            return estimate
        n_arms, d = estimate.obs_shape
        return estimate.plus(
            Allocation(
                "the fixed arm set (fixed_arms=True, float64)",
                n_arms * d,
                8,
                ("n_arms", "d"),
                "lower d or n_arms",
            )
        )

    def _draw_arms(self, rng: np.random.Generator) -> np.ndarray:
        arms = rng.standard_normal((self.n_arms, self.d))
        if self.normalize_arms:
            arms /= np.linalg.norm(arms, axis=1, keepdims=True)
        return arms

    def _sample_problem(self, rng: np.random.Generator) -> None:
        theta = rng.standard_normal(self.d)
        self.theta_star = theta / np.linalg.norm(theta)
        self._fixed = self._draw_arms(rng) if self.fixed_arms else None

    def _sample_arms(self, rng: np.random.Generator) -> np.ndarray:
        return self._fixed if self._fixed is not None else self._draw_arms(rng)
