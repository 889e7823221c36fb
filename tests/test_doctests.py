"""The examples in the docstrings of the packages run and print what they show.

Every module of ``agents``, ``linbandit_gym``, ``linbandit_host`` and ``envs_data`` whose
source holds an example (``>>>``) is found here, so a new module's examples are checked without
being listed.
"""

from __future__ import annotations

import doctest
import importlib
import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agents", "linbandit_gym", "linbandit_host", "envs_data")


def modules_with_examples() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>>" not in path.read_text(encoding="utf-8"):
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


# the agents' examples run sketches at toy sizes (d = 3), where every sketch holds more than
# OFUL's inverse and says so (the warning's own tests: tests/test_agent_warnings.py)
@pytest.mark.filterwarnings("ignore::agents.SketchSizeWarning")
@pytest.mark.parametrize("name", modules_with_examples())
def test_the_examples_in_the_docstrings_run(name):
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = io.StringIO()
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name} has '>>>' in its source but no example was found"
    assert result.failed == 0, report.getvalue()
