"""What a constructor accepts and what each of its arguments means, read once for checks and help.

One reading of a class -- an env's entry point, an agent class, a user's ``module:Class`` --
serves both the checks that run before anything is built and ``linbandit describe``:

* the signature, along the class's MRO (a constructor taking ``**kwargs`` forwards them to its
  base, the convention of the env families and of ``DBSLinUCB-FD``), gives each argument's
  name, type hint and default;
* the docstrings, along the same MRO, give each argument its meaning: a Google-style ``Args:``
  section (the agents: ``name: text``; ``a, b: text`` for several names sharing one text;
  ``noise_std (R): text`` for a name and the symbol it is in the formulas, never a type) or a
  Gymnasium-style ``## Arguments`` table (the envs: ``| ``name`` | default | meaning |``). An
  entry that only says ``see :class:`~pkg.Class``` is read from that class.

The API pages read the same sections through the same parser (:func:`argument_section`): the
docs' griffe extension rewrites each section one name per entry (:func:`one_name_per_entry`),
so that a group gets one row per name, with its default, and a symbol is not taken for a type.

:meth:`Arguments.problems` checks keyword arguments against the signature (every unknown name,
with the closest valid one; every value against its type hint) and returns all of them, each
naming the argument, so that a config can report each where it was written.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import numbers
import os
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .envs.base import short_repr
from .envs.names import did_you_mean

__all__ = [
    "Argument",
    "ArgumentProblem",
    "Arguments",
    "arguments_of",
    "describe_arguments",
    "ArgumentEntry",
    "ArgumentSection",
    "argument_section",
    "documented_arguments",
    "documented_blocks",
    "one_name_per_entry",
    "format_problems",
    "named_argument",
    "resolve_dotted",
    "rst_to_text",
    "type_name",
    "value_matches",
]

#: The default of an argument the caller must give.
REQUIRED = inspect.Parameter.empty


# -- docstring text --------------------------------------------------------------------

_RST_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`~?(?:[^`<]*<)?([^`>]+)>?`")
_RST_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")


def rst_to_text(text: str) -> str:
    """Docstring reST as plain text: ``:class:`~a.B``` -> ``B``, double backquotes dropped,
    ``:math:`\\sqrt{d}``` -> ``\\sqrt{d}``, the ``::`` that opens a literal block -> ``:``.

    >>> rst_to_text(":class:`~agents.base.TorchAgent` on ``digits``, the radius:: R + H")
    'TorchAgent on digits, the radius: R + H'
    """

    def role(match: re.Match) -> str:
        target = match.group(1)
        # :class:`~pkg.mod.Name` and :func:`pkg.f` show the last dotted part, as Sphinx does with ~
        return target.rsplit(".", 1)[-1] if match.group(0).split("`")[1].startswith("~") else target

    text = re.sub(r"(?<=\S)::(?=\s|$)", ":", _RST_ROLE.sub(role, text))
    return _RST_LITERAL.sub(lambda m: m.group(1) or m.group(2), text)


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Keyword Args|Keyword Arguments):\s*$")
_NAME = r"\*{0,2}[A-Za-z_]\w*(?:\s*\([^)]*\))?"
_ENTRY = re.compile(rf"^(?P<names>{_NAME}(?:\s*,\s*{_NAME})*)\s*:(?:\s+(?P<text>.*))?$")
_ONE_NAME = re.compile(r"^(?P<stars>\*{0,2})(?P<name>[A-Za-z_]\w*)(?:\s*\((?P<symbol>[^)]*)\))?$")


@dataclass(frozen=True)
class ArgumentEntry:
    """One entry of a Google-style ``Args:`` section, in the convention of this project's
    docstrings: one or several names sharing one text (``d, device, dtype, seed: ...``), a name
    optionally followed by the symbol that stands for it in the docstring's formulas
    (``noise_std (R)``; it is never a type: types are the signature's).

    ``lines`` is the text as written: its first line, then its continuation lines with the
    entry's own indentation removed (reST kept)."""

    names: tuple[str, ...]
    symbols: tuple[str | None, ...]
    lines: tuple[str, ...]
    written: tuple[str, ...] = ()  #: the names as written (``**kwargs``)

    def block(self, name: str) -> tuple[str, ...]:
        """The text for ``name`` as written (:attr:`lines`), naming its symbol where it has one."""
        *head, last = self.lines
        return (*head, _with_symbol(last, self.symbols[self.names.index(name)]))

    def meaning(self, name: str) -> str:
        """The text for ``name`` on one line, naming its symbol where it has one: ``"used by
        ``beta="theory"`` only (written ``R`` in the formulas)."``."""
        return _one_line(self.block(name))


def _one_line(lines: tuple[str, ...]) -> str:
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


def _with_symbol(text: str, symbol: str | None) -> str:
    """``text``, then in brackets the symbol its name is written as, before a final full stop."""
    if not symbol:
        return text
    stop = "." if text.endswith(".") else ""
    return f"{text.removesuffix('.')} (written ``{symbol}`` in the formulas){stop}"


@dataclass(frozen=True)
class ArgumentSection:
    """The ``Args:`` section of a docstring: its entries, and the lines it spans in the
    docstring (``inspect.cleandoc`` applied): its heading at ``start``, entries up to ``end``."""

    start: int
    end: int
    indent: int  #: the entries' indentation
    entries: tuple[ArgumentEntry, ...]


def argument_section(doc: str) -> ArgumentSection | None:
    """The ``Args:`` (``Arguments:``, ``Parameters:``, ...) section of the docstring ``doc``, or
    None: the one reading of the agents' docstrings for ``linbandit describe`` and the API pages.

    >>> section = argument_section('''Summary.
    ...
    ...     Args:
    ...         lam: ridge lambda.
    ...         delta, noise_std (R): used by the
    ...             theory radius only.
    ... ''')
    >>> [(e.names, e.symbols) for e in section.entries]
    [(('lam',), (None,)), (('delta', 'noise_std'), (None, 'R'))]
    >>> section.entries[1].meaning("noise_std")
    'used by the theory radius only (written ``R`` in the formulas).'
    """
    lines = inspect.cleandoc(doc).splitlines()
    start = next((i for i, line in enumerate(lines) if _SECTION.match(line.strip())), None)
    if start is None:
        return None
    head_indent = len(lines[start]) - len(lines[start].lstrip())
    indent, entries, names, symbols, written, text = None, [], (), (), (), []
    end = start + 1

    def flush() -> None:
        while text and not text[-1].strip():
            text.pop()
        if names:
            entries.append(ArgumentEntry(names, symbols, tuple(text), written))

    for number in range(start + 1, len(lines)):
        line = lines[number]
        if not line.strip():
            text.append("")
            continue
        here = len(line) - len(line.lstrip())
        if indent is None:
            if here <= head_indent:
                break
            indent = here
        if here < indent:
            break
        match = _ENTRY.match(line.strip()) if here == indent else None
        if here == indent and match is None:
            break  # a line at the entries' indent that is no entry ends the section
        if match is not None:
            flush()
            parts = [_ONE_NAME.match(part.strip()) for part in match["names"].split(",")]
            names = tuple(part["name"] for part in parts)
            written = tuple(part["stars"] + part["name"] for part in parts)
            symbols = tuple(part["symbol"].strip() if part["symbol"] else None for part in parts)
            text = [match["text"] or ""]
        else:
            text.append(line[indent:] if line[:indent].strip() == "" else line.strip())
        end = number + 1
    flush()
    return ArgumentSection(start, end, indent or head_indent + 4, tuple(entries))


def one_name_per_entry(doc: str, entries: list[tuple[str, tuple[str, ...]]] | None = None) -> str:
    """``doc`` with its ``Args:`` section written one name per entry, ``name: text`` (a group's
    text repeated for each of its names, a name's symbol named in it: :meth:`ArgumentEntry.block`),
    or as ``entries`` (``(name, lines)`` pairs) where given: the form Google-style readers
    (griffe, for the API pages) take, where a group or a symbol in brackets would read as one
    unknown parameter and a type. Without a section, ``entries`` go before the examples (or last).

    >>> print(one_name_per_entry('''Summary.
    ...
    ...     Args:
    ...         d, seed: see the
    ...             base class.
    ...         **kwargs: forwarded.
    ... '''))
    Summary.
    <BLANKLINE>
    Args:
        d: see the
            base class.
        seed: see the
            base class.
        **kwargs: forwarded.
    """
    section = argument_section(doc)
    lines = inspect.cleandoc(doc).splitlines()
    if entries is None:
        if section is None:
            return "\n".join(lines)
        entries = [
            (written, entry.block(name))
            for entry in section.entries
            for name, written in zip(entry.names, entry.written)
        ]
    pad = " " * (section.indent if section else 4)
    body = []
    for name, (first, *more) in entries:
        body.append(f"{pad}{name}: {first}".rstrip())
        body += [f"{pad}{line}".rstrip() for line in more]
    if section is not None:
        return "\n".join(lines[: section.start + 1] + body + lines[section.end :])
    examples = (i for i, line in enumerate(lines) if re.match(r"^Examples?( \(.*\))?:", line))
    at = next(examples, len(lines))
    before = lines[:at]
    while before and not before[-1].strip():
        before.pop()
    return "\n".join(before + ["", "Args:", *body, ""] + lines[at:])


def _google_args(doc: str) -> dict[str, tuple[str, ...]]:
    """``{name: its text's lines}`` of a Google-style docstring's ``Args:`` section (reST kept)."""
    section = argument_section(doc)
    out: dict[str, tuple[str, ...]] = {}
    for entry in section.entries if section else ():
        for name in entry.names:
            out.setdefault(name, entry.block(name))
    return out


_TABLE_HEADING = re.compile(r"^#+\s*Arguments\s*$")
_SEE_CLASS = re.compile(r"^see :class:`~?([\w.]+)`")


def _table_args(doc: str) -> dict[str, tuple[str, ...]]:
    """``{name: meaning}`` of a ``## Arguments`` table (``| ``name`` | default | meaning |``)."""
    out: dict[str, str] = {}
    inside = False
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        if _TABLE_HEADING.match(stripped):
            inside = True
            continue
        if not inside:
            continue
        if not stripped.startswith("|"):
            if out:  # the table has ended
                break
            continue
        cells = [c.strip() for c in stripped.strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= set("-: ") or cells[0].lower() == "argument":
            continue  # the header row and the |---| row
        for name in re.findall(r"``(\w+)``", cells[0]) or [cells[0]]:
            out.setdefault(name, (cells[-1],))
    return out


def resolve_dotted(path: str) -> Any:
    """The object at ``pkg.module.Name`` (the longest importable module prefix), else None."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def documented_blocks(obj: Any) -> dict[str, tuple[str, ...]]:
    """``{argument: its meaning's lines, as written}`` (reST, continuation lines indented
    relative to the entry) from the docstrings of ``obj`` (a class: along its MRO, the first
    class documenting a name wins; a function: its own docstring): what the API pages show.

    An entry reading ``see :class:`~pkg.Class``` is replaced by that class's entry for the name.
    """
    owners = [k for k in obj.__mro__ if k is not object] if inspect.isclass(obj) else [obj]
    raw: dict[str, tuple[str, ...]] = {}
    for owner in owners:
        doc = (
            owner.__dict__.get("__doc__")
            if inspect.isclass(owner)
            else getattr(owner, "__doc__", None)
        )
        if not isinstance(doc, str):
            continue
        for name, block in {**_table_args(doc), **_google_args(doc)}.items():
            raw.setdefault(name, block)
    out = {}
    for name, block in raw.items():
        see = _SEE_CLASS.match(_one_line(block))
        if see:
            target = resolve_dotted(see.group(1))
            if target is not None and target is not obj:
                block = documented_blocks(target).get(name, block)
        out[name] = block
    return out


def documented_arguments(obj: Any) -> dict[str, str]:
    """``{argument: meaning}`` as plain text on one line (:func:`documented_blocks`): what
    ``linbandit describe`` shows.

    >>> from agents import OFUL
    >>> documented_arguments(OFUL)["lam"], documented_arguments(OFUL)["dtype"][:24]
    ('ridge lambda > 0.', 'torch.float64 (default o')
    """
    return {name: rst_to_text(_one_line(block)) for name, block in documented_blocks(obj).items()}


# -- types -----------------------------------------------------------------------------


def type_name(hint: Any) -> str:
    """A type hint as users read it: ``float | str``, ``int | None``, ``Sequence[float]``."""
    if hint is Any:
        return "any"
    if hint is type(None):
        return "None"
    if isinstance(hint, type) and typing.get_origin(hint) is None:
        return hint.__name__
    text = str(hint).replace("typing.", "")
    # collections.abc.Sequence -> Sequence
    return re.sub(r"\b(?:[a-z_][\w]*\.)+([A-Za-z_]\w*)", r"\1", text)


def value_matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits the type hint ``hint`` (lenient where a hint is not a plain type):
    an ``int`` passes for ``float``, a ``bool`` passes for neither ``int`` nor ``float``, a list
    passes for a ``tuple`` (YAML and the command line spell sequences as lists)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(value_matches(value, arm) for arm in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if hint is None or hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, (bool, np.bool_))
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    if hint is complex:
        return isinstance(value, numbers.Number) and not isinstance(value, (bool, np.bool_))
    if origin is not None:  # tuple[...], list[...], dict[...]: the container kind only
        hint = origin
    if hint in (tuple, list):
        return isinstance(value, (tuple, list))
    if hint is os.PathLike:
        return isinstance(value, (str, os.PathLike))
    if isinstance(hint, type):
        try:
            return isinstance(value, hint)
        except TypeError:
            return True
    return True  # a TypeVar, Callable[...], a string annotation, ...: cannot check here


# -- the arguments of a constructor ----------------------------------------------------


@dataclass(frozen=True)
class Argument:
    """One keyword a constructor takes: its type hint, default and documented meaning."""

    name: str
    hint: Any = Any
    default: Any = REQUIRED
    meaning: str = ""  #: plain text from the docstrings; "" when none documents the argument

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def type_text(self) -> str:
        return type_name(self.hint)

    @property
    def default_text(self) -> str:
        return "required" if self.required else short_repr(self.default, 30)

    def meaning_text(self) -> str:
        """The documented meaning, whole (``linbandit describe`` shows no less than the API
        pages), or says there is none."""
        return self.meaning or "(not documented)"


@dataclass(frozen=True)
class ArgumentProblem:
    """What is wrong with one argument a caller gave: ``name`` and a message that names it."""

    name: str
    message: str
    unknown: bool = False  #: the name is not an argument (the valid ones are worth listing)
    error: Exception | None = None  #: the class's own exception, for a value its checks refused


@dataclass(frozen=True)
class Arguments:
    """The keyword arguments of a constructor, as :func:`arguments_of` reads them.

    ``owner`` is the name users typed for it (``"SOFUL"``, ``"LinBandit-MNIST-v0"``); ``open`` is
    True when a ``**kwargs`` is never resolved (any name may be valid: names cannot be checked).
    """

    owner: str
    by_name: dict[str, Argument] = field(default_factory=dict)
    open: bool = False

    def __iter__(self):
        return iter(self.by_name.values())

    def __contains__(self, name: str) -> bool:
        return name in self.by_name

    def hints(self) -> dict[str, Any]:
        return {a.name: a.hint for a in self}

    def valid_text(self) -> str:
        """``"valid arguments: lam=1.0, beta=1.0, ..."``, the defaults as the constructor has
        them."""
        listed = ", ".join(
            f"{a.name}={a.default_text}" if not a.required else f"{a.name} (required)" for a in self
        )
        return f"valid arguments: {listed or '(none)'}"

    def problems(
        self, args: dict[str, Any], *, sequences: Iterable[str] = ()
    ) -> list[ArgumentProblem]:
        """Every problem of ``args``: names the constructor does not take (with the closest
        valid name) and values that do not fit their type hints. ``sequences`` names the
        arguments that may also be given as a list of such values (a batched agent's
        per-member arguments)."""
        sequences = set(sequences)
        out = []
        for name, value in args.items():
            argument = self.by_name.get(name)
            if argument is None:
                if not self.open:
                    out.append(
                        ArgumentProblem(
                            name,
                            f"{self.owner} has no argument {name!r}"
                            f"{did_you_mean(name, self.by_name)}",
                            unknown=True,
                        )
                    )
                continue
            values = (
                list(value)
                if name in sequences and isinstance(value, (list, tuple, np.ndarray))
                else [value]
            )
            wrong = [v for v in values if not value_matches(v, argument.hint)]
            if wrong:
                out.append(
                    ArgumentProblem(
                        name,
                        f"{self.owner} argument {name}={short_repr(value, 60)}: "
                        f"expected {argument.type_text}, "
                        f"got {type(wrong[0]).__name__}",
                    )
                )
        return out


def named_argument(message: str, names: Iterable[str]) -> str:
    """The argument of ``names`` that ``message`` (a value check's) names first, else ``""``.

    >>> named_argument("SOFUL: sketch_size must be an int >= 1, got 0", ["lam", "sketch_size"])
    'sketch_size'
    """
    found = [
        (match.start(), name)
        for name in names
        for match in [re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)]
        if match
    ]
    return min(found)[1] if found else ""


def describe_arguments(arguments: Arguments, width: int = 100) -> list[str]:
    """One row per argument, ``name  type  default  meaning``, the whole meaning wrapped under
    its column; for ``linbandit describe``."""
    import textwrap

    rows = [(a.name, a.type_text, a.default_text, a.meaning_text()) for a in arguments]
    if not rows:
        return ["  (no arguments)"]
    columns = [
        max(len(r[k]) for r in rows + [("argument", "type", "default", "")]) for k in range(3)
    ]
    indent = 2 + sum(columns) + 2 * 3
    lines = [
        "  "
        + "  ".join(h.ljust(w) for h, w in zip(("argument", "type", "default"), columns))
        + "  meaning"
    ]
    for *cells, meaning in rows:
        head = "  " + "  ".join(c.ljust(w) for c, w in zip(cells, columns)) + "  "
        # compound words ("one-SVD-per-row", "2l-row") are not split at their hyphens
        wrapped = textwrap.wrap(meaning, max(30, width - indent), break_on_hyphens=False) or [""]
        lines.append(head + wrapped[0])
        lines += [" " * indent + more for more in wrapped[1:]]
    if arguments.open:
        lines.append("  (and any other keyword: the constructor takes **kwargs it does not name)")
    return lines


def format_problems(problems: list[ArgumentProblem], arguments: Arguments) -> list[str]:
    """The messages of ``problems``, the last unknown name's followed by the valid arguments
    (once) and where their meanings are described."""
    lines = [p.message for p in problems]
    unknown = [i for i, p in enumerate(problems) if p.unknown]
    if unknown:
        lines[unknown[-1]] += (
            f"; {arguments.valid_text()} (`linbandit describe {arguments.owner}` says what "
            f"each means)"
        )
    return lines


@functools.lru_cache(maxsize=256)
def _read(creator: Callable) -> tuple[tuple[Argument, ...], bool]:
    if inspect.isclass(creator):
        functions = [
            k.__dict__["__init__"]
            for k in creator.__mro__
            if "__init__" in k.__dict__ and k is not object
        ]
    else:
        functions = [creator]
    meanings = documented_arguments(creator)
    found: dict[str, Argument] = {}
    for function in functions:
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):  # a builtin without a signature: cannot know
            return tuple(found.values()), True
        try:
            hints = typing.get_type_hints(function)
        except Exception:  # unresolvable annotations: check names only  # noqa: BLE001
            hints = {}
        var_keyword = False
        for i, (name, p) in enumerate(signature.parameters.items()):
            if inspect.isclass(creator) and i == 0:
                continue  # self
            if p.kind is p.VAR_KEYWORD:
                var_keyword = True
            elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in found:
                found[name] = Argument(
                    name, hints.get(name, Any), p.default, meanings.get(name, "")
                )
        if not var_keyword:
            return tuple(found.values()), False
    return tuple(found.values()), True


def arguments_of(creator: Callable, owner: str | None = None) -> Arguments:
    """The :class:`Arguments` of ``creator`` (a class or a factory function), named ``owner``
    (default: its ``__name__``) in messages. Nothing is built.

    >>> from agents import SOFUL
    >>> args = arguments_of(SOFUL, "SOFUL")
    >>> args.by_name["sketch_size"].default, args.by_name["sketch_size"].type_text
    (50, 'int')
    >>> [p.message for p in args.problems({"sketchsize": 10})]
    ["SOFUL has no argument 'sketchsize' (did you mean 'sketch_size'?)"]
    """
    try:
        found, is_open = _read(creator)
    except TypeError:  # an unhashable callable: read it uncached
        found, is_open = _read.__wrapped__(creator)
    name = owner or getattr(creator, "__name__", None) or type(creator).__name__
    return Arguments(name, {a.name: a for a in found}, is_open)
