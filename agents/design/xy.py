"""XY-optimal design over arm differences (Soare et al. 2014; Jamieson (2018), eq. 18).

Problem. Pulls are allocated on the K arms (a design ``pi`` on the arm simplex), but what
must be small is the uncertainty of the *differences*:

    minimise  f(pi) = max_{y in Y} ||y||^2_{V(pi)^-1},      V(pi) = sum_i pi_i x_i x_i^T,

with ``Y = {x_a - x_b : a, b in S}`` for a target set ``S`` of arms: all arms for the static
XY-allocation, the surviving arms of a phase for XY-adaptive (Jamieson, 2018, eq. 18, relaxed to
designs as in eq. 13). The design lives on the arms, **not** on Y.

Method (a choice; the notes give none). ``f`` is convex (a max of matrix-fractional
functions) but not smooth, and plain Frank-Wolfe on the max-attaining ``y`` zig-zags
between active pairs without converging. We run Frank-Wolfe with away steps on the smooth
surrogate ``F_p(pi) = (sum_y q_y(pi)^p)^(1/p)``, ``q_y = ||y||^2_{V^-1}``, which satisfies
``f <= F_p <= |Y|^(1/p) f``, doubling ``p`` whenever Frank-Wolfe is (nearly) stationary
for the current ``p``. Its gradient is ``-h_i`` with weights ``mu_y ~ q_y^(p-1)``:

    h_i = sum_y mu_y (x_i^T V^-1 y)^2 = x_i^T V^-1 B_mu V^-1 x_i,   B_mu = sum_y mu_y y y^T.

Stopping rule: a *certificate* (Elfving-type duality). Write ``B_mu = C C^T`` with
columns ``sqrt(mu_y) y``. For every matrix U with ``||U^T x_i||_2 <= 1`` for all arms,
Cauchy-Schwarz gives, for every design pi' under which the y are estimable,

    tr(U^T C)^2 = (sum_i pi'_i (U^T x_i)^T (C^T V'^+ x_i))^2 <= tr(C^T V'^+ C) <= f(pi').

Taking ``U = V(pi)^-1 C / sqrt(max_i h_i)`` gives ``f* >= LB := phi_mu(pi)^2 / max_i h_i``
with ``phi_mu = sum_y mu_y q_y`` (this dominates the subgradient bound ``2 phi - max h``),
so ``f(pi) <= (1 + eps) LB`` proves ``pi`` is ``(1 + eps)``-optimal. At the optimum of
``F_p`` (where ``max_i h_i = phi``) with ``mu ~ q^(p-1)`` the bound is
``sum q^p / sum q^(p-1)``, which tends to ``f`` as ``p`` grows.

One direction (every y parallel, e.g. two active arms): the problem is c-optimal design,
solved exactly by Elfving's theorem (1952): ``min_pi y^T V(pi)^+ y = (min{||c||_1 :
sum_i c_i x_i = y})^2`` with ``pi_i = |c_i| / ||c||_1`` -- a linear program (scipy HiGHS).
Its optimum is typically *singular* (supported on fewer than r arms), which Frank-Wolfe
over non-singular designs only approaches slowly; hence the special case. Frank-Wolfe
designs may converge slowly for the same reason whenever the optimum is singular; they
then stop at ``max_iter`` with a warning, still reporting a valid ``bound``.

Steps use an exact (bisection) line search on ``log sum_y q_y^p`` along the segment, with
``q_y(t)`` in closed form by Sherman-Morrison. All pair quantities are batched through the
``|S| x |S|`` Gram matrix ``Z_S V^-1 Z_S^T`` (never a ``|Y| x d`` matrix): O(|S|^2 r +
K r^2) time per iteration, O(|S|^2) memory. Good for |S| up to a few thousand.

Designs are kept with ``V(pi)`` non-singular on span(arms) (the infimum over such designs
equals the minimum over all, by lower semicontinuity of the convex ``f``); an arm needed
only to keep ``V`` non-singular in a direction no ``y`` uses may keep a tiny weight.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .._warnings import DesignWarning, warn_user
from ._common import (
    DesignResult,
    SpanArms,
    as_weights,
    check_eps,
    check_max_iter,
    design_matrix,
    inverse_pd,
    pinv_quad,
    small_ops,
    span_arms,
    to_output,
)
from .g_optimal import _solve_g

__all__ = ["xy_optimal_design", "solve_xy_design", "xy_value", "active_indices"]

P0 = 16.0  # initial surrogate exponent (doubled on stationarity)
_MARGIN = 1e-6  # smallest allowed 1 + t (g - 1) on an away step (keeps V well-conditioned)


def active_indices(active: Any, k: int) -> torch.Tensor:
    """Validate ``active`` (None, a boolean mask of length K, or arm indices) -> sorted indices."""
    if active is None:
        return torch.arange(k)
    if isinstance(active, torch.Tensor):
        active = active.detach().cpu().numpy()
    arr = np.asarray(active)
    if arr.dtype == bool:
        if arr.shape != (k,):
            raise ValueError(f"active as a boolean mask must have shape ({k},), got {arr.shape}")
        idx = np.flatnonzero(arr)
    else:
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise ValueError(
                f"active must be None, a boolean mask or a 1-D array of arm indices, got {active!r}"
            )
        idx = np.unique(arr.astype(np.int64))
        if idx.size and (idx[0] < 0 or idx[-1] >= k):
            raise ValueError(f"active indices must lie in [0, {k}), got min {idx[0]} max {idx[-1]}")
    return torch.as_tensor(idx, dtype=torch.long)


def _pairs(zs: torch.Tensor) -> torch.Tensor:
    """Upper-triangular mask of the pairs (a < b) whose difference is non-zero."""
    dist = torch.cdist(zs, zs, compute_mode="donot_use_mm_for_euclid_dist")
    return torch.triu(dist > 0, diagonal=1)


def _pair_values(z: torch.Tensor, idx: torch.Tensor, vinv: torch.Tensor, mask: torch.Tensor):
    """``q_y = ||z_a - z_b||^2_{vinv}`` for the masked pairs, plus ``P = z vinv``."""
    p_all = z @ vinv
    zs = z[idx]
    gram = p_all[idx] @ zs.T
    dg = torch.diagonal(gram)
    q = (dg[:, None] + dg[None, :] - 2.0 * gram)[mask]
    return torch.clamp(q, min=0.0), p_all


def xy_value(arms: Any, weights: Any, active: Any = None) -> float:
    """``max_{a,b in active} ||x_a - x_b||^2_{V(w)^+}`` (``inf`` if some difference is not
    estimable)."""
    sa = span_arms(arms)
    w = torch.as_tensor(as_weights(weights, sa.z.shape[0]), dtype=sa.dtype, device=sa.device)
    idx = active_indices(active, sa.z.shape[0]).to(sa.device)
    mask = _pairs(sa.z[idx])
    if not bool(mask.any()):
        return 0.0
    a, b = torch.nonzero(mask, as_tuple=True)
    zs = sa.z[idx]
    return float(pinv_quad(design_matrix(sa.z, w), zs[a] - zs[b]).max())


def solve_xy_design(
    arms: Any, eps: float = 0.05, *, active: Any = None, **kwargs: Any
) -> DesignResult:
    """XY-optimal design with diagnostics (``value`` = achieved max, ``bound`` = certified LB).

    Args:
        arms: ``(K, d)`` arm matrix; the design is over all K arms.
        eps: stop once ``value <= (1 + eps) * bound`` (a certified ``(1 + eps)`` optimum).
        active: arms whose pairwise differences form Y (None = all; a boolean mask or indices).

    Keyword Args:
        init: starting weights (default: a G-optimal design, which has a non-singular V).
        max_iter: iteration budget (default ``500 + 20 r / eps``; a ``RuntimeWarning`` and
            the best design so far when exhausted, whose ``bound`` is still valid).

    Raises:
        ValueError: fewer than two distinct active arms (Y = {0}: nothing to distinguish),
            bad ``active``/``eps``/arms.
    """
    sa = span_arms(arms)
    with small_ops(sa.device):
        return _solve_xy(sa, eps, active=active, **kwargs)


def _solve_xy(
    sa: SpanArms,
    eps: float = 0.05,
    *,
    active: Any = None,
    init: Any = None,
    max_iter: int | None = None,
) -> DesignResult:
    eps = check_eps(eps)
    z, r = sa.z, sa.rank
    k = z.shape[0]
    idx = active_indices(active, k).to(sa.device)
    if idx.numel() < 2:
        raise ValueError(
            f"the XY design needs at least 2 active arms (got {idx.numel()}): "
            "with fewer there is no "
            "difference to estimate"
        )
    mask = _pairs(z[idx])
    n_pairs = int(mask.sum())
    if n_pairs == 0:
        raise ValueError(
            "all active arms are identical vectors: every difference is 0, so there is nothing to "
            "distinguish (any design is optimal); dedupe the arms or stop"
        )
    max_iter = check_max_iter(max_iter, 500 + int(20 * r / eps))

    if r == 1:
        # One dimension: q_y = y^2 / V with V = sum pi_i z_i^2, minimised by all mass on the
        # longest arm, exactly.
        sq = z[:, 0] ** 2
        w = torch.zeros(k, dtype=z.dtype, device=z.device)
        w[int(torch.argmax(sq))] = 1.0
        vinv = 1.0 / sq.max()
        q, _ = _pair_values(z, idx, vinv.reshape(1, 1), mask)
        value = float(q.max())
        return DesignResult(to_output(w, sa.is_tensor, sa.device), value, value, 1, 0, True)

    zs_all = z[idx]
    dirs = zs_all - zs_all[0]
    if int(torch.linalg.matrix_rank(dirs)) <= 1:
        return _elfving(sa, idx, mask)

    if init is None:
        w = torch.as_tensor(_solve_g(sa, 0.1).weights, dtype=z.dtype, device=z.device)
    else:
        w = torch.as_tensor(as_weights(init, k, name="init"), dtype=z.dtype, device=z.device)
    if inverse_pd(design_matrix(z, w)) is None:
        raise ValueError(
            "init: the initial design is singular on span(arms); give weights whose arms span them"
        )

    p = P0
    p_max = 4.0 * math.log(n_pairs + 1.0) / eps + 16.0
    pinned = torch.zeros(k, dtype=torch.bool, device=z.device)
    n_iter, converged = 0, False
    f = lb = math.nan
    while True:
        vinv = inverse_pd(design_matrix(z, w))
        if vinv is None:  # line search keeps V > 0; guard against round-off anyway
            raise RuntimeError("XY design lost positive definiteness; report this arm set")
        q, p_all = _pair_values(z, idx, vinv, mask)
        f = float(q.max())
        # mu_y ~ q_y^(p-1), computed in logs relative to the max (no overflow)
        logmu = (p - 1.0) * torch.log(torch.clamp(q / f, min=1e-300))
        mu = torch.softmax(logmu, dim=0)
        phi = float((mu * q).sum())
        m_full = torch.zeros(mask.shape, dtype=z.dtype, device=z.device)
        m_full[mask] = mu
        m_sym = m_full + m_full.T
        lap = torch.diag(m_sym.sum(dim=1)) - m_sym  # sum_pairs mu (e_a - e_b)(e_a - e_b)^T
        zs = z[idx]
        b_mu = zs.T @ lap @ zs
        h = ((p_all @ b_mu) * p_all).sum(dim=1)
        kf = int(torch.argmax(h))
        hk = float(h[kf])
        lb = phi * phi / hk  # Elfving-dual certificate (see module docstring)
        if f <= (1.0 + eps) * lb:
            converged = True
            break
        if n_iter >= max_iter:
            break
        n_iter += 1
        fw_gap = (hk - phi) / phi
        cand = (w > 0) & ~pinned
        away_gap, j = -math.inf, -1
        if bool(cand.any()):
            h_c = torch.where(cand, h, torch.full_like(h, math.inf))
            j = int(torch.argmin(h_c))
            away_gap = (phi - float(h[j])) / phi
        if max(fw_gap, away_gap) <= eps / 4.0:
            # (nearly) stationary for this p, yet not certified: sharpen the surrogate
            if p >= p_max:
                break  # cannot sharpen further: report non-convergence below
            p = min(2.0 * p, p_max)
            continue
        forward = fw_gap >= away_gap
        arm = kf if forward else j
        u = vinv @ z[arm]
        g_arm = float(z[arm] @ u)
        c = z[idx] @ u
        e = ((c[:, None] - c[None, :]) ** 2)[mask]
        # The line search only needs the pairs that can carry weight in sum q^p: those within
        # a factor exp(-40/p) of the max now, plus the pairs this step pushes up fastest.
        # (A speed heuristic only: the certificate above always uses every pair.)
        keep = logmu >= -40.0 * (p - 1.0) / p
        if int(keep.sum()) < q.numel():
            keep |= e >= torch.quantile(e, 0.99) if e.numel() > 100 else torch.ones_like(keep)
            q_ls, e_ls = q[keep], e[keep]
        else:
            q_ls, e_ls = q, e
        if forward:
            lo, hi = 0.0, 1.0 - 1e-9
            margin_limited = False
        else:
            wj = float(w[arm])
            lo = -wj / (1.0 - wj) if wj < 1.0 else -1e300
            margin_limited = False
            if g_arm > 1.0 and 1.0 + lo * (g_arm - 1.0) < _MARGIN:
                lo = (_MARGIN - 1.0) / (g_arm - 1.0)
                margin_limited = True
            hi = 0.0
        t = _line_search(q_ls, e_ls, g_arm, p, lo, hi, forward)
        w = (1.0 - t) * w
        w[arm] += t
        if not forward and t == lo:
            if margin_limited:
                pinned[arm] = True  # essential for span(arms) only: keep its tiny weight
            else:
                w[arm] = 0.0  # drop step
        w = torch.clamp(w, min=0.0)
        w = w / w.sum()
    if not converged:
        warn_user(
            f"XY design not certified within {max_iter} iterations "
            f"(value {f:.6g}, lower bound {lb:.6g}, "
            f"eps={eps}); returning the best design found. Raise max_iter or eps.",
            DesignWarning,
        )
    return DesignResult(
        weights=to_output(w, sa.is_tensor, sa.device),
        value=f,
        bound=max(lb, 0.0),
        rank=r,
        n_iter=n_iter,
        converged=converged,
        extra={"p": p, "n_pairs": n_pairs},
    )


def _elfving(sa: SpanArms, idx: torch.Tensor, mask: torch.Tensor) -> DesignResult:
    """Exact c-optimal design for the longest target difference (all targets are parallel)."""
    from scipy.optimize import linprog

    z = sa.z
    zs = z[idx]
    a, b = torch.nonzero(mask, as_tuple=True)
    diffs = zs[a] - zs[b]
    y = diffs[int(torch.argmax((diffs * diffs).sum(dim=1)))]
    zn = z.detach().cpu().numpy().astype(np.float64)
    yn = y.detach().cpu().numpy().astype(np.float64)
    k = zn.shape[0]
    # min sum(c+ + c-)  s.t.  Z^T (c+ - c-) = y,  c+, c- >= 0
    res = linprog(
        np.ones(2 * k), A_eq=np.hstack([zn.T, -zn.T]), b_eq=yn, bounds=(0, None), method="highs"
    )
    if res.status != 0:  # cannot happen: y = z_a - z_b is always representable
        raise RuntimeError(f"Elfving LP failed ({res.message}); report this arm set")
    c = res.x[:k] - res.x[k:]
    w = np.abs(c)
    w[w < 1e-12 * w.max()] = 0.0
    w = w / w.sum()
    wt = torch.as_tensor(w, dtype=z.dtype, device=z.device)
    value = float(pinv_quad(design_matrix(z, wt), diffs).max())
    bound = float(res.fun) ** 2 * float((diffs * diffs).sum(dim=1).max() / (y @ y))
    return DesignResult(
        to_output(wt, sa.is_tensor, sa.device),
        value,
        min(bound, value),
        sa.rank,
        0,
        True,
        extra={"method": "elfving-lp"},
    )


def _line_search(
    q: torch.Tensor, e: torch.Tensor, g: float, p: float, lo: float, hi: float, forward: bool
) -> float:
    """Minimise ``L(t) = log sum_y q_y(t)^p`` on ``[lo, hi]`` (convex in t) via the root of L'.

    Along ``V(t) = (1 - t) V + t x x^T`` (Sherman-Morrison), with ``D = 1 + t (g - 1)``:
    ``q_y(t) = (q_y - t e_y / D) / (1 - t)`` and ``q_y'(t) = (q_y(t) - e_y / D^2) / (1 - t)``,
    where ``e_y = (x^T V^-1 y)^2`` and ``g = ||x||^2_{V^-1}``.
    """

    def slope(t: float) -> float:
        d = 1.0 + t * (g - 1.0)
        qt = torch.clamp((q - t * e / d) / (1.0 - t), min=1e-300)
        dq = (qt - e / (d * d)) / (1.0 - t)
        s = torch.softmax(p * torch.log(qt / qt.max()), dim=0)
        return float((s * dq / qt).sum())

    s0 = slope(0.0)
    if forward:
        s_end = slope(hi)
        if s_end <= 0.0:
            return hi
        a, fa, b, fb = 0.0, s0, hi, s_end
    else:
        s_end = slope(lo)
        if s_end >= 0.0:
            return lo
        a, fa, b, fb = lo, s_end, 0.0, s0
    if not (fa < 0.0 < fb):  # not a descent direction after all (round-off): stay put
        return 0.0
    # Illinois (modified regula falsi) on the increasing slope; an exact line search is not
    # needed, only a reduction of |L'| by a good factor, which takes a handful of evaluations.
    tol = 1e-2 * abs(s0)
    side = 0
    for _ in range(40):
        c = b - fb * (b - a) / (fb - fa)
        if not (a < c < b):
            c = 0.5 * (a + b)
        fc = slope(c)
        if abs(fc) <= tol or b - a <= 1e-12 * max(1.0, abs(c)):
            return c
        if fc > 0.0:
            b, fb = c, fc
            if side == 1:
                fa *= 0.5
            side = 1
        else:
            a, fa = c, fc
            if side == -1:
                fb *= 0.5
            side = -1
    return 0.5 * (a + b)


def xy_optimal_design(arms: Any, eps: float = 0.05, *, active: Any = None, **kwargs: Any):
    """A certified ``(1 + eps)``-approximate XY-optimal design on the arms.

    Minimises ``max_{a, b in active} ||x_a - x_b||^2_{V(pi)^-1}`` over designs ``pi`` on all
    K arms (static XY-allocation of Soare et al. 2014 with ``active=None``; the phase
    allocation of XY-adaptive, Jamieson (2018), eq. 18, with ``active`` = the surviving arms).
    Returns one weight per arm (numpy, or a tensor for tensor input) on the simplex.
    Keyword arguments go to :func:`solve_xy_design`.

    Example (two orthogonal arms: ``||e_1 - e_2||^2_{V^-1} = 1/pi_1 + 1/pi_2``, minimised by
    the uniform design, value 4):

    >>> import numpy as np
    >>> xy_optimal_design(np.eye(2), eps=1e-3).round(3).tolist()
    [0.5, 0.5]
    """
    return solve_xy_design(arms, eps, active=active, **kwargs).weights
