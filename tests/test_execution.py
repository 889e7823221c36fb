"""How runs execute (``linbandit_gym.experiments.execution``): one options object, checked when
made, taken alike by ``sweep``, ``tune``, ``reproduce`` and the command line's flags."""

from __future__ import annotations

import argparse
import inspect
from dataclasses import FrozenInstanceError, fields

import pytest
import yaml

from linbandit_gym.cli import build_parser, main
from linbandit_gym.cli.experiment_commands import EXECUTION_FLAGS, execution_options, flag
from linbandit_gym.experiments import ExecutionOptions, load_runs, sweep
from linbandit_gym.experiments.packing import DEFAULT_BATCH_MEMORY
from linbandit_gym.experiments.reproduce import reproduce
from linbandit_gym.experiments.tune import tune

CONFIG = {
    "name": "tiny",
    "seeds": 2,
    "envs": [{"id": "LinBandit-Synthetic-v0", "args": {"d": 3, "n_arms": 2, "horizon": 4}}],
    "agents": [{"name": "OFUL"}],
}


def test_the_defaults_and_the_parsed_budget():
    options = ExecutionOptions()
    assert (
        options.workers,
        options.backend,
        options.address,
        options.threads,
        options.batched,
    ) == (1, "local", None, 1, None)
    assert options.batch_memory == DEFAULT_BATCH_MEMORY == 2 * 1024**3
    assert ExecutionOptions(batch_memory="512M").batch_memory == 512 * 1024**2
    with pytest.raises(FrozenInstanceError):
        options.workers = 2


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"workers": 0}, r"^workers must be an int >= 1, got 0"),
        ({"workers": True}, r"^workers must be an int >= 1"),
        ({"backend": "slurm"}, r"^backend must be one of \('local', 'ray'\)"),
        ({"threads": 0}, r"^threads must be an int >= 1"),
        ({"batched": 1}, r"^batched must be None, True or False, got 1"),
        ({"batch_memory": "lots"}, r"^batch_memory='lots' is not a memory size"),
        ({"max_batch": 0}, r"^max_batch must be an int >= 1, got 0"),
        ({"timing_runs": None}, r"^timing_runs must be True or False"),
        ({"timing_repeats": 0}, r"^timing_repeats must be an int >= 1, got 0"),
        (
            {"address": "head:1"},
            r"^--address 'head:1' names a Ray cluster: give it with --backend ray",
        ),
        ({"backend": "ray", "address": ""}, r"^--address: expected HOST:PORT"),
    ],
)
def test_a_bad_option_is_refused_when_made_naming_it(changes, message):
    with pytest.raises(ValueError, match=message):
        ExecutionOptions(**changes)
    with pytest.raises(ValueError, match=message):
        ExecutionOptions.build(ExecutionOptions(), **changes)


def test_build_overrides_the_given_options_and_refuses_unknown_names():
    base = ExecutionOptions(workers=2, batched=False)
    assert (
        ExecutionOptions.build(base) is base and ExecutionOptions.build(None) == ExecutionOptions()
    )
    assert ExecutionOptions.build(base, batched=True) == ExecutionOptions(workers=2, batched=True)
    with pytest.raises(
        TypeError, match="unknown execution option.*worker; the options are workers"
    ):
        ExecutionOptions.build(base, worker=3)
    with pytest.raises(TypeError, match="options must be an ExecutionOptions"):
        ExecutionOptions.build({"workers": 2})


def test_sweep_tune_and_reproduce_take_the_same_options():
    """No function lists the options again: each takes ``options`` and the fields as keywords."""
    for function in (sweep, tune, reproduce):
        parameters = inspect.signature(function).parameters
        assert (
            "options" in parameters
            and parameters["execution"].kind is inspect.Parameter.VAR_KEYWORD
        )
        assert not {f.name for f in fields(ExecutionOptions)} & set(parameters)


def test_every_option_has_one_flag_and_the_flags_build_the_options():
    assert set(EXECUTION_FLAGS) == set(ExecutionOptions.names())
    parser = build_parser()
    args = parser.parse_args(
        [
            "sweep",
            "c.yaml",
            "--workers",
            "2",
            "--no-batched",
            "--batch-memory",
            "1G",
            "--max-batch",
            "8",
            "--no-timing-runs",
            "--timing-repeats",
            "3",
        ]
    )
    assert execution_options(args) == ExecutionOptions(
        workers=2,
        batched=False,
        batch_memory=2**30,
        max_batch=8,
        timing_runs=False,
        timing_repeats=3,
    )
    assert execution_options(parser.parse_args(["sweep", "c.yaml"])) == ExecutionOptions()
    with pytest.raises(ValueError, match=r"^--max-batch must be an int >= 1, got 0"):
        execution_options(argparse.Namespace(max_batch=0, batched=None))
    assert flag("timing_repeats") == "--timing-repeats"


@pytest.mark.parametrize(
    "argv",
    [
        ["--workers", "0"],
        ["--max-batch", "0"],
        ["--threads", "0"],
        ["--timing-repeats", "0"],
        ["--workers", "0", "--dry-run"],
    ],
)
def test_a_refused_flag_leaves_an_existing_directory_untouched(tmp_path, capsys, argv):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    out = tmp_path / "out"
    assert main(["sweep", str(config), "--out", str(out), "--quiet", "--no-plots"]) == 0
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    capsys.readouterr()
    assert main(["sweep", str(config), "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith(f"linbandit sweep: error: {argv[0]} must be") and len(err.splitlines()) == 1
    ), err
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before
    assert len(load_runs(out)) == 2


def test_options_and_keywords_give_the_same_sweep(tmp_path):
    by_options = sweep(CONFIG, tmp_path / "a", options=ExecutionOptions(batched=False), log=None)
    by_keywords = sweep(CONFIG, tmp_path / "b", batched=False, log=None)
    assert (
        sorted(by_options.executed) == sorted(by_keywords.executed)
        and len(by_options.executed) == 2
    )
    meta = load_runs(tmp_path / "a")
    assert set(meta["time_shared_by"]) == {1}  # --no-batched: every run alone
