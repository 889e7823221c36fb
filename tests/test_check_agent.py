"""``check_agent``: the agent contract checked against an env, every problem named (a class
instead of an instance, wrong signatures, an exception raised by the agent, a bad
``memory_bytes``, actions out of range, runs that do not reproduce)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from agents import check_agent


class Greedy:
    def reset(self, seed=None):
        self.means = {}

    def act(self, obs):
        return 0

    def update(self, obs, action, reward):
        pass


def small_env():
    import gymnasium as gym

    return gym.make("LinBandit-Synthetic-v0", d=3, n_arms=4, horizon=10)


def test_check_agent_accepts_a_good_agent():
    check_agent(Greedy(), small_env())


def test_check_agent_given_a_class_says_to_pass_an_instance():
    with pytest.raises(
        AssertionError,
        match=r"got the class Greedy, not an agent: pass an instance, e\.g\. Greedy\(\)",
    ):
        check_agent(Greedy, small_env())


def test_check_agent_lists_every_wrong_signature():
    class WrongSignatures(Greedy):
        def reset(self):
            pass

        def update(self, obs, action):
            pass

    with pytest.raises(AssertionError) as info:
        check_agent(WrongSignatures(), small_env())
    message = str(info.value)
    assert message.startswith("check_agent failed:")
    assert "reset() cannot be called as reset(seed=0)" in message
    assert "update(obs, action) cannot be called as update(obs, action, reward)" in message
    assert message.count("\n  - ") == 2  # act is fine and not listed


def test_check_agent_reports_an_exception_raised_by_the_agent():
    class Crashes(Greedy):
        def update(self, obs, action, reward):
            raise KeyError("boom")

    with pytest.raises(
        AssertionError, match=r"update\(obs, 0, .*\) at step 0 raised KeyError: 'boom'"
    ) as info:
        check_agent(Crashes(), small_env())
    assert isinstance(info.value.__cause__, KeyError)


def test_check_agent_reports_a_bad_memory_bytes():
    class BadMemory(Greedy):
        def memory_bytes(self):
            return True

    with pytest.raises(AssertionError, match=r"memory_bytes\(\) returned True"):
        check_agent(BadMemory(), small_env())


class BrokenAgent:
    def reset(self, seed=None):
        self.rng = np.random.default_rng()  # ignores the seed: not reproducible

    def act(self, obs):
        return int(self.rng.integers(len(obs)))

    def update(self, obs, action, reward):
        pass


def test_check_agent_reports_non_reproducible_and_bad_actions():
    env = gym.make("LinBandit-Synthetic-v0", d=8, n_arms=6, horizon=40)
    with pytest.raises(AssertionError, match="same seed"):
        check_agent(BrokenAgent(), env)

    class OutOfRange(Greedy):
        def act(self, obs):
            return len(obs)

    with pytest.raises(AssertionError, match="outside"):
        check_agent(OutOfRange(), env)
    with pytest.raises(AssertionError, match="no callable"):
        check_agent(object(), env)
