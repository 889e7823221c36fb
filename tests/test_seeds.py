"""The one seed rule (``linbandit_host.seeds``) and every consumer that applies it: the loop
(``run``), the command line, sweep configs, run records and the agents' ``reset(seed=...)``."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from cli_processes import SMALL_ENV, THREE
from hypothesis import given
from hypothesis import strategies as st

from agents import AGENTS, OFUL
from linbandit_gym.cli import main
from linbandit_gym.evaluate import run
from linbandit_gym.experiments import ConfigError, load_runs, parse_config, sweep
from linbandit_gym.records import run_meta_problem, seal
from linbandit_host import seeds as seeds_module
from linbandit_host.seeds import MAX_SEED_COUNT, SEED_LIMIT, check_seed, check_seeds, is_seed

SMALL = {"d": 3, "n_arms": 2, "horizon": 4}
CONFIG = {"envs": [{"id": "LinBandit-Synthetic-v0", "args": SMALL}], "agents": [{"name": "OFUL"}]}


def test_the_examples_of_the_rule_hold():
    assert doctest.testmod(seeds_module, optionflags=doctest.ELLIPSIS).failed == 0


@given(st.integers(min_value=0, max_value=SEED_LIMIT - 1))
def test_every_int_in_range_is_a_seed(seed):
    assert is_seed(seed) and is_seed(np.int64(seed)) and check_seed(seed) == seed


@given(
    st.one_of(
        st.integers(max_value=-1),
        st.integers(min_value=SEED_LIMIT),
        st.booleans(),
        st.floats(),
        st.text(),
        st.none(),
    )
)
def test_nothing_else_is_a_seed(value):
    assert not is_seed(value)
    with pytest.raises(ValueError, match=r"^where: a seed is an int in \[0, 2\*\*63\), got "):
        check_seed(value, "where")


def test_a_count_means_the_first_seeds_and_is_bounded():
    assert check_seeds(3) == [0, 1, 2] and check_seeds(np.int64(2)) == [0, 1]
    assert check_seeds(range(5, 8)) == [5, 6, 7] and check_seeds(np.array([4, 9])) == [4, 9]
    assert len(check_seeds(MAX_SEED_COUNT)) == MAX_SEED_COUNT
    for count in (0, -3):
        with pytest.raises(ValueError, match=r"^seeds: an int is a count and must be >= 1"):
            check_seeds(count)
    for count in (MAX_SEED_COUNT + 1, 2**63 - 1, 2**64):  # refused before any list is built
        with pytest.raises(
            ValueError, match=rf"^seeds: a count of {count:,} seeds is more than 100,000"
        ):
            check_seeds(count)


def test_a_list_holds_distinct_seeds_unless_members_share_them():
    with pytest.raises(
        ValueError, match=r"^seeds: seed 0 is listed twice in \[0, 0, 1\]; .* give distinct seeds"
    ):
        check_seeds([0, 0, 1])
    assert check_seeds([0, 0, 1], distinct=False) == [0, 0, 1]
    for bad, message in [
        (None, "expected an int count or a non-empty list of ints, got None"),
        ("012", "expected an int count"),
        ({"a": 1}, "expected an int count"),
        (True, "expected an int count"),
        ([], "the list is empty"),
        ([1, 2**63], r"seeds\[1\]: a seed is an int in \[0, 2\*\*63\)"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_seeds(bad)


# -- the consumers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seeds, message",
    [
        ([0, 0, 1], r"seed 0 is listed twice"),
        (None, r"expected an int count or a non-empty list of ints, got None"),
        (2**64, r"a count of 18,446,744,073,709,551,616 seeds is more than 100,000"),
        ([2**64], r"seeds\[0\]: a seed is an int in \[0, 2\*\*63\), got 18446744073709551616"),
    ],
)
def test_run_refuses_what_is_not_a_list_of_seeds(seeds, message):
    for batched in (False, None):
        with pytest.raises(ValueError, match=message):
            run(
                "LinBandit-Synthetic-v0",
                OFUL(),
                seeds=seeds,
                env_kwargs=SMALL,
                batched=batched,
                progress=False,
            )


@pytest.mark.parametrize("count", [str(2**64), str(2**63 - 1), "0"])
def test_the_command_line_refuses_a_count_in_one_line(capsys, tmp_path, count):
    argv = [
        "run",
        "--env",
        "LinBandit-Synthetic-v0",
        "--agent",
        "OFUL",
        "--horizon",
        "4",
        "--seeds",
        count,
        "--out",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("linbandit run: error: --seeds: ") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_configs_apply_the_same_rule(tmp_path):
    assert parse_config({**CONFIG, "seeds": [2**63 - 1]}).seeds == [2**63 - 1]
    for seeds, message in [
        ([0, 0], r"^seeds: seed 0 is listed twice"),
        (2**64, r"^seeds: a count of"),
        ([3, 2**63], r"^seeds\[1\]: a seed is an int in \[0, 2\*\*63\)"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_config({**CONFIG, "seeds": seeds})
    with pytest.raises(ConfigError, match=r"^tune.seeds: seed 5 is listed twice"):
        parse_config({**CONFIG, "tune": {"seeds": [5, 5]}})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, "seeds": [1, 1]}))
    assert main(["sweep", str(path), "--dry-run"]) == 2


def test_records_apply_the_same_rule(tmp_path):
    sweep({**CONFIG, "seeds": [SEED_LIMIT - 1]}, tmp_path, log=None)
    [path] = (tmp_path / "runs").glob("*.json")
    meta = json.loads(path.read_text())
    assert run_meta_problem(meta) is None
    meta["config"]["seed"] = meta["seed"] = SEED_LIMIT
    assert (
        run_meta_problem(seal(meta)) == "has seed = 9223372036854775808, not an int in [0, 2**63)"
    )


def test_agents_apply_the_same_rule():
    agent = OFUL()
    agent.reset(seed=SEED_LIMIT - 1)
    with pytest.raises(ValueError, match=r"^seed must be an int in \[0, 2\*\*63\) or None"):
        agent.reset(seed=SEED_LIMIT)
    batch = OFUL(batch_size=3)
    batch.reset(seed=SEED_LIMIT - 3)  # members seeded seed, seed + 1, seed + 2
    with pytest.raises(
        ValueError, match=r"^seed \+ 2 \(member 2's seed\) must be an int in \[0, 2\*\*63\)"
    ):
        batch.reset(seed=SEED_LIMIT - 2)


# -- every consumer at the edges of the range -----------------------------------------------------


def _write(path, config: dict):
    path.write_text(yaml.safe_dump(config))
    return path


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _refused(capsys, argv: list[str], code: int = 2) -> str:
    assert main(argv) == code
    return _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("seed", [2**64, 2**64 + 5, 2**63, -1])
def test_seeds_out_of_range_are_refused_at_validation_with_one_line(tmp_path, capsys, seed):
    config = _write(tmp_path / "c.yaml", {**THREE, "seeds": [0, seed]})
    with pytest.raises(ConfigError, match=r"seeds\[1\]: a seed is an int in \[0, 2\*\*63\)"):
        parse_config(config)
    for argv in (
        ["sweep", str(config), "--dry-run"],
        ["sweep", str(config), "--out", str(tmp_path / "out")],
    ):
        assert "seeds[1]" in _refused(capsys, argv)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=r"\[0, 2\*\*63\)"):
        run(
            "LinBandit-Synthetic-v0",
            AGENTS["OFUL"](),
            seeds=[seed],
            env_kwargs=SMALL_ENV["args"],
            progress=False,
        )


def test_the_largest_seeds_play_batched_and_alone(tmp_path):
    seeds = [2**63 - 1, 2**63 - 2, 2**62]
    result = sweep(
        {**THREE, "seeds": seeds}, tmp_path / "out", batched=True, timing_runs=False, log=None
    )
    assert result.ok and len(result.executed) == 3
    assert sorted(load_runs(tmp_path / "out")["seed"]) == sorted(seeds)


@pytest.mark.slow
def test_a_count_of_a_billion_seeds_is_one_line_at_once(tmp_path):
    config = _write(tmp_path / "c.yaml", {**THREE, "seeds": 1_000_000_000})
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "linbandit_gym.cli", "sweep", str(config), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and time.perf_counter() - started < 60
    assert "1,000,000,000 seeds" in _one_line(done.stderr)
    with pytest.raises(ConfigError, match="runs"):  # a grid that multiplies to too many runs, too
        parse_config(
            {
                **THREE,
                "seeds": 1000,
                "agents": [{"name": "OFUL", "grid": {"beta": list(range(200))}}],
            }
        )
