"""`linbandit reproduce highdim`: the experiment where sketching pays (d up to 10^5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from agents import AGENTS
from linbandit_gym.cli import main
from linbandit_gym.envs.heavy_tail import HeavyTailLinBanditEnv
from linbandit_gym.experiments import parse_config
from linbandit_gym.experiments.config import load_config
from linbandit_gym.experiments.reproduce import config_path
from linbandit_gym.plots import loglog_slope

pytestmark = pytest.mark.skipif("DBSLinUCB" not in AGENTS, reason="DBSLinUCB not registered")


def _d(spec) -> int:
    return int(spec.config["env"]["args"]["d"])


@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
def test_highdim_runs_oful_only_where_its_state_fits_and_the_sketches_everywhere(quick):
    cfg = parse_config(config_path("highdim", quick=quick))
    ds = sorted({_d(r) for r in cfg.runs})
    assert ds[-1] >= (16384 if quick else 100_000) and ds[0] <= 1024
    ids = {r.config["env"]["id"] for r in cfg.runs}
    assert ids == {"LinBandit-Synthetic-v0", "LinBandit-HeavyTail-v0"}
    oful = {_d(r) for r in cfg.runs if r.family == "OFUL"}
    assert oful and max(oful) <= 4096 and len(oful) >= 2  # two points at least: a slope
    for family in ("SOFUL", "CBSCFD", "DBSLinUCB-FD"):
        assert {_d(r) for r in cfg.runs if r.family == family} == set(ds), family
    kinds = {p["kind"] for p in cfg.plots}
    assert {"scaling", "fronts"} <= kinds


def test_heavytail_without_rotation_holds_no_d_by_d_matrix():
    env = HeavyTailLinBanditEnv(d=200_000, n_arms=5, rank=8, alpha=1.0, rotate=False, horizon=3)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (5, 200_000) and not obs[:, 8:].any() and obs[:, :8].any()
    assert env.theta_star.shape == (200_000,) and np.isclose(np.linalg.norm(env.theta_star), 1.0)


@pytest.mark.slow
@pytest.mark.filterwarnings(
    "ignore::agents._warnings.SketchSizeWarning"
)  # the shrunk grid's d=64 is below l=32's worth
def test_reproduce_highdim_quick_smoke(tmp_path, monkeypatch, capsys):
    """The quick config end to end, shrunk further (test-only override: d <= 4096, T = 40)."""
    raw = load_config(config_path("highdim", quick=True))
    raw["horizon"] = 40
    for env in raw["envs"]:
        env["grid"] = {"d": [64, 512, 4096]}
    raw["agents"][0]["envs"] = ["*-d64", "*-d512"]  # OFUL
    path = tmp_path / "highdim-tiny.yaml"
    path.write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(
        "linbandit_gym.experiments.reproduce.config_path", lambda name, quick=False: path
    )
    out = tmp_path / "out"
    assert main(["reproduce", "highdim", "--quick", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "scaling heavytail slopes" in printed and "slope of peak memory" in printed
    plots = out / "plots"
    for name in ("scaling_heavytail", "scaling_synthetic", "fronts_heavytail", "fronts_synthetic"):
        assert (plots / f"{name}.png").stat().st_size > 10_000, name
    slopes = pd.read_csv(plots / "scaling_heavytail_slopes.csv")
    memory = slopes[slopes["metric"] == "peak_memory_bytes"].set_index("agent")
    assert 1.9 < memory.loc["OFUL", "slope"] < 2.05  # the d x d state
    for agent in ("SOFUL l=8", "SOFUL l=32", "CBSCFD l=8", "CBSCFD l=32"):
        # l x d (over the upper half of d: at d = 64 an l = 32 sketch's l x l parts still count)
        assert 0.8 < memory.loc[agent, "upper-half slope"] < 1.1, agent
    memory = memory["slope"]
    # the slopes are the least-squares fit of what the summary holds
    summary = pd.read_csv(out / "summary.csv")
    oful = summary[(summary["agent"] == "OFUL") & summary["env"].str.startswith("heavytail")]
    d = oful["env"].str.extract(r"d(\d+)$")[0].astype(float)
    assert memory["OFUL"] == pytest.approx(loglog_slope(d, oful["peak_memory_kib"]), rel=1e-6)
    # an experiment about cost times its runs alone: every configuration has a run timed alone
    # and the slopes of ms/round are fitted to those times
    assert (summary["timing"] == "alone").all()
    assert "ms/round timed" in printed and "batch shares at" not in printed
