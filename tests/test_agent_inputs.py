"""The observations and feedback an agent refuses, and the state it keeps when it does.

Every class in ``agents.AGENTS`` must refuse complex observations and rewards instead of dropping
the imaginary part, rewards that are not real numbers, tensors without data and actions out of
range (with a message that counts arms), and leave its state as it was after any refused call (a
refused first ``update`` must not fix ``d``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from agent_cases import agent_params, arm_set, make, play

from agents import AGENTS, SOFUL
from agents.batched import batched

#: small d: the sketches of these tests hold more than OFUL's inverse, which is warned (asserted in
#: tests/test_agent_warnings.py); not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")
#: The tests below build agents whose sketch is larger than OFUL's state, which they warn about.
NO_SIZE_WARNING = pytest.mark.filterwarnings("ignore:.*more than OFUL's d x d inverse:UserWarning")


# -- complex input -------------------------------------------------------------------------
@pytest.mark.parametrize("cls", agent_params())
@pytest.mark.parametrize("kind", ["numpy", "tensor", "list"])
def test_complex_observations_are_refused(cls, kind):
    x = arm_set() + 1j * arm_set(seed=1)
    obs = {
        "numpy": x,
        "tensor": torch.as_tensor(x),
        "list": [[complex(v) for v in row] for row in x],
    }[kind]
    agent = make(cls)
    with pytest.raises(ValueError, match="complex"):
        agent.act(obs)
    with pytest.raises(ValueError, match="complex"):
        agent.update(obs, 0, 1.0)
    assert agent.d is None  # nothing was learned from them
    play(agent, x.real)  # and the agent still works on real arms


@pytest.mark.parametrize("cls", agent_params())
def test_complex_rewards_are_refused(cls):
    x = arm_set()
    agent = make(cls)
    a = agent.act(x)
    before = agent.memory_bytes()
    for reward in (np.complex128(1 + 2j), 1 + 0j, np.array(1 + 2j)):
        with pytest.raises(ValueError, match="complex"):
            agent.update(x, a, reward)
    assert agent.t == 0 and agent.memory_bytes() == before


def test_batched_agents_refuse_complex_observations():
    agent = batched(AGENTS["OFUL"](beta=0.1), 2)
    x = np.stack([arm_set(), arm_set(seed=1)]) * (1 + 1j)
    with pytest.raises(ValueError, match="complex"):
        agent.act(x)


# -- refused updates change nothing ----------------------------------------------------------
@pytest.mark.parametrize("cls", agent_params())
def test_refused_first_update_does_not_fix_d(cls):
    agent = make(cls)
    for action, reward in ((99, 0.0), (-1, 0.0), (0, math.nan), (0, "x"), (1.5, 0.0)):
        with pytest.raises(ValueError):
            agent.update(arm_set(d=5), action, reward)
        assert agent.d is None and agent.t == 0
    play(agent, arm_set(d=3))  # the first accepted observation fixes d, and it is d=3
    assert agent.d == 3


@pytest.mark.parametrize("name", ["GAllocation", "XYStatic", "XYAdaptive"])
def test_bai_out_of_range_message_counts_arms_not_actions(name):
    x = arm_set(k=3)
    agent = AGENTS[name]()
    agent.act(x)
    with pytest.raises(ValueError) as info:
        agent.update(x, 6, 0.0)
    assert str(info.value) == (
        "action 6 is out of range for an arm set of 3 arms "
        "(actions 0..2 pull an arm, 3..5 stop and recommend arm action - 3)"
    )
    agent.update(x, 5, 0.0)  # a stop action is in range
    assert agent.stopped and agent.recommendation == 2


@pytest.mark.parametrize("name", ["OFUL", "PhasedElimination"])
def test_regret_agents_out_of_range_message(name):
    agent = AGENTS[name]()
    x = arm_set(k=3)
    agent.act(x)
    with pytest.raises(ValueError, match=r"^action 3 is out of range for an arm set of 3 arms$"):
        agent.update(x, 3, 0.0)


# -- feedback that is not a real number, tensors without data --------------------------------------


REGRET_AGENTS = ["OFUL", "SOFUL", "CBSCFD", "DBSLinUCB", "DBSLinUCB-RFD"]


def _rounds(agent, arms_list):
    for arms in arms_list:
        agent.update(arms, agent.act(arms), 0.5)


def _state(agent):
    return agent.t, agent.memory_bytes(), agent.theta_hat.clone(), agent.estimator.n_rows


@pytest.mark.parametrize("name", REGRET_AGENTS)
@pytest.mark.parametrize("reward", ["1.0", b"1", None, [1.0], {"r": 1}])
def test_a_reward_that_is_not_a_real_number_is_refused_and_changes_nothing(name, reward):
    rng = np.random.default_rng(0)
    arms_list = [rng.standard_normal((4, 8)) for _ in range(6)]
    agent = (
        AGENTS[name](sketch_size=4)
        if "SOFUL" in name or "CBSCFD" in name
        else (AGENTS[name](l0=2) if "DBS" in name else AGENTS[name]())
    )
    _rounds(agent, arms_list[:3])
    before = _state(agent)
    arms = arms_list[3]
    action = agent.act(arms)
    with pytest.raises(ValueError, match=r"^reward must be a real number .*got ") as refused:
        agent.update(arms, action, reward)
    assert "\n" not in str(refused.value)
    t, mem, theta, rows = _state(agent)
    assert (t, mem, rows) == before[:2] + before[3:] and torch.equal(theta, before[2])
    # numpy and torch scalars are real numbers
    for scalar in (np.float32(0.5), torch.tensor(0.5, dtype=torch.float64), np.int64(1), 1):
        agent.update(arms, agent.act(arms), scalar)
    assert agent.t == t + 4


def test_a_batched_agent_refuses_string_rewards_and_changes_nothing():
    agent = SOFUL(sketch_size=4, batch_size=2)
    arms = np.random.default_rng(1).standard_normal((2, 3, 8))
    actions = agent.act(arms)
    for rewards in (["1.0", "2.0"], [1.0, "2.0"], np.array([1 + 1j, 2.0])):
        with pytest.raises(ValueError, match="rewards must be 2 real numbers"):
            agent.update(arms, actions, rewards)
    assert agent.t == 0 and agent.estimator.n_rows == 0
    agent.update(arms, actions, [torch.tensor(1.0), np.float32(2.0)])  # scalars of any kind
    assert agent.t == 1


@pytest.mark.parametrize("name", REGRET_AGENTS + ["GAllocation"])
def test_a_meta_tensor_is_refused_naming_the_device_and_changes_nothing(name):
    agent = AGENTS[name]()
    with pytest.raises(
        ValueError, match=r"^the observation is a tensor on device 'meta', which holds no values"
    ):
        agent.act(torch.empty((3, 4), device="meta"))
    assert agent.d is None  # the dimension was not fixed by the refused call


# The agents the tests above do not play: the string reward and the meta tensor of the others are
# asserted above, with their messages.
def _small(name: str):
    cls = AGENTS[name]
    return cls(l0=2) if name.startswith("DBSLin") else cls()


@NO_SIZE_WARNING
@pytest.mark.parametrize("name", sorted(set(AGENTS) - set(REGRET_AGENTS)))
def test_agent_side_a_string_reward_is_refused(name):
    agent = _small(name)
    agent.reset(seed=0)
    arms = np.eye(4, dtype=np.float32)[:3]
    action = agent.act(arms)
    with pytest.raises((TypeError, ValueError), match="reward"):
        agent.update(arms, action, "1.0")


@pytest.mark.parametrize("name", sorted(set(AGENTS) - set(REGRET_AGENTS) - {"GAllocation"}))
def test_agent_side_a_meta_tensor_is_refused_naming_the_device(name):
    agent = _small(name)
    agent.reset(seed=0)
    with pytest.raises(ValueError, match="meta"):
        agent.act(torch.empty((3, 4), device="meta"))
