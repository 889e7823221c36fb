"""Sizes refused before they are allocated: every env family (and the vector envs) estimates its
peak memory from its arguments, and refuses what cannot fit with a message naming the
arguments, the bytes and the fix, before allocating anything."""

from __future__ import annotations

import tracemalloc

import gymnasium as gym
import numpy as np
import pytest

import linbandit_gym
from linbandit_gym.envs import (
    BAILinBanditEnv,
    ClassificationBanditEnv,
    HeavyTailLinBanditEnv,
    LocallyConvexLinBanditEnv,
    SyntheticLinBanditEnv,
    memory,
)
from linbandit_gym.envs.memory import EnvTooLargeError, MemoryEstimate
from linbandit_gym.registration import env_memory_estimate, estimate_env_bytes
from linbandit_gym.vector import (
    ClassificationVectorEnv,
    HeavyTailVectorEnv,
    LocallyConvexVectorEnv,
    SyntheticVectorEnv,
)

GB = 2**30  # sizes are binary (linbandit_host.memory)


@pytest.fixture
def limit(monkeypatch):
    """Fix the memory limit (bytes) for the test: ``limit(24 * GB)``."""
    monkeypatch.delenv(memory.MEMORY_LIMIT_ENV, raising=False)

    def set_limit(nbytes: int) -> None:
        monkeypatch.setattr(memory, "memory_limit_bytes", lambda: nbytes)

    return set_limit


def refused_without_allocating(build) -> str:
    """The message of the EnvTooLargeError ``build()`` raises; asserts that less than 2 MiB was
    allocated on the way (so nothing of the size asked for was)."""
    tracemalloc.start()
    try:
        with pytest.raises(EnvTooLargeError) as info:
            build()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 10**6, f"{peak} bytes were allocated before the refusal"
    assert isinstance(info.value, ValueError)  # what gym.make's callers and check_env_args catch
    return str(info.value)


# -- the inputs quoted in the report, on the real machine's memory ------------------------------
@pytest.mark.parametrize(
    "env_id, kwargs, named",
    [
        ("LinBandit-Synthetic-v0", {"d": 10**9, "n_arms": 2}, ["d=1000000000", "n_arms=2"]),
        ("LinBandit-Synthetic-v0", {"n_arms": 10**9}, ["d=500", "n_arms=1000000000"]),
        ("LinBandit-Synthetic-v0", {"d": 10**18}, ["d=1000000000000000000", "n_arms=100"]),
        (
            "LinBandit-BAI-v0",
            {"instance": "random", "n_arms": 10**9},
            ["instance='random', d=2, n_arms=1000000000"],
        ),
    ],
)
def test_quoted_sizes_are_refused_by_gym_make_naming_the_arguments_and_bytes(env_id, kwargs, named):
    message = refused_without_allocating(lambda: gym.make(env_id, **kwargs))
    for argument in named:
        assert argument in message
    assert " bytes), more than the memory available (" in message
    assert "To fix: lower d or n_arms" in message
    assert "\n" not in message


def test_the_message_in_full(limit):
    limit(24 * GB)
    message = refused_without_allocating(
        lambda: gym.make("LinBandit-Synthetic-v0", d=10**9, n_arms=2)
    )
    assert message == (
        "SyntheticLinBanditEnv(d=1000000000, n_arms=2) needs about 80.1 GiB of memory "
        "(86,000,000,000 bytes), more than the memory available (24 GiB). Most of it grows with "
        "n_arms x d = 2,000,000,000 numbers at 35 bytes each (the observation space's bounds and "
        "the arm set; a round's draw and its copies). To fix: lower d or n_arms: n_arms x d must "
        "stay below about 2.79e+08 here."
    )


# -- every family, with the argument that makes it large -----------------------------------------
@pytest.mark.parametrize(
    "build, named, fix",
    [
        # the d x d rotation is drawn at reset: refused by the constructor already
        (
            lambda: HeavyTailLinBanditEnv(d=10**5),
            ["d=100000", "rotate=True"],
            "lower d, or pass rotate=False",
        ),
        (
            lambda: HeavyTailLinBanditEnv(d=10**5, rank=3),
            ["rank=3"],
            "lower d, or pass rotate=False",
        ),
        (lambda: HeavyTailLinBanditEnv(n_arms=10**9), ["n_arms=1000000000"], "lower d or n_arms"),
        (lambda: HeavyTailLinBanditEnv(d=10**10, rotate=False), ["d=10000000000"], "lower d"),
        (
            lambda: LocallyConvexLinBanditEnv(d=10**9, n_arms=2),
            ["d=1000000000"],
            "lower d or n_arms",
        ),
        (
            lambda: LocallyConvexLinBanditEnv(n_arms=10**9),
            ["n_arms=1000000000"],
            "lower d or n_arms",
        ),
        (
            lambda: LocallyConvexLinBanditEnv(d=10**6, n_arms=10**4, local_frac=1.0),
            ["d=1000000"],
            "lower",
        ),
        (
            lambda: BAILinBanditEnv(instance="soare", d=10**6),
            ["instance='soare', d=1000000, n_arms=1000001"],
            "lower d or n_arms",
        ),
        (
            lambda: BAILinBanditEnv(instance="random", d=10**9, n_arms=2),
            ["d=1000000000"],
            "lower d or n_arms",
        ),
        (
            lambda: SyntheticLinBanditEnv(d=10**8, n_arms=100, fixed_arms=True),
            ["d=100000000"],
            "lower d or n_arms",
        ),
        # the regret curve render() draws grows with the horizon
        (
            lambda: SyntheticLinBanditEnv(d=5, n_arms=4, horizon=10**12, render_mode="rgb_array"),
            ["horizon=1000000000000", "render_mode='rgb_array'"],
            "lower horizon, or render_mode=None",
        ),
    ],
)
def test_every_family_refuses_what_cannot_fit(limit, build, named, fix):
    limit(8 * GB)
    message = refused_without_allocating(build)
    for argument in named:
        assert argument in message
    assert "8 GiB" in message and f"To fix: {fix}" in message


def test_a_long_horizon_alone_allocates_nothing_more(limit):
    limit(8 * GB)
    SyntheticLinBanditEnv(
        d=5, n_arms=4, horizon=10**12
    ).close()  # no curve is kept without render_mode


class _HugeFeatures:
    """An (X, y) whose X announces a shape no machine holds (the check must not touch the data)."""

    shape = (10**7, 10**5)


def test_classification_data_is_sized_before_it_is_loaded_or_copied(limit, monkeypatch):
    import linbandit_gym.envs.classification as module

    limit(8 * GB)
    message = refused_without_allocating(
        lambda: ClassificationBanditEnv(dataset=(_HugeFeatures(), np.arange(3)))
    )
    assert "dataset=(X, y) with X of shape (10000000, 100000)" in message
    assert (
        "samples x features = 1,000,000,000,000" in message
        and "To fix: use fewer samples or features" in message
    )

    def no_load(*args, **kwargs):
        raise AssertionError("the dataset was loaded before the size check")

    monkeypatch.setattr(module, "load_dataset", no_load)
    limit(100 * 10**6)
    message = refused_without_allocating(
        lambda: gym.make("LinBandit-MNIST-v0", dataset="mnist-full")
    )
    assert "ClassificationBanditEnv(dataset='mnist-full')" in message and "70000" not in message
    assert "samples x features = 54,880,000 numbers" in message
    assert "split=train or test, or dataset='mnist'" in message
    # check_arguments (what check_env_args and --dry-run call) refuses it too, without loading
    with pytest.raises(EnvTooLargeError, match="mnist-full"):
        ClassificationBanditEnv.check_arguments(dataset="mnist-full")


def test_vector_envs_refuse_before_building_any_member(limit):
    limit(8 * GB)
    message = refused_without_allocating(
        lambda: gym.make_vec("LinBandit-Synthetic-v0", num_envs=10**7)
    )
    assert "SyntheticVectorEnv(num_envs=10000000, d=500, n_arms=100)" in message
    assert "num_envs x n_arms x d = 500,000,000,000 numbers" in message
    message = refused_without_allocating(
        lambda: linbandit_gym.make_vec("LinBandit-HeavyTail-v0", 64, d=20000)
    )
    assert "HeavyTailVectorEnv(num_envs=64, d=20000" in message and "rotate=False" in message


def test_a_dataset_is_counted_once_for_all_members():
    one = ClassificationVectorEnv.memory_estimate(1, dataset="mnist")
    many = ClassificationVectorEnv.memory_estimate(100, dataset="mnist")
    data = {a.what: a for a in many.allocations if a.shared}
    assert (
        data["the dataset"].count == 5000 * 784 and data["the labels"].count == 5000
    )  # not 100 times
    once = [a for a in one.allocations if a.shared or a.transient]
    per_member = one.nbytes - sum(a.nbytes for a in once)
    assert many.nbytes - one.nbytes == 99 * per_member
    synthetic = [SyntheticVectorEnv.memory_estimate(b, d=100, n_arms=10).nbytes for b in (1, 2, 3)]
    assert synthetic[2] - synthetic[1] == synthetic[1] - synthetic[0] > 0  # linear in the members


# -- the threshold ---------------------------------------------------------------------------------
def test_the_limit_is_the_estimate_itself(limit):
    kwargs = {"d": 50, "n_arms": 10, "horizon": 3}
    need = SyntheticLinBanditEnv.memory_estimate(**kwargs).nbytes
    limit(need)
    env = SyntheticLinBanditEnv(**kwargs)
    env.reset(seed=0)
    env.close()
    limit(need - 1)
    with pytest.raises(EnvTooLargeError, match="SyntheticLinBanditEnv"):
        SyntheticLinBanditEnv(**kwargs)
    with pytest.raises(EnvTooLargeError):
        linbandit_gym.check_env_args("LinBandit-Synthetic-v0", kwargs)  # the --dry-run check


def test_the_limit_can_be_set_by_environment_variable(monkeypatch):
    sizes = [
        ("8GB", 8 * GB),
        ("8gib", 8 * GB),
        ("512MiB", 512 * 2**20),
        ("512M", 512 * 2**20),
        ("2e9", 2 * 10**9),
        ("1234", 1234),
    ]
    for text, nbytes in sizes:
        monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, text)
        assert memory.memory_limit_bytes() == nbytes
    monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, "1MB")
    over_the_limit = r"more than the limit \$LINBANDIT_MEMORY_LIMIT \(1 MiB\)"
    with pytest.raises(EnvTooLargeError, match=over_the_limit):
        SyntheticLinBanditEnv(d=1000, n_arms=100)
    monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, "lots")
    with pytest.raises(ValueError, match=r"LINBANDIT_MEMORY_LIMIT='lots' is not a memory size"):
        memory.memory_limit_bytes()


def test_available_memory_is_read_from_the_machine(monkeypatch):
    monkeypatch.delenv(memory.MEMORY_LIMIT_ENV, raising=False)
    available = memory.available_memory_bytes()
    import os

    if hasattr(os, "sysconf"):
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        assert 0 < available <= physical
    assert memory.memory_limit_bytes() == available or available is None


# -- the estimates are honest: an upper bound of the measured peak, within a small factor ---------
def _measured_peak(build, act) -> int:
    """tracemalloc's peak of building, resetting and stepping an env three times."""
    env = build()  # once untraced: imports and caches (sklearn, the MNIST parse) are not the env's
    env.close()
    # but the dataset as envs play it is: the first env of a process prepares it (the next share it)
    from linbandit_gym.envs import classification

    classification._packaged_dataset.cache_clear()
    tracemalloc.start()
    try:
        env = build()
        env.reset(seed=0)
        for _ in range(3):
            env.step(act)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        env.close()


_DATA = (np.random.default_rng(0).standard_normal((20000, 100)), np.arange(20000) % 7)
_B = np.zeros(4, dtype=np.int64)


@pytest.mark.parametrize(
    "cls, kwargs, act",
    [
        (SyntheticLinBanditEnv, {"d": 4000, "n_arms": 100}, 0),
        (SyntheticLinBanditEnv, {"d": 4000, "n_arms": 100, "fixed_arms": True}, 0),
        (LocallyConvexLinBanditEnv, {"d": 4000, "n_arms": 100, "local_frac": 0.5}, 0),
        (HeavyTailLinBanditEnv, {"d": 4000, "n_arms": 100, "rotate": False}, 0),
        (HeavyTailLinBanditEnv, {"d": 600, "n_arms": 10}, 0),
        (HeavyTailLinBanditEnv, {"d": 600, "n_arms": 10, "rank": 5}, 0),
        (HeavyTailLinBanditEnv, {"d": 4000, "n_arms": 100, "rotate": False, "normalize": True}, 0),
        (BAILinBanditEnv, {"instance": "random", "d": 4000, "n_arms": 100}, 0),
        (BAILinBanditEnv, {"instance": "soare", "d": 600}, 0),
        (ClassificationBanditEnv, {"dataset": "mnist"}, 0),
        (ClassificationBanditEnv, {"dataset": _DATA}, 0),
        (SyntheticVectorEnv, {"num_envs": 4, "d": 4000, "n_arms": 100}, _B),
        (LocallyConvexVectorEnv, {"num_envs": 4, "d": 4000, "n_arms": 100}, _B),
        pytest.param(
            HeavyTailVectorEnv, {"num_envs": 4, "d": 400, "n_arms": 10}, _B, marks=pytest.mark.slow
        ),  # its rotation: as the single env's above
        (ClassificationVectorEnv, {"num_envs": 4, "dataset": _DATA}, _B),
    ],
    ids=lambda v: (
        getattr(v, "__name__", None) or ("" if isinstance(v, (int, np.ndarray)) else None)
    ),
)
def test_the_estimate_bounds_the_measured_peak_within_a_factor_of_two(cls, kwargs, act):
    estimate = cls.memory_estimate(**kwargs)
    assert isinstance(estimate, MemoryEstimate)
    peak = _measured_peak(lambda: cls(**kwargs), act)
    assert peak <= estimate.nbytes <= 2 * peak, (estimate.nbytes, peak)


# -- estimate_env_bytes: by id, nothing built ----------------------------------------------------
def test_estimate_env_bytes_builds_nothing_and_matches_the_constructors_check(monkeypatch):
    import linbandit_gym.envs.classification as module

    def no_build(*args, **kwargs):
        raise AssertionError("an env was built or a dataset loaded")

    monkeypatch.setattr(module, "load_dataset", no_build)
    monkeypatch.setattr(
        gym.spaces.Box, "__init__", no_build
    )  # every env builds its observation space
    assert estimate_env_bytes("LinBandit-Synthetic-v0", d=1000, n_arms=100) == (
        SyntheticLinBanditEnv.memory_estimate(d=1000, n_arms=100).nbytes
    )
    big = estimate_env_bytes("LinBandit-Synthetic-v0", d=10**9, n_arms=2)  # no refusal: a number
    assert big > 70 * GB
    assert estimate_env_bytes("LinBandit-Synthetic-v0", num_envs=8, d=1000) == (
        SyntheticVectorEnv.memory_estimate(8, d=1000).nbytes
    )
    mnist = estimate_env_bytes("LinBandit-MNIST-v0")
    assert mnist == ClassificationBanditEnv.memory_estimate(dataset="mnist").nbytes > 5000 * 784 * 8
    assert estimate_env_bytes("LinBandit-Digits-v0") < mnist
    # BAI has no native vector env: gym.make_vec builds SyncVectorEnv, members side by side
    one, four = (estimate_env_bytes("LinBandit-BAI-v0", num_envs=b, d=50) for b in (1, 4))
    assert one < four < 4 * one
    assert env_memory_estimate("LinBandit-BAI-v0", num_envs=4, d=50).owner == "SyncVectorEnv"


def test_estimate_env_bytes_refuses_bad_input_with_one_line():
    with pytest.raises(
        ValueError, match=r"unknown env id 'LinBandit-Mnist-v0' \(did you mean 'LinBandit-MNIST-v0'"
    ):
        estimate_env_bytes("LinBandit-Mnist-v0")
    with pytest.raises(ValueError, match="CartPole-v1 is not a linbandit env"):
        estimate_env_bytes("CartPole-v1")
    with pytest.raises(ValueError, match="d must be an int >= 1, got 0"):
        estimate_env_bytes("LinBandit-Synthetic-v0", d=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dim'"):
        estimate_env_bytes("LinBandit-Synthetic-v0", dim=3)
    with pytest.raises(ValueError, match="num_envs must be an int >= 1"):
        estimate_env_bytes("LinBandit-BAI-v0", num_envs=0)
    with pytest.raises(ValueError, match="dataset must be a dataset name .* got int"):
        estimate_env_bytes("LinBandit-Classification-v0", dataset=3)
    with pytest.raises(ValueError, match="unknown dataset 'fashion'"):
        estimate_env_bytes("LinBandit-Classification-v0", dataset="fashion")


def test_the_error_is_importable_from_the_envs_package():
    from linbandit_gym.envs import EnvTooLargeError as exported

    assert exported is EnvTooLargeError and issubclass(exported, ValueError)
