"""XY-adaptive allocation: phased elimination for best-arm identification (Jamieson, 2018,
Sec. 2.4).

Soare, Lazaric & Munos (2014). Static strategies pay ``d / Delta_min^2`` because they keep
shrinking directions that stopped mattering. XY-adaptive works in phases j = 1, 2, ...:

* the active set ``X_j`` (arms not yet dominated) is frozen during the phase, and the
  phase pulls follow the XY design of eq. 18 over *all* arms for ``Y_j = {x - x' : x, x'
  in X_j}`` (:func:`agents.design.xy_optimal_design` with ``active``), rounded into integer
  pulls by efficient apportionment;
* the phase length (eq. 19) is the smallest ``n`` whose rounded allocation reaches
  ``max_{y in Y_j} ||y||^2_{A_n^-1} <= alpha * (the previous phase's final value)``, i.e.
  ``rho^j(lambda_n)/n <= alpha rho^{j-1}/n_{j-1}``: every direction of interest gets
  ``1/alpha`` times more certain per phase. For phase 1, ``rho^0/n_0 := rho^1(lambda^1)/r``
  (the notes leave it open; this makes phase 1 about ``r/alpha`` pulls);
* at the end of the phase, ``theta_hat_j`` is the OLS on **that phase's samples only** (as
  in Soare et al.'s algorithm: within a phase the allocation is fixed given the past, so
  the fixed-design bound of eq. 3 holds conditionally; reusing earlier samples, chosen
  adaptively, would need the larger adaptive bound of eq. 17), and arm ``x`` is dominated
  (eq. 16) if ``beta_j ||x' - x||_{A_j^-1} < (x' - x)^T theta_hat_j`` for some active x'.

The width ``beta_j`` is that of :mod:`agents._bai` with the union bound over phases j and
the ``K - 1`` arms that could eliminate x*, so x* survives every phase with probability
>= 1 - delta. The agent stops when one arm (or one distinct vector) remains.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
import torch

from ._bai import BAIAgent, LeastSquares
from ._torch import DeviceLike, DTypeLike
from ._validate import Interval, check_seed
from .design import round_design, solve_xy_design
from .design.rounding import MAX_PULLS

__all__ = ["XYAdaptive", "MAX_PHASE_PULLS"]

#: longest phase XY-adaptive plans (round_design's limit, 2**53); a longer one would only arise
#: for gaps far below noise_std and never finishes within a run anyway
MAX_PHASE_PULLS = MAX_PULLS


class XYAdaptive(BAIAgent):
    """XY-adaptive allocation (phased elimination with XY designs, Jamieson (2018), eq. 16-19).

    Args:
        delta: confidence in (0, 1) (default 0.05).
        noise_std: sub-Gaussian scale of the reward noise (the env's ``noise_std``).
        c: None for the delta-correct width (default) or eq. 3's constant used literally.
        alpha: per-phase uncertainty reduction of eq. 19, in (0, 1) (default 0.5: phases
            about double; the notes' bound (eq. 20) scales as ``1 / (alpha log(1/alpha))``,
            smallest near 1/e, and a small alpha makes the last phase overshoot by up to
            ``1/alpha``).
        design_eps: certified accuracy of each phase's XY design (default 0.05).
        design_max_iter: Frank-Wolfe budget per phase design (default 1000); a design that
            is not certified by then is used as is (``design_ratios`` records value/bound).
        lam: accepted for the shared interface; must be 0 (phase OLS, no ridge).
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    Attributes after/while playing: ``phase`` (current phase index), ``active`` (indices
    of the surviving arms), ``phase_lengths`` (pulls of each started phase),
    ``design_ratios`` (value / certified lower bound of each phase's design).

    Example:

    >>> import gymnasium as gym, linbandit_gym
    >>> env = gym.make("LinBandit-BAI-v0", instance="soare", d=3, omega=0.5, noise_std=0.1)
    >>> agent = XYAdaptive(delta=0.05, noise_std=0.1)
    >>> obs, _ = env.reset(seed=1); agent.reset(seed=1)
    >>> done = False
    >>> while not done:
    ...     a = agent.act(obs)
    ...     obs2, r, term, trunc, info = env.step(a)
    ...     agent.update(obs, a, r); obs, done = obs2, term or trunc
    >>> info["correct"], agent.active.tolist()
    (True, [0])
    """

    name = "XYAdaptive"
    parameter_constraints = {
        "alpha": [
            Interval(Real, 0, 1, closed="neither", hint="per-phase uncertainty reduction, eq. 19")
        ],
        "design_eps": [
            Interval(Real, 0, None, closed="neither", hint="accuracy of each phase design")
        ],
        "design_max_iter": [Interval(Integral, 0, None, hint="Frank-Wolfe budget")],
        "lam": [
            Interval(
                Real,
                0,
                0,
                closed="both",
                hint="XY-adaptive uses the phase OLS (no ridge) of Soare et al.; pass lam=0",
            )
        ],
    }
    repr_args = ("delta", "noise_std", "alpha")

    def __init__(
        self,
        *,
        delta: float = 0.05,
        noise_std: float = 1.0,
        c: float | None = None,
        alpha: float = 0.5,
        design_eps: float = 0.05,
        design_max_iter: int = 1000,
        lam: float = 0.0,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
    ):
        self.alpha, self.design_eps, self.design_max_iter = alpha, design_eps, design_max_iter
        self.lam = 0.0
        super().__init__(
            delta=delta, noise_std=noise_std, c=c, d=d, device=device, dtype=dtype, seed=seed
        )

    def reset(self, seed: int | None = None) -> None:
        check_seed(seed)  # before clearing anything: a refused seed changes nothing
        self.phase = 0
        self.active: np.ndarray | None = None
        self.phase_lengths: list[int] = []
        self.design_ratios: list[float] = []
        self._weights: np.ndarray | None = None
        self._plan: np.ndarray | None = None  # planned pulls per arm in this phase
        self._done: np.ndarray | None = None  # pulls made per arm in this phase
        self._psums: np.ndarray | None = None  # reward sums per arm in this phase
        self._plen = 0
        self._pdone = 0
        self._prev_level = math.nan  # rho^{j-1}/n_{j-1}: final max ||y||^2_{A^-1} of the last phase
        super().reset(seed=seed)

    # -- phases --------------------------------------------------------------------
    def _start(self) -> None:
        self.active = np.arange(self.n_arms)
        self._begin_phase()

    def _distinct_active(self) -> bool:
        za = self.z[torch.as_tensor(self.active, device=self.z.device)]
        return bool((za != za[0]).any())

    def _begin_phase(self) -> None:
        if self.active.size == 1 or not self._distinct_active():
            # one arm (or identical copies) left: it is x* w.p. >= 1 - delta (lowest index)
            self._recommend(int(self.active[0]))
            return
        self.phase += 1
        res = self._cached(("xy", tuple(self.active.tolist())), self._phase_design)
        self.design_ratios.append(res.value / res.bound if res.bound > 0 else math.inf)
        w = np.asarray(
            res.weights.detach().cpu().numpy()
            if isinstance(res.weights, torch.Tensor)
            else res.weights
        )
        self._weights = w
        rho = res.value
        # eq. 19: target level; phase 1 uses rho^0/n_0 := rho^1/r, and so does a phase after one
        # whose pulls left every pair unestimable (no finite previous level to shrink)
        prev = self._prev_level
        level = self.alpha * (prev if self.phase > 1 and 0.0 < prev < math.inf else rho / self.rank)
        n, plan = self._phase_length(w, level, rho)
        self._plan, self._plen = plan, n
        self._done = np.zeros(self.n_arms, dtype=np.int64)
        self._psums = np.zeros(self.n_arms, dtype=np.float64)
        self._pdone = 0
        self.phase_lengths.append(n)

    def _phase_design(self):
        with warnings.catch_warnings():
            # A design short of its certificate only costs samples, never correctness (the
            # width uses the pulls actually made), so cap the solver and move on.
            warnings.simplefilter("ignore", RuntimeWarning)
            return solve_xy_design(
                self.z,
                self.design_eps,
                active=self.active,
                init=self._weights,
                max_iter=self.design_max_iter,
            )

    def _max_pair_uncertainty(self, counts: np.ndarray) -> float:
        """``max_{y in Y_j} ||y||^2_{A^+}`` for an allocation (``inf`` if some y is not
        estimable)."""
        ls = LeastSquares(self.z, counts, np.zeros(self.n_arms))
        return float(self._pair_widths(ls).max())

    def _pair_widths(self, ls: LeastSquares) -> torch.Tensor:
        """``||z_a - z_b||^2_{A^+}`` for all ordered pairs of active arms, shape (m, m)."""
        idx = torch.as_tensor(self.active, device=self.z.device)
        za = self.z[idx]
        m = za.shape[0]
        diff = (za[:, None, :] - za[None, :, :]).reshape(m * m, -1)
        return ls.quad(diff).reshape(m, m)

    def _phase_length(self, w: np.ndarray, level: float, rho: float) -> tuple[int, np.ndarray]:
        """Smallest n whose rounded allocation reaches ``level > 0`` (eq. 19), by bracketing and
        bisection.

        The search is bounded: efficient apportionment gives ``n_i >= (n - l) w_i`` (``l`` the
        support size, :mod:`agents.design.rounding`), so ``A_n >= (n - l) V(w)`` and every
        ``||y||^2_{A_n^-1} <= rho / (n - l)``: ``n_hi = l + ceil(rho / level)`` always reaches
        the level, and is returned if the computed value says otherwise (round-off). Phases are
        also capped at ``MAX_PHASE_PULLS``: a phase that long is never finished in a run, and
        the elimination test uses the pulls actually made, so the cap costs no correctness.
        """
        support = int((w > 0).sum())
        bound = rho / level  # inf for a level below ~rho/1e308: then the cap applies
        n_hi = support + math.ceil(bound) if bound < MAX_PHASE_PULLS - support else MAX_PHASE_PULLS
        # the rounded value per pull is >= the optimum >= rho / (1 + eps): a lower bound on n
        lower = bound / (1.0 + self.design_eps)
        lo = min(max(support, math.ceil(lower)), n_hi) if lower < n_hi else n_hi

        def value_at(n: int) -> tuple[float, np.ndarray]:
            plan = round_design(w, n)
            return self._max_pair_uncertainty(plan), plan

        value, plan = value_at(lo)
        if value <= level or lo >= n_hi:
            return lo, plan
        # Bracket the answer: value ~ const / n, so first jump to n * value / level, then double
        # (at most log2(n_hi) evaluations), then bisect between a miss (lo) and a hit (hi).
        grow = min(value / level, 2.0) if math.isfinite(value) else 2.0
        hi = min(max(lo + 1, math.ceil(lo * grow)), n_hi)
        while hi < n_hi:
            value, plan = value_at(hi)
            if value <= level:
                break
            lo, hi = hi, min(2 * hi, n_hi)
        else:
            plan = round_design(w, n_hi)  # reaches the level by the bound above (round-off aside)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            value, mid_plan = value_at(mid)
            if value <= level:
                hi, plan = mid, mid_plan
            else:
                lo = mid
        return hi, plan

    def _end_phase(self) -> None:
        ls = LeastSquares(self.z, self._done, self._psums)
        idx = torch.as_tensor(self.active, device=self.z.device)
        scores = self.z[idx] @ ls.theta()
        width2 = self._pair_widths(ls)  # [b, a] = ||z_b - z_a||^2
        gaps = scores[:, None] - scores[None, :]  # [b, a] = (z_b - z_a)^T theta_hat
        beta = self.beta(self.phase)
        # eq. 16: a is dominated if some active b beats it beyond the confidence width
        dominated = ((beta * beta * width2 < gaps * gaps) & (gaps > 0)).any(dim=0)
        finite = torch.isfinite(width2)
        self._prev_level = float(width2[finite].max()) if bool(finite.any()) else math.inf
        self.active = self.active[~dominated.cpu().numpy()]
        self._begin_phase()

    # -- BAIAgent hooks ------------------------------------------------------------
    def _choose(self) -> int:
        # interleave the phase's planned pulls (the arm furthest behind its share)
        deficit = self._plan * ((self._pdone + 1) / self._plen) - self._done
        return int(np.argmax(np.where(self._done < self._plan, deficit, -np.inf)))

    def _learn(self, arm: int, reward: float) -> None:
        self._done[arm] += 1
        self._psums[arm] += reward
        self._pdone += 1
        if self._pdone >= self._plen:
            self._end_phase()

    def memory_bytes(self) -> int:
        arrays = sum(
            a.nbytes
            for a in (self.active, self._weights, self._plan, self._done, self._psums)
            if a is not None
        )
        return super().memory_bytes() + int(arrays)
