"""PhasedElimination (Lattimore & Szepesvari ch. 22) on a fixed arm set."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import linbandit_gym  # noqa: F401
from agents import AGENTS, PhasedElimination, check_agent
from agents.design import solve_g_design
from linbandit_gym.evaluate import run


def make_env(d=5, n_arms=20, horizon=20_000, noise_std=0.1):
    return gym.make(
        "LinBandit-Synthetic-v0",
        d=d,
        n_arms=n_arms,
        fixed_arms=True,
        horizon=horizon,
        noise_std=noise_std,
    )


def test_registered_and_passes_check_agent():
    assert AGENTS["PhasedElimination"] is PhasedElimination
    check_agent(PhasedElimination(noise_std=0.1), make_env(horizon=100), n_steps=60)


def test_regret_is_sublinear_on_a_fixed_arm_set():
    horizon = 20_000
    agent = PhasedElimination(noise_std=0.1, delta=1 / horizon)
    records = run(make_env(horizon=horizon), agent, seeds=3, progress=False)
    for seed, g in records.groupby("seed"):
        regret = g["cumulative_regret"].to_numpy()
        half, full = regret[horizon // 2 - 1], regret[-1]
        # concave growth: the second half adds far less than the first half
        assert full - half <= 0.5 * half + 1.0, (seed, half, full)
        # and the average regret per round vanishes (a uniformly random arm pays ~0.25 here)
        assert full / horizon < 0.02
        # the arms it still plays at the end are near-optimal
        assert g["regret"].to_numpy()[-1000:].mean() < 0.01


def test_noise_free_run_keeps_the_best_arm_and_ends_on_it():
    env = make_env(d=4, n_arms=15, horizon=3000, noise_std=1e-9)
    agent = PhasedElimination(noise_std=1e-6)
    obs, info = env.reset(seed=1)
    agent.reset(seed=1)
    best = info["best_arm"]
    for _ in range(3000):
        assert best in agent.active.tolist() if agent.active is not None else True
        a = agent.act(obs)
        obs2, r, term, trunc, info = env.step(a)
        agent.update(obs, a, r)
        obs = obs2
    assert agent.active.tolist() == [best]
    assert a == best


def test_phase_plan_is_the_books_formula():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 4)).astype(np.float32)
    agent = PhasedElimination(noise_std=0.7, delta=0.02, design_eps=0.1)
    agent.act(x)
    res = solve_g_design(x.astype(np.float64), 0.1)
    k, ell = 12, 1
    expected = np.ceil(
        2
        * 0.7**2
        * res.value
        * np.asarray(res.weights)
        * math.log(k * ell * (ell + 1) / 0.02)
        / 0.5**2
    )
    expected[np.asarray(res.weights) == 0] = 0
    np.testing.assert_array_equal(agent._plan, expected.astype(np.int64))
    # the phase plays exactly that plan, then starts phase 2 on the survivors
    theta = rng.standard_normal(4)
    for _ in range(int(expected.sum())):
        a = agent.act(x)
        agent.update(x, a, float(x[a] @ theta + 0.7 * rng.standard_normal()))
    assert agent.phase == 2 or agent._commit is not None
    assert agent.phase_lengths[0] == int(expected.sum())


def test_changing_arm_sets_raise_a_clear_error_and_leave_state():
    env = gym.make("LinBandit-Synthetic-v0", d=3, n_arms=5, horizon=10)  # fixed_arms=False
    agent = PhasedElimination()
    obs, _ = env.reset(seed=0)
    a = agent.act(obs)
    obs2, r, *_ = env.step(a)
    agent.update(obs, a, r)
    done = agent._done.copy()
    with pytest.raises(ValueError, match="fixed_arms=True"):
        agent.act(obs2)
    with pytest.raises(ValueError, match="arm set changed"):
        agent.update(obs2, 0, 0.0)
    np.testing.assert_array_equal(agent._done, done)
    agent.reset()
    assert agent.act(obs2) in range(5)  # reset() starts over on the new set


def test_degenerate_inputs():
    # a single distinct arm: commit to it at once
    assert PhasedElimination().act(np.ones((4, 3))) == 0
    assert PhasedElimination().act(np.array([[1.0, 2.0]])) == 0
    # arms in a 2-dim subspace of R^6 (float32, as envs give them): the design uses the span
    rng = np.random.default_rng(3)
    basis = np.linalg.qr(rng.standard_normal((6, 2)))[0]
    x = (rng.standard_normal((10, 2)) @ basis.T).astype(np.float32)
    theta = rng.standard_normal(6)
    means = x.astype(np.float64) @ theta
    agent = PhasedElimination(noise_std=0.05)
    for _ in range(20_000):
        a = agent.act(x)
        agent.update(x, a, float(means[a] + 0.05 * rng.standard_normal()))
    assert agent.active.tolist() == [int(np.argmax(means))]
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PhasedElimination().act(bad)
    agent = PhasedElimination()
    agent.act(x)
    for action in (10, -1, 2.5, True):
        with pytest.raises(ValueError):
            agent.update(x, action, 0.0)
    assert isinstance(agent.memory_bytes(), int) and agent.memory_bytes() > 0
