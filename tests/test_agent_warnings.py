"""The agents' warnings: at the user's line (through the loop and a batch too), once, naming the
user's class, with the threshold the condition uses (``SketchSizeWarning``, ``DesignWarning``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from agents import CBSCFD, SOFUL
from agents._warnings import DesignWarning, SketchSizeWarning
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
