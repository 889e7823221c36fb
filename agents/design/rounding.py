"""Rounding a design into integer pulls: efficient apportionment (Pukelsheim & Rieder 1992).

Jamieson (2018) (after eq. 13) defers rounding to Soare et al.; this is the standard procedure
(Pukelsheim, *Optimal Design of Experiments*, ch. 12), not in the notes. For weights ``w``
with support size ``l`` and a budget ``n``:

1. start from ``n_i = ceil((n - l/2) w_i)`` on the support (0 elsewhere);
2. while ``sum n_i < n``: add a pull to ``argmin_i n_i / w_i``;
   while ``sum n_i > n``: remove one from ``argmax_i (n_i - 1) / w_i``;
3. (safety net) while ``max_i (n_i - 1)/w_i > min_j n_j / w_j``: move a pull from the
   former to the latter.

The result satisfies the *efficiency condition* ``max_i (n_i - 1)/w_i <= min_j n_j/w_j``
(step 3 enforces it even if steps 1-2 fell short). Summing ``n_i - 1 <= nu w_i`` over the
support, with ``nu = min_j n_j / w_j``, gives ``nu >= n - l``, hence the guarantee

    n_i >= (n - l) w_i  for every arm,   so   sum_i n_i x_i x_i^T  >=  (n - l) V(w)

and every quadratic form of the rounded allocation is within the factor ``n / (n - l)`` of
the continuous design's: ``n max_x ||x||^2_{A^-1} <= n/(n - l) * g(w)``. With
``n >= l (1 + eps) / eps`` the rounded design keeps a ``(1 + eps)`` guarantee (it is
``rounding_threshold(l, eps)``). The same bound holds for the XY criterion.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import torch

from .._validate import Interval, check_value
from ._common import as_weights

__all__ = ["round_design", "rounding_threshold", "MAX_PULLS"]

#: largest budget :func:`round_design` accepts: the apportionment computes ``(n - l/2) w_i`` in
#: float64, exact for integers up to 2**53 (beyond, the fix-up loops would chase round-off)
MAX_PULLS = 2**53


def rounding_threshold(support_size: int, eps: float) -> int:
    """Smallest ``n`` with ``n / (n - l) <= 1 + eps``: ``ceil(l (1 + eps) / eps)``."""
    eps = check_value("eps", eps, [Interval(numbers.Real, 0, None, closed="neither")])
    return int(math.ceil(support_size * (1.0 + eps) / eps - 1e-9))


def round_design(weights: Any, n: int):
    """Round a design (one weight per arm) into ``n`` integer pulls (efficient apportionment).

    Args:
        weights: non-negative weights, one per arm (renormalised to sum 1); numpy array,
            list or torch tensor.
        n: total number of pulls (int, ``0 <= n <= 2**53``).

    Returns:
        Integer pull counts, one per arm, summing to ``n``: a numpy ``int64`` array, or a
        ``torch.long`` tensor on the weights' device if ``weights`` is a tensor. Arms with
        zero weight get 0 pulls. For ``n >= l`` (``l`` = support size) every count satisfies
        ``n_i >= (n - l) w_i``; for ``n < l`` some support arms get 0 pulls (no guarantee).
        Ties are broken towards the lowest index, so the result is deterministic.

    Example:

    >>> round_design([0.5, 0.3, 0.2, 0.0], 10).tolist()
    [5, 3, 2, 0]
    >>> round_design([1/3, 1/3, 1/3], 4).tolist()
    [2, 1, 1]
    """
    is_tensor = isinstance(weights, torch.Tensor)
    device = weights.device if is_tensor else None
    w = as_weights(weights)
    n = check_value(
        "n",
        n,
        [
            Interval(
                numbers.Integral,
                0,
                MAX_PULLS,
                closed="both",
                hint="the number of pulls, at most 2**53: counts beyond are not exact in float64",
            )
        ],
    )
    counts = _apportion(w, n)
    if is_tensor:
        return torch.as_tensor(counts, dtype=torch.long, device=device)
    return counts


def _apportion(w: np.ndarray, n: int) -> np.ndarray:
    support = np.flatnonzero(w > 0)
    ws = w[support]
    l = support.size
    m = np.maximum(np.ceil((n - l / 2.0) * ws), 0.0).astype(np.int64)
    # Step 2: fix the total. Each pass moves one pull; the initial discrepancy is <= l/2 + 1
    # so this is O(l) passes of O(l) work.
    total = int(m.sum())
    while total < n:
        m[int(np.argmin(m / ws))] += 1
        total += 1
    while total > n:
        cand = np.where(m > 0, (m - 1) / ws, -np.inf)
        m[int(np.argmax(cand))] -= 1
        total -= 1
    # Step 3: enforce the efficiency condition max (m_i - 1)/w_i <= min m_j/w_j.
    for _ in range(4 * l + 4 * n + 4):
        hi = np.where(m > 0, (m - 1) / ws, -np.inf)
        i, j = int(np.argmax(hi)), int(np.argmin(m / ws))
        if hi[i] <= m[j] / ws[j] * (1 + 1e-12) or i == j:
            break
        m[i] -= 1
        m[j] += 1
    out = np.zeros(w.size, dtype=np.int64)
    out[support] = m
    return out
