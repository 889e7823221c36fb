"""LinBandit-HeavyTail-v0: power-law spectrum and exact low-rank mode (Wen et al. 2025,
Sec. 2.3)."""

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
from linbandit_gym.envs.heavy_tail import (
    HeavyTailLinBanditEnv,
    normalized_spectrum,
    power_law_spectrum,
)

ENV_ID = "LinBandit-HeavyTail-v0"


def _quiet_check(env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the infinite-Box bounds warning
        check_env(env, skip_render_check=True)


def _arms(env, seed, rounds):
    """All arms offered in the first ``rounds`` rounds, stacked (float64)."""
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for _ in range(rounds - 1):
        obs, *_ = env.step(0)
        out.append(obs)
    return np.concatenate(out).astype(np.float64)


def _fit_exponent(values):
    """Slope of -log(values_i) against log(i): the power-law exponent."""
    i = np.arange(1, len(values) + 1)
    return -np.polyfit(np.log(i), np.log(values), 1)[0]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"d": 8, "n_arms": 5},
        {"d": 8, "n_arms": 3, "rank": 2, "normalize": True},
        {"d": 5, "alpha": 0.0, "rotate": False},
    ],
)
def test_check_env_raw_and_through_make(kwargs):
    _quiet_check(HeavyTailLinBanditEnv(**kwargs))
    _quiet_check(gym.make(ENV_ID, **kwargs).unwrapped)
    env = gym.make(ENV_ID, horizon=3, **kwargs)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for t in range(3):
        obs, _, term, trunc, info = env.step(1)
        assert not term and trunc is (t == 2) and info["regret"] >= 0


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.0, 3.0])
@pytest.mark.parametrize("rotate", [True, False])
def test_empirical_spectrum_follows_the_requested_power_law(alpha, rotate):
    d = 40
    env = HeavyTailLinBanditEnv(d=d, n_arms=500, alpha=alpha, rotate=rotate, horizon=100)
    x = _arms(env, seed=1, rounds=60)  # 30000 arms
    second_moment = x.T @ x / len(x)
    eig = np.linalg.eigvalsh(second_moment)[::-1]
    # sample eigenvalues of 30000 draws spread by ~2 sqrt(d/N) = 0.07 (Marchenko-Pastur):
    # that bounds the exponent error at alpha = 0.
    assert _fit_exponent(eig) == pytest.approx(alpha, abs=0.06)
    np.testing.assert_allclose(eig, env.spectrum, rtol=0.1)
    np.testing.assert_allclose(
        env.spectrum, np.arange(1, d + 1) ** -alpha / np.sum(np.arange(1, d + 1) ** -alpha)
    )
    assert np.mean(np.sum(x**2, axis=1)) == pytest.approx(1.0, abs=0.02)  # trace Sigma = 1
    off_diagonal = np.abs(second_moment - np.diag(np.diag(second_moment))).max()
    if rotate or alpha == 0.0:
        # rotated: eigenvectors are the (random) basis, not the axes
        np.testing.assert_allclose(
            env.basis.T @ second_moment @ env.basis, np.diag(env.spectrum), atol=0.01
        )
    if not rotate:
        np.testing.assert_array_equal(env.basis, np.eye(d))
        assert off_diagonal < 0.01
        np.testing.assert_allclose(np.diag(second_moment), env.spectrum, rtol=0.1)
    elif alpha >= 2.0:
        assert off_diagonal > 0.04  # the spectrum is not axis-aligned (0.069 for this seed)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 2.0])
def test_normalized_arms_have_unit_norm_and_the_documented_spectrum(alpha):
    d = 30
    env = HeavyTailLinBanditEnv(d=d, n_arms=500, alpha=alpha, normalize=True, horizon=100)
    x = _arms(env, seed=2, rounds=60)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-6)
    eig = np.linalg.eigvalsh(x.T @ x / len(x))[::-1]
    np.testing.assert_allclose(eig, env.spectrum, rtol=0.1)
    assert env.spectrum.sum() == pytest.approx(1.0)
    assert np.all(np.diff(env.spectrum) <= 1e-15)  # still sorted
    fitted, requested = _fit_exponent(eig), _fit_exponent(env.spectrum)
    assert fitted == pytest.approx(requested, abs=0.06)
    if alpha == 0.0:
        np.testing.assert_allclose(
            env.spectrum, 1.0 / d
        )  # normalising a flat spectrum changes nothing
    else:
        # normalising flattens the power law: the exponent drops measurably below alpha
        assert requested < alpha - 0.05
        assert env.spectrum[0] < env.power_law[0] and env.spectrum[-1] > env.power_law[-1]


def test_normalized_spectrum_matches_monte_carlo():
    rng = np.random.default_rng(0)
    for lam in (
        power_law_spectrum(12, 1.5),
        power_law_spectrum(6, 0.7, rank=4),
        np.array([0.9, 0.1]),
    ):
        g = rng.standard_normal((200_000, lam.size)) * np.sqrt(lam)
        mc = np.mean(g**2 / np.sum(g**2, axis=1, keepdims=True), axis=0)
        np.testing.assert_allclose(normalized_spectrum(lam), mc, atol=3e-3)
    np.testing.assert_allclose(normalized_spectrum(np.array([1.0, 0.0, 0.0])), [1.0, 0.0, 0.0])


@pytest.mark.parametrize("rank, rotate", [(1, True), (3, True), (7, False), (12, True)])
def test_low_rank_mode_has_exactly_rank_k(rank, rotate):
    d = 12
    env = HeavyTailLinBanditEnv(d=d, n_arms=50, alpha=0.5, rank=rank, rotate=rotate, horizon=50)
    x = _arms(env, seed=3, rounds=40)  # 2000 arms
    s = np.linalg.svd(x, compute_uv=False)
    assert s[rank - 1] / s[0] > 1e-2  # rank k directions are all used ...
    if rank < d:
        assert s[rank] / s[0] < 1e-5  # ... and nothing else, beyond float32 rounding
        sub = env.basis[:, :rank]
        np.testing.assert_allclose(
            x - (x @ sub) @ sub.T, 0.0, atol=1e-5
        )  # arms lie in the subspace
        assert np.count_nonzero(env.spectrum) == rank
        if not rotate:
            np.testing.assert_allclose(x[:, rank:], 0.0, atol=0)
    # theta* is unit norm and inside the arms' span, so the problem is learnable
    assert np.linalg.norm(env.theta_star) == pytest.approx(1.0)
    assert np.linalg.norm(env.basis[:, :rank].T @ env.theta_star) == pytest.approx(1.0)
    np.testing.assert_allclose(env.spectrum[:rank], power_law_spectrum(rank, 0.5))


def test_low_rank_subspace_is_random_per_seed():
    env = HeavyTailLinBanditEnv(d=10, n_arms=5, rank=3)
    env.reset(seed=0)
    b0 = env.basis[:, :3].copy()
    env.reset(seed=1)
    b1 = env.basis[:, :3]
    # principal angles: the two subspaces differ
    assert np.linalg.svd(b0.T @ b1, compute_uv=False).min() < 0.99
    env.reset(seed=0)
    np.testing.assert_array_equal(env.basis[:, :3], b0)


def test_rewards_are_linear_gaussian():
    env = HeavyTailLinBanditEnv(d=6, n_arms=4, noise_std=0.0)
    obs, _ = env.reset(seed=5)
    for a in range(4):
        expected = float(obs[a].astype(np.float64) @ env.theta_star)
        obs_next, r, _, _, info = env.step(a)
        assert r == pytest.approx(expected) and info["expected_reward"] == pytest.approx(expected)
        assert info["best_expected_reward"] == pytest.approx(
            float(np.max(obs.astype(np.float64) @ env.theta_star))
        )
        obs = obs_next


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


@pytest.mark.parametrize(
    "kwargs", [{}, {"rank": 3, "normalize": True}, {"rotate": False, "alpha": 2.0}]
)
def test_same_seed_same_episode_different_seed_differs(kwargs):
    kwargs = {"d": 10, "n_arms": 6, **kwargs}
    actions = [0, 3, 5, 1, 2]
    a = _episode(HeavyTailLinBanditEnv(**kwargs), 7, actions)
    b = _episode(gym.make(ENV_ID, **kwargs), 7, actions)
    c = _episode(HeavyTailLinBanditEnv(**kwargs), 8, actions)
    assert _same(a, b)
    assert not _same(a, c)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d": 0}, "d must be"),
        ({"d": -4}, "d must be"),
        ({"n_arms": 1}, "n_arms must be"),
        ({"horizon": 0}, "horizon must be"),
        ({"noise_std": -0.1}, "noise_std"),
        ({"alpha": -0.5}, "alpha"),
        ({"alpha": float("inf")}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"alpha": "1"}, "alpha"),
        ({"alpha": True}, "alpha"),
        ({"rank": 0}, "rank"),
        ({"rank": -1}, "rank"),
        ({"d": 5, "rank": 6}, "rank must be in"),
        ({"rank": 2.5}, "rank"),
        ({"rotate": "yes"}, "rotate"),
        ({"normalize": 1}, "normalize"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HeavyTailLinBanditEnv(**kwargs)


@pytest.mark.parametrize(
    "action, match", [(5, "out of range"), (-1, "out of range"), (1.0, "int"), (True, "int")]
)
def test_invalid_action_raises_and_leaves_state_unchanged(action, match):
    env = HeavyTailLinBanditEnv(d=4, n_arms=5)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        env.step(action)
    assert env.t == 0
    twin = HeavyTailLinBanditEnv(d=4, n_arms=5)
    twin.reset(seed=0)
    assert _same(env.step(2)[:4], twin.step(2)[:4])


@settings(max_examples=40, deadline=None)
@given(d=st.integers(1, 60), alpha=st.floats(0.0, 6.0), rank_frac=st.floats(0.0, 1.0))
def test_power_law_spectrum_invariants(d, alpha, rank_frac):
    rank = max(1, math.ceil(rank_frac * d))
    lam = power_law_spectrum(d, alpha, rank)
    assert lam.sum() == pytest.approx(1.0)
    assert np.count_nonzero(lam) == rank
    assert np.all(np.diff(lam) <= 1e-15)
    if rank >= 2:
        assert lam[0] / lam[1] == pytest.approx(2.0**alpha)
    mu = normalized_spectrum(lam)
    assert mu.sum() == pytest.approx(1.0)
    assert np.count_nonzero(mu) == rank and np.all(np.diff(mu) <= 1e-12)
    # normalising moves mass from the head to the tail (mu majorised by lambda)
    assert np.all(np.cumsum(mu) <= np.cumsum(lam) + 1e-9)


@pytest.mark.parametrize("normalize, bound", [(True, 1.0), (False, np.inf)])
def test_observation_box_bounds_every_arm(normalize, bound):
    env = gym.make(ENV_ID, d=7, n_arms=50, alpha=1.0, normalize=normalize, horizon=30)
    assert env.observation_space.high.max() == bound and env.observation_space.low.min() == -bound
    obs, _ = env.reset(seed=0)
    for _ in range(29):
        assert env.observation_space.contains(obs)
        obs, *_ = env.step(0)
