"""Numerics of the one sketch core at any row scale and ridge, in float32 and float64 (issue 10).

Every agent plays adversarial streams (tests/sketch_streams.py) scaled by 1e-6..1e8 with lam in
1e-6..1e4: theta_hat and the scores stay finite every round, or the agent raises an error that
names the cause (a row whose squared norm overflows the dtype). These streams broke the
previous code: float64 OFUL on rows of norm 1e8 (Sherman-Morrison drifted to an indefinite
inverse and overflowed within ~35 rounds), DBS-FD in float32/float64 at 1e8 likewise after its
switch to exact updates.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sketch_streams import DTYPES, KINDS, make_stream

from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB
from agents.batched import BatchedSOFUL

SCALES = (1e-6, 1e-3, 1.0, 1e3, 1e8)
LAMS = (1e-6, 1e-2, 1.0, 1e4)


def _make(kind: str, lam: float, dtype, d: int):
    kw = dict(lam=lam, beta=0.1, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small d: the sketch may hold more than OFUL (warned)
        if kind == "OFUL":
            return OFUL(**kw)
        if kind in ("SOFUL", "CBSCFD"):
            return (SOFUL if kind == "SOFUL" else CBSCFD)(sketch_size=3, **kw)
        return DBSLinUCB(l0=1, eps=2.0, sketch="rfd" if kind == "DBS-RFD" else "fd", memory_cap=False, **kw)


@settings(max_examples=60, deadline=None)
@given(agent=st.sampled_from(["OFUL", "SOFUL", "CBSCFD", "DBS-FD", "DBS-RFD"]), stream=st.sampled_from(KINDS),
       scale=st.sampled_from(SCALES), lam=st.sampled_from(LAMS), dtype=st.sampled_from(DTYPES),
       d=st.integers(2, 8), seed=st.integers(0, 2**31 - 1))
def test_state_stays_finite_at_any_scale_and_ridge(agent, stream, scale, lam, dtype, d, seed):
    n, k = 60, 4
    X = make_stream(stream, n * k, d, seed).reshape(n, k, d) * scale
    theta = np.random.default_rng(seed).standard_normal(d)
    ag = _make(agent, lam, dtype, d)
    try:
        for t in range(n):
            a = ag.act(X[t])
            ag.update(X[t], a, float(X[t, a] @ theta))
            assert torch.isfinite(ag.theta_hat).all(), (t, ag.theta_hat)
        assert torch.isfinite(ag.scores(X[-1])).all()
    except (FloatingPointError, ValueError) as exc:  # never NaN silently: an error naming the cause
        assert "overflow" in str(exc) and str(dtype) in str(exc)


@pytest.mark.parametrize("dtype", DTYPES)
def test_oful_and_dbs_on_rows_of_norm_1e8_stay_finite_and_learn(dtype):
    """The issue's failure: float64 OFUL at norm 1e8 overflowed at t ~ 35 (inverse gone indefinite)."""
    rng = np.random.default_rng(0)
    d, K = 20, 10
    th = rng.standard_normal(d)
    th /= np.linalg.norm(th)
    for agent in (OFUL(lam=1.0, beta=0.1, dtype=dtype), DBSLinUCB(lam=1.0, beta=0.1, l0=2, eps=8.0, dtype=dtype)):
        for _ in range(300):
            arms = rng.standard_normal((K, d)) * 1e8 / np.sqrt(d)
            a = agent.act(arms)
            agent.update(arms, a, float(arms[a] @ th))
        assert torch.isfinite(agent.theta_hat).all()
        assert float((agent.theta_hat.double() - torch.as_tensor(th)).norm()) < 0.8  # it still learns theta* (norm 1)


def test_overflowing_rows_are_rejected_with_the_cause_and_state_unchanged():
    agent = SOFUL(sketch_size=3, beta=0.1, dtype=torch.float32)
    arms = np.ones((3, 4))
    agent.update(arms, agent.act(arms), 1.0)
    before = agent.theta_hat.clone()
    huge = np.full((3, 4), 1e30)  # finite in float32, but ||x||^2 overflows
    with pytest.raises(ValueError, match="overflows torch.float32"):
        agent.update(huge, 0, 1.0)
    assert torch.equal(agent.theta_hat, before) and agent.t == 1


def test_float32_batched_members_choose_as_the_single_float32_agent():
    """One implementation: member i of a float32 batch runs the single agent's operations."""
    rng = np.random.default_rng(3)
    B, d, K = 3, 30, 8
    obs = rng.standard_normal((60, B, K, d)).astype(np.float32)
    bag = BatchedSOFUL(B, sketch_size=5, beta=0.3, dtype=torch.float32)
    singles = [SOFUL(sketch_size=5, beta=0.3, dtype=torch.float32) for _ in range(B)]
    for t in range(60):
        a = bag.act(obs[t])
        for i, s in enumerate(singles):
            assert s.act(obs[t, i]) == a[i], (t, i)
            s.update(obs[t, i], int(a[i]), float(obs[t, i, a[i], 0]))
        bag.update(obs[t], a, obs[t, np.arange(B), a, 0])


def test_dbslinucb_memory_never_above_oful_at_d784():
    """memory_cap (default): DBSLinUCB(l0=50, eps=8) never holds more than OFUL's d x d inverse;
    the paper's literal cap alone does (its 2l buffer of block 2 plus the frozen rows)."""
    d = 784
    oful = OFUL(d=d).memory_bytes()
    rng = np.random.default_rng(0)
    agent = DBSLinUCB(lam=0.2, beta=0.01, l0=50, eps=8.0, d=d)
    literal = DBSLinUCB(lam=0.2, beta=0.01, l0=50, eps=8.0, d=d, memory_cap=False)
    peak_literal = 0
    for _ in range(700):
        arms = rng.standard_normal((10, d))
        arms /= np.linalg.norm(arms, axis=1, keepdims=True)
        for ag in (agent, literal):
            ag.update(arms, ag.act(arms), float(rng.standard_normal()))
        assert agent.memory_bytes() <= oful
        peak_literal = max(peak_literal, literal.memory_bytes())
    assert agent.memory_bytes() > 0 and peak_literal > 0


@pytest.mark.slow
def test_dbslinucb_memory_never_above_oful_on_the_mnist_demo():
    """The demo configuration (MNIST, l0=50, eps=8, lam=0.2, beta=0.01, T=2000): memory_bytes()
    recorded every round never exceeds OFUL's, while the paper's literal cap alone does."""
    import linbandit_gym

    kw = dict(env_kwargs={"horizon": 2000}, seeds=[0], progress=False)
    oful = linbandit_gym.run("LinBandit-MNIST-v0", OFUL(lam=0.2, beta=0.01), **kw)["memory_bytes"].max()
    dbs = linbandit_gym.run("LinBandit-MNIST-v0", DBSLinUCB(lam=0.2, beta=0.01, l0=50, eps=8.0), **kw)
    literal = linbandit_gym.run("LinBandit-MNIST-v0", DBSLinUCB(lam=0.2, beta=0.01, l0=50, eps=8.0, memory_cap=False), **kw)
    assert (dbs["memory_bytes"] <= oful).all()
    assert literal["memory_bytes"].max() > oful


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("make", [lambda dt: OFUL(lam=1.0, beta=0.1, dtype=dt),
                                  lambda dt: DBSLinUCB(lam=1.0, beta=0.1, l0=25, eps=1.0, dtype=dt)],
                         ids=["OFUL", "DBSLinUCB-exact"])
def test_a_valid_inverse_is_never_repaired(make, dtype, monkeypatch):
    """The O(d^3) repair of the exact inverse runs only when a width proves it invalid, not when
    raw width and floor are the same number rounded two ways (round 1: both ||x||^2 / lam)."""
    import agents.sketches.dbs as dbs_module
    import agents.sketches.exact as exact_module

    calls = []
    real = exact_module.repair_inverse_

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(exact_module, "repair_inverse_", counting)
    monkeypatch.setattr(dbs_module, "repair_inverse_", counting)
    rng = np.random.default_rng(0)
    theta = rng.standard_normal(30)
    agent = make(dtype)
    agent.reset(seed=0)
    for _ in range(40):
        arms = rng.standard_normal((8, 30))
        arms /= np.linalg.norm(arms, axis=1, keepdims=True)  # unit norms: round 1 raw == floor
        a = agent.act(arms)
        agent.update(arms, a, float(arms[a] @ theta))
    exact = getattr(agent.estimator, "exact", np.ones(1, dtype=bool))
    assert bool(exact.all())  # the exact path ran (DBSLinUCB: switched under its memory cap)
    assert calls == []
