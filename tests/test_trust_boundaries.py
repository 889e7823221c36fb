"""The inputs that crossed a trust boundary, one test each: sizes refused before anything is
allocated, validation that builds nothing it has not checked,
workers that die, a Ray address nobody answers, Ctrl-C after the last run, an output directory
that cannot be written, the lock's holder. The agents' side: tests/test_agent_inputs.py and
tests/test_agent_memory.py; seeds every consumer takes: tests/test_seeds.py; arguments:
tests/test_cli_arguments.py."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cli_processes import LINUX, RUN, SMALL_ENV, THREE, cli, sigint_as_a_terminal_gives_it
from worker_pools import horizon_for_workers

from agents import AGENTS
from linbandit_gym.cli import main
from linbandit_gym.evaluate import run
from linbandit_gym.experiments import load_runs, plan, sweep

AGENT_SIDE = "agent-side, after the sketch core lands"
#: The agent-side tests build agents whose sketch is larger than OFUL's state, which they warn
#: about.
NO_SIZE_WARNING = pytest.mark.filterwarnings("ignore:.*more than OFUL's d x d inverse:UserWarning")


def _write(path: Path, config: dict) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _refused(capsys, argv: list[str], code: int = 2) -> str:
    assert main(argv) == code
    return _one_line(capsys.readouterr().err)


# -- sizes refused up front; --dry-run says the largest run's memory -------------------------------


def test_an_env_too_large_for_memory_is_one_line_under_dry_run(tmp_path, capsys):
    config = _write(
        tmp_path / "c.yaml",
        {
            "envs": [{"id": "LinBandit-Synthetic-v0", "args": {"d": 1_000_000_000}}],
            "agents": [{"name": "OFUL"}],
        },
    )
    line = _refused(capsys, ["sweep", str(config), "--dry-run"])
    assert line.startswith("linbandit sweep: error: envs[0].args") and "d=1000000000" in line


@pytest.mark.parametrize(
    "args, env_d, named",
    [
        # the sketch holds min(2 sketch_size, d) rows of d numbers: a huge sketch_size is large only
        # at a large d
        ({"sketch_size": 100000}, 200_000, "sketch_size=100000"),
        ({"d": 10**9}, None, "d=1000000000"),
    ],
)
def test_agent_arguments_that_cannot_fit_are_refused_before_building(
    tmp_path, capsys, args, env_d, named
):
    arg = [f"--agent-arg={k}={v}" for k, v in args.items()] + (
        [f"--env-arg=d={env_d}"] if env_d else []
    )
    line = _refused(
        capsys,
        ["run", "--env", "LinBandit-Synthetic-v0", "--agent", "SOFUL", *arg, "--no-progress"],
    )
    assert named in line and "more than" in line and "GiB" in line, line
    env = {**SMALL_ENV, "args": {**SMALL_ENV["args"], "d": env_d}} if env_d else SMALL_ENV
    config = _write(
        tmp_path / "c.yaml", {**THREE, "envs": [env], "agents": [{"name": "SOFUL", "args": args}]}
    )
    line = _refused(capsys, ["sweep", str(config), "--dry-run"])
    assert line.startswith("linbandit sweep: error: agents[0].args") and named in line, line


def test_the_limit_is_the_one_envs_use(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LINBANDIT_MEMORY_LIMIT", "1MB")
    config = _write(
        tmp_path / "c.yaml",
        {**THREE, "envs": [{**SMALL_ENV, "args": {**SMALL_ENV["args"], "d": 400}}]},
    )
    line = _refused(capsys, ["sweep", str(config), "--dry-run"])
    assert "$LINBANDIT_MEMORY_LIMIT (1 MiB)" in line


def test_dry_run_reports_the_largest_runs_memory(tmp_path, capsys):
    config = _write(
        tmp_path / "c.yaml",
        {
            **THREE,
            "agents": [{"name": "OFUL"}, {"name": "SOFUL", "grid": {"sketch_size": [2, 3]}}],
            "envs": [
                SMALL_ENV,
                {**SMALL_ENV, "args": {**SMALL_ENV["args"], "d": 300}, "label": "wide"},
            ],
        },
    )
    assert main(["sweep", str(config), "--dry-run"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    # OFUL's d x d inverse at d = 300 is the largest: 703 KiB and more
    assert last.startswith("largest run: OFUL on wide, about ") and "available" in last, last


def test_validation_builds_nothing_it_has_not_checked(tmp_path, capsys, monkeypatch):
    """A user's class is checked by name and signature, never constructed; a registered agent
    whose state for d would take more than DIMENSION_CHECK_BYTES is built without d, so it
    allocates nothing (OFUL at d = 5000: a 200 MB inverse)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sideeffect.py").write_text(
        "import pathlib\n"
        "class Agent:\n"
        "    def __init__(self, eps: float = 0.1):\n"
        "        pathlib.Path('constructed').write_text('x')\n"
        "    def reset(self, seed=None): pass\n"
        "    def act(self, obs): return 0\n"
        "    def update(self, obs, action, reward): pass\n"
    )
    from agents.base import TorchAgent

    def no_allocation(self, d):
        raise AssertionError(f"validation allocated an agent of dimension {d}")

    monkeypatch.setattr(TorchAgent, "_allocate", no_allocation)
    for cls in AGENTS.values():
        if "_allocate" in vars(cls):
            monkeypatch.setattr(cls, "_allocate", no_allocation)
    config = _write(
        tmp_path / "c.yaml",
        {
            **THREE,
            "agents": [
                {"name": "sideeffect:Agent", "args": {"eps": 0.5}},
                {"name": "OFUL", "args": {"d": 5000}},
            ],
        },
    )
    try:
        assert main(["sweep", str(config), "--dry-run"]) == 0, capsys.readouterr().err
        assert not (tmp_path / "constructed").exists()
        line = _refused(
            capsys,
            [
                "sweep",
                str(
                    _write(
                        tmp_path / "b.yaml",
                        {
                            **THREE,
                            "agents": [{"name": "sideeffect:Agent", "args": {"epsilon": 0.5}}],
                        },
                    )
                ),
                "--dry-run",
            ],
        )
        assert "has no argument 'epsilon'" in line and not (tmp_path / "constructed").exists()
    finally:
        sys.modules.pop("sideeffect", None)


@pytest.mark.parametrize("horizon", [10_000_000_000, 99999999999999999999])
def test_a_horizon_whose_records_cannot_fit_is_refused_naming_horizon(tmp_path, capsys, horizon):
    """``horizon: 10000000000`` fails ``--dry-run`` (not at run time, allocating 74.5 GiB), and
    ``run --horizon`` of either size is one line naming ``horizon`` and the records."""
    env = {"id": "LinBandit-Synthetic-v0", "args": {"d": 4, "n_arms": 3}}
    config = _write(tmp_path / "c.yaml", {**THREE, "horizon": horizon, "envs": [env]})
    line = _refused(capsys, ["sweep", str(config), "--dry-run"])
    assert line.startswith("linbandit sweep: error: horizon: "), line
    assert f"horizon={horizon}" in line and "records" in line and "lower horizon" in line, line
    line = _refused(
        capsys,
        [
            "run",
            "--env",
            "LinBandit-Synthetic-v0",
            "--agent",
            "OFUL",
            "--horizon",
            str(horizon),
            "--no-progress",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert f"horizon={horizon}" in line and "records" in line, line
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=f"horizon={horizon}: the records of"):  # the loop's check
        run(
            "LinBandit-Synthetic-v0",
            AGENTS["OFUL"](),
            progress=False,
            env_kwargs={**env["args"], "horizon": horizon},
        )


def test_dry_run_counts_the_records_in_the_largest_run(tmp_path, capsys):
    long_env = {**SMALL_ENV, "args": {**SMALL_ENV["args"], "horizon": 200_000}}
    config = _write(tmp_path / "c.yaml", {**THREE, "envs": [long_env]})
    assert main(["sweep", str(config), "--dry-run"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "records 97.7 MiB" in last and "about 97.7 MiB" in last, last


# -- a refused command leaves the output directory as it was ------------------------------------


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory under ``root`` (dot files too): its size and modification time."""
    return {
        str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns)
        for p in root.rglob("*")
    }


@pytest.mark.parametrize(
    "options",
    [
        ["--workers", "0"],
        ["--max-batch", "0"],
        ["--timing-repeats", "0"],
        ["--threads", "0"],
        ["--address", "127.0.0.1:1"],
        ["--backend", "ray", "--address", "nowhere"],
    ],
    ids=lambda o: " ".join(o),
)
def test_a_refused_sweep_leaves_its_directory_as_it_was(tmp_path, capsys, options):
    """``sweep small.yaml --out EXISTING --workers 0`` exits 2 without rewriting config.yaml,
    manifest.json or .lock: ``plot EXISTING`` still finds its finished runs. ``--dry-run``
    refuses the same options."""
    out = tmp_path / "out"
    sweep(THREE, out, log=None)
    other = _write(tmp_path / "other.yaml", {**THREE, "name": "other", "seeds": 4})
    before = _tree(out)
    for dry in ([], ["--dry-run"]):
        _refused(capsys, ["sweep", str(other), "--out", str(out), *options, *dry])
        assert _tree(out) == before
    assert main(["plot", str(out), "--formats", "png"]) == 0
    assert len(load_runs(out)) == 3
    capsys.readouterr()


def test_a_sweep_whose_env_cannot_be_built_writes_nothing(tmp_path, capsys, monkeypatch):
    """The envs of the runs to do are built before the first write (a dataset missing on this
    machine is found then): the directory is left as it was."""
    out = tmp_path / "out"
    sweep(THREE, out, log=None)
    before = _tree(out)
    from linbandit_gym.envs.synthetic import SyntheticLinBanditEnv

    def missing_data(self, *args, **kwargs):
        raise FileNotFoundError("the data of this env is not on this machine")

    monkeypatch.setattr(SyntheticLinBanditEnv, "reset", missing_data)
    more = _write(tmp_path / "o.yaml", {**THREE, "seeds": 4})
    line = _refused(capsys, ["sweep", str(more), "--out", str(out)])
    assert "cannot be built" in line and "not on this machine" in line, line
    assert _tree(out) == before


def test_plot_and_report_refuse_what_they_cannot_write_before_writing(tmp_path, capsys):
    out = tmp_path / "out"
    sweep(THREE, out, log=None)
    before = _tree(out)
    assert "'xyz'" in _refused(capsys, ["plot", str(out), "--formats", "png,xyz"])
    line = _refused(capsys, ["report", str(out), "--out", str(tmp_path / "missing" / "r.html")])
    assert str(tmp_path / "missing") in line, line
    assert _tree(out) == before


# -- workers that die are replaced -------------------------------------------------------------


def _workers(pid: int) -> list[int]:
    """The worker processes of the driver ``pid`` (its children, but the resource tracker)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid and b"resource_tracker" not in cmdline:
            out.append(int(entry.name))
    return sorted(out)


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_kill_9_of_one_worker_fails_only_the_run_it_held(tmp_path):
    horizon = horizon_for_workers(16)  # long enough for the sweep to start its two workers
    config = _write(
        tmp_path / "c.yaml",
        {
            "name": "many",
            "seeds": 16,
            "envs": [
                {"id": "LinBandit-Synthetic-v0", "args": {"d": 8, "n_arms": 5, "horizon": horizon}}
            ],
            "agents": [{"name": "OFUL", "args": {"beta": 0.1}}],
        },
    )
    out = tmp_path / "out"
    proc = cli(
        "sweep", str(config), "--out", str(out), "--workers", "2", "--no-batched", "--no-plots"
    )
    try:
        deadline = time.time() + 120
        while (
            len(list((out / "runs").glob("*.json"))) < 3
            and time.time() < deadline
            and proc.poll() is None
        ):
            time.sleep(0.05)
        workers = _workers(proc.pid)
        assert len(workers) == 2, workers
        os.kill(workers[0], signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    failed = list((out / "failed").glob("*.json"))
    assert proc.returncode == 1 and len(failed) == 1, (stdout, stderr)
    assert "WorkerDied" in failed[0].read_text() and "SIGKILL" in failed[0].read_text()
    assert (
        len(list((out / "runs").glob("*.json"))) == 15
        and "BrokenProcessPool" not in stdout + stderr
    )
    finished, pending = plan(config, out)
    assert [s.run_id for s in pending] == [failed[0].stem]
    assert main(["sweep", str(config), "--out", str(out), "--no-plots", "--quiet"]) == 0
    assert not list((out / "failed").glob("*.json"))


# -- a Ray cluster that does not answer ----------------------------------------------------------


@pytest.mark.slow
def test_a_ray_address_that_does_not_answer_fails_within_a_stated_timeout(tmp_path):
    pytest.importorskip("ray")
    config = _write(tmp_path / "c.yaml", THREE)
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "linbandit_gym.cli",
            "sweep",
            str(config),
            "--out",
            str(tmp_path / "out"),
            "--backend",
            "ray",
            "--address",
            "127.0.0.1:1",
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 1 and time.perf_counter() - started < 60
    line = _one_line(done.stderr)
    assert "cannot reach a Ray cluster at 127.0.0.1:1" in line and "waited up to 10 s" in line, line


# -- Ctrl-C after the last run -------------------------------------------------------------------

LATE = """
import atexit, sys, time
atexit.register(time.sleep, 8)  # registered first, runs last: the interpreter's shutdown, made long
from linbandit_gym.cli import main
sys.argv = ["linbandit", *sys.argv[1:]]
code = main()
print("COMMAND DONE", flush=True)
sys.exit(code)
"""


def _interrupt_after(proc: subprocess.Popen, marker: str, pause: float = 0.0) -> str:
    """Send SIGINT to ``proc`` ``pause`` seconds after it prints a line starting with ``marker``;
    returns what it wrote to stderr."""
    try:
        for line in proc.stdout:
            if line.startswith(marker):
                break
        time.sleep(pause)
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_ctrl_c_after_the_last_run_exits_130_without_a_traceback(tmp_path):
    config = _write(tmp_path / "c.yaml", THREE)
    script = tmp_path / "late.py"
    script.write_text(LATE)
    proc = subprocess.Popen(
        [
            sys.executable,
            str(script),
            "sweep",
            str(config),
            "--out",
            str(tmp_path / "out"),
            "--no-plots",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_as_a_terminal_gives_it,
    )
    err = _interrupt_after(proc, "COMMAND DONE", pause=0.5)
    # 130, or ended by SIGINT itself, which a shell reports as 130
    assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert len(plan(config, tmp_path / "out")[0]) == 3


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_ctrl_c_while_the_summary_is_written_exits_130(tmp_path):
    config = _write(tmp_path / "c.yaml", THREE)
    proc = cli("sweep", str(config), "--out", str(tmp_path / "out"))
    err = _interrupt_after(proc, "[3/3]")
    assert proc.returncode == 130, err
    assert "interrupted" in _one_line(err)


# -- output directories that cannot be written ------------------------------------------------


def test_runs_being_a_file_is_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs").write_text("not a directory")
    config = _write(tmp_path / "c.yaml", THREE)
    for argv in (
        ["sweep", str(config), "--out", str(out)],
        RUN + ["--agent", "OFUL", "--out", str(out)],
    ):
        line = _refused(capsys, argv)
        assert f"{out / 'runs'} is a file" in line and "--out" in line, line
    assert (out / "runs").read_text() == "not a directory"


def test_a_full_disk_is_one_line_and_exit_1(tmp_path, capsys, monkeypatch):
    import linbandit_gym.records as storage  # where runs are saved

    def no_space(frame, stem, root=None):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(stem) + ".parquet")

    monkeypatch.setattr(storage, "write_records", no_space)
    config = _write(tmp_path / "c.yaml", THREE)
    line = _refused(capsys, ["sweep", str(config), "--out", str(tmp_path / "out")], code=1)
    assert "No space left on device" in line and "free space" in line, line


@pytest.mark.slow  # an interpreter starts
@pytest.mark.skipif(not LINUX, reason="RLIMIT_FSIZE")
def test_a_file_too_large_efbig_is_one_line_and_exit_1(tmp_path):
    config = _write(tmp_path / "c.yaml", THREE)

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))  # a records file is larger

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "linbandit_gym.cli",
            "sweep",
            str(config),
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_files,
    )
    assert done.returncode == 1, done.stderr
    assert "File too large" in _one_line(done.stderr)


# -- the lock names its holder -------------------------------------------------------------------


@pytest.mark.skipif(not LINUX, reason="flock semantics checked on Linux")
def test_run_out_on_a_directory_a_sweep_holds_names_the_sweep_and_its_command(tmp_path, capsys):
    config = _write(
        tmp_path / "long.yaml",
        {
            **THREE,
            "seeds": 3,
            "envs": [
                {"id": "LinBandit-Synthetic-v0", "args": {"d": 8, "n_arms": 5, "horizon": 3000}}
            ],
        },
    )
    out = tmp_path / "out"
    holder = cli("sweep", str(config), "--out", str(out), "--no-plots", "--quiet")
    try:
        deadline = time.time() + 60
        while time.time() < deadline and holder.poll() is None:
            lock = out / ".lock"
            if lock.exists() and lock.read_text().split("\n")[0] == str(holder.pid):
                break
            time.sleep(0.05)
        line = _refused(capsys, RUN + ["--agent", "OFUL", "--out", str(out)])
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    assert f"another sweep (pid {holder.pid})" in line and "another run" not in line, line
    assert f"linbandit_gym.cli sweep {config} --out {out}" in line, line
