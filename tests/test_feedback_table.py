"""The final regret of each agent entry under each feedback schedule, side by side
(``linbandit_gym.experiments.feedback_table``)."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from linbandit_gym.experiments import load_runs, summary_table, sweep
from linbandit_gym.experiments.feedback_table import (
    entry_label,
    feedback_table,
    schedule_name,
    write_feedback_table,
)
from linbandit_gym.feedback import FeedbackSchedule
from linbandit_gym.specs import args_label
from linbandit_gym.text import mean_spread

ENV = {"id": "LinBandit-Synthetic-v0", "args": {"d": 5, "n_arms": 4, "horizon": 40}, "label": "syn"}


@given(
    st.text(alphabet="abcOFUL =0123456789.", min_size=1, max_size=20),
    st.integers(0, 500),
    st.integers(1, 50),
)
def test_entry_label_undoes_the_labelling_rule(label, delay, every):
    schedule = FeedbackSchedule(delay, every)
    assert entry_label(args_label(label, schedule.config_entries()), schedule) == label


def test_a_label_written_otherwise_is_kept_and_schedules_are_named():
    assert entry_label("OFUL late", FeedbackSchedule(10, 1)) == "OFUL late"
    assert (
        entry_label("OFUL feedback_delay=10", FeedbackSchedule(100, 1)) == "OFUL feedback_delay=10"
    )
    assert schedule_name(FeedbackSchedule(0, 4)) == "every 4"


def test_one_row_per_entry_one_column_per_schedule_with_the_summarys_numbers(tmp_path):
    config = {
        "seeds": 2,
        "envs": [ENV],
        "feedback_delay": [5, 0],
        "agents": [
            {"name": "OFUL", "args": {"beta": 0.1}},
            {"name": "OFUL", "grid": {"beta": [1.0]}, "update_every": [1, 3]},
            {"name": "OFUL", "args": {"lam": 2.0}, "label": "late by {feedback_delay}"},
        ],
    }
    assert sweep(config, tmp_path, log=None).ok
    runs = load_runs(tmp_path)
    table = feedback_table(runs)
    assert list(table.columns) == [
        "env",
        "agent",
        "no delay",
        "every 3",
        "delay 5",
        "delay 5, every 3",
    ]
    # "OFUL feedback_delay=5" is OFUL's row; a label of the config's own template is its own row
    assert sorted(table["agent"]) == ["OFUL", "OFUL beta=1.0", "late by 0", "late by 5"]
    rows = table.set_index("agent")
    assert rows.loc["OFUL", "every 3"] == "" and rows.loc["late by 0", "delay 5"] == ""
    summary = summary_table(runs).set_index("agent")
    for label, row, column in [
        ("OFUL", "OFUL", "no delay"),
        ("OFUL feedback_delay=5", "OFUL", "delay 5"),
        ("OFUL beta=1.0 feedback_delay=5 update_every=3", "OFUL beta=1.0", "delay 5, every 3"),
    ]:
        mean, std = summary.loc[label, ["final_regret_mean", "final_regret_std"]]
        assert rows.loc[row, column] == mean_spread(mean, std, 2, digits=1)
    written = write_feedback_table(tmp_path)
    assert (
        written == tmp_path / "summary_by_schedule.md" and "| OFUL beta=1.0 " in written.read_text()
    )


def test_runs_of_one_schedule_make_no_table(tmp_path):
    assert sweep({"seeds": 1, "envs": [ENV], "agents": [{"name": "OFUL"}]}, tmp_path, log=None).ok
    assert feedback_table(load_runs(tmp_path)).empty
    assert (
        write_feedback_table(tmp_path) is None
        and not (tmp_path / "summary_by_schedule.md").exists()
    )
    assert feedback_table(pd.DataFrame()).empty


@pytest.mark.parametrize("delays", [[0, 3]])
def test_schedules_of_several_envs_keep_their_rows_apart(tmp_path, delays):
    other = {**ENV, "args": {**ENV["args"], "d": 3}, "label": "small"}
    config = {
        "seeds": 1,
        "envs": [ENV, other],
        "feedback_delay": delays,
        "agents": [{"name": "OFUL"}],
    }
    assert sweep(config, tmp_path, log=None).ok
    table = feedback_table(load_runs(tmp_path))
    assert sorted(zip(table["env"], table["agent"])) == [("small", "OFUL"), ("syn", "OFUL")]
    assert (table[["no delay", "delay 3"]] != "").all().all()
