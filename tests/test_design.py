"""agents.design: G-optimal (Frank-Wolfe / Fedorov-Wynn), XY designs, rounding.

Every check is computed independently here in numpy (pseudo-inverses, brute-force grids,
closed forms), never by the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from agents.design import (
    g_optimal_design,
    g_value,
    round_design,
    rounding_threshold,
    solve_g_design,
    solve_xy_design,
    xy_optimal_design,
    xy_value,
)


# -- independent reference computations ---------------------------------------------
def np_rank(x: np.ndarray) -> int:
    return int(np.linalg.matrix_rank(x))


def np_span_coordinates(x: np.ndarray) -> np.ndarray:
    """``U_r`` of the thin SVD ``x = U S V^T``, ``r = np_rank(x)``: row i is arm i in an
    orthonormal frame of span(x) scaled by ``S_r^-1`` (every quantity below is invariant
    under an invertible change of coordinates of the span, so the frame is free)."""
    u, _, _ = np.linalg.svd(x, full_matrices=False)
    return u[:, : np_rank(x)]


def np_quad(x: np.ndarray, w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``y_j^T V(w)^+ y_j`` for ``y_j = sum_i c_ji x_i`` (inf where y_j is outside range(V)).

    Computed in the span's coordinates ``U_r`` (``x = U_r S_r V_r^T``): there
    ``V(w) = V_r S_r M(w) S_r V_r^T`` with ``M(w) = U_r^T W U_r``, so
    ``y^T V(w)^+ y = (c U_r) M(w)^+ (c U_r)^T``. ``M`` is as well conditioned as the design
    (``M <= I``), whereas ``V(w)`` in the arms' coordinates carries ``cond(x)^2``: a full-rank
    square arm set with ``cond(x) > 1e5`` would look singular there.
    """
    z = np_span_coordinates(x)
    m = (z * w[:, None]).T @ z
    evals, evecs = np.linalg.eigh(m)
    keep = evals > evals.max() * 1e-10
    coef = (c @ z) @ evecs
    q = (coef[:, keep] ** 2 / evals[keep]).sum(axis=1)
    norms = np.linalg.norm(coef, axis=1).clip(1e-300)
    out = np.abs(coef[:, ~keep]).max(axis=1, initial=0.0) > 1e-7 * norms
    q[out] = np.inf
    return q


def np_g(x, w):
    return float(np_quad(x, w, np.eye(len(x))).max())


def np_xy(x, w, active=None):
    idx = np.arange(len(x)) if active is None else np.asarray(active)
    a, b = np.triu_indices(len(idx), 1)
    c = np.zeros((len(a), len(x)))
    c[np.arange(len(a)), idx[a]] += 1.0
    c[np.arange(len(a)), idx[b]] -= 1.0
    c = c[np.linalg.norm(c @ x, axis=1) > 0]
    return float(np_quad(x, w, c).max())


def logdet_span(x, w):
    """log det of V(w) restricted to span(x): ``2 sum_j log s_j + log det M(w)`` (see
    :func:`np_quad`), from the eigenvalues of the well-conditioned ``M``. A design that leaves
    part of the span unweighted (Dirichlet weights down to 1e-17) has an eigenvalue that
    rounds to 0 or below: its log det is -inf up to rounding, clamped at log(tiny)."""
    z = np_span_coordinates(x)
    s = np.linalg.svd(x, compute_uv=False)[: z.shape[1]]
    evals = np.linalg.eigvalsh((z * w[:, None]).T @ z)
    return float(2 * np.log(s).sum() + np.log(np.maximum(evals, np.finfo(np.float64).tiny)).sum())


def arm_set(seed: int, k: int, d: int, kind: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "gauss":
        return rng.standard_normal((k, d))
    if kind == "scaled":  # very different norms and a stretched direction
        return (
            rng.standard_normal((k, d))
            * rng.uniform(0.01, 10.0, size=(k, 1))
            * np.linspace(1, 20, d)
        )
    if kind == "lowrank":
        r = max(1, d // 2)
        return rng.standard_normal((k, r)) @ rng.standard_normal((r, d))
    if kind == "dups":  # duplicated arms and a zero arm
        base = rng.standard_normal((max(1, k // 2), d))
        x = base[np.arange(k) % len(base)].copy()
        x[0] = 0.0 if k > 1 else x[0]
        return x
    raise AssertionError(kind)


def check_simplex(w, k):
    w = np.asarray(w)
    assert w.shape == (k,)
    assert np.all(w >= 0)
    assert abs(w.sum() - 1.0) < 1e-9


# -- G-optimal design ------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    k=st.one_of(st.integers(1, 60), st.integers(1, 1000)),
    d=st.one_of(st.integers(1, 8), st.integers(1, 50)),
    kind=st.sampled_from(["gauss", "scaled", "lowrank", "dups"]),
    eps=st.sampled_from([0.5, 0.1, 0.01]),
    init=st.sampled_from(["basis", "uniform"]),
    seed=st.integers(0, 2**31 - 1),
)
# square arm sets with cond(x) ~ 1e5 and 2e5: full rank, but V(w) in the arms' coordinates has
# condition number cond(x)^2 > 1e10 (the check must work in the span's coordinates)
@example(k=13, d=13, kind="scaled", eps=0.1, init="basis", seed=13)
@example(k=13, d=13, kind="gauss", eps=0.01, init="uniform", seed=1307)
def test_g_design_meets_kiefer_wolfowitz_bound_on_random_sets(k, d, kind, eps, init, seed):
    x = arm_set(seed, k, d, kind)
    assume(np.abs(x).max() > 0)
    res = solve_g_design(x, eps, init=init)
    check_simplex(res.weights, k)
    r = np_rank(x)
    assert res.rank == r
    g = np_g(x, res.weights)
    # Kiefer-Wolfowitz: every design has max g >= r; ours is within (1 + eps) of it
    assert r * (1 - 1e-9) <= g <= (1 + eps) * r * (1 + 1e-9)
    assert res.converged and abs(res.value - g) <= 1e-6 * g
    # D-optimality from the same certificate: log det V >= log det V(pi') - eps r for all pi'
    rng = np.random.default_rng(seed + 1)
    for _ in range(5):
        other = rng.dirichlet(np.full(k, 0.3))
        assert logdet_span(x, res.weights) >= logdet_span(x, other) - eps * r - 1e-8


@pytest.mark.parametrize("log10_cond", [0, 5, 8, 11])
def test_g_design_of_a_square_arm_set_is_uniform_whatever_its_conditioning(log10_cond):
    """d arms spanning R^d: the design is uniform, value d (Kiefer-Wolfowitz).

    With ``x`` invertible, ``log det V(pi) = 2 log |det x| + sum_i log pi_i`` is maximised by
    ``pi = 1/d`` alone, and there ``||x_i||^2_{V^-1} = d ||x_i||^2_{(x^T x)^-1} = d`` for
    every arm. Conditioning must not matter (up to numpy's rank tolerance).
    """
    d = 13
    rng = np.random.default_rng(log10_cond)
    q1, _ = np.linalg.qr(rng.standard_normal((d, d)))
    q2, _ = np.linalg.qr(rng.standard_normal((d, d)))
    x = q1 @ np.diag(np.logspace(0, -log10_cond, d)) @ q2
    res = solve_g_design(x, 1e-6)
    assert res.rank == d == np_rank(x) and res.converged
    np.testing.assert_allclose(res.weights, np.full(d, 1.0 / d), atol=1e-3)
    for value in (res.value, g_value(x, res.weights), np_g(x, res.weights)):
        assert d * (1 - 1e-9) <= value <= d * (1 + 1e-6) * (1 + 1e-9)


@pytest.mark.parametrize("k, d", [(1000, 50), (1000, 5), (60, 50)])
def test_g_design_large_shapes(k, d):
    x = np.random.default_rng(k + d).standard_normal((k, d))
    w = g_optimal_design(x, eps=0.01)
    check_simplex(w, k)
    assert np_g(x, w) <= 1.01 * d * (1 + 1e-9)


def test_g_design_closed_forms():
    # standard basis: the uniform design, value d
    for d in (1, 2, 5, 17):
        np.testing.assert_allclose(g_optimal_design(np.eye(d)), np.full(d, 1.0 / d), atol=1e-12)
    # a rotated and scaled-together orthonormal basis: still uniform
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 6)))
    np.testing.assert_allclose(g_optimal_design(3.0 * q), np.full(6, 1 / 6), atol=1e-9)
    # symmetric +-e_i: the information matrix I/d is unique; so is each pair's total mass
    for d in (2, 4, 9):
        x = np.vstack([np.eye(d), -np.eye(d)])
        for init in ("basis", "uniform"):
            w = g_optimal_design(x, eps=1e-6, init=init)
            np.testing.assert_allclose((x * w[:, None]).T @ x, np.eye(d) / d, atol=1e-6)
            np.testing.assert_allclose(w[:d] + w[d:], np.full(d, 1.0 / d), atol=1e-6)
        np.testing.assert_allclose(
            g_optimal_design(x, init="uniform"), np.full(2 * d, 0.5 / d), atol=1e-12
        )


@settings(max_examples=30, deadline=None)
@given(
    d=st.integers(2, 8),
    m=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
    init=st.sampled_from(["basis", "uniform"]),
)
def test_g_design_puts_zero_weight_on_redundant_interior_points(d, m, seed, init):
    rng = np.random.default_rng(seed)
    # points strictly inside the cross-polytope conv{+-e_i}: ||p||_1 < 1, so g(p) = d ||p||^2 < d
    p = rng.standard_normal((m, d))
    p *= rng.uniform(0.05, 0.95, size=(m, 1)) / np.abs(p).sum(axis=1, keepdims=True)
    x = np.vstack([np.eye(d), -np.eye(d), p])
    w = g_optimal_design(x, eps=1e-4, init=init)
    assert np.all(w[2 * d :] <= 1e-6), w[2 * d :]
    # with only the basis (no -e_i) and p in the positive orthant part of the interior
    x2 = np.vstack([np.eye(d), np.abs(p)])
    w2 = g_optimal_design(x2, eps=1e-4, init=init)
    np.testing.assert_allclose(w2[:d], np.full(d, 1.0 / d), atol=1e-4)
    assert np.all(w2[d:] <= 1e-6)


def test_g_design_rank_deficient_target_is_the_rank_and_rotation_invariant():
    rng = np.random.default_rng(3)
    low = rng.standard_normal((40, 3))
    q, _ = np.linalg.qr(rng.standard_normal((10, 10)))
    x = low @ q[:3]  # 40 arms in a 3-dim subspace of R^10
    res = solve_g_design(x, 0.01)
    assert res.rank == 3
    assert np_g(x, res.weights) <= 3.03 * (1 + 1e-9)
    # the same arms in their own coordinates have the same G-value under the same design
    assert abs(np_g(low, res.weights) - np_g(x, res.weights)) <= 1e-8 * np_g(low, res.weights)


def test_g_design_plain_fedorov_wynn_also_converges():
    x = np.random.default_rng(1).standard_normal((50, 4))
    res = solve_g_design(x, 0.05, away_steps=False, init="uniform")
    assert res.converged and np_g(x, res.weights) <= 4.2 * (1 + 1e-9)


def test_g_design_degenerate_inputs():
    # K = 1: all mass on the arm, value 1 = rank
    np.testing.assert_array_equal(g_optimal_design(np.array([[2.0, -1.0, 0.5]])), [1.0])
    # collinear arms (rank 1): all mass on the longest, exactly optimal
    w = g_optimal_design(np.array([[1.0, 1.0], [-3.0, -3.0], [2.0, 2.0]]))
    np.testing.assert_array_equal(w, [0.0, 1.0, 0.0])
    # duplicates: the copies together carry the weight one arm would
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    w = g_optimal_design(x)
    assert abs(w[0] + w[1] - 0.5) < 1e-9 and abs(w[2] - 0.5) < 1e-9
    # a zero arm gets no weight
    w = g_optimal_design(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    assert w[0] == 0.0
    with pytest.raises(ValueError, match="zero vector"):
        g_optimal_design(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="NaN"):
        g_optimal_design(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"\(K, d\) matrix"):
        g_optimal_design(np.ones(3))
    with pytest.raises(ValueError, match=r"\(K, d\) matrix"):
        g_optimal_design(np.ones((0, 3)))
    for bad in (0.0, -1.0, math.inf, math.nan, True):
        with pytest.raises(ValueError, match="eps"):
            g_optimal_design(np.eye(2), eps=bad)
    with pytest.raises(ValueError, match="init"):
        g_optimal_design(np.eye(2), init="random")
    with pytest.raises(ValueError, match="singular"):
        solve_g_design(np.eye(2), init=[1.0, 0.0])


def test_g_design_tensor_in_tensor_out_and_budget_warning():
    x = torch.randn(30, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    w = g_optimal_design(x)
    assert isinstance(w, torch.Tensor) and w.device == x.device
    assert np_g(x.numpy(), w.numpy()) <= 4.04 * (1 + 1e-9)
    assert abs(g_value(x, w) - np_g(x.numpy(), w.numpy())) < 1e-8
    with pytest.warns(RuntimeWarning, match="max_iter"):
        res = solve_g_design(x, 1e-9, max_iter=3)
    assert not res.converged and res.n_iter == 3
    check_simplex(res.weights.numpy(), 30)


# -- rounding --------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(
    k=st.integers(1, 40),
    n=st.integers(0, 400),
    zeros=st.floats(0.0, 0.8),
    seed=st.integers(0, 2**31 - 1),
)
def test_round_design_sums_to_n_and_is_efficient(k, n, zeros, seed):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(k, 0.5))
    w[rng.random(k) < zeros] = 0.0
    assume(w.sum() > 0)
    w /= w.sum()
    counts = round_design(w, n)
    assert counts.dtype == np.int64 and counts.shape == (k,)
    assert counts.sum() == n and np.all(counts >= 0)
    assert np.all(counts[w == 0] == 0)
    supp = w > 0
    l = int(supp.sum())
    m, ws = counts[supp], w[supp]
    if n > 0:
        # the efficiency condition of Pukelsheim & Rieder: max (m_i - 1)/w_i <= min m_j / w_j
        assert ((m - 1) / ws).max() <= (m / ws).min() * (1 + 1e-9) + 1e-9
    if n >= l:
        # hence the guarantee n_i >= (n - l) w_i on every arm
        assert np.all(counts >= (n - l) * w - 1e-9)
    # deterministic
    np.testing.assert_array_equal(counts, round_design(w, n))


def test_round_design_examples_and_bad_input():
    np.testing.assert_array_equal(round_design([0.5, 0.3, 0.2, 0.0], 10), [5, 3, 2, 0])
    np.testing.assert_array_equal(round_design([1 / 3, 1 / 3, 1 / 3], 4), [2, 1, 1])
    np.testing.assert_array_equal(round_design([2.0, 2.0], 3), [2, 1])  # renormalised
    t = round_design(torch.tensor([0.25, 0.75]), 8)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.long and t.tolist() == [2, 6]
    for bad in ([-0.1, 1.1], [np.nan, 1.0], [0.0, 0.0], [], [[0.5, 0.5]]):
        with pytest.raises(ValueError):
            round_design(bad, 5)
    for bad_n in (-1, 2.5, "3", True):
        with pytest.raises(ValueError, match="n"):
            round_design([0.5, 0.5], bad_n)
    assert rounding_threshold(10, 0.1) == 110 and rounding_threshold(3, 1.0) == 6


@settings(max_examples=25, deadline=None)
@given(
    k=st.integers(2, 60),
    d=st.integers(1, 8),
    eps2=st.sampled_from([0.5, 0.2, 0.1]),
    seed=st.integers(0, 2**31 - 1),
)
def test_rounded_g_design_keeps_the_guarantee_above_the_threshold(k, d, eps2, seed):
    x = np.random.default_rng(seed).standard_normal((k, d))
    eps = 0.05
    w = g_optimal_design(x, eps=eps)
    l = int((w > 0).sum())
    r = np_rank(x)
    for n in (
        rounding_threshold(l, eps2),
        rounding_threshold(l, eps2) + 7,
        3 * rounding_threshold(l, eps2),
    ):
        counts = round_design(w, n).astype(float)
        # as a design: n * max_x ||x||^2_{(sum n_i x_i x_i^T)^-1}
        g_rounded = np_g(x, counts / n)
        assert g_rounded <= (1 + eps) * (1 + eps2) * r * (1 + 1e-9)


# -- XY design -------------------------------------------------------------------------
def test_xy_design_closed_forms():
    # two orthogonal arms: ||e1 - e2||^2 = 1/pi_1 + 1/pi_2, minimised at (1/2, 1/2), value 4
    res = solve_xy_design(np.eye(2), 1e-3)
    np.testing.assert_allclose(res.weights, [0.5, 0.5], atol=1e-9)
    assert abs(res.value - 4.0) < 1e-9
    # the Soare et al. instance, target pair {e_1, x_3}: the oracle allocation of Jamieson (2018)
    # puts weight proportional to |y_i| on e_1 and e_2 (y = e_1 - x_3), value (|y_1| + |y_2|)^2
    om = 0.1
    x = np.array([[1.0, 0.0], [0.0, 1.0], [math.cos(om), math.sin(om)]])
    y = x[0] - x[2]
    res = solve_xy_design(x, 1e-3, active=[0, 2])
    np.testing.assert_allclose(
        res.weights, [abs(y[0]), abs(y[1]), 0.0] / np.abs(y).sum(), atol=1e-9
    )
    assert abs(np_xy(x, res.weights, [0, 2]) - np.abs(y).sum() ** 2) < 1e-9
    # standard basis in R^d, all pairs: by symmetry the uniform design, value 2 d
    for d in (3, 6):
        res = solve_xy_design(np.eye(d), 0.01)
        assert np_xy(np.eye(d), res.weights) <= 2 * d * 1.01 * (1 + 1e-9)
        assert res.bound <= 2 * d * (1 + 1e-9)


def _grid(k: int, step: float) -> np.ndarray:
    ticks = np.arange(0.0, 1.0 + 1e-12, step)
    if k == 3:
        a, b = np.meshgrid(ticks, ticks, indexing="ij")
        pts = np.stack([a.ravel(), b.ravel(), 1 - a.ravel() - b.ravel()], axis=1)
    else:
        a, b, c = np.meshgrid(ticks, ticks, ticks, indexing="ij")
        pts = np.stack(
            [a.ravel(), b.ravel(), c.ravel(), 1 - a.ravel() - b.ravel() - c.ravel()], axis=1
        )
    return pts[pts[:, -1] >= -1e-12].clip(min=0.0)


def _xy_on_grid(x: np.ndarray, grid: np.ndarray) -> float:
    """min over the grid of max_pairs ||y||^2_{V^-1}, vectorised (d = 2: explicit inverse).

    Singular designs count as +inf: with >= 3 arms in general position in R^2 the pair
    differences span R^2, so every design with a finite value is non-singular.
    """
    v = np.einsum("nk,ki,kj->nij", grid, x, x)
    det = v[:, 0, 0] * v[:, 1, 1] - v[:, 0, 1] ** 2
    a, b = np.triu_indices(len(x), 1)
    y = x[a] - x[b]  # (m, 2)
    # y^T V^-1 y = (v11 y0^2 - 2 v01 y0 y1 + v00 y1^2) / det
    num = (
        v[:, 1, 1, None] * y[None, :, 0] ** 2 - 2 * v[:, 0, 1, None] * y[None, :, 0] * y[None, :, 1]
    )
    num += v[:, 0, 0, None] * y[None, :, 1] ** 2
    ok = det > 1e-12 * np.einsum("nii->n", v) ** 2
    vals = np.where(ok, num.max(axis=1) / np.where(ok, det, 1.0), np.inf)
    return float(vals.min())


@settings(max_examples=12, deadline=None)
@given(k=st.sampled_from([3, 4]), seed=st.integers(0, 2**31 - 1))
def test_xy_design_matches_brute_force_on_small_sets(k, seed):
    x = np.random.default_rng(seed).standard_normal((k, 2))
    eps = 0.02
    res = solve_xy_design(x, eps)
    grid = _grid(k, 0.005 if k == 3 else 0.02)
    best = _xy_on_grid(x, grid)
    # the certificate is a valid lower bound on every design (also on the grid's best)
    assert res.bound <= best * (1 + 1e-9)
    # and the returned design is near-optimal: within (1 + eps) of the bound
    value = np_xy(x, np.asarray(res.weights))
    assert value <= (1 + eps) * res.bound * (1 + 1e-9) or not res.converged
    assert value <= best * (1 + eps) * (1 + 1e-6) + 1e-12


@settings(max_examples=20, deadline=None)
@given(k=st.integers(2, 25), d=st.integers(1, 6), seed=st.integers(0, 2**31 - 1))
def test_xy_certificate_is_a_lower_bound_and_design_beats_g_design(k, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((k, d))
    res = solve_xy_design(x, 0.05)
    check_simplex(res.weights, k)
    value = np_xy(x, res.weights)
    assert abs(value - res.value) <= 1e-6 * value
    if res.converged:
        assert value <= 1.05 * res.bound * (1 + 1e-9)
    for _ in range(5):  # no design beats the certified bound
        other = rng.dirichlet(np.full(k, 0.5))
        assert res.bound <= np_xy(x, other) * (1 + 1e-9)
    # and it is at least as good as a G-optimal design for the XY criterion (up to eps)
    assert value <= np_xy(x, g_optimal_design(x)) * 1.05 * (1 + 1e-9)


def test_xy_design_active_subsets_and_degenerate_inputs():
    x = np.random.default_rng(5).standard_normal((8, 3))
    full = xy_value(x, xy_optimal_design(x))
    sub = solve_xy_design(x, 0.05, active=[1, 4, 6])
    assert len(sub.weights) == 8  # the design is over all arms
    assert np_xy(x, sub.weights, [1, 4, 6]) <= full * (1 + 1e-9)
    mask = np.zeros(8, dtype=bool)
    mask[[1, 4, 6]] = True
    np.testing.assert_allclose(xy_optimal_design(x, active=mask), sub.weights, atol=1e-12)
    # identical duplicates are ignored as pairs
    xd = np.vstack([x, x[:2]])
    assert np_xy(xd, xy_optimal_design(xd)) <= full * 1.05 * (1 + 1e-9)
    with pytest.raises(ValueError, match="at least 2"):
        xy_optimal_design(np.ones((1, 3)))
    with pytest.raises(ValueError, match="identical"):
        xy_optimal_design(np.ones((4, 3)))
    with pytest.raises(ValueError, match="at least 2"):
        xy_optimal_design(x, active=[3])
    with pytest.raises(ValueError, match="indices"):
        xy_optimal_design(x, active=[0, 8])
    with pytest.raises(ValueError, match="mask"):
        xy_optimal_design(x, active=np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="NaN"):
        xy_optimal_design(np.array([[1.0, 0.0], [np.inf, 1.0]]))
    # one dimension: all mass on the longest arm, exactly optimal
    np.testing.assert_array_equal(
        xy_optimal_design(np.array([[1.0], [-2.0], [0.5]])), [0.0, 1.0, 0.0]
    )


@pytest.mark.parametrize("kind", ["numpy", "tensor", "list"])
def test_designs_refuse_complex_arms(kind):
    x = np.eye(3) * (1 + 1j)
    arms = {"numpy": x, "tensor": torch.as_tensor(x), "list": x.tolist()}[kind]
    for design in (g_optimal_design, xy_optimal_design):
        with pytest.raises(ValueError, match="arms must be real-valued, got complex values"):
            design(arms)
