"""The single agent's loop shortcuts (act/update outside the estimator) keep every behaviour.

Each shortcut of :class:`agents.linucb.LinUCB`'s B = 1 loop has a test here that fails if it took a
wrong turn: the finiteness test of the scores by a Python float sum (against the elementwise test),
the owned numpy conversion (the values of a plain ``torch.as_tensor`` conversion, never shared with
the array), the int/float feedback fast path (the general checks' outcome, message included, for
every value), update()'s match of act's arms (reused for the same object or an equal tensor view,
refused otherwise, state untouched by a refused update) and the scores formed from the estimator's
terms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB
from agents._torch import _all_finite, as_float_tensor
from agents.base import TorchAgent
from agents.sketches.backend import torch_on_cpu

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*more than OFUL:UserWarning"),
    # the obs-identity tests feed arms reinterpreted as int64 (values ~4e18): beyond float64, warned
    pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning"),
]

CPU = torch.device("cpu")
SINGLE = {  # d=4 allocates at once (the tests spy on the estimator before the first round)
    "OFUL": lambda: OFUL(lam=0.5, beta=0.3, d=4),
    "SOFUL": lambda: SOFUL(lam=0.5, beta=0.3, sketch_size=2, d=4),
    "CBSCFD": lambda: CBSCFD(lam=0.5, beta=0.3, sketch_size=2, d=4),
    "DBSLinUCB": lambda: DBSLinUCB(lam=0.5, beta=0.3, l0=2, eps=50.0, d=4),
}

# finite values up to the dtype's largest (whose squares overflow: the dot's false alarm), and
# inf/NaN
_special = st.sampled_from([np.inf, -np.inf, np.nan, 1e300, -1e300, 3e38, 0.0])


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from([np.float64, np.float32]),
    shape=st.sampled_from([(1,), (7,), (40,), (3, 5)]),
)
def test_all_finite_is_the_elementwise_test(data, dtype, shape):
    x = data.draw(hnp.arrays(dtype, shape, elements=st.floats(-1e3, 1e3, width=32)))
    for _ in range(data.draw(st.integers(0, 3))):  # plant special values anywhere
        with np.errstate(over="ignore"):  # 1e300 into float32 is inf: on purpose
            x.reshape(-1)[data.draw(st.integers(0, x.size - 1))] = data.draw(_special)
    expected = bool(np.isfinite(x).all())
    assert _all_finite(x) is expected
    assert _all_finite(torch.from_numpy(x.copy())) is expected


_OBS_DTYPES = [np.float64, np.float32, np.dtype(">f8"), np.float16, np.int64, np.bool_]


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    obs_dtype=st.sampled_from(_OBS_DTYPES),
    dtype=st.sampled_from([torch.float64, torch.float32]),
    layout=st.sampled_from(["C", "F", "strided", "matrix"]),
)
def test_owned_conversion_has_the_values_of_the_plain_one_and_never_shares(
    data, obs_dtype, dtype, layout
):
    base = data.draw(hnp.arrays(np.float64, (4, 6), elements=st.floats(-1e4, 1e4)))
    obs = base.astype(obs_dtype)
    obs = {
        "C": obs,
        "F": np.asfortranarray(obs),
        "strided": obs[:, ::2],
        "matrix": obs.view(np.matrix),
    }[layout]
    plain = torch.as_tensor(np.asarray(obs, dtype=np.float64)).to(
        dtype
    )  # the conversion before the fast path
    owned = as_float_tensor(obs, CPU, dtype, "x", own=True)
    shared = as_float_tensor(obs, CPU, dtype, "x")
    assert owned.dtype == shared.dtype == dtype
    assert torch.equal(owned, plain) and torch.equal(shared, plain)
    before = owned.clone()
    np.asarray(obs)[...] = 7  # in place: an owned tensor must not see it
    assert torch.equal(owned, before)


@pytest.mark.parametrize("obs_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_unowned_conversion_shares_exactly_what_it_shared_before(obs_dtype, dtype):
    """own=False (update()'s conversion, used at once; other agents' arm sets) stays a zero-copy
    view of a float64 array for float64, and a copy otherwise (a float32 agent holding float32
    env arms does not see the env's buffer change)."""
    x = np.arange(12.0).reshape(3, 4).astype(obs_dtype)
    t = as_float_tensor(x, CPU, dtype, "x")
    x[0, 0] = 99.0
    assert (float(t[0, 0]) == 99.0) == (obs_dtype is np.float64 and dtype == torch.float64)


class _Float(float):
    """A float whose type is not ``float``: takes _check_feedback's general path, same value and
    repr."""


def _outcome(fn, *args, **kw):
    try:
        out = fn(*args, **kw)
        return "ok", out, tuple(type(v) for v in out)
    except ValueError as exc:
        return "error", str(exc)


@settings(max_examples=300, deadline=None)
@given(
    n_arms=st.integers(1, 6),
    action=st.integers(-3, 14),
    stop=st.booleans(),
    reward=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e308])
    ),
    numpy_reward=st.booleans(),
)
def test_feedback_fast_path_gives_the_general_checks_outcome(
    n_arms, action, stop, reward, numpy_reward
):
    fast_reward = np.float64(reward) if numpy_reward else reward
    fast = _outcome(TorchAgent._check_feedback, n_arms, action, fast_reward, stop_actions=stop)
    general = _outcome(
        TorchAgent._check_feedback, n_arms, np.int64(action), _Float(reward), stop_actions=stop
    )
    assert fast == general
    if fast[0] == "ok":
        assert fast[2] == (int, float)


@pytest.mark.parametrize("name", list(SINGLE))
def test_refused_feedback_after_act_changes_nothing_and_the_round_still_reuses(name, monkeypatch):
    rng = np.random.default_rng(0)
    arms = rng.standard_normal((5, 4))
    agent, ref = SINGLE[name](), SINGLE[name]()
    a = agent.act(arms)
    assert a == ref.act(arms)
    for action, reward in (
        (5, 1.0),
        (-1, 1.0),
        (a, math.nan),
        (a, math.inf),
        (True, 1.0),
        (1.5, 1.0),
        (a, "x"),
    ):
        with pytest.raises(ValueError):
            agent.update(arms, action, reward)
        assert agent.t == 0 and float(agent.b.abs().sum()) == 0.0
    calls = _spy(agent, monkeypatch)
    agent.update(arms, a, 1.0)
    ref.update(arms.copy(), a, 1.0)  # another object: nothing reused
    assert calls == [a]  # the refused updates left act's arms and projection in place
    torch.testing.assert_close(agent.theta_hat, ref.theta_hat, rtol=1e-12, atol=1e-12)


def _spy(agent, monkeypatch) -> list:
    calls = []
    step = agent.estimator.step
    monkeypatch.setattr(
        agent.estimator,
        "step",
        lambda X, r, terms=None, actions=None, before=None: (
            calls.append(None if terms is None else actions) or step(X, r, terms, actions, before)
        ),
    )
    return calls


@pytest.mark.parametrize("name", list(SINGLE))
@pytest.mark.parametrize("kind", ["numpy64", "numpy32", "tensor"])
def test_arms_indexed_again_are_reused_only_as_tensor_views(name, kind, monkeypatch):
    """``arms[t]`` indexed again for update(): a tensor view of the same memory is act's arm set
    (projection reused) until its version counter moves (an in-place change: converted afresh,
    the changed row learnt); another numpy view is converted afresh (its current content learnt)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((3, 5, 4))
    stream = {
        "numpy64": X.copy(),
        "numpy32": X.astype(np.float32),
        "tensor": torch.as_tensor(X.copy()),
    }[kind]
    agent, ref = SINGLE[name](), SINGLE[name]()
    calls, played = _spy(agent, monkeypatch), []
    for t in range(3):
        a = agent.act(stream[t])
        assert a == ref.act(np.asarray(stream[t], dtype=np.float64))
        played.append(a)
        if t == 2:
            stream[t][a] += 1.0  # in place through the array, between act and update
        agent.update(stream[t], a, 1.0)  # stream[t] again: a new view object of the same memory
        ref.update(
            np.asarray(stream[t], dtype=np.float64).copy(), a, 1.0
        )  # its current content, nothing reused
        torch.testing.assert_close(agent.theta_hat, ref.theta_hat, rtol=1e-10, atol=1e-12)
    assert calls == (played[:2] + [None] if kind == "tensor" else [None] * 3)


def _played(agent, obs, monkeypatch, view) -> tuple:
    """act(obs), then update(view(obs)) with the scored action: (the step's actions, the agent)."""
    calls = _spy(agent, monkeypatch)
    a = agent.act(obs)
    agent.update(view(obs), a, 1.0)
    return calls[0], a


@pytest.mark.parametrize(
    "view",
    [
        lambda o: o[:],  # an equal view: another object (numpy has no version counter to tie it to)
        lambda o: o[:-1],  # same address, fewer arms
        lambda o: o.view(np.int64),  # same address and shape, another dtype
        lambda o: np.lib.stride_tricks.as_strided(
            o, o.shape, (o.strides[0], 0)
        ),  # same address and shape, other strides
        lambda o: o.copy(),  # same values, other memory
        lambda o: o.tolist(),
    ],
)
def test_other_numpy_objects_are_converted_afresh(view, monkeypatch):
    obs = np.random.default_rng(2).standard_normal((4, 3))
    actions, a = _played(SOFUL(sketch_size=2, beta=0.3, d=3), obs, monkeypatch, view)
    assert actions is None
    actions, a = _played(SOFUL(sketch_size=2, beta=0.3, d=3), obs, monkeypatch, lambda o: o)
    assert actions == a  # the very object: reused


def test_a_reshaped_obs_is_not_act_s_arm_set():
    """numpy lets ``obs.shape`` be reassigned in place: update() then validates it afresh (here the
    dimension changed, refused with the agent untouched), not the arms act scored."""
    obs = np.random.default_rng(3).standard_normal((4, 6))
    agent = SOFUL(sketch_size=2, beta=0.3)
    a = agent.act(obs)
    obs.shape = (8, 3)
    with pytest.raises(ValueError, match="arm dimension changed"):
        agent.update(obs, a, 1.0)
    assert agent.t == 0 and float(agent.b.abs().sum()) == 0.0


@pytest.mark.parametrize("name", list(SINGLE))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_scores_are_the_estimator_terms_on_either_backend(name, dtype):
    """The single agent's K scores are ``mean + beta sqrt(quad)`` of its estimator's terms, in the
    core dtype (float64), and its argmax the first maximum; they are a one-member batch's on the
    torch backend (which a GPU runs; on the CPU numpy runs: agents.sketches.backend) to the two
    backends' rounding, round after round, playing the same arms."""
    rng = np.random.default_rng(4)
    make = SINGLE[name]
    agent = type(make())(**{**_kw(make()), "dtype": dtype})
    with torch_on_cpu():  # (d given: the estimator is built here)
        twin = type(make())(**{**_kw(make()), "dtype": dtype, "batch_size": 1})
    assert agent.estimator.xp.is_numpy and not twin.estimator.xp.is_numpy
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for _ in range(12):
        arms = rng.standard_normal((5, 4))
        ucb, terms = agent._round(arms)
        assert isinstance(ucb, np.ndarray) and ucb.dtype == np.float64
        np.testing.assert_array_equal(ucb, terms.mean + 0.3 * np.sqrt(terms.quad))
        a = agent.act(arms)
        assert a == int(np.argmax(ucb[0]))
        s_twin = twin.scores(arms[None]).double()[0]
        torch.testing.assert_close(agent.scores(arms).double(), s_twin, rtol=tol, atol=tol)
        reward = float(rng.standard_normal())
        agent.update(arms, a, reward)
        twin.update(arms[None], np.array([a]), np.array([reward]))
    assert agent.t == twin.t == 12


def _kw(agent) -> dict:
    kw = dict(lam=agent.lam, beta=agent.beta, d=agent.d)
    if isinstance(agent, DBSLinUCB):
        kw.update(l0=agent.l0, eps=agent.eps)
    elif not isinstance(agent, OFUL):
        kw.update(sketch_size=agent.arguments["sketch_size"])
    return kw


@pytest.mark.parametrize("name", list(SINGLE))
def test_non_finite_arms_are_refused_by_act_with_nothing_changed(name):
    rng = np.random.default_rng(5)
    agent = SINGLE[name]()
    warm = rng.standard_normal((4, 4))
    agent.update(warm, agent.act(warm), 1.0)
    for bad in (np.nan, np.inf, -np.inf):
        arms = rng.standard_normal((4, 4))
        arms[2, 1] = bad
        with pytest.raises(ValueError, match="NaN or infinite"):
            agent.act(arms)
        assert agent.t == 1 and agent._scored is None


@pytest.mark.parametrize(
    "view",
    [
        lambda o: o[:-1],  # same address, fewer arms
        lambda o: o.view(torch.int64),  # same memory, sizes and strides, another dtype
        lambda o: o.as_strided(o.shape, (o.stride(0), 0)),  # same address and sizes, other strides
        lambda o: o.clone(),  # same values, other memory
        lambda o: o.t().t().contiguous().view(-1).view(o.shape).clone(),
    ],
)
def test_other_tensors_are_converted_afresh(view, monkeypatch):
    """Only the very tensor or a view of the same memory, sizes, strides and dtype is act's arm
    set."""
    obs = torch.as_tensor(np.random.default_rng(2).standard_normal((4, 3)))
    for same in (lambda o: o, lambda o: o[:], lambda o: o.view(4, 3)):
        actions, a = _played(SOFUL(sketch_size=2, beta=0.3, d=3), obs, monkeypatch, same)
        assert actions == a  # reused
    actions, a = _played(SOFUL(sketch_size=2, beta=0.3, d=3), obs, monkeypatch, view)
    assert actions is None


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_theory_radius_of_the_single_agent_is_the_batched_members(dtype):
    """The single OFUL's "theory" radius (a float) and log-det sum are a batched OFUL member's (an
    array): the numpy and torch backends on the same stream, to their rounding."""
    rng = np.random.default_rng(6)
    kw = dict(lam=0.7, beta="theory", delta=0.1, noise_std=0.5, theta_bound=2.0, dtype=dtype)
    single, batched = OFUL(**kw), OFUL(batch_size=2, **kw)
    for _ in range(8):
        arms = rng.standard_normal((2, 5, 3))
        obs = arms[
            0
        ]  # one object for act and update, as for the batched agent: both reuse the scored widths
        a = single.act(obs)
        actions = batched.act(arms)
        assert actions[0] == a
        assert isinstance(single.confidence_radius(), float)
        # float64 (the batched public one is in dtype); the same up to the two backends' rounding
        tol = 1e-12 if dtype == torch.float64 else 1e-6
        assert single.confidence_radius() == pytest.approx(float(batched._radius()[0]), rel=tol)
        single.update(obs, a, 1.0)
        batched.update(arms, actions, np.ones(2))
        assert (
            single.logdet_ratio == pytest.approx(float(batched.logdet_ratio[0]), rel=tol)
            and single.logdet_ratio > 0
        )
