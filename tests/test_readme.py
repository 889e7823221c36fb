"""The README: short, its examples run each on its own, its links lead somewhere, papers by name."""

import re

import pytest
from doc_examples import README, ROOT, code_blocks, run_example

MAX_LINES = 300


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, (
        f"README.md has {lines} lines (at most {MAX_LINES}): move detail into docs/"
    )


def test_readme_has_the_two_setup_commands():
    blocks = [b.code for b in code_blocks(README) if b.info == "bash"]
    assert any(
        re.search(r"^make demo\b", c, re.M) and re.search(r"^make test\b", c, re.M) for c in blocks
    )


README_EXAMPLES = [b for b in code_blocks(README) if b.run]


def test_readme_has_examples():
    assert len(README_EXAMPLES) >= 3


@pytest.mark.parametrize("block", README_EXAMPLES, ids=[b.where for b in README_EXAMPLES])
def test_readme_example_runs_alone(block, tmp_path):
    run_example(block, tmp_path)


def markdown_slug(heading: str) -> str:
    """Python-Markdown's default heading id (GitHub's agrees for plain headings)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # [text](url) -> text
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def headings(path):
    return {
        markdown_slug(m)
        for m in re.findall(r"^#{1,6} +(.+?) *$", path.read_text(encoding="utf-8"), re.M)
    }


def test_readme_relative_links_resolve():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links, "the README links into the docs"
    broken = []
    for link in links:
        if re.match(r"[a-z]+:", link):  # http(s):, mailto: -- not checked offline
            continue
        target, _, anchor = link.partition("#")
        path = (README.parent / target) if target else README
        if not path.exists():
            broken.append(f"{link}: no file {path.relative_to(ROOT)}")
        elif anchor and path.suffix == ".md" and anchor not in headings(path):
            broken.append(f"{link}: {path.relative_to(ROOT)} has no heading #{anchor}")
    assert not broken, "broken README links:\n  " + "\n  ".join(broken)


def _command_lines() -> list[str]:
    """The ``linbandit ...`` commands of the README's shell blocks (comments dropped)."""
    lines = [
        line.split("#")[0].strip()
        for b in code_blocks(README)
        if b.info == "bash"
        for line in b.code.replace("\\\n", " ").splitlines()
    ]
    return [line for line in lines if line.startswith("linbandit ")]


@pytest.mark.filterwarnings("default::agents.SketchSizeWarning")  # l0=10 at the test's small d
def test_readme_commands_name_files_a_clone_has_and_they_run(tmp_path, monkeypatch, capsys):
    import yaml

    from linbandit_gym.cli import main

    monkeypatch.chdir(ROOT)  # the README's commands run from the repository's root
    commands = _command_lines()
    agent = next(c for c in commands if ":MyAgent" in c)
    module = re.search(r"--agent (\S+):MyAgent", agent)[1]
    assert (ROOT / f"{module.replace('.', '/')}.py").is_file()
    sweep = next(c for c in commands if c.startswith("linbandit sweep "))
    config = sweep.split()[2]
    assert (ROOT / config).is_file() and config.startswith("examples/")
    out = next(c for c in commands if c.startswith("linbandit plot ")).split()[2]
    # plot reads what sweep writes
    assert yaml.safe_load((ROOT / config).read_text())["name"] == out.split("/")[-1]

    assert main(["describe", f"{module}:MyAgent"]) == 0
    assert main([*agent.split()[1:], "--horizon", "30", "--env-arg", "d=10", "--no-progress"]) == 0
    assert main(["sweep", config, "--dry-run"]) == 0
    # the config as shipped, on fewer rounds and a smaller d: it runs, plots and reports
    small = yaml.safe_load((ROOT / config).read_text())
    small.update(horizon=60, seeds=2)
    small["envs"][0]["args"]["d"] = 20
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small))
    assert main(["sweep", str(tmp_path / "small.yaml"), "--out", str(tmp_path / "out")]) == 0
    assert main(["report", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "report.html").is_file()
    capsys.readouterr()
