"""Static XY-allocation for fixed-confidence best-arm identification (Soare et al. 2014).

Jamieson (2018), Sec. 2.3 notes that the stopping rule (eq. 11) involves only the *differences*
``x - x'``, and G-allocation shrinks them only through the bound
``||x - x'||_{A^-1} <= 2 max_x ||x||_{A^-1}``. The XY-allocation targets them directly:
pulls follow a design on the arms minimising ``max_{x, x'} ||x - x'||^2_{V(pi)^-1}``
(:func:`agents.design.xy_optimal_design`); it is still static (reward-independent), so the
estimator, stopping rule and width are exactly those of :class:`~agents.GAllocation`.
"""

from __future__ import annotations

import torch

from ._torch import DeviceLike, DTypeLike
from .design import xy_optimal_design
from .g_allocation import GAllocation

__all__ = ["XYStatic"]


class XYStatic(GAllocation):
    """Static XY-allocation: pull along the XY-optimal design, stop by Jamieson (2018), eq. 11.

    Same interface and allocation rules as :class:`~agents.GAllocation` (``"tracking"``,
    ``"rounding"``, ``"greedy"``); the design minimises the largest uncertainty of an arm
    *difference* instead of an arm. ``"greedy"`` is eq. 14 with the max over the
    differences ``y = x - x'`` (Soare et al.'s greedy XY rule; O(K^3 r) per pull, small K
    only).

    Args:
        design_eps: certified accuracy of the XY design: ``max_y ||y||^2_{V^-1}`` within
            ``(1 + design_eps)`` of its certified lower bound
            (:func:`agents.design.xy_optimal_design`).

    Example:

    >>> import numpy as np
    >>> agent = XYStatic(delta=0.05, noise_std=0.1)
    >>> arms = np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.4]], dtype=np.float32)
    >>> agent.act(arms) in range(3)
    True
    >>> agent.weights.sum().item()
    1.0
    """

    name = "XYStatic"

    def __init__(
        self,
        *,
        delta: float = 0.05,
        noise_std: float = 1.0,
        c: float | None = None,
        allocation: str = "tracking",
        design_eps: float = 0.05,
        block: int | None = None,
        check_growth: float = 0.01,
        lam: float = 0.0,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
    ):
        super().__init__(
            delta=delta,
            noise_std=noise_std,
            c=c,
            allocation=allocation,
            design_eps=design_eps,
            block=block,
            check_growth=check_growth,
            lam=lam,
            d=d,
            device=device,
            dtype=dtype,
            seed=seed,
        )

    def _design(self) -> torch.Tensor:
        """The static XY design over all pairs of arms."""
        return xy_optimal_design(self.z, eps=self.design_eps)

    def _targets(self) -> torch.Tensor:
        """All non-zero pairwise differences ``z_a - z_b``, a < b (for the greedy rule)."""
        k = self.z.shape[0]
        a, b = torch.triu_indices(k, k, offset=1, device=self.z.device)
        diff = self.z[a] - self.z[b]
        return diff[(diff != 0).any(dim=1)]
