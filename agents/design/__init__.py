"""Optimal experimental design on a finite arm set (pure linear algebra, no bandit logic).

* :func:`g_optimal_design` -- G-optimal (= D-optimal, Kiefer-Wolfowitz) design by
  Frank-Wolfe / Fedorov-Wynn with away steps; ``max_x ||x||^2_{V^-1} <= (1 + eps) r``.
* :func:`xy_optimal_design` -- the XY design of Soare et al. (2014): minimise the largest
  ``||x - x'||^2_{V^-1}`` over pairs of (active) arms, with a certified ``(1 + eps)`` gap.
* :func:`round_design` -- efficient apportionment of a design into ``n`` integer pulls.

``solve_g_design`` / ``solve_xy_design`` return a :class:`DesignResult` with the value,
a certified lower bound and iteration counts; ``g_value`` / ``xy_value`` evaluate any
design. Inputs may be numpy arrays, lists or torch tensors (tensor in, tensor out), and
may be rank-deficient (everything is computed in the span of the arms).
"""

from ._common import DesignResult
from .g_optimal import g_optimal_design, g_value, solve_g_design, spanning_subset
from .rounding import round_design, rounding_threshold
from .xy import solve_xy_design, xy_optimal_design, xy_value

__all__ = [
    "DesignResult",
    "g_optimal_design",
    "g_value",
    "round_design",
    "rounding_threshold",
    "solve_g_design",
    "solve_xy_design",
    "spanning_subset",
    "xy_optimal_design",
    "xy_value",
]
