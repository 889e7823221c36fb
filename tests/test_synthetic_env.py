"""The env contract on LinBandit-Synthetic-v0 (docs/contracts.md, "Environment")."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from linbandit_gym.envs.synthetic import SyntheticLinBanditEnv

SMALL = dict(d=20, n_arms=10, horizon=50)


def rollout(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, info["regret"], info["best_arm"], term, trunc))
    return out


def test_check_env_raw_and_through_make():
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # the checker warns that unbounded Box limits are "probably" wrong
        check_env(SyntheticLinBanditEnv(**SMALL))
        check_env(gym.make("LinBandit-Synthetic-v0", **SMALL).unwrapped)
        check_env(gym.make("LinBandit-Synthetic-v0", **SMALL))


def test_prefixed_id_works_without_import():
    env = gym.make("linbandit_gym:LinBandit-Synthetic-v0", **SMALL)
    assert env.observation_space.shape == (10, 20)


def test_spaces_and_defaults_follow_the_paper():
    env = SyntheticLinBanditEnv()
    assert (env.d, env.n_arms, env.horizon) == (500, 100, 2000)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (100, 500) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)
    np.testing.assert_allclose(np.linalg.norm(obs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(env.theta_star), 1.0)
    assert env.action_space == gym.spaces.Discrete(100)


def test_info_keys_and_regret_definition():
    env = SyntheticLinBanditEnv(**SMALL)
    obs, _ = env.reset(seed=1)
    means = obs.astype(np.float64) @ env.theta_star
    _, _, _, _, info = env.step(3)
    assert set(info) >= {"expected_reward", "best_expected_reward", "regret", "best_arm"}
    assert info["best_arm"] == int(np.argmax(means))
    assert info["expected_reward"] == pytest.approx(means[3])
    assert info["best_expected_reward"] == pytest.approx(means.max())
    assert info["regret"] == pytest.approx(means.max() - means[3]) and info["regret"] >= 0
    _, _, _, _, info = env.step(int(np.argmax(env._means)))
    assert info["regret"] == 0.0


def test_the_means_are_those_of_the_float32_arms_the_agent_saw_in_float64_exactly():
    env = SyntheticLinBanditEnv(**SMALL)
    obs, info = env.reset(seed=4)
    assert info["best_expected_reward"] == (obs.astype(np.float64) @ env.theta_star).max()
    for t in range(SMALL["horizon"]):
        means = obs.astype(np.float64) @ env.theta_star
        action = t % SMALL["n_arms"]
        obs, _, _, _, info = env.step(action)
        assert info["expected_reward"] == means[action]
        assert info["best_expected_reward"] == means.max()
        assert info["regret"] == means.max() - means[action]


def test_reward_noise_has_the_requested_std():
    env = SyntheticLinBanditEnv(d=5, n_arms=2, horizon=4000, noise_std=0.3)
    env.reset(seed=0)
    residuals = []
    for _ in range(4000):
        _, r, _, _, info = env.step(0)
        residuals.append(r - info["expected_reward"])
    assert np.std(residuals) == pytest.approx(0.3, rel=0.05)
    assert abs(np.mean(residuals)) < 0.03


def test_horizon_truncates_and_stepping_after_it_fails():
    env = SyntheticLinBanditEnv(**SMALL)
    env.reset(seed=0)
    flags = [env.step(0)[3] for _ in range(50)]
    assert flags == [False] * 49 + [True]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_same_seed_same_episode_different_seed_differs():
    env = SyntheticLinBanditEnv(**SMALL)
    actions = list(np.random.default_rng(0).integers(0, 10, size=49))
    a, b = rollout(env, 7, actions), rollout(env, 7, actions)
    np.testing.assert_array_equal(a[0], b[0])
    for x, y in zip(a[1:], b[1:]):
        np.testing.assert_array_equal(x[0], y[0])
        assert x[1:] == y[1:]
    c = rollout(env, 8, actions)
    assert not np.array_equal(a[0], c[0])
    assert [x[1] for x in a[1:]] != [x[1] for x in c[1:]]


def test_arm_stream_does_not_depend_on_actions():
    env = SyntheticLinBanditEnv(**SMALL)
    a = rollout(env, 3, [0] * 20)
    b = rollout(env, 3, [5] * 20)
    for x, y in zip(a[1:], b[1:]):
        np.testing.assert_array_equal(x[0], y[0])


def test_fixed_arms_mode_keeps_the_arm_set():
    env = SyntheticLinBanditEnv(d=8, n_arms=4, horizon=10, fixed_arms=True)
    obs0, _ = env.reset(seed=0)
    obs1 = env.step(0)[0]
    np.testing.assert_array_equal(obs0, obs1)


@pytest.mark.parametrize("bad", [3.0, 1.5, -1, 10, True, "1", None, np.array([1, 2])])
def test_bad_actions_raise_and_leave_state_unchanged(bad):
    env = SyntheticLinBanditEnv(**SMALL)
    obs, _ = env.reset(seed=0)
    t_before, arms_before = env.t, env._arms.copy()
    with pytest.raises(ValueError, match="action"):
        env.step(bad)
    assert env.t == t_before
    np.testing.assert_array_equal(env._arms, arms_before)
    env.step(np.int64(2))  # numpy ints are fine
    env.step(np.array(3))


def test_step_before_reset_fails_clearly():
    with pytest.raises(RuntimeError, match="reset"):
        SyntheticLinBanditEnv(**SMALL).step(0)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(d=0),
        dict(d=-3),
        dict(d=2.5),
        dict(n_arms=1),
        dict(horizon=0),
        dict(noise_std=-0.1),
        dict(noise_std=float("nan")),
    ],
)
def test_bad_constructor_arguments(kwargs):
    with pytest.raises(ValueError) as err:
        SyntheticLinBanditEnv(**{**SMALL, **kwargs})
    assert next(iter(kwargs)) in str(err.value)
