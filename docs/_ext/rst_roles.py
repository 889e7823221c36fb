"""Griffe extension: read the docstrings' reST habits as Markdown for mkdocstrings.

The docstrings are Google style with two reST habits that Markdown would show wrongly:

* Sphinx roles (``:class:`~agents.SOFUL```) would show as literal text. Each becomes an
  *optional* autoref: a link when the target is documented on the site, plain code otherwise
  (an unresolved optional reference is not a warning, so a docstring citing a private helper
  does not fail the strict build; links written in the Markdown pages stay strict).
* Doctest examples written flush left under ``Example:`` would run together as a paragraph
  (and ``[0.5, 0.0]`` in their output would read as a link). Each run of ``>>>`` lines and
  their output becomes a fenced ``pycon`` block.
"""

from __future__ import annotations

import html
import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|obj|exc|const):`(?P<body>[^`]+)`")


def _target(body: str, obj: griffe.Object) -> tuple[str, str]:
    """(identifier, shown text) of a role's body: ``~a.b.C`` shows ``C``, ``title <a.b>`` shows title."""
    explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
    if explicit:
        title, target = explicit["title"], explicit["target"]
    else:
        target = body
        title = None
    short = target.startswith("~")
    target = target.lstrip("~")
    if title is None:
        title = target.rsplit(".", 1)[-1] if short else target.lstrip(".")
    module = obj if obj.is_module else obj.module
    if target.startswith("."):  # relative to the docstring's package
        package = module.path if module.is_package else module.path.rpartition(".")[0]
        target = f"{package}.{target.lstrip('.')}"
    elif "." not in target:  # a bare name: the enclosing class's or module's member
        parent = obj if obj.is_class or obj.is_module else obj.parent
        target = f"{parent.path}.{target}" if parent is not None else target
    return target.removesuffix("()"), title


def fence_doctests(text: str) -> str:
    """Wrap each flush-left doctest (``>>>`` lines and their output, up to a blank line) in a fence."""
    out: list[str] = []
    in_fence = in_doctest = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if in_doctest and not line.strip():
            out.append("```")
            in_doctest = False
        elif not in_fence and not in_doctest and line.startswith(">>>"):
            out.append("```pycon")
            in_doctest = True
        out.append(line)
    if in_doctest:
        out.append("```")
    return "\n".join(out)


class SphinxRoles(griffe.Extension):
    """Rewrite ``:role:`target``` as optional autorefs and fence flush-left doctests."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:  # noqa: D102
        if obj.docstring is None:
            return

        def replace(match: re.Match) -> str:
            identifier, title = _target(match["body"], obj)
            return (f'<autoref identifier="{html.escape(identifier)}" optional>'
                    f"<code>{html.escape(title)}</code></autoref>")

        obj.docstring.value = fence_doctests(ROLE.sub(replace, obj.docstring.value))
