"""The README: short, its examples run each on its own, its links lead somewhere, papers by name."""

import re

import pytest

from doc_examples import README, ROOT, code_blocks, run_example

MAX_LINES = 300


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines (at most {MAX_LINES}): move detail into docs/"


def test_readme_has_the_two_setup_commands():
    blocks = [b.code for b in code_blocks(README) if b.info == "bash"]
    assert any(re.search(r"^make demo\b", c, re.M) and re.search(r"^make test\b", c, re.M) for c in blocks)


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
    return {markdown_slug(m) for m in re.findall(r"^#{1,6} +(.+?) *$", path.read_text(encoding="utf-8"), re.M)}


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
