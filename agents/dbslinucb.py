"""DBSLinUCB (Wen et al. (2025), Sec. 4, Alg. 5): optimistic linear bandit over Dyadic Block
Sketching."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from ._torch import DeviceLike, DTypeLike
from ._validate import Interval, Options
from .base import Batching
from .linucb import LinUCB
from .sketches.dbs import DyadicBlockSketch

__all__ = ["DBSLinUCB", "DBSLinUCBFD", "DBSLinUCBRFD"]


#: The Dyadic Block Sketch's arguments an agent on it passes to the estimator, and their rules:
#: the same for every action rule on it (DBSLinUCB's optimism, DBSLinTS's Thompson sampling).
DYADIC_BLOCK_ARGS = ("l0", "eps", "sketch", "fast", "sentinel", "memory_cap", "time_cap")
DYADIC_BLOCK_CONSTRAINTS = {
    "l0": [Interval(Integral, 1, None, hint="the initial sketch size")],
    "eps": [Interval(Real, 0, None, closed="neither", hint="the error parameter")],
    "sketch": [Options(("fd", "rfd"))],
    "fast": [Options((True, False), hint="True: the fast Alg. 4, False: Alg. 1")],
    "sentinel": [bool],
    "memory_cap": [bool],
    "time_cap": [bool],
}


def check_l0_fits(l0, d: int) -> None:
    """Refuse an ``l0`` (one, or one per member) above the arm dimension ``d``, before any state is
    built: a refused ``l0`` leaves the agent untouched (``d`` still unknown), and the error names
    the fix."""
    over = np.flatnonzero(np.atleast_1d(l0) > d)
    if over.size:
        i = int(over[0])
        which = f"l0={l0}" if isinstance(l0, int) else f"l0[{i}]={int(l0[i])} (member {i})"
        raise ValueError(
            f"{which} exceeds the arm dimension d={d}; choose 1 <= l0 <= d "
            f"(the paper uses l0 much smaller than d, e.g. l0=50 for d=500)"
        )


class DBSLinUCB(LinUCB):
    """LinUCB on a Dyadic Block Sketch (Wen et al. (2025), Alg. 5, fast Alg. 4 inside).

    Every round (Alg. 5): score the K arms at once with ``x^T theta_hat + beta ||x||_{A_hat^-1}``
    (eq. 6), play the argmax, insert it into the sketch (Alg. 1 / Alg. 4) and refit
    ``theta_hat = A_hat^-1 sum_s r_s x_s`` (eq. 5's matrix, applied through the sketch's basis
    state, :mod:`agents.sketches.core`), never forming a d x d matrix until the block cap or the
    time cap is reached (then the sketch switches to exact rank-1 updates, i.e. OFUL). Per round
    O(K d R + K R^2) with R the dimension of the rows' span; the sketch size grows l0, 2 l0, 4 l0,
    ... with the data, so regret stays sublinear without knowing the spectrum.

    Args:
        lam: ridge lambda > 0.
        beta: a constant radius (float; the paper tunes it in {1e-4, ..., 1}) or ``"theory"``:
            the radius of Wen et al. (2025), Theorem 2 (FD blocks) / Theorem 6 (RFD blocks), App. E,
            with the tracked shrinkage ``sigma_bar = sum_i sigma_bar_i`` (< 2 eps, Theorem 1)::

                FD:  R sqrt(1 + s/lam) sqrt(2 ln(1/delta) + LD) + H (lam + s) / sqrt(lam)
                RFD: R sqrt(2 ln(1/delta) + LD_rfd)               + H sqrt(lam + s)

            where ``LD = (d - m) ln(1 + s/lam) + m ln(1 + s/lam + T/(m lam))`` bounds
            ``ln(|A_t|/|lam I|)`` (Lemma 6 before its last simplification; ``m`` = rank bound of
            ``sum_i S_i^T S_i``: the rows held, ``d`` after the cap; ``T = sum_s ||x_s||^2`` in
            place of ``t L^2``), and ``LD_rfd = (d - m) ln(1 + s/lam) + m ln(1 + (T/m + h)/lam)``
            with ``h = s - sum_i l_i sigma_bar_i / m`` (App. E.3, eq. 26). ``R = noise_std``,
            ``H = theta_bound``.
        l0: initial sketch size (paper: 50), ``1 <= l0 <= d``.
        eps: error parameter > 0 (paper: 8); the sketch's covariance error stays ``< 2 eps``.
        sketch: ``"fd"`` (DBSLinUCB-FD) or ``"rfd"`` (DBSLinUCB-RFD, discarded mass added back).
        fast: ``True`` for the fast Alg. 4 (2l-row FD buffers + eq. 7), ``False`` for Alg. 1.
        sentinel: App. B.1's willExcessSketch sentinel (see :mod:`agents.sketches.dbs`).
        memory_cap: ``True`` (default) switch to exact updates as soon as the next block would hold
            more bytes than OFUL's d x d inverse (so ``memory_bytes()`` never exceeds OFUL's);
            ``False``: not for memory (see :mod:`agents.sketches.dbs`).
        time_cap: ``True`` (default) switch to exact updates as soon as the next block would cost
            more multiply-adds per round at its peak than OFUL's round (``K`` arms:
            ``(K + 1) d^2``); ``False``: not for time. With both off, only the paper's literal
            block cap applies.
        batch_size: ``None`` (one agent) or B independent agents; ``lam``, ``beta``, ``l0`` and
            ``eps`` may then give one value per member (``per_member_args``; see
            :class:`agents.batched.BatchedDBSLinUCB`).
        delta, noise_std, theta_bound: used by ``beta="theory"`` only.
        d: optional dimension, allocates eagerly; read from the first observation otherwise.
        device, dtype, seed: see :class:`~agents.base.TorchAgent` (DBSLinUCB is deterministic).

    Introspection: ``sketch_size`` (rows held now, ``d`` once exact; the run loop records it per
    round), ``n_blocks``, ``exact_mode``, ``estimator.blocks()`` / ``estimator.stats()``.

    Example:

    >>> import numpy as np
    >>> agent = DBSLinUCB(lam=1.0, beta=0.1, l0=2, eps=1.0)
    >>> rng = np.random.default_rng(0)
    >>> for t in range(30):
    ...     arms = rng.standard_normal((5, 8))
    ...     a = agent.act(arms); agent.update(arms, a, reward=float(arms[a, 0]))
    >>> agent.n_blocks <= agent.estimator.block_cap, agent.sketch_size <= 8
    (True, True)
    """

    estimator_class = DyadicBlockSketch
    estimator_args = DYADIC_BLOCK_ARGS
    size_args = ("l0",)
    parameter_constraints = DYADIC_BLOCK_CONSTRAINTS
    batching = Batching(per_member=("lam", "beta", "l0", "eps"))
    repr_args = ("lam", "beta", "l0", "eps", "sketch")

    def __init__(
        self,
        *,
        lam: float = 1.0,
        beta: float | str = 1.0,
        l0: int = 50,
        eps: float = 8.0,
        sketch: str = "fd",
        fast: bool = True,
        sentinel: bool = True,
        memory_cap: bool = True,
        time_cap: bool = True,
        delta: float = 0.05,
        noise_std: float = 1.0,
        theta_bound: float = 1.0,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
        batch_size: int | None = None,
    ):
        # l0 and eps may differ across members (per_member_args): int/float, or arrays (B,); these
        # and the flags reach the estimator through self.arguments (estimator_args)
        self.l0, self.eps, self.sketch, self.fast = l0, eps, sketch, fast
        self.sentinel, self.memory_cap, self.time_cap = sentinel, memory_cap, time_cap
        self.name = f"DBSLinUCB-{sketch.upper()}"
        super().__init__(
            lam=lam,
            beta=beta,
            delta=delta,
            noise_std=noise_std,
            theta_bound=theta_bound,
            d=d,
            device=device,
            dtype=dtype,
            seed=seed,
            batch_size=batch_size,
        )

    def _allocate(self, d: int) -> None:
        check_l0_fits(self.l0, d)
        super()._allocate(d)

    def _theory_radius(self) -> np.ndarray:
        """Wen et al.'s (2025) Theorem 2 / 6 radius per member (see the class docstring)."""
        est, lam, d = self.estimator, self.lam, self.d
        s = np.atleast_1d(est.total_shrinkage).astype(np.float64)
        T = np.atleast_1d(est.frobenius_mass).astype(np.float64)
        m = np.where(est.exact, d, np.minimum(d, est.sketch_sizes())).astype(np.float64)
        safe = np.maximum(m, 1.0)
        base = 2.0 * math.log(1.0 / self.delta)
        if self.sketch == "fd":
            ld = (d - m) * np.log1p(s / lam) + np.where(
                m > 0, m * np.log1p(s / lam + T / (safe * lam)), 0.0
            )
            return self.noise_std * np.sqrt(1.0 + s / lam) * np.sqrt(
                base + ld
            ) + self.theta_bound * (lam + s) / np.sqrt(lam)
        h = s - np.atleast_1d(est.blocks_weighted_shrinkage()) / safe
        ld = np.where(
            m > 0,
            (d - m) * np.log1p(s / lam) + m * np.log1p(np.maximum(T / safe + h, 0.0) / lam),
            d * np.log1p(s / lam),
        )
        return self.noise_std * np.sqrt(base + ld) + self.theta_bound * np.sqrt(lam + s)

    # -- introspection -------------------------------------------------------------
    @property
    def n_blocks(self) -> int | None:
        """Blocks of the sketch so far (``None`` before the first observation)."""
        return None if self.estimator is None else self.estimator.n_blocks

    @property
    def exact_mode(self) -> bool | None:
        """Whether the sketch has reached its block cap and updates exactly (OFUL-like)."""
        return None if self.estimator is None else self.estimator.exact_mode


class DBSLinUCBFD(DBSLinUCB):
    """DBSLinUCB over Frequent Directions blocks (``sketch="fd"``); same keywords otherwise."""

    parameter_constraints = {
        "sketch": [
            Options(
                ("fd",),
                hint="DBSLinUCBFD always uses sketch='fd'; use DBSLinUCB(sketch=...) to choose",
            )
        ]
    }
    batching = Batching(per_member=DBSLinUCB.batching.per_member, batched_as=DBSLinUCB)

    def __init__(
        self, *, sketch: str = "fd", **kwargs
    ):  # sketch declared here: its default is this class's
        super().__init__(sketch=sketch, **kwargs)


class DBSLinUCBRFD(DBSLinUCB):
    """DBSLinUCB over Robust FD blocks (``sketch="rfd"``); same keywords otherwise."""

    parameter_constraints = {
        "sketch": [
            Options(
                ("rfd",),
                hint="DBSLinUCBRFD always uses sketch='rfd'; use DBSLinUCB(sketch=...) to choose",
            )
        ]
    }
    batching = Batching(per_member=DBSLinUCB.batching.per_member, batched_as=DBSLinUCB)

    def __init__(
        self, *, sketch: str = "rfd", **kwargs
    ):  # sketch declared here: its default is this class's
        super().__init__(sketch=sketch, **kwargs)
