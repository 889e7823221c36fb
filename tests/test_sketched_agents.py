"""SOFUL and CBSCFD: equal to OFUL when the sketch is large, sketched radii, memory, bad input."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
import torch

import agents.cbscfd as cbscfd_module
import agents.soful as soful_module
from agents import AGENTS, CBSCFD, OFUL, SOFUL, check_agent
from agents.sketches import FrequentDirections, RobustFrequentDirections
from linbandit_gym.envs.synthetic import SyntheticLinBanditEnv

#: small d: the sketches of these tests hold more than OFUL's inverse, which is warned (asserted in
#: tests/test_agent_warnings.py); not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")


def _play(agent, env, seed, rounds):
    """Actions and theta_hat after each round, plus the played rows and rewards."""
    obs, _ = env.reset(seed=seed)
    agent.reset(seed=seed)
    actions, thetas, rows, rewards = [], [], [], []
    for _ in range(rounds):
        a = agent.act(obs)
        nxt, r, _, _, _ = env.step(a)
        agent.update(obs, a, r)
        actions.append(a)
        thetas.append(agent.theta_hat.clone())
        rows.append(np.asarray(obs[a], dtype=np.float64))
        rewards.append(r)
        obs = nxt
    return actions, torch.stack(thetas), np.array(rows), np.array(rewards)


@pytest.mark.parametrize("beta", [0.3, "theory"])
@pytest.mark.parametrize("cls", [SOFUL, CBSCFD])
@pytest.mark.parametrize("fast", [True, False])
def test_large_sketch_equals_oful(cls, fast, beta):
    """sketch_size > d: FD/RFD never shrink, so the agent is OFUL (same arms, same theta_hat)."""
    d, rounds = 6, 120
    env = SyntheticLinBanditEnv(d=d, n_arms=15, horizon=rounds, noise_std=0.3)
    kw = dict(lam=0.8, beta=beta, noise_std=0.3, delta=0.1)
    ref_actions, ref_theta, _, _ = _play(OFUL(**kw), env, 11, rounds)
    for l in (d + 1, 2 * d + 3):
        agent = cls(sketch_size=l, fast=fast, **kw)
        actions, theta, _, _ = _play(agent, env, 11, rounds)
        assert actions == ref_actions
        torch.testing.assert_close(theta, ref_theta, rtol=1e-9, atol=1e-10)
        assert agent.estimator.total_shrinkage == 0.0
        if beta == "theory":
            oful = OFUL(**kw)
            _play(oful, env, 11, rounds)
            assert agent.confidence_radius() == pytest.approx(oful.confidence_radius(), rel=1e-9)


@pytest.mark.parametrize("cls", [SOFUL, CBSCFD])
def test_small_sketch_theta_hat_is_the_sketched_ridge_estimate(cls):
    """theta_hat = A_hat^-1 sum r x with A_hat from the sketch (dense check), and the sketch
    shrinks."""
    d, l, rounds = 12, 4, 80
    env = SyntheticLinBanditEnv(d=d, n_arms=10, horizon=rounds, noise_std=0.2)
    agent = cls(lam=0.5, beta=0.2, sketch_size=l)
    _, theta, X, r = _play(agent, env, 3, rounds)
    est = agent.estimator
    assert est.total_shrinkage > 0.0 and est.sketch_size == agent.sketch_size == l
    A_hat = est.covariance().numpy() + 0.5 * np.eye(d)
    np.testing.assert_allclose(
        theta[-1].numpy(), np.linalg.solve(A_hat, X.T @ r), rtol=1e-9, atol=1e-11
    )
    oful_theta = np.linalg.solve(0.5 * np.eye(d) + X.T @ X, X.T @ r)
    assert np.abs(theta[-1].numpy() - oful_theta).max() > 1e-6  # sketching is not a no-op here


def test_sketched_theory_radii_follow_seed_000_thm2_and_thm6():
    """SOFUL's radius >= Thm. 2 with the true ln|A| (ours bounds it); CBSCFD's = Thm. 6 with
    ln|A_hat|."""
    d, l, rounds, lam, R, H, delta = 10, 3, 60, 0.7, 0.4, 1.3, 0.05
    env = SyntheticLinBanditEnv(d=d, n_arms=8, horizon=rounds, noise_std=R)
    kw = dict(lam=lam, beta="theory", noise_std=R, theta_bound=H, delta=delta)
    soful, cbscfd = SOFUL(sketch_size=l, **kw), CBSCFD(sketch_size=l, **kw)
    assert soful.confidence_radius() == pytest.approx(
        R * math.sqrt(2 * math.log(1 / delta)) + H * math.sqrt(lam)
    )
    _, _, X, _ = _play(soful, env, 5, rounds)
    _play(cbscfd, env, 5, rounds)
    sb = soful.estimator.total_shrinkage
    assert sb > 0
    logdet_true = np.linalg.slogdet(np.eye(d) + X.T @ X / lam)[1]
    paper = R * math.sqrt(1 + sb / lam) * math.sqrt(2 * math.log(1 / delta) + logdet_true) + H * (
        lam + sb
    ) / math.sqrt(lam)
    assert soful.confidence_radius() >= paper - 1e-9
    # ...and is no looser than Lemma 6 with the trace bound t L^2 (L = max arm norm), 2l rows
    L2 = float((X**2).sum(1).max())
    m = 2 * l
    lemma6 = d * math.log1p(sb / lam) + m * math.log1p(rounds * L2 / (m * lam))
    paper6 = R * math.sqrt(1 + sb / lam) * math.sqrt(2 * math.log(1 / delta) + lemma6) + H * (
        lam + sb
    ) / math.sqrt(lam)
    assert soful.confidence_radius() <= paper6 + 1e-9
    alpha = cbscfd.estimator.alpha
    A_hat = cbscfd.estimator.covariance().numpy() + lam * np.eye(d)
    logdet_hat = np.linalg.slogdet(A_hat / lam)[1]
    expected = R * math.sqrt(2 * math.log(1 / delta) + logdet_hat) + H * math.sqrt(lam + alpha)
    assert cbscfd.confidence_radius() == pytest.approx(expected, rel=1e-9)


def test_theory_ellipsoid_contains_theta_star_while_sketching():
    """||theta_hat - theta*||_{A_hat} <= beta_hat every round (Thm. 2 / Thm. 6), with shrinkage."""
    d, l, rounds = 8, 3, 150
    env = SyntheticLinBanditEnv(d=d, n_arms=10, horizon=rounds, noise_std=0.2)
    for cls in (SOFUL, CBSCFD):
        agent = cls(
            lam=1.0, beta="theory", sketch_size=l, noise_std=0.2, theta_bound=1.0, delta=0.05
        )
        obs, _ = env.reset(seed=2)
        for _ in range(rounds):
            a = agent.act(obs)
            nxt, r, _, _, _ = env.step(a)
            agent.update(obs, a, r)
            diff = agent.theta_hat.numpy() - env.unwrapped.theta_star
            A_hat = agent.estimator.covariance().numpy() + np.eye(d)
            assert math.sqrt(diff @ A_hat @ diff) <= agent.confidence_radius()
            obs = nxt
        assert agent.estimator.total_shrinkage > 0


def test_memory_reflects_the_sketch_not_d_squared():
    d = 784
    oful = OFUL(d=d)
    soful = SOFUL(d=d, sketch_size=20)
    cbscfd = CBSCFD(d=d, sketch_size=20, fast=False)
    assert oful.memory_bytes() >= 8 * d * d
    # a basis of 2l x d, plus the coordinates and the core inverse (2l x 2l each), bV (2l),
    # b_perp (d) and theta_hat (d)
    assert soful.memory_bytes() == 8 * (40 * d + 2 * 40 * 40 + 40 + 2 * d)
    assert cbscfd.memory_bytes() == 8 * (20 * d + 2 * 20 * 20 + 20 + 2 * d)
    assert soful.memory_bytes() < 0.07 * oful.memory_bytes()  # 2l/d = 5.1% plus the core
    assert (
        SOFUL(sketch_size=20).memory_bytes() == 0
    )  # nothing allocated before the first observation


@pytest.mark.parametrize("cls", [SOFUL, CBSCFD])
def test_bad_input_is_a_clear_error_and_state_is_unchanged(cls):
    agent = cls(sketch_size=2, beta=0.5)
    rng = np.random.default_rng(0)
    for _ in range(7):
        obs = rng.standard_normal((4, 5))
        agent.update(obs, agent.act(obs), 1.0)
    S, theta, t = agent.estimator.S.clone(), agent.theta_hat.clone(), agent.t
    with pytest.raises(ValueError, match="arm dimension"):
        agent.act(np.ones((4, 6)))
    with pytest.raises(ValueError):
        agent.update(np.ones((4, 6)), 0, 1.0)
    with pytest.raises(ValueError, match="out of range"):
        agent.update(np.ones((4, 5)), 9, 1.0)
    with pytest.raises(ValueError, match="reward"):
        agent.update(np.ones((4, 5)), 0, float("nan"))
    assert (
        torch.equal(S, agent.estimator.S) and torch.equal(theta, agent.theta_hat) and agent.t == t
    )


@pytest.mark.parametrize("cls", [SOFUL, CBSCFD])
def test_contract_registry_float32_and_repr(cls):
    env = SyntheticLinBanditEnv(d=5, n_arms=6, horizon=30)
    check_agent(cls(sketch_size=3, beta=0.1), env, n_steps=25)
    assert AGENTS[cls.__name__] is cls
    agent = cls(sketch_size=3, beta=0.1, dtype=torch.float32, d=5)
    est_cls = FrequentDirections if cls is SOFUL else RobustFrequentDirections
    assert type(agent.estimator) is est_cls and agent.estimator.dtype == torch.float32
    obs, _ = env.reset(seed=0)
    a = agent.act(obs)
    agent.update(obs, a, 0.5)
    assert agent.theta_hat.dtype == torch.float32
    assert "sketch_size=3" in repr(agent)


def test_doctests():
    for mod in (soful_module, cbscfd_module):
        assert doctest.testmod(mod).failed == 0
