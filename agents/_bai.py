"""Shared plumbing of the fixed-confidence best-arm-identification agents (seed 004 Sec. 2).

Action encoding of ``LinBandit-BAI-v0``: with K arms, ``a in [0, K)`` pulls arm ``a`` and
``a in [K, 2K)`` stops and recommends arm ``a - K``. The observation is the same fixed
``(K, d)`` arm set every step.

What lives here, once: the fixed-arm-set check, the span coordinates (rank-deficient arm
sets are handled in an orthonormal basis of their span, where theta* is identifiable),
least squares from per-arm pull counts and reward sums (``A = sum_i T_i z_i z_i^T``,
``b = sum_i S_i z_i`` is exactly eq. 2's OLS, with O(1) work per pull), a pseudo-inverse
that reports non-estimable directions as infinitely uncertain, the confidence width, and
the feedback validation for actions up to 2K.

Confidence width (seed 004 eq. 3 and its constant c). The seed states, for a fixed
allocation, ``|x^T (theta* - theta_hat_n)| <= c ||x||_{A_n^-1} sqrt(log(K^2/delta))`` for all
n at once, with an unspecified c. As written this is a [GAP]: nothing pays for the union
over n. We use the exact Gaussian (and sub-Gaussian) tail instead: for an allocation that
does not depend on the rewards, ``y^T (theta_hat_n - theta*)`` is N(0, sigma^2 ||y||^2_{A_n^-1}),
so a union bound over the ``K - 1`` arms that could be wrongly preferred to x* and over the
``k``-th test (weights ``6 / (pi^2 k^2)``) gives the width ``beta_k ||y||_{A_n^-1}`` with

    beta_k = sigma * sqrt(2 log(pi^2 (K - 1) k^2 / (6 delta))),

which keeps the stopping rule of eq. 11 delta-correct (``P(recommend != x*) <= delta``).
In the seed's notation, ``c = beta_k / sqrt(log(K^2/delta))``, growing like
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
import numbers
from typing import Any

import numpy as np
import torch

from ._torch import tensor_bytes
from .base import TorchAgent
from .design._common import span_arms

__all__ = ["BAIAgent", "anytime_beta", "LeastSquares", "check_grid_next", "input_eps"]


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
    """OLS in span coordinates from pull counts ``T`` and reward sums ``S`` (seed 004 eq. 2).

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
        self._inv = torch.where(keep, 1.0 / torch.where(keep, evals, torch.ones_like(evals)), torch.zeros_like(evals))

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


class BAIAgent(TorchAgent):
    """Base of the BAI agents: fixed arm set, span coordinates, stop actions, validation.

    Subclasses implement :meth:`_start` (once the arm set is known), :meth:`_choose` (next
    arm to pull) and :meth:`_learn` (after a pull; ``self.counts``/``self.sums`` are already
    updated) and call :meth:`_recommend` when their stopping rule fires; ``act`` then returns
    ``K + arm``.

    Args:
        delta: confidence, in (0, 1): the recommendation is wrong with probability <= delta.
        noise_std: sub-Gaussian scale sigma of the reward noise (the env's ``noise_std``).
        c: None (default) for the delta-correct anytime width (see module docstring), or a
            float to use seed 004 eq. 3 literally, ``c sqrt(log(K^2/delta))``.
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.
    """

    def __init__(
        self,
        *,
        delta: float = 0.05,
        noise_std: float = 1.0,
        c: float | None = None,
        d: int | None = None,
        device=None,
        dtype=None,
        seed: int | None = None,
    ):
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not (0.0 < delta < 1.0):
            raise ValueError(f"delta (confidence) must lie in (0, 1), e.g. 0.05; got {delta!r}")
        if isinstance(noise_std, bool) or not isinstance(noise_std, numbers.Real) or not (0.0 < noise_std < math.inf):
            raise ValueError(f"noise_std must be a finite number > 0 (the env's noise_std), got {noise_std!r}")
        if c is not None and (isinstance(c, bool) or not isinstance(c, numbers.Real) or not (0.0 < c < math.inf)):
            raise ValueError(f"c must be None (delta-correct anytime width) or a finite number > 0, got {c!r}")
        self.delta = float(delta)
        self.noise_std = float(noise_std)
        self.c = None if c is None else float(c)
        self._repr_params = {"delta": self.delta, "noise_std": self.noise_std}
        # Designs depend on the arms only (never on rewards), so they are cached across
        # reset() calls: replaying seeds on one instance solves each design once.
        self._design_cache: dict = {}
        self._cache_arms = b""
        super().__init__(d=d, device=device, dtype=dtype, seed=seed)

    # -- state ---------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        self.arms: torch.Tensor | None = None
        self.z: torch.Tensor | None = None
        self.basis: torch.Tensor | None = None
        self.rank = 0
        self.n_arms = 0
        self.recommendation: int | None = None
        self.stopped = False
        self.n_pulls = 0
        self.counts: np.ndarray | None = None  # pulls per arm (all pulls of the episode)
        self.sums: np.ndarray | None = None  # reward sums per arm
        self._obs_np: np.ndarray | None = None
        self._obs_bytes = b""
        super().reset(seed=seed)

    def _observe(self, obs: Any) -> None:
        # Fast path: the env hands back an equal copy of the same arm set every step.
        if self._obs_np is not None and isinstance(obs, np.ndarray):
            if obs.shape == self._obs_np.shape and obs.dtype == self._obs_np.dtype and obs.tobytes() == self._obs_bytes:
                return
        arms = self._arms(obs)  # full validation (shape, NaN, dimension)
        if self.arms is None:
            self.arms = arms.clone()
            self.n_arms = int(arms.shape[0])
            self.counts = np.zeros(self.n_arms, dtype=np.int64)
            self.sums = np.zeros(self.n_arms, dtype=np.float64)
            if isinstance(obs, np.ndarray):
                self._obs_np = obs.copy()
                self._obs_bytes = self._obs_np.tobytes()
            if self.n_arms == 1 or bool((arms == arms[0]).all()):
                # One distinct arm (K = 1, or all copies): it is the best; recommend it now.
                self.recommendation = 0
                return
            sa = span_arms(arms, dtype=self.dtype, rank_eps=input_eps(obs))
            self.z, self.basis, self.rank = sa.z, sa.basis, sa.rank
            self._start()
        elif arms.shape != self.arms.shape or not torch.equal(arms, self.arms):
            raise ValueError(
                f"the arm set changed (shape {tuple(arms.shape)} vs {tuple(self.arms.shape)}, or new values): "
                f"{type(self).__name__} identifies the best arm of one fixed arm set; call reset() before a new one"
            )

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
        """Width multiplier at the ``k``-th test: ``beta_k`` (or eq. 3's ``c sqrt(log(K^2/delta))``)."""
        if self.c is not None:
            return self.c * math.sqrt(math.log(self.n_arms**2 / self.delta))
        return anytime_beta(self.noise_std, self.n_arms, self.delta, k)

    def act(self, obs: Any) -> int:
        self._observe(obs)
        if self.recommendation is not None:
            return self.n_arms + self.recommendation
        return int(self._choose())

    def update(self, obs: Any, action: Any, reward: Any) -> None:
        self._observe(obs)
        action, reward = self._check_feedback(2 * self.n_arms, action, reward)
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

    def stopping_arm(self, ls: LeastSquares, beta: float, candidates: torch.Tensor | None = None) -> int | None:
        """Seed 004 eq. 11: the arm ``x`` with ``beta ||x - x'||_{A^-1} <= (x - x')^T theta_hat`` for all x'.

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
        arrays = sum(a.nbytes for a in (self.counts, self.sums, self._obs_np) if a is not None)
        return tensor_bytes(self.arms, self.z, self.basis) + int(arrays)
