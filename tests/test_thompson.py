"""Thompson sampling on every estimator (:mod:`agents.thompson`; LinTS, SLinTS, DBSLinTS).

The factors each estimator draws with (``draw(z) = F z``, ``F F^T = A_hat^-1``):

* exact (LinTS, and Dyadic Block Sketching once exact): a square-root factor ``S`` started as the
  lower Cholesky factor of ``A^-1`` at the first draw (``I / sqrt(lam)`` at round 0) and updated by
  Potter's rule with every row since;
* sketches (FD, RFD, DBS blocks): ``(z - V^T V z) / sqrt(c) + V^T L V z``, ``H = L L^T``.

Checked: LinTS against an independent numpy sampler with the same normals and the same factor
convention; the sketched agents' posterior against LinTS's where nothing was discarded; batched
members against single agents; the covariance of many draws against ``A_hat^-1`` after the factor
has followed a stream (a wrong factor fails the same bound); the agent contract.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sketch_streams import BACKENDS, on_backend

import linbandit_gym  # (registers the envs)
from agents import AGENTS, DBSLinTS, LinTS, SLinTS, check_agent
from agents.batched import batched_members
from agents.thompson import theory_scale
from linbandit_gym.experiments import load_records, sweep

pytestmark = pytest.mark.filterwarnings("ignore::agents.sketches.PrecisionWarning")


def _potter(S: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Potter's square-root update, written here from its definition: ``S S^T`` becomes
    ``(S S^T)^-1 + x x^T``'s inverse."""
    u = S.T @ x
    s = float(u @ u)
    c = (1.0 - 1.0 / np.sqrt(1.0 + s)) / s if s > 0 else 0.5
    return S - c * np.outer(S @ u, u)


def _numpy_lints(stream, lam: float, v: float, seed: int) -> list[int]:
    """Linear Thompson sampling in plain numpy: ``theta_hat`` by a dense solve, the factor ``S``
    from ``I / sqrt(lam)`` by Potter's update, ``z`` from ``default_rng(seed)``."""
    d = stream[0][0].shape[1]
    rng = np.random.default_rng(seed)
    A, b, S = lam * np.eye(d), np.zeros(d), np.eye(d) / np.sqrt(lam)
    actions = []
    for arms, rewards in stream:
        theta = np.linalg.solve(A, b) + v * S @ rng.standard_normal(d)
        a = int(np.argmax(arms @ theta))
        x = arms[a]
        A += np.outer(x, x)
        b += rewards[a] * x
        S = _potter(S, x)
        actions.append(a)
    return actions


def _stream(n: int, K: int, d: int, seed: int, rank: int | None = None):
    """``n`` rounds of ``K`` Gaussian arms (in a ``rank``-dimensional subspace when given) with
    their rewards ``x . theta + noise``."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(d) / np.sqrt(d)
    basis = np.linalg.qr(rng.standard_normal((d, rank or d)))[0].T
    out = []
    for _ in range(n):
        arms = rng.standard_normal((K, rank or d)) @ basis
        out.append((arms, arms @ theta + 0.1 * rng.standard_normal(K)))
    return out


def _play(agent, stream) -> list[int]:
    actions = []
    for arms, rewards in stream:
        a = agent.act(arms)
        agent.update(arms, a, float(rewards[a]))
        actions.append(a)
    return actions


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    d=st.integers(1, 9),
    lam=st.sampled_from([0.1, 1.0, 5.0]),
    v=st.sampled_from([0.0, 0.05, 0.5, 3.0]),
)
def test_lints_chooses_as_a_plain_numpy_sampler(seed, d, lam, v):
    """LinTS plays the very arms of the numpy sampler fed the same normals, every round."""
    stream = _stream(120, 6, d, seed)
    assert _play(LinTS(lam=lam, v=v, seed=seed), stream) == _numpy_lints(stream, lam, v, seed)


def test_lints_keeps_its_factor_by_potter_from_the_first_draw():
    """After a stream the kept factor is the numpy Potter factor (not a Cholesky factor of
    ``A^-1``: a Cholesky test would fail), and it still factors ``A^-1``."""
    d, lam = 6, 0.5
    stream = _stream(50, 4, d, 3)
    agent = LinTS(lam=lam, v=0.3, seed=3)
    actions = _play(agent, stream)
    S, A = np.eye(d) / np.sqrt(lam), lam * np.eye(d)
    for (arms, _), a in zip(stream, actions):
        S, A = _potter(S, arms[a]), A + np.outer(arms[a], arms[a])
    kept = agent.estimator.factor[0]
    np.testing.assert_allclose(kept, S, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(kept @ kept.T, np.linalg.inv(A), rtol=1e-9, atol=1e-12)
    assert not np.allclose(np.triu(kept, 1), 0.0)  # not triangular: not a Cholesky factor


def _factor(agent) -> np.ndarray:
    """The agent's ``F`` (``d x d``) read through the public draw: ``draw(I) = I F^T``."""
    est = agent.estimator
    return est.draw(torch.eye(est.d, dtype=torch.float64)).double().numpy().T


@pytest.mark.parametrize(
    "sketched",
    [
        lambda d: SLinTS(lam=0.7, v=0.2, sketch_size=d + 1),
        lambda d: SLinTS(lam=0.7, v=0.2, sketch_size=d + 1, sketch="rfd"),
        lambda d: DBSLinTS(lam=0.7, v=0.2, l0=4, eps=1e6, memory_cap=False, time_cap=False),
        lambda d: DBSLinTS(
            lam=0.7, v=0.2, l0=4, eps=1e6, sketch="rfd", memory_cap=False, time_cap=False
        ),
    ],
    ids=["SLinTS-FD", "SLinTS-RFD", "DBSLinTS-FD", "DBSLinTS-RFD"],
)
def test_sketched_posteriors_are_lints_before_any_shrink(sketched):
    """Fed the same rows (of rank 3 < l0 for DBS, any rank for l > d), nothing is discarded: the
    same ``theta_hat`` and draw covariance ``F F^T`` as LinTS's (another factor: the basis state's,
    not Potter's, so the factors themselves differ)."""
    d = 16
    stream = _stream(60, 5, d, 11, rank=3)
    exact, sketch = LinTS(lam=0.7, v=0.2, seed=1), sketched(d)
    for agent in (exact, sketch):
        agent.act(stream[0][0])  # LinTS starts its factor
    for t, (arms, rewards) in enumerate(stream):
        a = t % len(arms)
        for agent in (exact, sketch):
            agent.update(arms, a, float(rewards[a]))
    assert float(np.max(sketch.estimator.total_shrinkage)) == 0.0
    assert not getattr(sketch, "exact_mode", False)  # DBS still sketches (block cap 2 at d = 16)
    torch.testing.assert_close(sketch.theta_hat, exact.theta_hat, rtol=1e-9, atol=1e-11)
    F, S = _factor(sketch), _factor(exact)
    np.testing.assert_allclose(F @ F.T, S @ S.T, rtol=1e-9, atol=1e-11)
    assert not np.allclose(F, S, atol=1e-6)


@pytest.mark.parametrize(
    "cls,per_member",
    [
        (LinTS, [{"lam": x} for x in (0.5, 1.0, 2.0)]),
        (SLinTS, [{"sketch_size": x} for x in (2, 3, 8)]),
        (SLinTS, [{"sketch_size": x, "sketch": "rfd"} for x in (2, 3, 8)]),
        (DBSLinTS, [{"l0": 1, "eps": x} for x in (0.5, 20.0, 1000.0)]),
        (
            DBSLinTS,
            [
                {"l0": 1, "eps": x, "sketch": "rfd", "v": y}
                for x, y in ((0.5, "theory"), (20.0, 0.3), (1000.0, 0.1))
            ],
        ),
    ],
    ids=["LinTS", "SLinTS-FD", "SLinTS-RFD", "DBSLinTS-FD", "DBSLinTS-RFD"],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_members_choose_as_their_single_agents(cls, per_member, backend):
    """Member i of a batch (on either backend: numpy, the CPU's; torch, a GPU's) draws from its own
    generator and chooses as the single agent (numpy) with its arguments and seed, every round;
    DBS members part (some exact)."""
    d, B, K, T = 6, 3, 5, 80
    rng = np.random.default_rng(1)
    # d given: the singles' estimators are built here, on numpy
    singles = [cls(**{"v": 0.3, **kw}, d=d, seed=10 + i) for i, kw in enumerate(per_member)]
    X = rng.standard_normal((T, B, K, d)) * np.linspace(2.0, 0.2, d)
    with on_backend(backend):  # (the batch's estimator is built at its first round)
        batch = batched_members(singles)
        for t in range(T):
            acts = np.asarray(batch.act(X[t]))
            for i, single in enumerate(singles):
                a = single.act(X[t, i])
                assert a == acts[i], (t, i)
                single.update(X[t, i], a, float(X[t, i, a, 0]))
            batch.update(X[t], acts, X[t, np.arange(B), acts, 0])
    assert batch.estimator.xp.is_numpy == (backend == "numpy")
    assert all(single.estimator.xp.is_numpy for single in singles)
    if cls is DBSLinTS:
        assert 0 < int(np.sum(batch.estimator.exact)) < B


def _whitened_gap(draws: np.ndarray, A_inv: np.ndarray) -> float:
    """``||A^{1/2} (Z^T Z / n) A^{1/2} - I||_2`` for draws ``Z`` ``(n, d)``: about ``2 sqrt(d / n)``
    for draws of covariance ``A^-1`` (Bai-Yin), of order 1 for another covariance."""
    w, U = np.linalg.eigh(np.linalg.inv(A_inv))
    root = (U * np.sqrt(w)) @ U.T
    emp = draws.T @ draws / draws.shape[0]
    return float(np.abs(np.linalg.eigvalsh(root @ emp @ root - np.eye(A_inv.shape[0]))).max())


AGENT_KINDS = {
    "exact": lambda dt: LinTS(lam=0.7, v=1.0, dtype=dt, seed=0),
    "fd": lambda dt: SLinTS(lam=0.7, v=1.0, sketch_size=3, dtype=dt, seed=0),
    "rfd": lambda dt: SLinTS(lam=0.7, v=1.0, sketch_size=3, sketch="rfd", dtype=dt, seed=0),
    "dbs-fd": lambda dt: DBSLinTS(
        lam=0.7, v=1.0, l0=1, eps=1000.0, dtype=dt, seed=0, memory_cap=False, time_cap=False
    ),
    "dbs-exact": lambda dt: DBSLinTS(
        lam=0.7,
        v=1.0,
        l0=1,
        eps=0.5,
        sketch="rfd",
        dtype=dt,
        seed=0,
        memory_cap=False,
        time_cap=False,
    ),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("kind", list(AGENT_KINDS))
def test_draws_after_play_have_covariance_a_hat_inverse(kind, dtype):
    """After 60 rounds of play (the exact factor followed every row by Potter's update; a sketch
    that discarded mass; DBS sketched or handed over to exact), 20,000 draws ``F z`` have
    covariance ``A_hat^-1`` within 0.1 in the whitened spectral norm (about ``2 sqrt(d / n) =
    0.035`` expected). The same bound fails for ``A_hat^-1 z`` (``A^-1`` in place of a square
    root), for draws scaled by 1.2, and, for a sketch, for the draws without their residual part
    ``(I - V^T V) z / sqrt(c)``."""
    d, n = 6, 20_000
    rng = np.random.default_rng(3)
    agent = AGENT_KINDS[kind](dtype)
    scale = np.array([3.0, 2.0, 1.0, 0.5, 0.2, 0.1])
    for _ in range(60):
        arms = rng.standard_normal((4, d)) * scale
        a = agent.act(arms)
        agent.update(arms, a, float(rng.standard_normal()))
    est = agent.estimator
    if kind.startswith("dbs"):
        assert bool(est.exact_mode) == (kind == "dbs-exact")
    if kind in ("fd", "rfd", "dbs-fd"):
        assert float(est.total_shrinkage) > 0.0  # A_hat is not lam I + X^T X
    cov = est.covariance().double().numpy()
    A_inv = np.linalg.inv(cov + 0.7 * np.eye(d))
    z = rng.standard_normal((n, d))
    draws = est.draw(torch.as_tensor(z, dtype=dtype)).double().numpy()
    assert _whitened_gap(draws, A_inv) < 0.1
    assert _whitened_gap(z @ A_inv, A_inv) > 0.3
    assert _whitened_gap(1.2 * draws, A_inv) > 0.3
    if kind in ("fd", "rfd", "dbs-fd"):
        V = est.core.xp.host(est.core.V[0, : int(est.core.R[0])]).astype(np.float64)
        assert V.shape[0] < d  # the sketch leaves a residual space
        assert _whitened_gap(draws @ V.T @ V, A_inv) > 0.3


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 2e-3)])
def test_potter_factor_does_not_drift_over_a_long_run(dtype, tol):
    """3,000 rows of very different scales: ``S S^T`` stays ``A^-1`` to ``tol`` relative (in the
    spectral norm), the inverse formed in float64 from the rows."""
    d = 12
    rng = np.random.default_rng(7)
    agent = LinTS(lam=1.0, v=0.5, dtype=dtype, seed=7)
    A = np.eye(d)
    for t in range(3000):
        arms = rng.standard_normal((3, d)) * np.logspace(0, -2, d) * (1 + 10 * (t % 2))
        a = agent.act(arms)
        x = torch.as_tensor(arms[a], dtype=dtype).double().numpy()
        A += np.outer(x, x)
        agent.update(arms, a, 0.0)
    S = np.asarray(agent.estimator.factor[0], dtype=np.float64)
    A_inv = np.linalg.inv(A)
    assert np.linalg.norm(S @ S.T - A_inv, 2) <= tol * np.linalg.norm(A_inv, 2)


@pytest.mark.parametrize("name", ["LinTS", "SLinTS", "DBSLinTS"])
def test_agent_contract(name):
    """The conformance check (``check_agent``): the same seed replays the same actions."""
    env = gym.make("LinBandit-Synthetic-v0", d=8, n_arms=5)
    kw = {"sketch_size": 4} if name == "SLinTS" else {"l0": 2} if name == "DBSLinTS" else {}
    check_agent(AGENTS[name](v=0.5, seed=0, **kw), env, n_steps=30)


def test_seeds_replay_and_differ():
    """``reset(seed)`` replays the draws; another seed draws otherwise; ``v = 0`` is greedy."""
    stream = _stream(40, 8, 5, 2)
    agent = LinTS(v=1.0, seed=4)
    first = _play(agent, stream)
    agent.reset(seed=4)
    assert _play(agent, stream) == first
    agent.reset(seed=5)
    assert _play(agent, stream) != first
    greedy = [LinTS(v=0.0, seed=s) for s in (0, 1)]
    assert _play(greedy[0], stream) == _play(greedy[1], stream)


def test_theory_scale_follows_the_round():
    """``v="theory"``: ``R sqrt(9 d ln(t / delta))`` of the current round ``t`` (1 before any
    update)."""
    agent = LinTS(v="theory", noise_std=0.5, delta=0.1, seed=0)
    arms = np.eye(4)
    for t in range(1, 5):
        agent.update(arms, agent.act(arms), 1.0)
        assert agent.posterior_scale() == pytest.approx(0.5 * np.sqrt(36 * np.log((t + 1) / 0.1)))
    assert theory_scale(0.5, 4, 5, 0.1) == agent.posterior_scale()


@pytest.mark.parametrize("bad", [{"v": -1.0}, {"v": "thoery"}, {"v": float("nan")}, {"v": True}])
def test_bad_scales_are_refused_naming_v(bad):
    with pytest.raises(ValueError, match="v"):
        LinTS(**bad)


@pytest.mark.parametrize(
    "cls,kw",
    [(LinTS, {}), (SLinTS, {"sketch_size": 5}), (SLinTS, {"sketch_size": 5, "sketch": "rfd"})],
)
def test_memory_estimate_is_what_the_agent_holds(cls, kw):
    """The estimate of a whole allocated state (the exact factor included) is what
    ``memory_bytes()`` reports after the first round."""
    d = 10
    agent = cls(v=0.1, seed=0, **kw)
    arms = np.eye(d)
    agent.update(arms, agent.act(arms), 1.0)
    assert cls.estimate_state_bytes(d, d, **kw) == agent.memory_bytes()


def test_float32_agents_play():
    """float32 working state (the GPU stand-in): the three agents play a stream and hold finite
    ``theta_hat``; LinTS keeps its factor in float32."""
    stream = _stream(100, 6, 8, 9)
    for agent in (
        LinTS(v=0.2, dtype=torch.float32, seed=0),
        SLinTS(v=0.2, sketch_size=3, dtype=torch.float32, seed=0),
        DBSLinTS(v=0.2, l0=2, dtype=torch.float32, seed=0),
    ):
        _play(agent, stream)
        assert agent.theta_hat.dtype == torch.float32
        assert bool(torch.isfinite(agent.theta_hat).all())
    assert LinTS(v=0.2, dtype=torch.float32).dtype == torch.float32


@pytest.mark.parametrize("kind", list(AGENT_KINDS))
def test_sample_is_theta_hat_plus_the_scaled_draw(kind):
    """What the rule reads, ``sample_all(z, v)`` (a sketch fuses ``theta_hat`` and its draw in one
    pass over the basis), is ``theta_hat + v F z`` with the draw's own factor, to rounding."""
    d = 6
    rng = np.random.default_rng(8)
    agent = AGENT_KINDS[kind](torch.float64)
    for _ in range(40):
        arms = rng.standard_normal((4, d)) * np.array([3.0, 2.0, 1.0, 0.5, 0.2, 0.1])
        agent.update(arms, agent.act(arms), float(rng.standard_normal()))
    est = agent.estimator
    z = rng.standard_normal((1, 5, d))
    fused = np.asarray(est.sample_all(est.xp.asarray(z, est.cdtype), 0.7))[0]
    apart = est.theta().numpy() + 0.7 * est.draw(z[0]).numpy()
    np.testing.assert_allclose(fused, apart, rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")
def test_a_config_naming_the_thompson_agents_sweeps(tmp_path):
    """A sweep config naming LinTS (a grid over ``v``, batched as members), SLinTS-RFD and
    DBSLinTS with ``v="theory"`` runs, and its records equal direct runs of the same agents."""

    env = {"id": "LinBandit-Synthetic-v0", "args": {"d": 8, "n_arms": 5, "horizon": 30}}
    agents = [
        {"name": "LinTS", "args": {"lam": 1.0}, "grid": {"v": [0.05, 0.5]}, "label": "TS v={v}"},
        {"name": "SLinTS", "args": {"v": 0.1, "sketch_size": 3, "sketch": "rfd"}},
        {"name": "DBSLinTS", "args": {"v": "theory", "l0": 2}},
    ]
    config = {"name": "ts", "seeds": 2, "envs": [env], "agents": agents}
    result = sweep(config, tmp_path, log=None)
    assert result.ok and len(result.executed) == 8
    records = load_records(tmp_path)
    for label, agent in (("TS v=0.5", LinTS(lam=1.0, v=0.5)), ("SLinTS", None)):
        agent = agent or SLinTS(v=0.1, sketch_size=3, sketch="rfd")
        direct = linbandit_gym.run(
            "LinBandit-Synthetic-v0", agent, seeds=[1], env_kwargs=env["args"]
        )
        mine = records[(records["agent"] == label) & (records["seed"] == 1)]
        np.testing.assert_array_equal(mine["action"].to_numpy(), direct["action"].to_numpy())
