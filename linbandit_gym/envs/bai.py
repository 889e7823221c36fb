"""Fixed-confidence best-arm identification in a linear bandit (Jamieson 2018, Sec. 2)."""

from __future__ import annotations

import math
import numbers
from dataclasses import replace
from typing import Any

import numpy as np
from gymnasium import spaces

from .base import LinBanditEnv, check_nonnegative_float, check_positive_int, is_int, short_repr
from .memory import MemoryEstimate

__all__ = ["BAILinBanditEnv"]

_INSTANCES = ("soare", "random")


def _check_sizes(
    instance: Any, d: Any, n_arms: Any, max_pulls: Any, horizon: Any
) -> tuple[int, int, int]:
    """``(d, K, max_pulls)`` of an instance, or a ``ValueError`` naming the bad argument."""
    if not isinstance(instance, str) or instance not in _INSTANCES:
        raise ValueError(f"instance must be one of {_INSTANCES}, got {short_repr(instance)}")
    d = check_positive_int("d", d, minimum=2 if instance == "soare" else 1)
    horizon = None if horizon is None else check_positive_int("horizon", horizon)
    max_pulls = None if max_pulls is None else check_positive_int("max_pulls", max_pulls)
    n_arms = None if n_arms is None else check_positive_int("n_arms", n_arms, minimum=2)
    if horizon is not None and max_pulls is not None and horizon != max_pulls:
        raise ValueError(
            f"horizon is an alias of max_pulls; got both (horizon={horizon!r}, "
            f"max_pulls={max_pulls!r}): pass one"
        )
    if max_pulls is None:
        max_pulls = 100_000 if horizon is None else horizon
    if instance == "soare":
        if n_arms is not None and n_arms != d + 1:
            raise ValueError(
                f"the 'soare' instance has K = d + 1 = {d + 1} arms; got n_arms={n_arms!r} "
                "(leave n_arms unset, or use instance='random')"
            )
        n_arms = d + 1
    elif n_arms is None:
        n_arms = 10
    return d, n_arms, max_pulls


class BAILinBanditEnv(LinBanditEnv):
    """Pure exploration: pull arms of a fixed set, then stop and name the best one.

    The fixed-confidence best-arm-identification game of Jamieson (2018), Sec. 2 (Soare, Lazaric &
    Munos 2014): ``K`` known arms ``x_1..x_K`` in R^d, rewards ``x^T theta* + N(0, noise_std^2)``,
    and the learner decides itself when it has seen enough. Its score is the number of pulls
    it needed (``n_pulls``) and whether the arm it named is ``x* = argmax_x x^T theta*``
    (Jamieson 2018, eq. 1). The arm set is the same every step; nothing but the noise is random
    within an episode.

    Instances (``instance=``):

    * ``"soare"`` -- the hard instance of Soare et al. (2014, Sec. 6): arms ``e_1, ..., e_d``
      and ``x_{d+1} = cos(omega) e_1 + sin(omega) e_2``, ``theta* = e_1``. So ``K = d + 1``,
      the best arm is 0 (``e_1``), the arms ``e_2..e_d`` have gap 1 and the nearly parallel
      arm ``x_{d+1}`` (index ``d``) has the tiny gap ``1 - cos(omega)``. Pulling ``e_1`` and
      ``x_{d+1}`` tells little about their difference ``e_1 - x_{d+1}``, which points along
      ``e_2``; pulling the "useless" arm ``e_2`` is what resolves it. Static G-allocation
      spreads pulls evenly and pays ``d / gap^2``; XY-adaptive allocation puts them on
      ``e_2``. The instance is deterministic (``reset(seed=)`` fixes only the noise).
    * ``"random"`` -- ``n_arms`` arms and theta* drawn uniformly on the unit sphere at every
      ``reset(seed=)``; drawn again (at most 1000 times) until the gap between the best and
      the second-best arm is at least ``min_gap`` and > 0.

    Gaps and the best arm are computed from the float32 arms the agent observes, cast to
    float64, so they are exact for what was observed (``omega`` so small that float32 cannot
    tell ``x_{d+1}`` from ``e_1`` in reward is rejected).

    ## Action Space
    ``Discrete(2K)``. Action ``a`` in ``[0, K)`` pulls arm ``a``; action ``a`` in ``[K, 2K)``
    stops the episode and recommends arm ``a - K``.

    ## Observation Space
    ``Box(-1, 1, (K, d), float32)``: the fixed arm set (unit-norm arms), one arm per row, every
    step.

    ## Rewards
    A pull of arm ``a``: ``x_a^T theta* + N(0, noise_std^2)``. A stop: ``0.0`` (the game is
    scored by ``correct`` and ``n_pulls``, not by reward).

    ``info`` of every step: ``expected_reward`` (of the pulled or recommended arm),
    ``best_expected_reward``, ``regret`` (the gap of the pulled or recommended arm),
    ``best_arm`` and ``n_pulls`` (pulls so far, this one included). The final step (stop or
    truncation) adds ``recommendation`` (the named arm, ``-1`` on truncation) and
    ``correct`` (``recommendation == best_arm``; ``False`` on truncation). The reset ``info``
    holds ``best_arm``, ``best_expected_reward`` and ``n_pulls = 0``.

    ## Starting State
    ``reset(seed=s)`` fixes the instance (for ``"random"``) and the reward noise.

    ## Episode End
    Terminated by a stop action. Truncated when ``max_pulls`` pulls happened without a stop
    (the step of the ``max_pulls``-th pull returns ``truncated=True``). Stepping again
    without ``reset()`` raises ``RuntimeError``.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``instance`` | ``"soare"`` | ``"soare"`` or ``"random"`` |
    | ``d`` | 2 | dimension (``"soare"``: >= 2, ``K = d + 1``) |
    | ``omega`` | 0.1 | angle of ``x_{d+1}`` to ``e_1``, in (0, pi/2) (``"soare"`` only) |
    | ``n_arms`` | None | K; None: 10 for ``"random"``, ``d + 1`` for ``"soare"`` (its only K) |
    | ``noise_std`` | 1.0 | std of the Gaussian reward noise |
    | ``max_pulls`` | None (100000) | pulls before truncation |
    | ``horizon`` | None | alias of ``max_pulls`` (the keyword shared by every env) |
    | ``min_gap`` | 0.0 | ``"random"``: redraw until the best arm leads by at least this |
    | ``render_mode`` | None | None, ``"rgb_array"`` or ``"human"`` (see ``LinBanditEnv``) |

    ## Version History
    * v0: initial version.

    Example:

    >>> env = BAILinBanditEnv(instance="soare", d=2, omega=0.1)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, int(env.action_space.n), env.best_arm
    ((3, 2), 6, 0)
    >>> _, r, terminated, truncated, info = env.step(0)          # pull e_1
    >>> _, r, terminated, truncated, info = env.step(3 + 0)      # stop, name arm 0
    >>> terminated, r, info["recommendation"], info["correct"], info["n_pulls"]
    (True, 0.0, 0, True, 1)
    """

    def __init__(
        self,
        instance: str = "soare",
        d: int = 2,
        omega: float = 0.1,
        n_arms: int | None = None,
        noise_std: float = 1.0,
        max_pulls: int | None = None,
        horizon: int | None = None,
        min_gap: float = 0.0,
        render_mode: str | None = None,
    ):
        d, n_arms, max_pulls = _check_sizes(instance, d, n_arms, max_pulls, horizon)
        # every argument is checked, also those the chosen instance ignores (omega for "random")
        if (
            isinstance(omega, (bool, np.bool_))
            or not isinstance(omega, numbers.Real)
            or not (0.0 < omega < math.pi / 2)
        ):
            raise ValueError(
                f"omega must be an angle in (0, pi/2) radians, got {short_repr(omega)}"
            )
        min_gap = check_nonnegative_float("min_gap", min_gap)
        self._refuse_if_too_large(
            self._memory_estimate(
                instance=instance, d=d, n_arms=n_arms, max_pulls=max_pulls, render_mode=render_mode
            )
        )
        # The base class sets the spaces for Discrete(K); the horizon is the pull budget,
        # since every step before a stop is a pull.
        super().__init__(
            d=d,
            n_arms=n_arms,
            horizon=max_pulls,
            noise_std=noise_std,
            arm_bound=1.0,
            render_mode=render_mode,
        )
        self.instance = instance
        self.omega = float(omega)
        self.max_pulls = max_pulls
        self.min_gap = min_gap
        self.action_space = spaces.Discrete(2 * self.n_arms)
        self.arms: np.ndarray | None = None
        self.gaps: np.ndarray | None = None
        self.best_arm: int | None = None
        self.n_pulls = 0
        if instance == "soare":
            arms = np.zeros((self.n_arms, d))
            arms[np.arange(d), np.arange(d)] = 1.0  # e_1, ..., e_d
            arms[d, 0], arms[d, 1] = math.cos(self.omega), math.sin(self.omega)
            theta = np.zeros(d)
            theta[0] = 1.0
            self._set_instance(arms, theta)
            if self.gaps[d] <= 0.0:
                raise ValueError(
                    f"omega={omega!r} is too small: in float32 the arm x_(d+1) has the same reward "
                    "as e_1 "
                    "(gap 1 - cos(omega) below float32 resolution); use omega >= 1e-3"
                )

    #: The arm set is fixed (float32, held once): building it (float64, then float32) or a
    #: "random" draw, and every round's float64 cast for the means and copy to the caller.
    _ROUND_ARM_BYTES = 16

    @classmethod
    def _memory_estimate(
        cls, *, instance="soare", d, n_arms=None, max_pulls=None, horizon=None, **arguments
    ) -> MemoryEstimate:
        d, n_arms, max_pulls = _check_sizes(instance, d, n_arms, max_pulls, horizon)
        estimate = super()._memory_estimate(d=d, n_arms=n_arms, horizon=max_pulls, **arguments)
        return replace(estimate, arguments={"instance": instance, **estimate.arguments})

    # -- the instance --------------------------------------------------------------
    def _set_instance(self, arms: np.ndarray, theta: np.ndarray) -> None:
        self.arms = np.asarray(arms, dtype=np.float32)
        self.theta_star = np.asarray(theta, dtype=np.float64)
        means = self.arms.astype(np.float64) @ self.theta_star
        self.best_arm = int(np.argmax(means))
        self.gaps = means[self.best_arm] - means

    def _sample_problem(self, rng: np.random.Generator) -> None:
        if self.instance == "soare":
            return
        for _ in range(1000):
            arms = rng.standard_normal((self.n_arms, self.d))
            arms /= np.linalg.norm(arms, axis=1, keepdims=True)
            theta = rng.standard_normal(self.d)
            theta /= np.linalg.norm(theta)
            self._set_instance(arms, theta)
            runner_up = np.min(np.delete(self.gaps, self.best_arm))
            if runner_up > 0.0 and runner_up >= self.min_gap:
                return
        raise ValueError(
            f"could not draw {self.n_arms} random arms in d={self.d} whose best arm leads by >= "
            f"min_gap={self.min_gap} in 1000 tries; lower min_gap or n_arms"
        )

    def _sample_arms(self, rng: np.random.Generator) -> np.ndarray:
        return self.arms

    # -- gymnasium API -------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = super().reset(seed=seed, options=options)
        self.n_pulls = 0
        info["n_pulls"] = 0
        return obs, info

    def _validate_action(self, action: Any) -> int:
        if isinstance(action, np.ndarray) and action.ndim == 0:
            action = action.item()
        k = self.n_arms
        if not is_int(action):
            raise ValueError(
                f"action must be an int in [0, {2 * k}): a in [0, {k}) pulls arm a, "
                f"a in [{k}, {2 * k}) stops and recommends arm a - {k}; got {short_repr(action)} "
                f"({type(action).__name__})"
            )
        if not 0 <= int(action) < 2 * k:
            raise ValueError(
                f"action {int(action)} is out of range: with K={k} arms, 0..{k - 1} pull an arm "
                "and "
                f"{k}..{2 * k - 1} stop and recommend arm a - {k}"
            )
        return int(action)

    def step(self, action: Any):
        self._check_can_step()
        action = self._validate_action(action)  # raises before any state changes
        stop = action >= self.n_arms
        arm = action - self.n_arms if stop else action
        info = {
            "expected_reward": float(self._means[arm]),
            "best_expected_reward": float(self._means[self.best_arm]),
            "regret": float(self.gaps[arm]),
            "best_arm": self.best_arm,
        }
        if stop:
            self._done = True
            self.t += 1
            info.update(n_pulls=self.n_pulls, recommendation=arm, correct=arm == self.best_arm)
            self._after_step(arm, 0.0, "recommended")  # a stop pulls nothing: no regret added
            return self._arms.copy(), 0.0, True, False, info
        reward = self._sample_reward(info["expected_reward"], self._noise_rng)
        self.n_pulls += 1
        self.t += 1
        info["n_pulls"] = self.n_pulls
        truncated = self.n_pulls >= self.max_pulls
        if truncated:
            self._done = True
            info.update(recommendation=-1, correct=False)
        self._after_step(arm, info["regret"], "pulled")
        return self._arms.copy(), float(reward), False, truncated, info
