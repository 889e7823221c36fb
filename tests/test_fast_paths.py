"""The per-round fast paths give the plain algorithm's numbers (to rounding).

LinUCB reuses act()'s validated arms in update() of the same obs, and the estimators reuse the
played arm's projection (``S x``, or ``A^-1 x``) and squared norm from the scoring instead of
recomputing them. These tests play the same rounds through the fast paths and through the
plain ones (a copy of the obs in update(), so nothing is reused) and check the estimates agree,
that ``theta_hat`` is ``A_hat^-1 b`` of the estimator's own ``A_hat`` every round, and what
update() sees when obs changes in place.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sketch_streams import KINDS, make_stream

from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB
from agents.sketches import FrequentDirections, RobustFrequentDirections
from agents.sketches.backend import torch_on_cpu

#: small d: the sketches of these tests hold more than OFUL's inverse, which is warned (asserted in
#: tests/test_agent_warnings.py); not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")


def _make(kind: str, d: int, size: int, fast: bool, sentinel: bool):
    kw = dict(lam=0.7, beta=0.4, d=d)
    if kind == "OFUL":
        return OFUL(**kw)
    if kind in ("SOFUL", "CBSCFD"):
        return (SOFUL if kind == "SOFUL" else CBSCFD)(sketch_size=size, fast=fast, **kw)
    sketch = "rfd" if kind == "DBS-RFD" else "fd"
    return DBSLinUCB(l0=min(size, d), eps=0.5, sketch=sketch, fast=fast, sentinel=sentinel, **kw)


AGENT_KINDS = ("OFUL", "SOFUL", "CBSCFD", "DBS-FD", "DBS-RFD")


@settings(max_examples=40, deadline=None)
@given(
    agent=st.sampled_from(AGENT_KINDS),
    kind=st.sampled_from(KINDS),
    d=st.integers(1, 9),
    k=st.integers(1, 6),
    n=st.integers(1, 45),
    size=st.integers(1, 6),
    fast=st.booleans(),
    sentinel=st.booleans(),
    as_tensor=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_fast_paths_track_the_plain_ridge_solution(
    agent, kind, d, k, n, size, fast, sentinel, as_tensor, seed
):
    X = make_stream(kind, n * k, d, seed).reshape(n, k, d)
    rewards = np.random.default_rng(seed + 1).standard_normal(n)
    fast_agent = _make(agent, d, size, fast, sentinel)
    plain = _make(agent, d, size, fast, sentinel)
    for t in range(n):
        obs = torch.as_tensor(X[t]) if as_tensor else X[t]
        a = fast_agent.act(obs)  # scored: update() of the same obs reuses arms and projection
        plain.act(obs)
        fast_agent.update(obs, a, rewards[t])
        plain.update(X[t].copy(), a, rewards[t])  # another object: converted afresh, nothing reused
        # theta_hat is the ridge solution of the estimator's own A_hat, every round
        fresh = fast_agent.estimator.solve(fast_agent.b)
        scale = 1.0 + float(fresh.abs().max())
        torch.testing.assert_close(fast_agent.theta_hat, fresh, rtol=1e-7, atol=1e-7 * scale)
        torch.testing.assert_close(
            fast_agent.theta_hat, plain.theta_hat, rtol=1e-7, atol=1e-7 * scale
        )
        torch.testing.assert_close(fast_agent.b, plain.b, rtol=1e-12, atol=1e-12)
    assert fast_agent.sketch_size == plain.sketch_size and fast_agent.t == plain.t == n
    assert fast_agent.memory_bytes() == plain.memory_bytes()


def test_update_sees_the_arms_act_scored():
    """Same obs object: act's conversion is reused. An in-place change of a torch obs in between
    is seen (its version counter moved: converted afresh); a float64 numpy obs was snapshotted,
    so update() learns from the row act() scored; float32 numpy and lists were copies anyway."""
    rng = np.random.default_rng(0)
    arms = rng.standard_normal((4, 5))
    for make_obs, sees_change in (
        (lambda: torch.as_tensor(arms.copy()), True),
        (lambda: arms.copy(), False),
        (lambda: arms.astype(np.float32), False),
    ):
        agent, ref = SOFUL(sketch_size=3, beta=0.2), SOFUL(sketch_size=3, beta=0.2)
        obs = make_obs()
        a = agent.act(obs)
        obs[a] += 1.0  # in place, between act and update
        agent.update(obs, a, 1.0)
        row = np.asarray(
            obs[a] if sees_change else make_obs()[a], dtype=np.float64
        )  # else: as scored
        ref.update(row[None, :], 0, 1.0)
        torch.testing.assert_close(agent.b, ref.b.to(agent.b.dtype))
        torch.testing.assert_close(agent.theta_hat, ref.theta_hat, rtol=1e-10, atol=1e-12)
    # a list obs is converted afresh in update(): its current content is what is learnt
    agent = OFUL(beta=0.2)
    obs = arms.tolist()
    a = agent.act(obs)
    obs[a] = [2.0] * 5
    agent.update(obs, a, 1.0)
    torch.testing.assert_close(agent.b, torch.full((5,), 2.0, dtype=torch.float64))


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    n=st.integers(1, 40),
    d=st.integers(1, 9),
    l=st.integers(1, 8),
    fast=st.booleans(),
    robust=st.booleans(),
    query_every=st.integers(1, 7),
    seed=st.integers(0, 2**31 - 1),
)
def test_lazy_gram_and_factor_are_the_sketchs_own(kind, n, d, l, fast, robust, query_every, seed):
    """The Gram's mirror/diagonal and the Cholesky factor are completed lazily; whenever they are
    read they are S S^T and chol(S S^T + rho I), whatever mix of appends, queries and reductions."""
    X = make_stream(kind, n, d, seed)
    X = X / max(1.0, np.abs(X).max())
    est = (RobustFrequentDirections if robust else FrequentDirections)(d, l, reg=0.5, fast=fast)
    for t, x in enumerate(X):
        est.update(torch.as_tensor(x))
        if t % query_every == 0:
            est.quad_inv(torch.as_tensor(X[: min(3, t + 1)]))
    S = est.S
    torch.testing.assert_close(est.gram, S @ S.T, rtol=1e-10, atol=1e-12)
    L = est.chol
    rho = est.rho
    torch.testing.assert_close(
        L @ L.T, S @ S.T + rho * torch.eye(S.shape[0], dtype=S.dtype), rtol=1e-9, atol=1e-10
    )
    assert torch.equal(L, torch.tril(L))


@settings(max_examples=30, deadline=None)
@given(
    agent=st.sampled_from(("OFUL", "SOFUL", "CBSCFD", "DBS-FD", "DBS-RFD")),
    kind=st.sampled_from(KINDS),
    d=st.integers(1, 9),
    k=st.integers(1, 5),
    n=st.integers(1, 30),
    size=st.integers(1, 5),
    fast=st.booleans(),
    sentinel=st.booleans(),
    dtype=st.sampled_from(("float64", "float32")),
    seed=st.integers(0, 2**31 - 1),
)
def test_the_backends_agree_and_batched_members_equal_single_agents(
    agent, kind, d, k, n, size, fast, sentinel, dtype, seed
):
    """One implementation, two backends (agents.sketches.backend): the single agent runs its
    estimator's kernels on numpy (the CPU's), a one-member batch the very same kernels on torch
    tensors (a GPU's; :func:`torch_on_cpu`), and each member of a batched agent (B = 3) on its slice
    of the batch, on either backend. Playing the same arms (the numpy agent's choices, so a near-tie
    cannot fork the runs), they score alike and hold the same estimate round by round; every array
    is zero past each member's rows and basis."""
    # float32 results agree to ~eps32 cond(A_hat); the bursts of 1e-2..1e2 rows and the huge rows
    # reach cond ~1e5 and beyond, where two roundings of the same code differ by more than 2e-3
    assume(dtype == "float64" or kind not in ("orth_bursts", "huge_rows"))
    B = 3
    X = make_stream(kind, n * B * k, d, seed).reshape(n, B, k, d)
    rewards = np.random.default_rng(seed + 1).standard_normal((n, B))
    single = [_rebuilt(_make(agent, d, size, fast, sentinel), dtype=dtype) for _ in range(B)]
    with torch_on_cpu():  # (d given: the estimators are built here)
        one = [
            _rebuilt(_make(agent, d, size, fast, sentinel), dtype=dtype, batch_size=1)
            for _ in range(B)
        ]
        batched_torch = _rebuilt(single[0], dtype=dtype, batch_size=B)
    batched = _rebuilt(single[0], dtype=dtype, batch_size=B)
    assert single[0].estimator.xp.is_numpy and batched.estimator.xp.is_numpy
    assert not one[0].estimator.xp.is_numpy and not batched_torch.estimator.xp.is_numpy
    tol = dict(rtol=1e-9, atol=1e-9) if dtype == "float64" else dict(rtol=2e-3, atol=2e-3)
    if dtype == "float64" and kind == "huge_rows":
        # rows of norm up to 1e4 against lam = 0.7: cond(A_hat) ~ 1e8, and two roundings of the same
        # formulas (numpy's BLAS and LAPACK, torch's) differ by ~eps64 cond ~ 2e-8 relative
        tol = dict(rtol=1e-6, atol=1e-6)
    for t in range(n):
        actions = np.array([s.act(X[t, i]) for i, s in enumerate(single)])
        for i in range(B):
            torch.testing.assert_close(
                single[i].scores(X[t, i]), one[i].scores(X[t, i][None])[0], **tol
            )
        for both in (batched, batched_torch):
            s_batched = both.scores(X[t])
            if dtype == "float64":
                for i in range(B):
                    torch.testing.assert_close(single[i].scores(X[t, i]), s_batched[i], **tol)
        for i in range(B):
            single[i].update(X[t, i], int(actions[i]), rewards[t, i])
            one[i].update(X[t, i][None], actions[i : i + 1], rewards[t, i : i + 1])
        batched.update(X[t], actions, rewards[t])
        batched_torch.update(X[t], actions, rewards[t])
        for ag in single + one + [batched, batched_torch]:
            _assert_zero_padding(ag.estimator)
        for i in range(B):
            scale = 1.0 + float(single[i].theta_hat.abs().max())
            torch.testing.assert_close(
                one[i].theta_hat[0], single[i].theta_hat, rtol=tol["rtol"], atol=tol["atol"] * scale
            )
            if dtype == "float64":
                for both in (batched, batched_torch):
                    torch.testing.assert_close(
                        both.theta_hat[i], single[i].theta_hat, rtol=1e-8, atol=1e-8 * scale
                    )
    assert [s.sketch_size for s in single] == [int(o.sketch_size[0]) for o in one]


def _assert_zero_padding(est) -> None:
    """Every member's basis, coordinates and core inverse are zero past its basis size and rows: the
    batched products over the padded widths (and the switch to exact updates) read them."""
    core = getattr(est, "core", None)
    if core is None:
        return
    xp = est.xp
    for i in range(est.batch_size):
        if getattr(est, "exact", np.zeros(est.batch_size, dtype=bool))[i]:
            continue
        R, N = int(core.R[i]), int(core.N[i])
        assert (
            not xp.host(core.V[i, R:]).any()
            and not xp.host(core.H[i, R:]).any()
            and not xp.host(core.H[i, :, R:]).any()
        )
        assert not xp.host(core.C[i, N:]).any() and not xp.host(core.C[i, :, R:]).any()
        assert not xp.host(core.b_coords[i, R:]).any()


def _rebuilt(agent, **changes):
    """A _make agent built again with some keywords changed (dtype, batch size)."""
    kw = dict(lam=agent.lam, beta=agent.beta, d=agent.d)
    if isinstance(agent, DBSLinUCB):
        est = agent.estimator
        kw.update(l0=est.l0, eps=est.eps, sketch=est.sketch, fast=est.fast, sentinel=est.sentinel)
    elif not isinstance(agent, OFUL):
        kw.update(sketch_size=agent.arguments["sketch_size"], fast=agent.fast)
    return type(agent)(**{**kw, **changes})


@pytest.mark.parametrize("name", ["OFUL", "SOFUL", "CBSCFD", "DBS-FD"])
def test_the_backend_is_chosen_once_numpy_on_cpu(name):
    """Estimators on the CPU run numpy, one or a batch (a round dispatches no torch operation once
    the arms are numpy arrays); inside torch_on_cpu, torch. Counts the aten calls of a round."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 6, 30))
    X /= np.linalg.norm(X, axis=2, keepdims=True)
    counts = {}
    for batch, backend in ((None, "numpy"), (3, "numpy"), (3, "torch")):
        with torch_on_cpu(backend == "torch"):
            agent = (
                DBSLinUCB(l0=4, eps=100.0, beta=0.4, d=30, batch_size=batch)
                if name == "DBS-FD"  # sketched all along
                else _rebuilt(_make(name, 30, 8, True, True), batch_size=batch)
            )
        assert agent.estimator.xp.is_numpy == (backend == "numpy")
        per_round = []
        for t in range(40):
            obs = X[t] if batch is None else np.stack([X[t]] * batch)
            Count.n = 0
            with Count():
                a = agent.act(obs)
                agent.update(obs, a, 0.5 if batch is None else np.full(batch, 0.5))
            per_round.append(Count.n)
        counts[batch, backend] = float(np.median(per_round[5:]))
    assert counts[None, "numpy"] == counts[3, "numpy"] == 0 < counts[3, "torch"]


@pytest.mark.parametrize(
    "make", [lambda: SOFUL(sketch_size=3, beta=0.3), lambda: DBSLinUCB(l0=2, eps=50.0, beta=0.3)]
)
def test_arms_that_require_grad_are_read_as_plain_arms(make):
    """A tensor obs with requires_grad (e.g. features from a network) is played like its values."""
    x = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    agent, ref = make(), make()
    for _ in range(3):
        obs = x.clone().requires_grad_(True)
        a = agent.act(obs)
        assert a == ref.act(x)
        agent.update(obs, a, 1.0)
        ref.update(x, a, 1.0)
    torch.testing.assert_close(agent.theta_hat, ref.theta_hat)
    assert not agent.theta_hat.requires_grad


def test_dbs_shrinks_and_switch_keep_the_padding_and_match_batched_members():
    """DBSLinUCB's shrinks of its active block (the core's shrink of a range of rows after frozen
    ones: eq. 3's refactorization over the stacked rows) and its switch to exact updates, single
    (numpy) and as the member of a batch (torch): the same estimate round by round, zero padding
    throughout. 80 rounds at l0 = 2, eps = 300: ~10 shrinks, some with frozen blocks before the
    active one, then the switch."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3, 30))
    single = DBSLinUCB(l0=2, eps=300.0, beta=0.3, d=30, memory_cap=False, time_cap=False)
    batched = DBSLinUCB(
        l0=2, eps=300.0, beta=0.3, d=30, memory_cap=False, time_cap=False, batch_size=2
    )
    reductions, offsets = 0, []
    for t in range(80):
        obs = X[t]
        a = single.act(obs)
        batched.act(np.stack([obs, obs]))
        before = single.estimator.block_state.held.copy()
        single.update(obs, a, float(obs[a].sum()))
        if single.estimator.core is not None and single.estimator.block_state.held[0] < before[0]:
            reductions += 1
            offsets.append(int(single.estimator.block_state.frozen_rows[0]))
        _assert_zero_padding(single.estimator)
        batched.update(np.stack([obs, obs]), np.array([a, a]), np.full(2, float(obs[a].sum())))
        _assert_zero_padding(batched.estimator)
        torch.testing.assert_close(single.theta_hat, batched.theta_hat[0], rtol=1e-8, atol=1e-8)
    assert reductions >= 8 and max(offsets) > 0 and single.estimator.exact_mode
