"""float32 sweeps: a config's ``dtype:`` (``--dtype``) given to every agent, and
``linbandit agreement`` (linbandit_gym.experiments.agreement), which pairs the runs of two
sweeps that differ only in it and says how far they agree."""

import numpy as np
import pytest
import yaml

from linbandit_gym.cli import main
from linbandit_gym.experiments.agreement import agreement
from linbandit_gym.experiments.config import ConfigError, parse_config
from linbandit_gym.experiments.packing import member_bytes
from linbandit_gym.experiments.sweep import load_meta, load_records, load_runs, sweep

ENV = {
    "id": "LinBandit-Synthetic-v0",
    "args": {"d": 40, "n_arms": 6, "horizon": 120},
    "label": "syn",
}


def _config(**extra):
    return {
        "name": "p",
        "seeds": 2,
        "envs": [ENV],
        **extra,
        "agents": [
            {"name": "OFUL", "grid": {"beta": [0.05, 1.0]}, "label": "OFUL beta={beta}"},
            {"name": "SOFUL", "args": {"sketch_size": 3, "beta": 0.1}, "label": "SOFUL"},
        ],
    }


def test_the_config_dtype_goes_to_every_agent_that_sets_none_and_makes_other_runs():
    plain = parse_config(_config())
    single = parse_config(_config(dtype="float32"))
    assert {r.config["agent"]["args"].get("dtype") for r in single.runs} == {"float32"}
    assert not {r.run_id for r in plain.runs} & {r.run_id for r in single.runs}  # other runs
    cfg = _config(dtype="float32")
    cfg["agents"][1]["args"]["dtype"] = "float64"  # an agent's own dtype is kept
    kept = parse_config(cfg)
    assert [r.config["agent"]["args"]["dtype"] for r in kept.runs if r.agent_label == "SOFUL"] == [
        "float64"
    ] * 2
    # the planner sizes float32 members at half the bytes
    args = {"sketch_size": 3}
    assert member_bytes("SOFUL", {**args, "dtype": "float32"}, 6, 40) < member_bytes(
        "SOFUL", args, 6, 40
    )


def test_a_dtype_the_agents_do_not_have_is_refused_and_an_agent_without_one_is_noted(tmp_path):
    with pytest.raises(ConfigError, match="dtype: expected one of float32, float64"):
        parse_config(_config(dtype="float16"))
    module = tmp_path / "plain_agent.py"
    module.write_text(
        "class Plain:\n    def __init__(self, k=1):\n        self.k = k\n"
        "    def reset(self, seed=None):\n        pass\n"
        "    def act(self, obs):\n        return 0\n"
        "    def update(self, obs, action, reward):\n        pass\n"
    )
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        cfg = {
            "name": "p",
            "dtype": "float32",
            "envs": [ENV],
            "agents": [{"name": "plain_agent:Plain"}],
        }
        parsed = parse_config(cfg)
    finally:
        sys.path.remove(str(tmp_path))
    assert parsed.runs[0].config["agent"]["args"] == {}
    assert parsed.notes == [
        "dtype: float32 is not given to 'plain_agent:Plain': its agent takes no dtype"
    ]


def test_agreement_pairs_the_runs_of_two_dtypes_and_measures_them_from_their_records(tmp_path):
    sweep(_config(), tmp_path / "64", log=None)
    sweep(_config(dtype="float32"), tmp_path / "32", log=None)
    result = agreement(tmp_path / "64", tmp_path / "32")
    assert result.matched == 6 and result.unmatched_reference == result.unmatched_other == 0
    table = result.table.set_index("agent")
    assert list(table.index) == ["OFUL beta=0.05", "OFUL beta=1.0", "SOFUL"]
    a, b = load_records(tmp_path / "64"), load_records(tmp_path / "32")
    for agent, row in table.iterrows():
        x = a[a["agent"] == agent].sort_values(["seed", "t"])
        y = b[b["agent"] == agent].sort_values(["seed", "t"])
        same = x["action"].to_numpy() == y["action"].to_numpy()
        assert row["identical_choices"] == pytest.approx(same.mean())
        final_x = x.groupby("seed")["cumulative_regret"].last()
        final_y = y.groupby("seed")["cumulative_regret"].last()
        assert row["regret_difference"] == pytest.approx((final_y - final_x).mean())
        assert row["regret_difference_max"] == pytest.approx((final_y - final_x).abs().max())
        if same.all():
            assert np.isnan(row["first_parting"])
        else:
            parted = [
                int(np.argmin(s)) + 1
                for s in (
                    g["action"].to_numpy() == h["action"].to_numpy()
                    for (_, g), (_, h) in zip(x.groupby("seed"), y.groupby("seed"))
                )
                if not s.all()
            ]
            assert row["first_parting"] == min(parted)
    dtypes = {
        load_meta(tmp_path / "32", rid)["config"]["agent"]["args"]["dtype"]
        for rid in load_runs(tmp_path / "32")["run_id"]
    }
    assert dtypes == {"float32"}


def test_agreement_refuses_sweeps_without_a_common_run(tmp_path, capsys):
    sweep(_config(), tmp_path / "a", log=None)
    other = _config()
    other["envs"] = [{**ENV, "args": {**ENV["args"], "n_arms": 4}}]
    sweep(other, tmp_path / "b", log=None)
    with pytest.raises(ValueError, match="no run of .* has a counterpart"):
        agreement(tmp_path / "a", tmp_path / "b")
    with pytest.raises(SystemExit, match="linbandit agreement: error: no run"):
        main(["agreement", str(tmp_path / "a"), str(tmp_path / "b")])


def test_the_command_line_runs_a_float32_sweep_and_prints_the_agreement(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in _config().items() if k != "name"}))
    assert main(["sweep", str(path), "--out", str(tmp_path / "64"), "--quiet", "--no-plots"]) == 0
    assert (
        main(
            [
                "sweep",
                str(path),
                "--out",
                str(tmp_path / "32"),
                "--dtype",
                "float32",
                "--quiet",
                "--no-plots",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "CPU time of the sweep" in out  # printed with --quiet too
    assert (
        yaml.safe_load((tmp_path / "32" / "config.yaml").read_text())["name"] == "c"
    )  # the file's name
    assert (
        main(
            [
                "agreement",
                str(tmp_path / "64"),
                str(tmp_path / "32"),
                "--csv",
                str(tmp_path / "a.csv"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "identical choices" in out and "6 runs paired" in out and (tmp_path / "a.csv").exists()
