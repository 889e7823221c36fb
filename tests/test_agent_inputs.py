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

from agents import AGENTS, OFUL, SOFUL
from agents.batched import batched
from agents.sketches.dbs import DyadicBlockSketch
from agents.sketches.exact import ExactCovariance
from agents.sketches.fd import FrequentDirections
from agents.sketches.rfd import RobustFrequentDirections

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


# -- overflow: refused before the state changes, named by its cause ----------------------------
REGRET_AGENTS = ["OFUL", "SOFUL", "CBSCFD", "DBSLinUCB", "DBSLinUCB-RFD"]


def _regret_agent(name, **kw):
    sized = {"sketch_size": 4} if name in ("SOFUL", "CBSCFD") else {}
    sized = {"l0": 2} if name.startswith("DBSLinUCB") else sized
    return AGENTS[name](lam=1.0, beta=0.1, **sized, **kw)


def _full_state(agent):
    est = agent.estimator
    return (
        agent.t,
        est.n_rows,
        agent.theta_hat.clone(),
        agent.scores(np.eye(3)).clone(),
        est.trace.copy(),
    )


def _same(a, b):
    return all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else np.array_equal(x, y)
        for x, y in zip(a, b)
    )


@pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")
@pytest.mark.filterwarnings("error::RuntimeWarning")  # no numpy overflow warning leaks
@pytest.mark.parametrize("name", REGRET_AGENTS)
def test_rewards_whose_sum_would_overflow_are_refused_naming_b_and_the_agent_plays_on(name):
    """Ten rewards of 1e308 once made b = sum r x overflow, every later round said "too
    ill-conditioned ... use dtype=torch.float64" (of a float64 agent), and only reset helped."""
    agent, arms = _regret_agent(name), np.eye(3)
    agent.update(arms, agent.act(arms), 1e308)  # |b| = 1e308: theta_hat = A^-1 b still holds
    before = _full_state(agent)
    with pytest.raises(
        ValueError,
        match=r"reward 1e\+308 on a row of norm 1 would take "
        r"b = sum_s r_s x_s past",
    ) as refused:
        agent.update(arms, agent.act(arms), 1e308)
    assert "ill-conditioned" not in str(refused.value) and "use dtype" not in str(refused.value)
    assert "The row was not added" in str(refused.value)
    assert _same(_full_state(agent), before)
    agent.update(arms, agent.act(arms), -1.0)  # and it plays on
    assert agent.t == before[0] + 1 and bool(torch.isfinite(agent.theta_hat).all())


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("name", REGRET_AGENTS)
def test_arms_whose_norm_overflows_are_refused_by_act_and_update_naming_the_arms(name):
    """Arms of norm 1e200 were blamed on conditioning "against squared row norms up to 0"."""
    agent, arms = _regret_agent(name), np.eye(3)
    agent.update(arms, agent.act(arms), 0.5)
    before = _full_state(agent)
    with pytest.raises(
        ValueError,
        match=r"an arm's squared norm overflows torch.float64 "
        r"\(\|x\| up to 1e\+200\); rescale the features$",
    ):
        agent.act(arms * 1e200)
    with pytest.raises(ValueError, match=r"squared norm overflows torch.float64"):
        agent.update(arms * 1e200, 0, 0.5)
    assert _same(_full_state(agent), before)


@pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")
@pytest.mark.parametrize("name", REGRET_AGENTS)
def test_a_batch_refuses_an_overflowing_member_for_all_and_names_it(name):
    agent = batched(_regret_agent(name), 2)
    arms = np.stack([np.eye(3), np.eye(3)])
    agent.update(arms, agent.act(arms), np.array([1.0, 1e308]))
    est = agent.estimator
    before = (agent.t, est.n_rows, agent.theta_hat.clone(), est.trace.copy())
    with pytest.raises(ValueError, match=r"^member 1: reward 1e\+308"):
        agent.update(arms, agent.act(arms), np.array([1.0, 1e308]))
    after = (agent.t, est.n_rows, agent.theta_hat.clone(), est.trace.copy())
    assert _same(after, before)


@pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")  # (due at 1e154)
@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(
    "build",
    [
        lambda: ExactCovariance(3, reg=1.0),
        lambda: FrequentDirections(3, sketch_size=2, reg=1.0),
        lambda: RobustFrequentDirections(3, sketch_size=2, reg=1.0),
        lambda: DyadicBlockSketch(3, l0=2, eps=1.0, reg=1.0),
    ],
    ids=["exact", "fd", "rfd", "dbs"],
)
def test_every_estimator_refuses_a_row_that_would_overflow_and_keeps_its_state(build):
    est = build()
    for i in range(4):
        est.update(np.eye(3)[i % 3], r=1e307)
    before = (est.n_rows, est.theta().clone(), est.b.clone(), est.trace.copy())
    with pytest.raises(ValueError, match="past what theta_hat = A_hat\\^-1 b can hold"):
        est.update(np.array([1.0, 1.0, 0.0]), r=1e308)
    with pytest.raises(ValueError, match="rows' squared norms would sum past"):
        for _ in range(3):  # tr X^T X past float64's range
            est.update(np.array([1e154, 0.0, 0.0]))
    after = (est.n_rows, est.theta().clone(), est.b.clone(), est.trace.copy())
    assert after[0] >= before[0] and bool(torch.isfinite(after[1]).all())


@pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")  # (due at 1e300)
@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_scores_that_overflow_name_the_term_and_not_the_conditioning(dtype):
    """Widths reach ||x||^2 / lam and means ||x|| ||b|| / lam whatever A_hat's conditioning."""
    agent = OFUL(lam=1e-300 if dtype == torch.float64 else 1e-30, beta=0.1, dtype=dtype)
    with pytest.raises(FloatingPointError) as widths:
        agent.act(np.eye(3) * 1e10)
    assert "the widths x^T A_hat^-1 x (at most ||x||^2 / lam) overflowed" in str(widths.value)
    assert ("use dtype=torch.float64" in str(widths.value)) == (dtype == torch.float32)
    agent = OFUL(lam=1.0, beta=0.1)
    agent.update(np.eye(3) * 1e150, 0, 1e100)
    with pytest.raises(FloatingPointError) as means:
        agent.act(np.eye(3) * 1e150)
    assert "the means x^T A_hat^-1 b (at most ||x|| ||b|| / lam) overflowed" in str(means.value)
    assert "ill-conditioned" not in str(widths.value) + str(means.value)
