"""SOFUL (Kuzborskij, Cella & Cesa-Bianchi, 2019): OFUL on a Frequent Directions sketch."""

from __future__ import annotations

import math
import numbers

from .linucb import LinUCB
from .sketches.fd import FrequentDirections

__all__ = ["SOFUL"]


def _check_sketch_args(sketch_size, fast) -> None:
    """Validate before any state exists (TorchAgent's constructor may allocate eagerly)."""
    if isinstance(sketch_size, bool) or not isinstance(sketch_size, numbers.Integral) or sketch_size < 1:
        raise ValueError(
            f"sketch_size must be a positive int (the number l of sketch rows), got {sketch_size!r}"
        )
    if not isinstance(fast, bool):
        raise ValueError(f"fast must be True (2l-row buffer) or False (textbook FD), got {fast!r}")


class SOFUL(LinUCB):
    """Sketched OFUL: the optimistic loop with ``A_hat = lam I + S^T S`` from Frequent Directions.

    Seed 000 Sec. 2.3 (eqs. 3-4): ``A_hat^-1 = (1/lam)(I - S^T M S)``, ``M = (S S^T + lam I)^-1``;
    all K arms scored in one O(K d l) batched op, updates O(d l) amortised with the fast 2l-row
    buffer (Remark 1; the papers' experiments use it), memory O(d l). FD keeps ``l - 1``
    directions, so SOFUL equals OFUL exactly when ``sketch_size > d`` (not at ``= d``).

    Args:
        lam: ridge lambda > 0.
        beta: constant radius (float, as in the papers' experiments) or ``"theory"``: seed 000
            Thm. 2 (App. E.1, eq. before Lemma 6) specialised to one FD block,
            ``R sqrt(1 + sb/lam) sqrt(2 ln(1/delta) + ln(|A|/|lam I|)) + H (lam + sb)/sqrt(lam)``
            with ``sb`` the total FD shrinkage and ``ln(|A|/|lam I|)`` replaced by the data bound
            :meth:`~agents.sketches.fd.FrequentDirections.log_det_ratio_bound` (Lemma 6 before
            ``||x|| <= L`` is used, so no arm-norm bound is needed). Equals OFUL's radius
            while nothing has been discarded.
        sketch_size: FD sketch size ``l >= 1``.
        fast: ``True`` (default) 2l-row buffer, ``False`` textbook one-SVD-per-row FD.
        delta, noise_std (R), theta_bound (H): used by ``beta="theory"`` only.
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    Example:

    >>> import numpy as np
    >>> agent = SOFUL(lam=1.0, beta=0.1, sketch_size=4)
    >>> arms = np.eye(3)
    >>> a = agent.act(arms); agent.update(arms, a, reward=1.0)
    >>> [round(v, 12) for v in agent.theta_hat.tolist()]
    [0.5, 0.0, 0.0]
    """

    _accumulates_logdet = False  # beta="theory" reads the sketch (confidence_radius below)

    def __init__(self, *, lam: float = 1.0, beta: float | str = 1.0, sketch_size: int = 50, fast: bool = True,
                 delta: float = 0.05, noise_std: float = 1.0, theta_bound: float = 1.0, d: int | None = None,
                 device=None, dtype=None, seed: int | None = None):
        _check_sketch_args(sketch_size, fast)
        self._l = int(sketch_size)
        self.fast = fast
        super().__init__(lam=lam, beta=beta, delta=delta, noise_std=noise_std, theta_bound=theta_bound,
                         d=d, device=device, dtype=dtype, seed=seed)
        self._repr_params = {"lam": self.lam, "beta": self.beta, "sketch_size": self._l}

    def _make_estimator(self, d: int) -> FrequentDirections:
        return FrequentDirections(d, self._l, reg=self.lam, fast=self.fast, device=self.device, dtype=self.dtype)

    def confidence_radius(self) -> float:
        if self.beta != "theory":
            return self.beta
        est = self.estimator
        sb = 0.0 if est is None else est.total_shrinkage
        logdet = 0.0 if est is None else est.log_det_ratio_bound()
        lam = self.lam
        return self.noise_std * math.sqrt(1.0 + sb / lam) * math.sqrt(
            2.0 * math.log(1.0 / self.delta) + logdet
        ) + self.theta_bound * (lam + sb) / math.sqrt(lam)
