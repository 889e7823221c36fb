"""What a constructor accepts and what each of its arguments means, read once for checks and help.

One reading of a class -- an env's entry point, an agent class, a user's ``module:Class`` --
serves both the checks that run before anything is built and ``linbandit describe``:

* the signature, along the class's MRO (a constructor taking ``**kwargs`` forwards them to its
  base, the convention of the env families and of ``DBSLinUCB-FD``), gives each argument's
  name, type hint and default;
* the docstrings, along the same MRO, give each argument a line of meaning: a Google-style
  ``Args:`` section (the agents: ``name: text``, or ``a, b (R): text`` for several names) or a
  Gymnasium-style ``## Arguments`` table (the envs: ``| ``name`` | default | meaning |``). An
  entry that only says ``see :class:`~pkg.Class``` is read from that class.

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
    "first_clause",
    "documented_arguments",
    "format_problems",
    "named_argument",
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
    ``:math:`\\sqrt{d}``` -> ``\\sqrt{d}``.

    >>> rst_to_text(":class:`~agents.base.TorchAgent` on ``digits``")
    'TorchAgent on digits'
    """
    def role(match: re.Match) -> str:
        target = match.group(1)
        # :class:`~pkg.mod.Name` and :func:`pkg.f` show the last dotted part, as Sphinx does with ~
        return target.rsplit(".", 1)[-1] if match.group(0).split("`")[1].startswith("~") else target

    text = _RST_ROLE.sub(role, text)
    return _RST_LITERAL.sub(lambda m: m.group(1) or m.group(2), text)


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Keyword Args|Keyword Arguments):\s*$")
_NAME = r"\*{0,2}[A-Za-z_]\w*(?:\s*\([^)]*\))?"
_ENTRY = re.compile(rf"^(?P<names>{_NAME}(?:\s*,\s*{_NAME})*)\s*:(?:\s+(?P<text>.*))?$")
_TABLE_HEADING = re.compile(r"^#+\s*Arguments\s*$")
_SEE_CLASS = re.compile(r"^see :class:`~?([\w.]+)`")


def _google_args(doc: str) -> dict[str, str]:
    """``{name: text}`` of the ``Args:`` section of a Google-style docstring (reST kept)."""
    lines = inspect.cleandoc(doc).splitlines()
    out: dict[str, str] = {}
    for start, line in enumerate(lines):
        if _SECTION.match(line.strip()):
            break
    else:
        return out
    head_indent = len(lines[start]) - len(lines[start].lstrip())
    indent, names, parts = None, [], []

    def flush() -> None:
        for name in names:
            out.setdefault(name, " ".join(parts).strip())

    for line in lines[start + 1:]:
        if not line.strip():
            parts.append("")
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
            names = [re.sub(r"\s*\(.*", "", n).strip().lstrip("*") for n in match["names"].split(",")]
            parts = [match["text"] or ""]
        else:
            parts.append(line.strip())
    flush()
    return {name: re.sub(r"\s+", " ", text) for name, text in out.items()}


def _table_args(doc: str) -> dict[str, str]:
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
            out.setdefault(name, cells[-1])
    return out


def _resolve_dotted(path: str) -> Any:
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


def documented_arguments(obj: Any) -> dict[str, str]:
    """``{argument: meaning}`` as plain text, from the docstrings of ``obj`` (a class: along
    its MRO, the first class documenting a name wins; a function: its own docstring).

    An entry reading ``see :class:`~pkg.Class``` is replaced by that class's entry for the name.

    >>> from agents import OFUL
    >>> documented_arguments(OFUL)["lam"], documented_arguments(OFUL)["dtype"][:24]
    ('ridge lambda > 0.', 'torch.float64 (default o')
    """
    owners = [k for k in obj.__mro__ if k is not object] if inspect.isclass(obj) else [obj]
    raw: dict[str, str] = {}
    for owner in owners:
        doc = owner.__dict__.get("__doc__") if inspect.isclass(owner) else getattr(owner, "__doc__", None)
        if not isinstance(doc, str):
            continue
        for name, text in {**_table_args(doc), **_google_args(doc)}.items():
            raw.setdefault(name, text)
    out = {}
    for name, text in raw.items():
        see = _SEE_CLASS.match(text)
        if see:
            target = _resolve_dotted(see.group(1))
            if target is not None and target is not obj:
                text = documented_arguments(target).get(name, rst_to_text(text))
        out[name] = rst_to_text(text)
    return out


_ABBREVIATIONS = ("e.g.", "i.e.", "Thm.", "Eq.", "eq.", "Sec.", "Fig.", "App.", "Alg.", "cf.", "vs.", "No.")


def first_clause(text: str, limit: int = 160) -> str:
    """The first clause of ``text``: up to the first ``". "``, ``"; "`` or ``": "`` outside
    brackets (not after an abbreviation such as ``Thm.``), cut to ``limit`` characters.

    >>> first_clause("constant radius (float, as in the papers) or theory: Thm. 2 of ...")
    'constant radius (float, as in the papers) or theory'
    """
    depth, cut = 0, len(text)
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and char in ".;:" and text[i + 1:i + 2] in (" ", ""):
            if char == "." and any(text[:i + 1].endswith(a) for a in _ABBREVIATIONS):
                continue
            cut = i
            break
    clause = text[:cut].strip().rstrip(".:")
    if len(clause) > limit:  # long asides in brackets go first: "a name of X (long list), or (X, y)"
        clause = _drop_long_asides(clause)
    return clause if len(clause) <= limit else clause[: limit - 3].rsplit(" ", 1)[0] + "..."


def _drop_long_asides(text: str, longest: int = 40) -> str:
    """``text`` without its outermost bracketed asides longer than ``longest`` characters."""
    out, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            if depth == 0:
                start = i
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                aside = text[start:i + 1]
                out.append(aside if len(aside) <= longest else "\0")
            continue
        if depth == 0:
            out.append(char)
    return re.sub(r"\s*\0", "", "".join(out))


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
    return re.sub(r"\b(?:[a-z_][\w]*\.)+([A-Za-z_]\w*)", r"\1", text)  # collections.abc.Sequence -> Sequence


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

    def summary(self) -> str:
        """One line of meaning (the first clause of the documented text), or says there is none."""
        return first_clause(self.meaning) if self.meaning else "(not documented)"


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
        """``"valid arguments: lam=1.0, beta=1.0, ..."``, the defaults as the constructor has them."""
        listed = ", ".join(f"{a.name}={a.default_text}" if not a.required else f"{a.name} (required)" for a in self)
        return f"valid arguments: {listed or '(none)'}"

    def problems(self, args: dict[str, Any], *, sequences: Iterable[str] = ()) -> list[ArgumentProblem]:
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
                    out.append(ArgumentProblem(
                        name, f"{self.owner} has no argument {name!r}{did_you_mean(name, self.by_name)}", unknown=True))
                continue
            values = list(value) if name in sequences and isinstance(value, (list, tuple, np.ndarray)) else [value]
            wrong = [v for v in values if not value_matches(v, argument.hint)]
            if wrong:
                out.append(ArgumentProblem(
                    name, f"{self.owner} argument {name}={short_repr(value, 60)}: expected {argument.type_text}, "
                          f"got {type(wrong[0]).__name__}"))
        return out


def named_argument(message: str, names: Iterable[str]) -> str:
    """The argument of ``names`` that ``message`` (a value check's) names first, else ``""``.

    >>> named_argument("SOFUL: sketch_size must be an int >= 1, got 0", ["lam", "sketch_size"])
    'sketch_size'
    """
    found = [(match.start(), name) for name in names
             for match in [re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)] if match]
    return min(found)[1] if found else ""


def describe_arguments(arguments: Arguments, width: int = 100) -> list[str]:
    """One row per argument, ``name  type  default  meaning``, the meaning (its first clause)
    wrapped under its column; for ``linbandit describe``."""
    import textwrap

    rows = [(a.name, a.type_text, a.default_text, a.summary()) for a in arguments]
    if not rows:
        return ["  (no arguments)"]
    columns = [max(len(r[k]) for r in rows + [("argument", "type", "default", "")]) for k in range(3)]
    indent = 2 + sum(columns) + 2 * 3
    lines = ["  " + "  ".join(h.ljust(w) for h, w in zip(("argument", "type", "default"), columns)) + "  meaning"]
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
        lines[unknown[-1]] += (f"; {arguments.valid_text()} (`linbandit describe {arguments.owner}` says what "
                               f"each means)")
    return lines


@functools.lru_cache(maxsize=256)
def _read(creator: Callable) -> tuple[tuple[Argument, ...], bool]:
    if inspect.isclass(creator):
        functions = [k.__dict__["__init__"] for k in creator.__mro__ if "__init__" in k.__dict__ and k is not object]
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
                found[name] = Argument(name, hints.get(name, Any), p.default, meanings.get(name, ""))
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
