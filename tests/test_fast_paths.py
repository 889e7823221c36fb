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
from threadpoolctl import threadpool_limits
from sketch_streams import KINDS, make_stream

from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB
from agents._torch import numpy_blas_threads
from agents.sketches import FrequentDirections, RobustFrequentDirections


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
    agent=st.sampled_from(AGENT_KINDS), kind=st.sampled_from(KINDS), d=st.integers(1, 9), k=st.integers(1, 6),
    n=st.integers(1, 45), size=st.integers(1, 6), fast=st.booleans(), sentinel=st.booleans(),
    as_tensor=st.booleans(), seed=st.integers(0, 2**31 - 1),
)
def test_fast_paths_track_the_plain_ridge_solution(agent, kind, d, k, n, size, fast, sentinel, as_tensor, seed):
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
        torch.testing.assert_close(fast_agent.theta_hat, plain.theta_hat, rtol=1e-7, atol=1e-7 * scale)
        torch.testing.assert_close(fast_agent.b, plain.b, rtol=1e-12, atol=1e-12)
    assert fast_agent.sketch_size == plain.sketch_size and fast_agent.t == plain.t == n
    assert fast_agent.memory_bytes() == plain.memory_bytes()


def test_update_sees_the_arms_act_scored():
    """Same obs object: act's conversion is reused. An in-place change of a torch obs in between
    is seen (its version counter moved: converted afresh); a float64 numpy obs was snapshotted,
    so update() learns from the row act() scored; float32 numpy and lists were copies anyway."""
    rng = np.random.default_rng(0)
    arms = rng.standard_normal((4, 5))
    for make_obs, sees_change in ((lambda: torch.as_tensor(arms.copy()), True), (lambda: arms.copy(), False),
                                  (lambda: arms.astype(np.float32), False)):
        agent, ref = SOFUL(sketch_size=3, beta=0.2), SOFUL(sketch_size=3, beta=0.2)
        obs = make_obs()
        a = agent.act(obs)
        obs[a] += 1.0  # in place, between act and update
        agent.update(obs, a, 1.0)
        row = np.asarray(obs[a] if sees_change else make_obs()[a], dtype=np.float64)  # else: as scored
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
@given(kind=st.sampled_from(KINDS), n=st.integers(1, 40), d=st.integers(1, 9), l=st.integers(1, 8),
       fast=st.booleans(), robust=st.booleans(), query_every=st.integers(1, 7), seed=st.integers(0, 2**31 - 1))
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
    torch.testing.assert_close(L @ L.T, S @ S.T + rho * torch.eye(S.shape[0], dtype=S.dtype), rtol=1e-9, atol=1e-10)
    assert torch.equal(L, torch.tril(L))


@settings(max_examples=30, deadline=None)
@given(
    agent=st.sampled_from(("SOFUL", "CBSCFD", "DBS-FD", "DBS-RFD")), kind=st.sampled_from(KINDS),
    d=st.integers(1, 9), k=st.integers(1, 5), n=st.integers(1, 30), size=st.integers(1, 5), fast=st.booleans(),
    sentinel=st.booleans(), dtype=st.sampled_from(("float64", "float32")), seed=st.integers(0, 2**31 - 1),
)
def test_b1_host_path_equals_tensor_path_and_batched_members(agent, kind, d, k, n, size, fast, sentinel, dtype, seed):
    """The single agent's round on numpy views of its CPU tensors (the host path, taken with one
    BLAS thread), the same code on tensor views (``estimator.host = False``: what other devices
    run) and each member of a batched agent (B = 3, the ``bmm`` path) score alike and hold the
    same estimate, round by round, when they play the same arms (the host agent's choices, so a
    near-tie cannot fork the runs); every factor stays the identity past its rows."""
    # float32 results agree to ~eps32 cond(A_hat); the bursts of 1e-2..1e2 rows and the huge rows
    # reach cond ~1e5 and beyond, where two roundings of the same code differ by more than 2e-3
    assume(dtype == "float64" or kind not in ("orth_bursts", "huge_rows"))
    with threadpool_limits(limits=1, user_api="blas"):
        _host_tensor_batched(agent, kind, d, k, n, size, fast, sentinel, dtype, seed)


def _assert_identity_past_the_rows(est) -> None:
    """Every member's inverse factor is the identity past its held rows (zero off the diagonal there):
    the batched products (``bmm`` over all R slots, the switch to exact updates' ``Linv S``) read it."""
    is_fd = hasattr(est, "_m")
    L_all, held = (est._Linv, est._m) if is_fd else (est.Linv, est.rows)
    for i in range(est.batch_size):
        m, R = int(held[i]), L_all.shape[-1]
        if R == 0 or (not is_fd and est.exact[i]):
            continue
        torch.testing.assert_close(L_all[i, m:], torch.eye(R, dtype=L_all.dtype)[m:], rtol=0, atol=0)
        assert (L_all[i, :m, m:] == 0).all()


def _host_tensor_batched(agent, kind, d, k, n, size, fast, sentinel, dtype, seed):
    B = 3
    X = make_stream(kind, n * B * k, d, seed).reshape(n, B, k, d)
    rewards = np.random.default_rng(seed + 1).standard_normal((n, B))
    host = [_make(agent, d, size, fast, sentinel) for _ in range(B)]
    plain = [_make(agent, d, size, fast, sentinel) for _ in range(B)]
    if dtype == "float32":
        host = [type(h)(**{**_kwargs(h), "dtype": dtype}) for h in host]
        plain = [type(h)(**{**_kwargs(h), "dtype": dtype}) for h in plain]
    for p in plain:
        p.estimator.host = False
    batched = type(host[0])(**{**_kwargs(host[0]), "batch_size": B})
    tol = dict(rtol=1e-9, atol=1e-9) if dtype == "float64" else dict(rtol=2e-3, atol=2e-3)
    if dtype == "float64" and kind == "huge_rows":
        # rows of norm up to 1e4 against lam = 0.7: cond(A_hat) ~ 1e8, and two roundings of the same
        # Woodbury formula (numpy on the host, torch bmm batched) differ by ~eps64 cond ~ 2e-8 relative
        # (agent SOFUL, d=4, k=3, n=19, size=5, fast=False, seed=0 failed at 1e-9 on the session's base too)
        tol = dict(rtol=1e-6, atol=1e-6)
    for t in range(n):
        actions = np.array([h.act(X[t, i]) for i, h in enumerate(host)])
        for i in range(B):
            s_host, s_plain = host[i].scores(X[t, i]), plain[i].scores(X[t, i])
            torch.testing.assert_close(s_host, s_plain, **tol)
        s_batched = batched.scores(X[t])
        if dtype == "float64":
            for i in range(B):
                torch.testing.assert_close(host[i].scores(X[t, i]), s_batched[i], **tol)
        for i in range(B):
            host[i].update(X[t, i], int(actions[i]), rewards[t, i])
            plain[i].update(X[t, i], int(actions[i]), rewards[t, i])
        batched.update(X[t], actions, rewards[t])
        for est in [h.estimator for h in host] + [p.estimator for p in plain] + [batched.estimator]:
            _assert_identity_past_the_rows(est)
        for i in range(B):
            scale = 1.0 + float(host[i].theta_hat.abs().max())
            torch.testing.assert_close(plain[i].theta_hat, host[i].theta_hat, rtol=tol["rtol"], atol=tol["atol"] * scale)
            if dtype == "float64":
                torch.testing.assert_close(batched.theta_hat[i], host[i].theta_hat, rtol=1e-8, atol=1e-8 * scale)
    assert [h.sketch_size for h in host] == [p.sketch_size for p in plain]


def _kwargs(agent) -> dict:
    """The constructor keywords of a _make agent (to rebuild it with another dtype or batch size)."""
    kw = dict(lam=agent.lam, beta=agent.beta, d=agent.d)
    if isinstance(agent, DBSLinUCB):
        est = agent.estimator
        kw.update(l0=est.l0, eps=est.eps, sketch=est.sketch, fast=est.fast, sentinel=est.sentinel)
    else:
        kw.update(sketch_size=agent._l, fast=agent.fast)
    return kw


@pytest.mark.parametrize("name", ["SOFUL", "CBSCFD", "DBS-FD"])
def test_b1_round_runs_on_host_views_on_cpu_and_on_tensors_when_told(name):
    """On CPU with one BLAS thread the single agent's scoring terms come from numpy views (few torch
    dispatches a round); with ``host = False``, or with several numpy BLAS threads (its products
    would be spread over them), the same code runs on tensors. Counts the aten calls of the
    common round."""
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
    for host in (True, False):
        agent = (DBSLinUCB(l0=4, eps=100.0, beta=0.4, d=30) if name == "DBS-FD"  # sketched all along
                 else _make(name, 30, 8, True, True))
        agent.estimator.host = host
        per_round = []
        with threadpool_limits(limits=1, user_api="blas"):
            for t in range(40):
                obs = torch.as_tensor(X[t])
                Count.n = 0
                with Count():
                    a = agent.act(obs)
                    agent.update(obs, a, 0.5)
                per_round.append(Count.n)
            mean, quad = agent.estimator._score_terms_one(torch.as_tensor(X[0]))
        assert isinstance(mean, np.ndarray) == host and isinstance(quad, np.ndarray) == host
        counts[host] = float(np.median(per_round[5:]))
        with threadpool_limits(limits=2, user_api="blas"):
            if numpy_blas_threads() == 2:  # settable here (some builds are single-threaded)
                assert not isinstance(agent.estimator._score_terms_one(torch.as_tensor(X[0]))[0], np.ndarray)
    assert counts[True] <= 6 < counts[False]  # ~4 (the arms' views) against ~20 on tensors


@pytest.mark.parametrize("make", [lambda: SOFUL(sketch_size=3, beta=0.3), lambda: DBSLinUCB(l0=2, eps=50.0, beta=0.3)])
def test_arms_that_require_grad_are_read_as_plain_arms(make):
    """A tensor obs with requires_grad (e.g. features from a network) is played like its values."""
    x = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    agent, ref = make(), make()
    with threadpool_limits(limits=1, user_api="blas"):  # the host path reads the arms as numpy views
        for _ in range(3):
            obs = x.clone().requires_grad_(True)
            a = agent.act(obs)
            assert a == ref.act(x)
            agent.update(obs, a, 1.0)
            ref.update(x, a, 1.0)
    torch.testing.assert_close(agent.theta_hat, ref.theta_hat)
    assert not agent.theta_hat.requires_grad


def test_dbs_host_reductions_keep_the_factor_identity_past_the_rows_and_match_batched_members():
    """DBSLinUCB's single-agent reduction (``_reduce_active_one``: numpy views and LAPACK on CPU,
    the same code on tensor views with ``host = False``) leaves its inverse factor the identity past
    the held rows, which the batched products and the switch to exact updates read, and holds the
    estimate of a batched agent's members (``_reduce_active``, the bmm path). 80 rounds at l0 = 2,
    eps = 300: ~10 reductions on the single agent's round, some with frozen blocks before the
    active one (eq. 3's cross terms), then the switch to exact updates."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3, 30))
    single = [DBSLinUCB(l0=2, eps=300.0, beta=0.3, d=30, memory_cap=False) for _ in range(2)]
    single[1].estimator.host = False
    batched = DBSLinUCB(l0=2, eps=300.0, beta=0.3, d=30, memory_cap=False, batch_size=2)
    offsets = []
    for ag in single:
        original = ag.estimator._reduce_active_one
        ag.estimator._reduce_active_one = lambda m, l, f=original, e=ag.estimator: offsets.append(int(e.rows_in[0])) or f(m, l)
    with threadpool_limits(limits=1, user_api="blas"):
        for t in range(80):
            obs = X[t]  # one object for act and update (a numpy view made twice is not known as the scored one)
            a = single[0].act(obs)
            single[1].act(obs)
            batched.act(np.stack([obs, obs]))
            for ag in single:
                ag.update(obs, a, float(obs[a].sum()))
                _assert_identity_past_the_rows(ag.estimator)
            batched.update(np.stack([obs, obs]), np.array([a, a]), np.full(2, float(obs[a].sum())))
            for ag in single:
                torch.testing.assert_close(ag.theta_hat, batched.theta_hat[0], rtol=1e-8, atol=1e-8)
    assert len(offsets) >= 2 * 8 and max(offsets) > 0 and single[0].estimator.exact_mode
