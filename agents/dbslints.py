"""DBSLinTS: linear Thompson sampling over Dyadic Block Sketching (Wen et al., 2025)."""

from __future__ import annotations

from ._torch import DeviceLike, DTypeLike
from .base import Batching
from .dbslinucb import DYADIC_BLOCK_ARGS, DYADIC_BLOCK_CONSTRAINTS, check_l0_fits
from .sketches.dbs import DyadicBlockSketch
from .thompson import ThompsonSampling

__all__ = ["DBSLinTS"]


class DBSLinTS(ThompsonSampling):
    """Linear Thompson sampling whose Gram matrix is a Dyadic Block Sketch (FD or RFD blocks).

    The sketch of DBSLinUCB (Wen et al. (2025), Alg. 4 / 5: blocks of sizes ``l0, 2 l0, ...``,
    each an FD or RFD sketch of error below ``eps``; exact rank-1 updates from the block or time
    cap on) under the Thompson rule instead of optimism: every round draws ``theta_tilde =
    theta_hat + v F z`` and plays ``argmax_x x^T theta_tilde``. The draw is that of the sketch's
    state (:meth:`agents.sketches.dbs.DyadicBlockSketch.draw_all`): on the basis state of its
    blocks ``F z = (z - V^T V z) / sqrt(c) + V^T L V z`` (``H = L L^T``), and once exact the
    square-root factor of the handed-over ``A^-1`` (its Cholesky factor at the first draw, Potter's
    update since). Before any shrink the sketch holds ``lam I + X^T X`` exactly, and the posterior
    is LinTS's. No paper states this agent; its ``"theory"`` scale is LinTS's.

    Args:
        lam: ridge lambda > 0.
        v: the posterior scale: a float or ``"theory"`` (:func:`agents.thompson.theory_scale`).
        l0: initial sketch size, ``1 <= l0 <= d``.
        eps: error parameter > 0 (the sketch's covariance error stays ``< 2 eps``).
        sketch: ``"fd"`` or ``"rfd"`` blocks.
        fast, sentinel, memory_cap, time_cap: as for :class:`~agents.dbslinucb.DBSLinUCB`.
        delta, noise_std: used by ``v="theory"`` only.
        theta_bound: unused (accepted as the UCB agents accept it).
        batch_size: ``None`` (one agent) or B independent agents; ``lam``, ``v``, ``l0`` and ``eps``
            may then give one value per member.
        d, device, dtype: see :class:`~agents.base.TorchAgent`.
        seed: seed of the agent's normal draws.

    Example:

    >>> import numpy as np
    >>> agent = DBSLinTS(lam=1.0, v=0.1, l0=2, eps=1.0, seed=0)
    >>> rng = np.random.default_rng(0)
    >>> for t in range(30):
    ...     arms = rng.standard_normal((5, 8))
    ...     a = agent.act(arms); agent.update(arms, a, reward=float(arms[a, 0]))
    >>> agent.sketch_size <= 8
    True
    """

    estimator_class = DyadicBlockSketch
    estimator_args = DYADIC_BLOCK_ARGS
    size_args = ("l0",)
    parameter_constraints = DYADIC_BLOCK_CONSTRAINTS
    batching = Batching(per_member=("lam", "v", "l0", "eps"))
    repr_args = ("lam", "v", "l0", "eps", "sketch")

    def __init__(
        self,
        *,
        lam: float = 1.0,
        v: float | str = 1.0,
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
        # l0, eps and the flags reach the estimator through self.arguments (estimator_args)
        self.l0, self.eps, self.sketch, self.fast = l0, eps, sketch, fast
        self.sentinel, self.memory_cap, self.time_cap = sentinel, memory_cap, time_cap
        self.name = f"DBSLinTS-{sketch.upper()}"
        super().__init__(
            lam=lam,
            v=v,
            delta=delta,
            noise_std=noise_std,
            theta_bound=theta_bound,
            batch_size=batch_size,
            d=d,
            device=device,
            dtype=dtype,
            seed=seed,
        )

    def _allocate(self, d: int) -> None:
        check_l0_fits(self.l0, d)
        super()._allocate(d)

    @property
    def n_blocks(self) -> int | None:
        """Blocks of the sketch so far (``None`` before the first observation)."""
        return None if self.estimator is None else self.estimator.n_blocks

    @property
    def exact_mode(self) -> bool | None:
        """Whether the sketch has reached its block cap and updates exactly."""
        return None if self.estimator is None else self.estimator.exact_mode
