"""The documentation's tables that come from a command: list, check or regenerate them.

A table on a page under ``docs/`` that a command prints is marked by the line before it::

    <!-- figures: python benchmarks/memory_mnist.py -->
    | agent | peak KiB here | ... |
    |---|---|...|

    python scripts/doc_figures.py --list              every marked table and its command
    python scripts/doc_figures.py --check [TEXT]      run the commands (those containing TEXT);
                                                      exit 1 where a page's table differs
    python scripts/doc_figures.py --update [TEXT]     run them and write what they print

A command's output holds its table as Markdown, with the page's header row; the rows under that
header replace the page's (``--update``) or are compared with them (``--check``). ``python`` runs
as this interpreter and ``linbandit`` as its ``linbandit_gym`` command, from the repository's root.
Figures measured in time change from run to run and from machine to machine: regenerate those on
a quiet machine and read their ratios (``docs/performance.md``); figures of memory, regret and
counts are the same on every run, so ``--check`` holds them to the code
(``tests/test_docs.py``).
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- figures: (?P<command>.+?) -->\s*$")


@dataclass(frozen=True)
class MarkedTable:
    """A table of ``page`` that ``command`` prints: lines ``start`` to ``end`` (0-based, end
    excluded)."""

    page: Path
    marker_line: int
    command: str
    start: int
    end: int

    def lines(self) -> list[str]:
        return self.page.read_text(encoding="utf-8").splitlines()[self.start : self.end]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.marker_line + 1}"


def marked_tables(pages: list[Path] | None = None) -> list[MarkedTable]:
    """Every marked table of ``pages`` (default: the Markdown pages under ``docs/``), in order.

    Raises:
        ValueError: a marker not followed by a table.
    """
    pages = sorted((ROOT / "docs").rglob("*.md")) if pages is None else pages
    found = []
    for page in pages:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            match = MARKER.match(line)
            if not match:
                continue
            end = i + 1
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            if end - (i + 1) < 2:
                raise ValueError(
                    f"{page.relative_to(ROOT)}:{i + 1}: a figures marker must be followed "
                    "by its table (a header row and a separator row at least)"
                )
            found.append(MarkedTable(page, i, match["command"], i + 1, end))
    return found


def command_argv(command: str) -> list[str]:
    """The marker's command as an argument list for this interpreter."""
    argv = shlex.split(command)
    if argv[0] == "python":
        return [sys.executable, *argv[1:]]
    if argv[0] == "linbandit":
        return [sys.executable, "-m", "linbandit_gym", *argv[1:]]
    return argv


def printed_table(output: str, header: str) -> list[str] | None:
    """The rows of the Markdown table in ``output`` whose header row is ``header`` (the header and
    separator included), or None when ``output`` has no such table."""
    lines = [line.rstrip() for line in output.splitlines()]
    for i, line in enumerate(lines):
        if line.strip() == header.strip():
            end = i + 1
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            return lines[i:end]
    return None


def run_command(table: MarkedTable, timeout: float | None = None) -> list[str]:
    """Run the command of ``table`` and return the table it printed.

    Raises:
        RuntimeError: the command failed, or printed no table with the page's header row.
    """
    done = subprocess.run(
        command_argv(table.command), cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{table.where}: `{table.command}` exited with {done.returncode}:\n"
            f"{done.stderr[-2000:]}"
        )
    header = table.lines()[0]
    rows = printed_table(done.stdout, header)
    if rows is None:
        raise RuntimeError(
            f"{table.where}: `{table.command}` printed no table with the header {header!r}"
        )
    return rows


def difference(table: MarkedTable, rows: list[str]) -> str:
    """A unified diff of the page's table against ``rows`` ('' when they agree)."""
    return "".join(
        difflib.unified_diff(
            [line + "\n" for line in table.lines()],
            [r + "\n" for r in rows],
            f"{table.where} (page)",
            f"`{table.command}`",
        )
    )


def update(table: MarkedTable, rows: list[str]) -> bool:
    """Write ``rows`` in place of the page's table; whether anything changed."""
    lines = table.page.read_text(encoding="utf-8").splitlines(keepends=True)
    new = lines[: table.start] + [row + "\n" for row in rows] + lines[table.end :]
    if new == lines:
        return False
    table.page.write_text("".join(new), encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--list", action="store_true", help="list every marked table and its command"
    )
    action.add_argument("--check", action="store_true", help="exit 1 where a page's table differs")
    action.add_argument("--update", action="store_true", help="write what the commands print")
    parser.add_argument("text", nargs="?", default="", help="only the commands containing TEXT")
    args = parser.parse_args(argv)
    tables = [t for t in marked_tables() if args.text in t.command]
    if args.list:
        for table in tables:
            print(f"{table.where}: {table.command}")
        return 0
    if not tables:
        print(f"no marked table's command contains {args.text!r}", file=sys.stderr)
        return 2
    differs = 0
    # bottom-up within a page: a table that grows or shrinks moves none of those still to do
    for table in sorted(tables, key=lambda t: (str(t.page), -t.start)):
        print(f"{table.where}: running `{table.command}`", file=sys.stderr, flush=True)
        rows = run_command(table)
        if args.update:
            print(f"{table.where}: {'updated' if update(table, rows) else 'unchanged'}")
        else:
            diff = difference(table, rows)
            differs += bool(diff)
            print(diff or f"{table.where}: the page's table is what `{table.command}` prints")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
