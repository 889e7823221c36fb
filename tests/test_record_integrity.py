"""Records that prove their integrity: each kind of record file of a finished sweep is damaged
(bytes flipped, truncated, rewritten with the same size and a changed value); ``plot`` and
``report`` never crash (no traceback: exit 0, or 2 naming the damaged run and the reason), and
``sweep`` (resume) redoes exactly the damaged runs and restores the reference records."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from linbandit_gym.cli import main
from linbandit_gym.experiments import load_records, load_runs, plan, sweep
from linbandit_gym.records import check_records, records_fingerprint, write_records

CONFIG = {
    "name": "integrity",
    "seeds": 2,
    "envs": [{"id": "LinBandit-Synthetic-v0", "args": {"d": 10, "n_arms": 3, "horizon": 25}}],
    "agents": [
        {"name": "OFUL", "args": {"beta": 0.1}},
        {"name": "SOFUL", "args": {"beta": 0.1, "sketch_size": 2}},
    ],
    "plots": [{"kind": "regret", "name": "fig_regret"}, {"kind": "pareto"}],
}
#: What differs between two plays of the same run: its times, where and when it ran.
TIMING = ["agent_time", "agent_wall_time", "wall_time"]
VOLATILE = {
    "pid",
    "host",
    "started",
    "duration_s",
    "sha256_of_content",
    "records",
    "backend",
    "versions",
}
VOLATILE_SUMMARY = {
    "agent_time_s",
    "agent_wall_time_s",
    "wall_time_s",
    "ms_per_round",
    "wall_ms_per_round",
}


def _records(out: Path) -> pd.DataFrame:
    return (
        load_records(out)
        .drop(columns=TIMING)
        .sort_values(["agent", "seed", "t"], ignore_index=True)
    )


def _metas(out: Path) -> dict[str, dict]:
    """Every run JSON without what differs between two plays of the same run."""
    metas = {}
    for path in sorted((out / "runs").glob("*.json")):
        meta = {k: v for k, v in json.loads(path.read_text()).items() if k not in VOLATILE}
        meta["summary"] = {k: v for k, v in meta["summary"].items() if k not in VOLATILE_SUMMARY}
        metas[path.stem] = meta
    return metas


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A finished sweep and the records and metadata it holds."""
    root = tmp_path_factory.mktemp("reference")
    config = root / "integrity.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    out = root / "out"
    assert main(["sweep", str(config), "--out", str(out), "--quiet", "--no-plots"]) == 0
    return config, out, _records(out), _metas(out)


def _copy(reference, tmp_path) -> Path:
    import shutil

    _, out, _, _ = reference
    target = tmp_path / "out"
    shutil.copytree(out, target)
    return target


def _flip(path: Path, count: int = 1) -> None:
    data = bytearray(path.read_bytes())
    for i in range(count):
        at = (len(data) // 2 + 97 * i) % len(data)
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _same_size(path: Path) -> None:
    """Rewrite ``path`` with one value changed and the same number of bytes."""
    size = path.stat().st_size
    if (
        path.suffix == ".parquet"
    ):  # the final regret's 8 bytes (stored verbatim) replaced by 999.0's
        last = pd.read_parquet(path)["cumulative_regret"].iloc[-1]
        data = path.read_bytes()
        assert np.float64(last).tobytes() in data
        path.write_bytes(data.replace(np.float64(last).tobytes(), np.float64(999.0).tobytes()))
        assert (
            pd.read_parquet(path)["cumulative_regret"].iloc[-1] == 999.0
            and path.stat().st_size == size
        )
        return
    text = path.read_text()
    digits = [m.start() for m in re.finditer(r"[1-8]", text)]
    at = digits[len(digits) // 2]
    path.write_text(
        text[:at] + str(int(text[at]) + 1) + text[at + 1 :]
    )  # one digit up: same size, valid
    assert path.stat().st_size == size


DAMAGES = {
    "flip": _flip,
    "flip_many": lambda p: _flip(p, 40),
    "truncate": _truncate,
    "same_size": _same_size,
}
#: The default suite damages each kind of file the subtlest way (a valid file, one value changed,
#: the same size: only the SHA-256 or the seal tells); the slow suite adds the other damages.
DAMAGE_PARAMS = [
    damage if damage == "same_size" else pytest.param(damage, marks=pytest.mark.slow)
    for damage in sorted(DAMAGES)
]
#: A run's JSON in the default suite (its parquet file: the flipped byte below); the others in the
#: slow one.
KIND_PARAMS = [
    "run_json",
    *(
        pytest.param(kind, marks=pytest.mark.slow)
        for kind in ("parquet", "manifest.json", "config.yaml")
    ),
]


def _victims(out: Path, kind: str) -> list[Path]:
    if kind == "parquet":
        return sorted((out / "runs").glob("*.parquet"))[:1]
    if kind == "run_json":
        return sorted((out / "runs").glob("*.json"))[1:2]
    return [out / kind]


@pytest.mark.parametrize("damage", DAMAGE_PARAMS)
@pytest.mark.parametrize("kind", KIND_PARAMS)
def test_damaged_records_never_crash_plot_or_report_and_resume_restores_them(
    reference, tmp_path, capsys, kind, damage
):
    config, _, records, metas = reference
    out = _copy(reference, tmp_path)
    victims = _victims(out, kind)
    for victim in victims:
        DAMAGES[damage](victim)
    for command in ("plot", "report"):
        code = main([command, str(out)])
        err = capsys.readouterr().err
        assert code in (0, 2) and "Traceback" not in err, err
        if code == 2 and kind in (
            "parquet",
            "run_json",
        ):  # the damaged run is named, with the reason
            assert str(victims[0].with_suffix(".json")) in err or str(victims[0]) in err, err
            assert "redo" in err, err
    if kind in ("parquet", "run_json"):
        finished, pending = plan(config, out)
        assert [s.run_id for s in pending] == [victims[0].stem]
    assert main(["sweep", str(config), "--out", str(out), "--quiet", "--no-plots"]) == 0
    capsys.readouterr()
    pd.testing.assert_frame_equal(_records(out), records)
    assert _metas(out) == metas
    for command in ("plot", "report"):
        assert main([command, str(out)]) == 0, capsys.readouterr().err


# -- damaged and edited inputs, one by one -------------------------------------------------------


def _resealed(path: Path, change) -> None:
    """Edit a run JSON and seal it again, so that only the schema can tell."""
    from linbandit_gym.records import SEAL_KEY, seal

    meta = json.loads(path.read_text())
    meta.pop(SEAL_KEY, None)
    change(meta)
    path.write_text(json.dumps(seal(meta)))


def _edited_run_json(reference, tmp_path, resealed: bool, change) -> tuple[Path, Path]:
    """A copy of the reference sweep whose first run JSON had ``change`` made to it, then sealed
    again (``resealed``: only the schema can tell) or not; returns the directory and that file."""
    out = _copy(reference, tmp_path)
    victim = sorted((out / "runs").glob("*.json"))[0]
    if resealed:
        _resealed(victim, change)
    else:
        meta = json.loads(victim.read_text())
        change(meta)
        victim.write_text(json.dumps(meta))
    return out, victim


@pytest.mark.parametrize("resealed", [False, True], ids=["edited", "edited-and-resealed"])
def test_a_final_regret_of_abc_crashes_nothing_and_is_redone(reference, tmp_path, capsys, resealed):
    config, _, records, _ = reference
    out, victim = _edited_run_json(
        reference, tmp_path, resealed, lambda meta: meta["summary"].update(final_regret="abc")
    )
    for command in ("plot", "report"):
        assert main([command, str(out)]) == 2
        err = capsys.readouterr().err
        assert str(victim) in err and "Traceback" not in err and "agg function failed" not in err, (
            err
        )
        if resealed:
            assert "summary.final_regret = 'abc', not a number" in err, err
    result = sweep(config, out, log=None)
    assert result.executed == [victim.stem]
    pd.testing.assert_frame_equal(_records(out), records)
    assert main(["plot", str(out)]) == 0


@pytest.mark.parametrize("resealed", [False, True], ids=["edited", "edited-and-resealed"])
def test_a_run_json_without_summary_is_not_finished(reference, tmp_path, capsys, resealed):
    config, _, records, _ = reference
    out, victim = _edited_run_json(reference, tmp_path, resealed, lambda meta: meta.pop("summary"))
    finished, pending = plan(config, out)
    assert [s.run_id for s in pending] == [victim.stem]
    assert main(["plot", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(victim) in err and ("has no summary" in err or "checksum" in err), err
    sweep(config, out, log=None)
    assert main(["plot", str(out)]) == 0
    table = pd.read_csv(out / "summary.csv")
    assert list(table["seeds"]) == [2, 2]  # and each mean is over both seeds
    runs = load_runs(out)
    for agent, group in runs.groupby("agent"):
        mean = table.loc[table["agent"] == agent, "final_regret_mean"].item()
        assert mean == pytest.approx(group["final_regret"].mean())


def _flip_changing_a_value(path: Path, column: str) -> None:
    """Flip one byte of ``path`` so that it still reads, with one value of ``column`` changed."""
    original = pd.read_parquet(path)
    data = path.read_bytes()
    for at in range(4, len(data) - 8):  # after the magic number PAR1, through the column chunks
        damaged = bytearray(data)
        damaged[at] ^= 0x01
        path.write_bytes(bytes(damaged))
        try:
            frame = pd.read_parquet(path)
        except Exception:  # noqa: BLE001
            continue
        if list(frame.columns) != list(original.columns):  # a flip in the schema: not a value
            continue
        if frame.drop(columns=[column]).equals(original.drop(columns=[column])) and not frame[
            column
        ].equals(original[column]):
            return
    raise AssertionError(f"no one-byte flip changes only {column}")


def test_one_flipped_byte_that_changes_a_value_silently_is_seen(reference, tmp_path, capsys):
    config, _, records, _ = reference
    out = _copy(reference, tmp_path)
    victim = sorted((out / "runs").glob("*.parquet"))[0]
    _flip_changing_a_value(victim, "best_expected_reward")
    assert "SHA-256" in check_records(
        victim, json.loads(victim.with_suffix(".json").read_text())["records"]
    )
    assert [s.run_id for s in plan(config, out)[1]] == [victim.stem]
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(victim) in err and "SHA-256" in err and "redo" in err, err
    assert sweep(config, out, log=None).executed == [victim.stem]
    pd.testing.assert_frame_equal(_records(out), records)


def test_a_same_size_rewrite_with_another_final_regret_fails_check_records(reference, tmp_path):
    config, _, records, metas = reference
    out = _copy(reference, tmp_path)
    victim = sorted((out / "runs").glob("*.parquet"))[0]
    fingerprint = json.loads(victim.with_suffix(".json").read_text())["records"]
    _same_size(victim)
    assert (
        pd.read_parquet(victim)["cumulative_regret"].iloc[-1]
        != metas[victim.stem]["summary"]["final_regret"]
    )
    problem = check_records(victim, fingerprint)
    assert problem is not None and "SHA-256" in problem
    assert [s.run_id for s in plan(config, out)[1]] == [victim.stem]
    sweep(config, out, log=None)
    pd.testing.assert_frame_equal(_records(out), records)


def test_many_flipped_bits_are_redone_on_resume(reference, tmp_path, capsys):
    config, _, records, _ = reference
    out = _copy(reference, tmp_path)
    victim = sorted((out / "runs").glob("*.parquet"))[1]
    rng = np.random.default_rng(0)
    data = bytearray(victim.read_bytes())
    footer = (
        len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    )  # where the footer starts: kept intact,
    for at in rng.choice(
        np.arange(4, footer), size=60, replace=False
    ):  # so the file still says its rows
        data[at] ^= 1 << int(rng.integers(8))
    victim.write_bytes(bytes(data))
    assert main(["plot", str(out)]) == 2
    assert str(victim) in capsys.readouterr().err
    result = sweep(config, out, log=None)
    assert result.executed == [victim.stem]
    pd.testing.assert_frame_equal(_records(out), records)
    assert main(["plot", str(out)]) == 0


def test_records_fingerprint_holds_the_sha256(tmp_path):
    frame = pd.DataFrame({"t": range(20), "regret": np.linspace(0, 1, 20)})
    path = write_records(frame, tmp_path / "r")
    fingerprint = records_fingerprint(path, len(frame))
    assert (
        re.fullmatch(r"[0-9a-f]{64}", fingerprint["sha256"])
        and check_records(path, fingerprint) is None
    )
    assert "SHA-256" in check_records(path, {**fingerprint, "sha256": "0" * 64})


def test_resume_says_which_runs_it_redoes_and_why(reference, tmp_path):
    config, _, _, _ = reference
    out = _copy(reference, tmp_path)
    victim = sorted((out / "runs").glob("*.parquet"))[0]
    _flip(victim)
    lines: list[str] = []
    sweep(config, out, log=lines.append)
    redo = [line for line in lines if line.startswith("redoing")]
    assert len(redo) == 1 and str(victim) in redo[0], lines


def test_a_run_json_names_only_its_own_records_file(reference, tmp_path, capsys):
    """A JSON (resealed) that points at a file outside runs/ is refused by the schema, not
    followed."""
    config, _, _, _ = reference
    out = _copy(reference, tmp_path)
    victim = sorted((out / "runs").glob("*.json"))[0]
    _resealed(victim, lambda meta: meta["records"].update(file="../../../etc.parquet"))
    assert main(["plot", str(out)]) == 2
    assert "names the records file" in capsys.readouterr().err
    assert [s.run_id for s in plan(config, out)[1]] == [victim.stem]


def test_a_damaged_failure_record_does_not_stop_the_report(reference, tmp_path, capsys):
    out = _copy(reference, tmp_path)
    (out / "failed").mkdir(exist_ok=True)
    (out / "failed" / "0123456789abcdef.json").write_text('{"run_id": "0123456789abcdef", "spec": ')
    assert main(["report", str(out)]) == 0, capsys.readouterr().err
    assert "0123456789abcdef" in (out / "report.html").read_text()
