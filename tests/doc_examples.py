"""The code blocks of README.md and docs/, for the tests that run them.

Convention (also on the docs' Development page): a fenced block whose info string is exactly
``python`` is an example that runs on its own -- its own imports, a fresh namespace, a temporary
working directory -- and the test suite executes it. Every other fence (``bash``, ``yaml``,
``text``, ``pycon``, ...) is shown, not run. A ``python`` block that must not run (it needs a GPU
or a cluster) is preceded by the line ``<!-- not run: the reason -->``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*\S.*-->$")


@dataclass(frozen=True)
class CodeBlock:
    path: Path
    line: int  # 1-based line of the opening fence
    info: str
    code: str
    run: bool

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    """README.md and every Markdown page under docs/ (the site's sources)."""
    return [README] + sorted(p for p in DOCS.rglob("*.md") if "_ext" not in p.parts)


def code_blocks(path: Path) -> list[CodeBlock]:
    """Every fenced block of ``path``, in order (an unclosed fence is an error)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, indent, start = match["fence"], match["indent"], i
        info = match["info"].strip()
        body = []
        i += 1
        while i < len(lines) and not (
            lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""
        ):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path.relative_to(ROOT)}:{start + 1}: unclosed code fence")
        previous = next(
            (lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), ""
        )
        runs = info == "python" and not NOT_RUN.match(previous)
        blocks.append(CodeBlock(path, start + 1, info, "\n".join(body) + "\n", runs))
        i += 1
    return blocks


def python_examples() -> list[CodeBlock]:
    return [b for p in doc_files() for b in code_blocks(p) if b.run]


#: What pandas prints for a frame too wide or long for the console: a reader of the example
#: would see ``...`` where the numbers should be.
ELIDED = re.compile(r"\[\d+ rows x \d+ columns\]|(?:^|\s)\.\.\.(?:\s|$)", re.MULTILINE)


def run_example(block: CodeBlock, workdir: Path) -> str:
    """Execute ``block`` alone: fresh namespace, ``workdir`` as the working directory; return
    what it printed, which must show what it prints whole (no frame elided by pandas)."""
    import contextlib
    import io
    import os

    import matplotlib.pyplot as plt

    namespace = {"__name__": "__main__", "__file__": str(block.path)}
    cwd = os.getcwd()
    os.chdir(workdir)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(block.code, block.where, "exec"), namespace)
    except Exception as exc:  # the message is the point: which block, and the block itself
        raise AssertionError(f"{block.where}: the example failed: {exc!r}\n{block.code}") from exc
    finally:
        os.chdir(cwd)
        plt.close("all")
    output = printed.getvalue()
    elided = ELIDED.search(output)
    assert elided is None, (
        f"{block.where}: the example prints {elided.group(0).strip()!r}, where "
        "pandas cut what it shows; print the columns that matter, or "
        f".to_string():\n{output}"
    )
    return output
