"""LinBandit-BAI-v0: fixed-confidence best-arm identification (Jamieson 2018, Sec. 2)."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym  # noqa: F401  (registers the ids)
from linbandit_gym.envs.bai import BAILinBanditEnv

ENV_ID = "LinBandit-BAI-v0"
CONFIGS = [
    {},
    {"instance": "soare", "d": 5, "omega": 0.3},
    {"instance": "random", "d": 4, "n_arms": 6},
    {"max_pulls": 2},  # the checker's random actions hit truncation and stops
]


def _quiet_check(env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the infinite-Box bounds warning
        check_env(env, skip_render_check=True)


@pytest.mark.parametrize("kwargs", CONFIGS)
def test_check_env_raw_and_through_make(kwargs):
    _quiet_check(BAILinBanditEnv(**kwargs))
    env = gym.make(ENV_ID, **kwargs)
    _quiet_check(env.unwrapped)
    # and the wrapped env (passive checker + order enforcing) plays a full episode
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs) and info["n_pulls"] == 0
    k = env.unwrapped.n_arms
    _, _, term, trunc, info = env.step(0)
    _, r, term, trunc, info = env.step(k) if not trunc else (None, 0.0, False, True, info)
    assert term or trunc


@pytest.mark.parametrize("d, omega", [(2, 0.1), (3, 0.01), (7, 1.2), (10, 1e-3)])
def test_soare_instance_has_documented_arms_best_arm_and_gaps(d, omega):
    env = BAILinBanditEnv(instance="soare", d=d, omega=omega)
    assert env.n_arms == d + 1 and env.action_space.n == 2 * (d + 1)
    assert env.observation_space.shape == (d + 1, d)
    expected_arms = np.vstack([np.eye(d), np.r_[math.cos(omega), math.sin(omega), np.zeros(d - 2)]])
    np.testing.assert_allclose(env.arms, expected_arms, atol=1e-7)
    np.testing.assert_array_equal(env.theta_star, np.eye(d)[0])
    assert env.best_arm == 0
    expected_gaps = np.r_[0.0, np.ones(d - 1), 1.0 - math.cos(omega)]
    # float32 arms: the gap of x_{d+1} is exact up to float32 rounding of cos(omega)
    np.testing.assert_allclose(env.gaps, expected_gaps, rtol=1e-4, atol=1e-7)
    assert (
        np.argmin(np.where(env.gaps > 0, env.gaps, np.inf)) == d
    )  # x_{d+1} is the hardest competitor
    obs, info = env.reset(seed=0)
    np.testing.assert_array_equal(obs, env.arms)
    assert info["best_arm"] == 0 and info["best_expected_reward"] == 1.0


def test_stop_with_right_and_wrong_answer():
    env = BAILinBanditEnv(instance="soare", d=3)
    k = env.n_arms
    for answer in range(k):
        obs0, _ = env.reset(seed=1)
        for arm in (0, 1, 2, 3, 1):
            obs, _, term, trunc, info = env.step(arm)
            assert not term and not trunc and "recommendation" not in info
            np.testing.assert_array_equal(obs, obs0)  # the arm set never changes
        obs, reward, term, trunc, info = env.step(k + answer)
        assert term and not trunc and reward == 0.0
        assert info["recommendation"] == answer
        assert info["correct"] is (answer == 0)
        assert info["n_pulls"] == 5
        assert info["regret"] == pytest.approx(env.gaps[answer])
        assert info["expected_reward"] == pytest.approx(1.0 - env.gaps[answer])
        with pytest.raises(RuntimeError, match="reset"):
            env.step(0)


def test_stop_before_any_pull_is_allowed():
    env = BAILinBanditEnv(instance="random", d=3, n_arms=4)
    env.reset(seed=2)
    _, _, term, _, info = env.step(4 + env.best_arm)
    assert term and info["correct"] is True and info["n_pulls"] == 0


def test_truncation_at_max_pulls_reports_no_recommendation():
    env = BAILinBanditEnv(max_pulls=7)
    env.reset(seed=0)
    for i in range(1, 8):
        _, _, term, trunc, info = env.step(i % 3)
        assert not term and info["n_pulls"] == i
        assert trunc is (i == 7)
    assert info["recommendation"] == -1 and info["correct"] is False
    with pytest.raises(RuntimeError, match="reset"):
        env.step(3)
    # reset starts a fresh episode
    _, info = env.reset(seed=0)
    assert info["n_pulls"] == 0
    assert env.step(0)[4]["n_pulls"] == 1


def test_horizon_is_an_alias_of_max_pulls():
    assert BAILinBanditEnv(horizon=5).max_pulls == 5
    assert BAILinBanditEnv(horizon=5, max_pulls=5).max_pulls == 5
    assert BAILinBanditEnv().max_pulls == 100_000
    with pytest.raises(ValueError, match="alias"):
        BAILinBanditEnv(horizon=5, max_pulls=6)


def test_rewards_are_linear_gaussian():
    env = BAILinBanditEnv(instance="soare", d=3, omega=0.5, noise_std=0.0)
    env.reset(seed=0)
    for arm in range(env.n_arms):
        _, r, _, _, info = env.step(arm)
        assert r == pytest.approx(float(env.arms[arm].astype(np.float64) @ env.theta_star))
        assert r == info["expected_reward"]
    env = BAILinBanditEnv(instance="soare", d=3, omega=0.5, noise_std=2.0)
    env.reset(seed=0)
    rewards = np.array([env.step(3)[1] for _ in range(4000)])
    assert abs(rewards.mean() - math.cos(0.5)) < 4 * 2.0 / math.sqrt(4000)
    assert rewards.std() == pytest.approx(2.0, rel=0.05)


def _episode(env, seed, actions):
    obs, info = env.reset(seed=seed)
    out = [obs.copy()]
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((obs.copy(), r, term, trunc, dict(info)))
    return out


def _same(a, b):
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize(
    "kwargs", [{"instance": "soare", "d": 3}, {"instance": "random", "d": 4, "n_arms": 5}]
)
def test_same_seed_same_episode_different_seed_differs(kwargs):
    k = BAILinBanditEnv(**kwargs).n_arms
    actions = [0, 1, 2, 1, 0, 2, k + 1]
    e1, e2 = BAILinBanditEnv(**kwargs), gym.make(ENV_ID, **kwargs)
    assert _same(_episode(e1, 11, actions), _episode(e2, 11, actions))
    assert not _same(_episode(e1, 11, actions), _episode(e1, 12, actions))


def test_random_instance_is_seed_drawn_unit_norm_with_min_gap():
    env = BAILinBanditEnv(instance="random", d=6, n_arms=12, min_gap=0.05)
    seen = []
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        np.testing.assert_allclose(np.linalg.norm(obs, axis=1), 1.0, atol=1e-6)
        assert np.linalg.norm(env.theta_star) == pytest.approx(1.0)
        means = obs.astype(np.float64) @ env.theta_star
        assert info["best_arm"] == env.best_arm == int(np.argmax(means))
        np.testing.assert_allclose(env.gaps, means.max() - means)
        assert np.sort(env.gaps)[1] >= 0.05
        seen.append(obs)
    assert not np.array_equal(seen[0], seen[1])
    assert BAILinBanditEnv(instance="random").n_arms == 10


@pytest.mark.parametrize(
    "action, match",
    [
        (6, "out of range"),
        (-1, "out of range"),
        (100, "out of range"),
        (1.0, "must be an int"),
        (np.float32(2.0), "must be an int"),
        (True, "must be an int"),
        (np.bool_(False), "must be an int"),
        ("0", "must be an int"),
        (None, "must be an int"),
    ],
)
def test_invalid_action_raises_and_leaves_state_unchanged(action, match):
    env = BAILinBanditEnv(instance="soare", d=2)  # K = 3, actions 0..5
    ref = BAILinBanditEnv(instance="soare", d=2)
    env.reset(seed=4)
    ref.reset(seed=4)
    env.step(1)
    ref.step(1)
    with pytest.raises(ValueError, match=match):
        env.step(action)
    assert env.n_pulls == 1 and env.t == 1
    # the noise stream was not consumed: the next pull matches an untouched twin
    assert _same(env.step(2), ref.step(2))


def test_numpy_integer_actions_are_accepted():
    env = BAILinBanditEnv()
    env.reset(seed=0)
    env.step(np.int64(1))
    env.step(np.array(2))
    assert env.step(np.int32(3))[4]["recommendation"] == 0


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        BAILinBanditEnv().step(0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d": 0}, "d must be"),
        ({"d": -3}, "d must be"),
        ({"d": 1}, "d must be"),  # soare needs e_1 and e_2
        ({"d": 2.0}, "d must be"),
        ({"omega": 0.0}, "omega"),
        ({"omega": -0.1}, "omega"),
        ({"omega": math.pi / 2}, "omega"),
        ({"omega": 2.0}, "omega"),
        ({"omega": float("nan")}, "omega"),
        ({"omega": True}, "omega"),
        ({"omega": 1e-6}, "too small"),  # cos(omega) == 1 in float32
        ({"n_arms": 5, "d": 2}, "K = d \\+ 1"),
        ({"instance": "random", "n_arms": 1}, "n_arms must be"),
        ({"instance": "random", "n_arms": 0}, "n_arms must be"),
        ({"instance": "random", "d": 0}, "d must be"),
        ({"instance": "bogus"}, "instance must be"),
        ({"noise_std": -1.0}, "noise_std"),
        ({"max_pulls": 0}, "max_pulls"),
        ({"horizon": -2}, "horizon must be an int >= 1"),  # the key the user typed
        (
            {"instance": "random", "omega": "0.1"},
            "omega must be an angle",
        ),  # checked even where unused
        ({"instance": ["soare"]}, "instance must be one of"),
        ({"instance": "random", "n_arms": "5"}, "n_arms must be an int"),
        ({"instance": "random", "min_gap": -0.1}, "min_gap"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BAILinBanditEnv(**kwargs)


def test_impossible_min_gap_raises_at_reset():
    env = BAILinBanditEnv(instance="random", d=3, n_arms=50, min_gap=1.9)
    with pytest.raises(ValueError, match="min_gap"):
        env.reset(seed=0)


@settings(max_examples=30, deadline=None)
@given(
    d=st.integers(2, 8),
    omega=st.floats(1e-3, math.pi / 2 - 1e-3),
    actions=st.lists(st.integers(0, 8), min_size=0, max_size=25),
    seed=st.integers(0, 2**31 - 1),
)
def test_pull_accounting_invariants(d, omega, actions, seed):
    """On any action stream: n_pulls counts pulls, regret is the gap, the episode ends right."""
    env = BAILinBanditEnv(instance="soare", d=d, omega=omega, max_pulls=20)
    k = env.n_arms
    env.reset(seed=seed)
    pulls = 0
    for a in actions:
        a = a % (2 * k)
        _, r, term, trunc, info = env.step(a)
        arm = a - k if a >= k else a
        assert info["regret"] == pytest.approx(env.gaps[arm]) and info["regret"] >= 0
        assert info["best_arm"] == 0
        if a >= k:
            assert term and not trunc and r == 0.0 and info["n_pulls"] == pulls
            assert info["correct"] is (arm == 0)
            break
        pulls += 1
        assert info["n_pulls"] == pulls and not term
        assert trunc is (pulls == 20)
        if trunc:
            assert info["recommendation"] == -1 and info["correct"] is False
            break


@pytest.mark.parametrize("kwargs", [{"d": 4}, {"instance": "random", "d": 3, "n_arms": 40}])
def test_observation_box_is_the_unit_cube_and_holds_the_arms(kwargs):
    env = gym.make(ENV_ID, **kwargs)
    assert env.observation_space.high.max() == 1.0 and env.observation_space.low.min() == -1.0
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        assert env.observation_space.contains(obs)
