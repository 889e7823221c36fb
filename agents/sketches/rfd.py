"""Robust Frequent Directions (Wen et al. (2025), Alg. 3; "SCFD", Alg. 1 of Chen et al. 2020).

RFD runs Frequent Directions (:mod:`agents.sketches.fd`) and adds the discarded mass back as a
multiple of the identity: ``X^T X`` is approximated by ``S^T S + alpha I`` with

    alpha  <-  alpha + sigma          (every reduction, sigma its shrink value; Alg. 3 line 5)

so that, since FD gives ``0 <= X^T X - S^T S <= alpha I``,

    S^T S  <=  X^T X  <=  S^T S + alpha I, A_hat_t = (reg + alpha_t) I + S_t^T S_t   grows
    monotonically in PSD order (Wen et al. (2025), Thm. 7).

Settled slips:

* ``alpha += sigma`` (the full shrink value), as in Wen et al. (2025), Alg. 3 and its proofs
  (``sum_i alpha_i = sum_i sigma_bar_i``, App. E.3), i.e. Chen et al.'s SCFD. Luo et al.'s
  original RFD adds ``sigma / 2`` (error centred), which loses both the upper bound
  ``X^T X <= S^T S + alpha I`` and the monotonicity the bandit proofs use; we use ``sigma``.
* Alg. 3 line 7 prints the first entry of M as ``1/(lambda + sigma_l^2 - sigma + alpha)``; it is
  ``1/(lambda + sigma_1^2 - sigma + alpha)`` (Wen et al. (2024)'s Alg. 5 has sigma_1). Here no M is
  formed: the core inverse ``(M + (reg + alpha) I)^-1`` of :mod:`agents.sketches.core` is refactored
  with the new ridge after each shrink.
* The ridge outside the sketch's span is ``reg + alpha``, not the ``lambda`` of Wen et al. (2025),
  eq. 5 / Alg. 5 line 8's prefactor ``1/lambda`` (that is the FD case alpha = 0).

It is the same class as FD (one implementation, batch dimension first) with ``robust = True``:
each shrink adds its shrink value to ``alpha`` before the core inverse is refactored.

Example:

>>> import torch
>>> rfd = RobustFrequentDirections(d=4, sketch_size=3, fast=False, dtype=torch.float64)
>>> for x in torch.eye(4, dtype=torch.float64):
...     rfd.update(x)
>>> rfd.alpha                 # the discarded mass, added back as alpha * I
1.0
>>> torch.diagonal(rfd.covariance()).tolist()   # X^T X = I <= S^T S + alpha I
[1.0, 1.0, 1.0, 2.0]
"""

from __future__ import annotations

import numpy as np

from .fd import FrequentDirections

__all__ = ["RobustFrequentDirections"]


class RobustFrequentDirections(FrequentDirections):
    """FD plus the discarded mass ``alpha I``: ``A_hat = (reg + alpha) I + S^T S``.

    Same arguments and attributes as :class:`~agents.sketches.fd.FrequentDirections`, plus

    Attributes:
        alpha: sum of all shrink values (= :attr:`total_shrinkage`), added back as ``alpha * I``.
    """

    robust = True

    @property
    def alpha(self):
        return self._host_out(self._alpha)

    def log_det_ratio_bound(self):
        """``ln det(A_hat) - d ln(reg)`` exactly, from the log-determinant kept with the core
        inverse: ``ln det(A_hat) = d ln(rho) + ln det(M + rho I) - R ln(rho)``.

        RFD gives ``reg I + X^T X <= A_hat``, so this upper-bounds ``ln(|A|/|reg I|)`` of the
        un-sketched matrix (the step ``|A| <= |A_hat|`` of Wen et al. (2025), App. E.3).
        """
        rho = self.rho_all
        return self._host_out(self.d * np.log(rho / self._reg_host()) + self.core.logdet())
