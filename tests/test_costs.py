"""Where a sweep's CPU time goes (linbandit_gym.experiments.costs), as the sweep measures it:
the agents' act/update, the rest of the runs, timing runs and their repeats, worker start-up and
the driver, in the ledger the sweep returns and prints."""

import pytest

from linbandit_gym.experiments.costs import CpuLedger, unit_cost
from linbandit_gym.experiments.sweep import load_runs, sweep

ENV = {"id": "LinBandit-Synthetic-v0", "args": {"d": 8, "n_arms": 5, "horizon": 80}, "label": "syn"}


def _config(seeds=3):
    return {
        "name": "c",
        "seeds": seeds,
        "envs": [ENV],
        "agents": [{"name": "OFUL", "grid": {"beta": [0.1, 1.0]}, "label": "OFUL beta={beta}"}],
    }


def test_the_ledger_adds_runs_and_never_counts_more_agent_time_than_a_run_took():
    ledger = CpuLedger()
    ledger.add_run(unit_cost(2.0, 1.5))
    ledger.add_run(unit_cost(1.0, 1.2, repeat_cpu_s=0.4))  # clocks read apart: capped at the whole
    ledger.add_run(None)  # a run that measured nothing
    assert (ledger.agents, ledger.rounds, ledger.timing_repeats) == (2.5, 0.5, 0.4)
    ledger += CpuLedger(workers=1.0, driver=0.5, figures=0.5)
    assert ledger.total == pytest.approx(5.0) and ledger.share_outside() == pytest.approx(0.5)
    assert CpuLedger().lines() == ["CPU time of the sweep: nothing run"]


def test_a_sweep_counts_its_agents_time_as_its_runs_record_it_and_prints_the_ledger(tmp_path):
    lines = []
    result = sweep(_config(), tmp_path, batched=False, log=lines.append)
    runs = load_runs(tmp_path)
    assert result.cost.agents == pytest.approx(runs["agent_time_s"].sum(), rel=1e-9)
    assert (
        result.cost.rounds > 0 and result.cost.driver > 0 and result.cost.workers == 0
    )  # in process
    seed0 = runs[runs["seed"] == 0]
    assert 0 < result.cost.timing_runs < result.cost.agents + result.cost.rounds
    assert (
        result.cost.timing_runs >= seed0["agent_time_s"].sum()
    )  # a timing run's CPU holds its agent's
    text = " ".join(lines)
    assert "CPU time of the sweep:" in text and "outside them" in text and "timing runs" in text
    again = sweep(_config(), tmp_path, log=None)  # nothing left to run: nothing counted
    assert again.cost.total == 0


def test_timing_runs_played_again_count_every_play(tmp_path):
    result = sweep(_config(seeds=1), tmp_path, timing_repeats=3, log=None)
    runs = load_runs(tmp_path)
    # each round keeps its least time over 3 plays: the plays together took 3 times that at least
    assert result.cost.agents >= 3 * runs["agent_time_s"].sum() * (1 - 1e-9)
    assert 0 < result.cost.timing_repeats < result.cost.timing_runs


def test_batched_members_count_their_batch_once_and_no_timing_runs_none(tmp_path):
    result = sweep(_config(), tmp_path, batched=True, timing_runs=False, log=None)
    runs = load_runs(tmp_path)
    assert (runs["time_shared_by"] > 1).all()
    assert result.cost.agents == pytest.approx(
        runs["agent_time_s"].sum(), rel=1e-9
    )  # shares add up
    assert result.cost.timing_runs == 0


@pytest.mark.slow
def test_worker_processes_count_their_start_up_apart(tmp_path, workers_cost_nothing):
    result = sweep(_config(), tmp_path, workers=2, log=None)
    assert result.cost.workers > 0  # importing torch and the agents, before the first unit
    assert result.cost.agents == pytest.approx(load_runs(tmp_path)["agent_time_s"].sum(), rel=1e-9)
