"""Successive halving for ``linbandit tune`` (linbandit_gym.experiments.halving and tune's
``schedule="halving"``): the rungs, the ranking, brackets that continue runs from where they
stopped, and the tuned config that says which schedule chose it."""

import itertools
import math
import os
import sys

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym
from linbandit_gym.cli import main
from linbandit_gym.experiments.config import ConfigError, parse_config
from linbandit_gym.experiments.halving import play_bracket, ranking, rungs
from linbandit_gym.experiments.packing import ROUND_CPU_S
from linbandit_gym.experiments.tune import _brackets, tune

tune_module = sys.modules["linbandit_gym.experiments.tune"]

ENV = {"id": "LinBandit-Synthetic-v0", "args": {"d": 5, "n_arms": 4, "horizon": 60}, "label": "syn"}
BETAS, LAMS = [0.001, 0.1, 1.0, 10.0], [0.2, 20.0]


def _config(**tune_settings):
    return {
        "name": "h",
        "seeds": 1,
        "envs": [ENV],
        "agents": [{"name": "OFUL", "args": {"beta": 0.3, "lam": 1.0}}],
        "tune": {"beta": BETAS, "lam": LAMS, "seeds": 2, **tune_settings},
    }


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 500), horizon=st.integers(1, 5000), eta=st.integers(2, 6))
def test_rungs_shrink_the_pairs_by_eta_and_grow_the_rounds_to_the_horizon(n, horizon, eta):
    plan = rungs(n, horizon, eta)
    rounds, configs = [r.rounds for r in plan], [r.configs for r in plan]
    assert (
        rounds[-1] == horizon
        and rounds[0] >= 1
        and all(a < b for a, b in itertools.pairwise(rounds))
    )
    assert configs == [
        math.ceil(n / eta**k) for k in range(len(plan))
    ]  # the best ceil(n_k / eta) go on
    s = len(plan) - 1
    assert configs[-1] >= min(n, 2)  # the pick is made at the horizon, among two at least
    assert (eta**s < n or s == 0) and (
        eta ** (s + 1) >= n or horizon < eta ** (s + 1)
    )  # as many rungs as allowed
    for k, r in enumerate(rounds):  # rung k plays to T / eta^(s - k), to the nearest round
        assert abs(r - horizon / eta ** (s - k)) <= 0.5 or r == 1


@pytest.mark.parametrize(
    "n, horizon, eta", [(0, 10, 3), (3, 0, 3), (3, 10, 1), (True, 10, 3), (3.0, 10, 3)]
)
def test_rungs_refuse_what_is_not_a_count(n, horizon, eta):
    with pytest.raises(ValueError, match="must be an int"):
        rungs(n, horizon, eta)


@given(st.lists(st.sampled_from([0.0, 1.0, 2.5, float("nan")]), max_size=12))
def test_ranking_is_by_regret_ties_in_grid_order_nan_last(regrets):
    order = ranking(regrets)
    assert sorted(order) == list(range(len(regrets)))
    keys = [
        (math.isnan(regrets[i]), 0.0 if math.isnan(regrets[i]) else regrets[i], i) for i in order
    ]
    assert keys == sorted(keys)


@pytest.mark.parametrize("batched", [False, True])
def test_a_bracket_continues_each_pair_from_where_it_stopped_and_keeps_the_best(batched):
    # What a pair reached at each rung is the regret of its run played through at once, round for
    # round (the same episode, not a replay); the pairs that go on are the best by that regret.
    cfg = parse_config(
        {
            "name": "h",
            "seeds": [1000, 1001],
            "envs": [ENV],
            "agents": [
                {
                    "name": "OFUL",
                    "grid": {"beta": BETAS, "lam": LAMS},
                    "family": "OFUL",
                    "label": "OFUL [beta={beta}, lam={lam}]",
                }
            ],
        }
    )
    (bracket,) = _brackets(cfg, 2, batched=batched, batch_memory=2**30, max_batch=None)
    assert all(
        len(c["units"]) == (1 if batched else 2) for c in bracket["configs"]
    )  # a pair's seeds together
    result = play_bracket(bracket)
    plan = result["rungs"]
    assert plan == [[15, 8], [30, 4], [60, 2]]
    whole = {}
    for config in bracket["configs"]:
        records = linbandit_gym.run(
            "LinBandit-Synthetic-v0",
            linbandit_gym.registry.resolve_agent("OFUL", dict(config["args"])),
            seeds=[1000, 1001],
            env_kwargs=ENV["args"],
            batched=False,
            progress=False,
        )
        whole[config["label"]] = records.pivot(
            index="t", columns="seed", values="cumulative_regret"
        )
    alive = list(range(8))
    for k, (stop, _configs) in enumerate(plan):
        assert sorted(i for i, c in enumerate(result["configs"]) if c["rounds"] >= stop) == alive
        means = []
        for i in alive:
            entry = result["configs"][i]
            assert entry["regrets"][k] == whole[entry["label"]].loc[stop, [1000, 1001]].tolist()
            means.append(np.mean(entry["regrets"][k]))
        keep = plan[k + 1][1] if k + 1 < len(plan) else 1
        order = sorted(range(len(alive)), key=lambda j: (means[j], j))
        if k + 1 == len(plan):
            assert result["chosen"] == alive[order[0]]
        alive = sorted(alive[j] for j in order[:keep])
    played = sum(c["rounds"] * 2 for c in result["configs"])
    assert result["member_rounds"] == played == 2 * (8 * 15 + 4 * 15 + 2 * 30)


def test_halving_with_a_single_rung_picks_what_the_grid_picks(tmp_path):
    # eta above the number of pairs: one rung, every pair to the end, as on the grid
    grid = tune(_config(), tmp_path / "grid", schedule="grid", log=None)
    halving = tune(_config(), tmp_path / "halving", schedule="halving", eta=9, log=None)
    assert halving.tuned == grid.tuned
    assert halving.table["rounds"].tolist() == [60] * 8
    assert halving.table["final_regret"].tolist() == grid.table["final_regret"].tolist()


def test_the_halving_pick_has_the_regret_its_run_has_on_the_grid(tmp_path):
    grid = tune(_config(), tmp_path / "grid", schedule="grid", log=None)
    halving = tune(_config(), tmp_path / "halving", log=None)
    assert halving.schedule == "halving" and grid.schedule == "grid"
    pick = halving.tuned["syn"]["OFUL"]
    row = grid.table[(grid.table["beta"] == pick["beta"]) & (grid.table["lam"] == pick["lam"])]
    assert pick["final_regret"] == row["final_regret"].item()
    finalists = halving.table[halving.table["rounds"] == 60]
    assert (
        pick["final_regret"] == finalists["final_regret"].min() and len(finalists) == 3
    )  # 8 pairs: 8, 3
    assert halving.table["rounds_played"].sum() < grid.table["rounds_played"].sum() == 8 * 2 * 60


def test_the_tuned_config_says_which_schedule_chose_it(tmp_path):
    result = tune(_config(), tmp_path, log=None)
    text = result.config_path.read_text()
    assert text.startswith(
        "# tuned by `linbandit tune` (successive halving, eta = 3) on seeds 1000, 1001"
    )
    saved = yaml.safe_load(text)
    assert saved["tune"]["schedule"] == "halving" and saved["tune"]["eta"] == 3
    assert saved["tuned"]["syn"]["OFUL"] == {
        k: result.tuned["syn"]["OFUL"][k] for k in ("beta", "lam")
    }
    grid = tune(saved, tmp_path / "again", schedule="grid", log=None)
    again = yaml.safe_load(grid.config_path.read_text())["tune"]
    assert again["schedule"] == "grid" and "eta" not in again
    assert parse_config(saved).runs  # the tuned config is a config


def test_a_rerun_plays_only_the_brackets_not_saved_and_redoes_a_damaged_one(tmp_path):
    cfg = _config()
    cfg["envs"].append({**ENV, "args": {**ENV["args"], "n_arms": 3}, "label": "syn3"})
    lines = []
    first = tune(cfg, tmp_path, log=lines.append)
    assert any("2 brackets (agent x env), 0 already finished, 2 to run" in line for line in lines)
    saved = sorted((tmp_path / "halving").glob("*.json"))
    assert len(saved) == 2
    saved[0].write_text(
        saved[0].read_text().replace('"rounds": 60', '"rounds": 61', 1)
    )  # damaged since
    lines.clear()
    second = tune(cfg, tmp_path, log=lines.append)
    assert any("1 already finished, 1 to run" in line for line in lines)
    assert second.tuned == first.tuned


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one worker at most anyway")
def test_a_tiny_tuning_on_two_workers_plays_its_bracket_in_this_process(tmp_path, monkeypatch):
    planned = []

    def brackets(*args, **kwargs):
        planned.extend(_brackets(*args, **kwargs))
        return planned

    monkeypatch.setattr(tune_module, "_brackets", brackets)
    lines = []
    result = tune(_config(), tmp_path, workers=2, log=lines.append)
    (bracket,) = planned
    # the planner's estimate counts the member-rounds the bracket plays (a small state: each
    # round ROUND_CPU_S), and that is too little to pay for starting a worker process
    played = result.table["rounds_played"].sum()
    assert bracket["cpu_estimate_s"] == pytest.approx(played * ROUND_CPU_S)
    assert any(line.startswith("in this process, not on 2 worker processes:") for line in lines)
    assert result.cost.workers == 0


def test_a_bracket_too_large_to_hold_alive_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(ConfigError, match="alive at once .* --schedule grid"):
        tune(_config(), tmp_path / "t", batch_memory=1024, log=None)
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    "settings_, message",
    [
        ({"schedule": "fast"}, "tune.schedule: expected one of halving, grid"),
        ({"eta": 1}, "tune.eta: expected an int >= 2"),
    ],
)
def test_a_bad_schedule_in_the_config_is_named(tmp_path, settings_, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(_config(**settings_))


def test_the_command_line_takes_the_schedule_and_reproduce_wants_tune_with_it(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_config()))
    assert (
        main(["tune", str(path), "--out", str(tmp_path / "g"), "--schedule", "grid", "--quiet"])
        == 0
    )
    assert (
        yaml.safe_load((tmp_path / "g" / "tuned-config.yaml").read_text())["tune"]["schedule"]
        == "grid"
    )
    assert main(["tune", str(path), "--out", str(tmp_path / "h"), "--eta", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "rounds played" in out and "agent CPU (s)" in out
    assert yaml.safe_load((tmp_path / "h" / "tuned-config.yaml").read_text())["tune"]["eta"] == 2
    assert (
        main(
            [
                "reproduce",
                "synthetic",
                "--quick",
                "--schedule",
                "grid",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert "give them with --tune" in capsys.readouterr().err


# SOFUL's sketch of 2 rows discards mass past lam = 1e-4 within a few rounds at d = 20 (and is
# small enough to warn of nothing else): every seed of every pair of both brackets (one per env)
# raises the same DiscardedMassWarning
WARNED = {
    "name": "warned",
    "seeds": 1,
    "envs": [
        {"id": ENV["id"], "args": {"d": 20, "n_arms": n, "horizon": 12}, "label": f"syn{n}"}
        for n in (3, 4)
    ],
    "agents": [{"name": "SOFUL", "args": {"sketch_size": 2}}],
    "tune": {"beta": [0.1, 1.0], "lam": [1e-4], "seeds": 2},
}
DISCARDED = "SOFUL(sketch_size=2, lam=0.0001): Frequent Directions discarded more mass than lam"


@pytest.mark.filterwarnings("default::agents.DiscardedMassWarning")
@pytest.mark.parametrize("workers", [1, 2])  # 2: each bracket in a spawned worker process
def test_the_tuning_says_each_warning_of_its_brackets_once_naming_agent_and_env(
    workers, tmp_path, capfd
):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(WARNED))
    command = ["tune", str(path), "--out", str(tmp_path / "t"), "--workers", str(workers)]
    assert main(command) == 0
    captured = capfd.readouterr()  # the file descriptors: what worker processes write too
    message = DISCARDED
    said = [line for line in captured.err.splitlines() if "Warning" in line]
    first, second = ("syn3", "syn4") if "SOFUL on syn3: " in captured.err else ("syn4", "syn3")
    said_as = f"linbandit tune: warning: DiscardedMassWarning: SOFUL on {first}: {message}"
    assert len(said) == 1 and said[0].startswith(said_as), captured.err  # by the bracket first done
    assert "multiprocessing/process.py" not in captured.err
    listed = f"DiscardedMassWarning from SOFUL on {first}, SOFUL on {second}: {message}"
    assert "1 warning from the brackets" in captured.out and listed in captured.out  # the summary


@pytest.mark.filterwarnings("default::agents.DiscardedMassWarning")
@pytest.mark.parametrize("schedule", ["halving", "grid"])
def test_a_tuning_called_from_python_warns_once_at_the_callers_line(schedule, tmp_path):
    from agents import DiscardedMassWarning

    with pytest.warns(DiscardedMassWarning) as caught:
        result = tune(WARNED, tmp_path, schedule=schedule, log=None)
    assert [w.filename for w in caught] == [__file__]
    [(category, message)] = result.warnings
    assert category == "DiscardedMassWarning" and message.startswith(DISCARDED)
    sources = result.warnings[(category, message)]
    assert str(caught[0].message) == f"{sources[0]}: {message}"
    # each bracket (agent and env) on halving; on the grid each batch (entry and env: its 2 pairs x
    # 2 seeds advance together), whose members' warnings have the same words
    batches = [f"agents[0] (a batch of 4 runs of SOFUL on syn{n})" for n in (3, 4)]
    named = {"halving": ["SOFUL on syn3", "SOFUL on syn4"], "grid": batches}
    assert sorted(sources) == sorted(named[schedule])
