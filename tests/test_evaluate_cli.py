"""The evaluation loop (``linbandit_gym.run``, ``summarize``), a custom agent through it and through
``check_agent``, and the `linbandit` command's Python API."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import linbandit_gym
from agents import OFUL, check_agent
from linbandit_gym.cli import main, run_experiment
from linbandit_gym.evaluate import RECORD_COLUMNS, summarize

SMALL = dict(d=8, n_arms=6, horizon=40)


class GreedyMeanAgent:
    """A plain third-party agent: no import from `agents`, ridge-greedy in numpy."""

    def reset(self, seed=None):
        self.A, self.b = None, None

    def act(self, obs):
        if self.A is None:
            d = obs.shape[1]
            self.A, self.b = np.eye(d), np.zeros(d)
        return int(np.argmax(obs @ np.linalg.solve(self.A, self.b)))

    def update(self, obs, action, reward):
        x = np.asarray(obs[action], dtype=float)
        self.A += np.outer(x, x)
        self.b += reward * x


def test_run_returns_tidy_records_for_every_seed():
    records = linbandit_gym.run(
        "LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=[4, 9], env_kwargs=SMALL
    )
    assert list(records.columns[: len(RECORD_COLUMNS)]) == RECORD_COLUMNS
    assert len(records) == 80 and sorted(records["seed"].unique()) == [4, 9]
    for _, g in records.groupby("seed"):
        assert g["t"].tolist() == list(range(1, 41))
        np.testing.assert_allclose(g["cumulative_regret"], np.cumsum(g["regret"]))
        assert (g["regret"] >= 0).all()
        assert (
            g["agent_time"].is_monotonic_increasing
            and (g["wall_time"] >= g["agent_wall_time"]).all()
        )
    assert (records["memory_bytes"] > 0).all()


def test_run_is_reproducible_and_seeds_matter():
    a = linbandit_gym.run("LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=[1], env_kwargs=SMALL)
    b = linbandit_gym.run("LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=[1], env_kwargs=SMALL)
    c = linbandit_gym.run("LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=[2], env_kwargs=SMALL)
    cols = ["action", "reward", "regret"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert not a["reward"].equals(c["reward"])


def test_custom_agent_runs_through_run_and_check_agent():
    records = linbandit_gym.run(
        "LinBandit-Synthetic-v0", GreedyMeanAgent(), seeds=2, env_kwargs=SMALL
    )
    assert records["agent"].unique().tolist() == ["GreedyMeanAgent"]
    assert (records["memory_bytes"] == 0).all()
    check_agent(GreedyMeanAgent(), gym.make("LinBandit-Synthetic-v0", **SMALL))


def test_run_rejects_bad_arguments():
    with pytest.raises(ValueError, match="seeds"):
        linbandit_gym.run("LinBandit-Synthetic-v0", OFUL(), seeds=[], env_kwargs=SMALL)
    with pytest.raises(TypeError, match="act"):
        linbandit_gym.run("LinBandit-Synthetic-v0", object(), seeds=1, env_kwargs=SMALL)


def test_summarize_aggregates_over_seeds():
    records = linbandit_gym.run("LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=3, env_kwargs=SMALL)
    summary = summarize(records)
    finals = records[records["t"] == 40]["cumulative_regret"]
    assert summary.loc[0, "final_regret_mean"] == pytest.approx(finals.mean())
    assert summary.loc[0, "final_regret_std"] == pytest.approx(finals.std())
    assert summary.loc[0, "seeds"] == 3


def test_cli_python_api_with_a_custom_agent(tmp_path, capsys):
    code = main(
        [
            "run",
            "--env",
            "LinBandit-Synthetic-v0",
            "--agent",
            f"{__name__}:GreedyMeanAgent",
            "--horizon",
            "30",
            "--seeds",
            "2",
            "--env-arg",
            "d=5",
            "--env-arg",
            "n_arms=4",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "final regret" in out and "GreedyMeanAgent" in out
    assert (tmp_path / "regret.png").stat().st_size > 1000
    assert (tmp_path / "summary.csv").exists()
    from linbandit_gym.experiments import load_records, load_runs

    assert sorted(load_runs(tmp_path)["seed"]) == [0, 1]  # the layout of a sweep directory
    assert len(load_records(tmp_path)) == 2 * 30


def test_run_experiment_with_several_agents(tmp_path):
    records, summary = run_experiment(
        "LinBandit-Synthetic-v0",
        [("oful", OFUL(beta=0.1)), ("greedy", GreedyMeanAgent())],
        seeds=2,
        horizon=20,
        env_kwargs=dict(d=4, n_arms=3),
        out=tmp_path,
    )
    assert summary["agent"].tolist() == ["oful", "greedy"]
    assert set(records["t"]) == set(range(1, 21))


@pytest.mark.slow  # two interpreters start; `python -m linbandit_gym list` runs by default
def test_console_script_help_and_list():
    out = subprocess.run(
        [sys.executable, "-m", "linbandit_gym.cli", "--help"], capture_output=True, text=True
    )
    assert (
        out.returncode == 0
        and "run" in out.stdout
        and "list" in out.stdout
        and "demo" in out.stdout
    )
    out = subprocess.run(
        [sys.executable, "-m", "linbandit_gym.cli", "list"], capture_output=True, text=True
    )
    assert "LinBandit-Synthetic-v0" in out.stdout and "OFUL" in out.stdout


def test_run_says_how_its_times_were_measured(capsys):
    args = [
        "run",
        "--env",
        "LinBandit-Synthetic-v0",
        "--agent",
        "OFUL",
        "--env-arg",
        "d=8",
        "--horizon",
        "5",
        "--seeds",
        "8",
        "--no-progress",
    ]
    # a small state and 8 seeds (at least MIN_BATCH): batched by default
    assert main(args) == 0 and "batch share" in capsys.readouterr().out
    assert main(args + ["--no-batched"]) == 0 and "alone" in capsys.readouterr().out
    assert main(args[:-2] + ["2", "--no-progress"]) == 0  # 2 seeds: faster one by one
    assert "alone" in capsys.readouterr().out
