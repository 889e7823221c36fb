"""Sweeps as batched programs: the planner packs runs that differ only in seed,
records equal the per-run path's apart from timing, every run is saved and resumed on its own."""

from __future__ import annotations

import importlib
import json
import time

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym.batched
from linbandit_gym.batched import MIN_BATCH
from linbandit_gym.cli import main
from linbandit_gym.envs.memory import records_bytes
from linbandit_gym.experiments import load_records, load_runs, parse_config, summary_table, sweep
from linbandit_gym.experiments.config import canonical_json
from linbandit_gym.experiments.packing import batch_key, member_bytes, pack, parse_bytes
from linbandit_gym.experiments.sweep import Interrupted, is_finished
from linbandit_gym.experiments.tune import tune
from linbandit_gym.loop import TIMING_COLUMNS

#: small d: the sketches of these sweeps hold more than OFUL's inverse, which is warned (asserted in
#: tests/test_agent_warnings.py); not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")

sweep_module = importlib.import_module(
    "linbandit_gym.experiments.sweep"
)  # the package exports the function

TIMING = set(TIMING_COLUMNS)
TIMING_SUMMARY = {
    "agent_time_s",
    "agent_wall_time_s",
    "wall_time_s",
    "ms_per_round",
    "wall_ms_per_round",
    "time_shared_by",
}
KEYS = ["env", "agent", "seed", "t"]
ENV = {
    "id": "LinBandit-Synthetic-v0",
    "args": {"d": 16, "n_arms": 5, "horizon": 30},
    "label": "syn",
}
# OFUL and every sketched family, 2 betas, 3 seeds: 5 x 2 x 3 = 30 runs
GRID = {
    "name": "batched-grid",
    "seeds": 3,
    "envs": [ENV],
    "agents": [
        {"name": "OFUL", "grid": {"beta": [0.05, 0.5]}},
        {"name": "SOFUL", "args": {"sketch_size": 3}, "grid": {"beta": [0.05, 0.5]}},
        {"name": "CBSCFD", "args": {"sketch_size": 3}, "grid": {"beta": [0.05, 0.5]}},
        {
            "name": "DBSLinUCB",
            "args": {"l0": 2, "eps": 1.0, "sketch": "fd"},
            "grid": {"beta": [0.05, 0.5]},
            "label": "DBS-FD {beta}",
        },
        {
            "name": "DBSLinUCB",
            "args": {"l0": 2, "eps": 1.0, "sketch": "rfd"},
            "grid": {"beta": [0.05, 0.5]},
            "label": "DBS-RFD {beta}",
        },
    ],
}
N_RUNS = 30


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(KEYS).reset_index(drop=True)


def _untimed(frame: pd.DataFrame) -> pd.DataFrame:
    return _sorted(frame)[[c for c in frame.columns if c not in TIMING]]


@pytest.fixture(scope="module")
def per_run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("per-run")
    result = sweep(GRID, out, batched=False, log=None)
    assert result.ok and len(result.executed) == N_RUNS
    return out


@pytest.fixture(scope="module")
def batched_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("batched")
    lines = []
    result = sweep(GRID, out, batched=True, timing_runs=False, log=lines.append)  # every seed
    assert result.ok and len(result.executed) == N_RUNS
    assert any(
        line.startswith(f"batched: {N_RUNS} runs in 5 batches of 6 members") for line in lines
    ), lines
    return out


def _same_runs(per_run_dir, batched_dir, batch_size) -> None:
    """Records and metadata of every run equal the per-run path's apart from timing; each batched
    run's ``batch_size`` is ``batch_size(its per-run metadata)``."""
    pd.testing.assert_frame_equal(
        _untimed(load_records(batched_dir)), _untimed(load_records(per_run_dir)), check_exact=True
    )
    for path in sorted((per_run_dir / "runs").glob("*.json")):
        one, many = (
            json.loads(path.read_text()),
            json.loads((batched_dir / "runs" / path.name).read_text()),
        )
        assert "batch_size" not in one and many.get("batch_size") == batch_size(one)
        for key in (
            "run_id",
            "config",
            "seed",
            "agent_label",
            "env_label",
            "family",
            "device",
            "torch_threads",
        ):
            assert many[key] == one[key], key
        untimed = {k: v for k, v in one["summary"].items() if k not in TIMING_SUMMARY}
        assert {k: v for k, v in many["summary"].items() if k not in TIMING_SUMMARY} == untimed
        assert many["summary"]["agent_time_s"] > 0


def test_records_and_metadata_equal_the_per_run_path(per_run_dir, batched_dir):
    _same_runs(per_run_dir, batched_dir, lambda meta: 6)  # 2 betas x 3 seeds


def test_the_first_seed_of_every_configuration_is_timed_alone(per_run_dir, tmp_path):
    """By default the sweep plays seed 0 of each configuration on its own, and the tables of cost
    read those times, not the shares of batches the other seeds record."""
    lines = []
    result = sweep(GRID, tmp_path, batched=True, log=lines.append)
    assert result.ok and len(result.executed) == N_RUNS
    assert any(
        line.startswith(
            f"batched: {N_RUNS - 10} runs in 5 batches of 4 members, 10 runs on their own "
            "(seed 0 of each configuration timed alone)"
        )
        for line in lines
    ), lines
    _same_runs(per_run_dir, tmp_path, lambda meta: None if meta["seed"] == 0 else 4)
    records = load_records(tmp_path)
    assert ((records["seed"] == 0) == (records["time_shared_by"] == 1)).all()
    assert set(records.loc[records["seed"] > 0, "time_shared_by"]) == {4}
    runs = load_runs(tmp_path)
    table = summary_table(runs)
    assert (
        (table["timing"] == "alone").all()
        and (table["timed_seeds"] == 1).all()
        and (table["seeds"] == 3).all()
    )
    alone = runs[runs["seed"] == 0].set_index("agent")["ms_per_round"]
    assert np.allclose(table.set_index("agent")["ms_per_round"], alone[table["agent"]].to_numpy())
    shared = summary_table(
        load_runs(per_run_dir).assign(time_shared_by=3)
    )  # no run timed alone: say so
    assert (shared["timing"] == "batch share").all() and (shared["timed_seeds"] == 3).all()
    from linbandit_gym.experiments.figures import _shared_times_note, format_table

    assert _shared_times_note(table) == "" and "shares of batched runs" in _shared_times_note(
        shared
    )
    assert set(format_table(table)["timing"]) == {"alone, 1 seed"}
    assert set(format_table(shared)["timing"]) == {"batch share, 3 seeds"}


def _kill_saving_and_resume(cfg: dict, out, monkeypatch, kill_at: int, per_run_dir) -> list[str]:
    """Ctrl-C while the sweep saves its ``kill_at + 1``-th run, then resume; check nothing is lost
    or done twice and the records equal the per-run path's. Returns the log lines of the resumed
    sweep."""
    saved = []
    real_save = sweep_module.save_run

    def save_then_die(out_dir, records, meta):
        if len(saved) == kill_at:
            raise KeyboardInterrupt
        saved.append(meta["run_id"])
        return real_save(out_dir, records, meta)

    specs = {spec.run_id: spec for spec in parse_config(cfg).runs}
    monkeypatch.setattr(sweep_module, "save_run", save_then_die)
    with pytest.raises(Interrupted, match=f"{kill_at}/{len(specs)} runs saved"):
        sweep(cfg, out, batched=True, timing_runs=False, log=None)
    monkeypatch.setattr(sweep_module, "save_run", real_save)
    assert [rid for rid in specs if is_finished(out, specs[rid])] == [
        rid for rid in specs if rid in saved
    ]
    before = {rid: (out / "runs" / f"{rid}.json").stat().st_mtime_ns for rid in saved}
    lines = []
    result = sweep(cfg, out, batched=True, timing_runs=False, log=lines.append)
    assert sorted(result.skipped) == sorted(saved)
    assert sorted(result.executed) == sorted(set(specs) - set(saved)) and result.ok
    assert {rid: (out / "runs" / f"{rid}.json").stat().st_mtime_ns for rid in saved} == before
    assert sorted(p.stem for p in (out / "runs").glob("*.json")) == sorted(
        specs
    )  # each run exactly once
    records = load_records(out)
    assert not records.duplicated(KEYS).any()
    pd.testing.assert_frame_equal(
        _untimed(records), _untimed(load_records(per_run_dir)), check_exact=True
    )
    return lines


def test_kill_in_the_middle_of_a_batch_redoes_only_unfinished_runs(
    per_run_dir, tmp_path, monkeypatch
):
    # Ctrl-C while the fifth member of the first batch (2 betas x 3 seeds) is saved
    lines = _kill_saving_and_resume(GRID, tmp_path, monkeypatch, 4, per_run_dir)
    assert any("runs in 5 batches of 2 to 6 members" in line for line in lines), (
        lines
    )  # the cut batch's rest is packed again


def test_a_failed_batch_fails_each_member_and_is_retried(tmp_path, monkeypatch):
    cfg = {"seeds": 3, "envs": [ENV], "agents": [{"name": "SOFUL", "args": {"sketch_size": 3}}]}

    def broken(*args, **kwargs):
        raise RuntimeError("injected batch failure")

    monkeypatch.setattr(linbandit_gym.batched, "play_members", broken)
    first = sweep(cfg, tmp_path, batched=True, timing_runs=False, log=None)
    assert len(first.failed) == 3 and not first.executed
    for rid in first.failed:
        assert (
            "injected batch failure"
            in json.loads((tmp_path / "failed" / f"{rid}.json").read_text())["error"]
        )
    monkeypatch.undo()
    second = sweep(cfg, tmp_path, batched=True, timing_runs=False, log=None)
    assert sorted(second.executed) == sorted(first.failed) and second.ok
    assert not list((tmp_path / "failed").glob("*.json"))


@pytest.mark.slow
def test_batches_go_to_two_workers_as_units(per_run_dir, tmp_path, workers_cost_nothing):
    cfg = {**GRID, "agents": GRID["agents"][:2]}
    result = sweep(cfg, tmp_path, workers=2, batched=True, timing_runs=False, log=None)
    assert result.ok and len(result.executed) == 12
    metas = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*.json")]
    assert {m["batch_size"] for m in metas} == {6} and len({m["pid"] for m in metas}) == 2
    mine = _untimed(load_records(tmp_path))
    theirs = _untimed(load_records(per_run_dir))
    theirs = theirs[theirs["agent"].isin(set(mine["agent"]))].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, theirs, check_exact=True)


# -- the planner -------------------------------------------------------------------------


def _partition_ok(units, specs):
    assert sorted(s.run_id for u in units for s in u) == sorted(
        s.run_id for s in specs
    )  # each run exactly once
    for unit in units:
        assert len({batch_key(s) for s in unit}) == 1 and len({s.run_id for s in unit}) == len(unit)


@settings(max_examples=25, deadline=None)
@given(
    seeds=st.lists(st.integers(0, 20), min_size=1, max_size=12, unique=True),
    max_batch=st.integers(1, 8),
    budget_members=st.integers(1, 10),
    workers=st.integers(1, 4),
)
def test_plan_partitions_the_runs_within_the_bounds(seeds, max_batch, budget_members, workers):
    cfg = parse_config(
        {
            "seeds": seeds,
            "envs": [ENV],
            "agents": [{"name": "SOFUL", "args": {"sketch_size": 3}}, {"name": "OFUL"}],
        }
    )
    shapes = {canonical_json(cfg.runs[0].config["env"]): (5, 16)}
    records = records_bytes(ENV["args"]["horizon"])  # every member keeps its own records
    own = {
        "SOFUL": member_bytes("SOFUL", {"sketch_size": 3}, 5, 16) + records,
        "OFUL": member_bytes("OFUL", {}, 5, 16) + records,
    }
    budget = budget_members * max(own.values())
    units = pack(
        cfg.runs,
        shapes=shapes,
        max_batch=max_batch,
        batch_memory=budget,
        workers=workers,
        batched=True,
    )
    _partition_ok(units, cfg.runs)
    for unit in units:
        assert len(unit) <= max_batch and (
            len(unit) == 1 or len(unit) * own[unit[0].config["agent"]["name"]] <= budget
        )
    assert len(units) >= min(
        workers, 2 * len(seeds)
    )  # every worker gets a unit when there are enough runs
    if workers == 1 and max_batch >= len(seeds) and budget_members >= len(seeds):
        assert len(units) == 2  # one batch per agent
    default = pack(
        cfg.runs, shapes=shapes, max_batch=max_batch, batch_memory=budget, workers=workers
    )
    _partition_ok(default, cfg.runs)  # by default a batch has MIN_BATCH members, or runs alone
    assert all(len(unit) == 1 or MIN_BATCH <= len(unit) <= max_batch for unit in default)
    assert pack(cfg.runs, shapes=shapes, batched=False) == [[s] for s in cfg.runs]


class MyOFUL(__import__("agents").OFUL):
    """A user's agent class: no batched twin."""


def test_plan_falls_back_to_single_runs():
    custom = parse_config({"seeds": 3, "envs": [ENV], "agents": [{"name": f"{__name__}:MyOFUL"}]})
    bai = parse_config(
        {
            "seeds": 3,
            "envs": [{"id": "LinBandit-BAI-v0", "args": {}}],
            "agents": [{"name": "GAllocation"}],
        }
    )
    spectral = parse_config(
        {
            "seeds": 3,
            "envs": [ENV],
            "agents": [{"name": "SOFUL", "args": {"sketch_size": 3}}],
            "record": {"spectral_error": 10},
        }
    )
    matrix = parse_config(
        {
            "task": "matrix-approx",
            "seeds": 3,
            "data": {"n": 20, "d": 6, "every": 5},
            "agents": [{"name": "SOFUL", "args": {"sketch_size": 3}}],
        }
    )
    for cfg in (custom, bai, spectral, matrix):
        assert pack(cfg.runs) == [[s] for s in cfg.runs]
    ok = parse_config(
        {"seeds": 3, "envs": [ENV], "agents": [{"name": "SOFUL", "args": {"sketch_size": 3}}]}
    )
    # a budget below one member
    assert pack(ok.runs, batch_memory=1, batched=True) == [[s] for s in ok.runs]
    assert pack(ok.runs, batched=True) == [ok.runs]
    assert pack(ok.runs) == [[s] for s in ok.runs]  # by default, under MIN_BATCH members run alone


def test_member_bytes_asks_the_agent_class():
    """The planner's estimate is the class's (tests/test_agent_costs.py checks that it bounds what
    an agent holds); a class that cannot say never shares a budget."""
    from agents import SOFUL, DBSLinUCB

    assert member_bytes("SOFUL", {"sketch_size": 4}, 5, 24) == SOFUL.estimate_memory_bytes(
        24, 5, sketch_size=4
    )
    assert member_bytes("soful", {}, 5, 24) == SOFUL.estimate_memory_bytes(
        24, 5
    )  # names are case-insensitive
    assert member_bytes(
        "DBSLinUCB-FD", {"memory_cap": False}, 5, 24
    ) == DBSLinUCB.estimate_memory_bytes(24, 5, memory_cap=False)
    assert member_bytes(f"{__name__}:MyOFUL", {}, 5, 24) == float("inf")


def test_parse_bytes_and_cli_flags(tmp_path, capsys):
    assert (
        parse_bytes("2GiB") == 2 * 1024**3
        and parse_bytes("512M") == 512 * 1024**2
        and parse_bytes(4096) == 4096
    )
    for bad in ("lots", "2 parsecs", 0, "-1G"):
        with pytest.raises(ValueError, match="e.g. 8GiB|positive"):
            parse_bytes(bad)
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "nope.yaml", "--batch-memory", "lots"])
    assert exc.value.code == 2
    assert "--batch-memory='lots' is not a memory size" in capsys.readouterr().err
    path = tmp_path / "cfg.yaml"
    path.write_text(json.dumps({"seeds": 2, "envs": [ENV], "agents": [{"name": "OFUL"}]}))
    assert (
        main(
            [
                "sweep",
                str(path),
                "--out",
                str(tmp_path / "a"),
                "--no-batched",
                "--no-plots",
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "sweep",
                str(path),
                "--out",
                str(tmp_path / "b"),
                "--batched",
                "--no-timing-runs",
                "--no-plots",
                "--quiet",
            ]
        )
        == 0
    )
    a, b = load_runs(tmp_path / "a"), load_runs(tmp_path / "b")
    assert a["final_regret"].tolist() == b["final_regret"].tolist()
    metas = [json.loads(p.read_text()) for p in (tmp_path / "b" / "runs").glob("*.json")]
    assert [m.get("batch_size") for m in metas] == [2, 2]
    assert (
        main(
            [
                "sweep",
                str(path),
                "--out",
                str(tmp_path / "c"),
                "--max-batch",
                "1",
                "--no-plots",
                "--quiet",
            ]
        )
        == 0
    )
    for unbatched in ("a", "c"):
        assert not any(
            "batch_size" in json.loads(p.read_text())
            for p in (tmp_path / unbatched / "runs").glob("*.json")
        )


def test_tune_chooses_the_same_batched_or_not(tmp_path):
    cfg = {
        "seeds": 1,
        "envs": [ENV],
        "agents": [{"name": "SOFUL", "args": {"sketch_size": 3}}],
        "tune": {"beta": [0.05, 1.0], "lam": [0.2, 2.0], "seeds": 3, "schedule": "grid"},
    }
    one = tune(cfg, tmp_path / "one", batched=False, log=None)
    many = tune(cfg, tmp_path / "many", log=None)
    assert one.tuned == many.tuned
    timing = ["agent_cpu_s"]  # the rest is the same batched or not
    pd.testing.assert_frame_equal(one.table.drop(columns=timing), many.table.drop(columns=timing))
    sizes = {
        json.loads(p.read_text()).get("batch_size")
        for p in (tmp_path / "many" / "runs").glob("*.json")
    }
    assert sizes == {
        12
    }  # the 4 grid points x 3 seeds in one batch (members differ in lam and beta)


def test_halving_chooses_the_same_with_a_pair_s_seeds_batched_or_not(tmp_path):
    cfg = {
        "seeds": 1,
        "envs": [ENV],
        "agents": [{"name": "SOFUL", "args": {"sketch_size": 3}}],
        "tune": {"beta": [0.05, 0.3, 1.0], "lam": [0.2, 2.0], "seeds": 3},
    }
    one = tune(cfg, tmp_path / "one", batched=False, log=None)
    many = tune(cfg, tmp_path / "many", batched=True, log=None)
    assert one.tuned == many.tuned
    timing = ["agent_cpu_s"]
    pd.testing.assert_frame_equal(one.table.drop(columns=timing), many.table.drop(columns=timing))
    assert one.table["rounds"].tolist() != [ENV["args"]["horizon"]] * 6  # some pairs stopped early


# -- players sharing a vector-env member (runs of one seed in a batch draw its arm sets once) ----


def _unshared_rounds(env_id, kwargs, seeds, actions):
    """What separate members (one per player, seeded as it) give the players, round by round."""
    venv = gym.make_vec(env_id, num_envs=len(seeds), **kwargs)
    obs, _ = venv.reset(seed=list(seeds))
    out = [obs]
    for a in actions:
        obs, r, _, truncated, info = venv.step(np.asarray(a))
        out.append(
            (
                obs,
                r,
                truncated,
                info["expected_reward"],
                info["best_expected_reward"],
                info["regret"],
            )
        )
    venv.close()
    return out


@settings(max_examples=10, deadline=None)
@given(
    members=st.lists(st.integers(0, 2), min_size=3, max_size=7).filter(
        lambda m: set(m) == {0, 1, 2}
    ),
    data=st.data(),
)
@pytest.mark.parametrize(
    "env_id, kwargs",
    [
        (
            "LinBandit-Synthetic-v0",
            {"d": 6, "n_arms": 4, "horizon": 5, "noise_std": 0.5},
        ),  # Gaussian noise, batched
        (
            "LinBandit-Digits-v0",
            {"horizon": 5},
        ),  # its own reward hook (no noise), looped per member
    ],
)
def test_players_sharing_a_member_get_what_their_own_member_gives(env_id, kwargs, members, data):
    seeds = [11, 3, 7]
    horizon = kwargs["horizon"]
    K = gym.make_vec(env_id, num_envs=1, **kwargs).single_action_space.n
    actions = [
        data.draw(st.lists(st.integers(0, K - 1), min_size=len(members), max_size=len(members)))
        for _ in range(horizon)
    ]
    want = _unshared_rounds(env_id, kwargs, [seeds[m] for m in members], actions)
    venv = gym.make_vec(env_id, num_envs=3, **kwargs).unwrapped
    obs, _ = venv.reset(seed=seeds)
    np.testing.assert_array_equal(obs[members], want[0])
    for t, a in enumerate(actions):
        obs, r, truncated, info = venv.step_players(np.asarray(a), np.asarray(members))
        w_obs, w_r, w_trunc, w_exp, w_best, w_regret = want[t + 1]
        if t + 1 < horizon:  # the last round draws no next arm set
            np.testing.assert_array_equal(obs[members], w_obs)
        np.testing.assert_array_equal(r, w_r)  # bit for bit
        np.testing.assert_array_equal(truncated[members], w_trunc)
        for key, value in (
            ("expected_reward", w_exp),
            ("best_expected_reward", w_best),
            ("regret", w_regret),
        ):
            np.testing.assert_array_equal(info[key], value)
    with pytest.raises(RuntimeError, match="reset them"):
        venv.step_players(np.zeros(len(members), dtype=np.int64), np.asarray(members))
    venv.close()


def test_step_players_rejects_bad_input_and_arm_dependent_draws():
    from linbandit_gym.envs.synthetic import SyntheticLinBanditEnv
    from linbandit_gym.vector import LinBanditVectorEnv

    venv = gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, d=4, n_arms=3, horizon=4).unwrapped
    obs, _ = venv.reset(seed=[0, 1])
    for members, match in (
        ([0, 0], "every member needs a player"),
        ([0, 2], r"in \[0, 2\)"),
        ([], "1-D"),
    ):
        with pytest.raises(ValueError, match=match):
            venv.step_players(
                np.zeros(len(members), dtype=np.int64), np.asarray(members, dtype=np.int64)
            )
    with pytest.raises(ValueError, match="one arm index per player"):
        venv.step_players(np.zeros(2, dtype=np.int64), np.asarray([0, 1, 1]))
    assert (
        venv.step_players(np.zeros(2, dtype=np.int64), np.asarray([0, 1]))[0] != obs
    ).any()  # a round was played

    class ArmDependentNoise(SyntheticLinBanditEnv):
        def _sample_reward(self, mean, rng):
            return float(
                mean + (rng.standard_normal() if mean > 0 else 0.0)
            )  # draws only for some arms

    odd = LinBanditVectorEnv(1, env_class=ArmDependentNoise, d=4, n_arms=8, horizon=50)
    odd.reset(seed=0)
    with pytest.raises(RuntimeError, match="players cannot share a member"):
        for _ in range(50):
            means = odd._means[0]
            odd.step_players(
                np.array([int(np.argmax(means)), int(np.argmin(means))]), np.array([0, 0])
            )


# -- batches whose members differ in lam, beta, sketch_size ... (the class's per_member_args) -----

# lam x beta x sketch_size (l0 for DBSLinUCB) x seeds; each label names the member's arguments
MIXED = {
    "name": "mixed-grid",
    "seeds": 2,
    "envs": [ENV],
    "agents": [
        {
            "name": "OFUL",
            "grid": {"lam": [0.5, 2.0], "beta": [0.05, 0.5]},
            "label": "OFUL lam={lam} beta={beta}",
        },
        {
            "name": "SOFUL",
            "grid": {"lam": [0.5, 2.0], "beta": [0.05, 0.5], "sketch_size": [3, 5]},
            "label": "SOFUL l={sketch_size} lam={lam} beta={beta}",
            "family": "SOFUL",
        },
        {
            "name": "DBSLinUCB",
            "args": {"sketch": "rfd", "eps": 1.0},
            "grid": {"lam": [0.5, 2.0], "beta": [0.05, 0.5], "l0": [2, 3]},
            "label": "DBS l0={l0} lam={lam} beta={beta}",
        },
    ],
}
N_MIXED = 8 + 16 + 16


def _members_per_batch(name: str) -> int:
    """Runs of the agent entry ``name`` of MIXED in one batch: 2 seeds x its grid's arguments that
    the class lets members differ in (its ``per_member_args``)."""
    from agents import AGENTS

    grid = next(a["grid"] for a in MIXED["agents"] if a["name"] == name)
    varying = getattr(AGENTS[name], "per_member_args", ())
    return int(2 * np.prod([len(values) for key, values in grid.items() if key in varying]))


@pytest.fixture(scope="module")
def mixed_dirs(tmp_path_factory):
    one, many = tmp_path_factory.mktemp("mixed-per-run"), tmp_path_factory.mktemp("mixed-batched")
    assert len(sweep(MIXED, one, batched=False, log=None).executed) == N_MIXED
    lines = []
    result = sweep(MIXED, many, timing_runs=False, log=lines.append)
    assert result.ok and len(result.executed) == N_MIXED
    return one, many, lines


def test_a_grid_over_lam_beta_sketch_size_and_seeds_gives_the_per_run_records(mixed_dirs):
    one, many, lines = mixed_dirs
    sizes = {name: _members_per_batch(name) for name in ("OFUL", "SOFUL", "DBSLinUCB")}
    assert sizes["OFUL"] == 8, "OFUL members must differ in lam and beta (agents' per_member_args)"
    n_batches = (
        1 + 16 // sizes["SOFUL"] + 16 // sizes["DBSLinUCB"]
    )  # one per value of what may not differ
    assert any(
        f"batched: {N_MIXED} runs in {n_batches} batches of {min(sizes.values())} "
        f"to {max(sizes.values())} members" in line
        for line in lines
    ), lines
    _same_runs(one, many, lambda meta: sizes[meta["config"]["agent"]["name"]])
    for path in sorted((many / "runs").glob("*.json")):  # each member under its own label
        meta = json.loads(path.read_text())
        args = meta["config"]["agent"]["args"]
        assert (
            f"lam={args['lam']}" in meta["agent_label"]
            and f"beta={args['beta']}" in meta["agent_label"]
        )
    runs = load_runs(many)  # the report's view: each run under its own label and arguments
    assert (
        runs.groupby("agent")["seed"].nunique().eq(2).all()
        and runs["agent"].nunique() == N_MIXED // 2
    )


def test_kill_in_the_middle_of_a_mixed_batch_loses_and_duplicates_nothing(
    mixed_dirs, tmp_path, monkeypatch
):
    # Ctrl-C inside the second batch (SOFUL's lam x beta x seeds), while its members are saved
    _kill_saving_and_resume(
        MIXED, tmp_path, monkeypatch, _members_per_batch("OFUL") + 3, mixed_dirs[0]
    )


def test_plan_splits_members_whose_padding_would_waste_more_than_pad_ratio(monkeypatch):
    from agents import SOFUL
    from linbandit_gym.experiments.packing import PAD_RATIO

    # the planner only reads the class's per_member_args (no batched agent is built here)
    monkeypatch.setattr(
        SOFUL,
        "per_member_args",
        tuple({*getattr(SOFUL, "per_member_args", ()), "sketch_size"}),
        raising=False,
    )
    cfg = parse_config(
        {
            "seeds": 2,
            "envs": [ENV],
            "agents": [{"name": "SOFUL", "grid": {"sketch_size": [2, 3, 40]}}],
        }
    )
    shapes = {canonical_json(cfg.runs[0].config["env"]): (5, 16)}
    units = pack(cfg.runs, shapes=shapes, batched=True)
    _partition_ok(units, cfg.runs)
    for unit in units:
        sizes = [member_bytes("SOFUL", s.config["agent"]["args"], 5, 16) for s in unit]
        assert max(sizes) <= PAD_RATIO * min(sizes)
    assert sorted(len(u) for u in units) == [2, 4]  # l = 2, 3 together; l = 40 on its own batch


def test_plan_keeps_dbslinucb_members_of_different_eps_apart():
    from linbandit_gym.experiments.packing import KEPT_APART

    assert "eps" in KEPT_APART
    cfg = parse_config(
        {
            "seeds": 2,
            "envs": [ENV],
            "agents": [
                {"name": "DBSLinUCB", "grid": {"eps": [0.5, 1.0], "l0": [2, 3], "lam": [0.5, 2.0]}}
            ],
        }
    )
    units = pack(cfg.runs, shapes={canonical_json(cfg.runs[0].config["env"]): (5, 16)})
    _partition_ok(units, cfg.runs)
    assert sorted(len(u) for u in units) == [
        8,
        8,
    ]  # l0 x lam x seeds share a batch, one batch per eps
    assert all(len({s.config["agent"]["args"]["eps"] for s in unit}) == 1 for unit in units)


def test_by_default_only_small_states_are_packed_and_in_batches_of_min_batch_members():
    from linbandit_gym.experiments.packing import SMALL_STATE

    cfg = parse_config(
        {
            "seeds": MIN_BATCH,
            "envs": [ENV],
            "agents": [
                {"name": "OFUL", "grid": {"lam": [0.5, 2.0]}},
                {"name": "SOFUL", "args": {"sketch_size": 3}},
            ],
        }
    )
    key = canonical_json(cfg.runs[0].config["env"])
    d = 400  # OFUL's d x d inverse: 1.25 MB > SMALL_STATE; SOFUL's 6 x d sketch: far below
    assert (
        member_bytes("OFUL", {}, 5, d)
        > SMALL_STATE
        >= member_bytes("SOFUL", {"sketch_size": 3}, 5, d)
    )
    default = pack(cfg.runs, shapes={key: (5, d)})
    n = MIN_BATCH
    assert sorted(len(u) for u in default) == [1] * 2 * n + [n]  # OFUL alone, SOFUL's seeds batched
    assert sorted(len(u) for u in pack(cfg.runs, shapes={key: (5, d)}, batched=True)) == [n, 2 * n]
    small_d = pack(cfg.runs, shapes={key: (5, 16)})
    assert sorted(len(u) for u in small_d) == [n, 2 * n]  # both packed
    few = [spec for spec in cfg.runs if spec.seed < MIN_BATCH - 1]  # a member short of MIN_BATCH
    assert sorted(len(u) for u in pack(few, shapes={key: (5, 16)})) == [1] * (n - 1) + [2 * (n - 1)]
    # two workers get two units; a batch is not halved into batches under MIN_BATCH members
    halves = pack(cfg.runs[2 * n :], shapes={key: (5, 16)}, workers=2)
    assert [len(u) for u in halves] == [n]


class SlowFirstPlay:
    """A user's agent whose first play of an episode spends 20 ms of CPU in round 5's act."""

    def __init__(self):
        self.plays = 0

    def reset(self, seed=None):
        self.plays += 1
        self.t = 0

    def act(self, obs):
        self.t += 1
        if self.plays == 1 and self.t == 5:
            start = time.thread_time()
            while time.thread_time() - start < 0.02:
                pass
        return 0

    def update(self, obs, action, reward):
        pass


def test_a_timing_run_played_several_times_keeps_each_rounds_least_time(tmp_path):
    cfg = {
        "seeds": 2,
        "envs": [ENV],
        "agents": [{"name": f"{__name__}:SlowFirstPlay"}, {"name": "OFUL"}],
    }
    once = sweep(cfg, tmp_path / "once", log=None)
    thrice = sweep({**cfg, "timing_repeats": 3}, tmp_path / "thrice", log=None)
    assert once.ok and thrice.ok
    pd.testing.assert_frame_equal(
        _untimed(load_records(tmp_path / "thrice")), _untimed(load_records(tmp_path / "once"))
    )
    for name, repeats in (("once", 1), ("thrice", 3)):
        records, runs = load_records(tmp_path / name), load_runs(tmp_path / name)
        assert runs.set_index("seed")["timing_repeats"].groupby(level=0).max().to_dict() == {
            0: repeats,
            1: 1,
        }
        slow = records[records["agent"].str.endswith(":SlowFirstPlay") & (records["seed"] == 0)]
        round_5 = slow["agent_time"].diff().iloc[4]
        assert (round_5 >= 0.02) == (
            repeats == 1
        )  # played thrice, round 5 keeps a play without the 20 ms
        assert (slow["wall_time"] >= slow["agent_wall_time"]).all() and slow[
            "agent_time"
        ].is_monotonic_increasing
    from linbandit_gym.experiments.figures import format_table

    runs = load_runs(tmp_path / "thrice")
    assert set(format_table(summary_table(runs))["timing"]) == {
        "alone, 2 seeds"
    }  # seed 1 was played once
    assert set(format_table(summary_table(runs[runs["seed"] == 0]))["timing"]) == {
        "alone, best of 3, 1 seed"
    }
    with pytest.raises(ValueError, match="timing_repeats"):
        sweep(cfg, tmp_path / "bad", timing_repeats=0, log=None)
