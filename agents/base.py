"""The agent contract and a conformance check any third-party agent can run.

Contract (DESIGN.md): any object with

    agent.reset(seed=None)             # forget everything
    a = agent.act(obs)                 # obs: (K, d) arm set -> int arm index
    agent.update(obs, a, reward)       # learn from the round

works in every loop, sweep and plot of the project. ``memory_bytes()`` is optional for
third-party agents and provided by every agent here. :class:`Agent` documents the
contract; :class:`TorchAgent` adds the device/dtype/seed plumbing our agents share.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from ._torch import as_arm_matrix, resolve_device, resolve_dtype

__all__ = ["Agent", "AgentProtocol", "TorchAgent", "check_agent"]


@runtime_checkable
class AgentProtocol(Protocol):
    """Structural type of an agent: what the evaluation loop calls."""

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, obs: Any) -> int: ...

    def update(self, obs: Any, action: int, reward: float) -> None: ...


class Agent:
    """Tiny base class for agents (subclassing it is optional: duck typing suffices).

    Subclasses implement :meth:`act` and :meth:`update`, and usually :meth:`reset`.

    Example, a uniformly random agent:

    >>> import numpy as np
    >>> class RandomAgent(Agent):
    ...     def reset(self, seed=None):
    ...         self.rng = np.random.default_rng(seed)
    ...     def act(self, obs):
    ...         return int(self.rng.integers(len(obs)))
    ...     def update(self, obs, action, reward):
    ...         pass
    >>> agent = RandomAgent(); agent.reset(seed=0)
    >>> 0 <= agent.act(np.zeros((5, 3))) < 5
    True
    """

    name: str | None = None

    def reset(self, seed: int | None = None) -> None:
        """Forget everything learned; ``seed`` fixes any internal randomness."""

    def act(self, obs: Any) -> int:
        """Return the index of the arm to play among the rows of ``obs`` (shape ``(K, d)``)."""
        raise NotImplementedError

    def update(self, obs: Any, action: int, reward: float) -> None:
        """Learn from the round: arm set ``obs``, chosen ``action`` and observed ``reward``."""
        raise NotImplementedError

    def memory_bytes(self) -> int:
        """Bytes of state held now (0 unless overridden)."""
        return 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class TorchAgent(Agent):
    """Base for our torch agents: device/dtype resolution, seeding, lazy dimension.

    Args:
        d: dimension of the arms; by default read from the first observation.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device``; a CUDA request on a
            machine without CUDA raises ``ValueError`` at construction.
        dtype: ``torch.float64`` (default on CPU) or ``torch.float32`` (default on GPU).
        seed: seed of the agent's own generator (used only by randomised agents);
            ``reset(seed=...)`` overrides it.
    """

    def __init__(self, *, d: int | None = None, device=None, dtype=None, seed: int | None = None):
        if d is not None and (not isinstance(d, numbers.Integral) or isinstance(d, bool) or d < 1):
            raise ValueError(f"d must be a positive int or None (read from the first observation), got {d!r}")
        if seed is not None and (not isinstance(seed, numbers.Integral) or seed < 0):
            raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.seed = seed
        self._d_init = None if d is None else int(d)
        self.reset(seed=seed)

    # -- state ---------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = seed
        self.rng = np.random.default_rng(self.seed)
        self.t = 0
        self.d = None
        if self._d_init is not None:
            self._allocate(self._d_init)

    def _allocate(self, d: int) -> None:
        """Create the state for dimension ``d`` (called once, lazily or eagerly)."""
        self.d = d

    # -- input handling ------------------------------------------------------------
    def _arms(self, obs: Any) -> torch.Tensor:
        arms = as_arm_matrix(obs, self.device, self.dtype, self.d)
        if self.d is None:
            self._allocate(int(arms.shape[1]))
        return arms

    @staticmethod
    def _check_feedback(n_arms: int, action: Any, reward: Any) -> tuple[int, float]:
        """Validate one round's feedback before any state changes."""
        if isinstance(action, (np.ndarray, torch.Tensor)) and action.ndim == 0:
            action = action.item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, numbers.Integral):
            raise ValueError(f"action must be an int arm index, got {action!r} ({type(action).__name__})")
        action = int(action)
        if not 0 <= action < n_arms:
            raise ValueError(f"action {action} is out of range for an arm set of {n_arms} arms")
        try:
            reward = float(reward)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"reward must be a real number, got {reward!r}") from exc
        if not math.isfinite(reward):
            raise ValueError(f"reward must be finite, got {reward!r}")
        return action, reward

    def memory_bytes(self) -> int:  # overridden by agents with state
        return 0

    def __repr__(self) -> str:
        params = getattr(self, "_repr_params", {})
        inner = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"{type(self).__name__}({inner})"


def check_agent(agent: Any, env: Any, n_steps: int = 20, seed: int = 0) -> None:
    """Check that ``agent`` satisfies the agent contract against ``env``.

    Runs ``n_steps`` rounds twice with the same seeds and checks that: the three methods
    exist; ``act`` returns a Python or numpy integer inside ``env.action_space``;
    ``update`` accepts the feedback; the same seed replays the same actions; and
    ``memory_bytes()``, if present, returns a non-negative int.

    Raises ``AssertionError`` listing what failed; returns ``None`` when all is well.

    Args:
        agent: the agent to check (any object).
        env: a Gymnasium env following the linbandit env contract (``gym.make(...)`` result).
        n_steps: rounds per replay.
        seed: seed passed to ``agent.reset`` and ``env.reset``.
    """
    problems: list[str] = []
    for method in ("reset", "act", "update"):
        if not callable(getattr(agent, method, None)):
            problems.append(f"agent has no callable {method}()")
    if problems:
        raise AssertionError("check_agent failed:\n  - " + "\n  - ".join(problems))

    def replay() -> list[int]:
        actions = []
        agent.reset(seed=seed)
        obs, _ = env.reset(seed=seed)
        for _ in range(n_steps):
            a = agent.act(obs)
            if isinstance(a, (bool, np.bool_)) or not isinstance(a, (numbers.Integral, np.integer)):
                raise AssertionError(f"check_agent failed: act() returned {a!r} ({type(a).__name__}), expected an int")
            if not env.action_space.contains(int(a)):
                raise AssertionError(f"check_agent failed: act() returned {a!r}, outside {env.action_space}")
            obs_next, reward, terminated, truncated, _ = env.step(int(a))
            agent.update(obs, int(a), float(reward))
            actions.append(int(a))
            obs = obs_next
            if terminated or truncated:
                break
        return actions

    first = replay()
    second = replay()
    if first != second:
        problems.append("the same seed gave different actions (reset(seed) must make the agent deterministic)")
    mem = getattr(agent, "memory_bytes", None)
    if callable(mem):
        value = mem()
        if not isinstance(value, (numbers.Integral, np.integer)) or value < 0:
            problems.append(f"memory_bytes() returned {value!r}, expected a non-negative int")
    if problems:
        raise AssertionError("check_agent failed:\n  - " + "\n  - ".join(problems))
