"""Frequent Directions (Wen et al. (2025), Alg. 2, Remark 1; Yang et al. (2025), fast FD):
guarantees and queries."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sketch_streams import DTYPES, KINDS, make_stream, stream_args, tol

import agents.sketches.diagnostics as diagnostics
import agents.sketches.fd as fd_module
from agents.sketches import FrequentDirections
from agents.sketches.backend import NUMPY_CPU
from agents.sketches.core import fd_shrink, rounding
from agents.sketches.diagnostics import fd_error_bound, psd_gap, spectral_error

# streams at every scale (rows up to 1e3 against lam ~1, in float32): the precision warning is due
# for some; it has its own tests (test_probe_numerics.py)
pytestmark = pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")


def _feed(est, X, dtype):
    for x in X:
        est.update(torch.as_tensor(x, dtype=dtype))


def _state(est):
    return (
        est.S.clone(),
        est.gram.clone(),
        est.chol.clone(),
        est.rows_in_use,
        est.total_shrinkage,
        est.n_reductions,
        list(est.shrinkages),
        est.n_rows,
        getattr(est, "alpha", None),
    )


def _same_state(a, b):
    assert all(torch.equal(x, y) for x, y in zip(a[:3], b[:3]))
    assert a[3:] == b[3:]


@settings(max_examples=60, deadline=None)
@given(**stream_args)
def test_fd_guarantees_hold_after_every_row(kind, n, d, l, seed, fast, dtype):
    """0 <= X^T X - S^T S <= total_shrinkage I, and
    total_shrinkage <= min_k ||X - X_k||_F^2/(l-k)."""
    X = make_stream(kind, n, d, seed)
    est = FrequentDirections(d, l, reg=0.7, fast=fast, dtype=dtype)
    for t in range(n):
        est.update(torch.as_tensor(X[t], dtype=dtype))
        Xt = X[: t + 1]
        eps = tol(Xt, dtype, d)
        lo, hi = psd_gap(Xt, est)
        assert lo >= -eps, (lo, eps)  # FD never over-estimates (S^T S <= X^T X)
        assert hi <= est.total_shrinkage + eps, (hi, est.total_shrinkage)
        bound = fd_error_bound(Xt, l)
        assert est.total_shrinkage <= bound + eps, (est.total_shrinkage, bound)
        assert spectral_error(Xt, est) <= bound + eps
        assert est.total_shrinkage == pytest.approx(sum(est.shrinkages))
        # sketch shape invariants: at most 2l - 1 (fast) / l - 1 (textbook) rows between updates
        assert est.rows_in_use <= (2 * l - 1 if fast else l - 1)
        if est.is_orthogonal and est.rows_in_use:
            G = est.gram
            assert torch.equal(G, torch.diag(torch.diagonal(G)))


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    n=st.integers(1, 40),
    d=st.integers(1, 10),
    l=st.integers(1, 12),
    seed=st.integers(0, 2**31 - 1),
    fast=st.booleans(),
)
def test_textbook_fd_equals_literal_algorithm_2(kind, n, d, l, seed, fast):
    """fast=False is Alg. 2 line by line (numpy SVD each row); fast=True meets the same bound."""
    X = make_stream(kind, n, d, seed)
    S = np.zeros((l, d))
    total = 0.0
    for x in X:
        S[-1] = x  # line 3: the last row is zero; put x there
        _, sig, Vt = np.linalg.svd(S, full_matrices=False)
        sig2 = np.concatenate([sig**2, np.zeros(l - len(sig))])
        delta = sig2[l - 1]  # line 5
        total += delta
        new = np.zeros((l, d))
        k = min(l, len(sig))
        new[:k] = np.sqrt(np.maximum(sig2[:k] - delta, 0.0))[:, None] * Vt[:k]  # line 6
        S = new
    est = FrequentDirections(d, l, fast=False, dtype=torch.float64)
    _feed(est, X, torch.float64)
    eps = tol(X, torch.float64, d)
    np.testing.assert_allclose(est.covariance().numpy(), S.T @ S, atol=eps)
    assert est.total_shrinkage == pytest.approx(total, abs=eps)
    fast_est = FrequentDirections(d, l, fast=True, dtype=torch.float64)
    _feed(fast_est, X, torch.float64)
    assert fast_est.total_shrinkage <= fd_error_bound(X, l) + eps


@settings(max_examples=50, deadline=None)
@given(**stream_args, reg=st.floats(1e-2, 1e2), k=st.integers(1, 8))
def test_quad_inv_and_solve_match_dense_inverse(kind, n, d, l, seed, fast, dtype, reg, k):
    """Woodbury with the Cholesky factor == dense (reg I + S^T S)^-1, also mid-buffer."""
    X = make_stream(kind, n, d, seed)
    X = X / max(1.0, np.abs(X).max())  # keep the dense reference well conditioned
    est = FrequentDirections(d, l, reg=reg, fast=fast, dtype=dtype)
    _feed(est, X, dtype)
    rng = np.random.default_rng(seed + 1)
    arms = rng.standard_normal((k, d))
    v = rng.standard_normal(d)
    S = est.S.to(torch.float64).numpy()
    # the same state as S (queries may rearrange rows)
    M = est.M.double().numpy() if est.rows_in_use else None
    A = reg * np.eye(d) + S.T @ S
    dense_q = np.einsum("kd,de,ke->k", arms, np.linalg.inv(A), arms)
    dense_s = np.linalg.solve(A, v)
    q = est.quad_inv(torch.as_tensor(arms, dtype=dtype)).double().numpy()
    s = est.solve(torch.as_tensor(v, dtype=dtype)).double().numpy()
    rtol = 1e-9 if dtype == torch.float64 else 2e-3
    np.testing.assert_allclose(q, dense_q, rtol=rtol, atol=rtol * np.abs(dense_q).max())
    np.testing.assert_allclose(s, dense_s, rtol=rtol, atol=rtol * np.abs(dense_s).max())
    # M is (S S^T + reg I)^-1 (diagonal right after a reduction)
    if M is not None:
        np.testing.assert_allclose(
            M, np.linalg.inv(S @ S.T + reg * np.eye(len(S))), rtol=rtol, atol=rtol / reg
        )
    # logdet_increment is log(1 + ||x||^2_{A_hat^-1})
    x = torch.as_tensor(arms[0], dtype=dtype)
    assert float(est.logdet_increment(x)) == pytest.approx(np.log1p(dense_q[0]), rel=rtol, abs=rtol)


@settings(max_examples=50, deadline=None)
@given(**stream_args)
def test_shrinkage_if_added_predicts_and_leaves_state_unchanged(kind, n, d, l, seed, fast, dtype):
    X = make_stream(kind, n, d, seed)
    est = FrequentDirections(d, l, fast=fast, dtype=dtype)
    for x in X:
        x = torch.as_tensor(x, dtype=dtype)
        before = _state(est)
        predicted = est.shrinkage_if_added(x)
        pending = est.pending_shrinkage(x)
        _same_state(before, _state(est))
        if not fast:
            assert pending == predicted
        n_red = est.n_reductions
        est.update(x)
        applied = est.last_shrinkage if est.n_reductions > n_red else 0.0
        # the look-ahead decomposes the bordered Gram, the update the Gram of the stored rows: the
        # same eigenvalue to the rounding of a spectral statement about the rows seen (0 stays
        # exactly 0)
        seen = X[: est.n_rows]
        assert predicted == pytest.approx(applied, rel=1e-12, abs=tol(seen, dtype, d))
        assert (predicted == 0.0) == (applied == 0.0)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    d=st.integers(2, 12),
    seed=st.integers(0, 2**31 - 1),
    fast=st.booleans(),
    dtype=st.sampled_from(DTYPES),
    data=st.data(),
)
def test_rank_below_l_is_exact_and_reports_no_shrinkage(n, d, seed, fast, dtype, data):
    """FD of size l represents rank <= l - 1 exactly: no shrink value, ever (DBS relies on it)."""
    rng = np.random.default_rng(seed)
    r = data.draw(st.integers(1, d))
    l = data.draw(st.integers(r + 1, d + 3))
    X = rng.standard_normal((n, r)) @ rng.standard_normal((r, d)) * 10.0 ** rng.uniform(-3, 3)
    est = FrequentDirections(d, l, fast=fast, dtype=dtype)
    for x in X:
        x = torch.as_tensor(x, dtype=dtype)
        assert est.pending_shrinkage(x) == 0.0
        assert est.shrinkage_if_added(x) == 0.0
        est.update(x)
    assert est.total_shrinkage == 0.0
    assert spectral_error(X, est) <= tol(X, dtype, d)


def test_a_tie_with_a_value_kept_from_a_larger_mass_is_cut_at_that_mass_rounding():
    """The rank cut (fd_shrink) uses the rounding the rows were left with by earlier shrinks
    (rounding's ``carried``): a shrink of squared singular values 1e4 and 9900 keeps
    1e4 - 9900 = 100 with the rounding of 1e4, so a later row of exactly 100 is a tie whatever
    rounding the kept value got. At the later range's own rounding the tie would survive or not by
    a route's last bits (batched or single, numpy or torch, raw rows or coordinates)."""
    xp, eps = NUMPY_CPU, float(torch.finfo(torch.float64).eps)
    big = np.array([[1e4, 9900.0, 0.01, 1e-4]])
    left = rounding(xp, eps, eps, 8, big)  # the rounding the kept rows carry on
    first = fd_shrink(xp, big, 2, left)
    assert first.kept.tolist() == [1] and first.keep[0, 0] == pytest.approx(100.0)
    # the kept 100 off by 5 ulps of 1e4 (as a route computed it), against a new row of exactly 100
    lam = np.array([[100.0 + 5.0 * eps * 1e4, 100.0, 1.0, 0.01]])
    own = rounding(xp, eps, eps, 8, lam)
    assert fd_shrink(xp, lam, 2, own).kept.tolist() == [1]  # (its own rounding: a "direction")
    later = fd_shrink(xp, lam, 2, rounding(xp, eps, eps, 8, lam, left))
    assert later.kept.tolist() == [0] and later.delta[0] == 100.0
    # a real gap is kept; the carried rounding only ever raises the range's own
    gap = np.array([[101.0, 100.0, 1.0, 0.01]])
    assert fd_shrink(xp, gap, 2, rounding(xp, eps, eps, 8, gap, left)).kept.tolist() == [1]
    raised = rounding(xp, eps, eps, 8, big, own)
    assert (raised.coord, raised.gram) == (left.coord, left.gram)


def test_full_rank_stream_does_shrink_and_l_equal_d_is_not_exact():
    """FD keeps l - 1 directions: l = d is not exact on full-rank data, l = d + 1 is."""
    X = make_stream("gauss", 40, 6, 3)
    for l, exact in ((6, False), (7, True)):
        for fast in (True, False):
            est = FrequentDirections(6, l, fast=fast)
            _feed(est, X, torch.float64)
            assert (est.total_shrinkage == 0.0) is exact
            assert (spectral_error(X, est) < 1e-9) is exact


@settings(max_examples=30, deadline=None)
@given(**stream_args)
def test_log_det_ratio_bound_is_an_upper_bound(kind, n, d, l, seed, fast, dtype):
    X = make_stream(kind, n, d, seed)
    X = X / max(1.0, np.abs(X).max())
    est = FrequentDirections(d, l, reg=0.5, fast=fast, dtype=dtype)
    _feed(est, X, dtype)
    true = np.linalg.slogdet(np.eye(d) + X.T @ X / 0.5)[1]
    slack = 1e-8 if dtype == torch.float64 else 1e-3 * (1 + abs(true))
    assert est.log_det_ratio_bound() >= true - slack
    if est.total_shrinkage == 0.0:
        assert est.log_det_ratio_bound() == pytest.approx(
            true, rel=1e-6 if dtype == torch.float64 else 1e-3, abs=slack
        )


def test_fast_fd_reduces_once_every_l_plus_one_rows_and_sizes_memory():
    d, l = 50, 5
    X = make_stream("gauss", 200, d, 0)
    est = FrequentDirections(d, l, fast=True)
    _feed(est, X, torch.float64)
    # after the first fill (2l rows) each reduction keeps l - 1 rows, so the next comes l + 1 rows
    # later
    assert est.n_reductions == 1 + (200 - 2 * l) // (l + 1)
    # a basis of 2l x d (working dtype); in the core dtype the coordinates (2l x 2l), the core
    # inverse (2l x 2l), bV (2l) and b_perp (d): the README's formula
    assert est.memory_bytes() == 8 * (2 * l * d + 2 * (2 * l) ** 2 + 2 * l + d)
    textbook = FrequentDirections(d, l, fast=False)
    _feed(textbook, X, torch.float64)
    assert textbook.n_reductions == 200
    assert textbook.memory_bytes() == 8 * (l * d + 2 * l * l + l + d)
    big = FrequentDirections(784, 20, dtype=torch.float32)  # float32 basis, float64 core
    assert big.memory_bytes() == 4 * 40 * 784 + 8 * (2 * 40 * 40 + 40 + 784) < 0.1 * 784 * 784 * 4


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("d,l", [(50, 5), (10, 3), (10, 6), (10, 5000), (7, 7)])
def test_buffers_are_sized_by_what_can_be_used_and_peak_bytes_agree(fast, dtype, d, l):
    """FD never holds more than min(buffer, d) basis vectors and the compression's slack of
    coordinate rows more (a quarter of the basis, at least one): a huge sketch_size at a small d
    allocates what OFUL would, not 2l x d. ``peak_member_bytes`` (no state built) equals what an
    estimator reports at every step, single and batched, and the arrays hold it."""
    est = FrequentDirections(d, l, fast=fast, dtype=dtype)
    peak = FrequentDirections.peak_member_bytes(d, l, fast=fast, dtype=dtype)
    basis = min(2 * l if fast else l, d)
    rows = min(2 * l if fast else l, basis + max(1, math.ceil(fd_module.COMPRESS_SLACK * basis)))
    es = dtype.itemsize
    assert peak == es * basis * d + 8 * (rows * basis + basis * basis + basis + d)
    X = make_stream("gauss", 3 * d, d, 1)
    for x in X:
        est.update(torch.as_tensor(x, dtype=dtype))
        assert est.memory_bytes() == peak == est._held_bytes()
    bat = FrequentDirections(d, [l, l], fast=fast, dtype=dtype, batch_size=2)
    assert bat.member_memory_bytes().tolist() == [peak, peak] and bat.memory_bytes() == 2 * peak
    if l == 5000:
        # a few times OFUL's d x d, not the 2l x d buffer of 10 000 rows
        assert peak < 4 * (8 * d * d + 8 * d)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4", None, np.float64(3.0)])
def test_bad_sketch_size_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="sketch_size"):
        FrequentDirections(5, bad)


def test_bad_arguments_and_rows_leave_state_unchanged():
    with pytest.raises(ValueError, match="fast"):
        FrequentDirections(5, 3, fast="yes")
    with pytest.raises(ValueError, match="reg"):
        FrequentDirections(5, 3, reg=0.0)
    with pytest.raises(ValueError, match="reg"):
        FrequentDirections(5, 3, reg=float("inf"))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            FrequentDirections(5, 3, device="cuda")
    est = FrequentDirections(5, 2)
    _feed(est, make_stream("gauss", 7, 5, 1), torch.float64)
    before = _state(est)
    for bad in (np.ones(4), np.ones((1, 5)), np.ones((2, 5)), [np.nan] * 5, [np.inf] * 5):
        with pytest.raises(ValueError):
            est.update(bad)
        with pytest.raises(ValueError):
            est.shrinkage_if_added(bad)
    with pytest.raises(ValueError, match=r"\(K, 5\)"):
        est.quad_inv(torch.ones(3, 4, dtype=torch.float64))
    with pytest.raises(ValueError):
        est.solve(torch.ones(4, dtype=torch.float64))
    _same_state(before, _state(est))
    with pytest.raises(ValueError, match="shape"):
        spectral_error(np.ones((3, 4)), est)


def test_numpy_and_float32_inputs_are_accepted():
    est = FrequentDirections(3, 2, dtype=torch.float32)
    est.update(np.array([1.0, 2.0, 3.0]))
    est.update([0.0, 1.0, 0.0])
    assert est.S.dtype == torch.float32
    assert est.quad_inv(np.eye(3)).shape == (3,)


def test_doctests():
    for mod in (fd_module, diagnostics):
        assert doctest.testmod(mod).failed == 0


def test_look_ahead_then_update_matches_plain_updates():
    """shrinkage_if_added(x); update(x) (the DBS pattern) leaves the sketch as plain updates do:
    bit for bit once both hold the basis state (a look-ahead is a query: a sketch nobody queried
    settles its raw rows first, and then equals the raw route to rounding)."""
    X = make_stream("powerlaw", 200, 30, 4)
    probe = torch.as_tensor(X[:3])
    plain, looked, raw = (
        FrequentDirections(30, 6),
        FrequentDirections(30, 6),
        FrequentDirections(30, 6),
    )
    plain.quad_inv(probe)
    looked.quad_inv(probe)
    _feed(plain, X, torch.float64)
    _feed(raw, X, torch.float64)
    for x in X:
        x = torch.as_tensor(x)
        looked.shrinkage_if_added(x)
        looked.update(x)
    assert plain.rows_in_use == looked.rows_in_use == raw.rows_in_use
    torch.testing.assert_close(plain.S, looked.S, rtol=0, atol=0)
    np.testing.assert_array_equal(plain.shrinkages, looked.shrinkages)
    np.testing.assert_allclose(raw.shrinkages, looked.shrinkages, rtol=1e-9)
    torch.testing.assert_close(raw.covariance(), looked.covariance(), rtol=1e-9, atol=1e-9)
