"""Trust boundaries of what users type: a config or a command-line argument that names a
function, an absolute or ``..`` path, or an attribute-walking label changes nothing on disk
outside the output directory and runs no code.

Each case runs the command the way a user would (``main([...])`` from a working directory
inside a temporary tree) and compares a snapshot of the whole tree before and after: every
file outside the output directory keeps its bytes and its time stamp, and no file appears.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from worker_pools import horizon_for_workers

from linbandit_gym.cli import main
from linbandit_gym.experiments import ConfigError, parse_config, sweep
from linbandit_gym.registry import lookup_agent
from linbandit_gym.specs import load_object

SMALL_ENV = {"id": "LinBandit-Synthetic-v0", "args": {"d": 3, "n_arms": 2, "horizon": 5}}
RUN = [
    "run",
    "--env",
    "LinBandit-Synthetic-v0",
    "--horizon",
    "5",
    "--env-arg",
    "d=3",
    "--env-arg",
    "n_arms=2",
    "--no-progress",
]


def _snapshot(root: Path, skip: Path | None = None) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (but those under ``skip``): its size and modification time."""
    out = {}
    for path in root.rglob("*"):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        if path.is_file() or path.is_symlink():
            stat = path.lstat()
            out[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return out


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A temporary tree: ``world/a/b/c`` is the working directory, ``world/keep.txt`` a file a
    user owns; the output directory is ``world/a/b/c/out``."""
    cwd = tmp_path / "a" / "b" / "c"
    cwd.mkdir(parents=True)
    (tmp_path / "keep.txt").write_text("mine")
    (tmp_path / "a" / "notes.md").write_text("also mine")
    monkeypatch.chdir(cwd)
    return tmp_path


def _config(world: Path, **changes) -> Path:
    cfg = {
        "name": "small",
        "seeds": 1,
        "envs": [SMALL_ENV],
        "agents": [{"name": "OFUL", "args": {"beta": 0.1}}],
    }
    cfg.update(changes)
    path = Path.cwd() / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _refused(capsys, argv: list[str], *words: str) -> str:
    """``main(argv)`` exits 2 with one line that holds ``words``; returns that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


# -- names that are not agents run nothing ---------------------------------------------------


@pytest.mark.parametrize(
    "name, args, what",
    [
        ("os:system", {"command": "touch {x}"}, "built-in function 'system'"),
        ("subprocess:getoutput", {"cmd": "touch {x}"}, "function 'getoutput'"),
        ("subprocess:check_call", {"args": ["touch", "{x}"]}, "function 'check_call'"),
        ("builtins:exec", {"source": "open({x!r}, 'w')"}, "built-in function 'exec'"),
        ("collections:OrderedDict", {}, "class 'OrderedDict'"),
        ("subprocess:Popen", {"args": ["touch", "{x}"]}, "class 'Popen'"),
        ("os:path.__class__", {}, "no dunder names"),
    ],
)
def test_a_config_naming_a_function_runs_nothing_in_validation_dry_run_or_sweep(
    world, capsys, name, args, what
):
    x = world / "x"
    filled = {
        k: (
            v.replace("{x}", str(x))
            if isinstance(v, str)
            else [a.replace("{x}", str(x)) for a in v]
        )
        for k, v in args.items()
    }
    if name == "builtins:exec":
        filled = {"source": f"open({str(x)!r}, 'w')"}
    config = _config(world, agents=[{"name": name, "args": filled}])
    before = _snapshot(world)
    with pytest.raises(ConfigError, match="agents\\[0\\].name"):
        parse_config(config)
    for argv in (["sweep", str(config), "--dry-run"], ["sweep", str(config), "--out", "out"]):
        err = _refused(capsys, argv, "agents[0].name", name)
        assert what in err, err
    assert not x.exists()
    assert _snapshot(world) == before  # nothing written anywhere, not even the output directory


@pytest.mark.parametrize(
    "name, arg",
    [
        ("os:system", "command=touch {x}"),
        ("subprocess:getoutput", "cmd=touch {x}"),
        ("collections:OrderedDict", "a=1"),
    ],
)
def test_run_agent_naming_a_function_runs_nothing(world, capsys, name, arg):
    x = world / "x"
    before = _snapshot(world)
    _refused(
        capsys,
        RUN + ["--agent", name, "--agent-arg", arg.replace("{x}", str(x)), "--out", "out"],
        name,
        "not an agent class",
    )
    assert not x.exists() and _snapshot(world) == before


def test_a_module_name_is_refused_before_anything_is_called(world, capsys):
    _refused(
        capsys,
        RUN + ["--agent", "os:path"],
        "the module 'posixpath'" if os.name == "posix" else "module",
    )


def test_the_object_is_checked_before_it_is_called(world):
    """A class that would do something when called (its metaclass) is refused on what it lacks."""
    (Path.cwd() / "trap.py").write_text(
        "import pathlib\n"
        "class Meta(type):\n"
        "    def __call__(cls, *a, **k):\n"
        "        pathlib.Path('called').write_text('x')\n"
        "class NotAnAgent(metaclass=Meta):\n"
        "    def act(self, obs): return 0\n"
        "def make_list(n: int) -> list:\n"
        "    pathlib.Path('called').write_text('x')\n"
    )
    for spec, missing in (("trap:NotAnAgent", "no reset, update"), ("trap:make_list", "factory")):
        with pytest.raises(ValueError, match=missing):
            lookup_agent(spec)
    assert not (Path.cwd() / "called").exists()
    sys.modules.pop("trap", None)


def test_a_users_agent_class_and_documented_factory_still_work(world):
    """Importing a user's module from the working directory stays (a config is code): a class
    with reset/act/update, or a function annotated to return one."""
    (Path.cwd() / "mine.py").write_text(
        "class Greedy:\n"
        "    def __init__(self, eps: float = 0.0): self.eps = eps\n"
        "    def reset(self, seed=None): pass\n"
        "    def act(self, obs): return 0\n"
        "    def update(self, obs, action, reward): pass\n"
        "def make_greedy(eps: float = 0.5) -> Greedy:\n"
        "    return Greedy(eps)\n"
    )
    try:
        assert lookup_agent("mine:Greedy").factory.__name__ == "Greedy"
        agent = lookup_agent("mine:make_greedy").build({"eps": 0.25})
        assert type(agent).__name__ == "Greedy" and agent.eps == 0.25
        with pytest.raises(ValueError, match="has no argument 'epsilon'"):
            lookup_agent("mine:make_greedy").check_args({"epsilon": 1})
        result = sweep(
            {"seeds": 1, "envs": [SMALL_ENV], "agents": [{"name": "mine:make_greedy"}]},
            "out",
            log=None,
        )
        assert result.ok and len(result.executed) == 1
    finally:
        sys.modules.pop("mine", None)


def test_dotted_and_dunder_specs_are_names_not_expressions():
    with pytest.raises(ValueError, match="dunder"):
        load_object("os:path.__class__")
    with pytest.raises(ValueError, match="dunder"):
        load_object("agents:OFUL.__init__.__globals__")
    with pytest.raises(ValueError, match="identifiers"):
        load_object("os:system('x')")


# -- nothing but a user's module:Class is imported from the working directory ---------------

#: A module named like a library that the commands import late (``scipy``: the sketches'
#: BLAS; ``pickle``: what every worker process starts with): run, it leaves a file behind.
SHADOW = (
    "import pathlib\npathlib.Path({marker!r}).write_text('executed')\nraise ImportError('shadow')\n"
)
LINBANDIT = str(Path(sys.executable).with_name("linbandit"))


@pytest.mark.parametrize(
    "how",
    [[LINBANDIT], pytest.param([sys.executable, "-m", "linbandit_gym"], marks=pytest.mark.slow)],
    ids=["command", "python-m"],
)
def test_a_library_named_file_in_the_working_directory_is_never_imported(world, how):
    """``scipy.py`` in the working directory is not executed by ``linbandit sweep c.yaml
    --dry-run`` for a config that names only OFUL on LinBandit-Synthetic-v0 (the env id's
    resolution puts nothing on sys.path; validation builds OFUL, whose sketches import scipy),
    nor by ``python -m linbandit_gym``."""
    marker = world / "shadowed"
    (Path.cwd() / "scipy.py").write_text(SHADOW.format(marker=str(marker)))
    done = subprocess.run(
        [*how, "sweep", str(_config(world)), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "the working directory's scipy.py was imported"


@pytest.mark.slow  # two worker processes start (torch each)
def test_worker_processes_import_nothing_from_the_working_directory(world):
    """The interpreters a ``--workers 2`` sweep starts (``python -c``) would put the working
    directory first; a ``pickle.py`` there must not run in them."""
    marker = world / "shadowed"
    (Path.cwd() / "pickle.py").write_text(SHADOW.format(marker=str(marker)))
    # long enough for the sweep to start its two workers
    env = {**SMALL_ENV, "args": {**SMALL_ENV["args"], "horizon": horizon_for_workers(2)}}
    config = _config(world, seeds=2, envs=[env])
    argv = [
        LINBANDIT,
        "sweep",
        str(config),
        "--out",
        "out",
        "--workers",
        "2",
        "--no-plots",
        "--no-batched",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "in this process, not on" not in done.stdout, done.stdout  # the workers started
    assert not marker.exists(), "a worker imported the working directory's pickle.py"


def test_a_users_module_is_looked_up_in_the_working_directory_and_sys_path_restored(world):
    (Path.cwd() / "mine_lookup.py").write_text(
        "class Greedy:\n"
        "    def reset(self, seed=None): pass\n"
        "    def act(self, obs): return 0\n"
        "    def update(self, obs, action, reward): pass\n"
    )
    before = list(sys.path)
    try:
        assert load_object("mine_lookup:Greedy").__name__ == "Greedy"
        assert sys.path == before
        with pytest.raises(ValueError, match="current directory"):
            load_object("not_there_anywhere:Agent")
        assert sys.path == before
    finally:
        sys.modules.pop("mine_lookup", None)


# -- paths stay inside the output directory -----------------------------------------------


@pytest.mark.parametrize("plot_name", ["{abs}", "../../../x", "..", "sub/dir", "a\\b", "x\ny"])
def test_plot_names_are_names(world, capsys, plot_name):
    target = str(world / "abs") if plot_name == "{abs}" else plot_name
    config = _config(world, plots=[{"kind": "pareto", "name": target}])
    before = _snapshot(world)
    for argv in (["sweep", str(config), "--dry-run"], ["sweep", str(config), "--out", "out"]):
        _refused(capsys, argv, "plots[0].name", "not a path")
    assert _snapshot(world) == before
    assert not list(world.glob("abs*")) and not (world / "a" / "x").exists()


@pytest.mark.parametrize("kind", ["pareto", "regret", "scaling", "fronts"])
def test_an_edited_config_yaml_cannot_send_plot_files_out_of_the_directory(world, capsys, kind):
    """``linbandit plot DIR`` reads DIR/config.yaml, which may have been edited since the sweep
    checked it: an absolute or ``..`` plot name is refused there too (scaling plots also
    write NAME_slopes.csv|md)."""
    config = _config(world)
    assert main(["sweep", str(config), "--out", "out", "--no-plots", "--quiet"]) == 0
    capsys.readouterr()
    out = Path.cwd() / "out"
    raw = yaml.safe_load((out / "config.yaml").read_text())
    for target in (str(world / "abs"), "../../../../escaped"):
        raw["plots"] = [{"kind": kind, "name": target, "x": "d"}]
        (out / "config.yaml").write_text(yaml.safe_dump(raw))
        before = _snapshot(world, skip=out)
        for command in ("plot", "report"):
            _refused(capsys, [command, str(out)], "config.yaml", "plots[0].name")
        assert _snapshot(world, skip=out) == before
        assert not list(world.glob("abs*")) and not list(world.rglob("escaped*"))


@pytest.mark.parametrize("name", ["../../x", "/tmp/elsewhere", "..", "a/b"])
def test_a_config_name_cannot_put_the_sweep_outside_runs(world, capsys, name):
    config = _config(world, name=name)
    before = _snapshot(world)
    _refused(capsys, ["sweep", str(config)], "name:", "not a path")
    _refused(capsys, ["tune", str(config)], "name:", "not a path")
    assert _snapshot(world) == before and not (world / "a" / "x").exists()


def test_labels_that_look_like_paths_stay_names_on_disk(world, capsys):
    """A label is free text (it titles figures); wherever one names a file it is slugged."""
    config = _config(
        world,
        envs=[{**SMALL_ENV, "label": "../../../env"}],
        agents=[
            {"name": "OFUL", "label": "/abs/../../oful"},
            {"name": "OFUL", "args": {"beta": 0.5}, "label": "../../../other"},
        ],
    )
    before = _snapshot(world)
    assert main(["sweep", str(config), "--out", "out", "--quiet"]) == 0
    assert main(["report", str(Path.cwd() / "out")]) == 0
    capsys.readouterr()
    out = Path.cwd() / "out"
    assert _snapshot(world, skip=out) == {**before, "a/b/c/cfg.yaml": before["a/b/c/cfg.yaml"]}
    assert all(out in p.parents for p in out.rglob("*"))


# -- labels substitute arguments, nothing else -------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "{beta.__class__.__mro__[1].__subclasses__}",
        "{beta.__class__}",
        "{grid[0]}",
        "{beta!r}",
        "{beta:{lam}}",
        "{0}",
        "{}",
    ],
)
def test_label_templates_cannot_reach_object_internals(world, capsys, template):
    config = _config(
        world, agents=[{"name": "OFUL", "args": {"beta": 0.1, "lam": 1.0}, "label": template}]
    )
    before = _snapshot(world)
    err = _refused(capsys, ["sweep", str(config), "--dry-run"], "agents[0].label")
    assert "subclasses" not in err.replace(template, "") and "<class" not in err, err
    assert _snapshot(world) == before
    from linbandit_gym.specs import format_label

    with pytest.raises(ValueError):
        format_label(template, {"beta": 0.1, "lam": 1.0})


def test_label_templates_substitute_and_format_argument_values():
    from linbandit_gym.specs import format_label

    assert format_label("SOFUL l={sketch_size}", {"sketch_size": 10}) == "SOFUL l=10"
    assert format_label("eps={eps:.1f} {{x}}", {"eps": 2}) == "eps=2.0 {x}"
    assert format_label("{sketch} {beta}", {"sketch": "fd", "beta": "theory"}) == "fd theory"
    assert format_label("{grid}", {"grid": [1, 2]}) == "[1, 2]"  # shown with str, never indexed
    with pytest.raises(ValueError, match="did you mean 'eps'"):
        format_label("{epss}", {"eps": 1})


def test_file_names_are_checked():
    from linbandit_gym.specs import check_file_name

    for good in ("fig1a", "regret vs time", "pareto.v2", "Δ_t"):
        assert check_file_name(good, "name") == good
    for bad in ("", "/abs", "../x", "..", ".", "a/b", "a\\b", "x\0y", "x" * 300):
        with pytest.raises(ValueError):
            check_file_name(bad, "name")
