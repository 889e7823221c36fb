"""Batched execution: native vector envs, batched agents, the batched run path.

Every equivalence here is against the unbatched code on the same seeds: the vector envs
must reproduce B separate envs (and Gymnasium's SyncVectorEnv) bit for bit, and each member
of a batched agent must make the choices of its unbatched twin (float64, CPU).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sketch_streams import BACKENDS, KINDS, make_stream, on_backend

import linbandit_gym
from agents import CBSCFD, OFUL, SOFUL, DBSLinUCB
from agents.batched import (
    BatchedCBSCFD,
    BatchedDBSLinUCB,
    BatchedDyadicBlockSketch,
    BatchedFrequentDirections,
    BatchedOFUL,
    BatchedRobustFrequentDirections,
    BatchedSOFUL,
    batched,
    supports_batched,
)
from agents.dbslinucb import DBSLinUCBRFD
from agents.sketches.dbs import DyadicBlockSketch
from agents.sketches.fd import FrequentDirections
from agents.sketches.rfd import RobustFrequentDirections
from linbandit_gym import batched as batched_run
from linbandit_gym.batched import MIN_BATCH
from linbandit_gym.cli import main
from linbandit_gym.evaluate import RECORD_COLUMNS
from linbandit_gym.loop import TIMING_COLUMNS
from linbandit_gym.vector import LinBanditVectorEnv, supports_vector

#: small d: the sketches of these tests hold more than OFUL's inverse, which is warned (asserted in
#: tests/test_agent_warnings.py); not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")

SMALL = dict(d=8, n_arms=6, horizon=40)
TIMING = TIMING_COLUMNS

# (id, kwargs) of every family with a native vector env that works offline
VECTOR_CASES = [
    ("LinBandit-Synthetic-v0", dict(d=7, n_arms=5, horizon=4)),
    ("LinBandit-HeavyTail-v0", dict(d=7, n_arms=5, horizon=4, alpha=1.0, rank=4)),
    ("LinBandit-LocallyConvex-v0", dict(d=7, n_arms=5, horizon=4, local_frac=0.4)),
    ("LinBandit-Digits-v0", dict(horizon=4, target_class=3)),
]


def assert_same_info(a: dict, b: dict) -> None:
    """Gymnasium info dicts equal: same keys, dtypes and values (recursively)."""
    assert set(a) == set(b), set(a) ^ set(b)
    for key in a:
        if isinstance(a[key], dict):
            assert_same_info(a[key], b[key])
        elif a[key].dtype == object:
            for x, y in zip(a[key], b[key]):
                assert (x is None and y is None) or np.array_equal(x, y), key
        else:
            assert a[key].dtype == b[key].dtype, (key, a[key].dtype, b[key].dtype)
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


# -- vector environments --------------------------------------------------------------


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("env_id,kwargs", VECTOR_CASES, ids=[c[0] for c in VECTOR_CASES])
def test_vector_env_equals_sync_vector_env_across_autoresets(env_id, kwargs, mode):
    native = gym.make_vec(
        env_id, num_envs=3, vectorization_mode="vector_entry_point", autoreset_mode=mode, **kwargs
    )
    sync = gym.make_vec(
        env_id,
        num_envs=3,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        **kwargs,
    )
    assert isinstance(native, VectorEnv) and native.metadata["autoreset_mode"] == mode
    assert (
        native.observation_space == sync.observation_space
        and native.action_space == sync.action_space
    )
    o1, i1 = native.reset(seed=11)
    o2, i2 = sync.reset(seed=11)
    assert o1.dtype == np.float32 and o1.shape == (3, *native.single_observation_space.shape)
    np.testing.assert_array_equal(o1, o2)
    assert_same_info(i1, i2)
    rng = np.random.default_rng(0)
    for _ in range(13):  # crosses the horizon (4) three times: autoresets included
        a = rng.integers(0, native.single_action_space.n, 3)
        out1, out2 = native.step(a), sync.step(a)
        for x, y in zip(out1[:4], out2[:4]):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
        assert_same_info(out1[4], out2[4])
    native.close(), sync.close()


@settings(max_examples=10, deadline=None)
@given(
    seeds=st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=5),
    d=st.integers(1, 9),
    k=st.integers(2, 6),
    noise=st.sampled_from([0.0, 0.1, 2.0]),
)
def test_vector_env_member_i_replays_the_single_env_with_seed_i(seeds, d, k, noise):
    kw = dict(d=d, n_arms=k, horizon=6, noise_std=noise)
    venv = gym.make_vec("LinBandit-Synthetic-v0", num_envs=len(seeds), **kw)
    obs, _ = venv.reset(seed=seeds)
    singles = [gym.make("LinBandit-Synthetic-v0", **kw) for _ in seeds]
    single_obs = [env.reset(seed=s)[0] for env, s in zip(singles, seeds)]
    np.testing.assert_array_equal(
        venv.unwrapped.theta_star, np.stack([e.unwrapped.theta_star for e in singles])
    )
    rng = np.random.default_rng(len(seeds))
    for _ in range(6):
        np.testing.assert_array_equal(obs, np.stack(single_obs))
        a = rng.integers(0, k, len(seeds))
        obs, reward, term, trunc, info = venv.step(a)
        for i, env in enumerate(singles):
            single_obs[i], r, _, tr, inf = env.step(int(a[i]))
            assert reward[i] == r and trunc[i] == tr and not term[i]
            assert info["regret"][i] == inf["regret"] and info["best_arm"][i] == inf["best_arm"]
            assert info["expected_reward"][i] == inf["expected_reward"]


def test_int_seed_gives_member_i_seed_plus_i_and_theta_differs():
    venv = gym.make_vec("LinBandit-Synthetic-v0", num_envs=3, **SMALL)
    obs, _ = venv.reset(seed=5)
    listed = gym.make_vec("LinBandit-Synthetic-v0", num_envs=3, **SMALL)
    np.testing.assert_array_equal(obs, listed.reset(seed=[5, 6, 7])[0])
    theta = venv.unwrapped.theta_star
    assert not np.allclose(theta[0], theta[1]) and not np.allclose(obs[0], obs[1])


def test_disabled_autoreset_requires_a_masked_reset_like_sync():
    kw = dict(d=4, n_arms=3, horizon=2)
    native = gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, autoreset_mode="Disabled", **kw)
    sync = gym.make_vec(
        "LinBandit-Synthetic-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED},
        **kw,
    )
    native.reset(seed=3), sync.reset(seed=3)
    for _ in range(2):
        out1, _ = native.step(np.array([0, 1])), sync.step(np.array([0, 1]))
    assert out1[3].all()
    with pytest.raises(RuntimeError, match="reset_mask"):
        native.step(np.array([0, 0]))
    mask = np.array([True, False])
    o1, i1 = native.reset(options={"reset_mask": mask.copy()})
    o2, i2 = sync.reset(options={"reset_mask": mask.copy()})
    np.testing.assert_array_equal(o1, o2)
    assert_same_info(i1, i2)


def test_vector_env_rejects_bad_input_and_keeps_its_state():
    venv = gym.make_vec("LinBandit-Synthetic-v0", num_envs=3, **SMALL)
    ref = gym.make_vec("LinBandit-Synthetic-v0", num_envs=3, **SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(3, dtype=np.int64))
    venv.reset(seed=0), ref.reset(seed=0)
    for bad, match in [
        (np.zeros(2, dtype=np.int64), "shape"),
        (np.zeros(3), "integer"),
        (np.array([0, 6, 1]), "out of range"),
        (np.array([-1, 0, 1]), "out of range"),
        (np.array([True, False, True]), "integer"),
    ]:
        with pytest.raises(ValueError, match=match):
            venv.step(bad)
    a = np.array([1, 2, 3])
    for x, y in zip(venv.step(a)[:4], ref.step(a)[:4]):  # nothing advanced on the bad calls
        np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="num_envs"):
        gym.make_vec("LinBandit-Synthetic-v0", num_envs=0)
    with pytest.raises(ValueError, match="autoreset_mode"):
        LinBanditVectorEnv(
            2,
            env_class="linbandit_gym.envs.synthetic:SyntheticLinBanditEnv",
            autoreset_mode="later",
        )
    with pytest.raises(ValueError, match="one seed per sub-env"):
        venv.reset(seed=[1, 2])
    with pytest.raises(TypeError, match="sync"):  # BAI has its own step: no native batching
        LinBanditVectorEnv(2, env_class="linbandit_gym.envs.bai:BAILinBanditEnv")
    with pytest.raises(ValueError, match="d must be"):  # the family's own validation
        gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, d=0)


def test_device_option_gives_tensors_that_batched_agents_play():
    venv = gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, device="cpu", **SMALL)
    ref = gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, **SMALL)
    obs, _ = venv.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.shape == (2, 6, 8)
    np.testing.assert_array_equal(obs.numpy(), ref.reset(seed=0)[0])
    agent = BatchedOFUL(2, beta=0.1)
    a = agent.act(obs)
    assert isinstance(a, torch.Tensor) and a.dtype == torch.int64
    nxt, r, term, trunc, info = venv.step(a)
    agent.update(obs, a, r)
    assert isinstance(r, torch.Tensor) and isinstance(trunc, torch.Tensor) and agent.t == 1
    np.testing.assert_array_equal(r.numpy(), ref.step(a.numpy())[1])
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, device="cuda", **SMALL)


def test_supports_vector_lists_the_families():
    for env_id, _ in VECTOR_CASES:
        assert supports_vector(env_id)
    assert not supports_vector("LinBandit-BAI-v0") and not supports_vector("CartPole-v1")
    assert not supports_vector(gym.make("LinBandit-Synthetic-v0"))


# -- batched agents ---------------------------------------------------------------------


def play_unbatched(make_agent, env_id, env_kwargs, seeds, rounds):
    """Actions, regrets and final agents of B separate (env, agent) pairs."""
    actions, regrets, agents = [], [], []
    for s in seeds:
        env, agent = gym.make(env_id, **env_kwargs), make_agent()
        agent.reset(seed=s)
        obs, _ = env.reset(seed=s)
        acts, regs = [], []
        for _ in range(rounds):
            a = agent.act(obs)
            nxt, r, _, _, info = env.step(a)
            agent.update(obs, a, r)
            acts.append(a), regs.append(info["regret"])
            obs = nxt
        actions.append(acts), regrets.append(regs), agents.append(agent)
    return np.array(actions), np.array(regrets), agents


def play_batched(agent, env_id, env_kwargs, seeds, rounds):
    venv = gym.make_vec(env_id, num_envs=len(seeds), **env_kwargs)
    agent.reset(seed=list(seeds))
    obs, _ = venv.reset(seed=list(seeds))
    actions, regrets = [], []
    for _ in range(rounds):
        a = agent.act(obs)
        nxt, r, _, _, info = venv.step(a)
        agent.update(obs, a, r)
        actions.append(a), regrets.append(info["regret"])
        obs = nxt
    return np.array(actions).T, np.array(regrets).T


@pytest.mark.parametrize("beta", [0.1, "theory"])
@pytest.mark.parametrize(
    "env_id,kwargs",
    [
        ("LinBandit-Synthetic-v0", dict(d=12, n_arms=20, horizon=120)),
        ("LinBandit-HeavyTail-v0", dict(d=12, n_arms=20, horizon=120, alpha=1.5)),
    ],
)
def test_batched_oful_makes_the_choices_of_separate_ofuls(env_id, kwargs, beta):
    seeds = [3, 8, 21]
    params = dict(lam=0.7, beta=beta, noise_std=0.1)
    acts, regs, singles = play_unbatched(lambda: OFUL(**params), env_id, kwargs, seeds, 120)
    agent = BatchedOFUL(len(seeds), **params)
    bacts, bregs = play_batched(agent, env_id, kwargs, seeds, 120)
    np.testing.assert_array_equal(bacts, acts)
    np.testing.assert_array_equal(bregs, regs)
    for i, single in enumerate(singles):
        np.testing.assert_allclose(
            agent.theta_hat[i].numpy(), single.theta_hat.numpy(), rtol=1e-9, atol=1e-12
        )
        assert agent.member_memory_bytes()[i] == single.memory_bytes()
        assert agent.sketch_size[i] == single.sketch_size


def test_batched_agent_rejects_bad_feedback_and_keeps_its_state():
    agent = BatchedOFUL(2, beta=0.1)
    obs = np.random.default_rng(0).standard_normal((2, 4, 3))
    with pytest.raises(ValueError, match=r"\(B=2, K, d\)"):
        agent.act(obs[0])
    a = agent.act(obs)
    xp = agent.estimator.xp
    before = agent.theta_hat.clone(), xp.host(xp.copy(agent.estimator.A_inv))
    for bad_a, bad_r, match in [
        (np.array([0]), [1.0, 1.0], "shape"),
        (np.array([0, 4]), [1.0, 1.0], "out of range"),
        (np.array([0.0, 1.0]), [1.0, 1.0], "integer"),
        (a, [1.0, np.nan], "finite"),
        (a, [1.0], r"shape \(2,\)"),
    ]:
        with pytest.raises(ValueError, match=match):
            agent.update(obs, bad_a, bad_r)
    with pytest.raises(ValueError, match="dimension changed"):
        agent.update(np.zeros((2, 4, 5)), a, [1.0, 1.0])
    assert (
        torch.equal(agent.theta_hat, before[0])
        and (xp.host(agent.estimator.A_inv) == before[1]).all()
        and agent.t == 0
    )
    with pytest.raises(ValueError, match="batch_size"):
        BatchedOFUL(0)
    with pytest.raises(ValueError, match="lam"):  # the unbatched agent's own validation
        BatchedOFUL(2, lam=-1.0)
    with pytest.raises(ValueError, match="one seed per member"):
        agent.reset(seed=[1, 2, 3])


def test_batched_twin_of_an_agent_keeps_its_parameters():
    agent = OFUL(lam=0.3, beta="theory", delta=0.2, noise_std=0.5, theta_bound=2.0, d=5)
    twin = batched(agent, 4)
    assert isinstance(twin, BatchedOFUL) and twin.batch_size == 4 and twin.d == 5
    assert (twin.lam, twin.beta, twin.delta, twin.noise_std, twin.theta_bound) == (
        0.3,
        "theory",
        0.2,
        0.5,
        2.0,
    )
    assert supports_batched(agent) and not supports_batched(object())

    class MyOFUL(OFUL):  # a user's subclass may change the loop: no silent batching
        pass

    assert not supports_batched(MyOFUL())
    with pytest.raises(TypeError, match="no batched version"):
        batched(MyOFUL(), 2)


# -- batched sketches and sketched agents -------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4),
    n=st.integers(1, 40),
    d=st.integers(1, 10),
    l=st.integers(1, 8),
    fast=st.booleans(),
    robust=st.booleans(),
    reg=st.sampled_from([0.1, 1.0, 10.0]),
    seed=st.integers(0, 2**31 - 1),
    backend=st.sampled_from(BACKENDS),
)
# a residual at rounding level joins the single's basis and not the batch's: the log-det bound must
# not see it
@example(
    kinds=["gauss", "gauss", "orth_bursts"],
    n=11,
    d=3,
    l=3,
    fast=True,
    robust=False,
    reg=0.1,
    seed=0,
    backend="torch",
)
def test_batched_fd_and_rfd_equal_separate_sketches_on_adversarial_streams(
    kinds, n, d, l, fast, robust, reg, seed, backend
):
    """Members see different stream kinds (zero rows, low rank, huge rows, ...), so their row
    counts and reduction rounds diverge; every query must still match the unbatched sketch, on
    either backend (numpy, the CPU's; torch, a GPU's). Each row is also planted among random arms
    and scored first, so that updates alternately reuse the scored projection (``actions=``) and
    recompute it."""
    B = len(kinds)
    streams = [make_stream(kind, n, d, seed + i) for i, kind in enumerate(kinds)]
    single_cls, batch_cls = (
        (RobustFrequentDirections, BatchedRobustFrequentDirections)
        if robust
        else (FrequentDirections, BatchedFrequentDirections)
    )
    singles = [single_cls(d, l, reg=reg, fast=fast, dtype=torch.float64) for _ in range(B)]
    with on_backend(backend):
        bat = batch_cls(
            B, d, l, reg=reg, fast=fast, device=torch.device("cpu"), dtype=torch.float64
        )
    rng = np.random.default_rng(seed)
    b = np.zeros((B, d))
    for t in range(n):
        arms = rng.standard_normal((B, 5, d))
        a = rng.integers(0, 5, B)
        arms[np.arange(B), a] = [stream[t] for stream in streams]
        arms = torch.as_tensor(arms)
        terms = bat.score_terms(bat.xp.asarray(arms, torch.float64))  # (the backend's arrays)
        mean, quad = bat.xp.to_torch(terms.mean), bat.xp.to_torch(terms.quad)
        for i, single in enumerate(singles):
            theta = single.solve(torch.as_tensor(b[i])).numpy()
            scale = 1.0 + np.abs(arms[i].numpy()).max() ** 2 * (1.0 + np.abs(b[i]).max())
            np.testing.assert_allclose(
                mean[i].numpy(), arms[i].numpy() @ theta, rtol=1e-7, atol=1e-9 * scale / reg
            )
            np.testing.assert_allclose(
                quad[i].numpy(),
                single.quad_inv(arms[i]).numpy(),
                rtol=1e-7,
                atol=1e-9 * scale / reg,
            )
        r = rng.standard_normal(B)
        for i, (single, stream) in enumerate(zip(singles, streams)):
            single.update(torch.as_tensor(stream[t]))
            b[i] += r[i] * stream[t]
        X = torch.as_tensor(np.stack([stream[t] for stream in streams]))
        if t % 2:  # the played arms of the scored set: their projections are reused
            bat.step(bat.xp.asarray(X, torch.float64), r, terms, a)
        else:
            bat.update(X, torch.as_tensor(r))
        sol, logdet = bat.solve(arms[:, 0]), bat.log_det_ratio_bound()
        for i, single in enumerate(singles):
            assert (single.rows_in_use, single.n_reductions) == (
                bat.rows_in_use[i],
                bat.n_reductions[i],
            )
            scale = max(1.0, float(np.abs(streams[i][: t + 1]).max()) ** 2) * (t + 1)
            assert abs(single.total_shrinkage - float(bat.total_shrinkage[i])) <= 1e-9 * scale
            if robust:
                assert abs(single.alpha - float(bat.alpha[i])) <= 1e-9 * scale
            np.testing.assert_allclose(
                sol[i].numpy(), single.solve(arms[i, 0]).numpy(), rtol=1e-7, atol=1e-9 / reg
            )
            np.testing.assert_allclose(
                float(logdet[i]), single.log_det_ratio_bound(), rtol=1e-7, atol=1e-9
            )
    assert bat.member_memory_bytes().tolist() == [single.memory_bytes() for single in singles]


SKETCHED = [(SOFUL, BatchedSOFUL), (CBSCFD, BatchedCBSCFD)]


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("beta", [0.1, "theory"])
@pytest.mark.parametrize("single_cls,batch_cls", SKETCHED, ids=["SOFUL", "CBSCFD"])
def test_batched_sketched_agents_make_the_choices_of_separate_agents(
    single_cls, batch_cls, beta, fast
):
    seeds, rounds = [1, 5, 7], 90
    kwargs = dict(d=12, n_arms=20, horizon=rounds)
    params = dict(lam=1.0, beta=beta, sketch_size=4, fast=fast, noise_std=0.1)
    acts, regs, singles = play_unbatched(
        lambda: single_cls(**params), "LinBandit-Synthetic-v0", kwargs, seeds, rounds
    )
    agent = batch_cls(len(seeds), **params)
    bacts, bregs = play_batched(agent, "LinBandit-Synthetic-v0", kwargs, seeds, rounds)
    np.testing.assert_array_equal(bacts, acts)
    np.testing.assert_array_equal(bregs, regs)
    assert (
        agent.estimator.total_shrinkage > 0
    ).all()  # the sketches did discard: not OFUL in disguise
    for i, single in enumerate(singles):
        np.testing.assert_allclose(
            agent.theta_hat[i].numpy(), single.theta_hat.numpy(), rtol=1e-8, atol=1e-11
        )
        if beta == "theory":
            assert float(agent.confidence_radius()[i]) == pytest.approx(
                single.confidence_radius(), rel=1e-10
            )
        assert (
            agent.member_memory_bytes()[i] == single.memory_bytes()
            and agent.sketch_size[i] == single.sketch_size
        )


def test_batched_soful_on_a_classification_env_with_sketch_larger_than_d_is_oful():
    kwargs = dict(horizon=60, target_class=2)  # Digits: d = 64, K = 10, exactly one paying arm
    seeds = [0, 1]
    soful = BatchedSOFUL(2, lam=1.0, beta=0.2, sketch_size=65)  # l > d: FD is exact
    oful = BatchedOFUL(2, lam=1.0, beta=0.2)
    a1, r1 = play_batched(soful, "LinBandit-Digits-v0", kwargs, seeds, 60)
    a2, r2 = play_batched(oful, "LinBandit-Digits-v0", kwargs, seeds, 60)
    np.testing.assert_array_equal(a1, a2)
    acts, regs, _ = play_unbatched(
        lambda: SOFUL(lam=1.0, beta=0.2, sketch_size=65), "LinBandit-Digits-v0", kwargs, seeds, 60
    )
    np.testing.assert_array_equal(a1, acts)
    assert r1.sum() < 0.6 * r1.size  # it learns the target class (uniform play: 90% regret rounds)


def _tensor_bytes_held(obj, seen=None) -> int:
    """Bytes of every tensor reachable through the attributes of ``obj`` (and its estimator)."""
    total = 0
    for value in vars(obj).values():
        if isinstance(value, torch.Tensor):
            total += value.element_size() * value.nelement()
    return total


def test_batched_soful_memory_is_o_b_d_l_at_b128_d784():
    B, d, l = 128, 784, 50
    agent = BatchedSOFUL(B, lam=1.0, beta=0.1, sketch_size=l, d=d, dtype=torch.float32)
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((B, 10, d)).astype(np.float32)
    for _ in range(3):
        a = agent.act(obs)
        agent.update(obs, a, rng.standard_normal(B))
    held = _tensor_bytes_held(agent) + _tensor_bytes_held(agent.estimator)
    assert agent.memory_bytes() >= held - 64 * B  # every sizeable tensor is counted
    # float32 buffer and theta_hat; float64 core: Gram, inverse factor, S r, b and the anchor (see
    # agents.sketches.base)
    per = 4 * (2 * l * d + d) + 8 * (2 * (2 * l) ** 2 + 2 * l + 4 * d)
    assert agent.memory_bytes() <= B * per + 4096
    assert agent.memory_bytes() < 0.25 * B * d * d * 4  # far from one d x d matrix per member
    assert (
        agent.member_memory_bytes()[0]
        == SOFUL(sketch_size=l, d=d, dtype=torch.float32).memory_bytes()
    )


# -- batched dyadic block sketching (divergent block structures) -----------------------------


@settings(max_examples=20, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=2, max_size=4),
    scales=st.lists(st.sampled_from([0.3, 1.0, 3.0]), min_size=4, max_size=4),
    n=st.integers(1, 45),
    d=st.integers(2, 16),
    l0=st.integers(1, 4),
    eps=st.sampled_from([0.5, 2.0, 8.0]),
    fast=st.booleans(),
    sentinel=st.booleans(),
    sketch=st.sampled_from(["fd", "rfd"]),
    seed=st.integers(0, 2**31 - 1),
    backend=st.sampled_from(BACKENDS),
)
def test_batched_dbs_equals_separate_sketches_while_block_structures_diverge(
    kinds, scales, n, d, l0, eps, fast, sentinel, sketch, seed, backend
):
    """Members get streams of different kinds and scales, so they close blocks, reach the cap
    and switch to exact updates on different rounds; each must stay its unbatched sketch (the
    batch on either backend).
    Rows are planted among scored arms, so updates alternately reuse the scored projections."""
    l0, B = min(l0, d), len(kinds)
    streams = [make_stream(kind, n, d, seed + i) * scales[i] for i, kind in enumerate(kinds)]
    kw = dict(sketch=sketch, fast=fast, sentinel=sentinel, dtype=torch.float64)
    kw["time_cap"] = (
        False  # it follows the arms a round scores: the batch is scored, its single twins are not
    )
    singles = [DyadicBlockSketch(d, l0, eps, reg=0.5, **kw) for _ in range(B)]
    with on_backend(backend):
        bat = BatchedDyadicBlockSketch(B, d, l0, eps, reg=0.5, device=torch.device("cpu"), **kw)
    rng = np.random.default_rng(seed)
    b = np.zeros((B, d))
    for t in range(n):
        arms = rng.standard_normal((B, 5, d))
        a = rng.integers(0, 5, B)
        arms[np.arange(B), a] = [stream[t] for stream in streams]
        arms = torch.as_tensor(arms)
        terms = bat.score_terms(bat.xp.asarray(arms, torch.float64))  # (the backend's arrays)
        mean, quad = bat.xp.to_torch(terms.mean), bat.xp.to_torch(terms.quad)
        for i, single in enumerate(singles):
            scale = 1.0 + np.abs(arms[i].numpy()).max() ** 2 * (1.0 + np.abs(b[i]).max())
            theta = single.solve(torch.as_tensor(b[i])).numpy()
            np.testing.assert_allclose(
                mean[i].numpy(), arms[i].numpy() @ theta, rtol=1e-6, atol=2e-9 * scale
            )
            np.testing.assert_allclose(
                quad[i].numpy(), single.quad_inv(arms[i]).numpy(), rtol=1e-6, atol=2e-9 * scale
            )
        r = rng.standard_normal(B)
        for i, (single, stream) in enumerate(zip(singles, streams)):
            single.update(torch.as_tensor(stream[t]))
            b[i] += r[i] * stream[t]
        X = torch.as_tensor(np.stack([stream[t] for stream in streams]))
        if t % 2:  # the played arms of the scored set: their projections are reused
            bat.step(bat.xp.asarray(X, torch.float64), r, terms, a)
        else:
            bat.update(X, torch.as_tensor(r))
        quad, sol = bat.quad_inv(arms), bat.solve(arms[:, 0])
        for i, single in enumerate(singles):
            assert (
                single.exact_mode,
                single.n_blocks,
                single.sketch_size,
                single.active_sketch_size,
            ) == (
                bat.exact[i],
                bat.n_blocks[i],
                bat.sketch_sizes()[i],
                bat.active_sketch_size[i],
            ), (t, i)
            assert single.memory_bytes() == bat.member_memory_bytes()[i]
            scale = max(1.0, float(np.abs(streams[i][: t + 1]).max()) ** 2) * (t + 1)
            assert abs(single.total_shrinkage - bat.total_shrinkage[i]) <= 1e-9 * scale
            assert abs(single.alpha - bat.alpha[i]) <= 1e-9 * scale
            weighted = sum(blk.sketch_size * blk.shrinkage for blk in single.blocks())
            assert abs(weighted - bat.blocks_weighted_shrinkage()[i]) <= 1e-7 * scale
            np.testing.assert_allclose(
                quad[i].numpy(), single.quad_inv(arms[i]).numpy(), rtol=1e-6, atol=2e-9
            )
            np.testing.assert_allclose(
                sol[i].numpy(), single.solve(arms[i, 0]).numpy(), rtol=1e-6, atol=2e-9
            )


# (params, env kwargs): HeavyTail arms of varying norms make the members' blocks diverge
DBS_CASES = [
    (dict(l0=2, eps=4.0, sketch="fd", sentinel=False, beta=0.1), dict(d=40, alpha=0.3)),
    (dict(l0=2, eps=4.0, sketch="rfd", sentinel=False, beta=0.1), dict(d=40, alpha=0.3)),
    (dict(l0=2, eps=1.5, sketch="fd", beta="theory"), dict(d=24, alpha=0.5)),
    (dict(l0=2, eps=1.5, sketch="rfd", fast=False, beta="theory"), dict(d=24, alpha=0.5)),
]


@pytest.mark.parametrize("params,env_kwargs", DBS_CASES)
def test_batched_dbslinucb_makes_the_choices_of_separate_agents(params, env_kwargs):
    seeds, rounds = [1, 2, 3], 100
    kwargs = dict(n_arms=10, horizon=rounds, **env_kwargs)
    params = dict(lam=1.0, noise_std=0.1, **params)
    acts, regs, singles = play_unbatched(
        lambda: DBSLinUCB(**params), "LinBandit-HeavyTail-v0", kwargs, seeds, rounds
    )
    agent = BatchedDBSLinUCB(len(seeds), **params)
    venv = gym.make_vec("LinBandit-HeavyTail-v0", num_envs=len(seeds), **kwargs)
    obs, _ = venv.reset(seed=seeds)
    diverged = False
    for t in range(rounds):
        a = agent.act(obs)
        np.testing.assert_array_equal(a, acts[:, t])
        obs_next, r, _, _, info = venv.step(a)
        np.testing.assert_array_equal(info["regret"], regs[:, t])
        agent.update(obs, a, r)
        obs = obs_next
        diverged |= (
            len({(b, e, r) for b, e, r in zip(agent.n_blocks, agent.exact_mode, agent.sketch_size)})
            > 1
        )
    if params.get("sentinel") is False:
        assert diverged  # the members' block structures did differ at some round
    for i, single in enumerate(singles):
        np.testing.assert_allclose(
            agent.theta_hat[i].numpy(), single.theta_hat.numpy(), rtol=1e-7, atol=1e-10
        )
        assert (agent.n_blocks[i], agent.exact_mode[i], agent.sketch_size[i]) == (
            single.n_blocks,
            single.exact_mode,
            single.sketch_size,
        )
        assert agent.member_memory_bytes()[i] == single.memory_bytes()
        if params["beta"] == "theory":
            assert float(agent.confidence_radius()[i]) == pytest.approx(
                single.confidence_radius(), rel=1e-9
            )


def test_batched_dbslinucb_checks_l0_against_d_and_batches_the_rfd_subclass():
    agent = BatchedDBSLinUCB(2, l0=10, eps=1.0)
    with pytest.raises(ValueError, match="l0=10 exceeds the arm dimension d=4"):
        agent.act(np.zeros((2, 3, 4)))
    assert agent.estimator is None  # nothing was allocated
    twin = batched(DBSLinUCBRFD(l0=3, eps=2.0, beta=0.2), 3)
    assert (
        isinstance(twin, BatchedDBSLinUCB) and twin.sketch == "rfd" and twin.name == "DBSLinUCB-RFD"
    )
    exact = BatchedDBSLinUCB(
        2, l0=3, eps=1.0, d=4
    )  # block cap floor(log2(4/3 + 1)) = 1: exact from the start
    assert exact.exact_mode.all() and (exact.sketch_size == 4).all()


# -- the batched run path ---------------------------------------------------------------


@pytest.fixture
def batched_calls(monkeypatch):
    """The calls ``run`` makes to :func:`linbandit_gym.batched.run_batched` (which still runs)."""
    calls = []
    real = batched_run.run_batched

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(batched_run, "run_batched", spy)
    return calls


def test_run_takes_the_batched_path_and_gives_the_same_records(batched_calls):
    calls = batched_calls
    seeds = [4, 9, 2] + list(range(20, 17 + MIN_BATCH))  # MIN_BATCH seeds, in no order
    auto = linbandit_gym.run(
        "LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=seeds, env_kwargs=SMALL
    )
    assert len(calls) == 1
    loop = linbandit_gym.run(
        "LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=seeds, env_kwargs=SMALL, batched=False
    )
    assert len(calls) == 1
    assert list(auto.columns) == RECORD_COLUMNS == list(loop.columns)
    pd.testing.assert_frame_equal(auto.drop(columns=TIMING), loop.drop(columns=TIMING))
    for _, g in auto.groupby("seed"):
        assert (
            g["agent_time"].is_monotonic_increasing
            and (g["wall_time"] >= g["agent_wall_time"]).all()
        )
    linbandit_gym.run("LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=[4], env_kwargs=SMALL)
    assert len(calls) == 1  # one seed: nothing to batch
    linbandit_gym.run("LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=seeds[:-1], env_kwargs=SMALL)
    assert len(calls) == 1  # fewer than MIN_BATCH seeds: one after another is faster


def test_run_batches_by_default_only_members_with_a_small_state(batched_calls):
    """The default follows the sweep planner's SMALL_STATE rule: OFUL's d x d inverse at d = 400
    (1.28 MB) plays seed after seed, a SOFUL l = 4 sketch there (~26 KB) is batched; both can be
    forced either way."""
    from linbandit_gym.experiments.packing import SMALL_STATE

    calls = batched_calls
    wide = dict(d=400, n_arms=3, horizon=3)
    assert 8 * 400 * 400 > SMALL_STATE
    linbandit_gym.run("LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=MIN_BATCH, env_kwargs=wide)
    assert calls == []
    linbandit_gym.run(
        "LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=2, env_kwargs=wide, batched=True
    )
    assert len(calls) == 1
    linbandit_gym.run(
        "LinBandit-Synthetic-v0", SOFUL(beta=0.1, sketch_size=4), seeds=MIN_BATCH, env_kwargs=wide
    )
    assert len(calls) == 2


def test_run_batched_chunks_and_max_rounds_keep_the_records():
    kw = dict(env_kwargs=SMALL, max_rounds=25)
    loop = linbandit_gym.run("LinBandit-Synthetic-v0", OFUL, seeds=5, batched=False, **kw)
    chunked = batched_run.run_batched("LinBandit-Synthetic-v0", OFUL, seeds=5, max_batch=2, **kw)
    pd.testing.assert_frame_equal(chunked.drop(columns=TIMING), loop.drop(columns=TIMING))
    assert chunked["t"].max() == 25


def test_batched_true_explains_what_cannot_be_batched():
    env = gym.make("LinBandit-Synthetic-v0", **SMALL)
    with pytest.raises(ValueError, match="batched=False"):
        linbandit_gym.run(env, OFUL(), seeds=2, batched=True)

    class Mine:
        def act(self, obs):
            return 0

        def update(self, obs, action, reward):
            pass

    with pytest.raises(ValueError, match="no batched version"):
        linbandit_gym.run("LinBandit-Synthetic-v0", Mine(), seeds=2, env_kwargs=SMALL, batched=True)
    with pytest.raises(ValueError, match="max_batch"):
        batched_run.run_batched(
            "LinBandit-Synthetic-v0", OFUL(), seeds=2, env_kwargs=SMALL, max_batch=0
        )
    # an env instance is not batched automatically: the loop over seeds runs
    records = linbandit_gym.run(env, OFUL(beta=0.1), seeds=2)
    assert sorted(records["seed"].unique()) == [0, 1]


def test_cli_batched_flag(tmp_path, capsys):
    args = [
        "run",
        "--env",
        "LinBandit-Synthetic-v0",
        "--agent",
        "OFUL",
        "--horizon",
        "15",
        "--seeds",
        "2",
        "--env-arg",
        "d=5",
        "--env-arg",
        "n_arms=4",
        "--no-progress",
    ]
    assert main(args + ["--batched", "--out", str(tmp_path / "b")]) == 0
    assert main(args + ["--no-batched", "--out", str(tmp_path / "u")]) == 0
    from linbandit_gym.experiments import load_records

    b, u = (load_records(tmp_path / n).sort_values(["seed", "t"], ignore_index=True) for n in "bu")
    pd.testing.assert_frame_equal(b.drop(columns=TIMING), u.drop(columns=TIMING))
    capsys.readouterr()
    bai = [
        "run",
        "--env",
        "LinBandit-BAI-v0",
        "--agent",
        "OFUL",
        "--horizon",
        "15",
        "--seeds",
        "2",
        "--batched",
    ]
    assert main(bai) == 2
    assert "batched=False" in capsys.readouterr().err


@pytest.mark.parametrize(
    "make_agent",
    [
        lambda: SOFUL(beta=0.1, sketch_size=3),
        lambda: CBSCFD(beta="theory", sketch_size=3),
        lambda: DBSLinUCB(beta=0.1, l0=2, eps=2.0, sentinel=False),
    ],
    ids=["SOFUL", "CBSCFD", "DBSLinUCB"],
)
def test_run_records_of_sketched_agents_equal_the_loop_over_seeds(make_agent):
    kw = dict(env_kwargs=dict(d=16, n_arms=8, horizon=60, alpha=0.4), seeds=[0, 3, 5])
    auto = linbandit_gym.run("LinBandit-HeavyTail-v0", make_agent(), **kw)
    loop = linbandit_gym.run("LinBandit-HeavyTail-v0", make_agent(), batched=False, **kw)
    pd.testing.assert_frame_equal(auto.drop(columns=TIMING), loop.drop(columns=TIMING))
    assert auto["agent"].iloc[0] == loop["agent"].iloc[0]
