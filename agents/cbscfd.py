"""CBSCFD (Chen, Luo, Zhang, Yu & Lian, 2020): SOFUL on a Robust FD ("SCFD") sketch."""

from __future__ import annotations

import math

import numpy as np

from .sketches.rfd import RobustFrequentDirections
from .soful import SOFUL

__all__ = ["CBSCFD"]


class CBSCFD(SOFUL):
    """Sketched OFUL with Robust Frequent Directions: ``A_hat = (lam + alpha) I + S^T S``.

    Wen et al. (2025), Sec. 2.3 / App. C.2 and Alg. 3: the mass FD discards is added back as
    ``alpha I``, so ``A_hat`` never under-estimates ``lam I + X^T X`` and grows monotonically.
    ``A_hat^-1 = (1/(lam + alpha))(I - S^T M S)``, ``M = (S S^T + (lam + alpha) I)^-1`` (the
    ``1/lambda`` prefactor of Wen et al. (2025), eq. 5 is the FD case alpha = 0). O(K d l) scoring,
    O(d l) amortised updates, O(d l) memory. Exact (== OFUL) when ``sketch_size > d``. It is
    :class:`~agents.SOFUL` on the robust sketch: the same arguments, loop and batching; the
    estimator and the ``"theory"`` radius are its own.

    Args:
        lam: ridge lambda > 0.
        beta: constant radius (float) or ``"theory"``: Wen et al. (2025), Thm. 6 specialised to
            one RFD block, ``R sqrt(2 ln(1/delta) + ln(|A_hat|/|lam I|)) + H sqrt(lam + alpha)``,
            with the exact ``ln|A_hat|`` (an upper bound on ``ln|A|`` because ``A <= A_hat``)
            instead of the determinant-trace bound of Lemma 7, so no arm-norm bound is needed.
            Equals OFUL's radius while nothing has been discarded.
        sketch_size: RFD sketch size ``l >= 1``; batched, one per member allowed (the members'
            buffers are padded to the largest; each still reduces on its own ``2 l_i`` rows).
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

    estimator_class = RobustFrequentDirections
    batching = SOFUL.batching

    def _theory_radius(self) -> np.ndarray:
        est = self.estimator
        alpha, logdet = np.atleast_1d(est.alpha), np.atleast_1d(est.log_det_ratio_bound())
        return self.noise_std * np.sqrt(
            2.0 * math.log(1.0 / self.delta) + logdet
        ) + self.theta_bound * np.sqrt(self.lam + alpha)
