"""What users type to name things: ``module:Class`` specs, env arguments, run labels.

One implementation each, shared by ``linbandit run``, ``linbandit demo`` and sweep configs
(validation, ``--dry-run`` and the real run), so that a spec accepted by one is accepted by
all and a label means the same everywhere.
"""

from __future__ import annotations

import importlib
import numbers
import os
import string
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .arguments import ArgumentProblem, Arguments, arguments_of, format_problems, named_argument
from .envs.names import (
    did_you_mean,
)  # ignores case and separators: LinBandit-Mnist-v0 -> LinBandit-MNIST-v0
from .registration import ENV_IDS, register_envs

__all__ = [
    "SHORT_ARG_NAMES",
    "args_label",
    "check_env_args",
    "check_file_name",
    "did_you_mean",
    "drop_current_directory_entry",
    "env_arg_types",
    "env_argument_problems",
    "env_arguments",
    "format_label",
    "load_entry_point",
    "load_object",
    "non_default_args",
]


# -- module:Class ---------------------------------------------------------------------


def _checked_name(spec: Any) -> tuple[str, str]:
    """``(module, attribute path)`` of ``"package.module:Name"``: dotted Python identifiers,
    none of them a dunder (``os:path.__class__`` would walk into the interpreter's objects)."""
    module_name, sep, attr = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected package.module:Name, got {spec!r}")
    for part in (*module_name.split("."), *attr.split(".")):
        if not part.isidentifier() or (part.startswith("__") and part.endswith("__")):
            raise ValueError(
                "expected package.module:Name of dotted Python identifiers (no dunder names), "
                f"got {spec!r}"
            )
    return module_name, attr


@contextmanager
def _current_directory_first() -> Iterator[str]:
    """The current directory first on ``sys.path`` for the block (where it is not on it
    already), and ``sys.path`` as it was afterwards, whatever the block did: only the lookup
    of a user's ``module:Class`` ever searches it."""
    cwd = os.getcwd()
    added = not any(os.path.abspath(p or os.curdir) == cwd for p in sys.path)
    if added:
        sys.path.insert(0, cwd)
    try:
        yield cwd
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def _attribute(module: Any, module_name: str, attr: str, spec: str) -> Any:
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            public = sorted(n for n in dir(module) if not n.startswith("_"))
            raise ValueError(
                f"cannot import {spec!r}: module {module_name!r} has no attribute {attr!r}"
                f"{did_you_mean(attr, public)}"
            ) from None
    return obj


def load_object(spec: str) -> Any:
    """The object named by a user's ``"package.module:Name"``, looked up the way ``python -m``
    looks modules up: the current directory first.

    So ``linbandit run --agent myagent:Greedy`` finds ``./myagent.py`` whether ``linbandit``
    was started as a console script (whose ``sys.path[0]`` is the script's bin directory) or
    with ``python -m linbandit_gym``. The current directory is on ``sys.path`` only while this
    module is imported (its own imports see it too, as a script's would), and ``sys.path`` is as
    it was afterwards: nothing else is ever imported from the current directory. (A worker
    process resolves the same name the same way, from the same directory.)

    Raises:
        ValueError: ``spec`` has no ``:``, the module cannot be imported or has no such name.
    """
    module_name, attr = _checked_name(spec)
    with _current_directory_first() as cwd:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(
                f"cannot import {spec!r}: {exc} (looked in the current directory "
                f"{cwd} and on sys.path)"
            ) from exc
    return _attribute(module, module_name, attr, spec)


def drop_current_directory_entry() -> None:
    """Remove the current directory that ``python -m`` put first on ``sys.path`` (what
    ``python -m linbandit_gym`` calls first): from then on nothing is imported from it, as with
    the ``linbandit`` command; a user's ``module:Class`` is still looked up there
    (:func:`load_object`). What the interpreter imported to start ``linbandit_gym`` itself came
    before this; ``python -P`` (Python 3.11+) leaves the directory out from the start."""
    if (
        sys.path
        and not getattr(sys.flags, "safe_path", False)
        and os.path.abspath(sys.path[0] or os.curdir) == os.getcwd()
    ):
        del sys.path[0]


def load_entry_point(spec: str) -> Any:
    """The object named by an installed ``"package.module:Name"`` (an env's registered entry
    point), imported from ``sys.path`` as it is: never from the current directory, so that a
    ``scipy.py`` there cannot stand in for a library the env imports."""
    module_name, attr = _checked_name(spec)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {spec!r}: {exc}") from exc
    return _attribute(module, module_name, attr, spec)


# -- env arguments --------------------------------------------------------------------


def _env_creator(env_id: str) -> Callable:
    import gymnasium as gym

    register_envs()  # idempotent: the ids are there even if the registry was cleared
    if env_id not in gym.registry:
        raise ValueError(
            f"unknown env id {env_id!r}{did_you_mean(env_id, ENV_IDS)}; known: {', '.join(ENV_IDS)}"
        )
    entry = gym.registry[env_id].entry_point
    return entry if callable(entry) else load_entry_point(entry)


def env_arguments(env_id: str) -> Arguments:
    """The :class:`~linbandit_gym.arguments.Arguments` of ``env_id``'s constructor: names, type
    hints, defaults and the meaning its docstring's Arguments table gives each.

    Read from the registered entry point (no env is built, no data loaded). ``gym.make``'s own
    keywords (``max_episode_steps``, ...) are not among them: the batched path builds the env
    without ``gym.make``, and ``horizon`` sets the episode length.
    """
    return arguments_of(_env_creator(env_id), env_id)


def env_arg_types(env_id: str) -> tuple[dict[str, Any], bool]:
    """``({name: type hint}, open)`` of the env's constructor, ``open`` meaning unknown names
    may be valid (see :func:`env_arguments`)."""
    arguments = env_arguments(env_id)
    return arguments.hints(), arguments.open


def env_argument_problems(env_id: str, args: dict[str, Any]) -> list[ArgumentProblem]:
    """Every problem of the env keyword arguments ``args``, each naming its argument: unknown
    names (with the closest valid one), values that do not fit the type hint, then (when names
    and types are right) the first the env's own value checks find (``check_arguments``: ranges,
    dataset names, combinations; no data is loaded)."""
    creator = _env_creator(env_id)
    problems = arguments_of(creator, env_id).problems(args)
    # Values and combinations: the env's own checks, with its own messages, where it offers
    # them without being built (ours do, without loading any dataset: LinBanditEnv.check_arguments).
    check_values = getattr(creator, "check_arguments", None)
    if check_values is not None and not problems:
        try:
            check_values(**args)
        except (TypeError, ValueError) as exc:
            problems.append(
                ArgumentProblem(named_argument(str(exc), args), f"{env_id}: {exc}", error=exc)
            )
    return problems


def check_env_args(env_id: str, args: dict[str, Any]) -> None:
    """Check env keyword arguments against the constructor of ``env_id`` before building it.

    Every name must be a parameter of the registered entry point; every value must fit the
    parameter's type hint where it has one (an ``int`` passes for ``float``; a ``str`` does not
    pass for ``bool``). Then, where the env class offers ``check_arguments`` (every linbandit
    env does), its own range and combination checks run too (dataset names, ``omega``, ...)
    without loading data: the dataset families check by name, the others build one env (their
    constructors draw nothing) and close it.

    Raises:
        ValueError: naming every bad key (with the closest valid one and the valid keys and
            their defaults) or the expected type, one line per problem; or the env's own
            ``ValueError`` for a value its checks refuse (e.g. an ``EnvTooLargeError``).
    """
    problems = env_argument_problems(env_id, args)
    refused = problems[0].error if len(problems) == 1 else None
    if isinstance(refused, ValueError):
        raise refused
    if problems:
        raise ValueError("\n".join(format_problems(problems, env_arguments(env_id)))) from refused


# -- labels ---------------------------------------------------------------------------

#: Argument names shortened in labels, as the papers write them (l for the sketch size).
SHORT_ARG_NAMES = {"sketch_size": "l"}


def args_label(base: str, args: dict[str, Any]) -> str:
    """``base`` followed by ``name=value`` for each of ``args``: ``"SOFUL l=10"``.

    The one labelling rule of the project: ``linbandit run`` passes the non-default
    constructor arguments, the demo and sweep configs the arguments that vary between their
    agents (a sweep's grid point); ``sketch_size`` is written ``l`` as in the papers.
    """
    if not args:
        return base
    return base + " " + " ".join(f"{SHORT_ARG_NAMES.get(k, k)}={v}" for k, v in args.items())


def non_default_args(factory: Callable, args: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``args`` that differ from ``factory``'s defaults (its signature's, along
    the MRO where a constructor forwards ``**kwargs``:
    :func:`~linbandit_gym.arguments.arguments_of`; all when unknown)."""
    try:
        defaults = {a.name: a.default for a in arguments_of(factory) if not a.required}
    except (TypeError, ValueError):
        return dict(args)
    out = {}
    for name, value in args.items():
        if name in defaults:
            default = defaults[name]
            try:
                # 1 == 1.0 is a default, True == 1 is not (a flag given as a count)
                if isinstance(default, bool) == isinstance(value, bool) and bool(default == value):
                    continue
            except Exception:  # noqa: BLE001  (an array default: keep it in the label)
                pass
        out[name] = value
    return out


#: The values a label template substitutes: numbers, strings, booleans and None (what YAML and
#: the command line give); anything else is shown with ``str``, never formatted or walked.
_LABEL_SCALARS = (numbers.Number, str, bool, type(None))


def format_label(template: str, values: dict[str, Any]) -> str:
    """``template`` with each ``{NAME}`` (or ``{NAME:SPEC}``, ``SPEC`` a format spec such as
    ``.2g``) replaced by the argument ``values[NAME]``: ``"SOFUL l={sketch_size}"`` ->
    ``"SOFUL l=10"``.

    A substitution language, not ``str.format``: a field is one argument name, never an
    attribute or an index (``{beta.__class__}`` and ``{grid[0]}`` are refused), so a label
    cannot reach the objects behind the values. ``{{`` and ``}}`` are literal braces.

    Raises:
        ValueError: a field that is not an argument name, a name not among ``values``, a
            conversion (``!r``), a nested field, or a format spec the value does not take.
    """
    out = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:  # a lone "{" or "}"
        raise ValueError(
            f"label {template!r}: {exc} (write {{{{ and }}}} for literal braces)"
        ) from None
    for literal, field, spec, conversion in parsed:
        out.append(literal)
        if field is None:
            continue
        if not field.isidentifier():
            raise ValueError(
                f"label {template!r}: {{{field}}} is not an argument name; "
                "a label substitutes arguments "
                f"only, as {{NAME}} or {{NAME:FORMAT}} "
                f"(arguments: {', '.join(sorted(values)) or 'none'})"
            )
        if field not in values:
            raise ValueError(
                f"label {template!r} names {field!r}{did_you_mean(field, values)}, "
                "which is not among the "
                f"arguments ({', '.join(sorted(values)) or 'none'})"
            )
        if conversion is not None or (spec and "{" in spec):
            raise ValueError(
                f"label {template!r}: write {{{field}}} or {{{field}:FORMAT}}, "
                f"without !{conversion} "
                "or nested fields"
            )
        value = values[field]
        if not isinstance(value, _LABEL_SCALARS):
            value = str(value)
        try:
            out.append(format(value, spec) if spec else str(value))
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"label {template!r}: {{{field}:{spec}}} does not fit {value!r}: {exc}"
            ) from None
    return "".join(out)


def check_file_name(name: Any, what: str) -> str:
    """``name`` if it can name a file inside an output directory, else ``ValueError`` saying why.

    A name, not a path: no separator (``/``, or ``\\`` on any system), not ``.`` or ``..``,
    not absolute, no control character, at most 200 characters -- so that whatever the
    name, the file stays in the directory it is written to.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what}: expected a non-empty name, got {name!r}")
    problem = None
    if os.path.isabs(name) or name.startswith(("/", "\\")):
        problem = "is an absolute path"
    elif "/" in name or "\\" in name or os.sep in name or (os.altsep and os.altsep in name):
        problem = "has a path separator"
    elif name in (".", ".."):
        problem = "is a relative path"
    elif any(ord(c) < 32 or ord(c) == 127 for c in name):
        problem = "has a control character"
    elif len(name) > 200:
        problem = "is longer than 200 characters"
    if problem:
        raise ValueError(
            f"{what}: {name!r} {problem}; it names a file inside the output directory, not a path "
            "(letters, digits, '-', '_', '.' and spaces; choose the directory with --out)"
        )
    return name
