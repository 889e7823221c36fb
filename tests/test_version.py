"""One version, from pyproject.toml: the package attributes and ``linbandit --version`` report
it."""

import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import agents
import linbandit_gym
from linbandit_gym import cli

ROOT = Path(__file__).resolve().parents[1]


def pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    project = text.split("[project]", 1)[1].split("\n[", 1)[0]  # the [project] table only
    match = re.search(r'^version\s*=\s*"([^"]+)"', project, re.M)
    assert match, "pyproject.toml's [project] table has no version"
    return match.group(1)


def test_package_versions_are_pyprojects():
    expected = pyproject_version()
    assert version("linbandit-gym") == expected, (
        "installed metadata is stale: reinstall (make install)"
    )
    assert linbandit_gym.__version__ == expected
    assert agents.__version__ == expected


def test_cli_version_flag(capsys):
    try:
        cli.main(["--version"])
    except SystemExit as exc:  # argparse's version action exits 0 after printing
        assert exc.code == 0
    else:
        raise AssertionError("linbandit --version did not exit")
    assert capsys.readouterr().out.strip() == f"linbandit {pyproject_version()}"


@pytest.mark.slow  # an interpreter starts; the version is checked in-process by default
def test_module_entry_point_version():
    out = subprocess.run(
        [sys.executable, "-m", "linbandit_gym", "--version"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert out.stdout.strip() == f"linbandit {pyproject_version()}"


def test_changelog_has_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(r"^## \[Unreleased\]", changelog, re.M), (
        "CHANGELOG.md keeps an Unreleased section on top"
    )
    assert re.search(rf"^## \[{re.escape(pyproject_version())}\]", changelog, re.M), (
        "CHANGELOG.md has no section for the version in pyproject.toml"
    )
