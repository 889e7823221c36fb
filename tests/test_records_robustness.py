"""Result files and output directories under stress: Ctrl-C, kill -9, damaged files, two
writers, umask, read-only directories, symbolic links, other files in the directory."""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from cli_processes import LINUX, RUN, THREE, cli
from worker_pools import horizon_for_workers

from agents import OFUL
from linbandit_gym.cli import main, run_experiment
from linbandit_gym.experiments import load_records, load_runs, parse_config, plan, sweep
from linbandit_gym.records import (
    OutputError,
    atomic_path,
    check_records,
    lock_output_dir,
    records_fingerprint,
    remove_stale_temporaries,
    write_records,
    write_text_atomic,
)


def _long_config(tmp_path: Path, seeds: int, horizon: int) -> Path:
    cfg = {
        "name": "long",
        "seeds": seeds,
        "horizon": horizon,
        "envs": [{"id": "LinBandit-Synthetic-v0", "args": {"d": 8, "n_arms": 5}}],
        "agents": [{"name": "OFUL", "args": {"beta": 0.1}}],
    }
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _wait_for(condition, timeout: float, proc: subprocess.Popen | None = None) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        if proc is not None and proc.poll() is not None:
            return condition()
        time.sleep(0.05)
    return False


def _children(pid: int) -> set[int]:
    """Pids whose parent is ``pid`` (Linux /proc)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited


def _files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()]


# -- item: `run --out` writes the sweep layout ------------------------------------------------


@pytest.mark.filterwarnings(
    "ignore::agents._warnings.SketchSizeWarning"
)  # a small sketch at a small d, on purpose
def test_run_out_is_a_sweep_directory_for_plot_report_and_sweep(tmp_path, capsys):
    out = tmp_path / "out"
    assert (
        main(
            RUN
            + [
                "--agent",
                "SOFUL",
                "--agent-arg",
                "sketch_size=3",
                "--seeds",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    runs = load_runs(out)
    assert sorted(runs["seed"]) == [0, 1] and set(runs["arg.sketch_size"]) == {3}
    assert len(load_records(out)) == 2 * 30
    assert main(["plot", str(out)]) == 0 and (out / "plots" / "regret.png").exists()
    assert main(["report", str(out)]) == 0 and "SOFUL" in (out / "report.html").read_text()
    # its config.yaml is a sweep config with the same run ids: `linbandit sweep` resumes it too
    finished, pending = plan(out / "config.yaml", out)
    assert sorted(s.run_id for s in finished) == sorted(runs["run_id"]) and not pending
    capsys.readouterr()


def test_run_experiment_saves_agent_objects_as_runs(tmp_path):
    players = [("small beta", OFUL(beta=0.1)), ("big beta", OFUL(beta=1.0))]
    records, summary = run_experiment(
        "LinBandit-Synthetic-v0",
        players,
        seeds=2,
        horizon=20,
        env_kwargs={"d": 4, "n_arms": 3},
        out=tmp_path,
    )
    runs = load_runs(tmp_path)
    assert sorted(zip(runs["agent"], runs["seed"], runs["arg.beta"])) == [
        ("big beta", 0, 1.0),
        ("big beta", 1, 1.0),
        ("small beta", 0, 0.1),
        ("small beta", 1, 0.1),
    ]
    on_disk = load_records(tmp_path).sort_values(["agent", "seed", "t"], ignore_index=True)
    pd.testing.assert_frame_equal(
        on_disk, records.sort_values(["agent", "seed", "t"], ignore_index=True)
    )
    with pytest.raises(ValueError, match="share the label 'OFUL'"):
        run_experiment(
            "LinBandit-Synthetic-v0",
            [(None, OFUL()), (None, OFUL(beta=1.0))],
            horizon=5,
            out=tmp_path / "x",
        )


# -- item: result files respect the umask ----------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_result_files_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        sweep(THREE, tmp_path / "sweep", log=None)
        assert main(RUN + ["--agent", "OFUL", "--seeds", "2", "--out", str(tmp_path / "run")]) == 0
    finally:
        os.umask(old)
    files = _files(tmp_path / "sweep") + _files(tmp_path / "run")
    modes = {str(p.relative_to(tmp_path)): oct(p.stat().st_mode & 0o777) for p in files}
    assert set(modes.values()) == {oct(0o666 & ~umask)}, modes
    assert {"config.yaml", "manifest.json", "summary.csv"} <= {p.name for p in files}
    assert (
        sum(p.suffix == ".parquet" for p in files) == 3 + 2
        and sum(p.suffix == ".json" for p in files) == 4 + 3
    )


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "x.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("writer failed")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


# -- item: no write follows a symbolic link out of the output directory ---------------------


@pytest.fixture
def finished(tmp_path):
    """A finished sweep in ``tmp_path/out`` (config ``tmp_path/c.yaml``) and a file of the user's,
    ``tmp_path/notes.txt``, outside it."""
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(THREE))
    out = tmp_path / "out"
    sweep(config, out, log=None)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    return config, out, notes


def _refused_naming(capsys, argv: list[str], *words: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize(
    "name, command",
    [
        ("summary.csv", "plot"),
        ("summary.md", "plot"),
        ("plots/regret.png", "plot"),
        ("plots/captions.json", "plot"),
        ("report.html", "report"),
        ("config.yaml", "sweep"),
        ("manifest.json", "sweep"),
        (".lock", "sweep"),
        ("runs/RUN.json", "sweep"),
        ("regret.png", "run"),
        ("summary.csv", "run"),
    ],
)
def test_no_command_writes_through_a_link_out_of_its_directory(finished, capsys, name, command):
    """``ln -s ~/notes.txt DIR/summary.csv; linbandit plot DIR`` leaves notes.txt as it was: every
    file a command writes into an output directory is refused, before the first write, where it
    is a link out of the directory (the link itself is left too)."""
    config, out, notes = finished
    first = min((out / "runs").glob("*.json"))
    link = out / name.replace("RUN", first.stem)
    if link.exists():
        link.unlink()
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(notes)
    argv = {
        "plot": ["plot", str(out), "--formats", "png"],
        "report": ["report", str(out)],
        "sweep": ["sweep", str(config), "--out", str(out), "--no-plots"],
        "run": RUN + ["--agent", "OFUL", "--out", str(out)],
    }[command]
    _refused_naming(capsys, argv, str(link), "symbolic link", str(notes))
    assert notes.read_text() == "my notes" and link.is_symlink() and os.readlink(link) == str(notes)


@pytest.mark.parametrize(
    "sub, command", [("plots", "plot"), ("runs", "sweep"), ("failed", "sweep")]
)
def test_a_linked_subdirectory_out_of_the_directory_is_refused(
    finished, tmp_path, capsys, sub, command
):
    config, out, _ = finished
    elsewhere = tmp_path / "elsewhere"
    if (out / sub).exists():
        shutil.move(out / sub, elsewhere)
    else:
        elsewhere.mkdir()
    (elsewhere / "mine.txt").write_text("mine")
    (out / sub).symlink_to(elsewhere)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in elsewhere.iterdir())
    argv = (
        ["plot", str(out)]
        if command == "plot"
        else ["sweep", str(config), "--out", str(out), "--no-plots"]
    )
    _refused_naming(capsys, argv, str(out / sub), "symbolic link")
    assert sorted((p.name, p.stat().st_mtime_ns) for p in elsewhere.iterdir()) == before


def test_links_that_stay_inside_the_directory_are_followed_and_kept(finished, capsys):
    _, out, _ = finished
    (out / "figures").mkdir()
    (out / "plots").symlink_to("figures")
    (out / "tables").mkdir()
    (out / "summary.md").symlink_to("tables/summary.md")
    assert main(["plot", str(out), "--formats", "png"]) == 0, capsys.readouterr().err
    assert (out / "plots").is_symlink() and (out / "figures" / "regret.png").is_file()
    assert (out / "summary.md").is_symlink()
    assert (out / "tables" / "summary.md").read_text().startswith("| env")


def test_atomic_writes_replace_the_target_of_a_link_inside_and_refuse_one_out(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside.txt"
    root.mkdir()
    outside.write_text("mine")
    (root / "out.txt").symlink_to(outside)
    with pytest.raises(OutputError, match="symbolic link to .*outside.txt, outside the output"):
        write_text_atomic("x", root / "out.txt", root)
    assert outside.read_text() == "mine"
    assert [p.name for p in root.iterdir()] == ["out.txt"]  # no temporary left
    (root / "b.txt").write_text("old")
    (root / "in.txt").symlink_to("b.txt")
    write_text_atomic("new", root / "in.txt", root)
    assert (root / "b.txt").read_text() == "new" and (root / "in.txt").is_symlink()


# -- item: Ctrl-C keeps every finished run ---------------------------------------------------


class InterruptedAgent(OFUL):
    """OFUL on which a Ctrl-C lands when seed INTERRUPT_SEED starts (an injected interrupt)."""

    INTERRUPT_SEED: int | None = None

    def reset(self, seed=None):
        if seed is not None and seed == self.INTERRUPT_SEED:
            raise KeyboardInterrupt
        super().reset(seed=seed)


def test_ctrl_c_in_run_keeps_finished_seeds_and_the_same_command_resumes(tmp_path, capsys):
    out = tmp_path / "out"
    command = RUN + [
        "--agent",
        f"{__name__}:InterruptedAgent",
        "--agent-arg",
        "beta=0.1",
        "--seeds",
        "3",
        "--out",
        str(out),
    ]
    InterruptedAgent.INTERRUPT_SEED = 2
    try:
        code = main(command)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped `linbandit run` as a traceback")
    finally:
        InterruptedAgent.INTERRUPT_SEED = None
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 130
    assert err == [
        f"linbandit run: interrupted: 2/3 runs saved in {out}; run the same command to resume"
    ]
    assert sorted(load_runs(out)["seed"]) == [0, 1]
    kept = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    assert len(kept) == 4 and not [p for p in (out / "runs").iterdir() if p.name.startswith(".")]

    assert main(command) == 0  # resumes: plays seed 2 only
    capsys.readouterr()
    assert sorted(load_runs(out)["seed"]) == [0, 1, 2]
    assert {n: (out / "runs" / n).stat().st_mtime_ns for n in kept} == kept
    records = load_records(out)
    fresh, _ = run_experiment(
        "LinBandit-Synthetic-v0",
        OFUL(beta=0.1),
        seeds=3,
        horizon=30,
        env_kwargs={"d": 5, "n_arms": 4},
    )
    key = ["seed", "t"]
    pd.testing.assert_series_equal(
        records.sort_values(key)["action"].reset_index(drop=True),
        fresh.sort_values(key)["action"].reset_index(drop=True),
    )


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="process-group signals and /proc")
def test_ctrl_c_in_a_two_worker_sweep_prints_one_line_and_stops_the_workers(tmp_path):
    # long enough for the sweep to start its two workers
    path = _long_config(tmp_path, seeds=8, horizon=max(2500, horizon_for_workers(8)))
    out = tmp_path / "out"
    # --no-batched: runs finish one by one, so the Ctrl-C lands between the 2nd and the 8th save
    # (batched, the 8 seeds finish as two groups of 4; test_sweep_batched.py interrupts a batch).
    proc = cli(
        "sweep",
        str(path),
        "--out",
        str(out),
        "--workers",
        "2",
        "--no-plots",
        "--quiet",
        "--no-batched",
    )
    try:
        assert _wait_for(lambda: len(list((out / "runs").glob("*.json"))) >= 2, 120, proc), (
            "no run finished"
        )
        workers = _children(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C: the whole group
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    saved = len(list((out / "runs").glob("*.json")))
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines() == [
        f"linbandit sweep: interrupted: {saved}/8 runs saved in {out}; "
        "run the same command to resume"
    ]
    assert 2 <= saved < 8
    assert _wait_for(lambda: not any(_alive(p) for p in workers), 10)
    finished, pending = plan(parse_config(path), out)
    assert len(finished) == saved and len(pending) == 8 - saved
    assert not list((out / "runs").glob(".*.tmp"))


# -- item: workers exit when the driver dies ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="/proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_workers_exit_when_the_sweep_driver_is_killed(tmp_path, sig):
    path = _long_config(tmp_path, seeds=4, horizon=10**6)  # minutes per run: the workers are busy
    proc = cli(
        "sweep",
        str(path),
        "--out",
        str(tmp_path / "out"),
        "--workers",
        "2",
        "--no-plots",
        "--quiet",
    )
    try:

        def two_workers_running():
            kids = [
                p
                for p in _children(proc.pid)
                if "multiprocessing" in Path(f"/proc/{p}/cmdline").read_text()
            ]
            return len(kids) >= 3  # the resource tracker and two workers

        assert _wait_for(two_workers_running, 60, proc), "the workers did not start"
        time.sleep(1.0)  # let them pick up runs
        kids = _children(proc.pid)
        os.kill(proc.pid, sig)  # the driver only, as `kill` or the OOM killer would
        proc.wait(timeout=30)
        gone = _wait_for(lambda: not any(_alive(p) for p in kids), 8)
        assert gone, f"workers {[p for p in kids if _alive(p)]} outlived their driver"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


# -- item: damaged records are not finished; plot/report name them -----------------------------


def test_truncated_or_empty_records_are_redone_and_named(tmp_path, capsys):
    out = tmp_path / "out"
    sweep(THREE, out, log=None)
    before = load_records(out).sort_values(["seed", "t"], ignore_index=True)
    parquets = sorted((out / "runs").glob("*.parquet"))
    truncated, empty, old_style = parquets
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    empty.write_bytes(b"")
    # a run written before fingerprints: its .json has no "records"; the Parquet footer still tells
    meta_path = old_style.with_suffix(".json")
    meta = json.loads(meta_path.read_text())
    meta.pop("records", None)
    meta_path.write_text(json.dumps(meta))
    old_style.write_bytes(old_style.read_bytes()[:-100])

    for command in ("plot", "report"):
        assert main([command, str(out)]) == 2
        err = capsys.readouterr().err
        assert (
            re.search(r"runs/[0-9a-f]{16}\.parquet", err)
            and "redo" in err
            and "Traceback" not in err
        ), err
    finished, pending = plan(THREE, out)
    assert finished == [] and {s.run_id for s in pending} == {p.stem for p in parquets}
    result = sweep(THREE, out, log=None)
    assert sorted(result.executed) == sorted(p.stem for p in parquets)
    after = load_records(out).sort_values(["seed", "t"], ignore_index=True)
    pd.testing.assert_frame_equal(
        after.drop(columns=["agent_time", "agent_wall_time", "wall_time"]),
        before.drop(columns=["agent_time", "agent_wall_time", "wall_time"]),
    )
    assert main(["plot", str(out)]) == 0


def test_records_fingerprint_checks(tmp_path):
    frame = pd.DataFrame({"t": range(50), "regret": [0.5] * 50})
    path = write_records(frame, tmp_path / "r")
    fp = records_fingerprint(path, len(frame))
    assert check_records(path, fp) is None and check_records(path) is None
    assert "rows" in check_records(path, {**fp, "rows": 49})
    path.write_bytes(path.read_bytes() + b"x")
    assert "bytes" in check_records(path, fp)
    path.write_bytes(b"")
    assert check_records(path) is not None  # no footer
    assert "cannot be read" in check_records(tmp_path / "missing.parquet", fp)


# -- item: a garbled run JSON is named -----------------------------------------------------------


def test_garbled_run_json_is_named_and_redone(tmp_path, capsys):
    out = tmp_path / "out"
    sweep(THREE, out, log=None)
    victim = sorted((out / "runs").glob("*.json"))[1]
    victim.write_text('{"run_id": "x", oops}')
    assert main(["plot", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(victim) in err and "redo" in err and "Traceback" not in err, err
    result = sweep(THREE, out, log=None)
    assert result.executed == [victim.stem] and len(result.skipped) == 2
    assert main(["plot", str(out)]) == 0


# -- item: one writer per directory; other writers' temporaries are left alone -------------------


def test_a_locked_directory_is_refused_with_the_holders_pid(tmp_path, capsys):
    out = tmp_path / "out"
    sweep(THREE, out, log=None)
    # a write in flight of a live process
    mine = out / "runs" / f".x.parquet.linbandit-pid{os.getpid()}.abc.tmp"
    mine.write_text("in flight")
    with lock_output_dir(out):
        with pytest.raises(
            OutputError,
            match=rf"another sweep \(pid {os.getpid()}\) is using {re.escape(str(out))}",
        ):
            sweep(THREE, out, log=None)
        assert main(RUN + ["--agent", "OFUL", "--out", str(out)]) == 2
        # what holds the lock (a sweep: lock_output_dir's default), not what asks for it
        assert f"another sweep (pid {os.getpid()})" in capsys.readouterr().err
    assert mine.exists()
    sweep(THREE, out, log=None)  # unlocked: fine, and a live writer's temporary survives
    assert mine.exists()


def test_only_dead_writers_temporaries_are_removed(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    live = tmp_path / f".a.parquet.linbandit-pid{os.getpid()}.q1.tmp"
    stale = tmp_path / f".b.parquet.linbandit-pid{dead_pid}.q2.tmp"
    for p in (live, stale):
        p.write_text("x")
    removed = remove_stale_temporaries(tmp_path)
    assert removed == [stale] and live.exists() and not stale.exists()


def test_a_sweep_removes_no_file_it_did_not_name(tmp_path):
    """A user's ``.mynotes.tmp`` (no pid), another program's ``.x.pid<dead>.y.tmp``, a link and a
    directory named like a temporary survive a sweep in DIR, DIR/runs and DIR/failed."""
    dead = int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    out = tmp_path / "out"
    sweep(THREE, out, log=None)
    (out / "failed").mkdir()
    kept = []
    for where in (out, out / "runs", out / "failed"):
        notes = where / ".mynotes.tmp"
        notes.write_text("mine")
        other = where / f".x.pid{dead}.y.tmp"  # an older naming, or another program's
        other.write_text("theirs")
        folder = where / f".d.linbandit-pid{dead}.z.tmp"
        folder.mkdir()
        link = where / f".l.linbandit-pid{dead}.w.tmp"
        link.symlink_to(notes)
        kept += [notes, other, folder, link]
    result = sweep({**THREE, "seeds": 4}, out, log=None)
    assert len(result.executed) == 1
    assert all(p.exists() or p.is_symlink() for p in kept), [p for p in kept if not p.exists()]
    assert (out / "runs" / ".mynotes.tmp").read_text() == "mine"


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="flock semantics checked on Linux")
def test_a_second_sweep_on_a_busy_directory_fails_fast_and_the_first_finishes(tmp_path):
    path = _long_config(tmp_path, seeds=3, horizon=3000)
    out = tmp_path / "out"
    first = cli("sweep", str(path), "--out", str(out), "--no-plots", "--quiet")
    try:
        assert _wait_for(
            lambda: (
                (out / ".lock").exists()
                and (out / ".lock").read_text().split("\n")[0] == str(first.pid)
            ),
            60,
            first,
        )
        with pytest.raises(OutputError, match=rf"another sweep \(pid {first.pid}\)"):
            sweep(path, out, log=None)
        _, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert first.returncode == 0, err
    finished, pending = plan(path, out)
    assert len(finished) == 3 and not pending and not list((out / "runs").glob(".*"))


# -- item: a read-only output directory --------------------------------------------------------


def _without_write_override():
    """Run as root without CAP_DAC_OVERRIDE (else a read-only directory is writable to root)."""
    if os.geteuid() == 0:
        if (
            ctypes.CDLL(None, use_errno=True).prctl(24, 1, 0, 0, 0) != 0
        ):  # PR_CAPBSET_DROP, CAP_DAC_OVERRIDE
            raise OSError(ctypes.get_errno(), "cannot drop CAP_DAC_OVERRIDE")


@pytest.mark.slow  # an interpreter starts
@pytest.mark.skipif(not LINUX, reason="capabilities are Linux")
def test_read_only_output_directory_gives_one_line(tmp_path):
    config = tmp_path / "three.yaml"
    config.write_text(yaml.safe_dump(THREE))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    script = (
        "import sys\nfrom linbandit_gym.cli import main\n"
        f"codes = [main(['sweep', {str(config)!r}, '--out', {str(ro)!r}, "
        "'--no-plots', '--quiet']),\n"
        f"         main(['sweep', {str(config)!r}, '--out', {str(ro / 'sub')!r}, "
        "'--no-plots', '--quiet']),\n"
        f"         main({RUN!r} + ['--agent', 'OFUL', '--out', {str(ro)!r}])]\n"
        "print(codes)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_without_write_override,
        )
    finally:
        ro.chmod(0o755)
    assert done.stdout.strip().splitlines()[-1] == "[2, 2, 2]", done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 3 and "Traceback" not in done.stderr, done.stderr
    for line in lines:
        assert "Permission denied" in line and str(ro) in line and "--out" in line, line
    assert not list(ro.iterdir())
