"""Dyadic Block Sketching (Wen et al. (2025), Sec. 3, Alg. 1/4, eq. 3/5/7, Theorem 1).

The invariants are checked with hypothesis on random, low-rank, heavy-tailed and adversarial
streams, in float64 and float32, for FD and RFD blocks, fast (Alg. 4) and textbook (Alg. 1):

* Theorem 1, precisely: ``0 <= X^T X - sum_i S_i^T S_i <= total_shrinkage I`` and every block's
  shrinkage ``sigma_bar_i <= eps l0 / l_i`` (= eps / 2^i), so ``total_shrinkage < 2 eps`` and
  ``||X^T X - covariance()||_2 <= total_shrinkage < 2 eps``; for RFD ``covariance()`` includes
  ``alpha I`` with ``alpha = total_shrinkage`` and the gap lies in ``[-alpha, 0]``.
* Invariant 2: ``n_blocks <= block_cap = floor(log2(d/l0 + 1))``; sketch sizes ``l0 2^i``.
* After the cap, rows are represented exactly (the error stops changing).
* ``quad_inv`` / ``solve`` equal a dense computation with ``A_hat = reg I + covariance()``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.sketches.dbs import DyadicBlockSketch, block_cap

# streams at every scale (rows up to 1e3 against lam ~1, in float32): the precision warning is due
# for some; it has its own tests (test_probe_numerics.py)
pytestmark = pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")

KINDS = (
    "gauss",  # isotropic: flat spectrum, the heavy tail of Wen et al. (2025), Sec. 5
    "unit",  # l2-normalised Gaussian rows (the paper's data, L = 1)
    "lowrank",  # rank k < d
    "powerlaw",  # spectrum i^-a, rotated
    "student",  # heavy-tailed row norms (Student t, 1.5 dof)
    "huge_rows",  # a few rows 1e3 times the rest: single rows above eps l0
    "zero_rows",  # exact zeros mixed in
    "orth_bursts",  # orthonormal directions of very different scales
    "span_then_new",  # fill a subspace, then in-span rows past the threshold, then new directions
)

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    # These matrices are tiny: torch's intra-op threads only add contention on a shared machine.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def make_stream(kind: str, n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "gauss":
        X = rng.standard_normal((n, d))
    elif kind == "unit":
        X = rng.standard_normal((n, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    elif kind == "lowrank":
        k = int(rng.integers(1, max(2, d // 2) + 1))
        X = rng.standard_normal((n, k)) @ rng.standard_normal((k, d)) / math.sqrt(k)
    elif kind == "powerlaw":
        a = rng.uniform(0.3, 1.5)
        Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        X = (rng.standard_normal((n, d)) * np.arange(1, d + 1) ** -a) @ Q.T
    elif kind == "student":
        X = rng.standard_normal((n, d)) * np.abs(rng.standard_t(1.5, (n, 1)))
    elif kind == "huge_rows":
        X = rng.standard_normal((n, d))
        X[rng.random(n) < 0.1] *= 1e3
    elif kind == "zero_rows":
        X = rng.standard_normal((n, d))
        X[rng.random(n) < 0.4] = 0.0
    elif kind == "orth_bursts":
        Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        idx = np.concatenate([rng.permutation(d) for _ in range(n // d + 1)])[:n]
        X = Q[idx] * 10.0 ** rng.integers(-2, 3, (n, 1))
    elif kind == "span_then_new":
        k = max(1, d // 3)
        B = rng.standard_normal((k, d))
        m = n // 2
        X = np.vstack([rng.standard_normal((m, k)) @ B, rng.standard_normal((n - m, d))])
    else:  # pragma: no cover
        raise ValueError(kind)
    return X.astype(np.float64)


def as_fed(X: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """The rows as the estimator stores them (rounded to ``dtype``), in float64."""
    return torch.as_tensor(X).to(dtype).to(torch.float64).numpy()


def feed(dbs: DyadicBlockSketch, X: np.ndarray, every: int | None = None):
    """Stream the rows; yield t (rows fed) at checkpoints (every ``every`` rows and at the end)."""
    n = X.shape[0]
    for t in range(n):
        dbs.update(torch.as_tensor(X[t]))
        if (every and (t + 1) % every == 0) or t == n - 1:
            yield t + 1


def spectral_gap(X: np.ndarray, cov: torch.Tensor) -> tuple[float, float]:
    """(min, max) eigenvalue of X^T X - cov, in float64."""
    G = torch.as_tensor(X.T @ X) - cov.to(torch.float64)
    ev = torch.linalg.eigvalsh((G + G.T) / 2)
    return float(ev[0]), float(ev[-1])


def atol(X: np.ndarray, dtype: torch.dtype, d: int) -> float:
    """Absolute tolerance for spectral statements about X^T X computed in ``dtype`` (FD's
    reductions go through an eigh of the small Gram: rounding ~ eps * rows * lambda_max)."""
    eps = torch.finfo(dtype).eps
    return 1000.0 * eps * (1.0 + math.sqrt(d)) * (float((X * X).sum()) + 1e-300)


params = dict(
    kind=st.sampled_from(KINDS),
    n=st.integers(1, 160),
    d=st.integers(2, 24),
    l0_frac=st.floats(0.0, 1.0),
    # eps in units of the stream's mean squared row norm: a block then holds about eps_rel * l0
    # rows, so the grid covers "closes before any shrink", "shrinks, then closes" and "tiny".
    eps_rel=st.sampled_from([1e-3, 0.3, 1.5, 3.0, 6.0, 20.0]),
    sketch=st.sampled_from(["fd", "rfd"]),
    fast=st.booleans(),
    sentinel=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)


def DBS(*args, **kwargs):
    """The paper's literal rule (block cap only) unless a test asks for ``memory_cap`` or
    ``time_cap``."""
    kwargs.setdefault("memory_cap", False)
    kwargs.setdefault("time_cap", False)
    return DyadicBlockSketch(*args, **kwargs)


def build(
    X, d, l0_frac, eps_rel, sketch, fast, sentinel, dtype=torch.float64, reg=1.0, keep_gram=True
):
    """l0 in [1, max(1, d // 4)] (caps of 1 to 4 blocks; cap 1 is tested on its own), eps scaled."""
    l0 = 1 + int(l0_frac * max(0, d // 4 - 1))
    mean_mass = float((X * X).sum(axis=1).mean()) if len(X) else 1.0
    eps = eps_rel * (mean_mass if mean_mass > 0 else 1.0)
    return DBS(
        d,
        l0,
        eps,
        sketch=sketch,
        fast=fast,
        sentinel=sentinel,
        reg=reg,
        dtype=dtype,
        keep_gram=keep_gram,
    )


# ---------------------------------------------------------------------------------------
# Theorem 1 and Invariant 2
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@SETTINGS
@given(**params)
def test_theorem1_global_error_and_block_structure(
    dtype, kind, n, d, l0_frac, eps_rel, sketch, fast, sentinel, seed
):
    X = as_fed(make_stream(kind, n, d, seed), dtype)
    dbs = build(X, d, l0_frac, eps_rel, sketch, fast, sentinel, dtype=dtype)
    eps = dbs.eps
    tol = atol(X, dtype, d)
    for t in feed(dbs, X, every=max(1, n // 4)):
        Xt = X[:t]
        # Invariant 2 and the dyadic sizes
        blocks = dbs.blocks()
        assert 1 <= dbs.n_blocks == len(blocks) <= dbs.block_cap
        assert [b.sketch_size for b in blocks] == [dbs.l0 * 2**i for i in range(len(blocks))]
        assert sum(b.sketch_size for b in blocks) <= d
        assert sum(b.n_rows for b in blocks) + dbs.n_exact_rows == t
        rel = 1e-9 if dtype == torch.float64 else 1e-5
        assert math.isclose(dbs.frobenius_mass, float((Xt * Xt).sum()), rel_tol=rel, abs_tol=1e-300)
        if not dbs.exact_mode:
            assert math.isclose(
                sum(b.block_size for b in blocks), dbs.frobenius_mass, rel_tol=1e-9, abs_tol=1e-300
            )
        # Theorem 1, per block: a block shrinks only while its mass is < eps l0, so its
        # FD shrinkage is < eps l0 / l_i = eps / 2^i (the proof's per-block bound).
        for b in blocks:
            assert b.shrinkage <= eps * dbs.l0 / b.sketch_size * (1 + 1e-9) + tol
        assert dbs.total_shrinkage < 2 * eps + tol
        # the FD part never over-estimates and misses at most total_shrinkage in any direction
        cov = dbs.covariance()
        S_part = cov - dbs.alpha * torch.eye(d, dtype=cov.dtype)
        lo, hi = spectral_gap(Xt, S_part)
        assert lo >= -tol
        assert hi <= dbs.total_shrinkage + tol
        # ... hence the global error of the estimate (with alpha I for RFD)
        lo, hi = spectral_gap(Xt, cov)
        assert max(-lo, hi) <= dbs.total_shrinkage + tol <= 2 * eps + 2 * tol
        if sketch == "rfd":
            assert math.isclose(dbs.alpha, dbs.total_shrinkage, rel_tol=1e-12, abs_tol=1e-300)
            assert hi <= tol and lo >= -dbs.alpha - tol  # S^T S <= X^T X <= S^T S + alpha I
        else:
            assert dbs.alpha == 0.0
        # before the cap the blocks hold at most 2 sum_{i<=C-2} l_i <= d - l0 rows; d in exact mode
        if dbs.exact_mode:
            assert dbs.sketch_size == d and dbs.n_blocks == dbs.block_cap
        else:
            assert dbs.sketch_size == sum(b.rows_held for b in blocks) <= d - dbs.l0


@pytest.mark.parametrize(
    "d,l0,cap",
    [
        (500, 50, 3),
        (784, 50, 4),
        (784, 100, 3),
        (784, 200, 2),
        (500, 16, 5),
        (3, 1, 2),
        (7, 1, 3),
        (10, 10, 1),
        (10, 4, 1),
        (10, 3, 2),
    ],
)
def test_block_cap_is_floor_log2(d, l0, cap):
    # Wen et al. (2025), Invariant 2 with log base 2 (reference notes' worked table).
    assert block_cap(d, l0) == cap == math.floor(math.log2(d / l0 + 1))
    assert (
        l0 * (2**cap - 1) <= d < l0 * (2 ** (cap + 1) - 1)
    )  # the blocks' sizes fit in d, one more would not
    assert DBS(d, l0, 1.0).block_cap == cap


@given(d=st.integers(1, 5000), l0=st.integers(1, 5000))
@settings(max_examples=200, deadline=None)
def test_block_cap_integer_formula_matches_log2(d, l0):
    if l0 > d:
        return
    c = block_cap(d, l0)
    assert l0 * (2**c - 1) <= d < l0 * (2 ** (c + 1) - 1)
    assert c == math.floor(math.log2(d / l0 + 1))


# ---------------------------------------------------------------------------------------
# queries against dense linear algebra (eq. 3, 5, 7 and the exact part)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@SETTINGS
@given(**params, reg=st.sampled_from([0.01, 1.0, 30.0]), K=st.integers(1, 9))
def test_quad_inv_and_solve_match_dense(
    dtype, kind, n, d, l0_frac, eps_rel, sketch, fast, sentinel, seed, reg, K
):
    X = make_stream(kind, n, d, seed)
    scale = float(np.abs(X).max()) + 1e-300
    X = as_fed(X / scale, dtype)  # keep the queries' conditioning within float32's reach
    dbs = build(X, d, l0_frac, eps_rel, sketch, fast, sentinel, dtype=dtype, reg=reg)
    rng = np.random.default_rng(seed + 1)
    rtol = 1e-9 if dtype == torch.float64 else 2e-3
    for _ in feed(dbs, X, every=max(1, n // 5)):
        A = dbs.covariance().to(torch.float64) + reg * torch.eye(d, dtype=torch.float64)
        A_inv = torch.linalg.inv(A)
        arms = torch.as_tensor(rng.standard_normal((K, d)))
        q = dbs.quad_inv(arms.to(dtype)).to(torch.float64)
        q_dense = ((arms @ A_inv) * arms).sum(1)
        scale_q = float((arms * arms).sum(1).max()) / reg
        assert q.shape == (K,)
        assert torch.allclose(q, q_dense, rtol=rtol, atol=rtol * scale_q)
        v = torch.as_tensor(rng.standard_normal(d))
        s = dbs.solve(v.to(dtype)).to(torch.float64)
        assert torch.allclose(s, A_inv @ v, rtol=rtol, atol=rtol * float(v.norm()) / reg)
        # log det increment = log(1 + ||x||^2_{A_hat^-1}) (base-class helper over quad_inv)
        inc = float(dbs.logdet_increment(arms[0].to(dtype)))
        assert math.isclose(
            inc, math.log1p(float(q_dense[0])), rel_tol=10 * rtol, abs_tol=10 * rtol
        )


def test_bordered_inverse_eq7_equals_eq3_recomputation():
    # Between two reductions of the active block, the core inverse H = (C^T C + c I)^-1 is grown by
    # the bordered append (eq. 7); it must equal the inverse recomputed from the stacked coordinates
    # of [S~; S*] (eq. 3, corrected), and eq. 5 through it the dense inverse of c I + S^T S.
    rng = np.random.default_rng(0)
    d = 30
    X = rng.standard_normal((400, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    arms = rng.standard_normal((5, d))
    for sketch in ("fd", "rfd"):
        dbs = DBS(d, 3, 10.0, sketch=sketch, fast=True)
        n_border = 0
        for x in X:
            r_before = int(dbs.rows[0])
            dbs.update(torch.as_tensor(x))
            if dbs.exact_mode:
                break
            core = dbs.core
            r = int(dbs.rows[0])
            n_border += r == r_before + 1
            R, N = int(core.R[0]), int(core.N[0])
            C = core.C[0, :N, :R]
            recomputed = np.linalg.inv(C.T @ C + float(dbs.c()[0]) * np.eye(R))
            np.testing.assert_allclose(core.H[0, :R, :R], recomputed, rtol=1e-9, atol=1e-10)
            S = dbs.held_rows().double().numpy()
            dense = np.linalg.inv(S.T @ S + float(dbs.c()[0]) * np.eye(d))
            np.testing.assert_allclose(
                dbs.quad_inv(arms).numpy(), np.einsum("kd,de,ke->k", arms, dense, arms), rtol=1e-9
            )
        assert n_border > 20  # eq. 7 was really exercised, not only eq. 3
        assert dbs.n_blocks >= 2


# ---------------------------------------------------------------------------------------
# exact mode after the cap
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("sketch", ["fd", "rfd"])
@pytest.mark.parametrize("fast", [True, False])
def test_after_cap_rows_are_exact_and_error_stops_growing(sketch, fast):
    rng = np.random.default_rng(3)
    d, l0, eps = 24, 3, 4.0
    X = rng.standard_normal((300, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    dbs = DBS(d, l0, eps, sketch=sketch, fast=fast, keep_gram=True)
    t_switch = None
    for t, x in enumerate(X):
        dbs.update(torch.as_tensor(x))
        if dbs.exact_mode and t_switch is None:
            t_switch = t + 1
            cov_switch = dbs.covariance()
            gap_switch = torch.as_tensor(X[:t_switch].T @ X[:t_switch]) - cov_switch
            shrink_switch = dbs.total_shrinkage
    assert t_switch is not None and t_switch < 200
    assert dbs.n_blocks == dbs.block_cap == 3
    assert dbs.n_exact_rows == len(X) - t_switch
    assert dbs.sketch_size == d
    assert dbs.total_shrinkage == shrink_switch > 0  # something was sketched before, nothing after
    post = X[t_switch:]
    # every row after the switch is represented exactly: cov grew by exactly sum x x^T
    assert torch.allclose(dbs.covariance() - cov_switch, torch.as_tensor(post.T @ post), atol=1e-9)
    # hence X^T X - cov is frozen at its value at the switch (the error stops growing)
    gap_end = torch.as_tensor(X.T @ X) - dbs.covariance()
    assert torch.allclose(gap_end, gap_switch, atol=1e-9)
    assert float(torch.linalg.matrix_norm(gap_end, ord=2)) <= shrink_switch + 1e-9


def test_exact_from_the_start_when_cap_is_one():
    # l0 > d/3: floor(log2(d/l0 + 1)) = 1, Alg. 1 line 3 holds from the first row: OFUL.
    d = 9
    dbs = DBS(d, 4, 1e-6)
    assert dbs.block_cap == 1 and dbs.exact_mode and dbs.n_blocks == 1 and dbs.sketch_size == d
    X = np.random.default_rng(0).standard_normal((20, d))
    list(feed(dbs, X))
    assert torch.allclose(dbs.covariance(), torch.as_tensor(X.T @ X), atol=1e-9)
    assert dbs.total_shrinkage == 0.0


def test_no_dxd_matrix_before_the_cap():
    # The sketched regime never holds a d x d array: memory is O(d R + rows R), R <= rows = frozen
    # rows + the active buffer's capacity (< d); after the cap the d x d inverse exists by design.
    d = 200
    dbs = DBS(d, 5, 20.0)
    rng = np.random.default_rng(1)
    n_checked = 0
    while not dbs.exact_mode:
        x = rng.standard_normal(d)
        dbs.update(torch.as_tensor(x / np.linalg.norm(x)))
        if dbs.exact_mode:
            break
        core = dbs.core
        assert max(a.size for a in (core.V, core.C, core.H, core.b_coords, core.theta_perp)) < d * d
        rows = int(
            dbs.block_state.frozen_rows[0] + dbs.block_state.buffer[0]
        )  # frozen rows + the active buffer
        assert rows < d and dbs.sketch_size <= rows and core.C.shape[1] == rows  # allocated exactly
        basis = rows  # < d: one basis vector per row at most
        assert dbs.memory_bytes() == 8 * (basis * d + rows * basis + basis * basis + basis + d)
        assert dbs.memory_bytes() <= DyadicBlockSketch.peak_member_bytes(d, 5, memory_cap=False)
        n_checked += 1
    assert n_checked > 300 and dbs.n_blocks == dbs.block_cap == 5
    assert dbs.core is None and dbs.covariance().shape == (d, d)  # the exact part


# ---------------------------------------------------------------------------------------
# willExcessSketch, the sentinel, the threshold, low-rank streams
# ---------------------------------------------------------------------------------------


def _unit_rows(d, n):
    return [torch.eye(d, dtype=torch.float64)[i % d] for i in range(n)]


@pytest.mark.parametrize("fast", [True, False])
def test_sentinel_closes_a_not_yet_full_block_on_mass(fast):
    # App. B.1: with fewer rows than its sketch size, willExcessSketch is True, so the block
    # closes as soon as BlockSize + ||x||^2 >= eps l0 (here 2 unit rows reach eps l0 = 2).
    dbs = DBS(16, 4, 0.5, fast=fast, sentinel=True)
    for x in _unit_rows(16, 2):
        dbs.update(x)
    assert [b.n_rows for b in dbs.blocks()] == [1, 1]
    assert dbs.total_shrinkage == 0.0


@pytest.mark.parametrize("fast,rows_in_block0", [(True, 7), (False, 3)])
def test_without_sentinel_a_block_closes_only_when_fd_would_discard(fast, rows_in_block0):
    # sentinel=False: the shrink test alone. FD of size l keeps l - 1 directions; the fast
    # 2l buffer only reduces (and could discard) when it fills, at its 2l-th row.
    dbs = DBS(16, 4, 0.5, fast=fast, sentinel=False)
    for x in _unit_rows(16, 12):
        dbs.update(x)
    blocks = dbs.blocks()
    assert blocks[0].n_rows == rows_in_block0
    assert blocks[0].block_size == rows_in_block0 > 0.5 * 4  # far past eps l0, held exactly
    assert dbs.total_shrinkage == 0.0


def test_threshold_is_strict_eps_l0():
    # Alg. 1 line 7 keeps x iff BlockSize + ||x||^2 < eps l0 (strict), whatever the sentinel says.
    dbs = DBS(16, 4, 0.75, sentinel=True)  # eps l0 = 3
    rows = _unit_rows(16, 3)
    for x in rows[:2]:
        dbs.update(x)
    assert dbs.n_blocks == 1  # 1 + 1 < 3
    dbs.update(rows[2])  # 2 + 1 = 3, not < 3: closes
    assert dbs.n_blocks == 2 and dbs.blocks()[0].n_rows == 2


def test_an_empty_block_is_not_closed_by_the_sentinel():
    # A single row bigger than eps l0 goes into the empty first block (it is held exactly).
    dbs = DBS(16, 4, 1e-3)
    dbs.update(torch.full((16,), 10.0, dtype=torch.float64))
    assert dbs.n_blocks == 1 and dbs.blocks()[0].n_rows == 1


def test_invariant1_as_printed_is_not_maintained_but_the_bound_is():
    # Wen et al.'s (2025) "or willExcessSketch is False": a block that already shrank keeps
    # absorbing in-span rows past eps l0 (Invariant 1 literally violated); no mass is discarded
    # after the threshold, so its shrinkage stays < eps l0 / l (what Theorem 1 needs).
    rng = np.random.default_rng(0)
    d, l0, eps = 12, 3, 2.0  # eps l0 = 6
    B = np.linalg.qr(rng.standard_normal((d, 6)))[0].T  # 6 orthonormal directions
    X = rng.standard_normal((5, 6)) @ B
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # mass 5 < 6; rank 5 > l - 1 = 2: it shrinks
    dbs = DBS(d, l0, eps, fast=False, sentinel=False)
    for x in X:
        dbs.update(torch.as_tensor(x))
    assert dbs.n_blocks == 1 and dbs.total_shrinkage > 0
    S = dbs.active_rows().numpy()
    for _ in range(10):  # rows inside the kept span: no shrink, so they are accepted
        dbs.update(torch.as_tensor(rng.standard_normal(S.shape[0]) @ S))
    b = dbs.blocks()[0]
    assert dbs.n_blocks == 1 and b.block_size > eps * l0
    assert b.shrinkage < eps * l0 / b.sketch_size


@pytest.mark.parametrize("fast", [True, False])
@settings(max_examples=12, deadline=None)
@given(k=st.integers(1, 10), l0=st.integers(1, 5), seed=st.integers(0, 2**31 - 1))
def test_low_rank_stream_stops_splitting(fast, k, l0, seed):
    # Theorem 1 / Sec. 3.2: once a block's sketch size exceeds the rank k, it never shrinks,
    # so never closes: with the pure shrink test the last block index is <= floor(log2(k/l0)) + 1.
    d = 32
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((100, k)) @ rng.standard_normal((k, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    dbs = DBS(d, l0, 3.0, fast=fast, sentinel=False)
    list(feed(dbs, X))
    # block j closes only if its FD would discard, i.e. rank k >= l_j: l0 2^(B-1) <= k
    bound = 1 if k < l0 else math.floor(math.log2(k / l0)) + 2
    assert dbs.n_blocks <= min(dbs.block_cap, bound)
    if not dbs.exact_mode and dbs.blocks()[-1].sketch_size > k:
        assert dbs.blocks()[-1].shrinkage == 0.0  # the last block holds its rank-k rows exactly
    lo, hi = spectral_gap(X, dbs.covariance())
    assert -1e-8 <= lo and hi <= dbs.total_shrinkage + 1e-8


# ---------------------------------------------------------------------------------------
# Wen et al. (2025), App. F.2 (matrix approximation, Fig. 4)
# ---------------------------------------------------------------------------------------


def _fig4(n, d, l0, l_fd):
    from agents.sketches.fd import FrequentDirections

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    XtX, Xt = torch.as_tensor(X.T @ X), torch.as_tensor(X)
    errs = {}
    for eps in (5.0, 10.0, 20.0):
        dbs = DBS(d, l0, eps)
        for x in Xt:
            dbs.update(x)
        errs[eps] = float(torch.linalg.matrix_norm(XtX - dbs.covariance(), ord=2))
        assert (
            errs[eps] <= dbs.total_shrinkage + 1e-8 and dbs.total_shrinkage < 2 * eps
        )  # Theorem 1
    fd = FrequentDirections(d, l_fd)
    for x in Xt:
        fd.update(x)
    err_fd = float(torch.linalg.matrix_norm(XtX - fd.covariance(), ord=2))
    # Fig. 4a: larger eps, larger error. Fig. 4b: FD's error has grown to almost ||X^T X||
    # (it lost whole directions of the flat spectrum), above DBS's at every eps.
    assert errs[5.0] < errs[10.0] < errs[20.0] < err_fd
    assert err_fd > 0.9 * float(torch.linalg.matrix_norm(XtX, ord=2))
    return errs, err_fd


def test_matrix_approximation_fig4_scaled_down():
    # Wen et al. (2025), App. F.2 at a third of the size: n = 400 normalised Gaussian rows, d = 120.
    _fig4(400, 120, 4, 12)


@pytest.mark.slow
def test_matrix_approximation_fig4():
    # Wen et al. (2025), App. F.2 as stated: n = 1250, d = 500, DBS l0 = 16, eps in {5, 10, 20};
    # FD l = 50.
    _fig4(1250, 500, 16, 50)


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(l0=0), "l0"),
        (dict(l0=-2), "l0"),
        (dict(l0=2.5), "l0"),
        (dict(l0=True), "l0"),
        (dict(l0=11), "exceeds the dimension"),
        (dict(eps=0.0), "eps"),
        (dict(eps=-1.0), "eps"),
        (dict(eps=float("nan")), "eps"),
        (dict(eps=float("inf")), "eps"),
        (dict(eps="big"), "eps"),
        (dict(sketch="FD2"), "sketch"),
        (dict(sketch=None), "sketch"),
        (dict(fast="yes"), "fast"),
        (dict(sentinel=1), "sentinel"),
        (dict(reg=0.0), "reg"),
        (dict(d=0), "d must"),
    ],
)
def test_bad_parameters_raise_clear_errors(kwargs, match):
    args = dict(d=10, l0=2, eps=1.0)
    args.update(kwargs)
    d, l0, eps = args.pop("d"), args.pop("l0"), args.pop("eps")
    with pytest.raises(ValueError, match=match):
        DBS(d, l0, eps, **args)


def test_bad_rows_raise_and_leave_state_unchanged():
    rng = np.random.default_rng(0)
    dbs = DBS(8, 2, 1.0)
    for x in rng.standard_normal((30, 8)):
        dbs.update(torch.as_tensor(x))
    before = (dbs.stats(), dbs.covariance().clone(), [b for b in dbs.blocks()], dbs.n_rows)
    for bad in (
        np.ones(7),
        np.ones((2, 8)),
        np.array([np.nan] * 8),
        np.array([np.inf] + [0.0] * 7),
        "row",
    ):
        with pytest.raises(ValueError):
            dbs.update(bad)
    assert (dbs.stats(), dbs.blocks(), dbs.n_rows) == (before[0], before[2], before[3])
    assert torch.equal(dbs.covariance(), before[1])
    with pytest.raises(ValueError, match="arms must have shape"):
        dbs.quad_inv(torch.ones(3, 7, dtype=torch.float64))
    with pytest.raises(ValueError):
        dbs.solve(torch.ones(7, dtype=torch.float64))


def test_cuda_without_cuda_is_a_clear_error():
    if torch.cuda.is_available():  # pragma: no cover
        pytest.skip("CUDA present")
    with pytest.raises(ValueError, match="CUDA is not available"):
        DBS(8, 2, 1.0, device="cuda")


def test_stats_history_and_repr():
    dbs = DBS(30, 2, 4.0)  # eps l0 = 8 unit rows per block, cap 3
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 30))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    history = []
    for x in X:
        dbs.update(torch.as_tensor(x))
        history.append(dbs.stats())
    exact = [h["exact_mode"] for h in history]
    t_switch = exact.index(True)
    assert 10 < t_switch < 100 and all(exact[t_switch:])
    sizes = [h["sketch_size"] for h in history]
    assert (
        sizes[0] == 1 and max(sizes[:t_switch]) < 30 and set(sizes[t_switch:]) == {30}
    )  # adaptive
    assert [h["n_blocks"] for h in history] == sorted(
        h["n_blocks"] for h in history
    )  # blocks only open
    assert (
        dbs.block_cap == 4 and history[-1]["active_sketch_size"] == 2 * 2**3
    )  # 2 + 4 + 8 + 16 <= 30
    assert history[-1]["n_rows"] == 200 and "DyadicBlockSketch(d=30" in repr(dbs)
