"""The agent protocol: what an agent class declares, and what it gets from those declarations.

A new agent is an estimator and an action rule. Declared in a few lines (its rule, its estimator,
its constraints, its batching), it gets the argument checks and their messages, the memory
estimate, batched members, ``describe`` and the registry's and planner's answers without writing
any of them; the package's agents are built the same way.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import pytest

from agents import (
    AGENTS,
    OFUL,
    SOFUL,
    Batching,
    EstimatorAgent,
    Interval,
    InvalidArgumentError,
    LinUCB,
    TorchAgent,
)
from agents.batched import BATCHED, batched, batched_members, constructor_args, supports_batched
from agents.estimator_agent import arm_scratch_bytes
from agents.sketches.fd import FrequentDirections

pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")


# -- a new rule beside optimism, and an agent pairing it with an estimator, in a few lines -----
class Greedy(EstimatorAgent):
    """Plays ``argmax_x x^T theta_hat``: a rule with no exploration bonus."""

    def _arm_scores(self, arms, terms):
        return terms.mean


class SketchedGreedy(Greedy):
    """Greedy on a Frequent Directions sketch.

    Args:
        lam: ridge lambda > 0.
        sketch_size: rows of the sketch.
    """

    estimator_class = FrequentDirections
    estimator_args = size_args = ("sketch_size",)
    parameter_constraints = {
        "sketch_size": [Interval(Integral, 1, None, hint="rows of the sketch")]
    }
    batching = Batching(per_member=("lam", "sketch_size"))
    repr_args = ("lam", "sketch_size")

    def __init__(
        self,
        *,
        lam: float = 1.0,
        sketch_size: int = 10,
        d: int | None = None,
        device=None,
        dtype=None,
        seed: int | None = None,
        batch_size: int | None = None,
    ):
        super().__init__(lam=lam, d=d, device=device, dtype=dtype, seed=seed, batch_size=batch_size)


def _stream(rng, rounds, K, d):
    theta = rng.standard_normal(d)
    for _ in range(rounds):
        arms = rng.standard_normal((K, d))
        yield arms, arms @ theta + 0.1 * rng.standard_normal(K)


def test_the_new_rule_plays_argmax_of_the_ridge_estimate():
    """With sketch_size > d the sketch is exact: the choices are those of plain numpy ridge
    regression."""
    rng = np.random.default_rng(0)
    d, lam = 4, 0.5
    agent = SketchedGreedy(lam=lam, sketch_size=d + 1)
    A, b = lam * np.eye(d), np.zeros(d)
    for arms, rewards in _stream(rng, 30, 6, d):
        a = agent.act(arms)
        assert a == int(np.argmax(arms @ np.linalg.solve(A, b)))
        agent.update(arms, a, float(rewards[a]))
        A += np.outer(arms[a], arms[a])
        b += rewards[a] * arms[a]
    np.testing.assert_allclose(agent.theta_hat.numpy(), np.linalg.solve(A, b), rtol=1e-10)


def test_the_new_agent_gets_the_argument_checks_and_their_messages():
    with pytest.raises(
        InvalidArgumentError,
        match=r"^sketch_size must be an int >= 1 \(rows of the sketch\), "
        r"got 0 \(int\)$",
    ):
        SketchedGreedy(sketch_size=0)
    for key, value in (("lam", -1.0), ("seed", True), ("d", 0), ("batch_size", 0)):
        with pytest.raises(InvalidArgumentError) as ours:
            SketchedGreedy(**{key: value})
        with pytest.raises(InvalidArgumentError) as ofuls:
            OFUL(**{key: value})
        assert str(ours.value) == str(ofuls.value)  # the shared rules, the shared messages
    with pytest.raises(
        InvalidArgumentError,
        match=r"sketch_size\[1\] must be an int >= 1 .*\(member 1 of the batch of 2\)",
    ):
        SketchedGreedy(batch_size=2, sketch_size=[3, 0])
    agent = SketchedGreedy(lam=np.float32(0.5), sketch_size=np.int64(3))
    assert type(agent.lam) is float and agent.arguments["sketch_size"] == 3
    assert type(agent.arguments["sketch_size"]) is int


def test_the_new_agent_gets_its_memory_estimate_from_its_estimator():
    d, K, l = 12, 5, 4
    estimate = SketchedGreedy.estimate_memory_bytes(d, K, sketch_size=l)
    state = FrequentDirections.peak_member_bytes(d, l) + d * 8  # the sketch, and theta_hat
    assert estimate == arm_scratch_bytes(d, K) + state
    assert SketchedGreedy.estimate_memory_bytes(d, K, sketch_size=2 * l) > estimate
    assert (
        SketchedGreedy.estimate_initial_memory_bytes(d, K, sketch_size=l) is None
    )  # allocated whole
    agent = SketchedGreedy(sketch_size=l)
    for arms, rewards in _stream(np.random.default_rng(1), 20, K, d):
        a = agent.act(arms)
        agent.update(arms, a, float(rewards[a]))
    assert (
        agent.memory_bytes()
        == SketchedGreedy.estimate_state_bytes(d, K, **constructor_args(agent))
        == state
    )


def test_the_new_agent_batches_and_its_members_play_as_single_agents():
    singles = [SketchedGreedy(lam=0.5, sketch_size=2), SketchedGreedy(lam=2.0, sketch_size=5)]
    agent = batched_members(singles)
    assert supports_batched(agent.single_class) and agent.single_class is SketchedGreedy
    assert repr(agent) == "BatchedSketchedGreedy(batch_size=2, lam=[0.5, 2.0], sketch_size=[2, 5])"
    rng = np.random.default_rng(2)
    d = 6
    for arms, rewards in _stream(rng, 25, 4, d):
        batch_arms = np.stack([arms, arms])
        actions = agent.act(batch_arms)
        assert actions.tolist() == [single.act(arms) for single in singles]
        agent.update(batch_arms, actions, rewards[actions])
        for single, a in zip(singles, actions.tolist()):
            single.update(arms, a, float(rewards[a]))
    assert batched(singles[0], 3).batch_size == 3

    class Changed(
        SketchedGreedy
    ):  # a subclass may change act or update: it batches only if it says so
        pass

    assert (
        not supports_batched(Changed)
        and not Changed.batchable()
        and Changed.per_member_args == ("lam", "sketch_size")
    )
    with pytest.raises(TypeError, match="no batched version"):
        batched(Changed(), 2)


def test_the_registry_planner_and_describe_read_the_declarations(monkeypatch):
    from linbandit_gym.experiments.packing import member_bytes, per_member_args
    from linbandit_gym.registry import describe, estimate_run_bytes, lookup_agent

    monkeypatch.setitem(AGENTS, "SketchedGreedy", SketchedGreedy)
    entry = lookup_agent("sketchedgreedy")
    assert entry.factory is SketchedGreedy and entry.batchable()
    assert entry.per_member_args() == per_member_args("SketchedGreedy") == ("lam", "sketch_size")
    assert member_bytes(
        "SketchedGreedy", {"sketch_size": 3}, 5, 20
    ) == SketchedGreedy.estimate_memory_bytes(20, 5, sketch_size=3)
    memory = estimate_run_bytes(
        entry, {"sketch_size": 3}, "LinBandit-Synthetic-v0", {"d": 20, "n_arms": 5}
    )
    assert memory.agent_bytes == SketchedGreedy.estimate_memory_bytes(20, 5, sketch_size=3)
    assert entry.value_problem({"sketch_size": 0}) == (
        "SketchedGreedy: sketch_size must be an int >= 1 (rows of the sketch), got 0 (int)"
    )
    text = describe("SketchedGreedy")
    assert "batched (batch_size=B): lam, sketch_size may differ between the B members" in text
    assert any(
        line.split()[:3] == ["sketch_size", "int", "10"] and "rows of the sketch" in line
        for line in text.splitlines()
    )


# -- the package's agents are built from the same declarations --------------------------------
def test_batching_is_declared_where_it_counts():
    for name, cls in AGENTS.items():
        assert cls.batchable() == ("batching" in cls.__dict__) == (cls in BATCHED), name
        if cls.batchable():
            assert cls.per_member_args == cls.batching.per_member
    assert not LinUCB.batchable() and not EstimatorAgent.batchable() and not TorchAgent.batchable()
    # SOFUL and CBSCFD are one agent on two sketches: one set of declarations
    from agents import CBSCFD

    assert issubclass(CBSCFD, SOFUL) and CBSCFD.batching == SOFUL.batching
    assert (
        CBSCFD.estimator_args == SOFUL.estimator_args
        and CBSCFD.estimator_class is not SOFUL.estimator_class
    )


def test_the_optimism_rule_accumulates_log_det_only_for_its_own_radius():
    """OFUL's "theory" radius reads log det(A) - d log(lam), accumulated row by row; a sketched
    agent states its paper's radius and skips that work (its logdet_ratio stays 0)."""
    rng = np.random.default_rng(3)
    d, lam = 5, 0.5
    oful, soful = OFUL(beta="theory", lam=lam), SOFUL(beta="theory", lam=lam, sketch_size=3)
    gram = lam * np.eye(d)
    for arms, rewards in _stream(rng, 10, 4, d):
        a = oful.act(arms)
        oful.update(arms, a, float(rewards[a]))
        gram += np.outer(arms[a], arms[a])
        b = soful.act(arms)
        soful.update(arms, b, float(rewards[b]))
    assert oful.logdet_ratio == pytest.approx(
        np.linalg.slogdet(gram)[1] - d * np.log(lam), rel=1e-10
    )
    assert soful.logdet_ratio == 0.0
