"""The thread policy (1 torch/BLAS thread per run unless told otherwise, at every entry point)
and the agent clock (CPU time: a busy machine does not inflate the recorded ms/round)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
import yaml

import linbandit_gym
from agents import SOFUL
from linbandit_gym.cli import main
from linbandit_gym.experiments import reproduce as reproduce_module
from linbandit_gym.experiments.reproduce import reproduce
from linbandit_gym.experiments.sweep import sweep
from linbandit_gym.experiments.tune import tune
from linbandit_gym.threads import check_threads, cpu_clock, thread_limit, thread_state

TINY = dict(d=4, n_arms=3, horizon=3)


class ThreadProbe:
    """A random agent that notes the torch and BLAS threads it runs under."""

    seen: list[tuple[int, int | None]] = []

    def __init__(self, beta: float = 0.1, lam: float = 1.0):
        self.beta, self.lam = beta, lam

    def reset(self, seed=None):
        self.rng = np.random.default_rng(seed)

    def act(self, obs):
        from threadpoolctl import threadpool_info

        blas = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
        ThreadProbe.seen.append((torch.get_num_threads(), max(blas) if blas else None))
        return int(self.rng.integers(len(obs)))

    def update(self, obs, action, reward):
        pass


PROBE = f"{__name__}:ThreadProbe"


@pytest.fixture
def two_threads():
    """The process starts with 2 torch threads (conftest sets 1) so that the default shows."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    ThreadProbe.seen = []
    yield
    assert torch.get_num_threads() == 2, (
        "an entry point changed the caller's torch threads for good"
    )
    torch.set_num_threads(before)


def _config(**extra):
    return {
        "name": "probe",
        "seeds": 1,
        "envs": [{"id": "LinBandit-Synthetic-v0", "args": TINY}],
        "agents": [{"name": PROBE, "args": {"beta": 0.1, "lam": 1.0}}],
        **extra,
    }


def _entry_points(tmp_path, threads_kw: dict, cli_flag: list[str]):
    yield (
        "run()",
        lambda: linbandit_gym.run(
            "LinBandit-Synthetic-v0", ThreadProbe(), env_kwargs=TINY, **threads_kw
        ),
    )
    yield "sweep()", lambda: sweep(_config(), tmp_path / "s", log=None, **threads_kw)
    yield (
        "tune()",
        lambda: tune(
            _config(), tmp_path / "t", beta=[0.1], lam=[1.0], seeds=1, log=None, **threads_kw
        ),
    )
    yield "reproduce()", lambda: reproduce("probe", out=tmp_path / "r", log=None, **threads_kw)
    yield (
        "linbandit run",
        lambda: main(
            [
                "run",
                "--env",
                "LinBandit-Synthetic-v0",
                "--agent",
                PROBE,
                "--horizon",
                "3",
                "--env-arg",
                "d=4",
                "--env-arg",
                "n_arms=3",
                "--no-progress",
                "--out",
                str(tmp_path / "cru"),
                *cli_flag,
            ]
        ),
    )
    yield (
        "linbandit demo",
        lambda: main(
            [
                "demo",
                "--horizon",
                "3",
                "--seeds",
                "1",
                "--no-progress",
                "--out",
                str(tmp_path / "demo"),
                *cli_flag,
            ]
        ),
    )
    cfg = tmp_path / "probe.yaml"
    cfg.write_text(yaml.safe_dump(_config()))
    yield (
        "linbandit sweep",
        lambda: main(
            ["sweep", str(cfg), "--out", str(tmp_path / "cs"), "--quiet", "--no-plots", *cli_flag]
        ),
    )
    yield (
        "linbandit tune",
        lambda: main(
            [
                "tune",
                str(cfg),
                "--out",
                str(tmp_path / "ct"),
                "--beta",
                "0.1",
                "--lam",
                "1.0",
                "--seeds",
                "1",
                "--quiet",
                *cli_flag,
            ]
        ),
    )
    yield (
        "linbandit reproduce",
        lambda: main(["reproduce", "probe", "--out", str(tmp_path / "cr"), "--quiet", *cli_flag]),
    )


@pytest.mark.parametrize(
    "told", [None, pytest.param(2, marks=pytest.mark.slow)], ids=["default", "threads=2"]
)
def test_every_entry_point_runs_with_one_thread_unless_told_otherwise(
    told, two_threads, tmp_path, monkeypatch
):
    cfg = tmp_path / "probe-config.yaml"
    cfg.write_text(yaml.safe_dump(_config()))
    monkeypatch.setattr(reproduce_module, "EXPERIMENTS", {"probe": "a probe"})
    monkeypatch.setattr(reproduce_module, "config_path", lambda name, quick=False: cfg)
    monkeypatch.setattr("linbandit_gym.cli.demo_agents", lambda: [("probe", ThreadProbe())])
    kw = {} if told is None else {"threads": told}
    flag = [] if told is None else ["--threads", str(told)]
    expected = 1 if told is None else told
    for name, call in _entry_points(tmp_path, kw, flag):
        ThreadProbe.seen = []
        result = call()
        assert not isinstance(result, int) or result == 0, f"{name} failed"
        assert ThreadProbe.seen, f"{name} did not play"
        assert {t for t, _ in ThreadProbe.seen} == {expected}, (
            f"{name}: torch threads {ThreadProbe.seen[:3]}"
        )
        assert {b for _, b in ThreadProbe.seen} <= {expected, None}, (
            f"{name}: BLAS threads {ThreadProbe.seen[:3]}"
        )
        assert torch.get_num_threads() == 2, f"{name} left the caller's torch threads changed"
    # the run metadata of a sweep and of `linbandit run --out` says what was used
    metas = [
        json.loads(p.read_text())
        for d in ("s", "cru")
        for p in (tmp_path / d / "runs").glob("*.json")
    ]
    assert len({m["backend"] for m in metas}) == 2
    assert all(m["torch_threads"] == expected and m["threads"] == expected for m in metas)
    assert all(
        m["agent_clock"] == ("thread_cpu" if expected == 1 else "process_cpu") for m in metas
    )


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_threads_are_refused_before_anything_runs(bad, tmp_path):
    with pytest.raises(ValueError, match="threads"):
        linbandit_gym.run("LinBandit-Synthetic-v0", ThreadProbe(), env_kwargs=TINY, threads=bad)
    with pytest.raises(ValueError, match="threads"):
        sweep(_config(), tmp_path / "s", threads=bad, log=None)
    assert not (tmp_path / "s").exists()
    assert main(["run", "--env", "LinBandit-Synthetic-v0", "--agent", PROBE, "--threads", "0"]) == 2


def test_thread_limit_restores_and_the_clock_follows_the_policy():
    before = torch.get_num_threads()
    with thread_limit(2):
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before
    assert (
        cpu_clock(1)[1] == "thread_cpu" and cpu_clock(2)[1] == cpu_clock(None)[1] == "process_cpu"
    )
    assert check_threads(None) is None and check_threads(3) == 3


def test_thread_state_reports_the_blas_threads_threadpoolctl_finds_now():
    from threadpoolctl import threadpool_info

    def blas_now():
        counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
        return max(counts) if counts else None

    outside = thread_state()
    for threads in (1, 2, 1):  # the kept controller reads the limits live, not as first seen
        with thread_limit(threads):
            assert thread_state() == {"torch_threads": threads, "blas_threads": blas_now()}
            if blas_now() is not None:
                assert thread_state()["blas_threads"] == threads
    now = {"torch_threads": torch.get_num_threads(), "blas_threads": blas_now()}
    assert thread_state() == outside == now


def test_agent_time_is_cpu_time_and_wall_time_is_kept(monkeypatch):
    # A sleeping agent spends wall time but no CPU time: agent_time must not count the sleep.
    class Sleepy(ThreadProbe):
        def act(self, obs):
            time.sleep(0.01)
            return 0

    records = linbandit_gym.run(
        "LinBandit-Synthetic-v0", Sleepy(), env_kwargs=dict(d=4, n_arms=3, horizon=10)
    )
    last = records.iloc[-1]
    assert last["agent_wall_time"] >= 0.1 and last["wall_time"] >= last["agent_wall_time"]
    assert last["agent_time"] < 0.02, "agent_time counted time the agent spent asleep"
    summary = linbandit_gym.evaluate.summarize(records)
    assert summary["wall_ms_per_round"].iloc[0] >= 10.0 > summary["ms_per_round"].iloc[0]


_SPIN = "while True:\n    pass\n"


def _ms_per_round() -> float:
    records = linbandit_gym.run(
        "LinBandit-Synthetic-v0",
        SOFUL(sketch_size=10, beta=0.1, lam=1.0),
        seeds=[0],
        env_kwargs=dict(d=200, n_arms=20, horizon=300),
        batched=False,
    )
    return 1000.0 * records["agent_time"].iloc[-1] / 300


@pytest.mark.slow  # ~10-30 s, and on a machine already saturated by other jobs (load > 4x the
# cores) its caches and SMT siblings are shared too, so CPU time can inflate past 1.5x there.
# The fast stand-in: test_agent_time_is_cpu_time_and_wall_time_is_kept.
def test_recorded_ms_per_round_does_not_depend_on_a_busy_machine():
    """A busy process on each of the other cores (at least one) beside the run: the recorded CPU
    ms/round stays within 1.5x of the quiet run's. (Wall time on a loaded machine does not:
    measured 0.11 vs 0.38 ms/round with one spinner per core.)"""
    _ms_per_round()  # warm-up (imports, allocator)
    quiet, busy = [], []
    for _ in range(5):  # interleaved, best of 5: the machine's own noise hits both alike
        quiet.append(_ms_per_round())
        spinners = [
            subprocess.Popen([sys.executable, "-c", _SPIN])
            for _ in range(max(1, (os.cpu_count() or 1) - 1))
        ]
        try:
            time.sleep(0.2)  # let them start spinning
            busy.append(_ms_per_round())
        finally:
            for proc in spinners:
                proc.kill()
            for proc in spinners:
                proc.wait()
    ratio = min(busy) / min(quiet)
    assert 1 / 1.5 < ratio < 1.5, (
        f"busy {min(busy):.3f} vs quiet {min(quiet):.3f} ms/round (ratio {ratio:.2f})"
    )
