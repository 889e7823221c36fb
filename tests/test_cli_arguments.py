"""The arguments the `linbandit` command takes, checked up front under the names the user typed:
``--agent-arg`` and ``--env-arg`` (unknown names with a suggestion, types, values, several problems
reported together), NAME=VALUE words, ``--horizon``, and a sweep config's arguments, each problem
at the key where it was written."""

from __future__ import annotations

import inspect
from pathlib import Path

import gymnasium as gym
import pytest
import yaml
from cli_inputs import ENVS, SYNTH, TINY, TINY_ENV
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym
from linbandit_gym.cli import main, parse_key_values
from linbandit_gym.experiments.config import ConfigError, parse_config
from linbandit_gym.registration import ENV_IDS
from linbandit_gym.registry import lookup_agent

SMALL_ENV = {"id": SYNTH, "args": {"d": 5, "n_arms": 4, "horizon": 30}}
THREE = {
    "name": "three",
    "seeds": 3,
    "envs": [SMALL_ENV],
    "agents": [{"name": "OFUL", "args": {"beta": 0.1}}],
}


def load_object(spec):
    from linbandit_gym.specs import load_object

    return load_object(spec)


def check_env_args(env_id, args):
    from linbandit_gym.specs import check_env_args

    return check_env_args(env_id, args)


def env_arg_types(env_id):
    from linbandit_gym.specs import env_arg_types

    return env_arg_types(env_id)


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


# -- agent arguments: --agent-arg ------------------------------------------------------------------


def test_unknown_agent_argument_is_named_under_the_agent_typed_with_a_suggestion(capsys):
    assert main(["run", *TINY, "--agent", "SOFUL", "--agent-arg", "sketchsize=10"]) == 2
    err = capsys.readouterr().err
    assert "SOFUL has no argument 'sketchsize' (did you mean 'sketch_size'?)" in err
    assert "valid arguments: lam=1.0, beta=1.0, sketch_size=50" in err
    assert "__init__()" not in err and "unexpected keyword argument" not in err


def test_oful_arguments_are_not_named_after_its_base_class(capsys):
    assert main(["run", *TINY, "--agent", "OFUL", "--agent-arg", "lambda=1"]) == 2
    err = capsys.readouterr().err
    assert "OFUL has no argument 'lambda' (did you mean 'lam'?)" in err
    assert "LinUCB" not in err and "__init__()" not in err


def test_a_lower_case_agent_name_is_reported_under_the_registered_spelling(capsys):
    assert main(["run", *TINY, "--agent", "dbslinucb-fd", "--agent-arg", "lO=10"]) == 2
    err = capsys.readouterr().err
    assert (
        "DBSLinUCB-FD has no argument 'lO' (did you mean 'l0'?)" in err and "DBSLinUCBFD" not in err
    )


def test_env_and_agent_argument_problems_are_reported_together(capsys):
    assert (
        main(
            [
                "run",
                *TINY,
                "--env-arg",
                "dim=3",
                "--agent",
                "OFUL",
                "--agent-arg",
                "bta=0.1",
                "--agent-arg",
                "lam=x",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "LinBandit-Synthetic-v0 has no argument 'dim' (did you mean 'd'?)" in err
    assert "OFUL has no argument 'bta' (did you mean 'beta'?)" in err
    assert "OFUL argument lam='x': expected float, got str" in err


def test_agent_value_checks_run_before_the_env_is_built(capsys):
    assert main(["run", *TINY, "--agent", "SOFUL", "--agent-arg", "sketch_size=0"]) == 2
    expected = "SOFUL: sketch_size must be an int >= 1 (the number l of sketch rows), got 0 (int)"
    assert expected in capsys.readouterr().err


def test_build_refuses_an_unknown_name_in_the_users_terms():
    with pytest.raises(ValueError) as info:
        lookup_agent("soful").build({"sketchsize": 10})
    assert str(info.value).startswith(
        "SOFUL has no argument 'sketchsize' (did you mean 'sketch_size'?)"
    )


def test_cli_errors_are_clear(capsys):
    assert main(["run", "--env", "LinBandit-Synthetic-v0", "--agent", "NoSuchAgent"]) == 2
    assert "unknown agent" in capsys.readouterr().err
    assert (
        main(["run", "--env", "LinBandit-Synthetic-v0", "--agent", "OFUL", "--agent-arg", "lam=-1"])
        == 2
    )
    assert "lam" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # argparse's: run's usage, then the form it takes
        main(
            ["run", "--env", "LinBandit-Synthetic-v0", "--agent", "OFUL", "--agent-arg", "nonsense"]
        )
    assert usage.value.code == 2 and "expected NAME=VALUE" in capsys.readouterr().err


@pytest.mark.parametrize("how", ["dry-run", "sweep", "run"])
def test_an_argument_checked_against_d_is_refused_before_the_run(tmp_path, capsys, how):
    """``DBSLinUCB(l0=10)`` on arms of d = 5: refused by validation (the agent is built with the
    env's d), not at the first round of the run, and nothing is written."""
    env_d5 = {**SMALL_ENV, "args": {**SMALL_ENV["args"], "d": 5}}
    config = _write(
        tmp_path / "c.yaml",
        {**THREE, "envs": [env_d5], "agents": [{"name": "DBSLinUCB", "args": {"l0": 10}}]},
    )
    out = tmp_path / "out"
    argv = {
        "dry-run": ["sweep", str(config), "--dry-run"],
        "sweep": ["sweep", str(config), "--out", str(out)],
        "run": [
            "run",
            "--env",
            "LinBandit-Synthetic-v0",
            "--agent",
            "DBSLinUCB",
            "--agent-arg",
            "l0=10",
            "--env-arg",
            "d=5",
            "--horizon",
            "5",
            "--no-progress",
            "--out",
            str(out),
        ],
    }[how]
    line = _refused(capsys, argv)
    assert "l0=10 exceeds the arm dimension d=5" in line, line
    if how != "run":
        assert "agents[0].args.l0" in line and "'LinBandit-Synthetic-v0'" in line, line
    assert not out.exists()
    with pytest.raises(ConfigError, match="l0=10 exceeds the arm dimension d=5"):
        parse_config(config)


# -- env arguments: --env-arg and a config's env args ----------------------------------------------


def test_unknown_env_argument_is_one_line_and_exit_code_2(capsys):
    assert (
        main(["run", "--env", SYNTH, "--agent", "OFUL", "--env-arg", "dim=10", "--no-progress"])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "'dim'" in err and "valid arguments: d=500, " in err and "n_arms" in err


def test_wrong_env_argument_type_names_the_key(capsys):
    assert (
        main(["run", "--env", SYNTH, "--agent", "OFUL", "--env-arg", "d=ten", "--no-progress"]) == 2
    )
    err = capsys.readouterr().err
    assert "d='ten'" in err and "int" in err


def test_env_argument_words_true_false_are_booleans(capsys):
    # 'false' was the truthy string "false" (fixed arms played); now the bool False
    assert main(["run", "--agent", "OFUL", *TINY_ENV, "--env-arg", "fixed_arms=false"]) == 0
    assert main(["run", "--agent", "OFUL", *TINY_ENV, "--env-arg", "fixed_arms=no"]) == 2
    assert "fixed_arms='no'" in capsys.readouterr().err


def test_sweep_dry_run_validates_env_arguments(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text(
        yaml.safe_dump({"envs": [{"id": SYNTH, "args": {"dim": 20}}], "agents": [{"name": "OFUL"}]})
    )
    assert main(["sweep", str(config), "--dry-run", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "envs[0].args" in err and "'dim'" in err and "valid arguments" in err
    with pytest.raises(ConfigError, match="expected bool"):
        parse_config(
            {"envs": [{"id": SYNTH, "args": {"fixed_arms": "no"}}], "agents": [{"name": "OFUL"}]}
        )


def _defaults(env_id: str) -> dict:
    creator = load_object(ENV_IDS[env_id])
    args = {}
    for klass in creator.__mro__:
        if "__init__" in klass.__dict__:
            for name, p in inspect.signature(klass.__dict__["__init__"]).parameters.items():
                if p.default is not p.empty:
                    args.setdefault(name, p.default)
    return args


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_every_env_accepts_its_own_defaults(env_id):
    params, _ = env_arg_types(env_id)
    defaults = {k: v for k, v in _defaults(env_id).items() if k in params}
    assert "horizon" in defaults
    check_env_args(env_id, defaults)  # the type check is never stricter than the env's own defaults


@settings(max_examples=40, deadline=None)
@given(
    env_id=st.sampled_from(list(ENV_IDS)), key=st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)
)
def test_names_outside_the_signature_are_refused(env_id, key):
    params, is_open = env_arg_types(env_id)
    assert not is_open  # every registered env has a closed signature, so typos are caught
    if key in params:
        return
    with pytest.raises(ValueError, match=f"{env_id} has no argument '{key}'"):
        check_env_args(env_id, {key: 1})


_VALUES = st.one_of(
    st.text(max_size=4), st.floats(-2, 50), st.booleans(), st.integers(-3, 40), st.none()
)


@settings(max_examples=60, deadline=None)
@given(
    kwargs=st.dictionaries(
        st.sampled_from(["d", "n_arms", "horizon", "noise_std", "fixed_arms", "normalize_arms"]),
        _VALUES,
        max_size=3,
    )
)
def test_what_the_check_accepts_the_constructor_never_rejects_for_its_type(kwargs):
    """Accepted by the up-front check (names, types, then the env's own value checks) -> the env
    builds; refused -> the message names one of the keys."""
    try:
        check_env_args(SYNTH, kwargs)
    except ValueError as exc:
        assert any(key in str(exc) for key in kwargs)
        return
    gym.make(SYNTH, **kwargs).close()


def test_an_int_passes_for_a_float_but_a_bool_not_for_an_int():
    check_env_args(SYNTH, {"noise_std": 1, "d": 3})
    with pytest.raises(ValueError, match="argument d=True: expected int, got bool"):
        check_env_args(SYNTH, {"d": True})


@pytest.mark.parametrize(
    "env_id, kwargs, message",
    [
        ("LinBandit-Synthetic-v0", {"dim": 10}, r"has no argument 'dim' \(did you mean 'd'\?\)"),
        (
            "LinBandit-Synthetic-v0",
            {"fixed_arms": "no"},
            "argument fixed_arms='no': expected bool, got str",
        ),
        ("LinBandit-Synthetic-v0", {"d": 0}, "d must be an int >= 1, got 0"),
        ("LinBandit-Synthetic-v0", {"d": "10"}, "argument d='10': expected int, got str"),
        ("LinBandit-HeavyTail-v0", {"alpha": "0.5"}, "alpha"),
        ("LinBandit-LocallyConvex-v0", {"shape": "cube"}, "shape must be one of"),
        ("LinBandit-BAI-v0", {"omega": 2.0}, "omega must be an angle"),
        ("LinBandit-Digits-v0", {"normalise": True}, r"did you mean 'normalize'\?"),
        (
            "LinBandit-CNAE9-v0",
            {"shuffle_arms": "false"},
            "argument shuffle_arms='false': expected bool",
        ),
        ("LinBandit-MNIST-v0", {"dataset": "fashion"}, "unknown dataset 'fashion'"),
        ("LinBandit-Spam-v0", {"render_mode": "video"}, "render_mode must be None or one of"),
        # an option of the dataset loader, checked by name without loading
        (
            "LinBandit-Digits-v0",
            {"dataset_kwargs": {"split": "train"}},
            r"unexpected option\(s\) \['split'\]",
        ),
        (
            "LinBandit-MNIST-v0",
            {"dataset": "mnist-full", "dataset_kwargs": {"splt": "x"}},
            r"\['splt'\]",
        ),
    ],
)
def test_check_env_args_names_the_bad_key(env_id, kwargs, message):
    with pytest.raises(ValueError, match=message):
        linbandit_gym.check_env_args(env_id, kwargs)


# -- NAME=VALUE words ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "words, said",
    [
        (
            ["--agent-arg", "sketch_size", "10"],
            (
                "argument --agent-arg: expected NAME=VALUE in one word, e.g. --agent-arg "
                "sketch_size=10; "
                "got 'sketch_size'"
            ),
        ),
        (
            ["--env-arg", "d=10", "20"],
            "unrecognized arguments: 20 (--env-arg takes one NAME=VALUE word each time",
        ),
    ],
)
def test_a_name_value_option_given_otherwise_shows_runs_usage_and_the_form(words, said, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--env", SYNTH, "--agent", "SOFUL", *words])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: linbandit run ") and f"linbandit run: error: {said}" in err


def test_parse_key_values_reads_literals():
    assert parse_key_values(["a=1", "b=0.5", "c=fd", "d=[1, 2]", "e=None"]) == {
        "a": 1,
        "b": 0.5,
        "c": "fd",
        "d": [1, 2],
        "e": None,
    }


# -- --horizon -------------------------------------------------------------------------------------


@pytest.mark.parametrize("horizon", ["0", "-7"])
def test_tune_refuses_a_horizon_instead_of_using_the_configs(tmp_path, capsys, horizon):
    config = _write(tmp_path / "c.yaml", THREE)
    line = _refused(
        capsys,
        [
            "tune",
            str(config),
            "--horizon",
            horizon,
            "--out",
            str(tmp_path / "t"),
            "--beta",
            "0.1",
            "--lam",
            "1",
        ],
    )
    assert "--horizon" in line and f"got {horizon}" in line, line
    assert not (tmp_path / "t").exists()


def test_run_refuses_two_different_horizons(tmp_path, capsys):
    run_argv = [
        "run",
        "--env",
        "LinBandit-Synthetic-v0",
        "--agent",
        "OFUL",
        "--env-arg",
        "d=3",
        "--no-progress",
        "--env-arg",
        "horizon=5",
    ]
    line = _refused(capsys, [*run_argv, "--horizon", "7", "--out", str(tmp_path / "out")])
    assert "--horizon 7" in line and "horizon=5" in line, line
    assert not (tmp_path / "out").exists()
    assert main([*run_argv, "--horizon", "5"]) == 0  # the same length twice is one length
    capsys.readouterr()


# -- a config's arguments: every problem at the key where it was written ---------------------------


def _problems(config: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    return info.value.problems


def test_a_grid_key_is_reported_at_the_grid_not_at_args():
    problems = _problems(
        {
            "envs": ENVS,
            "agents": [
                {"name": "OFUL"},
                {"name": "SOFUL", "args": {"lam": 1.0}, "grid": {"sketch_sise": [5, 10]}},
            ],
        }
    )
    assert problems == [problems[0]] and problems[0].startswith(
        "agents[1].grid.sketch_sise: SOFUL has no argument 'sketch_sise' (did you mean "
        "'sketch_size'?); "
        "valid arguments: lam=1.0"
    )
    assert not problems[0].startswith("agents[1].args") and "__init__()" not in problems[0]


def test_args_keys_list_grid_points_and_tuned_overrides_are_each_located():
    problems = _problems(
        {
            "envs": ENVS,
            "agents": [
                {"name": "SOFUL", "args": {"sketch_sise": 5}},
                {"name": "SOFUL", "grid": [{"sketch_size": 0}, {"sketch_size": "x"}]},
                {"name": "CBSCFD", "label": "C", "args": {"sketch_size": 3}},
            ],
            "tuned": {"*": {"C": {"betta": 0.1}}},
        }
    )
    assert any(
        p.startswith("agents[0].args.sketch_sise: SOFUL has no argument 'sketch_sise'")
        for p in problems
    )
    assert (
        "agents[1].grid[0].sketch_size: SOFUL: sketch_size must be an int >= 1 (the number l "
        "of sketch rows), got 0 (int)"
    ) in problems
    assert (
        "agents[1].grid[1].sketch_size: SOFUL argument sketch_size='x': expected int, got str"
        in problems
    )
    assert any(
        p.startswith("tuned.*.C.betta: CBSCFD has no argument 'betta' (did you mean 'beta'?)")
        for p in problems
    )
    assert len(problems) == 4


def test_a_config_reports_every_problem_not_the_first():
    config = {
        "seeds": 0,
        "bogus": 1,
        "envs": [{"id": SYNTH, "args": {"dim": 3}}],
        "agents": [
            {"name": "OFUL", "args": {"lambda": 1}},
            {"name": "NoSuchAgent"},
            {"name": "DBSLinUCB", "args": {"eps": -1}},
        ],
        "plots": [{"kind": "pie"}],
    }
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    text = str(info.value)
    assert text.startswith("7 problems in the config:\n")
    for where in (
        "config: unknown key 'bogus'",
        "seeds:",
        "envs[0].args.dim: LinBandit-Synthetic-v0 has no argument 'dim' (did you mean 'd'?)",
        "agents[0].args.lambda: OFUL has no argument 'lambda' (did you mean 'lam'?)",
        "agents[1].name: unknown agent 'NoSuchAgent'",
        "agents[2].args.eps: DBSLinUCB: eps",
        "plots[0].kind",
    ):
        assert f"\n  {where}" in text, where
    assert len(info.value.problems) == 7


def test_env_grid_problems_are_located_at_the_grid(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "envs": [{"id": SYNTH, "args": {"d": 5}, "grid": {"n_arm": [3, 4]}}],
                "agents": [{"name": "OFUL"}],
            }
        )
    )
    assert main(["sweep", str(config), "--dry-run", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert (
        "envs[0].grid.n_arm: LinBandit-Synthetic-v0 has no argument 'n_arm' (did you mean "
        "'n_arms'?)" in err
    )
    assert err.count("n_arm'") == 1  # once, not once per grid point
