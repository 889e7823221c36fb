"""Final regret under each feedback schedule, side by side: what delayed feedback costs each agent.

A sweep that plays its agents under several feedback schedules (``feedback_delay: [0, 10, 100]``,
:mod:`linbandit_gym.feedback`) labels each run after its entry and the schedule
(:func:`~linbandit_gym.specs.args_label`: ``"OFUL"``, ``"OFUL feedback_delay=10"``). The table
here gives each entry one row per env and each schedule one column, so that a row reads how an
agent's final regret grows with the delay and two rows (UCB and Thompson sampling on one
estimator) compare at every delay.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..feedback import FeedbackSchedule
from ..records import check_output_dir, load_runs, write_text_atomic
from ..specs import args_label
from ..text import mean_spread
from .sweep import summary_table

__all__ = ["entry_label", "feedback_table", "schedule_name", "write_feedback_table"]


def schedule_name(schedule: FeedbackSchedule) -> str:
    """A schedule as a column head: ``"no delay"``, ``"delay 10"``, ``"delay 10, every 5"``.

    >>> schedule_name(FeedbackSchedule(0, 1)), schedule_name(FeedbackSchedule(10, 5))
    ('no delay', 'delay 10, every 5')
    """
    words = [f"delay {schedule.feedback_delay}"] if schedule.feedback_delay else []
    words += [f"every {schedule.update_every}"] if schedule.update_every != 1 else []
    return ", ".join(words) or "no delay"


def entry_label(label: str, schedule: FeedbackSchedule) -> str:
    """``label`` without the schedule's words that the labelling rule appends to it
    (``"SOFUL l=10 feedback_delay=10"`` -> ``"SOFUL l=10"``); a label written otherwise (a
    config's ``label:`` template) is returned as it is.

    >>> entry_label("SOFUL l=10 feedback_delay=10", FeedbackSchedule(10, 1))
    'SOFUL l=10'
    >>> entry_label("OFUL", FeedbackSchedule(0, 1))
    'OFUL'
    """
    suffix = args_label("", schedule.config_entries())
    return label[: -len(suffix)] if suffix and label.endswith(suffix) else label


def feedback_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std (over the seeds) of the final regret of every agent entry under every
    feedback schedule its runs played: one row per (env, entry), one column per schedule in
    increasing order of delay, then of ``update_every``; blank where an entry did not play a
    schedule. ``runs`` is :func:`~linbandit_gym.records.load_runs` of a bandit sweep; an empty
    frame when its runs played one schedule only (the summary table says all then).
    """
    if runs.empty or "final_regret" not in runs:
        return pd.DataFrame()
    runs = runs.assign(
        feedback_delay=runs.get("feedback_delay", 0), update_every=runs.get("update_every", 1)
    )
    table = summary_table(runs.assign(agent=runs["agent"] + "\0" + _schedule_keys(runs)))
    parts = table["agent"].str.split("\0", n=1, expand=True)
    schedules = [FeedbackSchedule(*map(int, key.split(","))) for key in parts[1]]
    if len(set(schedules)) < 2:
        return pd.DataFrame()
    order = sorted(set(schedules), key=lambda s: (s.feedback_delay, s.update_every))
    cells = pd.DataFrame(
        {
            "env": table["env"],
            "agent": [entry_label(a, s) for a, s in zip(parts[0], schedules)],
            "schedule": [schedule_name(s) for s in schedules],
            "regret": [
                mean_spread(m, s, n, digits=1)
                for m, s, n in zip(
                    table["final_regret_mean"], table["final_regret_std"], table["seeds"]
                )
            ],
        }
    )
    wide = cells.pivot_table(
        index=["env", "agent"], columns="schedule", values="regret", aggfunc="first", sort=False
    )
    return wide.reindex(columns=[schedule_name(s) for s in order]).fillna("").reset_index()


def write_feedback_table(out_dir: str | Path) -> Path | None:
    """Write :func:`feedback_table` of the sweep in ``out_dir`` to ``summary_by_schedule.md``
    (a Markdown table) and return its path; ``None``, and nothing written, when the runs played
    one feedback schedule only."""
    from .figures import markdown_table

    out = check_output_dir(out_dir)
    table = feedback_table(load_runs(out))
    if table.empty:
        return None
    return write_text_atomic(markdown_table(table) + "\n", out / "summary_by_schedule.md", out)


def _schedule_keys(runs: pd.DataFrame) -> pd.Series:
    """``"k,n"`` per run: its feedback delay and ``update_every`` (a key kept through the
    summary's grouping by label)."""
    return (
        runs["feedback_delay"].astype(int).astype(str)
        + ","
        + runs["update_every"].astype(int).astype(str)
    )
