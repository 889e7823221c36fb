"""The draw for Thompson sampling (``CovarianceEstimator.draw``): ``F z`` with ``F F^T = A_hat^-1``.

Every estimator applies its own factor to given standard normal draws: the sketches (FD, RFD, Dyadic
Block Sketching's sketched members) ``F z = (z - V^T V z) / sqrt(c) + V^T L V z`` with ``H = L L^T``
(lower Cholesky) on their basis state, the exact estimator (and DBS's exact members) ``S z`` with
its square-root factor, at its first draw (as here) ``L`` with ``A^-1 = L L^T`` (its Potter
updates after are checked in tests/test_thompson.py). Checked against an independent numpy
implementation fed the same ``z``, and by the covariance of many draws, whose bound fails for a
wrong factor; float64 and float32.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sketch_streams import BACKENDS, KINDS, make_stream, on_backend

from agents.sketches import (
    DyadicBlockSketch,
    ExactCovariance,
    FrequentDirections,
    RobustFrequentDirections,
)

pytestmark = pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")


def _estimator(kind: str, d: int, dtype=torch.float64, batch_size=None, **kw):
    if kind == "exact":
        return ExactCovariance(d, reg=0.7, dtype=dtype, batch_size=batch_size)
    if kind in ("fd", "rfd"):
        cls = FrequentDirections if kind == "fd" else RobustFrequentDirections
        return cls(
            d,
            kw.get("l", 3),
            reg=0.7,
            fast=kw.get("fast", True),
            dtype=dtype,
            batch_size=batch_size,
        )
    return DyadicBlockSketch(
        d,
        l0=kw.get("l0", 1),
        eps=kw.get("eps", 2.0),
        sketch=kind[4:],
        reg=0.7,
        dtype=dtype,
        memory_cap=False,
        time_cap=False,
        batch_size=batch_size,
    )


def _dense_inverse(est, member: int = 0) -> np.ndarray:
    """``A_hat^-1 = (reg I + covariance())^-1`` of one member, in float64, from the public
    covariance (it holds RFD's ``alpha I``), independent of the estimator's state."""
    cov = est.covariance().double().numpy()
    cov = cov if est.single else cov[member]
    reg = float(np.broadcast_to(np.asarray(est.reg, dtype=np.float64), (est.batch_size,))[member])
    return np.linalg.inv(cov + reg * np.eye(cov.shape[0]))


def _reference_factor(est, member: int = 0):
    """The factor the estimator documents, from its state, computed here in numpy: ``(d, d)``."""
    d = est.d
    exact = isinstance(est, ExactCovariance) or (
        isinstance(est, DyadicBlockSketch) and bool(est.exact[member])
    )
    if exact:
        return np.linalg.cholesky(_dense_inverse(est, member))
    core = est.core
    R, N, c = int(core.R[member]), int(core.N[member]), float(core.c[member])
    V = np.asarray(core.xp.host(core.V[member, :R]), dtype=np.float64)
    C = np.asarray(core.xp.host(core.C[member, :N, :R]), dtype=np.float64)
    L = np.linalg.cholesky(
        np.linalg.inv(C.T @ C + c * np.eye(R))
    )  # H = L L^T, from the coordinates
    outside = np.eye(d) - V.T @ V if R < d else np.zeros((d, d))
    return outside / np.sqrt(c) + V.T @ L @ V


def _fed(est, X, r):
    for x, y in zip(X, r):
        est.update(torch.as_tensor(x), float(y))
    est.quad_inv(torch.as_tensor(X[:2]))  # a query: every sketch holds its basis state
    return est


KINDS_ALL = ("exact", "fd", "rfd", "dbs-fd", "dbs-rfd")


@settings(max_examples=30, deadline=None)
@given(
    kind=st.sampled_from(KINDS_ALL),
    stream=st.sampled_from(KINDS),
    n=st.integers(0, 40),
    d=st.integers(1, 8),
    l=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
)
def test_draw_applies_the_documented_factor(kind, stream, n, d, l, seed):
    """``draw(z)`` equals the documented factor, formed independently in numpy, applied to the same
    ``z``; and that factor is a factor of ``A_hat^-1`` (``F F^T`` against the dense inverse)."""
    X = make_stream(stream, n, d, seed) / (
        1.0 + float(np.abs(make_stream(stream, n, d, seed)).max(initial=0.0))
    )
    rng = np.random.default_rng(seed + 1)
    est = _fed(_estimator(kind, d, l=l, l0=min(l, d)), X, rng.standard_normal(n))
    F = _reference_factor(est)
    z = rng.standard_normal((5, d))
    np.testing.assert_allclose(est.draw(torch.as_tensor(z)).numpy(), z @ F.T, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(F @ F.T, _dense_inverse(est), rtol=1e-7, atol=1e-9)


def _whitened_gap(draws: np.ndarray, A_inv: np.ndarray) -> float:
    """``||A^{1/2} (Z^T Z / n) A^{1/2} - I||_2`` for draws ``Z`` ``(n, d)``: about ``2 sqrt(d / n)``
    for draws of covariance ``A^-1`` (Bai-Yin), of order 1 for another covariance."""
    w, U = np.linalg.eigh(np.linalg.inv(A_inv))
    root = (U * np.sqrt(w)) @ U.T
    emp = draws.T @ draws / draws.shape[0]
    return float(np.abs(np.linalg.eigvalsh(root @ emp @ root - np.eye(A_inv.shape[0]))).max())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("kind", KINDS_ALL)
def test_draws_have_covariance_a_hat_inverse(kind, dtype):
    """20,000 draws of a sketch that discarded mass (and, for DBS, switched to exact updates or
    not): their covariance matches ``A_hat^-1`` within ``0.1`` in the whitened spectral norm (about
    ``2 sqrt(d / n) = 0.035`` expected), and the same statistic is far beyond it for a factor
    missing the residual term, or scaled by 1.2."""
    d, n = 6, 20_000
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, d)) * np.array([3.0, 2.0, 1.0, 0.5, 0.2, 0.1])
    for eps, exact in ((1000.0, False), (0.5, True)) if kind.startswith("dbs") else ((2.0, None),):
        est = _fed(
            _estimator(kind, d, dtype=dtype, l=3, l0=1, eps=eps), X, rng.standard_normal(len(X))
        )
        if exact is not None:
            assert bool(est.exact_mode) == exact
        if kind != "exact" and exact is not True:
            assert est.total_shrinkage > 0.0  # a real sketch: A_hat is not lam I + X^T X
        A_inv = _dense_inverse(est)
        z = rng.standard_normal((n, d))
        draws = est.draw(torch.as_tensor(z, dtype=dtype)).double().numpy()
        assert _whitened_gap(draws, A_inv) < 0.1
        assert _whitened_gap(1.2 * draws, A_inv) > 0.3
        if kind != "exact" and not exact:
            core = est.core
            V = core.xp.host(core.V[0, : int(core.R[0])]).astype(np.float64)
            assert (
                V.shape[0] < d
            )  # the sketch leaves a residual space: the wrong factor below misses it
            inside = draws @ V.T @ V  # the draws without their residual part
            assert _whitened_gap(inside, A_inv) > 0.3


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ("fd", "rfd", "dbs-fd", "dbs-rfd", "exact"))
def test_batched_members_draw_as_their_single_estimators(kind, backend):
    """Members of a batch (on either backend: numpy, the CPU's; torch, a GPU's) apply each its
    single estimator's (numpy) factor to its own draws; DBS members part (some exact, some
    sketched) within the batch."""
    d, B = 7, 3
    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, B, d)) * np.linspace(2.0, 0.2, d)
    r = rng.standard_normal((60, B))
    eps = [0.5, 20.0, 1000.0]
    with on_backend(backend):
        batch = _estimator(kind, d, batch_size=B, l=3, l0=1, eps=eps)
    assert batch.xp.is_numpy == (backend == "numpy")
    singles = [_estimator(kind, d, l=3, l0=1, eps=eps[i]) for i in range(B)]
    for t in range(60):
        batch.update(X[t], r[t])
        for i, s in enumerate(singles):
            s.update(X[t, i], float(r[t, i]))
    z = rng.standard_normal((B, 4, d))
    out = batch.draw(z).numpy()
    for i, s in enumerate(singles):
        np.testing.assert_allclose(out[i], s.draw(z[i]).numpy(), rtol=1e-8, atol=1e-10)
    if kind.startswith("dbs"):
        assert 0 < batch.exact.sum() < B


def test_draw_before_any_row_is_the_ridge_alone():
    """Nothing seen: ``A_hat = reg I`` and every estimator's factor is ``I / sqrt(reg)``."""
    z = np.random.default_rng(0).standard_normal((3, 5))
    for kind in KINDS_ALL:
        est = _estimator(kind, 5, l0=2)
        np.testing.assert_allclose(est.draw(z).numpy(), z / np.sqrt(0.7), rtol=1e-12)


@pytest.mark.parametrize(
    "bad,match",
    [
        (np.zeros((3, 4)), "shape"),
        (np.zeros(5), "shape"),
        (np.full((2, 5), np.nan), "NaN"),
        ("z", "numeric"),
    ],
)
def test_bad_draws_are_refused_and_change_nothing(bad, match):
    est = FrequentDirections(5, 2)
    for x in np.eye(5):
        est.update(x)
    before = est.covariance().clone()
    with pytest.raises(ValueError, match=match):
        est.draw(bad)
    torch.testing.assert_close(est.covariance(), before, rtol=0, atol=0)
