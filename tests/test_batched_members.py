"""Batched agents whose members differ in hyperparameters.

``OFUL/SOFUL/CBSCFD/DBSLinUCB(batch_size=B, lam=[...], beta=[...], ...)``: member i must make
exactly the choices of the single agent built with the i-th values on the same stream
(float64, CPU), report that agent's memory, sketch size and radius, and bad per-member values
must be refused naming the member.
"""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sketch_streams import BACKENDS, KINDS, make_stream, on_backend

import linbandit_gym  # noqa: F401  (registers the envs)
from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB
from agents.batched import batched, batched_members
from agents.dbslinucb import DBSLinUCBFD
from agents.sketches.dbs import DyadicBlockSketch
from agents.sketches.exact import ExactCovariance
from agents.sketches.fd import FrequentDirections
from agents.sketches.rfd import RobustFrequentDirections

# small d with sketches: the "sketch holds more than OFUL's inverse" warning is expected here
pytestmark = pytest.mark.filterwarnings("ignore:.*holds .* bytes per agent")

ENV = "LinBandit-HeavyTail-v0"  # arms of varying norms: sketches shrink, DBS blocks diverge
ENV_KW = dict(d=8, n_arms=8, horizon=40, alpha=0.5, noise_std=0.1)
LAMS = (0.05, 1.0, 20.0)
BETAS = (0.0, 0.1, 1.0)
SEEDS = (0, 7)

# room for several sketched blocks before DBS switches to exact updates
DBS_ENV = dict(ENV_KW, d=24)

# family -> (class, arguments shared by the grid, per-member grid axes beyond lam x beta x seed,
# env);
# sketch sizes 2..5 at d = 8 keep SOFUL/CBSCFD sketched (FD is exact only for l > d)
FAMILIES = {
    "OFUL": (OFUL, {}, {}, ENV_KW),
    "SOFUL": (SOFUL, {}, dict(sketch_size=(2, 5)), ENV_KW),
    "SOFUL-textbook": (SOFUL, dict(fast=False), dict(sketch_size=(2, 3)), ENV_KW),
    "CBSCFD": (CBSCFD, {}, dict(sketch_size=(2, 5)), ENV_KW),
    # l0 = 8 at d = 24: that member's first block would hold more than OFUL's inverse, so it is
    # exact from row 1
    "DBSLinUCB-FD": (DBSLinUCB, dict(sentinel=False), dict(l0=(1, 2), eps=(2.0, 8.0)), DBS_ENV),
    "DBSLinUCB-RFD": (
        DBSLinUCB,
        dict(sketch="rfd", fast=False),
        dict(l0=(1, 8), eps=(4.0, 8.0)),
        DBS_ENV,
    ),
}


def assert_same_blocks(blocks, expected, rel: float = 1e-9) -> None:
    """The same DBS blocks (index, sizes, rows, state exactly; masses and shrinkages up to
    rounding)."""
    assert len(blocks) == len(expected)
    for got, want in zip(blocks, expected):
        assert (got.index, got.sketch_size, got.n_rows, got.rows_held, got.active) == (
            want.index,
            want.sketch_size,
            want.n_rows,
            want.rows_held,
            want.active,
        )
        for name in ("block_size", "shrinkage", "alpha"):
            assert getattr(got, name) == pytest.approx(getattr(want, name), rel=rel, abs=1e-12), (
                name
            )


def play(env, agent, seed, rounds: int) -> np.ndarray:
    """The agent's actions over ``rounds`` rounds of ``env`` (both reset with ``seed``):
    ``(rounds,)`` for a single agent, ``(B, rounds)`` for a batched one on a vector env."""
    agent.reset(seed=seed)
    obs, _ = env.reset(seed=seed)
    actions = []
    for _ in range(rounds):
        a = agent.act(obs)
        nxt, r, _, _, _ = env.step(a)
        agent.update(obs, a, r)
        actions.append(a)
        obs = nxt
    return np.array(actions).T


def play_single(agent, seed: int, rounds: int, env_kw=ENV_KW) -> np.ndarray:
    return play(gym.make(ENV, **env_kw), agent, seed, rounds)


def play_batch(agent, seeds, rounds: int, env_kw=ENV_KW) -> np.ndarray:
    return play(gym.make_vec(ENV, num_envs=len(seeds), **env_kw), agent, list(seeds), rounds)


GRID_CASES = [(family, torch.float64) for family in FAMILIES] + [
    ("SOFUL", torch.float32),
    ("DBSLinUCB-FD", torch.float32),
]


@pytest.mark.parametrize(
    "family,dtype", GRID_CASES, ids=[f"{f}-{str(t)[6:]}" for f, t in GRID_CASES]
)
def test_every_member_of_a_hyperparameter_grid_chooses_as_its_single_twin(family, dtype):
    """ONE batched agent holds the whole lam x beta (x sketch size, or x l0 x eps) x seed grid;
    each member replays its twin, and reports the twin's memory, sketch size and radius
    (float64; float32 too on two families, as the batched path promises)."""
    cls, shared, axes, env_kw = FAMILIES[family]
    shared = dict(shared, dtype=dtype)
    names = ["lam", "beta", *axes, "seed"]
    grid = [
        dict(zip(names, values)) for values in itertools.product(LAMS, BETAS, *axes.values(), SEEDS)
    ]
    rounds = env_kw["horizon"]
    per_member = {name: [g[name] for g in grid] for name in names if name != "seed"}
    assert set(per_member) <= set(cls.per_member_args)
    agent = cls(batch_size=len(grid), noise_std=0.1, **shared, **per_member)
    acts = play_batch(agent, [g["seed"] for g in grid], rounds, env_kw)
    exact = dtype == torch.float64
    for i, g in enumerate(grid):
        twin = cls(noise_std=0.1, **shared, **{k: v for k, v in g.items() if k != "seed"})
        np.testing.assert_array_equal(
            acts[i], play_single(twin, g["seed"], rounds, env_kw), err_msg=f"member {i}: {g}"
        )
        assert agent.member_memory_bytes()[i] == twin.memory_bytes(), i
        assert agent.sketch_size[i] == twin.sketch_size, i
        if cls is DBSLinUCB:
            assert (agent.n_blocks[i], agent.exact_mode[i]) == (twin.n_blocks, twin.exact_mode), i
            assert_same_blocks(
                agent.estimator.blocks(i), twin.estimator.blocks(), rel=1e-9 if exact else 1e-5
            )
        assert float(agent.confidence_radius()[i]) == pytest.approx(
            twin.confidence_radius(), rel=0 if exact else 1e-6
        )
        np.testing.assert_allclose(
            agent.theta_hat[i].numpy(),
            twin.theta_hat.numpy(),
            rtol=1e-8 if exact else 1e-4,
            atol=1e-10 if exact else 1e-5,
        )
    if cls is not OFUL:  # the sketches did discard mass: not OFUL in disguise
        assert (agent.estimator.total_shrinkage > 0).sum() >= len(grid) // 2
    # the grid matters: on one seed, members of different hyperparameters do not all play alike
    same_seed = [i for i, g in enumerate(grid) if g["seed"] == SEEDS[0]]
    assert len({tuple(acts[i]) for i in same_seed}) > 1


THEORY_CASES = [
    (OFUL, {}),
    (SOFUL, dict(sketch_size=3)),
    (CBSCFD, dict(sketch_size=3)),
    (DBSLinUCB, dict(l0=2, eps=1.0)),
]


@pytest.mark.parametrize("mixed", [False, True], ids=["all-theory", "theory-and-numbers"])
@pytest.mark.parametrize("cls,extra", THEORY_CASES, ids=[c[0].__name__ for c in THEORY_CASES])
def test_theory_radius_members_match_their_twins_alone_or_mixed_with_numeric_betas(
    cls, extra, mixed
):
    lams = [0.1, 1.0, 10.0, 1.0]
    betas = ["theory", 0.3, "theory", 0.0] if mixed else ["theory"] * 4
    agent = cls(batch_size=4, lam=lams, beta=betas, noise_std=0.1, **extra)
    assert (repr(agent).count("'theory'") == 2) if mixed else "beta='theory'" in repr(agent)
    acts = play_batch(agent, [3] * 4, 30)
    for i, (lam, beta) in enumerate(zip(lams, betas)):
        twin = cls(lam=lam, beta=beta, noise_std=0.1, **extra)
        np.testing.assert_array_equal(acts[i], play_single(twin, 3, 30))
        assert float(agent.confidence_radius()[i]) == pytest.approx(
            twin.confidence_radius(), rel=1e-10
        )


def test_batched_members_builds_the_batch_of_given_agents():
    singles = [
        SOFUL(lam=0.2, beta=0.01, sketch_size=3),
        SOFUL(lam=2.0, beta=0.01, sketch_size=3),
        SOFUL(lam=2.0, beta=0.3, sketch_size=3),
    ]
    agent = batched_members(singles)
    assert type(agent) is type(batched(singles[0], 3)) and agent.batch_size == 3
    assert agent.lam.tolist() == [0.2, 2.0, 2.0] and agent.beta.tolist() == [0.01, 0.01, 0.3]
    assert (
        repr(agent)
        == "BatchedSOFUL(batch_size=3, lam=[0.2, 2.0, 2.0], beta=[0.01, 0.01, 0.3], sketch_size=3)"
    )
    acts = play_batch(agent, [5, 5, 5], 25)
    for i, single in enumerate(singles):
        np.testing.assert_array_equal(acts[i], play_single(single, 5, 25))
    # identical members give the scalar (uniform) batch, and FD/RFD subclasses batch together
    same = batched_members([OFUL(lam=0.5, beta=0.2)] * 2)
    assert same.lam == 0.5 and same.beta == 0.2
    mixed = batched_members(
        [DBSLinUCBFD(l0=2, eps=1.0, lam=1.0), DBSLinUCB(l0=2, eps=1.0, lam=3.0)]
    )
    assert mixed.sketch == "fd" and mixed.lam.tolist() == [1.0, 3.0]


def test_batched_members_refuses_what_cannot_differ_and_names_it():
    with pytest.raises(
        ValueError, match=r"agents\[1\] has delta=0.1 but agents\[0\] has delta=0.05; delta cannot"
    ):
        batched_members([OFUL(lam=1.0), OFUL(lam=2.0, delta=0.1)])
    with pytest.raises(
        ValueError, match=r"agents\[1\] has fast=False.*per member: lam, beta, sketch_size"
    ):
        batched_members([SOFUL(sketch_size=4), SOFUL(sketch_size=5, fast=False)])
    with pytest.raises(ValueError, match=r"agents\[1\] is a SOFUL but agents\[0\] a OFUL"):
        batched_members([OFUL(), SOFUL()])
    with pytest.raises(ValueError, match="already batched"):
        batched_members([OFUL(batch_size=2)])
    with pytest.raises(ValueError, match="at least one"):
        batched_members([])
    assert batched_members([OFUL(beta="theory"), OFUL(beta=0.1)]).beta.tolist() == ["theory", 0.1]

    class MyOFUL(OFUL):
        pass

    with pytest.raises(TypeError, match="no batched version"):
        batched_members([MyOFUL()])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_dbs_batch_with_exact_and_sketched_members_at_once(dtype):
    """l0 = 8 at d = 24 is exact from the first row, l0 = 2 sketches: every round scores both kinds
    of member in one call (in float32 the exact members' terms must join the sketched ones'
    dtype)."""
    env_kw = dict(DBS_ENV, horizon=15)
    agent = DBSLinUCB(batch_size=2, l0=[2, 8], eps=4.0, beta=0.1, dtype=dtype, d=24)
    assert agent.exact_mode.tolist() == [False, True]
    acts = play_batch(agent, [5, 5], 15, env_kw)
    for i, l0 in enumerate([2, 8]):
        twin = DBSLinUCB(l0=l0, eps=4.0, beta=0.1, dtype=dtype, d=24)
        np.testing.assert_array_equal(acts[i], play_single(twin, 5, 15, env_kw))


def test_a_refused_update_leaves_a_mixed_batch_unchanged():
    agent = OFUL(batch_size=2, lam=[0.5, 3.0], beta=[0.1, 1.0])
    obs = np.random.default_rng(0).standard_normal((2, 4, 3))
    a = agent.act(obs)
    xp = agent.estimator.xp
    before = xp.host(xp.copy(agent.estimator.A_inv))
    with pytest.raises(ValueError, match="finite"):
        agent.update(obs, a, [1.0, np.inf])
    assert (xp.host(agent.estimator.A_inv) == before).all() and agent.t == 0
    agent.update(obs, a, [1.0, 1.0])
    assert agent.t == 1


# -- the estimators under per-member ridges ------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=2, max_size=3),
    regs=st.lists(st.sampled_from([0.01, 0.5, 3.0, 100.0]), min_size=3, max_size=3),
    sizes=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    fast=st.booleans(),
    epss=st.lists(st.sampled_from([0.5, 2.0, 8.0]), min_size=3, max_size=3),
    memory_cap=st.booleans(),
    n=st.integers(1, 40),
    d=st.integers(2, 12),
    which=st.sampled_from(["exact", "fd", "rfd", "dbs-fd", "dbs-rfd"]),
    seed=st.integers(0, 2**31 - 1),
    backend=st.sampled_from(BACKENDS),
)
# kept 1e4 - 9900 = 100, then a row of exactly 100: a tie at the rounding of 1e4 (fd_shrink)
@example(
    kinds=["orth_bursts", "gauss"],
    regs=[0.01] * 3,
    sizes=[2, 1, 1],
    fast=True,
    epss=[0.5] * 3,
    memory_cap=False,
    n=22,
    d=11,
    which="fd",
    seed=1316,
    backend="numpy",
)
@example(
    kinds=["orth_bursts", "gauss"],
    regs=[0.01] * 3,
    sizes=[2, 1, 1],
    fast=True,
    epss=[0.5] * 3,
    memory_cap=False,
    n=22,
    d=11,
    which="rfd",
    seed=1316,
    backend="numpy",
)
def test_estimators_with_per_member_parameters_equal_separate_ones(
    kinds, regs, sizes, fast, epss, memory_cap, n, d, which, seed, backend
):
    """Members with their own ridge (and FD/RFD sketch size, or DBS l0 and eps) on adversarial
    streams, huge and zero rows included (the exact inverse's repair, DBS's switch to exact
    updates): every query of member i equals the single estimator built with the i-th values (the
    batch on either backend)."""
    B = len(kinds)
    regs, sizes, epss = regs[:B], sizes[:B], epss[:B]
    streams = [make_stream(kind, n, d, seed + i) for i, kind in enumerate(kinds)]

    def make(reg, size, eps, batch_size=None):
        kw = dict(reg=reg, dtype=torch.float64, batch_size=batch_size)
        if which == "exact":
            return ExactCovariance(d, keep_gram=False, **kw)
        if which in ("fd", "rfd"):
            return (FrequentDirections if which == "fd" else RobustFrequentDirections)(
                d, size, fast=fast, **kw
            )
        l0 = min(size, d) if batch_size is None else [min(v, d) for v in size]
        # memory_cap=False: the literal block cap floor(log2(d/l0 + 1)), each member its own; the
        # time cap follows the arms a round scores (the batch is scored, its single twins are not):
        # off
        return DyadicBlockSketch(
            d, l0, eps, sketch=which[4:], fast=fast, memory_cap=memory_cap, time_cap=False, **kw
        )

    singles = [make(*values) for values in zip(regs, sizes, epss)]
    with on_backend(backend):
        bat = make(regs, sizes, epss, batch_size=B)
    rng = np.random.default_rng(seed)
    for t in range(n):
        arms = torch.as_tensor(rng.standard_normal((B, 4, d)))
        a = rng.integers(0, 4, B)
        arms[np.arange(B), a] = torch.as_tensor(np.stack([s[t] for s in streams]))
        terms = bat.score_terms(bat.xp.asarray(arms, torch.float64))  # (the backend's arrays)
        X = torch.as_tensor(np.stack([s[t] for s in streams]))
        if t % 2:  # the played arms of the scored set: their projections are reused
            bat.step(bat.xp.asarray(X, torch.float64), np.zeros(B), terms, a)
        else:
            bat.update(X)
        for single, stream in zip(singles, streams):
            single.update(torch.as_tensor(stream[t]))
    quad, sol, cov = bat.quad_inv(arms), bat.solve(arms[:, 0]), bat.covariance()
    for i, single in enumerate(singles):
        scale = max(1.0, float(np.abs(streams[i]).max()) ** 2) * n
        np.testing.assert_allclose(
            quad[i].numpy(), single.quad_inv(arms[i]).numpy(), rtol=1e-6, atol=1e-9 / regs[i]
        )
        np.testing.assert_allclose(
            sol[i].numpy(), single.solve(arms[i, 0]).numpy(), rtol=1e-6, atol=1e-9 / regs[i]
        )
        np.testing.assert_allclose(
            cov[i].numpy(), single.covariance().numpy(), rtol=1e-6, atol=1e-6 * scale
        )
        assert bat.member_memory_bytes()[i] == single.memory_bytes()
        if which != "exact":
            assert (
                abs(float(np.atleast_1d(bat.total_shrinkage)[i]) - single.total_shrinkage)
                <= 1e-9 * scale
            )
        if which.startswith("dbs"):
            assert_same_blocks(bat.blocks(i), single.blocks())
            assert bat.exact[i] == single.exact_mode
        if which in ("fd", "rfd"):
            assert float(bat.log_det_ratio_bound()[i]) == pytest.approx(
                single.log_det_ratio_bound(), rel=1e-7, abs=1e-9
            )
            assert (bat.rows_in_use[i], bat.n_reductions[i], bat.sketch_size[i]) == (
                single.rows_in_use,
                single.n_reductions,
                single.sketch_size,
            )


@pytest.mark.parametrize("sketch", ["fd", "rfd"])
def test_dbs_members_with_their_own_l0_reach_their_own_block_caps(sketch):
    """The paper's literal cap (memory_cap=False, time_cap=False) differs per l0:
    floor(log2(16/l0 + 1)) = 4, 3, 2."""
    d, l0s, epss = 16, [1, 2, 4], [0.5, 2.0, 8.0]
    X = torch.as_tensor(np.random.default_rng(1).standard_normal((120, d)))
    kw = dict(
        sketch=sketch, reg=[0.3, 1.0, 3.0], memory_cap=False, time_cap=False, dtype=torch.float64
    )
    bat = DyadicBlockSketch(d, l0s, epss, batch_size=3, **kw)
    singles = [
        DyadicBlockSketch(d, l0, eps, **dict(kw, reg=reg))
        for l0, eps, reg in zip(l0s, epss, kw["reg"])
    ]
    assert bat.block_cap.tolist() == [s.block_cap for s in singles] == [4, 3, 2]
    for t in range(len(X)):
        bat.update(X[t].expand(3, d))
        for i, single in enumerate(singles):
            single.update(X[t])
            assert_same_blocks(bat.blocks(i), single.blocks())
    assert bat.exact.all() and bat.n_blocks.tolist() == [4, 3, 2]
    np.testing.assert_allclose(
        bat.solve(X[:3]).numpy(),
        np.stack([s.solve(X[i]).numpy() for i, s in enumerate(singles)]),
        rtol=1e-9,
        atol=1e-12,
    )


def test_estimator_ridge_per_member_is_validated_naming_the_member():
    with pytest.raises(
        ValueError,
        match=r"reg\[1\] \(the ridge lambda\) must be a finite number > 0, got 0.0 \(member 1",
    ):
        ExactCovariance(3, reg=[1.0, 0.0], batch_size=2)
    with pytest.raises(ValueError, match="one value per member"):
        FrequentDirections(3, 2, reg=[1.0, 2.0, 3.0], batch_size=2)
    with pytest.raises(ValueError, match="single agent"):
        ExactCovariance(3, reg=[1.0, 2.0])
    with pytest.raises(
        ValueError, match=r"sketch_size\[0\] must be an int >= 1 .*got 2.5 .*\(member 0"
    ):
        RobustFrequentDirections(3, [2.5, 2], batch_size=2)
