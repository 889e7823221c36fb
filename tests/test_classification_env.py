"""ClassificationBanditEnv: the online-classification protocol of Wen et al. (2025), App. F.1, and
its ids."""

from __future__ import annotations

import gzip
import socket
import struct
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import envs_data
import linbandit_gym  # noqa: F401  (registers the ids)
from linbandit_gym.envs import classification
from linbandit_gym.envs.classification import ClassificationBanditEnv

OFFLINE_IDS = {
    "LinBandit-MNIST-v0": {},
    "LinBandit-Digits-v0": {},
    "LinBandit-Classification-v0": {"dataset": "digits", "target_class": 7},
}


@pytest.fixture(scope="module")
def digits():
    return envs_data.load_dataset("digits")


def unit_rows(X):
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0)


def play(env, seed, policy, rounds=None):
    """Obs, rewards and infos of one episode (``policy(obs, t) -> action``)."""
    obs, info = env.reset(seed=seed)
    out = {"obs": [obs], "rewards": [], "infos": [info]}
    t = 0
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs, t))
        out["obs"].append(obs)
        out["rewards"].append(reward)
        out["infos"].append(info)
        t += 1
        if terminated or truncated or (rounds is not None and t >= rounds):
            return out


# -- conformance -----------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", sorted(OFFLINE_IDS))
def test_check_env_raw_and_through_make(env_id):
    env = gym.make(env_id, horizon=50, **OFFLINE_IDS[env_id])
    check_env(env.unwrapped, skip_render_check=True)
    with pytest.warns(UserWarning, match="different from the unwrapped"):
        check_env(env, skip_render_check=True)
    assert isinstance(env.unwrapped, ClassificationBanditEnv)
    assert env.unwrapped.theta_star is None


def test_ids_registered_with_their_datasets():
    for env_id in (
        "LinBandit-MNIST-v0",
        "LinBandit-Digits-v0",
        "LinBandit-Classification-v0",
        "LinBandit-CNAE9-v0",
        "LinBandit-MFeat-v0",
        "LinBandit-Spam-v0",
    ):
        assert env_id in gym.registry and env_id in linbandit_gym.ENV_IDS
    mnist = gym.make("LinBandit-MNIST-v0").unwrapped
    assert (mnist.dataset, mnist.n_arms, mnist.d, mnist.n_samples) == ("mnist", 10, 784, 5000)
    dig = gym.make("LinBandit-Digits-v0").unwrapped
    assert (dig.dataset, dig.n_arms, dig.d) == ("digits", 10, 64)
    assert gym.make("LinBandit-Classification-v0", dataset="digits").unwrapped.dataset == "digits"
    assert classification.CNAE9BanditEnv.__init__.__defaults__[0] == "cnae-9"
    assert classification.MFeatBanditEnv.__init__.__defaults__[0] == "mfeat"
    assert classification.SpamBanditEnv.__init__.__defaults__[0] == "spam"


def test_user_arrays_through_make():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    y = np.repeat([3, 7, 11], [10, 20, 10])
    env = gym.make("LinBandit-Classification-v0", dataset=(X, y), target_class=7, horizon=20)
    check_env(env.unwrapped, skip_render_check=True)
    u = env.unwrapped
    assert u.dataset == "custom" and u.classes.tolist() == [3, 7, 11] and u.n_arms == 3
    assert u.observation_space.low.min() >= -1.0 and u.observation_space.high.max() <= 1.0


# -- the protocol (App. F.1) ---------------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    target=st.integers(0, 9),
    shuffle=st.booleans(),
    policy_seed=st.integers(0, 2**31 - 1),
)
def test_protocol_invariants(digits, seed, target, shuffle, policy_seed):
    X, y = digits
    Xn = unit_rows(X)
    env = ClassificationBanditEnv(
        dataset="digits", target_class=target, horizon=60, shuffle_arms=shuffle
    )
    obs, info = env.reset(seed=seed)
    prng = np.random.default_rng(policy_seed)
    best_arms = []
    for t in range(60):
        labels, ids = env.arm_labels, env.arm_sample_ids
        # one sample per class, and each row is the l2-normalised sample it claims to be
        assert sorted(labels.tolist()) == list(range(10))
        np.testing.assert_array_equal(y[ids], labels)
        np.testing.assert_allclose(obs, Xn[ids].astype(np.float32), rtol=0, atol=0)
        np.testing.assert_allclose(np.linalg.norm(obs.astype(np.float64), axis=1), 1.0, atol=1e-6)
        assert obs in env.observation_space
        if not shuffle:
            assert labels.tolist() == list(range(10))
        best = int(np.flatnonzero(labels == target)[0])
        if t == 0:  # the reset info describes the first arm set; step infos the round played
            assert info["best_arm"] == best and info["best_expected_reward"] == 1.0
        best_arms.append(best)
        a = int(prng.integers(10))
        obs, reward, terminated, truncated, info = env.step(a)
        hit = float(labels[a] == target)
        assert reward == hit and info["expected_reward"] == hit
        assert info["best_expected_reward"] == 1.0 and info["regret"] == 1.0 - hit
        assert info["best_arm"] == best and not terminated and truncated == (t == 59)
    if shuffle:
        assert len(set(best_arms)) >= 5  # the target's row moves around
    else:
        assert set(best_arms) == {target}


def test_draws_are_uniform_within_each_class():
    X = np.arange(8, dtype=np.float64).reshape(4, 2) + 1.0
    y = np.array([0, 1, 1, 1])
    env = ClassificationBanditEnv(dataset=(X, y), target_class=1, horizon=3000, shuffle_arms=False)
    env.reset(seed=3)
    counts = np.zeros(4)
    for _ in range(3000):
        counts[env.arm_sample_ids] += 1
        env.step(0)
    assert counts[0] == 3000
    # each of the 3 class-1 rows ~ Binomial(3000, 1/3): mean 1000, sd ~26
    assert np.all(np.abs(counts[1:] - 1000) < 130), counts


def test_normalize_false_and_zero_rows():
    X = np.array([[0.0, 0.0], [3.0, 4.0], [-2.0, 0.0], [1.0, 1.0]])
    y = np.array([0, 0, 1, 1])
    raw = ClassificationBanditEnv(dataset=(X, y), normalize=False, horizon=5)
    assert raw.observation_space.low.min() == -2.0 and raw.observation_space.high.max() == 4.0
    obs, _ = raw.reset(seed=0)
    np.testing.assert_array_equal(obs, X[raw.arm_sample_ids].astype(np.float32))
    unit = ClassificationBanditEnv(dataset=(X, y), horizon=200)
    obs, _ = unit.reset(seed=0)
    seen_zero = False
    for _ in range(200):
        norms = np.linalg.norm(obs, axis=1)
        ids = unit.arm_sample_ids
        assert np.allclose(norms[ids != 0], 1.0) and np.all(norms[ids == 0] == 0.0)
        seen_zero |= bool(np.any(ids == 0))
        obs, *_ = unit.step(0)
    assert seen_zero


# -- seeding -------------------------------------------------------------------------------------
def test_same_seed_same_episode_and_arm_stream_independent_of_actions():
    env = gym.make("LinBandit-Digits-v0", horizon=100, target_class=4)
    a = play(env, 11, lambda obs, t: 0)
    b = play(env, 11, lambda obs, t: 0)
    c = play(env, 11, lambda obs, t: t % 10)  # other actions, same arm stream
    d = play(env, 12, lambda obs, t: 0)
    for x, z in zip(a["obs"], b["obs"]):
        np.testing.assert_array_equal(x, z)
    assert a["rewards"] == b["rewards"] and [i["best_arm"] for i in a["infos"]] == [
        i["best_arm"] for i in b["infos"]
    ]
    for x, z in zip(a["obs"], c["obs"]):
        np.testing.assert_array_equal(x, z)
    assert not all(np.array_equal(x, z) for x, z in zip(a["obs"], d["obs"]))
    assert len(a["rewards"]) == 100


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), shuffle=st.booleans(), target=st.integers(0, 9))
def test_the_arm_stream_is_one_uniform_sample_per_class_then_the_arm_order(
    digits, seed, shuffle, target
):
    # The draws of a seed, written out from the documented rule: the episode's arm generator
    # (the second of np_random's three spawned streams) draws, every round, one uniform index
    # into each class's samples (classes in sorted order, samples in dataset order), then, with
    # shuffle_arms, a permutation of the arms; the target's arm pays 1.
    X, y = digits
    classes, counts = np.unique(y, return_counts=True)
    samples_of = [np.flatnonzero(y == c) for c in classes]
    features = unit_rows(X).astype(np.float32)
    env = ClassificationBanditEnv(
        dataset="digits", target_class=target, horizon=40, shuffle_arms=shuffle
    )
    obs, info = env.reset(seed=seed)
    _, arm_rng, _ = np.random.default_rng(seed).spawn(3)
    for t in range(40):
        index = arm_rng.integers(0, counts)
        order = arm_rng.permutation(classes.size) if shuffle else np.arange(classes.size)
        ids = np.array([samples_of[c][index[c]] for c in range(classes.size)])[order]
        assert env.arm_sample_ids.tolist() == ids.tolist()
        assert env.arm_labels.tolist() == classes[order].tolist()
        np.testing.assert_array_equal(obs, features[ids])
        best = int(np.flatnonzero(classes[order] == target)[0])
        if t == 0:
            assert info["best_arm"] == best
        action = t % classes.size
        obs, reward, _, truncated, info = env.step(action)
        assert reward == float(classes[order][action] == target)
        assert info["best_arm"] == best and info["regret"] == 1.0 - reward
    assert truncated


def test_a_changed_target_class_pays_from_the_next_arm_set_on():
    env = ClassificationBanditEnv(dataset="digits", target_class=2, horizon=20)
    env.reset(seed=5)
    for t in range(19):
        if t == 7:
            env.target_class = 8
        target = 2 if t <= 7 else 8  # the arm set of round 7 was drawn before the change
        labels = env.arm_labels
        _, reward, _, _, info = env.step(t % 10)
        assert reward == float(labels[t % 10] == target)
        assert info["best_arm"] == int(np.flatnonzero(labels == target)[0])


def test_dataset_loaded_once_per_instance(monkeypatch):
    calls = []
    real = classification.load_dataset

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(classification, "load_dataset", counting)
    classification._packaged_dataset.cache_clear()
    env = ClassificationBanditEnv(dataset="digits", horizon=3)
    for seed in range(4):
        play(env, seed, lambda obs, t: 0)
    assert len(calls) == 1


def test_envs_of_a_packaged_dataset_share_it_read_only(monkeypatch):
    calls = []
    real = classification.load_dataset

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(classification, "load_dataset", counting)
    classification._packaged_dataset.cache_clear()
    first, second = (ClassificationBanditEnv(dataset="digits", horizon=3) for _ in range(2))
    raw = ClassificationBanditEnv(dataset="digits", horizon=3, normalize=False)
    assert len(calls) == 2  # once per preparation (normalised or not), not once per env
    assert first._features is second._features and raw._features is not first._features
    with pytest.raises(ValueError, match="read-only"):
        first._features[0, 0] = 1.0  # no env can change what the others play
    for seed in range(3):  # sharing changes nothing an episode gives
        a, b = play(first, seed, lambda obs, t: t % 10), play(second, seed, lambda obs, t: t % 10)
        assert a["rewards"] == b["rewards"]


# -- MNIST on a fresh install, no network ------------------------------------------------------
def test_mnist_full_episode_with_oful_offline(tmp_path, monkeypatch):
    from agents import OFUL

    def refuse(*args, **kwargs):
        raise AssertionError("the env tried to open a network connection")

    monkeypatch.setenv("LINBANDIT_DATA", str(tmp_path))  # an empty data directory
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # d = 784 matvecs: one thread is faster on a shared 2-core box
    try:
        records = linbandit_gym.run(
            "LinBandit-MNIST-v0", OFUL(lam=1.0, beta=0.01), seeds=[0], progress=False
        )
    finally:
        torch.set_num_threads(threads)
    assert len(records) == 2000 and records["t"].tolist() == list(range(1, 2001))
    assert set(records["regret"].unique()) <= {0.0, 1.0}
    np.testing.assert_array_equal(records["regret"], 1.0 - records["reward"])
    # Random play has expected regret 0.9 * 2000 = 1800 (sd ~13); learning from the
    # features must do far better (the paper reports ~200 for OFUL on full MNIST).
    assert records["cumulative_regret"].iloc[-1] < 900


def test_mnist_full_from_idx_files(tmp_path):
    rng = np.random.default_rng(0)
    (tmp_path / "mnist").mkdir()
    for part, n in (("train", 30), ("t10k", 10)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = np.arange(n, dtype=np.uint8) % 10
        for kind, arr, code in (("images-idx3", images, 3), ("labels-idx1", labels, 1)):
            raw = (
                bytes([0, 0, 8, code])
                + b"".join(struct.pack(">I", s) for s in arr.shape)
                + arr.tobytes()
            )
            (tmp_path / "mnist" / f"{part}-{kind}-ubyte.gz").write_bytes(gzip.compress(raw))
    env = gym.make("LinBandit-MNIST-v0", dataset="mnist-full", data_dir=tmp_path, horizon=10)
    assert env.unwrapped.n_samples == 40 and env.unwrapped.class_counts.tolist() == [4] * 10
    check_env(env.unwrapped, skip_render_check=True)


def test_openml_ids_with_local_files(tmp_path):
    rng = np.random.default_rng(1)
    (tmp_path / "openml").mkdir()
    np.savez(tmp_path / "openml" / "spam.npz", X=rng.random((30, 57)), y=rng.integers(0, 2, 30))
    env = gym.make("LinBandit-Spam-v0", data_dir=tmp_path, horizon=10, target_class=1)
    assert (env.unwrapped.n_arms, env.unwrapped.d) == (2, 57)
    check_env(env.unwrapped, skip_render_check=True)


# -- errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "env_id, name",
    [
        ("LinBandit-CNAE9-v0", "cnae-9"),
        ("LinBandit-MFeat-v0", "mfeat"),
        ("LinBandit-Spam-v0", "spam"),
    ],
)
def test_openml_ids_offline_fail_fast_with_help(tmp_path, env_id, name):
    start = time.monotonic()
    with pytest.raises(FileNotFoundError, match=f"'{name}'.*download=False.*place .*{name}.npz"):
        gym.make(env_id, data_dir=tmp_path)
    assert time.monotonic() - start < 3.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"dataset": "fashion"}, "unknown dataset 'fashion'"),
        ({"dataset": 3}, "dataset must be a dataset name"),
        ({"dataset": (np.ones((3, 2)),)}, "dataset must be a dataset name"),
        (
            {"target_class": 10},
            r"target_class=10 is not a label .* \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9\]",
        ),
        ({"target_class": -1}, "target_class=-1 is not a label"),
        ({"target_class": "3"}, "target_class must be an int"),
        ({"target_class": 1.0}, "target_class must be an int"),
        ({"target_class": True}, "target_class must be an int"),
        ({"horizon": 0}, "horizon must be an int >= 1"),
        ({"horizon": 2.5}, "horizon must be an int >= 1"),
        ({"dataset_kwargs": "x"}, "dataset_kwargs must be a dict"),
        ({"dataset": (np.ones((4, 2)), np.array([0, 0, 0, 0]))}, "single class"),
        ({"dataset": (np.ones((4, 2)), np.array([0.5, 1, 0, 1]))}, "integer class labels"),
        ({"dataset": (np.ones((4, 2)), np.array([0, 1, 0]))}, "y must be a 1-D array of 4 labels"),
        ({"dataset": (np.full((2, 2), np.nan), np.array([0, 1]))}, "NaN or inf"),
        ({"dataset": (np.ones(4), np.array([0, 1, 0, 1]))}, "X must be a non-empty 2-D array"),
        (
            {"dataset": (np.ones((2, 2)), np.array([0, 1])), "dataset_kwargs": {"path": "x"}},
            "only applies",
        ),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    kwargs = {"dataset": "digits", **kwargs}
    with pytest.raises(ValueError, match=message):
        ClassificationBanditEnv(**kwargs)


def test_missing_full_mnist_and_bad_dataset_options(tmp_path):
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        ClassificationBanditEnv(dataset="mnist-full", data_dir=tmp_path)
    with pytest.raises(TypeError, match="unexpected option"):
        ClassificationBanditEnv(dataset="digits", dataset_kwargs={"path": "x"})


def test_bad_action_leaves_state_unchanged():
    env = ClassificationBanditEnv(dataset="digits", horizon=2)
    obs, _ = env.reset(seed=0)
    for bad in (10, -1, 1.5, "0"):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)
    assert env.t == 0
    np.testing.assert_array_equal(env._arms, obs)
    env.step(0)
    _, _, _, truncated, _ = env.step(np.int64(1))
    assert truncated
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


# -- extreme and complex data -------------------------------------------------------------------
@given(exponent=st.integers(-300, 300), seed=st.integers(0, 2**16))
@settings(max_examples=30, deadline=None)
def test_normalisation_is_scale_free_over_the_whole_float64_range(exponent, seed):
    # Before: rows with |x| >= ~1e155 overflowed in the norm and became all-zero arms (and
    # |x| <= ~1e-155 underflowed to zero norm). Unit rows are scale-invariant.
    rng = np.random.default_rng(seed)
    X, y = rng.standard_normal((30, 4)), np.arange(30) % 3
    scaled = X * 10.0**exponent
    assume_finite = np.all(np.isfinite(scaled)) and np.all(scaled[np.abs(X) > 0] != 0)
    if not assume_finite:
        return
    env = ClassificationBanditEnv(dataset=(scaled, y), horizon=3)
    ref = ClassificationBanditEnv(dataset=(X, y), horizon=3)
    np.testing.assert_allclose(env._features, ref._features, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        np.linalg.norm(env._features.astype(np.float64), axis=1), 1.0, rtol=1e-6
    )


def test_unit_rows_keeps_ordinary_rows_bit_for_bit_and_zero_rows_zero():
    from linbandit_gym.envs.classification import unit_rows

    X = np.random.default_rng(1).standard_normal((50, 7))
    X[3] = 0.0
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_array_equal(unit_rows(X), X / np.where(norms > 0, norms, 1.0))
    huge = np.array([[1e300, -1e300], [0.0, 0.0], [1e-310, 0.0]])
    np.testing.assert_allclose(unit_rows(huge), [[2**-0.5, -(2**-0.5)], [0.0, 0.0], [1.0, 0.0]])


def test_huge_features_without_normalize_and_complex_features_are_refused():
    X, y = np.full((4, 2), 1e200), np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="normalize=False the features must fit in float32"):
        ClassificationBanditEnv(dataset=(X, y), normalize=False)
    Xc = np.array([[1 + 1j, 2], [3, 4], [5, 6j], [7, 8]])
    with pytest.raises(ValueError, match=r"dataset=\(X, y\): the features X are complex numbers"):
        ClassificationBanditEnv(dataset=(Xc, y))
    with pytest.raises(ValueError, match="complex numbers"):
        ClassificationBanditEnv(dataset=(Xc.tolist(), y))


def test_every_argument_is_checked_before_the_dataset_is_loaded(monkeypatch):
    import linbandit_gym.envs.classification as module

    def no_load(*args, **kwargs):
        raise AssertionError("the dataset was loaded before the arguments were checked")

    monkeypatch.setattr(module, "load_dataset", no_load)
    for kwargs, message in (
        ({"normalize": "false"}, "normalize must be True or False"),
        ({"shuffle_arms": "no"}, "shuffle_arms must be True or False"),
        ({"render_mode": "rgb"}, "render_mode must be None or one of"),
        ({"data_dir": 3}, "data_dir must be a path"),
        ({"horizon": "10"}, "horizon must be an int"),
        ({"target_class": "3"}, "target_class must be an int"),
        ({"dataset_kwargs": []}, "dataset_kwargs must be a dict"),
    ):
        with pytest.raises(ValueError, match=message):
            ClassificationBanditEnv(dataset="mnist", **kwargs)
