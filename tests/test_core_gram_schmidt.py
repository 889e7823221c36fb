"""The row append's Gram-Schmidt (agents.sketches.core, ``SketchCore.expand``): the basis stays
orthonormal and the scores stay those of the rows held, on streams built to strain it.

The second pass runs wherever a row carrying a new direction lost more than half its squared norm
to the basis (one pass there multiplies the basis' own loss of orthogonality by ``||p|| / ||e||``);
it is left out where it cannot change the result beyond rounding (a residual already within the
rounding of one in the span, a full basis), and the coordinates stay the first pass' where its
correction is within that rounding. The streams here put rows within ``10^-k`` of the sketch's own
span (``||p|| / ||e||`` up to ``10^15``: the regime where one pass would compound the loss), rows
in the span to rounding, and sizes with ``2 l > d`` (the basis fills ``R^d``, and a full basis
takes the row without a residual)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sketch_streams import BACKENDS, dense_quad, on_backend

from agents.sketches import FrequentDirections, RobustFrequentDirections

# rows far from the ridge's scale in float32: the precision warning is due (its own tests)
pytestmark = pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")

#: ``||V V^T - I||_2 <= ORTHOGONALITY sqrt(d) eps_w``: the rounding of classical Gram-Schmidt
#: twice (Giraud et al. (2005): ``O(eps)`` with a modest dimension factor) and of
#: the shrinks' rotations by orthonormal factors.
ORTHOGONALITY = 32.0

#: ``x^T A_hat^-1 x`` against a dense float64 solve with the sketch's own rows: the tolerance of
#: the estimators' query tests (test_fd's ``test_quad_inv_and_solve_match_dense_inverse``).
RTOL = {torch.float64: 1e-9, torch.float32: 2e-3}


def _near_span_row(est, rng, d: int, mode: str, member: int = 0) -> np.ndarray:
    """A unit-scale row: ``gauss`` (a new direction), ``near`` (a combination of the member's
    basis plus ``10^-k`` of a random direction, ``k`` in 1..15: a residual that lost all but
    ``10^-2k`` of the squared norm), ``inside`` (a combination of the basis alone: in the span up
    to the rounding of the combination)."""
    g = rng.standard_normal(d)
    core = est.core
    R = 0 if core is None else int(core.R[member])
    if mode == "gauss" or R == 0:
        return g / np.linalg.norm(g)
    V = np.asarray(est.xp.host(core.V[member, :R]), dtype=np.float64)
    x = rng.standard_normal(R) @ V
    x /= np.linalg.norm(x)
    if mode == "near":
        x = x + 10.0 ** -int(rng.integers(1, 16)) * g / np.linalg.norm(g)
    return x


def _check(est, member: int, dtype: torch.dtype, probe: np.ndarray, fed: int) -> None:
    """The member's basis is orthonormal to the stated bound, and ``x^T A_hat^-1 x`` of the probe
    arms matches ``(reg I + S^T S)^-1`` from its own rows ``S``."""
    core, d = est.core, est.d
    eps_w = torch.finfo(dtype).eps
    if core is not None and int(core.R[member]):
        R = int(core.R[member])
        V = np.asarray(est.xp.host(core.V[member, :R]), dtype=np.float64)
        loss = np.linalg.norm(V @ V.T - np.eye(R), 2)
        assert loss <= ORTHOGONALITY * math.sqrt(d) * eps_w, (fed, R, loss / eps_w)
    dense = dense_quad(est.member_rows(member), float(est.rho_all[member]), probe)
    arms = torch.as_tensor(probe, dtype=dtype)
    if est.single:
        quad = est.quad_inv(arms).double().numpy()
    else:
        stack = est.xp.asarray(np.repeat(probe[None], est.batch_size, axis=0), dtype)
        quad = np.asarray(est.xp.host(est.quad_all(stack)[member]), dtype=np.float64)
    rtol = RTOL[dtype]
    np.testing.assert_allclose(quad, dense, rtol=rtol, atol=rtol * np.abs(dense).max())


def _check_row(est, member: int, x: np.ndarray, dtype: torch.dtype) -> None:
    """The row the member just took, ``C[N - 1] V``, is the row fed up to the rounding at which a
    residual is dropped, ``8 sqrt((R + 1) d) eps_w ||x||``: the first pass' coordinates are kept
    only where the second pass' correction is within it."""
    core, d = est.core, est.d
    n, R = int(core.N[member]), int(core.R[member])
    V = np.asarray(est.xp.host(core.V[member, :R]), dtype=np.float64)
    row = np.asarray(est.xp.host(core.C[member, n - 1, :R]), dtype=np.float64) @ V
    x = x.astype(torch.empty(0, dtype=dtype).numpy().dtype).astype(np.float64)
    tol = 8.0 * math.sqrt((R + 1) * d) * torch.finfo(dtype).eps * np.linalg.norm(x)
    assert np.linalg.norm(row - x) <= 2.0 * tol


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(4, 24),
    share=st.floats(0.35, 1.0),
    robust=st.booleans(),
    dtype=st.sampled_from((torch.float64, torch.float32)),
    reg=st.sampled_from((1e-2, 1.0, 1e2)),
    modes=st.lists(st.sampled_from(("gauss", "near", "near", "inside")), min_size=8, max_size=8),
    batch=st.sampled_from((None, 2)),
    seed=st.integers(0, 2**31 - 1),
    backend=st.sampled_from(BACKENDS),
)
# a basis that fills R^d (2 l > d) beside one that does not, rows near its span: both dtypes
@example(
    d=16,
    share=1.0,
    robust=False,
    dtype=torch.float64,
    reg=1.0,
    modes=["near"] * 8,
    batch=2,
    seed=0,
    backend="torch",
)
@example(
    d=9,
    share=0.6,
    robust=True,
    dtype=torch.float32,
    reg=1e-2,
    modes=["near", "inside"] * 4,
    batch=None,
    seed=1,
    backend="numpy",
)
def test_the_basis_stays_orthonormal_and_the_scores_exact_on_rows_near_the_span(
    d, share, robust, dtype, reg, modes, batch, seed, backend
):
    """Rows fed one by one, half of them as the played arm of a scored round (the agents' path:
    the scoring's ``V x``, ``H p`` and ``p^T H p`` reused by the append), each drawn from the
    member's current basis (``_near_span_row``; ``d`` Gaussian rows, then a kind every ``d / 2``
    rows): after every row, ``||V V^T - I||_2 <= 32 sqrt(d) eps_w`` and the scores match the dense
    inverse built from the rows the sketch holds. Fast FD (RFD) with ``l = share d``: the basis
    grows past ``d / 2``, and to ``R^d`` where ``2 l > d``; a batch of two members plays different
    streams (one may be full while the other is not); on either backend (numpy, the CPU's; torch,
    a GPU's)."""
    l = max(2, math.ceil(share * d))
    cls = RobustFrequentDirections if robust else FrequentDirections
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with on_backend(backend):
            est = cls(d, l, reg=reg, dtype=dtype, batch_size=batch)
    B = batch or 1
    rngs = [np.random.default_rng(seed + i) for i in range(B)]
    probe = np.random.default_rng(seed + 99).standard_normal((4, d))
    segment = max(1, d // 2)
    modes = ["gauss", "gauss", *modes]  # the first d rows fill the basis past d / 2
    span = 0
    for t in range(segment * len(modes)):
        mode = modes[t // segment]
        X = np.stack([_near_span_row(est, rngs[i], d, mode, i) for i in range(B)])
        r = float(rngs[0].standard_normal())
        held = est.core.N.copy() if est.core is not None else np.zeros(B, dtype=np.int64)
        if t % 2:  # the agents' round: scored, then the played arm's row appended
            arms = est.xp.asarray(np.stack([np.broadcast_to(probe[0], X.shape), X], 1), dtype)
            terms = est.score_terms(arms)
            est.step(
                arms[:, 1],
                r if batch is None else np.full(B, r),
                terms,
                1 if batch is None else np.ones(B, dtype=np.int64),
            )
        else:
            rows = torch.as_tensor(X, dtype=dtype)
            est.update(rows[0] if batch is None else rows, r if batch is None else np.full(B, r))
        if est.core is not None:
            span = max(span, int(est.core.R.max()))
            for i in np.flatnonzero(est.core.N == held + 1):  # no shrink: the row is the last
                _check_row(est, i, X[i], dtype)
        for i in range(B):
            _check(est, i, dtype, probe, t)
    assert span > d / 2  # the regime where a new direction loses half its norm was reached
