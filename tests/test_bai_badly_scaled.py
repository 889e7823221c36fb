"""Best-arm identification and phased elimination on badly scaled arm sets.

Arms whose norms span 1e-6..1e6 used to hang XYAdaptive's first ``act`` and keep GAllocation
and XYStatic from ever stopping: their least squares and designs were computed in
coordinates where the design matrices had condition numbers ~1e24. The problem itself is
invariant under any invertible linear map of the arms (rewards, noise, every width
``||x - x'||_{A^-1}`` and OLS prediction are unchanged), so the agents now work in whitened
span coordinates (:mod:`agents.design._common`) and must behave as on the unscaled arms.
Every episode here is bounded in pulls, and each test in wall time (``deadline``), so a
regression fails instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import signal
import warnings

import numpy as np
import pytest
import torch

from agents import GAllocation, PhasedElimination, XYAdaptive, XYStatic
from agents.design import g_optimal_design, round_design, solve_xy_design, xy_value
from agents.design.rounding import MAX_PULLS
from agents.xy_adaptive import MAX_PHASE_PULLS

BAI_AGENTS = [GAllocation, XYStatic, XYAdaptive]
SEEDS = range(8)  # all with a gap >= 0.5 between the two best means (asserted below)


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail with TimeoutError if the block runs longer than ``seconds`` (SIGALRM, main thread)."""

    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s (a hang)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def badly_scaled(k=6, d=3, seed=0, dtype=np.float64):
    """``k`` arms in random directions with norms 1e-6, ..., 1e6, and their means under a unit
    theta*."""
    rng = np.random.default_rng(seed)
    dirs = rng.standard_normal((k, d))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    arms = (dirs * np.logspace(-6, 6, k)[rng.permutation(k)][:, None]).astype(dtype)
    theta = rng.standard_normal(d)
    return arms, arms.astype(np.float64) @ (theta / np.linalg.norm(theta))


def episode(agent, arms, means, seed=0, max_pulls=2000):
    """Play until the agent stops (returns the recommended arm and the pulls) or ``max_pulls``."""
    rng = np.random.default_rng(seed)
    agent.reset(seed=seed)
    k = len(arms)
    for n in range(max_pulls):
        a = agent.act(arms)
        if a >= k:
            return a - k, n
        agent.update(arms, a, float(means[a] + rng.standard_normal()))
    return None, max_pulls


@pytest.mark.parametrize("cls", BAI_AGENTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_norms_spanning_12_orders_stop_fast_and_right(cls, dtype):
    with deadline(60):
        for seed in SEEDS:
            arms, means = badly_scaled(k=6 + seed % 4, d=3 + seed % 2, seed=seed, dtype=dtype)
            # the instances are easy (gap to the runner-up >= 0.5 noise_std): a handful of pulls
            top2 = np.sort(means)[-2:]
            assert top2[1] - top2[0] >= 0.5
            best, pulls = episode(cls(noise_std=1.0), arms, means, seed=seed, max_pulls=500)
            assert best == int(np.argmax(means)), (seed, best, pulls)


@pytest.mark.parametrize("cls", BAI_AGENTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("seed", range(6))
def test_a_linear_change_of_arm_coordinates_changes_nothing(cls, seed):
    # X and X M (M invertible, scales 1e-6..1e6) with theta and M^-1 theta: the same rewards,
    # the same problem. The agent must stop with the same arm after as many pulls (exactly,
    # up to round-off in the tracking ties: within 10%).
    rng = np.random.default_rng(seed)
    k, d = int(rng.integers(3, 8)), int(rng.integers(2, 5))
    x = rng.standard_normal((k, d))
    means = x @ (3.0 * rng.standard_normal(d))
    scaled = x @ np.diag(10.0 ** rng.uniform(-6, 6, d))
    with deadline(60):
        plain = episode(cls(noise_std=1.0), x, means, seed=seed)
        other = episode(cls(noise_std=1.0), scaled, means, seed=seed)
    assert plain[0] == other[0]
    assert abs(plain[1] - other[1]) <= 0.1 * plain[1] + 1


def column_scaled(k, d, seed):
    """Gaussian arms and the same arms with coordinates scaled by 1e-6..1e6 (X and X M)."""
    x = np.random.default_rng(seed).standard_normal((k, d))
    return x, x @ np.diag(np.logspace(-6, 6, d))


def test_phased_elimination_plays_badly_scaled_arms_as_unscaled_ones():
    # X M used to fail in the first act(): "init: the initial design is singular on span(arms)"
    x, scaled = column_scaled(8, 4, seed=1)
    means = x @ np.random.default_rng(1).standard_normal(4)
    runs = []
    for arms in (x, scaled):
        agent = PhasedElimination(noise_std=1.0)
        rng = np.random.default_rng(0)
        actions = []
        with deadline(60):
            for _ in range(3000):
                actions.append(agent.act(arms))
                agent.update(arms, actions[-1], float(means[actions[-1]] + rng.standard_normal()))
        runs.append((actions, agent.active.tolist(), agent.phase))
    assert runs[0][1:] == runs[1][1:] and int(np.argmax(means)) in runs[0][1]
    assert runs[0][2] >= 2
    agree = np.mean(np.array(runs[0][0]) == np.array(runs[1][0]))
    assert agree >= 0.95  # the same plan, up to round-off in the interleaving


def test_designs_of_badly_scaled_arms_are_those_of_the_unscaled_arms():
    # G- and XY-optimality are invariant under X -> X M: the certified values must agree
    x, scaled = column_scaled(10, 5, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "did not converge" either
        w_plain, w_scaled = g_optimal_design(x, eps=1e-3), g_optimal_design(scaled, eps=1e-3)
        xy_plain, xy_scaled = solve_xy_design(x, eps=1e-2), solve_xy_design(scaled, eps=1e-2)
    z = np.linalg.svd(x, full_matrices=False)[0]  # G-values evaluated on the unscaled arms
    for w in (w_plain, w_scaled):
        assert (
            np.max(np.einsum("kd,de,ke->k", z, np.linalg.inv((z * w[:, None]).T @ z), z))
            <= 5 * (1 + 1e-3) + 1e-9
        )
    assert abs(xy_plain.value - xy_scaled.value) <= 0.02 * xy_plain.value
    for res in (xy_plain, xy_scaled):
        assert (
            res.converged
            and res.bound <= xy_plain.value * 1.02
            and res.bound <= xy_scaled.value * 1.02
        )


# -- every internal loop is bounded ----------------------------------------------------------
def test_round_design_refuses_budgets_past_float64_counts():
    with deadline(10):  # used to loop for ever chasing round-off with n ~ 2**1000
        with pytest.raises(ValueError, match=r"2\*\*53"):
            round_design([0.5, 0.5], 2**60)
        assert round_design([0.25, 0.75], MAX_PULLS).sum() == MAX_PULLS


def test_xy_adaptive_phase_length_is_bounded_even_for_a_tiny_level():
    x = np.random.default_rng(0).standard_normal((5, 3))
    agent = XYAdaptive(noise_std=1.0)
    agent.act(x)
    w = agent._weights
    rho = xy_value(x, w)
    with deadline(20):
        for tiny in (1e-300, 5e-324):  # would need ~1e300 pulls (or rho / level overflows): capped
            n, plan = agent._phase_length(w, tiny, rho)
            assert n == MAX_PHASE_PULLS and int(plan.sum()) == n
        n, plan = agent._phase_length(w, 0.5, rho)  # an ordinary level: the smallest n reaching it
    counts = plan.astype(float)
    z = torch.as_tensor(x)
    a = (z * torch.as_tensor(counts)[:, None]).T @ z
    pairs = torch.stack([z[i] - z[j] for i in range(5) for j in range(5) if i < j])
    assert float(torch.einsum("md,de,me->m", pairs, torch.linalg.pinv(a), pairs).max()) <= 0.5 * (
        1 + 1e-9
    )
    smaller = round_design(w, n - 1).astype(float)
    a_smaller = (z * torch.as_tensor(smaller)[:, None]).T @ z
    assert (
        n - 1 < int((w > 0).sum())
        or float(torch.einsum("md,de,me->m", pairs, torch.linalg.pinv(a_smaller), pairs).max())
        > 0.5
    )
