"""Suggestions for mistyped env ids (and argument names) ignore case and separators."""

from __future__ import annotations

import gymnasium as gym
import pytest

import linbandit_gym
from linbandit_gym.envs.names import closest_name, did_you_mean, name_key
from linbandit_gym.registration import ENV_IDS, env_description, unknown_env_id_message


@pytest.mark.parametrize(
    "typed, meant",
    [
        ("LinBandit-Mnist-v0", "LinBandit-MNIST-v0"),  # difflib alone says LinBandit-MFeat-v0
        ("linbandit_mnist_v0", "LinBandit-MNIST-v0"),
        ("LINBANDIT-MNIST-V0", "LinBandit-MNIST-v0"),
        ("LinBandit-MNIST", "LinBandit-MNIST-v0"),
        ("LinBandit-MNIST-v1", "LinBandit-MNIST-v0"),
        ("mnist", "LinBandit-MNIST-v0"),
        ("LinBandit-mfeat-v0", "LinBandit-MFeat-v0"),
        ("LinBandit-Heavy-Tail-v0", "LinBandit-HeavyTail-v0"),
        ("locally_convex", "LinBandit-LocallyConvex-v0"),
        ("LinBandit-CNAE-9-v0", "LinBandit-CNAE9-v0"),
        ("LinBandit-Sythetic-v0", "LinBandit-Synthetic-v0"),
        ("LinBandit-Digit-v0", "LinBandit-Digits-v0"),
    ],
)
def test_env_ids_are_matched_whatever_the_case_and_separators(typed, meant):
    assert closest_name(typed, ENV_IDS) == meant
    assert f"(did you mean {meant!r}?)" in unknown_env_id_message(typed)


def test_no_suggestion_for_an_unrelated_name():
    assert closest_name("CartPole-v1", ENV_IDS) is None
    assert did_you_mean("zzz", ENV_IDS) == ""
    assert closest_name("", ENV_IDS) is None and closest_name("mnist", []) is None


@pytest.mark.parametrize(
    "typed, choices, meant",
    [
        ("dim", ["d", "n_arms", "horizon", "noise_std"], "d"),
        ("normalise", ["dataset", "normalize", "shuffle_arms"], "normalize"),
        ("sketchsize", ["sketch_size", "lam", "beta"], "sketch_size"),
        ("Sketch-Size", ["sketch_size", "lam", "beta"], "sketch_size"),
        ("nArms", ["d", "n_arms", "horizon"], "n_arms"),
    ],
)
def test_argument_names_too(typed, choices, meant):
    assert closest_name(typed, choices) == meant


def test_a_key_shared_by_two_choices_is_not_guessed_between_them():
    # "n-arms" and "n_arms" have the same key; difflib then picks by similarity of the keys
    assert closest_name("narms", ["n_arms", "n-arms"]) in ("n_arms", "n-arms")
    assert name_key("N_Arms-2") == "narms2"


def test_make_vec_and_env_description_suggest_the_id():
    suggestion = r"\(did you mean 'LinBandit-MNIST-v0'\?\)"
    with pytest.raises(
        gym.error.NameNotFound, match=r"'LinBandit-Mnist-v0' doesn't exist " + suggestion
    ):
        linbandit_gym.make_vec("LinBandit-Mnist-v0", num_envs=2)
    with pytest.raises(gym.error.VersionNotFound, match="did you mean 'LinBandit-MNIST-v0'"):
        linbandit_gym.make_vec("LinBandit-MNIST-v7", num_envs=2)
    with pytest.raises(gym.error.NameNotFound):  # nothing close: Gymnasium's own error, unchanged
        linbandit_gym.make_vec("Qwerty-v0", num_envs=2)
    with pytest.raises(
        ValueError, match=r"unknown linbandit env id 'LinBandit-Mnist-v0' " + suggestion
    ):
        env_description("LinBandit-Mnist-v0")


def test_the_cli_and_config_checks_suggest_the_id_and_argument():
    # linbandit run --env/--env-arg and sweep configs check through check_env_args
    with pytest.raises(
        ValueError,
        match=r"unknown env id 'LinBandit-Mnist-v0' \(did you mean 'LinBandit-MNIST-v0'\?\)",
    ):
        linbandit_gym.check_env_args("LinBandit-Mnist-v0", {})
    with pytest.raises(ValueError, match=r"has no argument 'nArms' \(did you mean 'n_arms'\?\)"):
        linbandit_gym.check_env_args("LinBandit-Synthetic-v0", {"nArms": 3})
