"""OFUL: exact ridge estimate, sublinear regret, batched scoring, inputs and devices."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym
from agents import OFUL, check_agent
from linbandit_gym.envs.synthetic import SyntheticLinBanditEnv


@settings(max_examples=25, deadline=None)
@given(
    d=st.integers(1, 12),
    n=st.integers(1, 60),
    lam=st.floats(1e-2, 1e2),
    seed=st.integers(0, 2**31 - 1),
)
def test_theta_hat_equals_closed_form_ridge(d, n, lam, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.1, 3.0)
    r = rng.standard_normal(n)
    agent = OFUL(lam=lam, beta=0.5)
    for x, reward in zip(X, r):
        agent.update(x[None, :], 0, reward)
    expected = np.linalg.solve(lam * np.eye(d) + X.T @ X, X.T @ r)
    np.testing.assert_allclose(agent.theta_hat.numpy(), expected, atol=1e-8, rtol=1e-8)
    # the width is ||x||_{A^-1}: check it against the dense inverse
    arms = rng.standard_normal((5, d))
    dense = np.einsum("kd,de,ke->k", arms, np.linalg.inv(lam * np.eye(d) + X.T @ X), arms)
    np.testing.assert_allclose(
        agent.estimator.quad_inv(torch.as_tensor(arms)).numpy(), dense, rtol=1e-8, atol=1e-10
    )


def test_act_maximises_the_ucb_computed_densely():
    rng = np.random.default_rng(0)
    agent = OFUL(lam=0.5, beta=0.7)
    env = SyntheticLinBanditEnv(d=6, n_arms=30, horizon=40)
    obs, _ = env.reset(seed=0)
    X, r = [], []
    for _ in range(40):
        a = agent.act(obs)
        A = 0.5 * np.eye(6) + (np.array(X).T @ np.array(X) if X else 0)
        theta = np.linalg.solve(A, np.array(X).T @ np.array(r)) if X else np.zeros(6)
        o = obs.astype(np.float64)
        ucb = o @ theta + 0.7 * np.sqrt(np.einsum("kd,de,ke->k", o, np.linalg.inv(A), o))
        assert a == int(np.argmax(ucb))
        nxt, reward, _, trunc, _ = env.step(a)
        agent.update(obs, a, reward)
        X.append(o[a])
        r.append(reward)
        obs = nxt
    del rng


def test_regret_is_sublinear_on_the_synthetic_env():
    records = linbandit_gym.run(
        "LinBandit-Synthetic-v0",
        OFUL(lam=1.0, beta=0.1),
        seeds=[0],
        env_kwargs=dict(d=30, n_arms=50, horizon=2000, noise_std=0.1),
    )
    regret = records["regret"].to_numpy()
    first, second = regret[:1000].sum(), regret[1000:].sum()
    assert second < 0.35 * first, (first, second)


def test_theory_beta_grows_like_log_det():
    agent = OFUL(lam=1.0, beta="theory", delta=0.1, noise_std=0.5, theta_bound=1.0)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    radii = []
    for x in X:
        radii.append(agent.confidence_radius())
        agent.update(x[None], 0, 0.0)
    radii.append(agent.confidence_radius())
    _, logdet = np.linalg.slogdet(np.eye(4) + X.T @ X)
    expected = 0.5 * math.sqrt(2 * math.log(1 / 0.1) + logdet) + 1.0
    assert radii[-1] == pytest.approx(expected, rel=1e-10)
    assert radii[0] == pytest.approx(0.5 * math.sqrt(2 * math.log(10)) + 1.0)
    assert all(b >= a for a, b in zip(radii, radii[1:]))


def test_numpy_and_torch_inputs_agree_and_float32_works():
    rng = np.random.default_rng(1)
    arms = rng.standard_normal((20, 8)).astype(np.float32)
    a64, a32, at = OFUL(beta=0.2), OFUL(beta=0.2, dtype=torch.float32), OFUL(beta=0.2)
    for step in range(10):
        choice = a64.act(arms)
        assert at.act(torch.as_tensor(arms)) == choice
        a32.act(arms)
        for ag in (a64, a32, at):
            ag.update(arms, choice, float(step % 3))
    assert a32.theta_hat.dtype == torch.float32
    np.testing.assert_allclose(a32.theta_hat.numpy(), a64.theta_hat.numpy(), atol=1e-4)


def test_memory_bytes_is_d_squared_floats():
    agent = OFUL(d=100)
    assert agent.memory_bytes() >= 100 * 100 * 8
    assert agent.memory_bytes() < 100 * 100 * 8 * 1.1


def test_bad_feedback_leaves_state_unchanged():
    agent = OFUL(beta=0.1)
    arms = np.eye(3)
    agent.update(arms, 1, 2.0)
    before = (agent.theta_hat.clone(), np.array(agent.estimator.A_inv), agent.t)
    for action, reward in [
        (3, 1.0),
        (-1, 1.0),
        (1.0, 1.0),
        (True, 1.0),
        (0, float("nan")),
        (0, "x"),
    ]:
        with pytest.raises(ValueError):
            agent.update(arms, action, reward)
    with pytest.raises(ValueError, match="dimension"):
        agent.act(np.eye(4))
    with pytest.raises(ValueError, match="arm matrix"):
        agent.act(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        agent.act(np.full((2, 3), np.nan))
    assert torch.equal(before[0], agent.theta_hat) and np.array_equal(
        before[1], agent.estimator.A_inv
    )
    assert agent.t == before[2]


def test_reset_forgets_and_reads_a_new_dimension():
    agent = OFUL()
    agent.update(np.eye(3), 0, 1.0)
    agent.reset(seed=1)
    assert agent.d is None and agent.memory_bytes() == 0
    agent.act(np.eye(5))
    assert agent.d == 5


def test_check_agent_accepts_oful():
    import gymnasium as gym

    synthetic_small = dict(d=10, n_arms=5, horizon=30)
    check_agent(OFUL(beta=0.1), gym.make("LinBandit-Synthetic-v0", **synthetic_small))
