"""The agents' memory: states that cannot fit are refused before allocating, from the class's own
estimate (the estimators' formula, equal to what an agent reports), against the one memory limit
agents and envs share."""

from __future__ import annotations

import math
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents import AGENTS, CBSCFD, OFUL, SOFUL, DBSLinUCB, DBSLinUCBRFD
from agents._warnings import SketchSizeWarning
from agents.batched import batched
from agents.estimator_agent import arm_scratch_bytes
from agents.sketches import fd as fd_module
from agents.sketches.core import SketchCore
from agents.sketches.exact import ExactCovariance
from agents.sketches.fd import COMPRESS_SLACK, FrequentDirections

#: small d: the sketches hold more than OFUL's inverse; the tests about that warning assert it
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")
LINUX = sys.platform.startswith("linux") and Path("/proc/self/stat").exists()


def test_oful_of_a_billion_dimensions_is_refused_naming_d_and_the_classes_estimate():
    from linbandit_host.memory import format_count

    refused_message = r"^OFUL\(\) at d=1000000000 would allocate about 6.94 EiB \(8e\+18 bytes\)"
    with pytest.raises(ValueError, match=refused_message) as refused:
        OFUL(d=10**9)
    assert f"({format_count(OFUL.estimate_state_bytes(10**9, 1))} bytes)" in str(refused.value)
    assert str(refused.value).endswith("lower d")


def test_a_batch_is_refused_for_all_its_members(monkeypatch):
    """B members need B states: 2 members of 0.6 GB each fit in 2e9 bytes, 4 do not."""
    monkeypatch.setenv("LINBANDIT_MEMORY_LIMIT", "2e9")
    d = 8000  # OFUL's inverse: 8 d^2 = 512,000,000 bytes
    OFUL(d=d, batch_size=2, dtype=torch.float32)
    with pytest.raises(
        ValueError, match=r"^OFUL\(\) at d=8000 would allocate about .* for its 4 members"
    ):
        OFUL(d=d, batch_size=4)


def test_soful_buffers_are_sized_by_the_rows_fd_can_use():
    """FD never holds more than d useful rows: SOFUL(sketch_size=5000) at d = 12 holds what
    sketch_size = d + 1 holds (a basis of 12, and 12 coordinate rows plus the compression's slack
    of a quarter of the basis), not 2 x 5000 rows."""
    d = 12
    with pytest.warns(SketchSizeWarning):
        agent = SOFUL(sketch_size=5000, d=d)
    assert agent.memory_bytes() == FrequentDirections.peak_member_bytes(d, d + 1) + 8 * d
    assert agent.memory_bytes() < 2 * 5000 * d * 8 / 10
    rows = d + math.ceil(COMPRESS_SLACK * d)
    assert agent.estimator.core.V.shape[1:] == (d, d)
    assert agent.estimator.core.C.shape[1:] == (rows, d)


def test_a_full_basis_compresses_its_rows_once_per_slack_not_once_per_row(monkeypatch):
    """Once the basis spans R^d (2 l > d), the coordinate rows are compressed to their QR factor
    (d rows) when the slack past d is full: one O(d^3) factorization per ``slack`` rows, not one
    per row; the sketch equals the uncompressed one (the same S^T S)."""
    d, l, n = 8, 7, 60  # buffer 2 l = 14 > d + slack = 10: rows past 10 need compressing
    calls = []
    original = SketchCore.compress

    def counted(self, idx, start):
        calls.append(int(self.N[idx[0]]))
        return original(self, idx, start)

    monkeypatch.setattr(SketchCore, "compress", counted)
    rows = torch.as_tensor(np.random.default_rng(3).standard_normal((n, d)))
    fd = FrequentDirections(d=d, sketch_size=l, dtype=torch.float64)
    for x in rows:
        fd.update(x)
    slack = math.ceil(COMPRESS_SLACK * d)
    assert calls, "the stream never filled the slack: the test checks nothing"
    assert all(held == d + slack for held in calls)
    assert len(calls) <= n // slack
    # compressing changes nothing FD reads: the sketch of one that never compresses (its slack
    # holds the whole buffer) has the same shrinks and the same S^T S
    monkeypatch.setattr(fd_module, "COMPRESS_SLACK", 2.0)
    calls.clear()
    whole = FrequentDirections(d=d, sketch_size=l, dtype=torch.float64)
    for x in rows:
        whole.update(x)
    assert not calls
    np.testing.assert_allclose(whole.shrinkages, fd.shrinkages, rtol=1e-9, atol=1e-12)
    cov_whole, cov = (whole.S.mT @ whole.S).numpy(), (fd.S.mT @ fd.S).numpy()
    np.testing.assert_allclose(cov_whole, cov, rtol=1e-9, atol=1e-9 * np.abs(cov).max())


# -- one memory formula: the estimators' own, equal to what the agent reports ----------------------


def _peak(agent, d, n_arms, rounds, seed=0):
    rng = np.random.default_rng(seed)
    peak = 0
    for _ in range(rounds):
        arms = rng.standard_normal((n_arms, d))
        agent.update(arms, agent.act(arms), float(rng.standard_normal()))
        peak = max(peak, agent.memory_bytes())
    return peak


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    "cls, args",
    [
        (OFUL, {}),
        (SOFUL, {"sketch_size": 3}),
        (SOFUL, {"sketch_size": 6, "fast": False}),
        (CBSCFD, {"sketch_size": 5}),
    ],
)
def test_the_estimate_equals_what_the_agent_reports(cls, args, dtype):
    d, n_arms = 24, 6
    agent = cls(**args, dtype=dtype)
    peak = _peak(agent, d, n_arms, rounds=60)
    assert cls.estimate_state_bytes(d, n_arms, **args, dtype=dtype) == peak == agent.memory_bytes()
    assert (
        cls.estimate_memory_bytes(d, n_arms, **args, dtype=dtype)
        == arm_scratch_bytes(d, n_arms) + peak
    )
    assert cls.estimate_initial_memory_bytes(d, n_arms, **args) is None  # allocated whole


@pytest.mark.parametrize(
    "cls, args",
    [
        (DBSLinUCB, {"l0": 2, "eps": 0.5}),
        (DBSLinUCBRFD, {"l0": 3, "eps": 0.5}),
        (DBSLinUCB, {"l0": 2, "eps": 0.5, "memory_cap": False, "time_cap": False}),
    ],
)
def test_dbslinucb_estimates_its_first_block_exactly_and_bounds_its_peak_single_and_batched(
    cls, args
):
    """First allocation: equal to what the agent reports before its first row. Peak: a bound,
    documented as the single agent's peak plus the exact inverse (a batch keeps a member's row of
    the sketch state until every member is exact); reached by a single agent once exact."""
    d, n_arms = 24, 6
    agent = cls(**args, d=d)
    first = cls.estimate_state_bytes(d, n_arms, initial=True, **args)
    agent.act(np.random.default_rng(0).standard_normal((n_arms, d)))
    assert first == agent.memory_bytes() and first < cls.estimate_state_bytes(d, n_arms, **args)
    assert (
        cls.estimate_initial_memory_bytes(d, n_arms, **args) == arm_scratch_bytes(d, n_arms) + first
    )
    bound = cls.estimate_state_bytes(d, n_arms, **args)
    agent = cls(**args)
    peak = _peak(agent, d, n_arms, rounds=150)
    assert agent.exact_mode and peak <= bound
    exact = ExactCovariance.peak_member_bytes(d) + 8 * d
    assert agent.memory_bytes() == exact  # the exact phase: OFUL's state
    members = batched(cls(**args), 3)
    rng = np.random.default_rng(1)
    held = 0
    for _ in range(150):
        arms = rng.standard_normal((3, n_arms, d))
        members.update(arms, members.act(arms), rng.standard_normal(3))
        held = max(held, members.memory_bytes())
    assert held <= 3 * bound


def test_the_registry_asks_the_class_for_the_first_allocation():
    from linbandit_gym.registry import estimate_run_bytes, lookup_agent

    env = {"d": 40, "n_arms": 7, "horizon": 10}
    memory = estimate_run_bytes(
        lookup_agent("DBSLinUCB-RFD"), {"l0": 4}, "LinBandit-Synthetic-v0", env
    )
    assert memory.agent_first_bytes == DBSLinUCBRFD.estimate_initial_memory_bytes(40, 7, l0=4)
    assert memory.agent_bytes == DBSLinUCBRFD.estimate_memory_bytes(40, 7, l0=4)
    assert (
        estimate_run_bytes(
            lookup_agent("SOFUL"), {}, "LinBandit-Synthetic-v0", env
        ).agent_first_bytes
        is None
    )


# -- one memory limit ----------------------------------------------------------------------------


def test_the_agents_memory_limit_is_the_envs(monkeypatch):
    """One limit: agents and envs read it from linbandit_host.memory, and both obey the variable."""
    from agents import estimator_agent
    from linbandit_gym.envs import memory

    assert estimator_agent.memory_limit_bytes is memory.memory_limit_bytes
    monkeypatch.setenv("LINBANDIT_MEMORY_LIMIT", "1MB")
    with pytest.raises(ValueError, match=r"the limit \$LINBANDIT_MEMORY_LIMIT \(1 MiB\)"):
        OFUL(d=1000)
    assert memory.memory_limit_bytes() == 2**20
    assert memory.format_bytes(960_004_800_000) == "894 GiB"


# -- states that cannot fit, refused before allocating ---------------------------------------------


@pytest.mark.skipif(not LINUX, reason="RLIMIT_AS")
def test_agent_side_soful_d_1e8_is_refused_before_allocating():
    """Under a 6 GB address-space limit (so that today's attempt at 16 GB fails at once) and a
    1 GB memory limit, the constructor refuses naming d and the bytes."""

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))

    code = (
        "from agents import SOFUL\n"
        "try:\n    SOFUL(d=10**8, sketch_size=10)\nexcept ValueError as exc:\n    print('REFUSED', "
        "exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limited,
        env={**os.environ, "LINBANDIT_MEMORY_LIMIT": "1GB"},
    )
    assert done.stdout.startswith("REFUSED") and "d=100000000" in done.stdout, (
        done.stdout + done.stderr
    )


def test_agent_side_a_sketch_larger_than_memory_is_refused_naming_sketch_size(monkeypatch):
    """The sketch holds min(2 sketch_size, d) rows of d numbers (no more can be used): a huge
    sketch_size costs nothing at d = 500, and is refused at d = 200,000 (a d x d basis, its
    coordinates and their inverse: ~894 GiB, the class's own estimate), before anything is
    allocated, leaving the agent as it was."""
    monkeypatch.setenv("LINBANDIT_MEMORY_LIMIT", "8GB")
    agent = AGENTS["SOFUL"](sketch_size=100000)
    agent.reset(seed=0)
    too_large = (
        r"SOFUL\(sketch_size=100000\) at d=200000 would allocate about 894 GiB.*"
        r"lower sketch_size or d"
    )
    with pytest.raises(ValueError, match=too_large) as refused:
        agent.act(np.ones((3, 200_000), dtype=np.float32))
    estimate = AGENTS["SOFUL"].estimate_state_bytes(200_000, 3, sketch_size=100000)
    assert f"({estimate:,} bytes)" in str(refused.value)
    assert "LINBANDIT_MEMORY_LIMIT (8 GiB)" in str(refused.value)
    assert agent.d is None and agent.estimator is None and agent.t == 0  # nothing changed
    arms = np.eye(500, dtype=np.float32)[:3]
    with pytest.warns(
        UserWarning, match="more than OFUL's d x d inverse"
    ):  # it fits, and saves nothing
        agent.act(arms)  # d = 500 fits: the buffer is sized by the d rows FD can use
    assert agent.memory_bytes() < 10 * AGENTS["OFUL"].estimate_state_bytes(500, 3)
