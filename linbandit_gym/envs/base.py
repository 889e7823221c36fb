"""The linear-bandit environment base class: the env contract of DESIGN.md, once.

Subclasses say only how a problem instance is drawn (:meth:`LinBanditEnv._sample_problem`),
how each round's arm set is drawn (:meth:`LinBanditEnv._sample_arms`) and, when it is not
linear-Gaussian, what the expected and realised rewards are. Everything else -- spaces,
validation, horizon/truncation, ``info`` keys, seeding -- lives here.
"""

from __future__ import annotations

import numbers
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["LinBanditEnv", "check_positive_int", "check_nonnegative_float"]


def check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``, or a ``ValueError`` naming the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def check_nonnegative_float(name: str, value: Any) -> float:
    """``value`` as a finite float >= 0, or a ``ValueError`` naming the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


class LinBanditEnv(gym.Env):
    """Base class of every linbandit environment (a stochastic linear bandit).

    Each round the agent observes an arm set ``obs`` of shape ``(K, d)`` (float32), picks
    ``action`` in ``Discrete(K)`` and receives ``reward = <x_action, theta*> + noise``
    (subclasses may define other reward models). After ``horizon`` rounds the episode is
    truncated. ``reset(seed=s)`` fixes theta*, the arm stream and the noise.

    ``info`` of every step holds ``expected_reward`` (of the chosen arm),
    ``best_expected_reward``, ``regret`` (instantaneous pseudo-regret, >= 0) and
    ``best_arm``; the reset ``info`` holds ``best_arm`` and ``best_expected_reward`` of the
    first arm set.

    The expected rewards are computed from the float32 arms the agent sees (cast to
    float64), so regret is exact for what was observed.

    Subclasses implement :meth:`_sample_problem` and :meth:`_sample_arms` and may
    override :meth:`_expected_rewards` and :meth:`_sample_reward`.
    """

    metadata = {"render_modes": []}

    def __init__(
        self, *, d: int, n_arms: int, horizon: int = 2000, noise_std: float = 0.1, arm_bound: float = np.inf
    ):
        super().__init__()
        self.d = check_positive_int("d", d)
        self.n_arms = check_positive_int("n_arms", n_arms, minimum=2)
        self.horizon = check_positive_int("horizon", horizon)
        self.noise_std = check_nonnegative_float("noise_std", noise_std)
        # arm_bound: a known bound on every coordinate (1.0 for unit-norm arms), else unbounded
        self.observation_space = spaces.Box(
            low=-arm_bound, high=arm_bound, shape=(self.n_arms, self.d), dtype=np.float32
        )
        self.action_space = spaces.Discrete(self.n_arms)
        self.theta_star: np.ndarray | None = None
        self._arms: np.ndarray | None = None
        self._means: np.ndarray | None = None
        self.t = 0
        self._done = True

    # -- what subclasses supply ----------------------------------------------------
    def _sample_problem(self, rng: np.random.Generator) -> None:
        """Draw the instance (theta*, fixed data) for a new episode; sets ``self.theta_star``."""
        raise NotImplementedError

    def _sample_arms(self, rng: np.random.Generator) -> np.ndarray:
        """Draw the arm set of the next round, shape ``(K, d)``."""
        raise NotImplementedError

    def _expected_rewards(self, arms: np.ndarray) -> np.ndarray:
        """Mean reward of every arm (default: linear, ``arms @ theta*``)."""
        return arms @ self.theta_star

    def _sample_reward(self, mean: float, rng: np.random.Generator) -> float:
        """Realised reward of the chosen arm (default: Gaussian noise of std ``noise_std``)."""
        return float(mean + self.noise_std * rng.standard_normal())

    # -- gymnasium API -------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        # Independent streams for the instance, the arms and the noise, so that the arm
        # stream and theta* never depend on what the agent plays.
        problem_rng, arm_rng, noise_rng = self.np_random.spawn(3)
        self._arm_rng, self._noise_rng = arm_rng, noise_rng
        self._sample_problem(problem_rng)
        self.t = 0
        self._done = False
        self._next_round()
        return self._arms.copy(), {
            "best_arm": int(np.argmax(self._means)),
            "best_expected_reward": float(np.max(self._means)),
        }

    def _next_round(self) -> None:
        arms = np.asarray(self._sample_arms(self._arm_rng), dtype=np.float32)
        self._arms = arms
        self._means = np.asarray(self._expected_rewards(arms.astype(np.float64)), dtype=np.float64)

    def _validate_action(self, action: Any) -> int:
        if isinstance(action, np.ndarray) and action.ndim == 0:
            action = action.item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, numbers.Integral):
            raise ValueError(
                f"action must be an int arm index in [0, {self.action_space.n}), got {action!r} "
                f"({type(action).__name__}); pass e.g. int(np.argmax(scores))"
            )
        if not 0 <= int(action) < self.action_space.n:
            raise ValueError(f"action {int(action)} is out of range: this env has arms 0..{self.action_space.n - 1}")
        return int(action)

    def _check_can_step(self) -> None:
        if self._arms is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError(
                f"the episode ended (horizon={self.horizon} rounds reached or the episode terminated); call reset() "
                "before stepping again"
            )

    def step(self, action: Any):
        self._check_can_step()
        action = self._validate_action(action)  # raises before any state changes
        best_arm = int(np.argmax(self._means))
        expected = float(self._means[action])
        best = float(self._means[best_arm])
        reward = self._sample_reward(expected, self._noise_rng)
        info = {
            "expected_reward": expected,
            "best_expected_reward": best,
            "regret": max(best - expected, 0.0),
            "best_arm": best_arm,
        }
        self.t += 1
        truncated = self.t >= self.horizon
        if truncated:
            self._done = True
        else:
            self._next_round()
        return self._arms.copy(), float(reward), False, truncated, info

    def close(self) -> None:
        pass
