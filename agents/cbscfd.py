"""CBSCFD (Chen, Luo, Zhang, Yu & Lian, 2020): OFUL on a Robust FD ("SCFD") sketch."""

from __future__ import annotations

import math

import numpy as np

from ._torch import DeviceLike, DTypeLike
from .linucb import LinUCB
from .sketches.rfd import RobustFrequentDirections
from .soful import _check_sketch_args, _warn_if_larger_than_oful, sketch_bytes

__all__ = ["CBSCFD"]


class CBSCFD(LinUCB):
    """Sketched OFUL with Robust Frequent Directions: ``A_hat = (lam + alpha) I + S^T S``.

    Wen et al. (2025), Sec. 2.3 / App. C.2 and Alg. 3: the mass FD discards is added back as ``alpha I``,
    so ``A_hat`` never under-estimates ``lam I + X^T X`` and grows monotonically.
    ``A_hat^-1 = (1/(lam + alpha))(I - S^T M S)``, ``M = (S S^T + (lam + alpha) I)^-1`` (the
    ``1/lambda`` prefactor of Wen et al. (2025), eq. 5 is the FD case alpha = 0). O(K d l) scoring,
    O(d l) amortised updates, O(d l) memory. Exact (== OFUL) when ``sketch_size > d``.

    Args:
        lam: ridge lambda > 0.
        beta: constant radius (float) or ``"theory"``: Wen et al. (2025), Thm. 6 specialised to one RFD
            block, ``R sqrt(2 ln(1/delta) + ln(|A_hat|/|lam I|)) + H sqrt(lam + alpha)``, with the
            exact ``ln|A_hat|`` (an upper bound on ``ln|A|`` because ``A <= A_hat``) instead of
            the determinant-trace bound of Lemma 7, so no arm-norm bound is needed. Equals
            OFUL's radius while nothing has been discarded.
        sketch_size: RFD sketch size ``l >= 1``; batched, one per member allowed (the members' buffers
            are padded to the largest; each still reduces on its own ``2 l_i`` rows).
        fast: ``True`` (default) 2l-row buffer, ``False`` textbook one-SVD-per-row RFD.
        delta, noise_std (R), theta_bound (H): used by ``beta="theory"`` only.
        batch_size: ``None`` (one agent) or B independent agents; ``lam``, ``beta`` and
            ``sketch_size`` may then give one value per member (``per_member_args``; see
            :class:`agents.batched.BatchedCBSCFD`).
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    Example:

    >>> import numpy as np
    >>> agent = CBSCFD(lam=1.0, beta=0.1, sketch_size=4)
    >>> arms = np.eye(3)
    >>> a = agent.act(arms); agent.update(arms, a, reward=1.0)
    >>> [round(v, 12) for v in agent.theta_hat.tolist()]
    [0.5, 0.0, 0.0]
    """

    per_member_args = ("lam", "beta", "sketch_size")
    _has_batched_twin = True

    _size_args = ("sketch_size",)

    @classmethod
    def _estimator_bytes(cls, d, n_arms, args, dtype, cdtype, initial) -> int:
        return sketch_bytes(cls, d, args, dtype, cdtype)  # RFD's layout is FD's

    def _sizing_args(self) -> dict:
        return {**super()._sizing_args(), "sketch_size": self._l, "fast": self.fast}
    _accumulates_logdet = False  # beta="theory" reads the sketch (confidence_radius below)

    def __init__(self, *, lam: float = 1.0, beta: float | str = 1.0, sketch_size: int = 50, fast: bool = True,
                 delta: float = 0.05, noise_std: float = 1.0, theta_bound: float = 1.0, d: int | None = None,
                 device: DeviceLike = None, dtype: DTypeLike = None, seed: int | None = None, batch_size: int | None = None):
        # sketch_size may differ across members (padding keeps each member its single twin)
        self._l = _check_sketch_args(sketch_size, fast, batch_size)
        self.fast = fast
        super().__init__(lam=lam, beta=beta, delta=delta, noise_std=noise_std, theta_bound=theta_bound,
                         batch_size=batch_size, d=d, device=device, dtype=dtype, seed=seed)
        self._repr_params = {"lam": self.lam, "beta": self.beta, "sketch_size": self._l}

    def _make_estimator(self, d: int) -> RobustFrequentDirections:
        _warn_if_larger_than_oful(self, d)
        return RobustFrequentDirections(d, self._l, reg=self.lam, fast=self.fast, device=self.device,
                                        dtype=self.dtype, batch_size=self._est_batch)

    def _sketch_radius(self) -> np.ndarray:
        est = self.estimator
        alpha, logdet = est._alpha, np.atleast_1d(est.log_det_ratio_bound())
        return self.noise_std * np.sqrt(2.0 * math.log(1.0 / self.delta) + logdet) + self.theta_bound * np.sqrt(
            self.lam + alpha
        )
