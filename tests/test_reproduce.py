"""`linbandit reproduce`: shipped configs of the experiments of Wen et al. (2025), matrix
approximation, the OpenML message."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from agents import AGENTS
from linbandit_gym.cli import main
from linbandit_gym.experiments import load_records, load_runs, parse_config, sweep
from linbandit_gym.experiments.config import select_labels
from linbandit_gym.experiments.reproduce import EXPERIMENTS, config_path

NAMES = list(EXPERIMENTS)
needs_dbs = pytest.mark.skipif("DBSLinUCB" not in AGENTS, reason="DBSLinUCB not registered")


@needs_dbs
@pytest.mark.parametrize("name", NAMES)
def test_shipped_configs_parse_and_their_plots_select_agents(name):
    full, quick = parse_config(config_path(name)), parse_config(config_path(name, quick=True))
    assert 0 < len(quick.runs) < len(full.runs)
    for cfg in (full, quick):
        labels = {r.agent_label for r in cfg.runs}
        for spec in cfg.plots:
            if spec.get("agents"):
                assert select_labels(labels, spec["agents"]), (name, spec)
            if spec["kind"] == "param":
                fam = [r for r in cfg.runs if r.family == spec["family"]]
                assert len({r.config["agent"]["args"][spec["x"]] for r in fam}) >= 3


@needs_dbs
def test_paper_settings_are_in_the_full_configs():
    syn = parse_config(config_path("synthetic"))
    env = syn.runs[0].config["env"]["args"]
    assert (env["d"], env["n_arms"]) == (500, 100)
    args = {r.agent_label: r.config["agent"]["args"] for r in syn.runs}
    assert args["SOFUL l=50"]["sketch_size"] == 50 and args["CBSCFD l=450"]["sketch_size"] == 450
    assert (args["DBSLinUCB-FD l0=50 eps=8"]["l0"], args["DBSLinUCB-RFD l0=50 eps=8"]["eps"]) == (
        50,
        8,
    )
    mnist = parse_config(config_path("mnist"))
    labels = {r.agent_label for r in mnist.runs}
    assert {
        "OFUL",
        "SOFUL l=20",
        "SOFUL l=100",
        "SOFUL l=150",
        "DBSLinUCB-FD l0=50 eps=8",
    } <= labels
    assert mnist.runs[0].config["env"]["args"]["horizon"] == 2000 and len(mnist.seeds) == 20
    mat = parse_config(config_path("matrix-approx"))
    assert mat.runs[0].config["env"]["args"] == {"n": 1250, "d": 500, "every": 5}
    assert {r.config["agent"]["args"].get("eps") for r in mat.runs} == {None, 5, 10, 20}


def test_list_and_unknown_experiment(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in NAMES)
    assert main(["reproduce", "fig9"]) == 2
    assert "unknown experiment 'fig9'" in capsys.readouterr().err


def test_openml_without_data_says_what_to_do(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LINBANDIT_DATA", str(tmp_path / "empty"))
    assert main(["reproduce", "openml", "--quick", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "OpenML experiment needs" in err and "cnae-9" in err
    assert not list((tmp_path / "o" / "runs").glob("*.json"))


@pytest.mark.skipif("SOFUL" not in AGENTS, reason="SOFUL not registered")
@pytest.mark.filterwarnings(
    "ignore::agents._warnings.SketchSizeWarning"
)  # a small sketch at a small d, on purpose
def test_matrix_approximation_errors_respect_their_bounds(tmp_path):
    from agents.sketches.diagnostics import spectral_error

    agents = [{"name": "SOFUL", "args": {"sketch_size": 4}, "label": "FD l=4"}]
    if "DBSLinUCB" in AGENTS:
        agents.append(
            {
                "name": "DBSLinUCB",
                "args": {"l0": 2, "sketch": "fd"},
                "grid": {"eps": [0.5, 2.0]},
                "label": "DBS eps={eps}",
            }
        )
    cfg = {
        "task": "matrix-approx",
        "seeds": [0, 1],
        "data": {"n": 60, "d": 12, "every": 5},
        "agents": agents,
    }
    result = sweep(cfg, tmp_path, log=None)
    assert result.ok
    records = load_records(tmp_path)
    assert set(records.groupby(["agent", "seed"]).size()) == {12}  # t = 5, 10, ..., 60
    assert (records["spectral_error"] <= records["error_bound"] + 1e-9).all()  # Lemma 1 / Theorem 1
    fd = records[records["agent"] == "FD l=4"]
    assert (fd["spectral_error"].iloc[-1] > 0) and (fd["sketch_size"] == 4).all()
    if "DBSLinUCB" in AGENTS:
        assert set(records.loc[records["agent"] == "DBS eps=2.0", "error_bound"]) == {4.0}
    # the recorded error is the error of a sketch fed the same rows
    from agents import SOFUL

    rng = np.random.default_rng(1)
    rows = rng.standard_normal((60, 12))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    est = SOFUL(sketch_size=4, d=12).estimator
    for x in rows:
        est.update(x)
    last = fd[fd["seed"] == 1].iloc[-1]
    assert last["spectral_error"] == pytest.approx(spectral_error(rows, est), rel=1e-9, abs=1e-12)
    assert main(["plot", str(tmp_path)]) == 0
    assert (tmp_path / "plots" / "matrix_error_0.png").stat().st_size > 1000


def test_reproduce_pipeline_on_a_tiny_config(tmp_path, monkeypatch, capsys):
    tiny = {
        "name": "tiny",
        "seeds": 2,
        "envs": [{"id": "LinBandit-Synthetic-v0", "args": {"d": 6, "n_arms": 4, "horizon": 30}}],
        "agents": [
            {"name": "OFUL", "args": {"beta": 0.5}},
            {"name": "OFUL", "args": {"lam": 3.0}, "label": "other"},
        ],
        "tune": {"beta": [0.1, 1.0], "lam": [1.0], "seeds": 1},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny))
    monkeypatch.setattr(
        "linbandit_gym.experiments.reproduce.config_path", lambda name, quick=False: path
    )
    out = tmp_path / "out"
    assert main(["reproduce", "synthetic", "--quick", "--tune", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| OFUL" in printed and "final regret" in printed
    assert (out / "report.html").exists() and (out / "plots" / "regret.png").exists()
    tuned = yaml.safe_load((out / "tune" / "tuned.yaml").read_text())["LinBandit-Synthetic-v0"]
    runs = load_runs(out)
    assert (
        set(tuned) == {"OFUL", "other"} and tuned["OFUL"] == tuned["other"]
    )  # same agent once beta/lam are tuned
    assert len(runs) == 2 and set(runs["agent"]) == {
        "OFUL"
    }  # so it runs once, under the first label
    assert set(runs["arg.beta"]) == {tuned["OFUL"]["beta"]} and set(runs["arg.lam"]) == {1.0}


def _ordering(out) -> pd.DataFrame:
    table = pd.read_csv(out / "summary.csv").set_index("agent")
    return table


@pytest.mark.slow
@needs_dbs
@pytest.mark.filterwarnings("default::agents.SketchSizeWarning")
def test_reproduce_synthetic_quick_shows_the_papers_ordering(tmp_path, capsys):
    out = tmp_path / "syn"
    argv = ["reproduce", "synthetic", "--quick", "--workers", "2", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    # SOFUL at l = 40 and 90 (d = 100) holds more than OFUL and costs more a round: said once each
    err = capsys.readouterr().err
    assert err.count("SketchSizeWarning: agents[1] (SOFUL l=40 on synthetic-d100)") == 1, err
    t = _ordering(out)["final_regret_mean"]
    assert t["SOFUL l=10"] > 1.5 * t["OFUL"] and t["CBSCFD l=10"] > 1.5 * t["OFUL"]
    assert (
        t["DBSLinUCB-FD l0=10 eps=8"] < t["SOFUL l=10"]
        and t["DBSLinUCB-RFD l0=10 eps=8"] < t["CBSCFD l=10"]
    )
    spectral = [json.loads(p.read_text()).get("spectral") for p in (out / "runs").glob("*.json")]
    assert any(s and s["delta"] for s in spectral)
    assert (out / "plots" / "fig1c_spectral_exponent.png").exists()


@pytest.mark.slow
@needs_dbs
def test_reproduce_mnist_quick_shows_the_papers_ordering(tmp_path):
    out = tmp_path / "mnist"
    assert (
        main(["reproduce", "mnist", "--quick", "--workers", "2", "--out", str(out), "--quiet"]) == 0
    )
    t = _ordering(out)
    regret, memory = t["final_regret_mean"], t["peak_memory_kib"]
    assert (
        regret["SOFUL l=20"] > regret["OFUL"]
        and regret["SOFUL l=20"] > regret["DBSLinUCB-FD l0=50 eps=8"]
    )
    assert memory["OFUL"] > memory["SOFUL l=20"]
    for stem in ("fig5a_regret", "fig3ab_eps_l0", "fig3cd_pareto_time", "fig3cd_pareto_memory"):
        assert (out / "plots" / f"{stem}.png").exists()
