"""The agents' side of the trust boundaries: feedback that is not a real number, tensors without
data, states that cannot fit (refused before allocating, from the class's own estimate), the
estimate against what an agent reports, and warnings at the user's line with a true threshold."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from agents import AGENTS, CBSCFD, OFUL, SOFUL, DBSLinUCB, DBSLinUCBRFD
from agents._warnings import DesignWarning, SketchSizeWarning
from agents.batched import batched
from agents.estimator_agent import arm_scratch_bytes
from agents.sketches.exact import ExactCovariance
from agents.sketches.fd import FrequentDirections

#: small d: the sketches hold more than OFUL's inverse; the tests about that warning assert it
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")

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
    agent = AGENTS[name](sketch_size=4) if "SOFUL" in name or "CBSCFD" in name else (
        AGENTS[name](l0=2) if "DBS" in name else AGENTS[name]())
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
    with pytest.raises(ValueError, match=r"^the observation is a tensor on device 'meta', which holds no values"):
        agent.act(torch.empty((3, 4), device="meta"))
    assert agent.d is None  # the dimension was not fixed by the refused call


def test_oful_of_a_billion_dimensions_is_refused_naming_d_and_the_classes_estimate():
    from linbandit_host.memory import format_count

    refused_message = r"^OFUL\(\) at d=1000000000 would allocate about 6.94 EiB \(8e\+18 bytes\)"
    with pytest.raises(ValueError, match=refused_message) as refused:
        OFUL(d=10**9)
    assert f"({format_count(OFUL.estimate_state_bytes(10**9, 1))} bytes)" in str(refused.value)
    assert str(refused.value).endswith("lower d")


def test_a_batch_is_refused_for_all_its_members(monkeypatch):
    """B members need B states: 2 members of 0.6 GB each fit in 2e9 bytes, 4 do not."""
    monkeypatch.setenv("LINBANDIT_MEMORY_LIMIT", "2e9")
    d = 8000  # OFUL's inverse: 8 d^2 = 512,000,000 bytes
    OFUL(d=d, batch_size=2, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"^OFUL\(\) at d=8000 would allocate about .* for its 4 members"):
        OFUL(d=d, batch_size=4)


def test_soful_buffers_are_sized_by_the_rows_fd_can_use():
    """FD never holds more than d useful rows: SOFUL(sketch_size=5000) at d = 10 holds what
    sketch_size = d + 1 holds (11 rows of coordinates over a basis of 10), not 2 x 5000 rows."""
    with pytest.warns(SketchSizeWarning):
        agent = SOFUL(sketch_size=5000, d=10)
    assert agent.memory_bytes() == FrequentDirections.peak_member_bytes(10, 11) + 8 * 10
    assert agent.memory_bytes() < 2 * 5000 * 10 * 8 / 10
    assert max(agent.estimator.core.V.shape[1:]) <= 11 and max(agent.estimator.core.C.shape[1:]) <= 11


# -- one memory formula: the estimators' own, equal to what the agent reports ----------------------

def _peak(agent, d, n_arms, rounds, seed=0):
    rng = np.random.default_rng(seed)
    peak = 0
    for _ in range(rounds):
        arms = rng.standard_normal((n_arms, d))
        agent.update(arms, agent.act(arms), float(rng.standard_normal()))
        peak = max(peak, agent.memory_bytes())
    return peak


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("cls, args", [(OFUL, {}), (SOFUL, {"sketch_size": 3}), (SOFUL, {"sketch_size": 6, "fast": False}),
                                       (CBSCFD, {"sketch_size": 5})])
def test_the_estimate_equals_what_the_agent_reports(cls, args, dtype):
    d, n_arms = 24, 6
    agent = cls(**args, dtype=dtype)
    peak = _peak(agent, d, n_arms, rounds=60)
    assert cls.estimate_state_bytes(d, n_arms, **args, dtype=dtype) == peak == agent.memory_bytes()
    assert cls.estimate_memory_bytes(d, n_arms, **args, dtype=dtype) == arm_scratch_bytes(d, n_arms) + peak
    assert cls.estimate_initial_memory_bytes(d, n_arms, **args) is None  # allocated whole


@pytest.mark.parametrize("cls, args", [(DBSLinUCB, {"l0": 2, "eps": 0.5}), (DBSLinUCBRFD, {"l0": 3, "eps": 0.5}),
                                       (DBSLinUCB, {"l0": 2, "eps": 0.5, "memory_cap": False, "time_cap": False})])
def test_dbslinucb_estimates_its_first_block_exactly_and_bounds_its_peak_single_and_batched(cls, args):
    """First allocation: equal to what the agent reports before its first row. Peak: a bound,
    documented as the single agent's peak plus the exact inverse (a batch keeps a member's row of
    the sketch state until every member is exact); reached by a single agent once exact."""
    d, n_arms = 24, 6
    agent = cls(**args, d=d)
    first = cls.estimate_state_bytes(d, n_arms, initial=True, **args)
    agent.act(np.random.default_rng(0).standard_normal((n_arms, d)))
    assert first == agent.memory_bytes() and first < cls.estimate_state_bytes(d, n_arms, **args)
    assert cls.estimate_initial_memory_bytes(d, n_arms, **args) == arm_scratch_bytes(d, n_arms) + first
    bound = cls.estimate_state_bytes(d, n_arms, **args)
    agent = cls(**args)
    peak = _peak(agent, d, n_arms, rounds=150)
    assert agent.exact_mode and peak <= bound
    exact = ExactCovariance.peak_member_bytes(d) + 8 * d
    assert agent.memory_bytes() == exact  # the exact phase: OFUL's state
    members = batched(cls(**args), 3)
    rng = np.random.default_rng(1)
    held = 0
    for _ in range(150):
        arms = rng.standard_normal((3, n_arms, d))
        members.update(arms, members.act(arms), rng.standard_normal(3))
        held = max(held, members.memory_bytes())
    assert held <= 3 * bound


def test_the_registry_asks_the_class_for_the_first_allocation():
    from linbandit_gym.registry import estimate_run_bytes, lookup_agent

    env = {"d": 40, "n_arms": 7, "horizon": 10}
    memory = estimate_run_bytes(lookup_agent("DBSLinUCB-RFD"), {"l0": 4}, "LinBandit-Synthetic-v0", env)
    assert memory.agent_first_bytes == DBSLinUCBRFD.estimate_initial_memory_bytes(40, 7, l0=4)
    assert memory.agent_bytes == DBSLinUCBRFD.estimate_memory_bytes(40, 7, l0=4)
    assert estimate_run_bytes(lookup_agent("SOFUL"), {}, "LinBandit-Synthetic-v0", env).agent_first_bytes is None


# -- warnings: at the user's line, once, with the threshold the condition uses ----------------------

def _largest_quiet(d, fast, dtype):
    """The largest sketch_size whose sketch is at most OFUL's bytes, by brute force."""
    oful = ExactCovariance.peak_member_bytes(d, dtype)
    quiet = [l for l in range(1, d + 2) if FrequentDirections.peak_member_bytes(d, l, fast, dtype) <= oful]
    return max(quiet) if quiet else 0


@pytest.mark.parametrize("cls", [SOFUL, CBSCFD])
@pytest.mark.parametrize("d, fast, dtype", [(10, True, torch.float64), (30, True, torch.float32), (41, False, torch.float64),
                                            (200, True, torch.float64)])
def test_the_sketch_size_warning_states_the_threshold_its_condition_uses(cls, d, fast, dtype):
    threshold = _largest_quiet(d, fast, dtype)
    assert threshold >= 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls(sketch_size=threshold, d=d, fast=fast, dtype=dtype)  # at the threshold: quiet
    with pytest.warns(SketchSizeWarning) as caught:
        cls(sketch_size=threshold + 1, d=d, fast=fast, dtype=dtype)  # one above: warned
    [w] = caught
    assert f"use sketch_size <= {threshold} or OFUL" in str(w.message)
    assert str(w.message).startswith(f"{cls.__name__}(sketch_size={threshold + 1}) at d={d} holds")
    assert w.filename == __file__


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("d", [10, 41, 200, 784])
def test_slower_than_oful_is_the_planners_comparison_at_every_number_of_arms(d, fast):
    """A size is flagged exactly when block_round_cost (at the buffer's peak) exceeds OFUL's
    exact_round_cost at every K tried, from one arm to 10^12."""
    from agents.sketches.dbs import block_round_cost, exact_round_cost
    from agents.soful import slower_than_oful

    ls = np.arange(1, d + 2)
    arms = np.array([1, 2, 3, 10, 100, 10**4, 10**6, 10**12])[:, None]
    rows = 2 * ls if fast else ls
    every = (block_round_cost(d, arms, rows, ls, fast) > exact_round_cost(d, arms)).all(axis=0)
    flagged = slower_than_oful(d, ls, fast)
    assert (flagged == every).all()
    assert flagged[-1] and not flagged[0]  # l = d + 1 spans R^d (twice OFUL's scoring); l = 1 not


def test_the_sketch_size_warning_says_when_the_rounds_cost_more_than_ofuls():
    """At d = 784 (MNIST): l = 403 holds more than OFUL and its rounds cost more (both said, once);
    l = 200 only holds more; l = 100 neither; the size offered avoids both."""
    with pytest.warns(SketchSizeWarning) as caught:
        SOFUL(sketch_size=403, d=784)
    [w] = caught
    assert "more than OFUL's d x d inverse" in str(w.message)
    assert "rounds cost more than OFUL's at any number of arms" in str(w.message)
    assert str(w.message).endswith("use sketch_size <= 195 or OFUL")
    with pytest.warns(SketchSizeWarning) as caught:
        CBSCFD(sketch_size=200, d=784)
    assert "rounds cost more" not in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SOFUL(sketch_size=100, d=784)


def test_the_sketch_size_warning_points_at_the_users_line_once_and_names_the_users_class():
    arms = np.random.default_rng(0).standard_normal((3, 6))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own: once per (message, category, place)
        for _ in range(4):
            SOFUL(sketch_size=50).act(arms)  # allocated lazily, deep inside act
        batched(SOFUL(sketch_size=50), 2).act(np.stack([arms, arms]))  # the batched twin, at d=6
    assert [w.category for w in caught] == [SketchSizeWarning] * 2  # once for the loop's line, once for the batch's
    assert [w.filename for w in caught] == [__file__] * 2 and caught[0].lineno != caught[1].lineno
    for w in caught:
        assert str(w.message).startswith("SOFUL(sketch_size=50) at d=6 holds")
        assert "Batched" not in str(w.message) and "~" not in str(w.message)


def test_a_design_warning_points_at_the_users_line():
    from agents.design import solve_g_design

    x = np.random.default_rng(0).standard_normal((30, 5))
    with pytest.warns(DesignWarning, match="max_iter") as caught:
        solve_g_design(x, 1e-9, max_iter=3)
    assert caught[0].filename == __file__
    assert issubclass(DesignWarning, RuntimeWarning)


def test_the_agents_memory_limit_is_the_envs(monkeypatch):
    """One limit: agents and envs read it from linbandit_host.memory, and both obey the variable."""
    from agents import estimator_agent
    from linbandit_gym.envs import memory

    assert estimator_agent.memory_limit_bytes is memory.memory_limit_bytes
    monkeypatch.setenv("LINBANDIT_MEMORY_LIMIT", "1MB")
    with pytest.raises(ValueError, match=r"the limit \$LINBANDIT_MEMORY_LIMIT \(1 MiB\)"):
        OFUL(d=1000)
    assert memory.memory_limit_bytes() == 2**20
    assert memory.format_bytes(960_004_800_000) == "894 GiB"


# -- describe ----------------------------------------------------------------------------------------

def test_describe_shows_types_for_device_and_dtype_and_the_registered_sketch():
    from linbandit_gym.registry import describe

    rfd = describe("DBSLinUCB-RFD").splitlines()
    sketch = next(line for line in rfd if line.split()[:1] == ["sketch"])
    assert sketch.split()[1:3] == ["str", "'rfd'"], sketch
    fd = describe("DBSLinUCB-FD").splitlines()
    assert next(line for line in fd if line.split()[:1] == ["sketch"]).split()[2] == "'fd'"
    for name in AGENTS:
        lines = describe(name).splitlines()
        for arg in ("device", "dtype"):
            line = next(line for line in lines if line.split()[:1] == [arg])
            assert line.split()[1] == "str", (name, line)  # "str | device | None", not "any"
            assert " any " not in line


@pytest.mark.parametrize("batch", [False, True])
def test_a_warning_raised_inside_the_loop_points_at_the_users_call_and_names_the_users_class(batch):
    from linbandit_gym import run

    with pytest.warns(SketchSizeWarning) as caught:
        run("LinBandit-Synthetic-v0", SOFUL(sketch_size=50), seeds=[0, 1], batched=batch, progress=False,
            env_kwargs={"d": 6, "n_arms": 3, "horizon": 5})
    assert caught and all(w.filename == __file__ for w in caught), [(w.filename, w.lineno) for w in caught]
    assert all(str(w.message).startswith("SOFUL(sketch_size=50) at d=6") for w in caught)
