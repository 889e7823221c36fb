"""SLinTS (Kuzborskij, Cella & Cesa-Bianchi, 2019): linear Thompson sampling on a Frequent
Directions sketch (``sketch="rfd"``: Robust FD, the discarded mass added back)."""

from __future__ import annotations

from numbers import Integral

from ._torch import DeviceLike, DTypeLike
from ._validate import Interval, Options
from .base import Batching
from .sketches.fd import FrequentDirections
from .sketches.rfd import RobustFrequentDirections
from .thompson import ThompsonSampling

__all__ = ["SLinTS"]


class SLinTS(ThompsonSampling):
    """Sketched linear Thompson sampling: ``A_hat = c I + S^T S`` from Frequent Directions.

    Kuzborskij, Cella & Cesa-Bianchi (2019) run linear Thompson sampling on FD's ``A_hat``
    (``c = lam``; with ``sketch="rfd"``, Robust FD, ``c = lam + alpha``, the mass FD discards
    added back, as CBSCFD does for OFUL). Every round draws ``theta_tilde = theta_hat + v F z``
    with the basis state's factor ``F z = (z - V^T V z) / sqrt(c) + V^T L V z`` (``H = L L^T``, a
    Cholesky of the ``R x R`` core inverse; :mod:`agents.sketches.core`) and plays
    ``argmax_x x^T theta_tilde``: O(d l + l^3) for ``theta_hat`` and the draw, O(K d) for the
    arms, O(d l) amortised for the update (no ``K d l`` projection of the arms, which SOFUL's
    widths need); memory O(d l). FD keeps ``l - 1`` directions, so with ``sketch_size > d``
    nothing is discarded and the posterior is LinTS's (the same ``theta_hat`` and draw
    covariance; another factor of it, so other draws from one ``z``).

    Args:
        lam: ridge lambda > 0.
        v: the posterior scale: a float or ``"theory"``
            (:func:`agents.thompson.theory_scale`, not inflated by the sketch's error).
        sketch_size: FD sketch size ``l >= 1``; batched, one per member allowed.
        sketch: ``"fd"`` (Frequent Directions) or ``"rfd"`` (Robust FD).
        fast: ``True`` (default) 2l-row buffer, ``False`` textbook one-SVD-per-row FD.
        delta, noise_std: used by ``v="theory"`` only.
        theta_bound: unused (accepted as the UCB agents accept it).
        batch_size: ``None`` (one agent) or B independent agents; ``lam``, ``v`` and
            ``sketch_size`` may then give one value per member.
        d, device, dtype: see :class:`~agents.base.TorchAgent`.
        seed: seed of the agent's normal draws.

    Example:

    >>> import numpy as np
    >>> agent = SLinTS(lam=1.0, v=0.1, sketch_size=4, seed=0)
    >>> arms = np.eye(3)
    >>> a = agent.act(arms); agent.update(arms, a, reward=1.0)
    >>> round(agent.theta_hat.tolist()[a], 12)
    0.5
    """

    estimator_class = FrequentDirections
    estimator_args = ("sketch_size", "fast")
    size_args = ("sketch_size",)
    parameter_constraints = {
        "sketch_size": [Interval(Integral, 1, None, hint="the number l of sketch rows")],
        "sketch": [Options(("fd", "rfd"), hint="'fd': Frequent Directions, 'rfd': Robust FD")],
        "fast": [Options((True, False), hint="True: the 2l-row buffer, False: textbook FD")],
    }
    batching = Batching(per_member=("lam", "v", "sketch_size"))
    repr_args = ("lam", "v", "sketch_size", "sketch")

    def __init__(
        self,
        *,
        lam: float = 1.0,
        v: float | str = 1.0,
        sketch_size: int = 50,
        sketch: str = "fd",
        fast: bool = True,
        delta: float = 0.05,
        noise_std: float = 1.0,
        theta_bound: float = 1.0,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
        batch_size: int | None = None,
    ):
        # sketch_size and fast reach the estimator through self.arguments (estimator_args)
        self.sketch, self.fast = sketch, fast
        if sketch == "rfd":  # the same state and byte formula as FD's, with alpha added back
            self.estimator_class = RobustFrequentDirections
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
