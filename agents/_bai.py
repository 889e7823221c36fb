"""Shared plumbing of the fixed-confidence best-arm-identification agents (Jamieson, 2018, Sec. 2).

Action encoding of ``LinBandit-BAI-v0``: with K arms, ``a in [0, K)`` pulls arm ``a`` and
``a in [K, 2K)`` stops and recommends arm ``a - K``. The observation is the same fixed
``(K, d)`` arm set every step.

What lives here, once: the fixed-arm-set check (validate a whole call, then remember the
first arm set), the span coordinates (rank-deficient arm sets are handled in their span,
where theta* is identifiable), least squares from per-arm pull counts and reward sums
(``A = sum_i T_i z_i z_i^T``, ``b = sum_i S_i z_i`` is exactly eq. 2's OLS, with O(1) work
per pull), a pseudo-inverse that reports non-estimable directions as infinitely uncertain,
the confidence width, and the feedback validation for actions up to 2K.

Badly scaled arm sets (norms spanning 1e-6..1e6, say). The span coordinates are *whitened*,
``z_i = S_r^-1 V_r^T x_i`` (:func:`agents.design._common.span_arms`). This is not a rescaling
of the problem: a common scale of the arms would change the gaps relative to the noise (it
is a rescaling of theta*), but an invertible linear change of coordinates changes nothing
the agents compute -- rewards, noise, OLS predictions, every width ``||x - x'||_{A^-1}``, the
stopping rules and hence the sample complexity are the same as for the raw arms. It only
fixes the numerics: in raw or orthonormal coordinates ``A`` had condition numbers ~1e24,
its pseudo-inverse dropped the small directions, every width became ``inf`` and no agent
ever stopped (XY-adaptive even searched for an ever longer phase). In whitened coordinates
a G-optimal allocation has ``cond(A) <= K r (1 + eps)`` whatever the arms' scale, so such
arm sets need no minimum gap and are not refused. What stays hard is statistical: a gap
far below ``noise_std`` (e.g. two nearly identical tiny arms) needs ~``sigma^2 / gap^2``
pulls, and the episode runs until the env truncates it, every ``act``/``update`` still
taking bounded time (designs have iteration budgets, XY-adaptive's phase-length search is
bracketed by the apportionment bound and capped at ``MAX_PHASE_PULLS``). Directions below
the rank tolerance ``max(K, d) eps s_1`` are treated as outside the span.

Confidence width (Jamieson, 2018, eq. 3 and its constant c). The notes state, for a fixed
allocation, ``|x^T (theta* - theta_hat_n)| <= c ||x||_{A_n^-1} sqrt(log(K^2/delta))`` for all
n at once, with an unspecified c. As written this is a [GAP]: nothing pays for the union
over n. We use the exact Gaussian (and sub-Gaussian) tail instead: for an allocation that
does not depend on the rewards, ``y^T (theta_hat_n - theta*)`` is N(0, sigma^2 ||y||^2_{A_n^-1}),
so a union bound over the ``K - 1`` arms that could be wrongly preferred to x* and over the
``k``-th test (weights ``6 / (pi^2 k^2)``) gives the width ``beta_k ||y||_{A_n^-1}`` with

    beta_k = sigma * sqrt(2 log(pi^2 (K - 1) k^2 / (6 delta))),

which keeps the stopping rule of eq. 11 delta-correct (``P(recommend != x*) <= delta``).
In the notes' notation, ``c = beta_k / sqrt(log(K^2/delta))``, growing like
``sigma sqrt(2 log k)``. Passing a float ``c`` uses eq. 3 literally (width
``c sqrt(log(K^2/delta))``, constant): faster, but with no guarantee unless c is large enough.

Test times. The static agents test eq. 11 on a fixed grid of pull counts
``n_1 = 1, n_{k+1} = max(n_k + 1, ceil((1 + check_growth) n_k))`` rather than after every
pull: the grid is known in advance, so the union bound runs over tests ``k`` (about
``log(n) / check_growth`` of them) instead of over every ``n``. This is both cheaper and
tighter (smaller beta), at the price of stopping up to a factor ``1 + check_growth`` late.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np
import torch

from ._torch import DeviceLike, DTypeLike, tensor_bytes
from ._validate import Interval, check_seed
from .base import TorchAgent
from .design._common import span_arms

__all__ = [
    "BAIAgent",
    "FixedArmSetAgent",
    "anytime_beta",
    "LeastSquares",
    "check_grid_next",
    "input_eps",
]


def input_eps(obs: Any) -> float:
    """Machine epsilon of the dtype the caller used (float32 env arms are only float32-exact)."""
    dt = getattr(obs, "dtype", None)
    if dt in (torch.float32, torch.float16, torch.bfloat16, np.float32, np.float16):
        return float(np.finfo(np.float32).eps)
    return float(np.finfo(np.float64).eps)


def anytime_beta(sigma: float, n_arms: int, delta: float, k: int) -> float:
    """``sigma sqrt(2 log(pi^2 (K-1) k^2 / (6 delta)))``: the delta-correct width multiplier."""
    k1 = max(n_arms - 1, 1)
    return sigma * math.sqrt(2.0 * math.log(math.pi**2 * k1 * max(k, 1) ** 2 / (6.0 * delta)))


def check_grid_next(n: int, growth: float) -> int:
    """Next test time after ``n`` on the geometric grid."""
    return max(n + 1, int(math.ceil((1.0 + growth) * n)))


class LeastSquares:
    """OLS in span coordinates from pull counts ``T`` and reward sums ``S`` (Jamieson, 2018, eq. 2).

    ``A = Z^T diag(T) Z``, ``b = Z^T S``, ``theta_hat = A^+ b``. :meth:`quad` returns
    ``||y||^2_{A^+}`` for the rows of Y, and ``inf`` for rows outside the range of A (a
    difference that the pulls so far cannot estimate).
    """

    def __init__(self, z: torch.Tensor, counts: np.ndarray, sums: np.ndarray):
        t = torch.as_tensor(counts, dtype=z.dtype, device=z.device)
        s = torch.as_tensor(sums, dtype=z.dtype, device=z.device)
        self.a = (z * t[:, None]).T @ z
        self.b = z.T @ s
        self.n = int(np.sum(counts))
        evals, evecs = torch.linalg.eigh(0.5 * (self.a + self.a.T))
        top = float(evals.max()) if evals.numel() else 0.0
        keep = evals > max(top, 1e-300) * evals.numel() * 1e-10
        self._evecs, self._keep = evecs, keep
        self._inv = torch.where(
            keep, 1.0 / torch.where(keep, evals, torch.ones_like(evals)), torch.zeros_like(evals)
        )

    def full_rank(self) -> bool:
        return bool(self._keep.all())

    def theta(self) -> torch.Tensor:
        return self._evecs @ (self._inv * (self._evecs.T @ self.b))

    def quad(self, y: torch.Tensor) -> torch.Tensor:
        c = y @ self._evecs
        q = ((c * c) * self._inv).sum(dim=1)
        if not self.full_rank():
            scale = torch.sqrt((y * y).sum(dim=1)).clamp(min=1e-300)
            outside = c[:, ~self._keep].abs().max(dim=1).values > 1e-8 * scale
            q = torch.where(outside, torch.full_like(q, math.inf), q)
        return q


class FixedArmSetAgent(TorchAgent):
    """Base of the agents that plan on ONE arm set, seen again every round (BAI, phased
    elimination).

    :meth:`_check_arm_set` validates an observation without changing any state; the first
    arm set is remembered by :meth:`_first_arm_set` (which calls the subclass hook
    :meth:`_start_arm_set`) only once the whole call has been validated, so a rejected first
    ``update`` leaves the agent as it was (no ``d`` fixed, nothing remembered).
    """

    #: what the user should do about a changed arm set (the error message's second half)
    _changed_arm_set_fix = "plans on one fixed arm set; call reset() before a new one"

    def reset(self, seed: int | None = None) -> None:
        check_seed(seed)  # before clearing anything: a refused seed changes nothing
        self.arms: torch.Tensor | None = None
        self.n_arms = 0
        self._obs_np: np.ndarray | None = None
        self._obs_bytes = b""
        super().reset(seed=seed)

    def _check_arm_set(self, obs: Any) -> torch.Tensor | None:
        """``None`` if ``obs`` is the known arm set, its checked tensor if it is the first one.

        Raises ``ValueError`` (state unchanged) for a malformed observation or a changed arm set.
        """
        # Fast path: the env hands back an equal copy of the same arm set every step.
        if self._obs_np is not None and isinstance(obs, np.ndarray):
            if (
                obs.shape == self._obs_np.shape
                and obs.dtype == self._obs_np.dtype
                and obs.tobytes() == self._obs_bytes
            ):
                return None
        arms = self._validated_arms(obs)  # full validation (shape, NaN, complex, dimension)
        if self.arms is None:
            return arms
        if arms.shape != self.arms.shape or not torch.equal(arms, self.arms):
            raise ValueError(
                f"the arm set changed (shape {tuple(arms.shape)} vs {tuple(self.arms.shape)}, "
                f"or new values): {type(self).__name__} {self._changed_arm_set_fix}"
            )
        return None

    def _first_arm_set(self, obs: Any, arms: torch.Tensor) -> None:
        """Remember the (validated) first arm set and start planning on it."""
        if self.d is None:
            self._allocate(int(arms.shape[1]))
        self.arms = arms.clone()
        self.n_arms = int(arms.shape[0])
        if isinstance(obs, np.ndarray):
            self._obs_np = obs.copy()
            self._obs_bytes = self._obs_np.tobytes()
        self._start_arm_set(obs)

    def _observe(self, obs: Any) -> None:
        """Check ``obs`` and, if it is the first arm set, remember it (for ``act``)."""
        arms = self._check_arm_set(obs)
        if arms is not None:
            self._first_arm_set(obs, arms)

    def _checked_round(
        self, obs: Any, action: Any, reward: Any, *, stop_actions: bool
    ) -> tuple[int, float]:
        """Validate a whole ``update`` call (arm set, action, reward), then remember a first arm
        set."""
        arms = self._check_arm_set(obs)
        n_arms = self.n_arms if arms is None else int(arms.shape[0])
        action, reward = self._check_feedback(n_arms, action, reward, stop_actions=stop_actions)
        if arms is not None:
            self._first_arm_set(obs, arms)
        return action, reward

    def _start_arm_set(self, obs: Any) -> None:
        """Subclass hook: plan on ``self.arms`` (just remembered; ``obs`` as the caller gave it)."""
        raise NotImplementedError

    def memory_bytes(self) -> int:
        return tensor_bytes(self.arms) + (0 if self._obs_np is None else int(self._obs_np.nbytes))


class BAIAgent(FixedArmSetAgent):
    """Base of the BAI agents: fixed arm set, span coordinates, stop actions, validation.

    Subclasses implement :meth:`_start` (once the arm set is known), :meth:`_choose` (next
    arm to pull) and :meth:`_learn` (after a pull; ``self.counts``/``self.sums`` are already
    updated) and call :meth:`_recommend` when their stopping rule fires; ``act`` then returns
    ``K + arm``.

    Args:
        delta: confidence, in (0, 1): the recommendation is wrong with probability <= delta.
        noise_std: sub-Gaussian scale sigma of the reward noise (the env's ``noise_std``).
        c: None (default) for the delta-correct anytime width (see module docstring), or a
            float to use Jamieson (2018), eq. 3 literally, ``c sqrt(log(K^2/delta))``.
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.
    """

    _changed_arm_set_fix = (
        "identifies the best arm of one fixed arm set; call reset() before a new one"
    )
    parameter_constraints = {
        "noise_std": [Interval(Real, 0, None, closed="neither", hint="the env's noise_std")],
        "c": [
            Interval(Real, 0, None, closed="neither", hint="None: the delta-correct anytime width"),
            None,
        ],
    }
    repr_args = ("delta", "noise_std")

    def __init__(
        self,
        *,
        delta: float = 0.05,
        noise_std: float = 1.0,
        c: float | None = None,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
    ):
        self.delta, self.noise_std, self.c = delta, noise_std, c
        # Designs depend on the arms only (never on rewards), so they are cached across
        # reset() calls: replaying seeds on one instance solves each design once.
        self._design_cache: dict = {}
        self._cache_arms = b""
        super().__init__(d=d, device=device, dtype=dtype, seed=seed)

    # -- state ---------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        check_seed(seed)  # before clearing anything: a refused seed changes nothing
        self.z: torch.Tensor | None = None
        self.basis: torch.Tensor | None = None
        self.rank = 0
        self.recommendation: int | None = None
        self.stopped = False
        self.n_pulls = 0
        self.counts: np.ndarray | None = None  # pulls per arm (all pulls of the episode)
        self.sums: np.ndarray | None = None  # reward sums per arm
        super().reset(seed=seed)

    def _start_arm_set(self, obs: Any) -> None:
        arms = self.arms
        self.counts = np.zeros(self.n_arms, dtype=np.int64)
        self.sums = np.zeros(self.n_arms, dtype=np.float64)
        if self.n_arms == 1 or bool((arms == arms[0]).all()):
            # One distinct arm (K = 1, or all copies): it is the best; recommend it now.
            self.recommendation = 0
            return
        # whitened span coordinates: the problem is invariant, the conditioning is not (see
        # agents.design._common), so badly scaled arm sets stop like well-scaled ones
        sa = span_arms(arms, dtype=self.dtype, rank_eps=input_eps(obs))
        self.z, self.basis, self.rank = sa.z, sa.basis, sa.rank
        self._start()

    # -- subclass hooks ------------------------------------------------------------
    def _start(self) -> None:
        raise NotImplementedError

    def _choose(self) -> int:
        raise NotImplementedError

    def _learn(self, arm: int, reward: float) -> None:
        raise NotImplementedError

    def _cached(self, key, compute):
        """``compute()`` once per (arm set, key); dropped when the arm set changes."""
        arms_key = self.arms.detach().cpu().numpy().tobytes()
        if arms_key != self._cache_arms:
            self._design_cache, self._cache_arms = {}, arms_key
        if key not in self._design_cache:
            self._design_cache[key] = compute()
        return self._design_cache[key]

    def _recommend(self, arm: int) -> None:
        self.recommendation = int(arm)

    # -- the loop ------------------------------------------------------------------
    def beta(self, k: int) -> float:
        """Width multiplier at the ``k``-th test: ``beta_k`` (or eq. 3's
        ``c sqrt(log(K^2/delta))``)."""
        if self.c is not None:
            return self.c * math.sqrt(math.log(self.n_arms**2 / self.delta))
        return anytime_beta(self.noise_std, self.n_arms, self.delta, k)

    def act(self, obs: Any) -> int:
        self._observe(obs)
        if self.recommendation is not None:
            return self.n_arms + self.recommendation
        return int(self._choose())

    def update(self, obs: Any, action: Any, reward: Any) -> None:
        action, reward = self._checked_round(obs, action, reward, stop_actions=True)
        if action >= self.n_arms:
            self.stopped = True  # the episode is over; nothing to learn from a stop
            if self.recommendation is None:
                self.recommendation = action - self.n_arms
            return
        self.n_pulls += 1
        self.t += 1
        self.counts[action] += 1
        self.sums[action] += reward
        if self.z is not None and self.recommendation is None:
            self._learn(action, reward)

    def stopping_arm(
        self, ls: LeastSquares, beta: float, candidates: torch.Tensor | None = None
    ) -> int | None:
        """Jamieson (2018), eq. 11: the arm ``x`` with
        ``beta ||x - x'||_{A^-1} <= (x - x')^T theta_hat`` for all x'.

        Only ``x = argmax theta_hat^T x`` can satisfy it (all gaps must be >= 0), so one
        batched check over the arms (or ``candidates``) suffices. Returns the arm or None.
        """
        idx = candidates
        z = self.z if idx is None else self.z[idx]
        scores = z @ ls.theta()
        best = int(torch.argmax(scores))
        width2 = ls.quad(z[best] - z)
        gaps = scores[best] - scores
        ok = (gaps >= 0) & (beta * beta * width2 <= gaps * gaps)
        ok[best] = True
        if bool(ok.all()):
            return best if idx is None else int(idx[best])
        return None

    def memory_bytes(self) -> int:
        arrays = sum(a.nbytes for a in (self.counts, self.sums) if a is not None)
        return super().memory_bytes() + tensor_bytes(self.z, self.basis) + int(arrays)
