"""Phased elimination with G-optimal exploration (Lattimore & Szepesvari, *Bandit Algorithms*,
ch. 22).

Regret minimisation on a FIXED finite arm set (Alg. 12 of the book, "phased elimination
with G-optimal exploration"). In phase l = 1, 2, ... with active arms ``A_l``:

1. ``pi_l`` = a G-optimal design on ``A_l`` (:func:`agents.design.solve_g_design`, in the
   span of ``A_l``), with achieved value ``g_l = max_{a in A_l} ||a||^2_{V(pi_l)^-1}``
   (``<= (1 + design_eps) r_l``; the book asks for ``<= 2d``);
2. ``eps_l = 2^-l`` and ``T_l(a) = ceil(2 sigma^2 g_l pi_l(a) log(K l (l + 1) / delta) / eps_l^2)``;
3. play every arm ``a`` of the support exactly ``T_l(a)`` times (interleaved);
4. ``theta_hat_l`` = OLS on the phase's samples only, ``V_l = sum_a T_l(a) a a^T``;
5. eliminate ``a`` if ``max_{b in A_l} <theta_hat_l, b - a> > 2 eps_l``.

Why it works: ``V_l >= (2 sigma^2 g_l L_l / eps_l^2) V(pi_l)``, so ``||b||^2_{V_l^-1} <=
eps_l^2 / (2 sigma^2 L_l)`` and ``|<theta_hat_l - theta*, b>| <= eps_l`` for every active b
with probability >= 1 - 2 K e^{-L_l}, summing to <= 2 delta over phases. On that event
the best arm is never eliminated and every arm surviving phase l has gap <= 4 eps_l,
giving regret O(sqrt(d n log(K n / delta))) (the book's Thm 22.1 with delta = 1/n).
The book uses ``d`` where we use the achieved ``g_l`` (exact, and smaller when the active
arms span fewer than d dimensions) and sub-Gaussian scale 1 where we use ``noise_std``.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np
import torch

from ._bai import FixedArmSetAgent, input_eps
from ._torch import DeviceLike, DTypeLike, tensor_bytes
from ._validate import Interval, check_seed
from .design import solve_g_design
from .design._common import span_arms

__all__ = ["PhasedElimination"]


class PhasedElimination(FixedArmSetAgent):
    """Phased elimination with G-optimal exploration, for a fixed finite arm set.

    ``act`` returns an arm index in ``[0, K)``. Play it on an env whose arm set does not
    change between rounds, e.g. ``gym.make("LinBandit-Synthetic-v0", fixed_arms=True)``.

    **Changing arm sets are not supported**: the algorithm plans whole phases of pulls on
    one set. If ``act``/``update`` see a different arm set than the first one, they raise
    ``ValueError`` (before any state changes) naming the fix: use ``fixed_arms=True`` or an
    agent for changing arm sets (OFUL, SOFUL, ...), or call ``reset()`` for a new problem.

    Args:
        delta: confidence of the elimination (default 0.01; the book's regret bound takes
            ``delta = 1/n`` for horizon n).
        noise_std: sub-Gaussian scale sigma of the reward noise (the env's ``noise_std``).
        design_eps: accuracy of the phase designs (default 0.1; the book allows ``g <= 2d``).
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    Attributes: ``phase`` (current l), ``active`` (surviving arm indices), ``phase_lengths``.

    Example:

    >>> import gymnasium as gym, linbandit_gym
    >>> env = gym.make("LinBandit-Synthetic-v0", d=3, n_arms=8, fixed_arms=True, horizon=3000)
    >>> agent = PhasedElimination(noise_std=0.1)
    >>> obs, _ = env.reset(seed=0); agent.reset(seed=0)
    >>> for _ in range(3000):
    ...     a = agent.act(obs)
    ...     obs2, r, term, trunc, info = env.step(a); agent.update(obs, a, r); obs = obs2
    >>> agent.active.tolist() == [info["best_arm"]]
    True
    """

    name = "PhasedElimination"
    _changed_arm_set_fix = (
        "plans phases of pulls on ONE fixed arm set (Lattimore & Szepesvari ch. 22). Use an env "
        "with a fixed arm set (e.g. LinBandit-Synthetic-v0 with fixed_arms=True), an agent for "
        "changing arm sets (OFUL, SOFUL, ...), or call reset() to start on a new arm set"
    )

    parameter_constraints = {
        "noise_std": [Interval(Real, 0, None, closed="neither", hint="the env's noise_std")],
        "design_eps": [
            Interval(Real, 0, None, closed="neither", hint="accuracy of the phase designs")
        ],
    }
    repr_args = ("delta", "noise_std")

    def __init__(
        self,
        *,
        delta: float = 0.01,
        noise_std: float = 1.0,
        design_eps: float = 0.1,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
    ):
        self.delta, self.noise_std, self.design_eps = delta, noise_std, design_eps
        super().__init__(d=d, device=device, dtype=dtype, seed=seed)

    # -- state ---------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        check_seed(seed)  # before clearing anything: a refused seed changes nothing
        self.z: torch.Tensor | None = None
        self.phase = 0
        self.active: np.ndarray | None = None
        self.phase_lengths: list[int] = []
        self._plan: np.ndarray | None = None
        self._done: np.ndarray | None = None
        self._sums: np.ndarray | None = None
        self._plen = self._pdone = 0
        self._commit: int | None = None  # the arm played once one distinct arm is left
        self._rank_eps: float | None = None
        super().reset(seed=seed)

    def _start_arm_set(self, obs: Any) -> None:
        self._rank_eps = input_eps(obs)
        self.active = np.arange(self.n_arms)
        if bool((self.arms == self.arms[0]).all()):
            self._commit = 0  # one distinct arm (or all zero: nothing to span)
            return
        # Designs and least squares in whitened span coordinates: the same problem (every
        # ||x||_{V^-1} and x^T theta_hat is invariant), conditioned independently of the arms'
        # scale (see agents.design._common); raw arms with norms 1e-6..1e6 made the designs
        # "singular" and the pseudo-inverse drop directions
        self.z = span_arms(self.arms, dtype=self.dtype, rank_eps=self._rank_eps).z
        self._begin_phase()

    # -- phases --------------------------------------------------------------------
    def _begin_phase(self) -> None:
        act_z = self.z[torch.as_tensor(self.active, device=self.device)]
        if self.active.size == 1 or bool((act_z == act_z[0]).all()):
            self._commit = int(self.active[0])
            return
        self.phase += 1
        res = solve_g_design(act_z, self.design_eps, rank_eps=self._rank_eps)
        pi = res.weights.detach().cpu().numpy().astype(np.float64)
        eps_l = 2.0 ** (-self.phase)
        log_term = math.log(self.n_arms * self.phase * (self.phase + 1) / self.delta)
        scale = 2.0 * self.noise_std**2 * res.value * log_term / eps_l**2
        plan = np.zeros(self.n_arms, dtype=np.int64)
        plan[self.active] = np.where(pi > 0, np.ceil(scale * pi), 0).astype(np.int64)
        self._plan, self._plen = plan, int(plan.sum())
        self._done = np.zeros(self.n_arms, dtype=np.int64)
        self._sums = np.zeros(self.n_arms, dtype=np.float64)
        self._pdone = 0
        self._eps = eps_l
        self.phase_lengths.append(self._plen)

    def _end_phase(self) -> None:
        idx = torch.as_tensor(self.active, device=self.device)
        x = self.z[idx]  # (m, r): whitened span coordinates
        t = torch.as_tensor(self._done[self.active], dtype=self.dtype, device=self.device)
        s = torch.as_tensor(self._sums[self.active], dtype=self.dtype, device=self.device)
        v = (x * t[:, None]).T @ x
        b = x.T @ s
        # OLS of the phase (V_l^+ b: the design spans span(A_l), so V_l is invertible there)
        theta = torch.linalg.pinv(v, hermitian=True) @ b
        est = x @ theta
        # eliminate a if max_b <theta_hat, b - a> > 2 eps_l
        keep = (est.max() - est) <= 2.0 * self._eps
        self.active = self.active[keep.cpu().numpy()]
        self._begin_phase()

    # -- agent API -----------------------------------------------------------------
    def act(self, obs: Any) -> int:
        self._observe(obs)
        if self._commit is not None:
            return self._commit
        deficit = self._plan * ((self._pdone + 1) / self._plen) - self._done
        return int(np.argmax(np.where(self._done < self._plan, deficit, -np.inf)))

    def update(self, obs: Any, action: Any, reward: Any) -> None:
        action, reward = self._checked_round(obs, action, reward, stop_actions=False)
        self.t += 1
        if self._commit is not None:
            return
        self._done[action] += 1
        self._sums[action] += reward
        self._pdone += 1
        if self._pdone >= self._plen:
            self._end_phase()

    def memory_bytes(self) -> int:
        arrays = sum(
            a.nbytes for a in (self.active, self._plan, self._done, self._sums) if a is not None
        )
        return super().memory_bytes() + tensor_bytes(self.z) + int(arrays)
