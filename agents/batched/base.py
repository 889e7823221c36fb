"""The batched optimistic loop: B independent LinUCB states advanced as one tensor program.

:class:`BatchedLinUCB` is :class:`agents.linucb.LinUCB` with a leading batch dimension: member
``i`` holds its own ``A_hat_i``, ``b_i`` and ``theta_hat_i``, plays

    a_i = argmax_k  x_{i,k}^T theta_hat_i + beta_i * ||x_{i,k}||_{A_hat_i^-1}      (seed 000, eq. 2)

and learns from its own feedback, exactly as B separate agents would; the tests check that
the choices coincide with B unbatched agents on the same data. Scoring is one batched matmul
over (B, K, d); each agent file supplies a *batched covariance estimator* (see
:class:`BatchedEstimator`) whose methods take a leading batch dimension.

Parameters are validated by building one unbatched agent of :attr:`BatchedLinUCB.single_class`
with the same keywords (so the messages and the semantics are the unbatched ones).
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch

from .._torch import _all_finite, as_float_tensor, tensor_bytes

__all__ = ["BatchedEstimator", "BatchedLinUCB", "as_arm_batch"]


def as_arm_batch(obs: Any, device: torch.device, dtype: torch.dtype, batch_size: int, d: int | None) -> torch.Tensor:
    """A ``(B, K, d)`` finite tensor on the device, or a ``ValueError`` saying what was wrong."""
    arms = as_float_tensor(obs, device, dtype, "(B, K, d) batch of arm sets")
    if arms.ndim != 3 or arms.shape[0] != batch_size or arms.shape[1] < 1 or arms.shape[2] < 1:
        raise ValueError(
            f"the observation must be a (B={batch_size}, K, d) batch of arm sets (one per member), "
            f"got shape {tuple(arms.shape)}"
        )
    if d is not None and arms.shape[2] != d:
        raise ValueError(
            f"arm dimension changed: the agent was built for d={d} but got arms of shape {tuple(arms.shape)}; "
            "call agent.reset() before playing an env of another dimension"
        )
    if not _all_finite(arms):
        raise ValueError("the arm sets contain NaN or infinite entries")
    return arms


class BatchedEstimator(ABC):
    """B independent ridge regressions ``A_hat_i^-1 b_i`` with a batch dimension.

    The batched twin of :class:`agents.sketches.base.CovarianceEstimator` plus the right-hand
    side ``b_i = sum_s r_s x_s`` (still pure linear algebra, no bandit logic): ``update`` takes
    one row and one response per member, ``quad_inv`` a ``(B, K, d)`` stack of arm sets,
    ``solve`` a ``(B, d)`` stack of vectors.

    Why ``b`` lives here: the batched loop never forms ``theta_hat`` during play. Scoring
    needs ``x^T A_hat^-1 b`` and ``x^T A_hat^-1 x``; the estimators compute both from ONE
    projection of the arms (``arms @ A_inv`` or ``arms @ S^T``) and keep what else they need
    (e.g. ``S b``) up to date in O(rows) per round. The projection of the played arm is reused
    by the next ``update`` (``actions=``), so a round reads the big state once for scoring and
    once for the rank-1 change, instead of four times (scoring, ``S x``, ``theta = A^-1 b``).
    Rounding differs from the unbatched order of operations at the 1e-16 level only.
    """

    def __init__(self, batch_size: int, d: int, *, reg: float, device: torch.device, dtype: torch.dtype):
        self.batch_size = int(batch_size)
        self.d = int(d)
        self.reg = float(reg)
        self.device = device
        self.dtype = dtype
        self.n_rows = 0
        self.b = torch.zeros(self.batch_size, self.d, device=device, dtype=dtype)

    @abstractmethod
    def update(self, X: torch.Tensor, r: torch.Tensor, actions: torch.Tensor | None = None) -> None:
        """Add row ``X[i]`` with response ``r[i]`` to member i (``b_i += r_i x_i``). ``actions``:
        ``X[i]`` is row ``actions[i]`` of the arms of the last :meth:`score_terms` and nothing
        changed since, so its cached projection may be reused; ``None``: no such promise."""

    def score_terms(self, arms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x^T A_hat_i^-1 b_i, x^T A_hat_i^-1 x)`` for every arm of every member, each ``(B, K)``."""
        theta = self.solve(self.b)
        return torch.bmm(arms, theta.unsqueeze(2)).squeeze(2), self.quad_inv(arms)

    def theta(self) -> torch.Tensor:
        """``A_hat_i^-1 b_i`` per member, ``(B, d)``."""
        return self.solve(self.b)

    @abstractmethod
    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        """``x^T A_hat_i^-1 x`` for every arm of every member: ``(B, K, d) -> (B, K)``."""

    @abstractmethod
    def solve(self, V: torch.Tensor) -> torch.Tensor:
        """``A_hat_i^-1 v_i`` for every member: ``(B, d) -> (B, d)``."""

    def logdet_increment(self, X: torch.Tensor, actions: torch.Tensor | None = None) -> torch.Tensor:
        """``log(1 + ||x_i||^2_{A_hat_i^-1})`` per member, shape ``(B,)`` (``actions``: as in update)."""
        return torch.log1p(self.quad_inv(X.unsqueeze(1))[:, 0])

    @abstractmethod
    def sketch_sizes(self) -> np.ndarray:
        """Per member, what the unbatched estimator's ``sketch_size`` reports now (int array ``(B,)``)."""

    @abstractmethod
    def member_memory_bytes(self) -> np.ndarray:
        """Per member, what the unbatched estimator's ``memory_bytes()`` reports now (int array ``(B,)``)."""

    @abstractmethod
    def memory_bytes(self) -> int:
        """Bytes the batched tensors actually hold (all members, padding included)."""


class BatchedLinUCB(ABC):
    """B independent optimistic agents over a batched covariance estimator.

    Args:
        batch_size: B, the number of independent members.
        **params: the keywords of the unbatched agent (:attr:`single_class`): ``lam``, ``beta``
            (a float or ``"theory"``), ``delta``, ``noise_std``, ``theta_bound``, ``d``, ``device``,
            ``dtype``, ``seed`` and the agent's own (``sketch_size``, ``l0``, ...).

    The loop: ``act(obs)`` with ``obs`` of shape ``(B, K, d)`` (numpy or torch) returns B arm
    indices (a numpy int64 array, or a torch long tensor on the agent's device when ``obs`` is
    a tensor); ``update(obs, actions, rewards)`` learns from the B rounds. ``reset(seed=...)``
    takes an int (member i gets ``seed + i``), a list of B seeds or None; our agents are
    deterministic, the seeds are kept for the record. Ties break towards the lowest index.
    """

    #: the unbatched agent class this one batches (set by each agent file)
    single_class: type
    #: whether beta="theory" accumulates log(1 + ||x||^2_{A^-1}) (OFUL); sketched agents read their sketch
    _accumulates_logdet = True

    @staticmethod
    def params_of(agent: Any) -> dict[str, Any]:
        """The agent-specific constructor keywords of an unbatched ``agent`` (beyond LinUCB's)."""
        return {}

    def __init__(self, batch_size: int, **params: Any):
        if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1 (the number of independent members B), got {batch_size!r}")
        d = params.get("d")
        if d is not None and (isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1):
            raise ValueError(f"d must be a positive int or None (read from the first observation), got {d!r}")
        # validates every other keyword with the unbatched messages (d left out: no eager allocation)
        template = self.single_class(**{k: v for k, v in params.items() if k != "d"})
        self.batch_size = int(batch_size)
        self.params = dict(params)
        self.template = template
        self.lam, self.beta, self.delta = template.lam, template.beta, template.delta
        self.noise_std, self.theta_bound = template.noise_std, template.theta_bound
        self.device, self.dtype = template.device, template.dtype
        self._d_init = None if d is None else int(d)
        self.name = getattr(template, "name", None)
        self.reset(seed=params.get("seed"))

    # -- what each agent file supplies ----------------------------------------------
    @abstractmethod
    def _make_estimator(self, d: int) -> BatchedEstimator:
        """The batched covariance estimator this agent plays with."""

    # -- state ------------------------------------------------------------------------
    def reset(self, seed: int | list[int | None] | None = None) -> None:
        """Forget everything; ``seed``: an int (member i gets ``seed + i``), a list of B seeds, or None."""
        B = self.batch_size
        if seed is None:
            seeds = [None] * B
        elif isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(B)]
        else:
            seeds = list(seed)
            if len(seeds) != B:
                raise ValueError(f"seed as a list must hold one seed per member (batch_size={B}), got {len(seeds)}")
        self.seeds = seeds
        self.t = 0
        self.d = None
        self.estimator: BatchedEstimator | None = None
        self._theta = None
        self._act_arms = None  # the arms last scored: update() may reuse their projections
        self.logdet_ratio = torch.zeros(B, device=self.device, dtype=torch.float64)
        if self._d_init is not None:
            self._allocate(self._d_init)

    def _allocate(self, d: int) -> None:
        self.d = d
        self.estimator = self._make_estimator(d)

    @property
    def b(self) -> torch.Tensor | None:
        """``sum_s r_s x_s`` per member, ``(B, d)``."""
        return None if self.estimator is None else self.estimator.b

    @property
    def theta_hat(self) -> torch.Tensor | None:
        """``A_hat_i^-1 b_i`` per member, ``(B, d)``: computed on demand (play never needs it)."""
        if self.estimator is None:
            return None
        if self._theta is None:
            self._theta = self.estimator.theta()
        return self._theta

    def _arms(self, obs: Any) -> torch.Tensor:
        arms = as_arm_batch(obs, self.device, self.dtype, self.batch_size, self.d)
        if self.d is None:
            self._allocate(int(arms.shape[2]))
        return arms

    # -- the loop ---------------------------------------------------------------------
    def confidence_radius(self) -> torch.Tensor | float:
        """beta_t of every member: a float, or a ``(B,)`` tensor for ``beta="theory"``."""
        if self.beta != "theory":
            return self.beta
        radius = self.noise_std * torch.sqrt(2.0 * math.log(1.0 / self.delta) + self.logdet_ratio)
        return (radius + math.sqrt(self.lam) * self.theta_bound).to(self.dtype)

    def scores(self, obs: Any) -> torch.Tensor:
        """Upper confidence bounds of all arms of all members, one batched op: ``(B, K)``."""
        arms = self._arms(obs)
        mean, quad = self.estimator.score_terms(arms)
        self._act_arms = arms
        width = torch.sqrt(torch.clamp(quad, min=0.0))
        radius = self.confidence_radius()
        if isinstance(radius, torch.Tensor):
            radius = radius.unsqueeze(1)
        return mean + radius * width

    def act(self, obs: Any):
        actions = torch.argmax(self.scores(obs), dim=1)
        return actions if isinstance(obs, torch.Tensor) else actions.cpu().numpy()

    def _feedback(self, n_arms: int, actions: Any, rewards: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Validate the B rounds' feedback before any state changes."""
        B = self.batch_size
        a = actions.detach().cpu().numpy() if isinstance(actions, torch.Tensor) else np.asarray(actions)
        if a.shape != (B,) or a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be {B} integer arm indices (shape ({B},)), got {a.dtype} array of shape {a.shape}")
        if (a < 0).any() or (a >= n_arms).any():
            raise ValueError(f"action {int(a[(a < 0) | (a >= n_arms)][0])} is out of range for arm sets of {n_arms} arms")
        r = rewards.detach().cpu().numpy() if isinstance(rewards, torch.Tensor) else rewards
        try:
            r = np.asarray(r, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"rewards must be {B} real numbers, got {rewards!r}") from exc
        if r.shape != (B,):
            raise ValueError(f"rewards must have shape ({B},) (one per member), got {r.shape}")
        if not np.isfinite(r).all():
            raise ValueError("rewards must be finite")
        return torch.as_tensor(a, device=self.device), torch.as_tensor(r, device=self.device).to(self.dtype)

    def update(self, obs: Any, actions: Any, rewards: Any) -> None:
        arms = self._arms(obs)
        idx, r = self._feedback(arms.shape[1], actions, rewards)
        X = arms[torch.arange(self.batch_size, device=self.device), idx]  # (B, d): each member's played arm
        scored = self._act_arms
        ar = torch.arange(self.batch_size, device=self.device)
        # the cached projections are valid for X if X is what was scored (B x d compare, not B x K x d)
        cached = idx if scored is not None and scored.shape == arms.shape and torch.equal(scored[ar, idx], X) else None
        if self.beta == "theory" and self._accumulates_logdet:
            self.logdet_ratio += self.estimator.logdet_increment(X, cached).to(torch.float64)
        self.estimator.update(X, r, cached)
        self._act_arms = self._theta = None
        self.t += 1

    # -- introspection ----------------------------------------------------------------
    @property
    def sketch_size(self) -> np.ndarray | None:
        """Per member, the unbatched agent's ``sketch_size`` (``None`` before the first observation)."""
        return None if self.estimator is None else self.estimator.sketch_sizes()

    def member_memory_bytes(self) -> np.ndarray:
        """Per member, what the unbatched agent's ``memory_bytes()`` would report now."""
        if self.estimator is None:
            return np.zeros(self.batch_size, dtype=np.int64)
        own = 2 * self.d * torch.empty(0, dtype=self.dtype).element_size()  # the unbatched b and theta_hat
        return self.estimator.member_memory_bytes() + own

    def memory_bytes(self) -> int:
        """Bytes the batched state actually holds (all members, padding included)."""
        if self.estimator is None:
            return 0
        return self.estimator.memory_bytes() + tensor_bytes(self.b, self._theta)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}(batch_size={self.batch_size}{', ' if inner else ''}{inner})"
