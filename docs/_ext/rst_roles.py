"""Griffe extension: read the docstrings' conventions and reST habits as Markdown for mkdocstrings.

The arguments of a class are read as ``linbandit describe`` reads them, by the one parser of
:mod:`linbandit_gym.arguments`: every keyword of the constructor's signature (along the MRO, as
the checks see it) gets one row, with its default and the meaning the first class along the MRO
documents (a ``see :class:`~X``` entry followed to ``X``), so a class inheriting its keywords
(``XYStatic``, ``DBSLinUCBFD``) lists them all. The docstrings group names that share a text
(``d, device, dtype, seed: ...``) and follow a name by its symbol in the formulas
(``noise_std (R)``); a Google-style reader would take a group for one unknown parameter
("_required_") and a symbol for a type. Functions' ``Args:`` sections are written one name per
entry by the same parser.

The docstrings are Google style with reST habits that Markdown would show wrongly:

* Sphinx roles (``:class:`~agents.SOFUL```) would show as literal text. Each becomes an
  *optional* autoref: a link when the target is documented on the site, plain code otherwise
  (an unresolved optional reference is not a warning, so a docstring citing a private helper
  does not fail the strict build; links written in the Markdown pages stay strict).
* Doctest examples written flush left under ``Example:`` would run together as a paragraph
  (and ``[0.5, 0.0]`` in their output would read as a link). Each run of ``>>>`` lines and
  their output becomes a fenced ``pycon`` block.
* A line ending in ``::`` before a literal block would show both colons: it ends in one.
"""

from __future__ import annotations

import html
import inspect
import re

import griffe

from linbandit_gym.arguments import (
    arguments_of,
    documented_blocks,
    one_name_per_entry,
    resolve_dotted,
)

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|obj|exc|const):`(?P<body>[^`]+)`")


def _target(body: str, obj: griffe.Object) -> tuple[str, str]:
    """(identifier, shown text) of a role's body: ``~a.b.C`` shows ``C``, ``title <a.b>`` shows
    title."""
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
    """Wrap each flush-left doctest (``>>>`` lines and their output, up to a blank line) in a
    fence."""
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


def _roles(text: str, obj: griffe.Object) -> str:
    """``text`` with each Sphinx role an optional autoref (relative to ``obj``), and the reST
    ``::`` that ends a line before a literal block a plain colon (Markdown's indented block
    follows it)."""
    text = re.sub(r"(?<=\S)::$", ":", text, flags=re.MULTILINE)

    def replace(match: re.Match) -> str:
        identifier, title = _target(match["body"], obj)
        return (
            f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(title)}</code></autoref>"
        )

    return ROLE.sub(replace, text)


#: A Gymnasium-style ``## Arguments`` table: where the envs document their keywords.
TABLE = re.compile(r"^#+\s*Arguments\s*$", re.MULTILINE)


class SphinxRoles(griffe.Extension):
    """Rewrite ``:role:`target``` as optional autorefs, fence flush-left doctests, and write the
    arguments one row per keyword (a class's as ``linbandit describe`` lists them)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:  # noqa: D102
        if obj.docstring is None:
            return
        obj.docstring.value = fence_doctests(_roles(one_name_per_entry(obj.docstring.value), obj))

    def on_class(self, *, cls: griffe.Class, **kwargs) -> None:
        """A class's arguments, one row per keyword of its runtime signature."""
        runtime = resolve_dotted(cls.path)
        if (
            cls.docstring is None
            or not inspect.isclass(runtime)
            or any(TABLE.search(k.__dict__.get("__doc__") or "") for k in runtime.__mro__)
        ):
            return  # an env: its keywords are in its (or its base's) Gymnasium-style table
        meanings = documented_blocks(runtime)
        arguments = list(arguments_of(runtime)) if meanings else []
        if not arguments:
            return
        undocumented = ("(not documented)",)
        rows = [
            (a.name, _roles("\n".join(meanings.get(a.name, undocumented)), cls).split("\n"))
            for a in arguments
        ]
        cls.docstring.value = one_name_per_entry(cls.docstring.value, rows)
        # The defaults and types of the signature the checks read: a keyword a subclass takes
        # through **kwargs is not among the parameters griffe sees.
        # Every row is a keyword of the runtime signature: no warning for one griffe's lacks.
        docstring = cls.docstring
        options = {**docstring.parser_options, "warn_unknown_params": False}
        sections = docstring.parse(docstring.parser, **options)
        docstring.__dict__["parsed"] = sections  # griffe's cached_property, read when rendering
        by_name = {a.name: a for a in arguments}
        for section in sections:
            if section.kind is griffe.DocstringSectionKind.parameters:
                for parameter in section.value:
                    argument = by_name.get(parameter.name)
                    if argument is not None and not argument.required:
                        parameter.value = repr(argument.default)
                    if argument is not None and parameter.annotation is None:
                        parameter.annotation = argument.type_text
