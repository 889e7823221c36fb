"""The command line as a new user meets it: agents from the current directory,
``python -m linbandit_gym``, closed pipes, the report's arguments, ``linbandit list``, labels, and
a demo that needs only the base install. (Its argument checks: tests/test_cli_arguments.py.)"""

from __future__ import annotations

import inspect
import io
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import gymnasium as gym
import pandas as pd
import pytest
import yaml
from cli_inputs import SYNTH, TINY_ENV

import linbandit_gym
from agents import AGENTS
from linbandit_gym.cli import demo_agents, main
from linbandit_gym.experiments import parse_config, sweep
from linbandit_gym.experiments.report import write_report
from linbandit_gym.registration import ENV_IDS

# Names are imported where they are used, so that a missing one fails only the tests that use it.


def load_object(spec):
    from linbandit_gym.specs import load_object

    return load_object(spec)


REPO = Path(__file__).resolve().parents[1]

AGENT_SOURCE = '''
class Greedy:
    """Always the first arm."""

    def reset(self, seed=None):
        pass

    def act(self, obs):
        return 0

    def update(self, obs, action, reward):
        pass
'''


@pytest.fixture
def agent_module(tmp_path, monkeypatch):
    """A module ``<name>.py`` holding ``Greedy`` in a fresh current directory that is not on
    sys.path."""
    name = f"myagent_{uuid.uuid4().hex[:8]}"  # fresh: never cached in sys.modules
    (tmp_path / f"{name}.py").write_text(AGENT_SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    yield name
    sys.modules.pop(name, None)


# -- 1. module:Class from the current directory, python -m linbandit_gym ----------------


def test_run_finds_an_agent_module_in_the_current_directory(agent_module, capsys):
    assert main(["run", "--agent", f"{agent_module}:Greedy", *TINY_ENV]) == 0
    assert f"{agent_module}:Greedy" in capsys.readouterr().out


def test_sweep_config_finds_an_agent_module_in_the_current_directory(agent_module):
    cfg = {
        "envs": [{"id": SYNTH, "args": {"d": 3, "horizon": 5}}],
        "agents": [{"name": f"{agent_module}:Greedy"}],
    }
    assert len(parse_config(cfg).runs) == 1


def test_module_class_errors_name_the_spec(agent_module):
    with pytest.raises(ValueError, match="no attribute 'Greedyy'.*did you mean 'Greedy'"):
        load_object(f"{agent_module}:Greedyy")
    with pytest.raises(ValueError, match="current directory"):
        load_object("no_such_module_anywhere:Agent")


def test_python_dash_m_linbandit_gym_is_the_command(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "linbandit_gym", "list"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert SYNTH in out.stdout and "OFUL" in out.stdout


# -- 3. a closed pipe ends the command quietly --------------------------------------------


@pytest.mark.slow  # an interpreter starts
def test_closed_pipe_exits_quietly(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "seeds": 3,
                "envs": [{"id": SYNTH, "args": {"d": 3, "horizon": 5}}],
                "agents": [{"name": "OFUL"}],
            }
        )
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "linbandit_gym",
            "sweep",
            str(config),
            "--dry-run",
            "--out",
            str(tmp_path / "o"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    proc.stdout.close()  # the reader goes away before the first line (as `| head -0` would)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err and err == ""


# -- 4. the report shows the arguments each row ran with ----------------------------------


def test_report_shows_tuned_arguments_and_unicode(tmp_path):
    cfg = {
        "name": "tuned",
        "seeds": 1,
        "envs": [{"id": SYNTH, "args": {"d": 3, "n_arms": 3, "horizon": 8}, "label": "A"}],
        "agents": [
            {"name": "OFUL", "args": {"beta": 0.1, "lam": 1.0}},
            {"name": "OFUL", "args": {"beta": 0.1, "lam": 2.0}, "label": "other"},
        ],
        "tuned": {"A": {"OFUL": {"beta": 1.0}}},
        "plots": [{"kind": "regret", "name": "r", "title": "regret and Δ_t"}],
    }
    out = tmp_path / "sweep"
    assert sweep(cfg, out, log=None).ok
    md = write_report(out, fmt="md").read_text(encoding="utf-8")
    rows = [line for line in md.splitlines() if line.startswith("| A ")]
    assert len(rows) == 2
    oful, other = (next(r for r in rows if f"| {name} " in r) for name in ("OFUL", "other"))
    assert "beta=1.0" in oful and "beta=0.1" not in oful  # the tuned value, not the config's args
    assert "beta=0.1" in other and "lam=2.0" in other
    assert "Δ_t" in md and "\\u0394" not in md
    page = write_report(out, replot=False).read_text(encoding="utf-8")
    assert "beta=1.0" in page and "Δ_t" in page and "\\u0394" not in page


# -- 5. linbandit list ---------------------------------------------------------------------


def test_rst_to_text():
    from linbandit_gym.cli import rst_to_text

    assert (
        rst_to_text(":class:`ClassificationBanditEnv` on ``digits``")
        == "ClassificationBanditEnv on digits"
    )
    assert rst_to_text(":func:`~agents.sketches.fd.frequent_directions` and :math:`\\sqrt{d}`") == (
        "frequent_directions and \\sqrt{d}"
    )
    assert rst_to_text("see :class:`the env <linbandit_gym.envs.bai.BAILinBanditEnv>`") == (
        "see linbandit_gym.envs.bai.BAILinBanditEnv"
    )


def test_list_is_plain_text_one_line_per_id(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and ":class:" not in out and ":func:" not in out
    lines = out.splitlines()
    described = {}
    for env_id in ENV_IDS:
        [line] = [line for line in lines if line.split()[:1] == [env_id]]
        described[env_id] = line[len(line.split()[0]) :].strip()
        assert described[env_id], env_id
    assert len(set(described.values())) == len(ENV_IDS), described  # every id says what it is
    for name in AGENTS:
        assert sum(line.split()[:1] == [name] for line in lines) == 1


# -- 6. labels -----------------------------------------------------------------------------


@pytest.mark.skipif("SOFUL" not in AGENTS, reason="needs SOFUL")
@pytest.mark.filterwarnings(
    "ignore::agents._warnings.SketchSizeWarning"
)  # a small sketch at a small d, on purpose
def test_run_labels_carry_non_default_arguments(tmp_path, capsys):
    for size in (3, 2):
        assert (
            main(["run", "--agent", "SOFUL", "--agent-arg", f"sketch_size={size}", *TINY_ENV]) == 0
        )
        assert f"SOFUL l={size} " in capsys.readouterr().out
    default_beta = inspect.signature(AGENTS["SOFUL"]).parameters["beta"].default
    assert (
        main(["run", "--agent", "soful", "--agent-arg", f"beta={default_beta!r}", *TINY_ENV]) == 0
    )
    out = capsys.readouterr().out
    assert "SOFUL " in out and "beta=" not in out  # a default value is not part of the label


def test_demo_and_sweep_label_alike():
    cfg = {
        "envs": [{"id": SYNTH, "args": {"d": 4, "horizon": 5}}],
        "agents": [
            {"name": "SOFUL", "args": {"lam": 0.2, "beta": 0.01}, "grid": {"sketch_size": [20]}},
            {
                "name": "DBSLinUCB",
                "args": {"lam": 0.2, "beta": 0.01},
                "grid": {"l0": [2], "eps": [8]},
            },
        ],
    }
    sweep_labels = [r.agent_label for r in parse_config(cfg).runs]
    assert sweep_labels == ["SOFUL l=20", "DBSLinUCB l0=2 eps=8"]
    from linbandit_gym.specs import args_label

    assert args_label("SOFUL", {"sketch_size": 20}) == sweep_labels[0]
    demo = [label for label, _ in demo_agents()]
    assert "SOFUL l=20" in demo and "DBSLinUCB l0=50 eps=8" in demo


# -- 7. make demo: base install only; a line per finished agent, flushed ------------------


def _make_dry_run(target: str, venv: Path) -> str:
    out = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(
    shutil.which("make") is None or not (REPO / "Makefile").exists(), reason="needs make"
)
def test_make_demo_installs_only_the_base_and_make_test_the_dev_extras(tmp_path):
    demo = _make_dry_run("demo", tmp_path / "venv")
    assert "pip install" in demo and "linbandit demo" in demo
    assert "pip install -q -e .\n" in demo and "[dev]" not in demo
    test = _make_dry_run("test", tmp_path / "venv")
    assert '-e ".[dev]"' in test and "pytest" in test


class _FlushLog(io.StringIO):
    """stdout that records which text had been flushed when."""

    def __init__(self):
        super().__init__()
        self.flushed_at: list[int] = []

    def flush(self):
        self.flushed_at.append(len(self.getvalue()))
        super().flush()


def test_demo_prints_a_flushed_line_per_finished_agent(tmp_path, monkeypatch):
    stdout = _FlushLog()
    monkeypatch.setattr(sys, "stdout", stdout)
    assert (
        main(["demo", "--horizon", "5", "--seeds", "1", "--out", str(tmp_path), "--no-progress"])
        == 0
    )
    text = stdout.getvalue()
    labels = [label for label, _ in demo_agents()]
    for i, label in enumerate(labels):
        line = f"[{i + 1}/{len(labels)}] {label}: final regret"
        assert line in text
        end = text.index("\n", text.index(line)) + 1
        assert end in stdout.flushed_at  # on its way through a pipe as soon as the agent is done
    assert text.index(f"[{len(labels)}/{len(labels)}]") < text.index("peak memory")


# -- one label per agent, whoever plays it --------------------------------------------------------


def test_run_and_the_command_line_label_an_agent_alike(capsys):
    from agents import SOFUL, DBSLinUCB

    env = {"d": 100, "n_arms": 3, "horizon": 5}  # at d = 100 a sketch of 10 rows saves memory
    cases = (
        (SOFUL(lam=1.0, beta=0.1, sketch_size=10), ["beta=0.1", "sketch_size=10"]),
        (DBSLinUCB(sketch="rfd", l0=4), ["sketch=rfd", "l0=4"]),
    )
    for agent, cli_args in cases:
        records = linbandit_gym.run(SYNTH, agent, seeds=1, env_kwargs=env, progress=False)
        label = records["agent"].iloc[0]
        name = "SOFUL" if isinstance(agent, SOFUL) else "DBSLinUCB"
        args = [word for arg in cli_args for word in ("--agent-arg", arg)]
        assert (
            main(
                [
                    "run",
                    "--env",
                    SYNTH,
                    "--agent",
                    name,
                    *args,
                    "--no-progress",
                    *[word for k, v in env.items() for word in ("--env-arg", f"{k}={v}")],
                ]
            )
            == 0
        )
        row = capsys.readouterr().out.splitlines()[1]  # the summary's one row: agent, env, ...
        assert row.split()[: len(label.split()) + 1] == [*label.split(), SYNTH], (row, label)
    assert label == "DBSLinUCB-RFD l0=4"  # its own name, whose default sketch is rfd: no sketch=rfd


# -- what a summary says of the times and of a sketch gone exact -----------------------------------


def test_the_summary_says_how_times_were_measured_and_when_a_sketch_went_exact():
    import numpy as np

    from agents import DBSLinUCB
    from linbandit_gym.cli import format_summary
    from linbandit_gym.evaluate import summarize

    env = {"d": 40, "n_arms": 10, "horizon": 60}
    # the round each seed's DBSLinUCB switched to exact updates, watched round by round
    switched = []
    for seed in (0, 1):
        agent, game = DBSLinUCB(l0=4, eps=2.0), gym.make(SYNTH, **env)
        obs, _ = game.reset(seed=seed)
        agent.reset(seed=seed)
        for t in range(1, 61):
            arm = agent.act(obs)
            after, reward, *_ = game.step(arm)
            agent.update(obs, arm, reward)
            obs = after
            if agent.exact_mode:
                switched.append(t)
                break
    records = pd.concat(
        [
            linbandit_gym.run(
                SYNTH,
                DBSLinUCB(l0=4, eps=2.0),
                seeds=[0, 1],
                env_kwargs=env,
                batched=batched,
                progress=False,
            )
            for batched in (False, True)
        ]
    )
    records["agent"] = np.repeat(["alone", "batched"], len(records) // 2)
    summary = summarize(records)
    assert summary["exact_seeds"].tolist() == [2, 2]
    assert summary["exact_from_first"].tolist() == [min(switched)] * 2
    assert summary["exact_from_last"].tolist() == [max(switched)] * 2
    text = format_summary(summary)
    first, last = min(switched), max(switched)
    rounds = f"t={first}" if first == last else f"t={first}-{last}"
    assert f"from {rounds}" in text and "exact updates: the round from which" in text
    assert "batch share = the seeds advanced together" in text  # the batched rows' times are shares
