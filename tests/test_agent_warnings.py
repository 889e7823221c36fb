"""The agents' warnings: at the user's line (through the loop and a batch too), once, naming the
user's class, with the threshold the condition uses (``SketchSizeWarning``, ``DesignWarning``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB
from agents._warnings import DesignWarning, DiscardedMassWarning, SketchSizeWarning
from agents.batched import batched
from agents.sketches.exact import ExactCovariance
from agents.sketches.fd import FrequentDirections


def _largest_quiet(d, fast, dtype):
    """The largest sketch_size whose sketch is at most OFUL's bytes, by brute force."""
    oful = ExactCovariance.peak_member_bytes(d, dtype)
    quiet = [
        l
        for l in range(1, d + 2)
        if FrequentDirections.peak_member_bytes(d, l, fast, dtype) <= oful
    ]
    return max(quiet) if quiet else 0


@pytest.mark.parametrize("cls", [SOFUL, CBSCFD])
@pytest.mark.parametrize(
    "d, fast, dtype",
    [
        (10, True, torch.float64),
        (30, True, torch.float32),
        (41, False, torch.float64),
        (200, True, torch.float64),
    ],
)
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
    assert [w.category for w in caught] == [
        SketchSizeWarning
    ] * 2  # once for the loop's line, once for the batch's
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


@pytest.mark.parametrize("batch", [False, True])
def test_a_warning_raised_inside_the_loop_points_at_the_users_call_and_names_the_users_class(batch):
    from linbandit_gym import run

    with pytest.warns(SketchSizeWarning) as caught:
        run(
            "LinBandit-Synthetic-v0",
            SOFUL(sketch_size=50),
            seeds=[0, 1],
            batched=batch,
            progress=False,
            env_kwargs={"d": 6, "n_arms": 3, "horizon": 5},
        )
    assert caught and all(w.filename == __file__ for w in caught), [
        (w.filename, w.lineno) for w in caught
    ]
    assert all(str(w.message).startswith("SOFUL(sketch_size=50) at d=6") for w in caught)


# -- a sketch far worse than OFUL: its discarded mass against lam -------------------------------


def _low_rank_stream(seed=0, d=40, rank=10, tail=0.05, n_arms=20, horizon=300):
    """Unit arms in a rank-10 subspace plus a ``tail`` of N(0, tail^2) in every coordinate; theta*
    in the subspace (with tail = 0.05, d = 40, T = 1500: SOFUL(sketch_size=15) 344 against OFUL's
    2.4 at lam = 0.01)."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, rank)))[0]
    theta = basis @ rng.normal(size=rank)
    theta /= np.linalg.norm(theta)
    for _ in range(horizon):
        z = rng.normal(size=(n_arms, rank))
        z /= np.linalg.norm(z, axis=1, keepdims=True)
        arms = z @ basis.T + tail * rng.normal(size=(n_arms, d))
        yield arms, theta, rng


def _play_stream(agent, **kw):
    total, mass_before = 0.0, []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for arms, theta, rng in _low_rank_stream(**kw):
            mass_before.append(getattr(agent.estimator, "total_shrinkage", 0.0))
            a = agent.act(arms)
            means = arms @ theta
            agent.update(arms, a, float(means[a] + 0.01 * rng.normal()))
            total += means.max() - means[a]
    return total, [w for w in caught if w.category is DiscardedMassWarning]


def test_soful_warns_once_when_its_discarded_mass_passes_lam_naming_the_alternatives():
    agent = SOFUL(lam=0.01, beta=0.1, sketch_size=15)
    regret, said = _play_stream(agent, horizon=1500)
    assert len(said) == 1 and said[0].filename == __file__
    message = str(said[0].message)
    assert message.startswith("SOFUL(sketch_size=15, lam=0.01): Frequent Directions discarded more")
    assert "CBSCFD" in message and "a larger sketch_size" in message and "DBSLinUCB" in message
    oful, _ = _play_stream(OFUL(lam=0.01, beta=0.1), horizon=1500)
    assert regret > 10 * oful  # what the warning is about: FD's limit on this stream


def test_the_discarded_mass_warning_fires_at_the_first_round_past_lam():
    agent = SOFUL(lam=0.01, beta=0.1, sketch_size=15)
    masses, warned = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for arms, theta, _ in _low_rank_stream(horizon=200):
            agent.update(arms, agent.act(arms), float(arms[0] @ theta))
            masses.append(agent.estimator.total_shrinkage)
            warned.append(sum(w.category is DiscardedMassWarning for w in caught))
    first = int(np.argmax(np.array(masses) > 0.01))
    assert masses[first] > 0.01 and first > 0  # (the buffer fills before the first shrink)
    assert warned[first - 1] == 0 and warned[first] == 1 and warned[-1] == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: CBSCFD(lam=0.01, beta=0.1, sketch_size=15),
        lambda: DBSLinUCB(lam=0.01, beta=0.1, l0=15, eps=8.0),
    ],
    ids=["CBSCFD", "DBSLinUCB"],
)
def test_the_agents_the_warning_recommends_do_not_warn(make):
    _, said = _play_stream(make(), horizon=300)
    assert said == []


@pytest.mark.filterwarnings("ignore:.*more than OFUL's d x d inverse")  # (l=15 at d=40)
def test_a_sketch_that_discards_no_mass_does_not_warn_single_or_batched():
    _, said = _play_stream(SOFUL(lam=0.01, beta=0.1, sketch_size=15), tail=0.0, horizon=300)
    assert said == []  # rank 10 < 15: FD is exact
    agent = batched(SOFUL(lam=0.01, beta=0.1, sketch_size=15), 2)
    stream = _low_rank_stream(horizon=200)
    # the words of the single agent's warning (a sweep merges the warnings of its runs by them)
    with pytest.warns(DiscardedMassWarning, match=r"^SOFUL\(sketch_size=15, lam=0.01\): "):
        for arms, _, _ in stream:
            both = np.stack([arms, arms])
            agent.update(both, agent.act(both), np.array([0.1, 0.1]))


# -- the sketch-size warning and the static allocations' messages -------------------------------


@pytest.mark.parametrize("d", range(1, 13))
def test_the_sketch_size_warning_never_suggests_a_size_that_keeps_no_direction(d):
    for l in range(2, d + 3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            SOFUL(sketch_size=l, d=d)
        for w in caught:
            message = str(w.message)
            if "use sketch_size <=" in message:
                suggested = int(message.split("use sketch_size <= ")[1].split()[0])
                assert suggested >= 2  # FD keeps sketch_size - 1 directions
            else:
                assert message.endswith(": use OFUL")
