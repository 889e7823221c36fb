"""G-optimal design by Frank-Wolfe / Fedorov-Wynn with away steps (Jamieson, 2018, eq. 13).

Problem (Jamieson, 2018, eq. 13, squared): over designs ``pi`` on the simplex of the K arms,

    minimise  g(pi) = max_i ||x_i||^2_{V(pi)^-1},      V(pi) = sum_i pi_i x_i x_i^T.

Kiefer-Wolfowitz (not in Jamieson (2018); Lattimore & Szepesvari, *Bandit Algorithms*, Thm 21.1):
G-optimal = D-optimal (maximise ``log det V(pi)``), and the optimum is exactly ``g = r``,
the dimension of span(arms). Since ``sum_i pi_i ||x_i||^2_{V^-1} = tr(I_r) = r`` for every
design, ``g(pi) >= r`` always, so ``g(pi) <= (1 + eps) r`` certifies a ``(1 + eps)``-optimal
G-design (and a D-design with ``log det V(pi) >= log det V(pi') - eps r`` for every pi').

Algorithm (Fedorov 1972, Wynn 1970; away steps of Todd & Yildirim 2007): Frank-Wolfe on
``log det V``, whose gradient is ``(||x_i||^2_{V^-1})_i``.

* forward step: ``k = argmax_i g_i``; ``pi <- (1 - gamma) pi + gamma e_k``;
* away step: ``j = argmin_{i in supp} g_i``; ``pi <- (1 - gamma) pi + gamma e_j`` with
  ``gamma < 0``, clipped at ``-pi_j / (1 - pi_j)`` (a *drop step*: arm j leaves the support);
* exact line search on ``log det``: ``gamma = (g/r - 1) / (g - 1)`` for the chosen arm
  (derivative of ``(r - 1) log(1 - gamma) + log(1 + gamma (g - 1))``; for an away arm with
  ``g <= 1`` the objective improves all the way, so it is dropped);
* choose the away step when ``1 - g_j / r > g_k / r - 1`` (the larger duality gap);
* ``V^-1`` and all ``g_i`` are updated by Sherman-Morrison in O(K r + r^2) per step,
  recomputed from scratch every ``refresh`` steps and always before declaring convergence.

Away steps make the weights of points that do not belong to the optimal support exactly 0
(e.g. a redundant interior arm), and keep the support small, which matters for rounding.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch

from .._validate import Interval, check_value
from .._warnings import DesignWarning, warn_user
from ._common import (
    DesignResult,
    as_weights,
    check_eps,
    check_max_iter,
    design_matrix,
    inverse_pd,
    leverages,
    small_ops,
    span_arms,
    to_output,
)

__all__ = ["g_optimal_design", "solve_g_design", "g_value", "spanning_subset"]


def spanning_subset(z: torch.Tensor) -> list[int]:
    """Indices of ``r`` arms spanning span(z), chosen greedily by largest residual norm.

    Pivoted Gram-Schmidt: pick the arm farthest from the span of those already picked
    (ties: lowest index). O(K r^2). Used to start Frank-Wolfe from a non-singular design
    with a small support (in the spirit of Kumar & Yildirim 2005's initialisation).
    """
    resid = z.clone()
    r = z.shape[1]
    picked: list[int] = []
    for _ in range(r):
        norms = (resid * resid).sum(dim=1)
        i = int(torch.argmax(norms))
        if float(norms[i]) <= 0.0:
            break
        q = resid[i] / torch.sqrt(norms[i])
        resid = resid - torch.outer(resid @ q, q)
        picked.append(i)
    return picked


def _init_weights(z: torch.Tensor, init: Any) -> torch.Tensor:
    k = z.shape[0]
    if isinstance(init, str):
        if init == "uniform":
            return torch.full((k,), 1.0 / k, dtype=z.dtype, device=z.device)
        if init == "basis":
            w = torch.zeros(k, dtype=z.dtype, device=z.device)
            idx = spanning_subset(z)
            w[idx] = 1.0 / len(idx)
            return w
        raise ValueError(f"init must be 'basis', 'uniform' or an array of K weights, got {init!r}")
    w = torch.as_tensor(as_weights(init, k, name="init"), dtype=z.dtype, device=z.device)
    return w


def solve_g_design(
    arms: Any, eps: float = 0.01, *, rank_eps: float | None = None, **kwargs: Any
) -> DesignResult:
    """Frank-Wolfe / Fedorov-Wynn G-optimal design, with diagnostics.

    Args:
        arms: ``(K, d)`` arm matrix (numpy array, nested list or torch tensor). May be
            rank-deficient: the design is computed in span(arms) and the target is its rank.
        eps: stop once ``max_i ||x_i||^2_{V^-1} <= (1 + eps) r``.
        rank_eps: machine epsilon for the rank test (default: that of the arms' dtype).

    Keyword Args:
        init: ``"basis"`` (uniform on r spanning arms, default: small support),
            ``"uniform"`` (all K arms) or K initial weights whose design spans the arms.
        away_steps: use away/drop steps (default); ``False`` gives plain Fedorov-Wynn.
        max_iter: iteration budget (default ``1000 + 200 r / eps``); when exhausted a
            ``RuntimeWarning`` is issued and the best design so far is returned.
        refresh: recompute ``V^-1`` from scratch every this many steps (numerical hygiene).

    Returns:
        :class:`~agents.design.DesignResult` (``value`` = achieved ``max g``,
        ``bound`` = r, the optimal value).

    Degenerate inputs: K = 1 gives weight 1 (value 1 = r); duplicate arms are allowed
    (weight goes to the first copy Frank-Wolfe picks); zero arms get weight 0 (with the
    default ``init``); all-zero or NaN arms raise ``ValueError``.
    """
    sa = span_arms(arms, rank_eps=rank_eps)
    with small_ops(sa.device):
        return _solve_g(sa, eps, **kwargs)


def _solve_g(
    sa,
    eps: float = 0.01,
    *,
    init: Any = "basis",
    away_steps: bool = True,
    max_iter: int | None = None,
    refresh: int = 50,
) -> DesignResult:
    eps = check_eps(eps)
    z, r = sa.z, sa.rank
    k = z.shape[0]
    max_iter = check_max_iter(max_iter, 1000 + int(200 * r / eps))
    refresh = check_value("refresh", refresh, [Interval(numbers.Integral, 1, None)])

    if r == 1:
        # One dimension: V = sum_i pi_i z_i^2 is maximised by all mass on the longest arm,
        # and then g_i = z_i^2 / z_max^2 <= 1 = r: exactly optimal.
        sq = z[:, 0] ** 2
        w = torch.zeros(k, dtype=z.dtype, device=z.device)
        w[int(torch.argmax(sq))] = 1.0
        value = float((sq / sq.max()).max())
        return DesignResult(to_output(w, sa.is_tensor, sa.device), value, 1.0, 1, 0, True)

    w = _init_weights(z, init)
    vinv = inverse_pd(design_matrix(z, w))
    if vinv is None:
        raise ValueError(
            "init: the initial design is singular on span(arms); give weights whose arms span them"
        )
    g = leverages(z, vinv)
    target = (1.0 + eps) * r
    n_iter, converged = 0, False
    since_refresh = 0
    while True:
        kmax = int(torch.argmax(g))
        gk = float(g[kmax])
        if gk <= target:
            # confirm on a freshly computed inverse before declaring victory
            vinv = inverse_pd(design_matrix(z, w))
            g = leverages(z, vinv)
            kmax = int(torch.argmax(g))
            gk = float(g[kmax])
            since_refresh = 0
            if gk <= target:
                converged = True
                break
        if n_iter >= max_iter:
            break
        n_iter += 1
        forward_gap = gk / r - 1.0
        step_arm, gamma = kmax, (gk / r - 1.0) / (gk - 1.0)  # exact line search, forward
        drop = False
        if away_steps:
            support = w > 0
            g_supp = torch.where(support, g, torch.full_like(g, math.inf))
            j = int(torch.argmin(g_supp))
            gj, wj = float(g[j]), float(w[j])
            if 1.0 - gj / r > forward_gap and wj < 1.0:
                gamma_min = -wj / (1.0 - wj)  # drop step: arm j leaves the support
                gamma_j = gamma_min if gj <= 1.0 else max((gj / r - 1.0) / (gj - 1.0), gamma_min)
                step_arm, gamma, drop = j, gamma_j, gamma_j == gamma_min
        gs = float(g[step_arm])
        denom = 1.0 - gamma + gamma * gs  # = 1 + gamma (g - 1) > 0 on the feasible segment
        if denom <= 1e-12 or gamma >= 1.0:
            # numerically degenerate step: recompute and retry from a fresh inverse
            vinv = inverse_pd(design_matrix(z, w))
            g = leverages(z, vinv)
            continue
        u = vinv @ z[step_arm]
        c = z @ u
        # Sherman-Morrison for V' = (1 - gamma) V + gamma z z^T
        vinv = (vinv - (gamma / denom) * torch.outer(u, u)) / (1.0 - gamma)
        g = (g - (gamma / denom) * c * c) / (1.0 - gamma)
        w = (1.0 - gamma) * w
        w[step_arm] += gamma
        if drop:
            w[step_arm] = 0.0  # exactly: the arm left the support (not a rounding residue)
        w = torch.clamp(w, min=0.0)
        since_refresh += 1
        if since_refresh >= refresh:
            w = w / w.sum()
            vinv = inverse_pd(design_matrix(z, w))
            if vinv is None:  # cannot happen with exact arithmetic: line search keeps V > 0
                raise RuntimeError("Frank-Wolfe lost positive definiteness; report this arm set")
            g = leverages(z, vinv)
            since_refresh = 0
    w = w / w.sum()
    if not converged:
        warn_user(
            f"G-optimal design did not reach max g <= (1 + eps) r = {target:.4g} "
            f"in {max_iter} iterations "
            f"(reached {gk:.4g}); returning the best design found. Raise max_iter or eps.",
            DesignWarning,
        )
    return DesignResult(
        weights=to_output(w, sa.is_tensor, sa.device),
        value=gk,
        bound=float(r),
        rank=r,
        n_iter=n_iter,
        converged=converged,
    )


def g_optimal_design(arms: Any, eps: float = 0.01, **kwargs: Any):
    """A ``(1 + eps)``-approximate G-optimal (equivalently D-optimal) design on the arms.

    Returns one weight per arm (numpy array, or a tensor if ``arms`` is a tensor),
    non-negative and summing to 1, with ``max_x ||x||^2_{V(pi)^-1} <= (1 + eps) r``,
    where ``r = rank(arms)`` (``= d`` for arms spanning R^d) and ``V^-1`` is taken in
    span(arms). Keyword arguments go to :func:`solve_g_design`.

    Example (the standard basis: the uniform design is G-optimal, value d):

    >>> import numpy as np
    >>> g_optimal_design(np.eye(3)).round(6).tolist()
    [0.333333, 0.333333, 0.333333]
    >>> w = g_optimal_design(np.array([[1.0, 0.0], [0.0, 1.0], [0.2, 0.2]]))
    >>> w.round(6).tolist()    # the interior arm gets no weight
    [0.5, 0.5, 0.0]
    """
    return solve_g_design(arms, eps, **kwargs).weights


def g_value(arms: Any, weights: Any) -> float:
    """``max_x ||x||^2_{V(w)^-1}`` in span(arms) (``inf`` if ``V(w)`` is singular on the span)."""
    sa = span_arms(arms)
    w = torch.as_tensor(as_weights(weights, sa.z.shape[0]), dtype=sa.dtype, device=sa.device)
    vinv = inverse_pd(design_matrix(sa.z, w))
    if vinv is None:
        return math.inf
    return float(leverages(sa.z, vinv).max())
