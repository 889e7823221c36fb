"""Robust Frequent Directions (seed 000 Alg. 3; "SCFD", Alg. 1 of Chen et al. 2020).

RFD runs Frequent Directions (:mod:`agents.sketches.fd`) and adds the discarded mass back as a
multiple of the identity: ``X^T X`` is approximated by ``S^T S + alpha I`` with

    alpha  <-  alpha + sigma          (every reduction, sigma its shrink value; Alg. 3 line 5)

so that, since FD gives ``0 <= X^T X - S^T S <= alpha I``,

    S^T S  <=  X^T X  <=  S^T S + alpha I,
    A_hat_t = (reg + alpha_t) I + S_t^T S_t   grows monotonically in PSD order (seed 000 Thm. 7).

Settled slips:

* ``alpha += sigma`` (the full shrink value), as in seed 000 Alg. 3 and its proofs
  (``sum_i alpha_i = sum_i sigma_bar_i``, App. E.3), i.e. Chen et al.'s SCFD. Luo et al.'s
  original RFD adds ``sigma / 2`` (error centred), which loses both the upper bound
  ``X^T X <= S^T S + alpha I`` and the monotonicity the bandit proofs use; we use ``sigma``.
* Alg. 3 line 7 prints the first entry of M as ``1/(lambda + sigma_l^2 - sigma + alpha)``; it is
  ``1/(lambda + sigma_1^2 - sigma + alpha)`` (v1's Alg. 5 has sigma_1). Here M is kept implicitly
  through the inverse Cholesky factor of ``S S^T + (reg + alpha) I``.
* The prefactor of the Woodbury inverse is ``1/(reg + alpha)``, not the ``1/lambda`` of seed 000
  eq. 5 / Alg. 5 line 8 (that is the FD case alpha = 0).

It is the same class as FD (one implementation, batch dimension first) with ``robust = True``:
the reduction adds its shrink value to ``alpha`` before the diagonal factor is rebuilt.

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
import torch

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
        return self._one(self._alpha)

    def log_det_ratio_bound(self):
        """``ln det(A_hat) - d ln(reg)`` exactly, O(m) from the inverse factor's diagonal.

        RFD gives ``reg I + X^T X <= A_hat``, so this upper-bounds ``ln(|A|/|reg I|)`` of the
        un-sketched matrix (the step ``|A| <= |A_hat|`` of seed 000 App. E.3).
        """
        rho = self.rho_all
        m = self._m.astype(np.float64)
        logdiag = -torch.log(torch.diagonal(self._Linv, dim1=1, dim2=2)).sum(dim=1).double().cpu().numpy()
        out = self.d * np.log(rho / self.reg) + np.where(m > 0, 2.0 * logdiag - m * np.log(rho), 0.0)
        return self._one(out)


