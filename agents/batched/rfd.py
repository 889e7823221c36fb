"""B independent Robust Frequent Directions sketches (batched CBSCFD's estimator).

The batched twin of :class:`agents.sketches.rfd.RobustFrequentDirections`: FD per member
(:mod:`agents.batched.fd`) with the discarded mass added back, ``alpha_i <- alpha_i + sigma``
at every reduction (seed 000 Alg. 3 line 5), and ``A_hat_i = (reg + alpha_i) I + S_i^T S_i``.
"""

from __future__ import annotations


import torch

from .fd import BatchedFrequentDirections

__all__ = ["BatchedRobustFrequentDirections"]


class BatchedRobustFrequentDirections(BatchedFrequentDirections):
    """B RFD sketches; same arguments as :class:`~agents.batched.fd.BatchedFrequentDirections`.

    Attributes:
        alpha: float64 tensor ``(B,)``, each member's discarded mass added back as ``alpha I``.

    >>> import torch
    >>> rfd = BatchedRobustFrequentDirections(2, 4, 3, reg=1.0, fast=False, device=torch.device("cpu"),
    ...                                       dtype=torch.float64)
    >>> for x in torch.eye(4, dtype=torch.float64):
    ...     rfd.update(torch.stack([x, 3 * x]), torch.zeros(2, dtype=torch.float64))
    >>> rfd.alpha.tolist()
    [1.0, 9.0]
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.alpha = torch.zeros(self.batch_size, dtype=torch.float64, device=self.device)

    @property
    def rho(self) -> torch.Tensor:
        """``reg + alpha_i`` per member: ``(B,)``."""
        return self.reg + self.alpha

    def _on_shrink(self, members: torch.Tensor, delta: torch.Tensor) -> None:
        # Alg. 3 line 5: alpha <- alpha + sigma, inside the reduction (L is rebuilt with the new rho).
        self.alpha[members] += delta

    def log_det_ratio_bound(self) -> torch.Tensor:
        """Per member, ``ln det(A_hat_i) - d ln(reg)`` exactly from the Cholesky diagonal: ``(B,)``."""
        rho = self.rho
        m = torch.as_tensor(self.rows_in_use, device=self.device, dtype=torch.float64)
        logdiag = -torch.log(torch.diagonal(self._Linv, dim1=1, dim2=2)).sum(dim=1).to(torch.float64)
        return self.d * torch.log(rho / self.reg) + torch.where(
            m > 0, 2.0 * logdiag - m * torch.log(rho), torch.zeros_like(rho)
        )

    def memory_bytes(self) -> int:
        return super().memory_bytes() + self.alpha.element_size() * self.alpha.nelement()


