"""The exact estimator's update path (agents/sketches/exact.py): what one Sherman-Morrison update
loses, and the PrecisionWarning that says so where OFUL's answer is lost (OFUL against its
high-precision twin: benchmarks/oful_precision.py)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym  # noqa: F401  (registers the envs)
from agents import OFUL, SOFUL
from agents.batched import batched
from agents.sketches import PrecisionWarning
from agents.sketches.exact import UPDATE_TOLERANCE, ExactCovariance

DTYPES = [torch.float64, torch.float32]


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(1, 8),
    log_reg=st.floats(-15.0, 0.0),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**31 - 1),
)
def test_one_update_loses_at_most_a_few_eps_times_one_plus_the_width(d, log_reg, dtype, seed):
    """The bound the warning's threshold is derived from: after one update from ``I / reg`` by a
    unit ``x`` (``q = 1 / reg``), the kept width of ``x`` is ``q / (1 + q)`` within a few
    ``eps (1 + q)``, relative."""
    reg = 10.0**log_reg
    x = np.random.default_rng(seed).standard_normal(d)
    x /= np.linalg.norm(x)
    est = ExactCovariance(d, reg=reg, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        est.update(x)
    q = float(np.float64(x @ x) / reg)
    kept = float(x @ np.asarray(est.A_inv[0], dtype=np.float64) @ x)
    eps = torch.finfo(dtype).eps
    assert abs(kept - q / (1.0 + q)) <= 4.0 * eps * (1.0 + q) * (q / (1.0 + q))
    assert est.largest_width[0] == pytest.approx(q, rel=8 * eps)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("side", [0.9, 1.1])
def test_the_warning_fires_exactly_past_the_tolerance_of_one_update(dtype, side):
    """The first row's width is ``||x||^2 / reg``: a ridge 10% below the one whose update error
    ``eps (1 + q)`` equals the tolerance warns, 10% above does not."""
    eps = torch.finfo(dtype).eps
    reg = eps / (UPDATE_TOLERANCE - eps) * side  # eps (1 + 1 / reg) = tolerance at side = 1
    est = ExactCovariance(3, reg=reg, dtype=dtype)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.update(np.array([1.0, 0.0, 0.0]))
    said = [w for w in caught if issubclass(w.category, PrecisionWarning)]
    assert len(said) == (1 if side < 1 else 0)
    if said:
        assert "Sherman-Morrison" in str(said[0].message)
        assert said[0].filename == __file__


def _play(agent, scale: float, seed: int, horizon: int):
    """Synthetic d=8, K=20 with the arms times ``scale``: final regret and the warnings."""
    env = gym.make("LinBandit-Synthetic-v0", d=8, n_arms=20, horizon=horizon)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed=seed)
    total = 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(horizon):
            arms = np.asarray(obs, dtype=np.float64) * scale
            a = agent.act(arms)
            obs, reward, _, _, info = env.step(a)
            agent.update(arms, a, reward)
            total += info["regret"]
    return total, [w for w in caught if issubclass(w.category, PrecisionWarning)]


#: the cells where float64 OFUL ended at regret ~50-100 against the exact answer's 4.4 (the issue
#: reproducers: one case, lam / scale^2 = 1e-14), and float32 OFUL's analogue
LOST = [
    (1e-14, 1.0, torch.float64),
    (1e-8, 1e3, torch.float64),
    (1e-6, 1e4, torch.float64),
    (1e-5, 1.0, torch.float32),
]
#: the same cells with a ridge 100 times larger: the answer is kept
KEPT = [
    (1e-12, 1.0, torch.float64),
    (1e-6, 1e3, torch.float64),
    (1e-4, 1e4, torch.float64),
    (1e-3, 1.0, torch.float32),
]


@pytest.mark.parametrize("lam, scale, dtype", LOST)
def test_oful_warns_where_its_updates_lose_the_answer(lam, scale, dtype):
    _, said = _play(OFUL(lam=lam, beta=0.1, dtype=dtype), scale, seed=0, horizon=3)
    assert len(said) == 1  # at the first update, once
    message = str(said[0].message)
    assert message.startswith("OFUL: an update of A^-1") and "sketch_size > d" in message
    assert ("dtype=torch.float64" in message) == (dtype != torch.float64)


def test_a_batched_oful_warns_as_the_single_one():
    agent = batched(OFUL(lam=1e-14, beta=0.1), 2)
    rng = np.random.default_rng(0)
    arms = rng.standard_normal((2, 20, 8))
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    with pytest.warns(PrecisionWarning, match="Sherman-Morrison"):
        agent.update(arms, agent.act(arms), np.zeros(2))


@pytest.mark.slow
@pytest.mark.parametrize("lam, scale, dtype", KEPT)
def test_where_oful_does_not_warn_it_plays_as_the_exact_form(lam, scale, dtype):
    """Without the warning OFUL's regret is the one SOFUL with sketch_size > d reaches (the same
    A_hat in the basis form, which does not cancel: within rounding of OFUL in exact arithmetic)."""
    for seed in (0, 1):
        ours, said = _play(OFUL(lam=lam, beta=0.1, dtype=dtype), scale, seed, horizon=600)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # d = 8: the sketch holds more than OFUL (warned)
            sketch = SOFUL(lam=lam, beta=0.1, sketch_size=10)
        exact, _ = _play(sketch, scale, seed, horizon=600)
        assert said == []
        assert ours == pytest.approx(exact, rel=0.2)
