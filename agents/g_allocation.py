"""G-allocation for fixed-confidence best-arm identification (Jamieson, 2018, Sec. 2.3.1).

Soare, Lazaric & Munos (2014). A *static* strategy: the pulls depend on the arms only,
never on the rewards, and follow a G-optimal design (Jamieson, 2018, eq. 12-13), which minimises
``max_x ||x||_{A^-1}`` and hence the bound ``||x - x'||_{A^-1} <= 2 max_x ||x||_{A^-1}`` on
every width of the stopping rule. After each pull: OLS (eq. 2), then the stopping rule of
eq. 11 with the width of eq. 3; on stopping, recommend ``argmax_x theta_hat^T x`` by playing
the stop action ``K + arm``. Sample complexity O(d log(K/delta) / Delta_min^2) (eq. 15).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

from ._bai import BAIAgent, LeastSquares, check_grid_next
from ._torch import DeviceLike, DTypeLike, tensor_bytes
from ._validate import Interval, Options, check_seed
from .design import g_optimal_design, round_design, rounding_threshold, spanning_subset

__all__ = ["GAllocation"]

_ALLOCATIONS = ("tracking", "rounding", "greedy")


class GAllocation(BAIAgent):
    """G-allocation: pull along a G-optimal design, stop by Jamieson (2018), eq. 11.

    Allocation rules (``allocation=``):

    * ``"tracking"`` (default): pull the support arm furthest behind the design,
      ``argmax_i (n + 1) w_i - T_i(n)``, so ``|T_i(n) - n w_i| < l`` at all times;
    * ``"rounding"``: repeat blocks of ``B`` pulls given by the efficient apportionment of the
      design (:func:`agents.design.round_design`), ``B = rounding_threshold(l, 0.1)`` by
      default, so each completed block is within a factor 1.1 of the design; interleaved
      inside the block by the same tracking rule;
    * ``"greedy"``: the incremental rule of eq. 14,
      ``x_t = argmin_x max_x' x'^T (A + x x^T)^-1 x'``, after one pull of each of ``r``
      spanning arms (eq. 14 needs an invertible A); O(K^2 r) per pull.

    All three are static (reward-independent), which is what makes the fixed-design width
    of :mod:`agents._bai` valid at every n. Ties go to the lowest index.

    Args:
        delta: confidence in (0, 1) (default 0.05).
        noise_std: sub-Gaussian scale of the reward noise (the env's ``noise_std``, default 1).
        c: None for the delta-correct anytime width ``beta_n`` (default), or eq. 3's
            constant used literally (see :mod:`agents._bai`).
        allocation: ``"tracking"``, ``"rounding"`` or ``"greedy"``.
        design_eps: accuracy of the design, ``max g <= (1 + design_eps) r`` (default 0.01).
        block: pulls per rounding block (``"rounding"`` only; default from the design).
        check_growth: eq. 11 is tested at pull counts growing by this factor (default
            0.01: at most 1% late; see :mod:`agents._bai` for why a grid is also tighter).
        lam: accepted for the shared interface; must be 0 (plain OLS, as in eq. 2).
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    The arm set must be the same at every step (a changed set raises ``ValueError``).
    Rank-deficient arm sets are handled in their span. A single distinct arm (K = 1 or
    all arms equal) is recommended at once. If two distinct arms have exactly the same
    mean, no rule can tell them apart and the episode runs until the env truncates it.

    Example:

    >>> import gymnasium as gym, linbandit_gym
    >>> env = gym.make("LinBandit-BAI-v0", instance="soare", d=2, omega=0.5, noise_std=0.1)
    >>> agent = GAllocation(delta=0.05, noise_std=0.1)
    >>> obs, _ = env.reset(seed=0); agent.reset(seed=0)
    >>> done = False
    >>> while not done:
    ...     a = agent.act(obs)
    ...     obs2, r, term, trunc, info = env.step(a)
    ...     agent.update(obs, a, r); obs, done = obs2, term or trunc
    >>> info["correct"], info["recommendation"]
    (True, 0)
    """

    name = "GAllocation"
    parameter_constraints = {
        "allocation": [Options(_ALLOCATIONS)],
        "design_eps": [Interval(Real, 0, None, closed="neither", hint="accuracy of the design")],
        "block": [Interval(Integral, 1, None, hint="pulls per rounding block"), None],
        "check_growth": [Interval(Real, 0, None, hint="0 = test after every pull")],
        "lam": [
            Interval(
                Real,
                0,
                0,
                closed="both",
                hint="the static allocations use plain OLS "
                "(Jamieson, 2018, eq. 2) so that the fixed-design width is exact; pass "
                "lam=0",
            )
        ],
    }
    repr_args = ("delta", "noise_std", "allocation")

    def __init__(
        self,
        *,
        delta: float = 0.05,
        noise_std: float = 1.0,
        c: float | None = None,
        allocation: str = "tracking",
        design_eps: float = 0.01,
        block: int | None = None,
        check_growth: float = 0.01,
        lam: float = 0.0,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
    ):
        self.allocation, self.design_eps = allocation, design_eps
        self.block, self.check_growth = block, check_growth
        self.lam = 0.0
        super().__init__(
            delta=delta, noise_std=noise_std, c=c, d=d, device=device, dtype=dtype, seed=seed
        )

    # -- what XYStatic overrides -----------------------------------------------------
    def _design(self) -> torch.Tensor:
        """The design the pulls follow: G-optimal on the arms (Jamieson, 2018, eq. 13)."""
        return g_optimal_design(self.z, eps=self.design_eps)

    def _targets(self) -> torch.Tensor:
        """Vectors whose worst ``||y||^2_{A^-1}`` the greedy rule minimises: the arms (eq. 14)."""
        return self.z

    # -- BAIAgent hooks --------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        check_seed(seed)  # before clearing anything: a refused seed changes nothing
        self.weights: torch.Tensor | None = None
        self._w_np: np.ndarray | None = None
        self._block_counts = self._block_done = None
        self._block_size = 0
        self._init_pulls: list[int] = []
        self._greedy_targets: torch.Tensor | None = None
        self._ainv: torch.Tensor | None = None
        self._next_check = 1
        self._n_checks = 0
        super().reset(seed=seed)

    def _start(self) -> None:
        if self.allocation == "greedy":
            self._init_pulls = spanning_subset(self.z)
            self._greedy_targets = self._targets()
            return
        self.weights = self._cached(("design", self.design_eps), self._design).to(
            device=self.device, dtype=self.dtype
        )
        self._w_np = self.weights.detach().cpu().numpy().astype(np.float64)
        self._support = np.flatnonzero(self._w_np > 0)
        if self.allocation == "rounding":
            support = int((self._w_np > 0).sum())
            self._block_size = self.block or max(rounding_threshold(support, 0.1), support)
            self._block_counts = round_design(self._w_np, self._block_size)
            self._block_done = np.zeros_like(self._block_counts)

    def _choose(self) -> int:
        # Bookkeeping on K integers per pull: numpy on the host (no device round trip).
        if self.allocation == "tracking":
            supp = self._support
            return int(supp[np.argmax((self.n_pulls + 1) * self._w_np[supp] - self.counts[supp])])
        if self.allocation == "rounding":
            done = int(self._block_done.sum())
            deficit = self._block_counts * ((done + 1) / self._block_size) - self._block_done
            return int(np.argmax(np.where(self._block_done < self._block_counts, deficit, -np.inf)))
        # greedy (eq. 14)
        if self.n_pulls < len(self._init_pulls):
            return self._init_pulls[self.n_pulls]
        return self._greedy_arm()

    def _greedy_arm(self) -> int:
        if self._ainv is None:  # first greedy step: the r spanning pulls make A invertible
            ls = LeastSquares(self.z, self.counts, self.sums)
            self._ainv = torch.linalg.pinv(ls.a)
        ainv = self._ainv
        y = self._greedy_targets
        ya = y @ ainv
        q = (ya * y).sum(dim=1)  # (m,) current ||y||^2_{A^-1}
        cross = ya @ self.z.T  # (m, K): y^T A^-1 x
        lev = ((self.z @ ainv) * self.z).sum(dim=1)  # (K,)
        # y^T (A + x x^T)^-1 y = q_y - (y^T A^-1 x)^2 / (1 + ||x||^2_{A^-1})  (Sherman-Morrison)
        new_q = q[:, None] - cross * cross / (1.0 + lev)[None, :]
        worst = new_q.max(dim=0).values
        # Eq. 14 alone stalls on ties: when several targets share the max, no single pull
        # lowers it and argmin would repeat the first arm forever. Break ties (to 1e-9,
        # relative) by the smallest total sum_y ||y||^2, then by the lowest index.
        tied = worst <= worst.min() * (1.0 + 1e-9)
        total = torch.where(tied, new_q.sum(dim=0), torch.full_like(worst, math.inf))
        return int(torch.argmin(total))

    def _learn(self, arm: int, reward: float) -> None:
        if self._ainv is not None:  # greedy: keep A^-1 current (Sherman-Morrison)
            u = self._ainv @ self.z[arm]
            self._ainv = self._ainv - torch.outer(u, u) / (1.0 + float(self.z[arm] @ u))
        if self.allocation == "rounding":
            self._block_done[arm] += 1
            if int(self._block_done.sum()) >= self._block_size:
                self._block_done[:] = 0
        if self.n_pulls >= self._next_check:
            # the k-th test of eq. 11 on the fixed grid of pull counts
            self._n_checks += 1
            self._next_check = check_grid_next(self.n_pulls, self.check_growth)
            if self.n_pulls >= self.rank:
                ls = LeastSquares(self.z, self.counts, self.sums)
                best = self.stopping_arm(ls, self.beta(self._n_checks))
                if best is not None:
                    self._recommend(best)

    def memory_bytes(self) -> int:
        arrays = sum(
            a.nbytes for a in (self._w_np, self._block_counts, self._block_done) if a is not None
        )
        return (
            super().memory_bytes()
            + tensor_bytes(self.weights, self._greedy_targets, self._ainv)
            + int(arrays)
        )
