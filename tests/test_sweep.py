"""Sweeps: config expansion and errors, backends, resumable atomic records, plots, report, tune."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from worker_pools import horizon_for_workers

import linbandit_gym
from agents import AGENTS, OFUL
from linbandit_gym.cli import main
from linbandit_gym.experiments import (
    ConfigError,
    backends,
    load_records,
    load_runs,
    parse_config,
    sweep,
)
from linbandit_gym.experiments.backends import local_workers, ray_available, worker_count
from linbandit_gym.experiments.config import load_config
from linbandit_gym.experiments.sweep import is_finished

#: small d: the sketches of these sweeps hold more than OFUL's inverse, which is warned (asserted in
#: tests/test_agent_warnings.py); not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::agents._warnings.SketchSizeWarning")

ENV_A = {"id": "LinBandit-Synthetic-v0", "args": {"d": 8, "n_arms": 5, "horizon": 40}, "label": "A"}
ENV_B = {
    "id": "LinBandit-Synthetic-v0",
    "args": {"d": 6, "n_arms": 4, "horizon": 40, "fixed_arms": True},
    "label": "B",
}
SECOND = (
    {"name": "SOFUL", "args": {"beta": 0.1, "sketch_size": 3}}
    if "SOFUL" in AGENTS
    else {"name": "OFUL", "args": {"beta": 1.0}, "label": "OFUL beta=1"}
)
# 2 agents x 2 envs x 3 seeds
SMALL = {
    "name": "small",
    "seeds": 3,
    "envs": [ENV_A, ENV_B],
    "agents": [{"name": "OFUL", "args": {"beta": 0.1}}, SECOND],
}
KEYS = ["env", "agent", "seed", "t"]


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(KEYS).reset_index(drop=True)


@pytest.fixture(scope="module")
def serial_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    result = sweep(SMALL, out, log=None)
    assert result.ok and len(result.executed) == 12
    return out


# -- config ----------------------------------------------------------------------------


def test_expansion_labels_and_stable_ids():
    cfg = {
        "seeds": [4, 7],
        "envs": [ENV_A],
        "agents": [
            {"name": "OFUL", "args": {"lam": 1.0}, "grid": {"beta": [0.1, 1.0]}},
            {"name": "OFUL", "grid": [{"beta": 0.5, "lam": 2.0}], "label": "mine b={beta}"},
        ],
    }
    runs = parse_config(cfg).runs
    assert len(runs) == 3 * 2
    assert [r.agent_label for r in runs[::2]] == ["OFUL beta=0.1", "OFUL beta=1.0", "mine b=0.5"]
    assert {r.seed for r in runs} == {4, 7}
    assert runs[4].config["agent"]["args"] == {"beta": 0.5, "lam": 2.0}
    again = parse_config(
        {**cfg, "agents": [dict(cfg["agents"][0], label="renamed {beta}"), cfg["agents"][1]]}
    ).runs
    assert [r.run_id for r in again] == [r.run_id for r in runs]  # labels are not part of the id
    changed = parse_config({**cfg, "envs": [{**ENV_A, "args": {**ENV_A["args"], "d": 9}}]}).runs
    assert not {r.run_id for r in changed} & {r.run_id for r in runs}
    assert len({r.run_id for r in runs}) == len(runs)


def test_yaml_toml_and_dict_give_the_same_runs(tmp_path):
    yml = tmp_path / "c.yaml"
    yml.write_text(
        "seeds: 2\nenvs:\n  - {id: LinBandit-Synthetic-v0, args: {d: 8, n_arms: 5, horizon: 40}}\n"
        "agents:\n  - {name: OFUL, grid: {beta: [1e-4, 1.0e-1]}}\n"
    )
    toml = tmp_path / "c.toml"
    toml.write_text(
        'seeds = 2\n[[envs]]\nid = "LinBandit-Synthetic-v0"\n'
        "args = {d = 8, n_arms = 5, horizon = 40}\n"
        '[[agents]]\nname = "OFUL"\ngrid = {beta = [1e-4, 0.1]}\n'
    )
    ids = [[r.run_id for r in parse_config(p).runs] for p in (yml, toml)]
    assert ids[0] == ids[1] and len(ids[0]) == 4
    # a float, not the string "1e-4"
    assert parse_config(yml).runs[0].config["agent"]["args"]["beta"] == 1e-4


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"agent": []}, "unknown key 'agent'"),
        ({"agents": [{"name": "NoSuchAgent"}]}, "agents[0].name: unknown agent 'NoSuchAgent'"),
        ({"envs": [{"id": "LinBandit-Nope-v0"}]}, "envs[0].id: unknown env id 'LinBandit-Nope-v0'"),
        (
            {"agents": [{"name": "OFUL", "grid": {"beta": 0.1}}]},
            "agents[0].grid.beta: a grid maps each argument to a list",
        ),
        ({"agents": [{"name": "OFUL", "grid": "beta"}]}, "agents[0].grid: a grid is a mapping"),
        (
            {"agents": [{"name": "OFUL", "grid": [0.1]}]},
            "agents[0].grid[0]: a list grid holds mappings",
        ),
        (
            {"agents": [{"name": "OFUL", "args": {"bogus": 1}}]},
            "agents[0].args.bogus: OFUL has no argument 'bogus'",
        ),
        (
            {"agents": [{"name": "OFUL", "args": {"lam": -1.0}}]},
            "agents[0].args.lam: OFUL: lam must be a finite real number > 0 (ridge lambda)",
        ),
        ({"agents": [{"name": "OFUL", "colour": "red"}]}, "agents[0]: unknown key 'colour'"),
        ({"seeds": "three"}, "seeds:"),
        (
            {"record": {"spectral_eror": 5}},
            "record: unknown key 'spectral_eror' (did you mean 'spectral_error'?)",
        ),
        ({"plots": [{"kind": "pie"}]}, "plots[0].kind"),
        (
            {"agents": [{"name": "OFUL"}, {"name": "OFUL", "label": "again"}]},
            "agents[1]: the run 'again' on 'A' seed 0 is the same",
        ),
        (
            {"agents": [{"name": "OFUL", "envs": ["Z*"]}]},
            "agents[0].envs: ['Z*'] matches no env label",
        ),
        ({"description": ["a", "list"]}, "description: expected free text (a string), got list"),
        (
            {"plots": [{"kind": "regret", "title": ["x"]}]},
            "plots[0].title: expected a string, got list",
        ),
        ({"plots": [{"kind": "scaling", "x": 3}]}, "plots[0].x: expected a string, got int"),
        (
            {"plots": [{"kind": "scaling", "x": "rank"}]},
            "plots[0].x: env(s) ['A', 'B'] are not given the argument",
        ),
        (
            {"plots": [{"kind": "matrix_error", "bound": "no"}]},
            "plots[0].bound: expected true or false",
        ),
        ({"tuned": {"A": {1: {"beta": 0.1}}}}, "tuned.A: 1 is not an agent label"),
    ],
)
def test_malformed_config_names_the_offending_key(change, expected):
    with pytest.raises(ConfigError) as info:
        parse_config({**SMALL, **change})
    assert expected in str(info.value)


def test_cli_reports_a_bad_config_with_exit_code_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**SMALL, "agents": [{"name": "OFUL", "grid": {"beta": 0.5}}]}))
    assert main(["sweep", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "agents[0].grid.beta" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


#: A "billion laughs" of YAML aliases: 14 lines that stand for 9**9 strings of 200 characters.
ALIAS_BOMB = """name: bomb
seeds: 1
envs: [{id: LinBandit-Synthetic-v0, args: {d: 3, n_arms: 2, horizon: 5}}]
a: &a ["%s"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
""" % ("ha" * 100)


@pytest.mark.parametrize(
    "where",
    [
        "description: [*i, *i, *i, *i, *i, *i, *i, *i, *i]\nagents: [{name: OFUL}]\n",
        "agents: [{name: OFUL, args: {beta: [*i, *i, *i]}}]\n",
    ],
)
def test_a_yaml_alias_bomb_is_refused_as_it_is_read(tmp_path, capsys, where):
    """What a config expands into is bounded where it is read, whatever key its aliases sit
    under (a 16-line config once became a 738 MB report.html): one line, at once, nothing
    written."""
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB + where)
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="expands into more than"):
        load_config(path)
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "YAML aliases" in err, err
    assert time.perf_counter() - started < 10 and not (tmp_path / "out").exists()


def test_recursive_and_deeply_nested_configs_are_refused(tmp_path):
    recursive = tmp_path / "r.yaml"
    recursive.write_text("name: r\nseeds: 1\ndescription: &d [*d]\n")
    with pytest.raises(ConfigError, match="nests lists and mappings more than 50 deep"):
        load_config(recursive)
    deep = tmp_path / "deep.yaml"
    deep.write_text("description: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="too deep to read"):
        load_config(deep)


# -- records -----------------------------------------------------------------------------


def test_records_metadata_and_summary(serial_dir):
    runs = load_runs(serial_dir)
    assert len(runs) == 12 and runs["run_id"].is_unique
    records = load_records(serial_dir)
    for rid in runs["run_id"]:
        meta = json.loads((serial_dir / "runs" / f"{rid}.json").read_text())
        assert set(meta["versions"]) >= {"python", "torch", "numpy", "linbandit"}
        assert meta["versions"]["linbandit"] == linbandit_gym.__version__
        assert meta["device"] == "cpu" and meta["seed"] == meta["config"]["seed"]
        rec = records[
            (records["agent"] == meta["agent_label"])
            & (records["env"] == meta["env_label"])
            & (records["seed"] == meta["seed"])
        ]
        s = meta["summary"]
        assert len(rec) == s["rounds"] == 40
        assert s["final_regret"] == pytest.approx(rec["regret"].sum())
        assert s["ms_per_round"] == pytest.approx(1000 * rec["agent_time"].iloc[-1] / 40)
        assert s["peak_memory_bytes"] == rec["memory_bytes"].max() > 0
        assert s["curve"]["t"][-1] == 40 and s["curve"]["cumulative_regret"][-1] == pytest.approx(
            s["final_regret"]
        )


def test_sweep_records_equal_a_direct_run(serial_dir):
    records = load_records(serial_dir)
    direct = linbandit_gym.run(
        "LinBandit-Synthetic-v0", OFUL(beta=0.1), seeds=[2], env_kwargs=ENV_B["args"]
    )
    mine = records[(records["agent"] == "OFUL") & (records["env"] == "B") & (records["seed"] == 2)]
    for col in ("action", "reward", "regret"):
        np.testing.assert_array_equal(mine[col].to_numpy(), direct[col].to_numpy())


def test_rerun_skips_finished_and_redoes_missing(serial_dir, tmp_path):
    out = tmp_path / "copy"
    sweep(SMALL, out, log=None)
    runs_dir = out / "runs"
    victim = sorted(runs_dir.glob("*.json"))[0]
    victim.unlink()  # the records file alone does not count as finished
    dead = int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    # left by a killed writer
    (runs_dir / f".x.parquet.linbandit-pid{dead}.ab12.tmp").write_text("half-written")
    result = sweep(SMALL, out, log=None)
    assert result.executed == [victim.stem] and len(result.skipped) == 11
    assert not list(runs_dir.glob(".*.tmp"))
    assert len(list(runs_dir.glob("*.json"))) == 12
    assert _sorted(load_records(out))[["action", "reward"]].equals(
        _sorted(load_records(serial_dir))[["action", "reward"]]
    )


class FlakyAgent(OFUL):
    """OFUL that crashes on the seeds in FAIL_SEEDS (an injected failure)."""

    FAIL_SEEDS: set = set()

    def reset(self, seed=None):
        if seed in self.FAIL_SEEDS:
            raise RuntimeError(f"injected failure for seed {seed}")
        super().reset(seed=seed)


def test_failed_runs_are_reported_and_retried(tmp_path):
    cfg = {
        "seeds": 3,
        "envs": [ENV_A],
        "agents": [{"name": f"{__name__}:FlakyAgent", "args": {"beta": 0.1}}],
    }
    FlakyAgent.FAIL_SEEDS = {1}
    try:
        first = sweep(cfg, tmp_path, log=None)
    finally:
        FlakyAgent.FAIL_SEEDS = set()
    assert len(first.executed) == 2 and len(first.failed) == 1
    (rid,) = first.failed
    assert (
        "injected failure for seed 1"
        in json.loads((tmp_path / "failed" / f"{rid}.json").read_text())["error"]
    )
    second = sweep(cfg, tmp_path, log=None)
    assert second.executed == [rid] and len(second.skipped) == 2 and second.ok
    assert not (tmp_path / "failed" / f"{rid}.json").exists()
    assert sorted(load_runs(tmp_path)["seed"]) == [0, 1, 2]


@pytest.mark.slow
def test_killed_sweep_resumes_without_loss_or_duplicates(tmp_path):
    cfg = {
        "name": "killme",
        "seeds": 6,
        "horizon": 600,
        "envs": [{"id": "LinBandit-Synthetic-v0", "args": {"d": 20, "n_arms": 10}}],
        "agents": [{"name": "OFUL", "grid": {"beta": [0.1, 1.0]}}],
    }
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "linbandit_gym.cli",
            "sweep",
            str(path),
            "--out",
            str(out),
            "--no-plots",
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 120
        while (
            len(list((out / "runs").glob("*.json"))) < 3
            and time.time() < deadline
            and proc.poll() is None
        ):
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    done_before = {p.stem: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")}
    assert 3 <= len(done_before) < 12, "the sweep should have been killed mid-way"
    result = sweep(path, out, log=None)
    expected = {r.run_id: r for r in parse_config(path).runs}
    assert set(result.skipped) == set(done_before) and set(result.executed) == set(expected) - set(
        done_before
    )
    assert {
        p.stem: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json") if p.stem in done_before
    } == done_before
    metas = sorted((out / "runs").glob("*.json"))
    assert [p.stem for p in metas] == sorted(expected)  # each run exactly once, nothing else
    assert len(list((out / "runs").glob("*.parquet"))) == 12 and not list((out / "runs").glob(".*"))
    for path_ in metas:
        meta = json.loads(path_.read_text())
        assert meta["config"] == expected[path_.stem].config and is_finished(
            out, expected[path_.stem]
        )
    records = load_records(out)
    assert len(records) == 12 * 600 and not records.duplicated(KEYS).any()


# -- backends ----------------------------------------------------------------------------


def _check_identical(a_dir: Path, b_dir: Path) -> None:
    a, b = _sorted(load_records(a_dir)), _sorted(load_records(b_dir))
    assert len(a) == len(b) == 12 * 40
    for col in KEYS + ["action", "reward", "regret", "cumulative_regret"]:
        assert a[col].equals(b[col]), col


@pytest.mark.slow  # a pool of two worker processes (each imports torch)
def test_two_worker_processes_give_identical_records(serial_dir, tmp_path, workers_cost_nothing):
    result = sweep(SMALL, tmp_path, workers=2, log=None)
    assert result.ok and len(result.executed) == 12
    _check_identical(serial_dir, tmp_path)
    assert {
        json.loads(p.read_text())["torch_threads"] for p in (tmp_path / "runs").glob("*.json")
    } == {1}


@pytest.mark.slow
@pytest.mark.skipif(
    not ray_available(), reason="ray is not installed (pip install 'linbandit-gym[ray]')"
)
def test_ray_backend_gives_identical_records(serial_dir, tmp_path):
    result = sweep(SMALL, tmp_path, workers=2, backend="ray", log=None)
    assert result.ok and len(result.executed) == 12
    _check_identical(serial_dir, tmp_path)
    assert set(load_runs(tmp_path)["backend"]) == {"ray"}


# -- worker processes only where the work pays for them -----------------------------------------


@given(
    units=st.lists(st.floats(0.0, 100.0), max_size=20),
    workers=st.integers(1, 8),
    scale=st.floats(1.0, 100.0),
)
def test_worker_count_starts_workers_only_for_work_that_pays_for_them(units, workers, scale):
    chosen = worker_count(units, workers)
    assert 1 <= chosen <= max(1, min(workers, len(units)))  # never more than allowed or units
    if sum(units) <= backends.WORKER_START_S:  # the whole work costs less than one start-up
        assert chosen == 1
    assert worker_count([u * scale for u in units], workers) >= chosen  # more work, no fewer
    assert worker_count(units, workers + 1) >= chosen  # a higher bound, no fewer


def test_work_of_unknown_size_keeps_every_worker_allowed():
    assert worker_count([0.1, float("inf"), 0.1], 2) == 2
    assert worker_count([float("inf")] * 5, 4) == 4 and worker_count([float("inf")], 4) == 1


def _workers_asked(monkeypatch, tmp_path, config, workers) -> int:
    """How many worker processes a sweep of ``config`` on ``workers=workers`` asks its backend
    for (the runs are not played: the backend is replaced by one that returns nothing)."""
    asked = []

    def backend(units, **options):
        asked.append(options["workers"])
        return (result for result in ())

    monkeypatch.setattr(sys.modules["linbandit_gym.experiments.sweep"], "iter_results", backend)
    sweep(config, tmp_path, workers=workers, log=None)
    return asked[0]


def _one_env(d: int, horizon: int, seeds: int) -> dict:
    env = {"id": "LinBandit-Synthetic-v0", "args": {"d": d, "n_arms": 5, "horizon": horizon}}
    return {"seeds": seeds, "envs": [env], "agents": [{"name": "OFUL"}]}


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one worker at most anyway")
def test_a_sweep_starts_only_the_workers_its_planned_runs_pay_for(monkeypatch, tmp_path):
    allowed = local_workers(2, 1)
    assert _workers_asked(monkeypatch, tmp_path / "small", SMALL, 2) == 1  # 12 runs of 40 rounds
    # at a horizon where two runs of a small state stay in this process, a state several times
    # SMALL_STATE (OFUL at d = 784: 4.8 times) is worth the workers: the planner's estimate
    short = horizon_for_workers(2) // 2
    assert _workers_asked(monkeypatch, tmp_path / "d8", _one_env(8, short, 2), 2) == 1
    assert _workers_asked(monkeypatch, tmp_path / "d784", _one_env(784, short, 2), 2) == allowed
    # long runs use every worker allowed
    long = _one_env(8, 10 * horizon_for_workers(2), 8)
    assert _workers_asked(monkeypatch, tmp_path / "long", long, 2) == allowed
    assert _workers_asked(monkeypatch, tmp_path / "long4", long, 4) == local_workers(4, 1)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one worker at most anyway")
def test_a_tiny_sweep_on_two_workers_runs_in_this_process_and_says_so(serial_dir, tmp_path):
    lines = []
    result = sweep(SMALL, tmp_path, workers=2, log=lines.append)
    assert result.ok and len(result.executed) == 12
    _check_identical(serial_dir, tmp_path)
    pids = {json.loads(p.read_text())["pid"] for p in (tmp_path / "runs").glob("*.json")}
    assert pids == {os.getpid()}  # no worker process played a run
    assert any(line.startswith("in this process, not on 2 worker processes:") for line in lines)
    ledger = " ".join(" ".join(result.cost.lines()).split())
    assert result.cost.workers == 0 and "worker start-up" not in ledger


def test_unknown_backend_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="backend must be one of"):
        sweep(SMALL, tmp_path, backend="dask", log=None)


# -- diagnostics, plots, report, tune ------------------------------------------------------


def _played_rows(env_args: dict, seed: int, actions) -> np.ndarray:
    import gymnasium as gym

    env = gym.make("LinBandit-Synthetic-v0", **env_args)
    obs, _ = env.reset(seed=seed)
    rows = []
    for a in actions:
        rows.append(np.asarray(obs, dtype=np.float64)[a])
        obs, *_ = env.step(int(a))
    return np.array(rows)


@pytest.mark.skipif("SOFUL" not in AGENTS, reason="SOFUL not registered")
def test_spectral_error_recording_matches_a_replay(tmp_path):
    from agents.sketches.diagnostics import fd_error_bound

    cfg = {
        "seeds": [3],
        "envs": [ENV_A],
        "agents": [{"name": "SOFUL", "args": {"beta": 0.1, "sketch_size": 3}}],
        "record": {"spectral_error": 10, "spectral_sketch_sizes": [2, 5]},
    }
    sweep(cfg, tmp_path, log=None)
    (meta_path,) = (tmp_path / "runs").glob("*.json")
    spectral = json.loads(meta_path.read_text())["spectral"]
    assert spectral["t"] == [10, 20, 30, 40]
    records = load_records(tmp_path)
    X = _played_rows(ENV_A["args"], 3, records["action"])
    for i, t in enumerate(spectral["t"]):
        for l in (2, 5):
            assert spectral["delta"][str(l)][i] == pytest.approx(
                fd_error_bound(X[:t], l), rel=1e-6, abs=1e-9
            )
    # FD never errs by more than its shrinkage: ||X^T X - S^T S||_2 <= Delta_t(3)
    # (Wen et al. (2025), Lemma 1)
    for i, t in enumerate(spectral["t"]):
        assert spectral["cov_error"][i] <= fd_error_bound(X[:t], 3) + 1e-9
    assert records["agent_time"].is_monotonic_increasing and (records["agent_time"] > 0).all()


def test_plot_and_report_commands(serial_dir, capsys):
    assert main(["plot", str(serial_dir)]) == 0
    plots = serial_dir / "plots"
    for stem in ("regret_a", "regret_b", "pareto_time_a", "pareto_memory_b"):
        for suffix in (".png", ".pdf"):
            path = plots / (stem + suffix)
            assert path.exists() and path.stat().st_size > 1000, path
    table = (serial_dir / "summary.md").read_text()
    assert "OFUL" in table and table.count("\n") == 2 + 4
    summary = pd.read_csv(serial_dir / "summary.csv")
    runs = load_runs(serial_dir)
    oful_a = runs[(runs["agent"] == "OFUL") & (runs["env"] == "A")]
    row = summary[(summary["agent"] == "OFUL") & (summary["env"] == "A")].iloc[0]
    assert (
        row["final_regret_mean"] == pytest.approx(oful_a["final_regret"].mean())
        and row["seeds"] == 3
    )
    assert main(["report", str(serial_dir)]) == 0
    page = (serial_dir / "report.html").read_text()
    assert page.count("data:image/png;base64,") == len(list(plots.glob("*.png"))) >= 4
    assert "OFUL" in page and "linbandit" in page
    assert main(["report", str(serial_dir), "--format", "md", "--no-replot"]) == 0
    md = (serial_dir / "report.md").read_text()
    assert "![Cumulative regret on A](plots/regret_a.png)" in md  # named in words, not by its file
    assert "*Cumulative regret against the round t on A (" in md
    capsys.readouterr()


def test_tune_picks_the_lowest_mean_regret(tmp_path):
    from linbandit_gym.experiments.tune import tune

    cfg = {
        "name": "t",
        "seeds": 1,
        "envs": [ENV_A],
        "agents": [{"name": "OFUL", "args": {"beta": 0.3, "lam": 1.0}}],
    }
    result = tune(
        cfg, tmp_path, beta=[0.0, 3.0], lam=[0.5, 5.0], seeds=2, schedule="grid", log=None
    )
    runs = load_runs(tmp_path)
    assert len(runs) == 2 * 2 * 2 and set(runs["seed"]) == {1000, 1001}
    means = runs.groupby(["arg.beta", "arg.lam"])["final_regret"].mean()
    best_beta, best_lam = means.idxmin()
    assert result.tuned == {
        "A": {"OFUL": {"beta": best_beta, "lam": best_lam, "final_regret": means.min()}}
    }
    tuned_runs = parse_config(result.tuned_config).runs
    assert {r.config["agent"]["args"]["beta"] for r in tuned_runs} == {best_beta}
    assert yaml.safe_load(result.config_path.read_text())["tuned"] == {
        "A": {"OFUL": {"beta": best_beta, "lam": best_lam}}
    }


@pytest.mark.skipif("LinTS" not in AGENTS, reason="LinTS not registered")
def test_tune_tunes_lam_alone_for_an_agent_that_takes_no_beta(tmp_path):
    from linbandit_gym.experiments.tune import tune

    agents = [{"name": "LinTS", "args": {"v": 0.1}}]
    cfg = {"name": "t", "seeds": 1, "envs": [ENV_A], "agents": agents}
    result = tune(
        cfg, tmp_path, beta=[0.1, 1.0], lam=[0.5, 5.0], seeds=1, schedule="grid", log=None
    )
    runs = load_runs(tmp_path)
    assert sorted(runs["agent"]) == ["LinTS [lam=0.5]", "LinTS [lam=5.0]"]
    best = runs.set_index("arg.lam")["final_regret"].idxmin()
    assert result.tuned["A"]["LinTS"] == {"lam": best, "final_regret": runs["final_regret"].min()}
    tuned_runs = parse_config(result.tuned_config).runs
    assert {r.config["agent"]["args"]["lam"] for r in tuned_runs} == {best}
    halved = tune(cfg, tmp_path / "halving", lam=[0.5, 5.0], seeds=1, schedule="halving", log=None)
    assert set(halved.tuned["A"]["LinTS"]) == {"lam", "final_regret"}


def test_a_sweep_without_figures_does_not_import_matplotlib(tmp_path):
    """``--no-plots`` draws nothing, so the command does not pay for importing matplotlib (a third
    of a second of every small sweep's start-up): the tables are written without it."""
    config = tmp_path / "small.yaml"
    config.write_text(yaml.safe_dump({**SMALL, "seeds": 1}))
    code = (
        "import sys\n"
        "from linbandit_gym.cli import main\n"
        f"assert main(['sweep', {str(config)!r}, '--out', {str(tmp_path / 'out')!r}, "
        "'--no-plots', '--quiet']) == 0\n"
        "print('matplotlib' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
    assert (tmp_path / "out" / "summary.md").is_file()
