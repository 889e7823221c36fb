"""The agents' constructor arguments: every rule declared in ``parameter_constraints`` (a class's
and its bases') is checked by one function, which writes every message; every agent refuses a bad
shared keyword with the same message, accepts numpy scalars, and leaves its state as it was after a
refused ``reset(seed=...)``."""

from __future__ import annotations

import inspect
import math
from numbers import Integral, Real

import numpy as np
import pytest
import torch
from agent_cases import agent_params, arm_set, keywords, make, play

from agents import AGENTS, CBSCFD, OFUL, SOFUL, DBSLinUCB
from agents._validate import Interval, InvalidArgumentError, check_value
from agents.base import _constructor_parameters

#: small d: the sketches of these tests hold more than OFUL's inverse, which is warned (asserted in
#: tests/test_agent_warnings.py); not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")


BAD_VALUES = {
    "delta": ["0.5", None, math.inf, math.nan, 0.0, 1.0, -0.1, True, 0.5 + 0j],
    "noise_std": [None, "x", math.inf, math.nan, -1.0, True, 1 + 0j],
    "theta_bound": [None, "x", math.inf, -1.0, False],
    "seed": [True, -1, 1.5, "3", np.float64(2.0)],
    "d": [True, 0, 2.0, "3"],
}


CASES = [
    pytest.param(name, key, value, id=f"{name}-{key}={value!r}")
    for name, cls in AGENTS.items()
    for key, values in BAD_VALUES.items()
    if key in keywords(cls)
    for value in values
]


# -- check_value: the one writer of every message --------------------------------------------------


def test_check_value_messages():
    """One writer for every message: the argument, every accepted form, the first hint, the value
    and its type."""
    positive = [Interval(Real, 0, None, closed="neither", hint="ridge")]
    with pytest.raises(
        InvalidArgumentError,
        match=r"^lam must be a finite real number > 0 \(ridge\), got inf \(float\)",
    ):
        check_value("lam", math.inf, positive)
    with pytest.raises(InvalidArgumentError, match=r"in \(0, 1\).*got '0.5' \(str\)"):
        check_value("delta", "0.5", [Interval(Real, 0, 1, closed="neither")])
    assert check_value("x", np.float32(0.5), [Interval(Real, 0, None)]) == 0.5
    assert type(check_value("n", np.int64(3), [Interval(Integral, 0, None)])) is int
    with pytest.raises(
        InvalidArgumentError, match=r"^c must be a finite real number > 0 or None, got 0 \(int\)$"
    ):
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


# -- every argument of every agent has a declared rule ---------------------------------------------


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_constructor_argument_of_every_agent_has_a_declared_rule(name):
    """No argument is checked ad hoc: each has a rule in the class's table or a base's (device and
    dtype are resolved, with their own messages, by agents._torch)."""
    cls = AGENTS[name]
    declared = {
        key for klass in cls.__mro__ for key in klass.__dict__.get("parameter_constraints", {})
    }
    params = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        found = inspect.signature(init).parameters.values()
        params |= {p.name for p in found if p.kind is p.KEYWORD_ONLY}
        if not any(p.kind is p.VAR_KEYWORD for p in found):
            break
    assert params - {"device", "dtype"} <= declared, params - declared
    defaults = {p.name: p.default for p in _constructor_parameters(cls) if p.default is not p.empty}
    assert cls.check_arguments(defaults) == defaults  # a constructor's defaults obey its rules


def test_the_rules_of_a_class_and_its_bases_all_hold_the_bases_first():
    """A subclass narrows a rule (best-arm identification wants noise_std > 0); the shared rule
    still speaks first, so every agent says the same about a value both refuse."""
    from agents import GAllocation

    with pytest.raises(
        InvalidArgumentError, match=r"^noise_std must be a finite real number > 0 \(the env's"
    ):
        GAllocation(noise_std=0.0)
    with pytest.raises(InvalidArgumentError) as bai:
        GAllocation(noise_std=None)
    with pytest.raises(InvalidArgumentError) as oful:
        OFUL(noise_std=None)
    assert str(bai.value) == str(oful.value)


# -- the keywords every agent shares ---------------------------------------------------------------


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
    kwargs.update(
        {k: np.float32(0.25) for k in ("delta", "noise_std", "theta_bound") if k in params}
    )
    agent = make(cls, **kwargs)
    assert agent.seed == 3 and agent.d == 3
    play(agent, arm_set())


# -- reset(seed) -----------------------------------------------------------------------------------


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


# -- each agent's own arguments: the values the agents' tests named -------------------------------
NO_CUDA = not torch.cuda.is_available()
SKETCHED = ("SOFUL", "CBSCFD")
BAI = ("GAllocation", "XYStatic", "XYAdaptive")
#: (agent, arguments, what the message must say); the shared keywords' values of BAD_VALUES are
#: not repeated here
OWN_ARGUMENTS = [
    *[
        ("OFUL", kwargs, None)
        for kwargs in (
            dict(lam=0),
            dict(lam=-1.0),
            dict(beta=-0.1),
            dict(beta="big"),
            dict(delta=1.5),
            dict(d=0),
            dict(dtype="int32"),
            dict(device="tpu"),
        )
    ],
    *[
        ("DBSLinUCB", kwargs, match)
        for kwargs, match in (
            (dict(l0=0), "l0"),
            (dict(l0=3.5), "l0"),
            (dict(eps=0), "eps"),
            (dict(eps=-2.0), "eps"),
            (dict(eps=float("nan")), "eps"),
            (dict(sketch="svd"), "sketch"),
            (dict(fast="yes"), "fast"),
            (dict(lam=0.0), "lam"),
            (dict(beta="optimistic"), "beta"),
            (dict(l0=60, d=50), "exceeds the arm dimension"),
            (dict(device="cuda"), "CUDA") if NO_CUDA else (dict(l0=-1), "l0"),
        )
    ],
    ("DBSLinUCB-FD", dict(sketch="rfd"), "always uses sketch='fd'"),
    ("DBSLinUCB-RFD", dict(sketch="fd"), "always uses sketch='rfd'"),
    *[
        (name, dict(sketch_size=bad), "sketch_size")
        for name in SKETCHED
        for bad in (0, -1, 1.5, "10", True, None)
    ],
    *[
        (name, kwargs, match)
        for name in SKETCHED
        for kwargs, match in (
            (dict(sketch_size=3, fast=1), "fast"),
            (dict(sketch_size=3, lam=0.0), "lam"),
            *([(dict(sketch_size=3, device="cuda"), "CUDA")] if NO_CUDA else []),
        )
    ],
    *[
        (name, kwargs, None)
        for name in BAI
        for kwargs in (dict(noise_std=0.0), dict(c=-1.0), dict(lam=1.0))
    ],
    ("GAllocation", dict(allocation="random"), "allocation"),
    ("XYStatic", dict(design_eps=0.0), "design_eps"),
    ("XYAdaptive", dict(alpha=1.0), "alpha"),
    ("GAllocation", dict(check_growth=-0.1), "check_growth"),
    *[("PhasedElimination", kwargs, None) for kwargs in (dict(delta=1.5), dict(design_eps=0.0))],
]


@pytest.mark.parametrize(
    "name, kwargs, match",
    [pytest.param(*case, id=f"{case[0]}-{case[1]}") for case in OWN_ARGUMENTS],
)
def test_each_agents_own_arguments_are_refused(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        AGENTS[name](**kwargs)


def test_cuda_without_cuda_fails_clearly():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="CUDA is not available"):
        OFUL(device="cuda")


# -- every declared rule, for every registered agent ----------------------------------------------
def _declared_rules(cls) -> list[tuple[str, list]]:
    """The ``(name, forms)`` rules of ``cls`` and of its bases, the bases' first."""
    return [
        (name, forms)
        for klass in reversed(cls.__mro__)
        for name, forms in klass.__dict__.get("parameter_constraints", {}).items()
    ]


def _near_misses(forms) -> list:
    """Values at and around the edges of ``forms``: each bound's nearest excluded number, a number
    of the other kind, a string of a number, a bool, a complex, nan and inf, an unknown option."""
    values = ["1", 1j, math.nan, math.inf, -math.inf, True, False, None, "no-such-option", 0.5]
    for form in forms:
        if isinstance(form, Interval):
            integral = form.kind is Integral
            step = 1 if integral else 0.5
            for bound, side in ((form.left, -1), (form.right, 1)):
                if bound is not None:
                    number = int(bound) if integral else float(bound)
                    values += [number, number + side * step]
            values += [2.5, 3.0, np.float64(2.0)] if integral else [np.float32(-1.0)]
    return values


def _refused(name, value, rules) -> str | None:
    """The message of the first rule (bases' first) that refuses ``value``, or None."""
    for rule_name, forms in rules:
        if rule_name != name:
            continue
        try:
            check_value(name, value, forms)
        except InvalidArgumentError as exc:
            return str(exc)
    return None


RULE_CASES = [
    pytest.param(agent, name, id=f"{agent}-{name}")
    for agent, cls in AGENTS.items()
    for name in dict(_declared_rules(cls))
    if name in keywords(cls)
]


@pytest.mark.parametrize("agent, name", RULE_CASES)
def test_every_declared_rule_refuses_what_it_excludes_with_its_message(agent, name):
    """Read from the classes' own tables: whatever value a declared rule refuses, the constructor
    refuses, with that rule's message (the argument, every form it takes, the value and its type),
    before anything is built; a value every rule takes is not refused for that argument."""
    cls = AGENTS[agent]
    rules = _declared_rules(cls)
    refused = 0
    for forms in [forms for rule_name, forms in rules if rule_name == name]:
        for value in _near_misses(forms):
            expected = _refused(name, value, rules)
            if expected is None:
                try:  # taken by every rule: the argument checks take it too
                    cls(**{name: value})
                except InvalidArgumentError as exc:
                    pytest.fail(f"{name}={value!r} is taken by its rules, refused: {exc}")
                except ValueError as exc:  # a rule across arguments (l0 <= d), not this one's
                    assert "exceeds" in str(exc), exc
                continue
            refused += 1
            with pytest.raises(InvalidArgumentError) as info:
                cls(**{name: value})
            assert str(info.value) == expected, (value, str(info.value))
            assert expected.startswith(f"{name} must be ")
            assert expected.endswith(f"got {value!r} ({type(value).__name__})")
    assert refused >= 3  # every rule excludes some of its near misses


# -- per-member values of a batched agent ---------------------------------------------------------


@pytest.mark.parametrize("cls", [OFUL, SOFUL, CBSCFD, DBSLinUCB])
def test_per_member_arguments_are_validated_naming_the_member(cls):
    assert set(cls.per_member_args) >= {"lam", "beta"}
    with pytest.raises(
        ValueError,
        match=r"lam\[1\] must be a finite real number > 0 "
        r"\(ridge lambda\), got -1.0 \(float\) \(member 1",
    ):
        cls(batch_size=3, lam=[0.5, -1.0, 2.0])
    with pytest.raises(
        ValueError,
        match=r"beta\[2\] must be a finite real number >= 0 or "
        r"'theory', got nan \(float\) \(member 2",
    ):
        cls(batch_size=3, beta=(0.1, 0.2, float("nan")))
    with pytest.raises(
        ValueError, match=r"lam must hold one value per member \(batch_size=3\), got 2 values"
    ):
        cls(batch_size=3, lam=np.array([0.5, 1.0]))
    with pytest.raises(
        ValueError, match=r"beta=\[0.1, 0.2\] gives one value per member, but a single agent"
    ):
        cls(beta=[0.1, 0.2])
    with pytest.raises(ValueError, match="flat sequence"):
        cls(batch_size=2, lam=np.ones((2, 1)))
    # a 1-D array and a tensor work like a list; a scalar is every member's value
    agent = cls(
        batch_size=2, lam=np.array([0.5, 2.0]), beta=torch.tensor([0.0, 1.0], dtype=torch.float64)
    )
    assert agent.lam.tolist() == [0.5, 2.0] and agent.beta.tolist() == [0.0, 1.0]
    assert cls(batch_size=2, lam=[0.5, 0.5]).lam == 0.5


def test_per_member_l0_and_eps_are_validated_naming_the_member():
    assert {"l0", "eps"} <= set(DBSLinUCB.per_member_args)
    with pytest.raises(
        ValueError,
        match=r"l0\[1\] must be an int >= 1 "
        r"\(the initial sketch size\), got 0 \(int\) \(member 1",
    ):
        DBSLinUCB(batch_size=2, l0=[2, 0])
    with pytest.raises(
        ValueError,
        match=r"eps\[0\] must be a finite real number > 0 "
        r"\(the error parameter\), got -1.0 \(float\) \(member 0",
    ):
        DBSLinUCB(batch_size=2, eps=[-1.0, 2.0])
    with pytest.raises(ValueError, match=r"l0\[1\]=10 \(member 1\) exceeds the arm dimension d=4"):
        DBSLinUCB(batch_size=2, l0=[2, 10], d=4)
    agent = DBSLinUCB(batch_size=2, l0=[2, 10], eps=1.0)
    with pytest.raises(ValueError, match=r"l0\[1\]=10 \(member 1\) exceeds the arm dimension d=4"):
        agent.act(np.zeros((2, 3, 4)))
    assert agent.estimator is None  # nothing was allocated
    agent = DBSLinUCB(batch_size=3, l0=[1, 2, 8], eps=[1.0, 4.0, 4.0], d=24)
    assert (
        repr(agent)
        == "DBSLinUCB(batch_size=3, lam=1.0, beta=1.0, l0=[1, 2, 8], eps=[1.0, 4.0, 4.0], "
        "sketch='fd')"
    )
    singles = [DBSLinUCB(l0=l0, eps=eps, d=24) for l0, eps in ((1, 1.0), (2, 4.0), (8, 4.0))]
    assert agent.estimator.block_cap.tolist() == [s.estimator.block_cap for s in singles]
    assert agent.exact_mode.tolist() == [s.exact_mode for s in singles] == [False, False, True]
    assert agent.member_memory_bytes().tolist() == [s.memory_bytes() for s in singles]


@pytest.mark.parametrize("cls", [SOFUL, CBSCFD])
def test_per_member_sketch_sizes_are_validated_and_reported(cls):
    assert "sketch_size" in cls.per_member_args
    with pytest.raises(
        ValueError,
        match=r"sketch_size\[1\] must be an int >= 1 .*, "
        r"got 0 \(int\) \(member 1 of the batch of 3\)",
    ):
        cls(batch_size=3, sketch_size=[3, 0, 2])
    with pytest.raises(ValueError, match=r"sketch_size\[2\] must be an int >= 1 .*, got 2.0 "):
        cls(batch_size=3, sketch_size=[3, 4, 2.0])
    with pytest.raises(ValueError, match="single agent"):
        cls(sketch_size=[3, 4])
    agent = cls(batch_size=3, sketch_size=[2, 4, 3], fast=False, d=6)
    assert agent.sketch_size.tolist() == [2, 4, 3] and agent.estimator.capacity == 4
    assert repr(agent).endswith("sketch_size=[2, 4, 3])")
    singles = [cls(sketch_size=l, fast=False, d=6) for l in (2, 4, 3)]
    assert agent.member_memory_bytes().tolist() == [s.memory_bytes() for s in singles]
    assert agent.memory_bytes() >= sum(
        s.memory_bytes() for s in singles
    )  # the padded batch holds at least that


@pytest.mark.parametrize("name", ["XYStatic", "XYAdaptive"])
def test_the_xy_allocations_lam_error_does_not_name_g_allocation(name):
    with pytest.raises(ValueError) as refused:
        AGENTS[name](lam=1.0)
    assert "G-allocation" not in str(refused.value) and "pass lam=0" in str(refused.value)
