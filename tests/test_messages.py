"""Messages in the user's terms: argument help (``describe``), command output, warnings said once
at the user's line. (Argument checks under the name typed: tests/test_cli_arguments.py.)"""

from __future__ import annotations

import doctest
import re

import pytest
import yaml
from cli_inputs import ENVS, SYNTH, TINY

import linbandit_gym.arguments as arguments_module
import linbandit_gym.text as text_module
from agents import AGENTS
from linbandit_gym.cli import main
from linbandit_gym.registry import lookup_agent


@pytest.mark.parametrize("module", [arguments_module, text_module])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


# -- describe: every argument, its type, default and meaning ------------------------------


def _rows(text: str) -> dict[str, str]:
    """``{argument: its row}`` of a ``describe`` table (continuation lines joined)."""
    lines = text.split("arguments:\n", 1)[1].splitlines()[1:]
    rows: dict[str, str] = {}
    last = None
    for line in lines:
        if line.startswith("  ") and line[2] != " ":
            last = line.split()[0]
            rows[last] = line.strip()
        elif last:
            rows[last] += " " + line.strip()
    return rows


@pytest.mark.parametrize(
    "name",
    [
        "SOFUL",
        "OFUL",
        "DBSLinUCB-FD",
        "GAllocation",
        SYNTH,
        "LinBandit-MNIST-v0",
        "LinBandit-Digits-v0",
        "LinBandit-BAI-v0",
    ],
)
def test_describe_lists_what_the_checks_accept_with_type_default_and_meaning(name, capsys):
    from linbandit_gym.registration import ENV_IDS
    from linbandit_gym.specs import env_arguments

    assert main(["describe", name]) == 0
    out = capsys.readouterr().out
    accepted = env_arguments(name) if name in ENV_IDS else lookup_agent(name).arguments()
    rows = _rows(out)
    assert list(rows) == [a.name for a in accepted]  # the same signature the checks read
    for argument in accepted:
        row = rows[argument.name]
        assert argument.type_text in row and argument.default_text in row
        # documented, from the docstring, and whole: no clause of it left out
        assert argument.meaning and " ".join(argument.meaning.split()) in " ".join(row.split())
    assert "(not documented)" not in out


def _every_documented_argument():
    """``(owner, Argument)`` of every registered env id and agent name, as describe reads them."""
    from linbandit_gym.registration import ENV_IDS
    from linbandit_gym.registry import agent_names
    from linbandit_gym.specs import env_arguments

    pairs = [(env_id, a) for env_id in ENV_IDS for a in env_arguments(env_id)]
    return pairs + [(name, a) for name in agent_names() for a in lookup_agent(name).arguments()]


def test_describe_keeps_a_meaning_past_its_colons():
    from linbandit_gym.registry import describe

    rank = " ".join(_rows(describe("LinBandit-HeavyTail-v0"))["rank"].split())
    assert "None: full rank d; an int in [1, d]: arms in a fixed rank-dim subspace" in rank
    min_gap = " ".join(_rows(describe("LinBandit-BAI-v0"))["min_gap"].split())
    assert '"random": redraw until the best arm leads by at least this' in min_gap
    theta_bound = " ".join(_rows(describe("SOFUL"))["theta_bound"].split())
    assert 'used by beta="theory" only (written H in the formulas)' in theta_bound


def test_no_meaning_points_at_text_describe_does_not_show():
    elsewhere = re.compile(r"\b(see|as) (above|below)\b|\((above|below)\)", re.IGNORECASE)
    pointing = [
        (owner, a.name, a.meaning)
        for owner, a in _every_documented_argument()
        if elsewhere.search(a.meaning)
    ]
    assert not pointing, pointing


#: A literal a meaning may state as the default: a number, True, False, None or a quoted string.
_LITERAL = r"-?\d[\d.e+-]*|True|False|None|\"[^\"]*\"|'[^']*'"


def _same_value(written: str, default: object) -> bool:
    try:
        return float(written) == float(default)  # "1" and 1.0 are the same default
    except (TypeError, ValueError):
        return written.strip("'\"") == str(default)


def test_documented_defaults_agree_with_the_signature():
    # "(default 0.01)" or "True (default)" in a meaning must be the default describe shows beside it
    wrong = []
    for owner, argument in _every_documented_argument():
        said = re.findall(rf"\bdefaults?:? ({_LITERAL})", argument.meaning)
        said += re.findall(rf"(?:^|[\s(])({_LITERAL}) \(default\)", argument.meaning)
        wrong += [
            (owner, argument.name, value, argument.default)
            for value in said
            if not _same_value(value.rstrip("."), argument.default)
        ]
    assert not wrong, wrong


def test_describe_reads_the_docstrings_meanings():
    from linbandit_gym.registry import describe

    soful = _rows(describe("soful"))  # case ignored
    words = ["sketch_size", "int", "50", "FD", "sketch", "size", "l", ">=", "1;"]
    assert soful["sketch_size"].split()[:9] == words
    assert "ridge lambda > 0" in soful["lam"]
    # "d, device, dtype, seed: see TorchAgent" is followed
    assert "dimension of the arms" in soful["d"]
    mnist = _rows(describe("linbandit-mnist-v0"))
    assert " ".join(mnist["dataset"].split()).startswith(
        "dataset str | tuple[Any, Any] 'mnist' a name of envs_data.DATASETS (\"mnist\": "
        "the 5,000-image subset"
    )
    assert "rounds per episode" in mnist["horizon"]


def test_describe_of_an_undocumented_user_class_says_so(tmp_path, monkeypatch):
    (tmp_path / "myagents.py").write_text(
        "class Greedy:\n"
        "    '''Plays the best mean.\n\n    Args:\n        eps: exploration rate.\n    '''\n"
        "    def __init__(self, eps: float = 0.1, width: int = 3):\n        pass\n"
        # an agent: module:Class names resolve to agents only
        "    def reset(self, seed=None): pass\n"
        "    def act(self, obs): return 0\n"
        "    def update(self, obs, action, reward): pass\n"
    )
    monkeypatch.chdir(tmp_path)
    from linbandit_gym.registry import describe

    rows = _rows(describe("myagents:Greedy"))
    assert rows["eps"].split() == ["eps", "float", "0.1", "exploration", "rate."]
    assert rows["width"].split() == ["width", "int", "3", "(not", "documented)"]


def test_describe_an_unknown_name_suggests_the_closest(capsys):
    assert main(["describe", "SOFLU"]) == 2
    assert "did you mean 'SOFUL'?" in capsys.readouterr().err
    assert main(["describe", "LinBandit-Mnist"]) == 2
    assert "did you mean 'LinBandit-MNIST-v0'?" in capsys.readouterr().err
    assert main(["describe", "linbandit_mnist_v0"]) == 0  # case and separators ignored


def test_docstring_sections_and_tables_are_parsed():
    from linbandit_gym.arguments import documented_arguments

    class Documented:
        """Summary.

        ## Arguments
        | argument | default | meaning |
        |---|---|---|
        | ``a`` | 1 | the first |

        Args:
            b, c (R): shared text that
                goes on.
            **kwargs: forwarded.

        Example: not an argument.
        """

    assert documented_arguments(Documented) == {
        "a": "the first",
        "b": "shared text that goes on.",
        "c": "shared text that goes on (written R in the formulas).",
        "kwargs": "forwarded.",
    }


def test_list_points_at_describe(capsys):
    assert main(["list"]) == 0
    assert "linbandit describe NAME" in capsys.readouterr().out


# -- command output ------------------------------------------------------------------------


class FirstArm:
    """An agent of a user's, without ``memory_bytes``."""

    def reset(self, seed=None):
        pass

    def act(self, obs):
        return 0

    def update(self, obs, action, reward):
        pass


def test_one_seed_has_no_spread_and_unreported_memory_says_so(tmp_path, capsys):
    assert main(["run", *TINY, "--agent", f"{__name__}:FirstArm", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "± 0.00" not in out and "0 B" not in out
    assert "not reported" in out
    summary_md = (tmp_path / "summary.md").read_text()
    assert "± 0.0" not in summary_md and "not reported" in summary_md


def test_several_seeds_show_the_spread(capsys):
    assert main(["run", *TINY, "--agent", "OFUL", "--seeds", "2"]) == 0
    assert " ± " in capsys.readouterr().out


def test_progress_lines_say_what_their_seconds_are(tmp_path, capsys):
    import re

    from linbandit_gym.cli import run_experiment

    lines: list[str] = []
    run_experiment(
        SYNTH,
        [("OFUL", lookup_agent("OFUL").build({}))],
        seeds=1,
        horizon=5,
        env_kwargs={"d": 4, "n_arms": 3},
        log=lines.append,
        progress=False,
    )
    assert re.search(r"; 1 seed played in \d+\.\d s$", lines[0]), lines
    assert "± 0.00" not in lines[0]
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"seeds": 1, "envs": ENVS, "agents": [{"name": "OFUL"}]}))
    assert main(["sweep", str(config), "--out", str(tmp_path / "o"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    progress = [line for line in out.splitlines() if line.startswith("[1/1]")]
    assert progress and re.search(r"\(\d+ s since the sweep started\)$", progress[0]), out
    assert not re.search(r"\(\d+ s\)$", out, re.MULTILINE)
    assert "worker(s)" not in out and "thread(s)" not in out and "1 worker, 1 thread per run" in out


def test_batches_are_counted_in_words():
    from linbandit_gym.experiments.sweep import batch_wording

    assert batch_wording([2, 2]) == "4 runs in 2 batches of 2 members"
    assert batch_wording([5]) == "5 runs in 1 batch of 5 members"
    assert batch_wording([2, 6, 4]) == "12 runs in 3 batches of 2 to 6 members"
    assert "batch(es)" not in batch_wording([2, 2]) and "2-2" not in batch_wording([2, 2])


# -- warnings: at the user's line, once per cause, and none unexpected in the test run ---------


def test_a_warning_points_at_the_users_line_through_gym_make_and_is_said_once():
    import warnings

    import gymnasium as gym

    from linbandit_gym.envs import LinBanditWarning

    env = gym.make(SYNTH, d=3, n_arms=4)  # render() goes through Gymnasium's wrappers first
    env.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own: once per (message, category, place)
        for _ in range(5):
            env.render()
    assert [w.category for w in caught] == [LinBanditWarning]
    assert caught[0].filename == __file__, caught[0].filename
    env.close()


@pytest.mark.slow  # a pytest run in a subprocess
def test_an_unexpected_project_warning_fails_the_test_run(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "test_unexpected.py").write_text(
        "import warnings\n"
        "import linbandit_gym\n"
        "from linbandit_gym.envs import SyntheticLinBanditEnv\n\n"
        "def test_render_without_a_mode():\n"
        "    SyntheticLinBanditEnv(d=3, n_arms=4).render()\n\n"
        "def test_a_library_line_that_warns(monkeypatch):\n"
        "    import linbandit_gym.text as text\n"
        "    exec(compile('warnings.warn(\"from the library\")', text.__file__, 'exec'),\n"
        "         {'warnings': warnings, '__name__': 'linbandit_gym.text'})\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            str(root / "pyproject.toml"),
            "--rootdir",
            str(root),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "2 failed" in proc.stdout, proc.stdout[-2000:]
    assert "LinBanditWarning: render() was called with render_mode=None" in proc.stdout
    assert "UserWarning: from the library" in proc.stdout


# -- warnings of a command and of a sweep's runs: said once, by the command, naming their source

_SKETCH_50_AT_20 = "SOFUL(sketch_size=50) at d=20 holds"


@pytest.mark.filterwarnings("default::agents.SketchSizeWarning")
def test_a_command_says_a_warning_once_on_stderr_not_at_its_own_script(capsys):
    args = [
        "run",
        "--env",
        SYNTH,
        "--env-arg",
        "d=20",
        "--env-arg",
        "n_arms=3",
        "--horizon",
        "5",
        "--seeds",
        "3",
        "--no-progress",
        "--no-batched",
        "--agent",
        "SOFUL",
        "--agent-arg",
        "sketch_size=50",
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "SketchSizeWarning" in line]
    said_as = f"linbandit run: warning: SketchSizeWarning: {_SKETCH_50_AT_20}"
    assert len(said) == 1 and said[0].startswith(said_as)
    assert ".py:" not in err and "bin/linbandit" not in err  # no file and line: the command says it


@pytest.mark.filterwarnings("default::agents.SketchSizeWarning")
@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.slow)])  # 2: a pool
def test_a_sweep_says_each_warning_of_its_runs_once_naming_the_config_entry(
    workers, tmp_path, capsys, workers_cost_nothing
):
    # in this process or in spawned workers, every seed of the run warns: the sweep says it once
    # (l=2 is small enough at d=20 to warn of nothing, and discards nothing in 3 rounds)
    config = tmp_path / "warned.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "warned",
                "seeds": 3,
                "horizon": 3,
                "envs": [{"id": SYNTH, "args": {"d": 20, "n_arms": 3}}],
                "agents": [{"name": "OFUL"}, {"name": "SOFUL", "grid": {"sketch_size": [2, 50]}}],
            }
        )
    )
    out = tmp_path / "runs"
    command = ["sweep", str(config), "--out", str(out), "--workers", str(workers), "--no-batched"]
    assert main(command) == 0
    captured = capsys.readouterr()
    source = f"agents[1] (SOFUL l=50 on {SYNTH})"
    said = [line for line in captured.err.splitlines() if "Warning" in line]
    said_as = f"linbandit sweep: warning: SketchSizeWarning: {source}: {_SKETCH_50_AT_20}"
    assert len(said) == 1 and said[0].startswith(said_as), said
    assert "process.py" not in captured.err
    listed = f"SketchSizeWarning from {source}: {_SKETCH_50_AT_20}"
    assert "1 warning from the runs" in captured.out and listed in captured.out  # its summary
    assert listed in (out / "summary.md").read_text()
    assert main(["report", str(out)]) == 0
    assert listed.replace("'", "&#x27;") in (out / "report.html").read_text()


@pytest.mark.filterwarnings("default::agents.SketchSizeWarning")
def test_a_sweep_called_from_python_warns_at_the_callers_line():
    from agents import SketchSizeWarning
    from linbandit_gym.experiments import sweep

    config = {
        "seeds": 2,
        "envs": [{"id": SYNTH, "args": {"d": 20, "n_arms": 3, "horizon": 5}}],
        "agents": [{"name": "SOFUL", "args": {"sketch_size": 50}}],
    }
    import tempfile

    with pytest.warns(SketchSizeWarning) as caught:
        result = sweep(config, tempfile.mkdtemp(), log=None, batched=False)
    assert [w.filename for w in caught] == [__file__]
    assert str(caught[0].message).startswith(f"agents[0] (SOFUL on {SYNTH}): {_SKETCH_50_AT_20}")
    [(category, message)] = result.warnings
    assert category == "SketchSizeWarning"
    assert result.warnings[(category, message)] == [f"agents[0] (SOFUL on {SYNTH})"]


# -- describe: device, dtype and the registered sketch ---------------------------------------------


def test_describe_shows_types_for_device_and_dtype_and_the_registered_sketch():
    from linbandit_gym.registry import describe

    rfd = describe("DBSLinUCB-RFD").splitlines()
    sketch = next(line for line in rfd if line.split()[:1] == ["sketch"])
    assert sketch.split()[1:3] == ["str", "'rfd'"], sketch
    fd = describe("DBSLinUCB-FD").splitlines()
    assert next(line for line in fd if line.split()[:1] == ["sketch"]).split()[2] == "'fd'"
    for name in AGENTS:
        lines = describe(name).splitlines()
        for arg in ("device", "dtype"):
            line = next(line for line in lines if line.split()[:1] == [arg])
            assert line.split()[1] == "str", (name, line)  # "str | device | None", not "any"
            assert " any " not in line
