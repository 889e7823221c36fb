"""What a planner asks of an agent class before building it: whether it batches, which
arguments may differ per member, and an upper estimate of one agent's memory."""

import numpy as np
import pytest

from agents import AGENTS, OFUL, SOFUL, Agent, DBSLinUCB, DBSLinUCBFD
from agents.batched import BATCHED, constructor_args


def test_batchable_classes_are_exactly_those_with_a_batched_twin():
    for name, cls in AGENTS.items():
        assert cls.batchable() == (cls in BATCHED), name

    class MySOFUL(SOFUL):  # a user's subclass may change act/update: never batched for it
        pass

    assert not MySOFUL.batchable() and not Agent.batchable()


def test_a_user_class_that_claims_to_batch_without_a_twin_is_planned_one_at_a_time():
    """The planner asks the registry, which also needs a batched twin: a class answering
    batchable() = True without one would otherwise fail in agents.batched at run time."""
    from linbandit_gym.registry import AgentEntry, lookup_agent

    class Claims(SOFUL):
        @classmethod
        def batchable(cls) -> bool:
            return True

    assert lookup_agent("SOFUL").batchable()
    assert not AgentEntry("Claims", Claims).batchable()


def test_constructor_argument_reads_the_given_value_else_the_default_along_the_mro():
    assert SOFUL.constructor_argument("sketch_size", {}) == 50
    assert SOFUL.constructor_argument("sketch_size", {"sketch_size": 7}) == 7
    assert DBSLinUCBFD.constructor_argument("l0", {}) == 50  # DBSLinUCBFD.__init__ takes **kwargs
    with pytest.raises(KeyError, match="no argument 'nope'"):
        OFUL.constructor_argument("nope", {})


def _play(agent, d: int, n_arms: int, rounds: int, seed: int = 0) -> int:
    """The largest memory_bytes() over ``rounds`` rounds of random arm sets."""
    rng = np.random.default_rng(seed)
    peak = 0
    for _ in range(rounds):
        arms = rng.standard_normal((n_arms, d))
        action = agent.act(arms)
        agent.update(arms, action, float(rng.standard_normal()))
        peak = max(peak, agent.memory_bytes())
    return peak


@pytest.mark.filterwarnings("ignore:.*holds.*bytes per agent")
@pytest.mark.parametrize(
    "name, args",
    [
        ("OFUL", {}),
        ("SOFUL", {"sketch_size": 3}),
        ("SOFUL", {"sketch_size": 40}),
        ("CBSCFD", {"sketch_size": 5}),
        ("DBSLinUCB", {"l0": 2, "eps": 0.5}),
        ("DBSLinUCB", {"l0": 2, "eps": 0.5, "memory_cap": False}),
        ("DBSLinUCB-RFD", {"l0": 4, "eps": 2.0}),
    ],
)
def test_the_memory_estimate_bounds_what_the_agent_holds(name, args):
    """The planner sizes batches by the estimate: it must not be below what the agent holds at
    its peak (DBSLinUCB with eps = 0.5 closes blocks quickly and reaches its exact phase)."""
    d, n_arms = 24, 6
    cls = AGENTS[name]
    estimate = cls.estimate_memory_bytes(d, n_arms, **args)
    agent = cls(**args)
    assert estimate >= _play(agent, d, n_arms, rounds=120) > 0
    assert estimate == cls.estimate_memory_bytes(
        d, n_arms, **constructor_args(agent)
    )  # read back from the agent


def test_the_memory_estimate_follows_the_arguments_that_size_the_state():
    d, n_arms = 784, 10
    sizes = [SOFUL.estimate_memory_bytes(d, n_arms, sketch_size=l) for l in (10, 50, 150)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 3
    assert SOFUL.estimate_memory_bytes(d, n_arms) == sizes[1]  # the default sketch size is 50
    assert OFUL.estimate_memory_bytes(2 * d, n_arms) > 3 * OFUL.estimate_memory_bytes(
        d, n_arms
    )  # d x d
    capped, uncapped = (
        DBSLinUCB.estimate_memory_bytes(d, n_arms, memory_cap=cap) for cap in (True, False)
    )
    assert uncapped > capped
    assert Agent.estimate_memory_bytes(d, n_arms) is None  # an agent that cannot say
