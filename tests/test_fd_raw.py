"""A sketch nobody queries keeps its rows raw (``SketchCore.append_raw``) and shrinks them from
their own Gram, as Liberty's and Ghashami et al.'s reference algorithm does; its first query settles
them into the basis state (``SketchCore.settle``). Both routes are the same Frequent Directions
sketch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sketch_streams import KINDS, make_stream, tol

from agents.sketches import FrequentDirections, RobustFrequentDirections
from agents.sketches.diagnostics import psd_gap

pytestmark = pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")


def _sketch(robust: bool, d: int, l: int, **kw):
    return (RobustFrequentDirections if robust else FrequentDirections)(d, l, reg=0.5, **kw)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    n=st.integers(1, 60),
    d=st.integers(1, 12),
    l=st.integers(1, 10),
    seed=st.integers(0, 2**31 - 1),
    fast=st.booleans(),
    robust=st.booleans(),
    every=st.integers(1, 7),
)
def test_raw_rows_and_queried_rows_make_the_same_sketch(kind, n, d, l, seed, fast, robust, every):
    """Fed bare (rows kept raw, shrunk from their Gram) or queried every ``every`` rows (each query
    settles the raw rows into the basis), or before every row (the basis route only): the same
    shrinks at the same rows, the same ``S^T S`` and alpha to rounding, the same widths."""
    X = make_stream(kind, n, d, seed)
    arms = np.random.default_rng(seed + 1).standard_normal((4, d))
    bare, some, each = (_sketch(robust, d, l, fast=fast) for _ in range(3))
    for t, x in enumerate(X):
        if t % every == 0:
            some.quad_inv(arms)
        each.quad_inv(arms)
        for est in (bare, some, each):
            est.update(x)
    scale = float((X * X).sum()) + 1e-300
    eps = tol(X, torch.float64, d)
    for est in (some, each):
        assert est.n_reductions == bare.n_reductions
        np.testing.assert_allclose(est.shrinkages, bare.shrinkages, rtol=1e-9, atol=1e-12 * scale)
        gap = np.abs(est.covariance().numpy() - bare.covariance().numpy()).max()
        assert gap <= eps, (gap, eps)
        if robust:
            assert est.alpha == pytest.approx(bare.alpha, rel=1e-9, abs=1e-12 * scale)
    q = [est.quad_inv(arms).numpy() for est in (bare, some, each)]
    np.testing.assert_allclose(q[0], q[2], rtol=1e-7)
    np.testing.assert_allclose(q[1], q[2], rtol=1e-7)
    if not robust:  # FD's bound on the raw route (RFD adds alpha I back)
        lo, hi = psd_gap(X, bare)
        assert lo >= -eps and hi <= bare.total_shrinkage + eps


def test_a_bare_sketch_holds_its_rows_raw_until_a_query():
    """No basis, coordinates or inverse are built for rows nobody queries; the first query builds
    them, and the basis state is kept from then on (later rows are appended to it, with or without a
    response)."""
    rng = np.random.default_rng(0)
    est = FrequentDirections(30, 5)
    for x in rng.standard_normal((23, 30)):
        est.update(x)
    core = est.core
    # a buffer of 2 l = 10 rows, each shrink keeps l - 1 = 4: shrinks at rows 10, 16 and 22
    assert est.n_reductions == 3 and core.width == 0 and core.N.max() == 0
    assert core.n_raw == est.rows_in_use == 5
    assert not core.H.any() and not core.C.any()
    est.quad_inv(rng.standard_normal((3, 30)))
    assert core.n_raw == 0 and core.width == core.N[0] == est.rows_in_use == 5
    est.update(rng.standard_normal(30))  # no query since the last: still the basis state
    assert core.n_raw == 0 and core.N[0] == est.rows_in_use == 6
    est.update(rng.standard_normal(30), 1.0)
    assert core.n_raw == 0 and not np.allclose(est.b.numpy(), 0.0)


def test_a_response_ends_the_raw_phase():
    """A row with a response needs ``b``, which lives in the basis state: the raw rows settle
    first."""
    rng = np.random.default_rng(1)
    est, ref = FrequentDirections(12, 4), FrequentDirections(12, 4)
    X = rng.standard_normal((6, 12))
    for x in X:
        est.update(x)
        ref.update(x, 0.0)
    assert est.core.n_raw == 6
    est.update(X[0], 2.0)
    ref.quad_inv(X[:1])  # settles ref's raw rows the same way
    ref.update(X[0], 2.0)
    assert est.core.n_raw == 0 and est.core.N[0] == 7
    np.testing.assert_array_equal(est.b.numpy(), ref.b.numpy())
    np.testing.assert_array_equal(est.theta().numpy(), ref.theta().numpy())


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 40),
    d=st.integers(1, 8),
    l=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
    fast=st.booleans(),
)
def test_batched_raw_rows_equal_single_sketches(n, d, l, seed, fast):
    """Members that skip rows (zero rows: nothing to add) fall out of step with the others; each
    member still equals its own single sketch."""
    rng = np.random.default_rng(seed)
    B = 3
    X = rng.standard_normal((n, B, d))
    X[rng.random((n, B)) < 0.3] = 0.0
    batch = FrequentDirections(d, l, fast=fast, batch_size=B)
    singles = [FrequentDirections(d, l, fast=fast) for _ in range(B)]
    for t in range(n):
        batch.update(X[t])
        for i, est in enumerate(singles):
            est.update(X[t, i])
    cov = batch.covariance().numpy()
    eps = tol(X.reshape(-1, d), torch.float64, d)
    for i, est in enumerate(singles):
        assert int(batch.n_reductions[i]) == est.n_reductions
        assert np.abs(cov[i] - est.covariance().numpy()).max() <= eps
