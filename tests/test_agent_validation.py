"""Argument, observation and feedback validation of every agent, and check_agent.

Every class in ``agents.AGENTS`` must refuse a bad shared keyword (``delta``, ``noise_std``,
``theta_bound``, ``seed``, ``d``) with one message naming the argument, refuse complex
observations and rewards instead of dropping the imaginary part, and leave its state as it
was after any refused call (a refused first ``update`` must not fix ``d``).
"""

from __future__ import annotations

import inspect
import math
from numbers import Integral, Real

import numpy as np
import pytest
import torch

from agents import AGENTS, check_agent
from agents._validate import InvalidArgumentError, Interval, check_value
from agents.batched import batched
from agents.design import g_optimal_design, xy_optimal_design

#: small d: the sketches of these tests hold more than OFUL's inverse, which is warned (asserted in
#: tests/test_agent_boundaries.py); not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")

BAD_VALUES = {
    "delta": ["0.5", None, math.inf, math.nan, 0.0, 1.0, -0.1, True, 0.5 + 0j],
    "noise_std": [None, "x", math.inf, math.nan, -1.0, True, 1 + 0j],
    "theta_bound": [None, "x", math.inf, -1.0, False],
    "seed": [True, -1, 1.5, "3", np.float64(2.0)],
    "d": [True, 0, 2.0, "3"],
}


def keywords(cls) -> set[str]:
    """The constructor keywords of ``cls``, following ``**kwargs`` passed on to the parent's."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"self"}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names
    return names


CASES = [
    pytest.param(name, key, value, id=f"{name}-{key}={value!r}")
    for name, cls in AGENTS.items()
    for key, values in BAD_VALUES.items()
    if key in keywords(cls)
    for value in values
]



def agent_params():
    return [pytest.param(cls, id=name) for name, cls in AGENTS.items()]


def make(cls, **kwargs):
    """An agent of ``cls`` able to play the small arm sets below (DBSLinUCB needs l0 <= d)."""
    if "l0" in keywords(cls):
        kwargs.setdefault("l0", 2)
    return cls(**kwargs)


def arm_set(k=4, d=3, seed=0):
    return np.random.default_rng(seed).standard_normal((k, d))


def play(agent, x, rounds=6, seed=0):
    """A few rounds on the fixed arm set ``x`` (pulls only: BAI agents stop with a ``>= K`` action)."""
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        a = agent.act(x)
        if a >= len(x):
            return
        agent.update(x, a, float(rng.standard_normal()))


@pytest.mark.parametrize("name, key, value", CASES)
def test_bad_shared_keyword_is_refused_naming_it(name, key, value):
    with pytest.raises(InvalidArgumentError, match=rf"^{key} must be ") as info:
        AGENTS[name](**{key: value})
    assert str(info.value).endswith(f"got {value!r} ({type(value).__name__})")
    # one error type for both kinds of caller: ``except ValueError`` and ``except TypeError``
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


@pytest.mark.parametrize("key", sorted(BAD_VALUES))
def test_every_agent_says_the_same_about_the_same_bad_value(key):
    value = BAD_VALUES[key][0]
    messages = set()
    for cls in AGENTS.values():
        if key in keywords(cls):
            with pytest.raises(InvalidArgumentError) as info:
                cls(**{key: value})
            messages.add(str(info.value))
    assert len(messages) == 1, messages


@pytest.mark.parametrize("cls", agent_params())
def test_numpy_scalars_are_accepted(cls):
    params = keywords(cls)
    kwargs = {"seed": np.int64(3), "d": np.int32(3)}
    kwargs.update({k: np.float32(0.25) for k in ("delta", "noise_std", "theta_bound") if k in params})
    agent = make(cls, **kwargs)
    assert agent.seed == 3 and agent.d == 3
    play(agent, arm_set())


def test_check_value_messages():
    """One writer for every message: the argument, every accepted form, the first hint, the value
    and its type."""
    positive = [Interval(Real, 0, None, closed="neither", hint="ridge")]
    with pytest.raises(InvalidArgumentError,
                       match=r"^lam must be a finite real number > 0 \(ridge\), got inf \(float\)"):
        check_value("lam", math.inf, positive)
    with pytest.raises(InvalidArgumentError, match=r"in \(0, 1\).*got '0.5' \(str\)"):
        check_value("delta", "0.5", [Interval(Real, 0, 1, closed="neither")])
    assert check_value("x", np.float32(0.5), [Interval(Real, 0, None)]) == 0.5
    assert type(check_value("n", np.int64(3), [Interval(Integral, 0, None)])) is int
    with pytest.raises(InvalidArgumentError,
                       match=r"^c must be a finite real number > 0 or None, got 0 \(int\)$"):
        check_value("c", 0, [Interval(Real, 0, None, closed="neither"), None])
    with pytest.raises(InvalidArgumentError, match=r"^sketch must be 'fd' or 'rfd', got 'svd' "):
        check_value("sketch", "svd", [{"rfd", "fd"}])  # a set is listed sorted
    with pytest.raises(InvalidArgumentError, match=r"^fast must be True or False, got 1 \(int\)$"):
        check_value("fast", 1, [bool])
    with pytest.raises(InvalidArgumentError, match=r"^fast must be True or False, got np.True_ "):
        check_value("fast", np.bool_(True), [bool])
    with pytest.raises(InvalidArgumentError, match=r"^lam must be 0 \(plain OLS\), got 0.1 "):
        check_value("lam", 0.1, [Interval(Real, 0, 0, closed="both", hint="plain OLS")])
    with pytest.raises(InvalidArgumentError, match=r"^n must be an int in \[0, 4\], got 5 \(int\)"):
        check_value("n", 5, [Interval(Integral, 0, 4, closed="both")])
    for refused in (True, "1", 1 + 0j, math.nan, None):
        with pytest.raises(InvalidArgumentError):
            check_value("x", refused, [Interval(Real, None, None)])


# -- reset(seed) ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", agent_params())
def test_refused_reset_seed_leaves_the_agent_as_it_was(cls):
    x = arm_set()
    agent = make(cls, seed=1)
    play(agent, x)
    before = (agent.act(x), agent.memory_bytes(), agent.t, agent.seed)
    for seed in (True, -1, "0", 2.5):
        with pytest.raises(InvalidArgumentError, match="^seed must be"):
            agent.reset(seed=seed)
    assert (agent.act(x), agent.memory_bytes(), agent.t, agent.seed) == before


# -- complex input -------------------------------------------------------------------------
@pytest.mark.parametrize("cls", agent_params())
@pytest.mark.parametrize("kind", ["numpy", "tensor", "list"])
def test_complex_observations_are_refused(cls, kind):
    x = arm_set() + 1j * arm_set(seed=1)
    obs = {"numpy": x, "tensor": torch.as_tensor(x), "list": [[complex(v) for v in row] for row in x]}[kind]
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


# -- check_agent ---------------------------------------------------------------------------
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
    with pytest.raises(AssertionError, match=r"got the class Greedy, not an agent: pass an instance, e\.g\. Greedy\(\)"):
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

    with pytest.raises(AssertionError, match=r"update\(obs, 0, .*\) at step 0 raised KeyError: 'boom'") as info:
        check_agent(Crashes(), small_env())
    assert isinstance(info.value.__cause__, KeyError)


def test_check_agent_reports_a_bad_memory_bytes():
    class BadMemory(Greedy):
        def memory_bytes(self):
            return True

    with pytest.raises(AssertionError, match=r"memory_bytes\(\) returned True"):
        check_agent(BadMemory(), small_env())


@pytest.mark.parametrize("kind", ["numpy", "tensor", "list"])
def test_designs_refuse_complex_arms(kind):
    x = np.eye(3) * (1 + 1j)
    arms = {"numpy": x, "tensor": torch.as_tensor(x), "list": x.tolist()}[kind]
    for design in (g_optimal_design, xy_optimal_design):
        with pytest.raises(ValueError, match="arms must be real-valued, got complex values"):
            design(arms)
