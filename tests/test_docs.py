"""The documentation site: it builds with warnings as errors, documents every public class,
its examples run, and the files a package is expected to have are there and valid."""

import ast
import html as html_module
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from doc_examples import DOCS, ROOT, code_blocks, doc_files, python_examples, run_example

import agents
import agents.sketches
import linbandit_gym.envs
from linbandit_gym.arguments import rst_to_text

DOCS_EXAMPLES = [b for b in python_examples() if b.path != ROOT / "README.md"]


def test_every_guide_page_has_a_runnable_example():
    pages_with_examples = {b.path.name for b in DOCS_EXAMPLES if b.path.parent.name == "guide"}
    guide_pages = {p.name for p in (DOCS / "guide").glob("*.md")}
    # the Ray and command-line pages show shell commands and a cluster, not Python to run here
    assert guide_pages - pages_with_examples <= {"ray.md", "cli.md"}, (
        guide_pages - pages_with_examples
    )


@pytest.mark.parametrize("block", DOCS_EXAMPLES, ids=[b.where for b in DOCS_EXAMPLES])
def test_docs_example_runs_alone(block, tmp_path):
    run_example(block, tmp_path)


def test_code_fences_are_closed_and_labelled():
    for path in doc_files():
        for block in code_blocks(path):  # raises on an unclosed fence
            assert block.info, (
                f"{block.where}: give the fence a language (python runs; bash, yaml, text do not)"
            )


# Public classes that must each have an API entry, by their public import path.
def public_api() -> list[str]:
    names = [f"agents.{n}" for n in agents.__all__ if isinstance(getattr(agents, n), type)]
    names += [f"agents.sketches.{n}" for n in agents.sketches.__all__]
    names += [f"linbandit_gym.envs.{n}" for n in linbandit_gym.envs.__all__]
    return names + ["linbandit_gym.run"]


#: The tests of the built site: the build is `make docs` (mkdocs --strict), which the slow suite
#: (CI) runs; the pages' examples and links to files run in the default suite.
SITE = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built as `make docs` builds it: mkdocs --strict (any warning fails)."""
    out = tmp_path_factory.mktemp("site")
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.fail(
            "mkdocs is not installed: `make install` (the dev extra includes the docs extra)"
        )
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # no end-of-life banner in the output
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, (
        "mkdocs build --strict failed:\n" + proc.stdout[-3000:] + proc.stderr[-6000:]
    )
    return out


@SITE
def test_docs_build_strict(site):
    assert (site / "index.html").exists()
    assert (site / "api" / "agents" / "soful.html").exists()


@SITE
def test_every_public_class_has_an_api_entry(site):
    html = "\n".join(p.read_text(encoding="utf-8") for p in (site / "api").rglob("*.html"))
    missing = [name for name in public_api() if f'id="{name}"' not in html]
    assert not missing, (
        f"no API entry for {missing}: add `::: <name>` to a page under docs/api/ and to mkdocs.yml"
    )


@SITE
def test_api_pages_link_the_cross_references(site):
    # docstring roles such as :class:`~agents.sketches.fd.FrequentDirections` became links or code
    pages = {p: p.read_text(encoding="utf-8") for p in (site / "api").rglob("*.html")}
    raw = [
        str(p.relative_to(site))
        for p, html in pages.items()
        if re.search(r":(class|func|meth|mod|attr):`", html)
    ]
    assert not raw, f"Sphinx roles left as text in {raw}"
    soful = pages[site / "api" / "agents" / "soful.html"]
    assert re.search(
        r'<a class="autorefs autorefs-internal"[^>]*href="base\.html#agents\.LinUCB"', soful
    )
    links = sum(
        len(re.findall(r'class="autorefs autorefs-internal"[^>]*href="[^"#]', html))
        for html in pages.values()
    )
    assert links >= 20, f"only {links} links between API pages"


def _parameter_rows(page: str, anchor: str) -> list[list[str]]:
    """The cells (name, type, description, default) of the parameters table of the object whose
    heading has ``id=anchor`` on an API page."""
    start = page.index(f'id="{anchor}"')
    table = page[page.index("<table", start) : page.index("</table>", start)]
    rows = []
    for row in re.findall(r"<tr[^>]*>.*?</tr>", table, re.DOTALL)[1:]:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
        rows.append(
            [" ".join(html_module.unescape(re.sub(r"<[^>]+>", "", cell)).split()) for cell in cells]
        )
    return rows


@SITE
def test_api_pages_list_every_agent_argument_as_describe_does(site):
    # one parser for both: one row per keyword of the signature, its default, its whole meaning
    from linbandit_gym.registry import lookup_agent

    pages = "\n".join(
        p.read_text(encoding="utf-8") for p in (site / "api" / "agents").glob("*.html")
    )
    checked = 0
    for name, cls in agents.AGENTS.items():
        anchor = f"agents.{cls.__name__}"
        if f'id="{anchor}"' not in pages:
            continue  # an alias such as "DBSLinUCB-FD": its class is on no page of its own
        rows = _parameter_rows(pages, anchor)
        arguments = list(lookup_agent(name).arguments())
        assert [r[0] for r in rows] == [a.name for a in arguments], name
        for row, argument in zip(rows, arguments):
            default = "required" if argument.required else repr(argument.default)
            assert row[3] == default, (name, row)
            assert row[2] == " ".join(rst_to_text(argument.meaning).split()), (name, row)
        checked += 1
    assert checked >= 8


INTERNAL_WORDS = re.compile(r"seed 00[0-4]|issue [0-9]+", re.I)
#: Files a clone of the repository does not hold: the code cites docs/contracts.md instead.
OUTSIDE_FILES = re.compile(r"\bDESIGN\.md\b|\.\./shared/")
SOURCE_DIRS = (
    "agents",
    "envs_data",
    "linbandit_gym",
    "linbandit_host",
    "tests",
    "benchmarks",
    "scripts",
)


def _hits(pattern: re.Pattern, files: list) -> list[str]:
    return [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
        for p in files
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]


def test_user_text_code_and_tests_name_papers_by_author_not_by_internal_numbers():
    files = doc_files() + sorted((ROOT / "linbandit_gym" / "configs").glob("*.yaml"))
    files += [ROOT / "CHANGELOG.md", ROOT / "CITATION.cff", ROOT / "mkdocs.yml"]
    files += sorted(p for d in SOURCE_DIRS for p in (ROOT / d).rglob("*.py"))
    hits = _hits(INTERNAL_WORDS, files)
    assert not hits, (
        "cite papers by author and year (docs/references.md), not by internal or "
        "tracker numbers:\n" + "\n".join(hits)
    )
    outside = _hits(OUTSIDE_FILES, files)
    assert not outside, "cite docs/contracts.md, which the repository holds:\n" + "\n".join(outside)


def test_references_page_defines_every_key_used():
    references = (DOCS / "references.md").read_text(encoding="utf-8")
    keys = set(re.findall(r"^\| *\*\*([^*]+)\*\* *\|", references, re.M))
    assert {
        "Wen et al. (2025)",
        "Wen et al. (2024)",
        "Yang et al. (2025)",
        "Jamieson (2018)",
    } <= keys
    text = "\n".join(p.read_text(encoding="utf-8") for p in doc_files())
    used = set(re.findall(r"\b([A-Z][\w-]*(?: et al\.| & [A-Z][\w-]*)?) \((\d{4})\)", text))
    unknown = sorted(f"{a} ({y})" for a, y in used if f"{a} ({y})" not in keys)
    assert not unknown, f"cited but not defined on docs/references.md: {unknown}"


def test_license_is_mit():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "The linbandit-gym developers" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text


def test_citation_cff_is_valid_cff_1_2_0():
    """CITATION.cff against the CFF 1.2.0 JSON schema (tests/data/cff-schema-1.2.0.json, copied from
    the Citation File Format project, CC-BY-4.0)."""
    jsonschema = pytest.importorskip("jsonschema")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    schema = json.loads(
        (ROOT / "tests" / "data" / "cff-schema-1.2.0.json").read_text(encoding="utf-8")
    )
    jsonschema.Draft7Validator(schema).validate(citation)
    assert citation["cff-version"] == "1.2.0"
    assert citation["version"] == linbandit_gym.__version__
    assert citation["license"] == "MIT"


def test_the_experiments_guide_counts_its_figures_as_figures(tmp_path):
    [block] = [
        b for b in DOCS_EXAMPLES if b.path.name == "experiments.md" and "make_plots" in b.code
    ]
    printed = run_example(block, tmp_path)
    line = next(line for line in printed.splitlines() if " figures: " in line)
    count, names = line.split(" figures: ")
    names = ast.literal_eval(names)
    assert int(count) == len(names) >= 2 and all(name.endswith(".png") for name in names), line


# -- tables that come from a command (scripts/doc_figures.py) ------------------------------------


def _doc_figures():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "doc_figures", ROOT / "scripts" / "doc_figures.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_every_figures_marker_heads_a_table_of_an_existing_command():
    figures = _doc_figures()
    tables = figures.marked_tables()
    assert any("memory_mnist" in t.command for t in tables)
    for table in tables:
        header, separator, *rows = table.lines()
        assert re.fullmatch(r"\|(-+\|)+", separator.replace(" ", "")), table.where
        cells = lambda row: re.sub(r"`[^`]*`", "code", row).count("|")  # a code span's | is no cell
        assert rows and all(cells(row) == cells(header) for row in rows), table.where
        argv = figures.command_argv(table.command)
        named = [a for a in argv[1:] if a.endswith((".py", ".yaml"))]
        assert all((ROOT / a).is_file() for a in named), f"{table.where}: {table.command}"


def test_the_figures_script_reads_a_printed_table_and_rewrites_only_it(tmp_path, monkeypatch):
    figures = _doc_figures()
    page = tmp_path / "page.md"
    page.write_text(
        "text\n<!-- figures: python x.py -->\n| a | b |\n|---|---|\n| 1 | 2 |\n\nafter\n"
    )
    monkeypatch.setattr(figures, "ROOT", tmp_path)
    [table] = figures.marked_tables([page])
    output = "noise\n| a | b |\n|---|---|\n| 1 | 3 |\n| 4 | 5 |\nmore noise\n"
    rows = figures.printed_table(output, table.lines()[0])
    assert rows == ["| a | b |", "|---|---|", "| 1 | 3 |", "| 4 | 5 |"]
    assert (
        "-| 1 | 2 |" in figures.difference(table, rows)
        and figures.difference(table, table.lines()) == ""
    )
    assert figures.update(table, rows) and not figures.update(
        figures.marked_tables([page])[0], rows
    )
    assert page.read_text() == (
        "text\n<!-- figures: python x.py -->\n| a | b |\n|---|---|\n| 1 | 3 |\n| 4 | 5 |\n\nafter\n"
    )
    assert figures.printed_table(output, "| c |") is None


@pytest.mark.slow
def test_the_memory_table_is_what_its_command_prints():
    """Memory and regret are the same on every run: the page holds the command's figures (after a
    change that moves them: python scripts/doc_figures.py --update memory_mnist)."""
    figures = _doc_figures()
    [table] = [t for t in figures.marked_tables() if "memory_mnist" in t.command]
    assert figures.difference(table, figures.run_command(table)) == ""
