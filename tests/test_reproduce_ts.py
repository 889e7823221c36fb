"""`linbandit reproduce ts`: UCB against Thompson sampling on the exact, FD and DBS estimators,
on Synthetic and MNIST, with rewards at once and 10 or 100 rounds late."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from agents import AGENTS
from linbandit_gym.cli import main
from linbandit_gym.experiments import parse_config
from linbandit_gym.experiments.config import load_config, select_labels
from linbandit_gym.experiments.feedback_table import entry_label
from linbandit_gym.experiments.reproduce import config_path
from linbandit_gym.feedback import FeedbackSchedule

pytestmark = pytest.mark.skipif(
    not {"LinTS", "SLinTS", "DBSLinTS"} <= set(AGENTS),
    reason="Thompson sampling agents not registered",
)

#: Each estimator's UCB agent and its Thompson-sampling agent.
PAIRS = {"OFUL": "LinTS", "SOFUL": "SLinTS", "DBSLinUCB": "DBSLinTS"}
#: The arguments that say what an estimator holds (the same for both agents of a pair).
ESTIMATOR_ARGS = ("sketch_size", "l0", "eps", "sketch")


def _entries(cfg) -> dict[tuple[str, str, tuple], set[int]]:
    """(env, agent name, estimator arguments) -> the feedback delays its runs play."""
    out: dict[tuple[str, str, tuple], set[int]] = {}
    for run in cfg.runs:
        args = run.config["agent"]["args"]
        estimator = tuple((k, args[k]) for k in ESTIMATOR_ARGS if k in args)
        key = (run.env_label, run.config["agent"]["name"], estimator)
        out.setdefault(key, set()).add(run.config.get("feedback_delay", 0))
    return out


@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
def test_every_estimator_plays_ucb_and_thompson_sampling_under_every_delay(quick):
    cfg = parse_config(config_path("ts", quick=quick))
    entries = _entries(cfg)
    assert {env for env, _, _ in entries} == {"synthetic-d50", "mnist"}
    assert {r.config["env"]["id"] for r in cfg.runs} == {
        "LinBandit-Synthetic-v0",
        "LinBandit-MNIST-v0",
    }
    for (env, name, estimator), delays in entries.items():
        assert delays == {0, 10, 100}, (env, name)
        twin = PAIRS.get(name) or next(ucb for ucb, ts in PAIRS.items() if ts == name)
        assert entries.get((env, twin, estimator)) == delays, (env, name, estimator)
    for env in ("synthetic-d50", "mnist"):  # exact, FD and DBS on each env
        assert {name for e, name, _ in entries if e == env} == set(PAIRS) | set(PAIRS.values())
    families = {r.config["agent"]["name"]: r.family for r in cfg.runs}
    assert {families[n] for n in PAIRS} == {"UCB (optimism)"}  # one front per rule
    assert {families[n] for n in PAIRS.values()} == {"Thompson sampling"}
    labels = {r.agent_label for r in cfg.runs}
    for spec in cfg.plots:  # each figure shows both rules on every estimator, under one delay
        chosen = select_labels(labels, spec["agents"])
        names = {label.split()[0] for label in chosen}
        delays = {r.config.get("feedback_delay", 0) for r in cfg.runs if r.agent_label in chosen}
        if spec["name"] == "regret_exact":  # the exact pair under every delay
            assert (names, delays) == ({"OFUL", "LinTS"}, {0, 10, 100})
        else:
            assert names == set(PAIRS) | set(PAIRS.values()) and len(delays) == 1, spec["name"]


def test_the_full_synthetic_setting_is_the_one_thompson_sampling_is_held_to():
    """d = 50, K = 20, T = 2000, 10 seeds: where LinTS's final regret is compared with OFUL's
    (benchmarks/ts_regret_against_oful.py), the quick config a shorter and smaller version."""
    full, quick = parse_config(config_path("ts")), parse_config(config_path("ts", quick=True))
    env = next(r.config["env"]["args"] for r in full.runs if r.env_label == "synthetic-d50")
    assert (env["d"], env["n_arms"], env["horizon"], len(full.seeds)) == (50, 20, 2000, 10)
    assert len(quick.runs) < len(full.runs)
    assert {r.agent_label for r in quick.runs} == {r.agent_label for r in full.runs}


def test_reproduce_ts_quick_end_to_end_on_short_episodes(tmp_path, monkeypatch, capsys):
    """The quick config through ``linbandit reproduce ts --quick``, on 1 seed of 120 rounds
    (test-only override): the summary, the table of regret by delay and every figure."""
    raw = load_config(config_path("ts", quick=True))
    raw["horizon"], raw["seeds"] = 120, 1
    path = tmp_path / "ts-tiny.yaml"
    path.write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(
        "linbandit_gym.experiments.reproduce.config_path", lambda name, quick=False: path
    )
    out = tmp_path / "out"
    assert main(["reproduce", "ts", "--quick", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "final regret under each feedback schedule" in printed
    assert (
        "| env           | agent" in printed
        and "| no delay" in printed
        and "| delay 100" in printed
    )
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 2 * 6 * 3  # envs x agents x delays
    by_schedule = (out / "summary_by_schedule.md").read_text()
    assert by_schedule.strip() in printed
    entries = {
        (
            env,
            entry_label(
                agent,
                FeedbackSchedule(int(agent.rpartition("=")[2]) if "feedback_delay" in agent else 0),
            ),
        )
        for env, agent in zip(summary["env"], summary["agent"])
    }
    assert len(entries) == 12
    for env, entry in entries:  # one row per env and entry, a number under every delay
        row = next(
            line
            for line in by_schedule.splitlines()
            if f"| {env} " in line and f"| {entry} " in line
        )
        assert row.count("±") == 0 and len([cell for cell in row.split("|") if cell.strip()]) == 5
    for env in ("synthetic-d50", "mnist"):
        for stem in (
            "regret_no_delay",
            "regret_delay10",
            "regret_delay100",
            "regret_exact",
            "front_no_delay_time",
            "front_delay100_time",
        ):
            assert (out / "plots" / f"{stem}_{env}.png").stat().st_size > 10_000, (stem, env)


@pytest.mark.slow
def test_reproduce_ts_quick_shows_what_delay_costs_each_rule(tmp_path):
    out = tmp_path / "ts"
    assert main(["reproduce", "ts", "--quick", "--workers", "2", "--out", str(out), "--quiet"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    regret = summary.set_index(["env", "agent"])["final_regret_mean"]
    for env, agent in regret.index:
        if "feedback_delay" not in agent:  # rewards 100 rounds late cost every agent regret
            late = regret[env, f"{agent} feedback_delay=100"]
            assert late > 1.3 * regret[env, agent], (env, agent)
    synthetic = regret["synthetic-d50"]
    assert synthetic["LinTS"] < 2 * synthetic["OFUL"]
    for exact, sketched in (("OFUL", "SOFUL l=10"), ("LinTS", "SLinTS l=10")):  # l = d / 5 pays
        assert synthetic[sketched] > 2 * synthetic[exact]
    for stem in ("front_no_delay_time", "front_delay100_time", "regret_exact"):
        assert (out / "plots" / f"{stem}_mnist.png").exists()
