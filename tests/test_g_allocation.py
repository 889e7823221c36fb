"""BAI agents on LinBandit-BAI-v0: GAllocation, XYStatic, XYAdaptive (Jamieson 2018, Sec. 2).

The fast tests use small noise so that a few dozen episodes take seconds; the slow ones
(``-m slow``) run >= 100 episodes per agent and instance. Error rates must stay below
delta; mean sample complexities are printed (``pytest -s``).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym  # noqa: F401  (registers the ids)
from agents import AGENTS, GAllocation, XYAdaptive, XYStatic, check_agent
from agents._bai import LeastSquares
from agents.design import round_design, spanning_subset
from linbandit_gym.envs.bai import BAILinBanditEnv

BAI_AGENTS = [GAllocation, XYStatic, XYAdaptive]
DELTA = 0.05


def play(env, agent, seed):
    """One episode; returns the final info and the actions."""
    obs, _ = env.reset(seed=seed)
    agent.reset(seed=seed)
    actions = []
    while True:
        a = agent.act(obs)
        actions.append(a)
        obs2, r, term, trunc, info = env.step(a)
        agent.update(obs, a, r)
        obs = obs2
        if term or trunc:
            return info, actions


def episodes(env_kwargs, cls, seeds, **agent_kwargs):
    env = BAILinBanditEnv(**env_kwargs)
    agent = cls(delta=DELTA, noise_std=env_kwargs["noise_std"], **agent_kwargs)
    infos = [play(env, agent, s)[0] for s in seeds]
    errors = sum(not i["correct"] for i in infos)
    truncated = sum(i["recommendation"] == -1 for i in infos)
    pulls = np.array([i["n_pulls"] for i in infos])
    return errors, truncated, pulls


def test_registered_and_pass_check_agent():
    for cls in BAI_AGENTS:
        assert AGENTS[cls.__name__] is cls
        env = gym.make("LinBandit-BAI-v0", instance="soare", d=3, omega=0.3, noise_std=0.2)
        check_agent(cls(noise_std=0.2), env, n_steps=40)
        check_agent(
            cls(noise_std=0.2), gym.make("LinBandit-BAI-v0", instance="random", d=3, n_arms=5)
        )


FAST_INSTANCES = [
    dict(instance="soare", d=3, omega=0.3, noise_std=0.2),
    dict(instance="random", d=4, n_arms=6, noise_std=0.2, min_gap=0.05),
]


#: every agent on the Soare instance, and G-allocation on the random one too, in the default suite
ERROR_RATE_CASES = [
    pytest.param(
        env_kwargs,
        cls,
        id=f"{cls.__name__}-{name}",
        marks=[pytest.mark.slow] if name == "random" and cls is not GAllocation else [],
    )
    for cls in BAI_AGENTS
    for name, env_kwargs in zip(["soare", "random"], FAST_INSTANCES)
]


@pytest.mark.parametrize("env_kwargs, cls", ERROR_RATE_CASES)
def test_error_rate_below_delta_fast(env_kwargs, cls):
    n = 30 if env_kwargs["instance"] == "soare" else 20  # random: a new instance (design) per seed
    errors, truncated, pulls = episodes(env_kwargs, cls, range(n))
    print(f"\n{cls.__name__} on {env_kwargs}: errors {errors}/{n}, mean pulls {pulls.mean():.1f}")
    assert truncated == 0
    assert errors / n <= DELTA


def test_xy_adaptive_needs_fewer_samples_than_g_allocation_on_soare_fast():
    # Soare et al.'s instance: G-allocation pays ~d / gap^2, XY-adaptive ~ the oracle.
    kw = dict(instance="soare", d=5, omega=0.1, noise_std=0.1)
    seeds = range(20)
    _, _, g = episodes(kw, GAllocation, seeds)
    _, _, xy = episodes(kw, XYAdaptive, seeds)
    print(
        f"\nsoare d=5 omega=0.1 sigma=0.1: G-allocation {g.mean():.1f}, "
        f"XY-adaptive {xy.mean():.1f} pulls"
    )
    assert xy.mean() < 0.6 * g.mean()


# -- static allocations -------------------------------------------------------------
@pytest.mark.parametrize("cls", [GAllocation, XYStatic])
@pytest.mark.parametrize("allocation", ["tracking", "rounding", "greedy"])
def test_static_pulls_do_not_depend_on_rewards(cls, allocation):
    x = np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32)
    sequences = []
    for stream in range(2):
        rng = np.random.default_rng(stream)
        agent = cls(allocation=allocation, c=1e9)  # huge width: never stops
        seq = []
        for _ in range(150):
            a = agent.act(x)
            agent.update(x, a, float(100 * rng.standard_normal()))
            seq.append(a)
        sequences.append(seq)
    assert sequences[0] == sequences[1]
    assert all(0 <= a < 7 for a in sequences[0])


@settings(max_examples=20, deadline=None)
@given(k=st.integers(2, 12), d=st.integers(1, 5), seed=st.integers(0, 2**31 - 1))
def test_tracking_follows_the_design(k, d, seed):
    x = np.random.default_rng(seed).standard_normal((k, d))
    agent = GAllocation(c=1e9)
    agent.act(x)
    w = agent.weights.numpy()
    support = int((w > 0).sum())
    for n in range(1, 120):
        a = agent.act(x)
        assert w[a] > 0  # only support arms are pulled
        agent.update(x, a, 0.0)
        assert np.all(np.abs(agent.counts - n * w) < support)


def test_rounding_blocks_are_efficient_apportionments():
    x = np.random.default_rng(1).standard_normal((9, 3))
    agent = GAllocation(allocation="rounding", c=1e9, block=40)
    agent.act(x)
    block = round_design(agent.weights.numpy(), 40)
    for n in range(1, 121):
        a = agent.act(x)
        agent.update(x, a, 0.0)
        if n % 40 == 0:
            np.testing.assert_array_equal(agent.counts, (n // 40) * block)


@pytest.mark.parametrize("cls", [GAllocation, XYStatic])
def test_greedy_is_eq14(cls):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 3))
    agent = cls(allocation="greedy", c=1e9)
    init = spanning_subset(torch.as_tensor(x))
    targets = (
        x
        if cls is GAllocation
        else np.array([x[a] - x[b] for a in range(8) for b in range(a + 1, 8)])
    )
    for n in range(60):
        a = agent.act(x)
        if n < len(init):
            assert a == init[n]
        else:
            A = (x * agent.counts[:, None]).T @ x
            # brute force eq. 14: max over targets of y^T (A + x x^T)^-1 y for every candidate
            obj = [
                np.max(
                    np.einsum("md,de,me->m", targets, np.linalg.inv(A + np.outer(c, c)), targets)
                )
                for c in x
            ]
            assert obj[a] <= min(obj) * (1 + 1e-7)
        agent.update(x, a, float(rng.standard_normal()))


# -- the stopping rule (eq. 11) and the width (eq. 3) -------------------------------
@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(2, 7),
    d=st.integers(1, 4),
    beta=st.floats(0.0, 3.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_stopping_rule_matches_brute_force_eq11(k, d, beta, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((k, d))
    agent = GAllocation(c=1.0)
    agent.act(x)
    counts = rng.integers(1, 30, size=k)
    sums = counts * (x @ rng.standard_normal(d)) + rng.standard_normal(k) * np.sqrt(counts)
    got = agent.stopping_arm(LeastSquares(agent.z, counts, sums), beta)
    A = (x * counts[:, None]).T @ x
    Ainv = np.linalg.pinv(A)
    theta = Ainv @ (x.T @ sums)
    ok = []
    for i in range(k):
        diff = x[i] - x
        widths = np.sqrt(np.clip(np.einsum("kd,de,ke->k", diff, Ainv, diff), 0, None))
        gaps = diff @ theta
        ok.append(bool(np.all(beta * widths <= gaps + 1e-9 * (1 + np.abs(gaps)))))
    if got is None:
        assert (
            not any(ok)
            or np.linalg.matrix_rank(A) < np.linalg.matrix_rank(x)
            or _near_tie(x, theta, Ainv, beta)
        )
    else:
        assert ok[got] and got == int(np.argmax(x @ theta))


def _near_tie(x, theta, ainv, beta):
    s = x @ theta
    best = np.argmax(s)
    diff = x[best] - x
    w = beta * np.sqrt(np.clip(np.einsum("kd,de,ke->k", diff, ainv, diff), 0, None))
    return bool(np.any(np.abs(w - (s[best] - s)) < 1e-7 * (1 + np.abs(s[best] - s))))


def test_width_formula_and_literal_c():
    agent = GAllocation(delta=0.1, noise_std=0.5)
    agent.act(np.eye(4))
    for k in (1, 10, 1000):
        expected = 0.5 * math.sqrt(2 * math.log(math.pi**2 * 3 * k**2 / (6 * 0.1)))
        assert abs(agent.beta(k) - expected) < 1e-12
    literal = GAllocation(delta=0.1, c=2.0)
    literal.act(np.eye(4))
    assert abs(literal.beta(7) - 2.0 * math.sqrt(math.log(16 / 0.1))) < 1e-12


@pytest.mark.parametrize("cls", BAI_AGENTS)
def test_noise_free_run_stops_fast_and_right(cls):
    env = BAILinBanditEnv(instance="random", d=4, n_arms=6, noise_std=1e-9)
    for seed in range(3):
        info, _ = play(env, cls(noise_std=1e-6), seed)
        assert info["correct"] and info["n_pulls"] <= 200


# -- degenerate inputs and the interface ----------------------------------------------
@pytest.mark.parametrize("cls", BAI_AGENTS)
def test_single_or_identical_arms_recommend_at_once(cls):
    agent = cls()
    assert agent.act(np.array([[1.0, 2.0, 3.0]])) == 1  # K = 1: stop, recommend arm 0
    agent.reset()
    assert agent.act(np.ones((4, 3))) == 4  # all identical: stop, recommend arm 0
    agent.reset()
    assert agent.act(np.zeros((3, 2))) == 3  # all zero arms are identical too


@pytest.mark.parametrize("cls", BAI_AGENTS)
def test_rank_deficient_arms_and_duplicates(cls):
    rng = np.random.default_rng(4)
    basis = np.linalg.qr(rng.standard_normal((5, 2)))[0]  # a 2-dim subspace of R^5
    coords = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.5], [-1.0, 0.2], [0.7, 0.5]])
    x = (coords @ basis.T).astype(np.float32)  # arm 4 duplicates arm 2
    theta = (
        basis @ np.array([1.0, 0.3]) + np.linalg.qr(np.c_[basis, rng.standard_normal(5)])[0][:, 2]
    )
    means = x.astype(np.float64) @ theta
    best = int(np.argmax(means))
    agent = cls(noise_std=0.1)
    agent.reset(seed=0)
    for _ in range(100_000):
        a = agent.act(x)
        if a >= 5:
            break
        agent.update(x, a, float(means[a] + 0.1 * rng.standard_normal()))
    assert a - 5 == best
    assert agent.rank == 2


@pytest.mark.parametrize("cls", BAI_AGENTS)
def test_bad_input_is_rejected_and_leaves_state_unchanged(cls):
    x = np.random.default_rng(0).standard_normal((4, 3))
    agent = cls()
    a = agent.act(x)
    agent.update(x, a, 1.0)
    before = (agent.counts.copy(), agent.sums.copy(), agent.n_pulls)
    for action in (8, -1, 1.5, True, "0"):
        with pytest.raises(ValueError):
            agent.update(x, action, 0.0)
    for reward in (math.nan, math.inf, "x"):
        with pytest.raises(ValueError):
            agent.update(x, 0, reward)
    with pytest.raises(ValueError, match="arm set changed"):
        agent.act(x + 1.0)
    with pytest.raises(ValueError, match="arm set changed"):
        agent.update(x[:3], 0, 0.0)
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        agent.act(bad)
    np.testing.assert_array_equal(agent.counts, before[0])
    np.testing.assert_array_equal(agent.sums, before[1])
    assert agent.n_pulls == before[2]
    assert isinstance(agent.memory_bytes(), int) and agent.memory_bytes() > 0


@pytest.mark.parametrize("cls", BAI_AGENTS)
def test_tensor_observations_give_the_same_episode(cls):
    env = BAILinBanditEnv(instance="soare", d=3, omega=0.3, noise_std=0.2)
    info_np, acts_np = play(env, cls(noise_std=0.2), 5)

    class TensorObs(gym.ObservationWrapper):
        def observation(self, obs):
            return torch.as_tensor(obs)

    tensor_env = TensorObs(BAILinBanditEnv(instance="soare", d=3, omega=0.3, noise_std=0.2))
    info_t, acts_t = play(tensor_env, cls(noise_std=0.2), 5)
    assert acts_np == acts_t and info_np["correct"] == info_t["correct"]


def test_equal_means_never_stop_before_truncation():
    # arms (1, 0) and (1, 1) have the same mean under theta* = e_1 once e_2's weight is 0;
    # no rule can separate them, so the episode runs into max_pulls.
    x = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]], dtype=np.float32)
    theta = np.array([1.0, 0.0])
    agent = GAllocation(noise_std=0.1)
    rng = np.random.default_rng(0)
    for _ in range(3000):
        a = agent.act(x)
        assert a < 3
        agent.update(x, a, float(x[a] @ theta + 0.1 * rng.standard_normal()))


def test_xy_adaptive_phase_lengths_meet_eq19():
    env = BAILinBanditEnv(instance="soare", d=4, omega=0.2, noise_std=0.1)
    agent = XYAdaptive(noise_std=0.1, alpha=0.5)
    levels = []
    original = agent._phase_length

    def spy(w, level, rho):
        n, plan = original(w, level, rho)
        counts = plan.astype(float)
        xs = env.arms.astype(np.float64)
        idx = agent.active
        A = (xs * counts[:, None]).T @ xs
        pairs = np.array([xs[a] - xs[b] for a in idx for b in idx if a < b])
        value = np.max(np.einsum("md,de,me->m", pairs, np.linalg.pinv(A), pairs))
        levels.append((n, int(plan.sum()), value, level))
        return n, plan

    agent._phase_length = spy
    info, _ = play(env, agent, 0)
    assert info["correct"] and len(levels) == agent.phase >= 2
    for n, total, value, level in levels:
        assert total == n and value <= level * (1 + 1e-9)
    # the target level shrinks by alpha each phase (eq. 19)
    assert all(b[3] < a[3] for a, b in zip(levels, levels[1:]))


# -- slow: >= 100 episodes per agent ------------------------------------------------------
SLOW_INSTANCES = [
    dict(instance="soare", d=5, omega=0.1, noise_std=0.3),
    dict(instance="random", d=5, n_arms=10, noise_std=0.5, min_gap=0.05),
]


@pytest.mark.slow
@pytest.mark.parametrize("env_kwargs", SLOW_INSTANCES, ids=["soare", "random"])
@pytest.mark.parametrize("cls", BAI_AGENTS, ids=lambda c: c.__name__)
def test_error_rate_below_delta_100_runs(env_kwargs, cls):
    n = 100
    errors, truncated, pulls = episodes(env_kwargs, cls, range(n))
    print(
        f"\n{cls.__name__} on {env_kwargs}: errors {errors}/{n}, "
        f"mean pulls {pulls.mean():.0f} +- {pulls.std():.0f}"
    )
    assert truncated == 0
    assert errors / n <= DELTA


@pytest.mark.slow
def test_xy_adaptive_beats_g_allocation_on_soare_100_runs():
    kw = SLOW_INSTANCES[0]
    _, _, g = episodes(kw, GAllocation, range(100))
    _, _, xy = episodes(kw, XYAdaptive, range(100))
    print(
        f"\nsoare d=5 omega=0.1 sigma=0.3: G-allocation {g.mean():.0f}, "
        f"XY-adaptive {xy.mean():.0f} pulls"
    )
    assert xy.mean() < 0.6 * g.mean()
