"""LinBandit-LocallyConvex-v0: sphere/ellipsoid arm sets (Wen et al. 2025, Obs. 1;
Banerjee et al. 2023)."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import linbandit_gym  # noqa: F401  (registers the ids)
from agents import OFUL
from linbandit_gym.envs.locally_convex import LocallyConvexLinBanditEnv
from linbandit_gym.envs.synthetic import SyntheticLinBanditEnv

ENV_ID = "LinBandit-LocallyConvex-v0"


def _quiet_check(env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the infinite-Box bounds warning
        check_env(env, skip_render_check=True)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"d": 3, "shape": "ellipsoid"},
        {"d": 3, "axes": [2.0, 1.0, 0.1], "local_frac": 0.5, "n_arms": 50},
    ],
)
def test_check_env_raw_and_through_make(kwargs):
    _quiet_check(LocallyConvexLinBanditEnv(**kwargs))
    _quiet_check(gym.make(ENV_ID, **kwargs).unwrapped)
    env = gym.make(ENV_ID, horizon=2, **kwargs)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert env.step(0)[3] is False and env.step(1)[3] is True


def test_sphere_arms_are_uniform_on_the_unit_sphere():
    env = LocallyConvexLinBanditEnv(d=4, n_arms=2000, horizon=10)
    obs, _ = env.reset(seed=0)
    xs = [obs]
    for _ in range(9):
        xs.append(env.step(0)[0])
    x = np.concatenate(xs).astype(np.float64)  # 20000 arms
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=0.02)
    np.testing.assert_allclose(x.T @ x / len(x), np.eye(4) / 4, atol=0.01)  # isotropic
    assert np.linalg.norm(env.theta_star) == pytest.approx(1.0)
    np.testing.assert_allclose(env.optimum, env.theta_star)
    assert env.optimum_value == pytest.approx(1.0)


def test_default_arm_count_covers_the_cap_around_theta_star():
    # the documented defaults (d=5, K=1000): the best arm of a round lies ~0.25 rad from theta*
    env = LocallyConvexLinBanditEnv(horizon=200)
    obs, info = env.reset(seed=1)
    best = [info["best_expected_reward"]]
    for _ in range(199):
        obs, _, _, _, info = env.step(0)
        best.append(float(np.max(obs.astype(np.float64) @ env.theta_star)))
    angle = np.arccos(np.clip(best, -1, 1))
    assert 0.18 < angle.mean() < 0.32
    assert np.all(np.array(best) <= 1.0 + 1e-6)


@pytest.mark.parametrize("kwargs", [{"shape": "ellipsoid"}, {"axes": [3.0, 1.0, 0.5, 0.2]}])
def test_ellipsoid_arms_lie_on_the_surface_and_the_optimum_is_exact(kwargs):
    env = LocallyConvexLinBanditEnv(d=4, n_arms=20000, **kwargs)
    obs, info = env.reset(seed=3)
    a = env.axes
    if "axes" in kwargs:
        np.testing.assert_array_equal(a, kwargs["axes"])
    else:
        np.testing.assert_allclose(a, np.linspace(1.0, 0.5, 4))
    x = obs.astype(np.float64)
    np.testing.assert_allclose(np.sum((x / a) ** 2, axis=1), 1.0, atol=1e-5)
    # x* = a^2 theta / ||a theta|| is on the surface and beats every sampled arm
    assert np.sum((env.optimum / a) ** 2) == pytest.approx(1.0)
    assert env.optimum @ env.theta_star == pytest.approx(env.optimum_value)
    assert np.all(x @ env.theta_star <= env.optimum_value + 1e-6)
    assert info["best_expected_reward"] > env.optimum_value - 0.05  # dense sample gets close
    # first-order optimality: theta* is normal to the surface at x* (gradient 2 x*/a^2)
    normal = env.optimum / a**2
    np.testing.assert_allclose(normal / np.linalg.norm(normal), env.theta_star, atol=1e-12)


def test_local_arms_sit_near_the_optimum_at_every_scale():
    d, k = 20, 1000
    plain = LocallyConvexLinBanditEnv(d=d, n_arms=k)
    local = LocallyConvexLinBanditEnv(d=d, n_arms=k, local_frac=0.3, local_min_angle=0.01)
    _, info_plain = plain.reset(seed=0)
    obs, info_local = local.reset(seed=0)
    np.testing.assert_array_equal(plain.theta_star, local.theta_star)
    assert info_plain["best_expected_reward"] < 0.8  # uniform arms cannot cover S^19
    assert info_local["best_expected_reward"] > 0.999
    x = obs.astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-6)
    angle = np.arccos(np.clip(x @ local.optimum, -1, 1))
    near = angle < math.pi / 2 - 1e-6
    n_local = int(round(0.3 * k))
    assert local.n_local == n_local
    # ~ half the uniform arms are also within pi/2; the local ones add n_local more
    assert near.sum() > n_local + 0.4 * (k - n_local)
    assert angle.min() < 0.02 and np.sum(angle < 0.1) >= 0.3 * n_local
    # rows are shuffled: the local arms are not a fixed block of indices
    obs2, *_ = local.step(0)
    close2 = np.flatnonzero(
        np.arccos(np.clip(obs2.astype(np.float64) @ local.optimum, -1, 1)) < 0.3
    )
    close1 = np.flatnonzero(angle < 0.3)
    assert not np.array_equal(close1, close2)


def _run_oful(env, rounds, seed, checkpoints):
    """lambda_min of OFUL's design matrix sum_s x_s x_s^T (recomputed from the played arms)."""
    agent = OFUL(lam=1.0, beta=1.0)
    agent.reset(seed=seed)
    obs, _ = env.reset(seed=seed)
    gram = np.zeros((env.d, env.d))
    lam_min, regret = {}, 0.0
    for t in range(1, rounds + 1):
        a = agent.act(obs)
        next_obs, r, _, _, info = env.step(a)
        agent.update(obs, a, r)
        x = obs[a].astype(np.float64)
        gram += np.outer(x, x)
        regret += info["regret"]
        if t in checkpoints:
            lam_min[t] = np.linalg.eigvalsh(gram)[0]
        obs = next_obs
    # the agent's own estimator holds the same matrix (plus lam I)
    np.testing.assert_allclose(agent.estimator.covariance().numpy(), gram, atol=1e-6)
    return lam_min, regret


def test_oful_keeps_exploring_every_direction_on_the_sphere_but_not_on_a_fixed_arm_set():
    """Wen et al. (2025), Obs. 1, and Banerjee et al. (2023), Thm. 3.3: lambda_min grows as T^q
    on a locally convex arm space; on a finite fixed arm set OFUL settles on the best arm and
    lambda_min stalls."""
    checkpoints = (250, 500, 1000, 2000)
    curved = LocallyConvexLinBanditEnv(d=3, n_arms=1000, horizon=2000)
    fixed = SyntheticLinBanditEnv(d=3, n_arms=6, horizon=2000, fixed_arms=True)
    lam_curved, regret_curved = _run_oful(curved, 2000, seed=0, checkpoints=checkpoints)
    lam_fixed, regret_fixed = _run_oful(fixed, 2000, seed=0, checkpoints=checkpoints)
    t = np.array(checkpoints, dtype=float)
    q_curved = np.polyfit(np.log(t), np.log([lam_curved[c] for c in checkpoints]), 1)[0]
    q_fixed = np.polyfit(np.log(t), np.log([lam_fixed[c] for c in checkpoints]), 1)[0]
    # measured: lambda_min 9.3 -> 29.7 (q ~ 0.55) on the sphere, 1.40 -> 1.42 on the fixed set
    assert q_curved > 0.35, lam_curved
    assert lam_curved[2000] > 2.5 * lam_curved[250]
    assert q_fixed < 0.1, lam_fixed
    assert lam_fixed[2000] < 1.2 * lam_fixed[250]
    # and OFUL is a low-regret player on both (sublinear: far below the ~0.3 T of random play)
    assert regret_curved < 0.05 * 2000 and regret_fixed < 0.05 * 2000


def _episode(env, seed, actions):
    obs, info = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, term, trunc, info["regret"]))
    return out


def _same(a, b):
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("kwargs", [{}, {"shape": "ellipsoid", "local_frac": 0.2}])
def test_same_seed_same_episode_different_seed_differs(kwargs):
    kwargs = {"d": 4, "n_arms": 30, **kwargs}
    actions = [0, 5, 29, 3]
    a = _episode(LocallyConvexLinBanditEnv(**kwargs), 5, actions)
    b = _episode(gym.make(ENV_ID, **kwargs), 5, actions)
    c = _episode(LocallyConvexLinBanditEnv(**kwargs), 6, actions)
    assert _same(a, b) and not _same(a, c)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d": 0}, "d must be"),
        ({"d": -2}, "d must be"),
        ({"d": 1}, "d must be"),
        ({"n_arms": 1}, "n_arms must be"),
        ({"horizon": 0}, "horizon must be"),
        ({"noise_std": -1.0}, "noise_std"),
        ({"shape": "cube"}, "shape must be"),
        ({"shape": "sphere", "axes": [1.0] * 5}, "axes= describes an ellipsoid"),
        ({"d": 3, "axes": [1.0, 2.0]}, "axes must be"),
        ({"d": 2, "axes": [1.0, 0.0]}, "axes must be"),
        ({"d": 2, "axes": [1.0, -1.0]}, "axes must be"),
        ({"d": 2, "axes": [1.0, float("nan")]}, "axes must be"),
        ({"d": 2, "axes": ["a", "b"]}, "axes must be"),
        # the arms are float32 observations: an axis past its range would be inf (or 0) there
        ({"d": 3, "axes": [1.0, 1.0, 1e300]}, r"axes must lie in \[1.18e-38, 3.4e\+38\]"),
        ({"d": 3, "axes": [1.0, 1.0, 1e-300]}, r"axes must lie in \[1.18e-38, 3.4e\+38\]"),
        ({"local_frac": -0.1}, "local_frac"),
        ({"local_frac": 1.5}, "local_frac"),
        ({"local_min_angle": 0.0}, "local_min_angle"),
        ({"local_min_angle": 2.0}, "local_min_angle"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LocallyConvexLinBanditEnv(**kwargs)


def test_axes_out_of_the_observations_range_are_named_through_gym_make_and_the_command(capsys):
    """``axes=[..., 1e300]`` fails naming ``axes``, not in Gymnasium's Box with its dtype's
    range."""
    from linbandit_gym.cli import main

    with pytest.raises(ValueError, match="axes must lie in"):
        gym.make("LinBandit-LocallyConvex-v0", d=3, axes=[1.0, 1.0, 1e300])
    assert (
        main(
            [
                "run",
                "--env",
                "LinBandit-LocallyConvex-v0",
                "--agent",
                "OFUL",
                "--env-arg",
                "d=3",
                "--env-arg",
                "axes=[1, 1, 1e300]",
                "--horizon",
                "5",
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "axes must lie in" in err and "Box" not in err, err


def test_invalid_action_raises_and_leaves_state_unchanged():
    env = LocallyConvexLinBanditEnv(d=3, n_arms=10)
    twin = LocallyConvexLinBanditEnv(d=3, n_arms=10)
    env.reset(seed=0)
    twin.reset(seed=0)
    for bad in (10, -1, 2.0, True):
        with pytest.raises(ValueError):
            env.step(bad)
    assert env.t == 0
    assert _same(env.step(4)[:4], twin.step(4)[:4])


@pytest.mark.parametrize(
    "kwargs, bound",
    [({}, 1.0), ({"axes": [0.3, 2.5, 1.0]}, 2.5), ({"shape": "ellipsoid", "local_frac": 1.0}, 1.0)],
)
def test_observation_box_bounds_every_arm(kwargs, bound):
    env = gym.make(ENV_ID, d=3, n_arms=400, horizon=20, **kwargs)
    box = env.observation_space
    assert box.high.max() == np.float32(bound) and box.low.min() == -np.float32(bound)
    obs, _ = env.reset(seed=1)
    for _ in range(19):
        assert env.observation_space.contains(obs)
        obs, *_ = env.step(0)


def test_complex_axes_are_refused_not_truncated():
    with pytest.raises(ValueError, match="axes must be real numbers"):
        LocallyConvexLinBanditEnv(d=2, axes=[1.0 + 0.5j, 0.5])
