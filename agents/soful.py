"""SOFUL (Kuzborskij, Cella & Cesa-Bianchi, 2019): OFUL on a Frequent Directions sketch."""

from __future__ import annotations

import math

import numpy as np

from ._validate import check_batch_size
from .linucb import LinUCB, arm_scratch_bytes
from .sketches.fd import FrequentDirections, check_sketch_size

__all__ = ["SOFUL"]


def _check_sketch_args(sketch_size, fast, batch_size):
    """Validate before any state exists (TorchAgent's constructor may allocate eagerly): the
    sketch size as an int, or an int array ``(B,)`` when the members' sizes differ."""
    return check_sketch_size(sketch_size, fast, check_batch_size(batch_size))


class SOFUL(LinUCB):
    """Sketched OFUL: the optimistic loop with ``A_hat = lam I + S^T S`` from Frequent Directions.

    Wen et al. (2025), Sec. 2.3 (eqs. 3-4): ``A_hat^-1 = (1/lam)(I - S^T M S)``, ``M = (S S^T + lam I)^-1``;
    all K arms scored in one O(K d l) batched op, updates O(d l) amortised with the fast 2l-row
    buffer (Remark 1; the papers' experiments use it), memory O(d l). FD keeps ``l - 1``
    directions, so SOFUL equals OFUL exactly when ``sketch_size > d`` (not at ``= d``).

    Args:
        lam: ridge lambda > 0.
        beta: constant radius (float, as in the papers' experiments) or ``"theory"``: Wen et al. (2025)
            Thm. 2 (App. E.1, eq. before Lemma 6) specialised to one FD block,
            ``R sqrt(1 + sb/lam) sqrt(2 ln(1/delta) + ln(|A|/|lam I|)) + H (lam + sb)/sqrt(lam)``
            with ``sb`` the total FD shrinkage and ``ln(|A|/|lam I|)`` replaced by the data bound
            :meth:`~agents.sketches.fd.FrequentDirections.log_det_ratio_bound` (Lemma 6 before
            ``||x|| <= L`` is used, so no arm-norm bound is needed). Equals OFUL's radius
            while nothing has been discarded.
        sketch_size: FD sketch size ``l >= 1``; batched, one per member allowed (the members' buffers
            are padded to the largest; each still reduces on its own ``2 l_i`` rows).
        fast: ``True`` (default) 2l-row buffer, ``False`` textbook one-SVD-per-row FD.
        delta, noise_std (R), theta_bound (H): used by ``beta="theory"`` only.
        batch_size: ``None`` (one agent) or B independent agents; ``lam``, ``beta`` and
            ``sketch_size`` may then give one value per member (``per_member_args``; see
            :class:`agents.batched.BatchedSOFUL`).
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    Example:

    >>> import numpy as np
    >>> agent = SOFUL(lam=1.0, beta=0.1, sketch_size=4)
    >>> arms = np.eye(3)
    >>> a = agent.act(arms); agent.update(arms, a, reward=1.0)
    >>> [round(v, 12) for v in agent.theta_hat.tolist()]
    [0.5, 0.0, 0.0]
    """

    per_member_args = ("lam", "beta", "sketch_size")
    _accumulates_logdet = False  # beta="theory" reads the sketch (confidence_radius below)
    _has_batched_twin = True

    @classmethod
    def estimate_memory_bytes(cls, d: int, n_arms: int, **args) -> int:
        return sketched_memory_bytes(cls, d, n_arms, args)

    def __init__(self, *, lam: float = 1.0, beta: float | str = 1.0, sketch_size: int = 50, fast: bool = True,
                 delta: float = 0.05, noise_std: float = 1.0, theta_bound: float = 1.0, d: int | None = None,
                 device=None, dtype=None, seed: int | None = None, batch_size: int | None = None):
        # sketch_size may differ across members (padding keeps each member its single twin)
        self._l = _check_sketch_args(sketch_size, fast, batch_size)
        self.fast = fast
        super().__init__(lam=lam, beta=beta, delta=delta, noise_std=noise_std, theta_bound=theta_bound,
                         batch_size=batch_size, d=d, device=device, dtype=dtype, seed=seed)
        self._repr_params = {"lam": self.lam, "beta": self.beta, "sketch_size": self._l}

    def _make_estimator(self, d: int) -> FrequentDirections:
        _warn_if_larger_than_oful(self, d)
        return FrequentDirections(d, self._l, reg=self.lam, fast=self.fast, device=self.device, dtype=self.dtype,
                                  batch_size=self._est_batch)

    def _sketch_radius(self) -> np.ndarray:
        est = self.estimator
        sb, logdet = est._shrink, np.atleast_1d(est.log_det_ratio_bound())
        lam = self.lam
        return self.noise_std * np.sqrt(1.0 + sb / lam) * np.sqrt(
            2.0 * math.log(1.0 / self.delta) + logdet
        ) + self.theta_bound * (lam + sb) / np.sqrt(lam)


def sketched_memory_bytes(cls, d: int, n_arms: int, args: dict) -> int:
    """The estimate of :meth:`~agents.base.Agent.estimate_memory_bytes` for SOFUL and CBSCFD:
    the fast buffer's ``2l`` rows, their ``2l x 2l`` Gram and factor and a ``2l``-vector, b and
    theta_hat (the largest member's ``l`` when the sizes differ)."""
    cap = 2 * int(np.max(cls.constructor_argument("sketch_size", args)))
    return arm_scratch_bytes(d, n_arms) + 8 * (cap * d + 2 * cap * cap + cap + 2 * d)


def _warn_if_larger_than_oful(agent, d: int) -> None:
    """A SOFUL/CBSCFD sketch that holds more than OFUL's d x d inverse saves nothing: say so (and how
    to fix it) once, when the dimension becomes known."""
    import warnings

    from .sketches.exact import ExactCovariance

    l = int(np.max(agent._l))  # the largest member's sketch when the sizes differ
    sketch = FrequentDirections.peak_member_bytes(d, l, agent.fast, agent.dtype)
    oful = ExactCovariance.peak_member_bytes(d, agent.dtype)
    if sketch > oful:
        warnings.warn(
            f"{type(agent).__name__}(sketch_size={l}) at d={d} holds {sketch} bytes per agent, more than "
            f"OFUL's d x d inverse ({oful} bytes); use sketch_size < ~{max(1, d // 3)} or OFUL",
            stacklevel=4,
        )
