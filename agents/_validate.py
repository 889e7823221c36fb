"""Argument validation: constraints declared once per class, checked by one function.

A constructor keyword means the same thing in every agent that has it (the agent contract of
docs/contracts.md), so its rule is written once, and every agent says the same thing about the
same bad value: the argument, what was expected, what it meant, and what it got (value and
type), e.g.
``delta must be a real number in (0, 1) (confidence level, e.g. 0.05), got '0.5' (str)``
instead of ``TypeError: '<' not supported between instances of 'int' and 'str'``.

Each agent class declares the rules of its own arguments in ``parameter_constraints``, as
scikit-learn's estimators declare ``_parameter_constraints``: an argument's name maps to the
list of forms its value may take (any one will do)::

    parameter_constraints = {
        "sketch_size": [Interval(Integral, 1, None, hint="the number l of sketch rows")],
        "sketch": [Options({"fd", "rfd"})],
        "c": [Interval(Real, 0, None, closed="neither"), None],
        "fast": [bool],
    }

A form is an :class:`Interval` (a range of ints or of finite reals), an :class:`Options` (a few
exact values; a plain ``set`` is read as one), ``None`` (the value ``None``) or ``bool`` (``True``
or ``False``). :func:`validate_parameters` checks values against such tables and writes every
message (:func:`check_value` checks one value). The tables of a class and of its bases all apply,
the base's first (:class:`~agents.base.TorchAgent` collects them): a keyword shared by every
agent (:data:`SHARED_CONSTRAINTS`) is refused with the same message everywhere, and a class can
only narrow it (``noise_std > 0`` for best-arm identification).

The checks refuse what Python's comparisons would let through silently: ``bool`` (an ``int``
subclass: ``seed=True`` would seed with 1), ``inf`` and ``nan`` (``noise_std=inf`` makes every
``beta="theory"`` score ``inf``/``nan``), numeric strings, complex numbers. numpy scalars
(``np.float32(0.1)``, ``np.int64(3)``) are accepted like the Python ones, and come back as them.

Arguments in which the members of a batched agent may differ take one value per member as a
list, tuple or 1-D array (:func:`per_member`): each member's value is checked by the same rule
and a refusal names the member (``lam[1] must be ... (member 1 of the batch of 3)``).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from linbandit_host.seeds import SEED_LIMIT, SEED_RULE

__all__ = [
    "InvalidArgumentError",
    "Interval",
    "Options",
    "SHARED_CONSTRAINTS",
    "check_seed",
    "check_value",
    "is_per_member",
    "per_member",
    "validate_parameters",
]


class InvalidArgumentError(ValueError, TypeError):
    """An argument of the wrong type or out of range.

    Both a ``ValueError`` (what the agents always raised for bad arguments, and what the
    command line turns into a usage error) and a ``TypeError`` (what Python raises for a
    wrong type), as scikit-learn's ``InvalidParameterError`` is.
    """


_CLOSED = {"left": ("[", ")"), "right": ("(", "]"), "both": ("[", "]"), "neither": ("(", ")")}


@dataclass(frozen=True)
class Interval:
    """Numbers of one kind in a range: ``kind`` is ``numbers.Integral`` (ints) or ``numbers.Real``
    (finite reals; ints pass too), ``left``/``right`` the bounds (``None``: unbounded), ``closed``
    which bounds belong to it (``"left"``, ``"right"``, ``"both"`` or ``"neither"``). ``hint``: what
    the argument means, or how to fix a refused value, for the message. ``bool`` is never a number.

    >>> Interval(numbers.Real, 0, 1, closed="neither").describe()
    'a real number in (0, 1)'
    >>> Interval(numbers.Integral, 1, None).describe()
    'an int >= 1'
    """

    kind: type
    left: float | None = None
    right: float | None = None
    closed: str = "left"
    hint: str = ""
    #: the range as messages write it, when the bounds' digits would hide it (``[0, 2**63)``)
    spelled: str = ""

    def __post_init__(self) -> None:
        if self.kind not in (numbers.Integral, numbers.Real):
            raise TypeError(
                f"Interval kind must be numbers.Integral or numbers.Real, got {self.kind!r}"
            )
        if self.closed not in _CLOSED:
            raise ValueError(
                f"Interval closed must be one of {sorted(_CLOSED)}, got {self.closed!r}"
            )

    def accepts(self, value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        if self.kind is numbers.Real and not math.isfinite(value):
            return False
        low_in, high_in = self.closed in ("left", "both"), self.closed in ("right", "both")
        if self.left is not None and not (value >= self.left if low_in else value > self.left):
            return False
        return self.right is None or (value <= self.right if high_in else value < self.right)

    def normalise(self, value: Any) -> int | float:
        return int(value) if self.kind is numbers.Integral else float(value)

    def _number(self, bound: float) -> str:
        return str(int(bound)) if self.kind is numbers.Integral else f"{bound:g}"

    def describe(self) -> str:
        if self.spelled:
            return self.spelled
        number = "an int" if self.kind is numbers.Integral else "a real number"
        left, right = (None if b is None else self._number(b) for b in (self.left, self.right))
        if left is not None and self.left == self.right:
            return left
        if left is not None and right is not None:
            opening, closing = _CLOSED[self.closed]
            return f"{number} in {opening}{left}, {right}{closing}"
        low_in, high_in = self.closed in ("left", "both"), self.closed in ("right", "both")
        bounds = [
            f"{op} {bound}"
            for op, bound in ((">=" if low_in else ">", left), ("<=" if high_in else "<", right))
            if bound is not None
        ]
        finite = "" if self.kind is numbers.Integral else "a finite real number"
        return " ".join([finite or number, *bounds])


@dataclass(frozen=True)
class Options:
    """A few exact values (``values``: a tuple, in the order messages list them, or a set, listed
    sorted). A value matches one of the same type only (``1`` is not ``True``, ``np.True_`` not
    ``True``). ``hint``: what the argument means, or how to fix a refused value.

    >>> Options(("tracking", "rounding", "greedy")).describe()
    "'tracking', 'rounding' or 'greedy'"
    """

    values: tuple
    hint: str = ""

    def __post_init__(self) -> None:
        values = self.values
        if isinstance(values, (set, frozenset)):
            values = tuple(sorted(values, key=repr))
        object.__setattr__(self, "values", tuple(values))

    def accepts(self, value: Any) -> bool:
        return any(type(value) is type(option) and value == option for option in self.values)

    def normalise(self, value: Any) -> Any:
        return value

    def describe(self) -> str:
        listed = [repr(v) for v in self.values]
        return listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"


@dataclass(frozen=True)
class _NoneForm:
    hint: str = ""

    def accepts(self, value: Any) -> bool:
        return value is None

    def normalise(self, value: Any) -> None:
        return None

    def describe(self) -> str:
        return "None"


Form = Interval | Options | _NoneForm


def _form(form: Any) -> Form:
    """A form of a constraint table as one of the classes above (``None``, ``bool`` and sets are
    shorthands)."""
    if form is None:
        return _NoneForm()
    if form is bool:
        return Options((True, False))
    if isinstance(form, (set, frozenset)):
        return Options(form)
    if isinstance(form, (Interval, Options, _NoneForm)):
        return form
    raise TypeError(
        f"a parameter constraint must be an Interval, Options, a set, bool or None, got {form!r}"
    )


def _got(value: Any) -> str:
    return f"got {value!r} ({type(value).__name__})"


def check_value(name: str, value: Any, forms: Iterable[Any]) -> Any:
    """``value`` (normalised: an ``int`` or ``float`` for an :class:`Interval`) if it takes one of
    ``forms``, else an :class:`InvalidArgumentError` naming ``name``: what was expected (every
    form), the first hint among them, and what it got. The one place an argument's message is
    written.

    >>> try:
    ...     forms = [Interval(numbers.Real, 0, None, closed="neither", hint="ridge lambda")]
    ...     check_value("lam", -1.0, forms)
    ... except InvalidArgumentError as error:
    ...     print(error)
    lam must be a finite real number > 0 (ridge lambda), got -1.0 (float)
    """
    forms = [_form(f) for f in forms]
    for form in forms:
        if form.accepts(value):
            return form.normalise(value)
    expected = " or ".join(form.describe() for form in forms)
    hint = next((form.hint for form in forms if form.hint), "")
    suffix = f" ({hint})" if hint else ""
    raise InvalidArgumentError(f"{name} must be {expected}{suffix}, {_got(value)}")


#: Keywords that mean the same in every agent having them: checked first for every agent (a class
#: narrows one in its own table, never widens it).
SHARED_CONSTRAINTS: dict[str, list] = {
    # the one seed rule of the loop, the configs and the records (linbandit_host.seeds)
    "seed": [
        Interval(
            numbers.Integral,
            0,
            SEED_LIMIT,
            hint="seeds the agent's own generator",
            spelled=SEED_RULE,
        ),
        None,
    ],
    "d": [Interval(numbers.Integral, 1, None, hint="None: read from the first observation"), None],
    "delta": [Interval(numbers.Real, 0, 1, closed="neither", hint="confidence level, e.g. 0.05")],
    "noise_std": [Interval(numbers.Real, 0, None, hint="sub-Gaussian scale of the reward noise")],
    "theta_bound": [Interval(numbers.Real, 0, None, hint="bound on ||theta*||_2")],
}


def validate_parameters(
    constraints: Mapping[str, list] | Iterable[tuple[str, list]],
    values: Mapping[str, Any],
    *,
    batch_size: int | None = None,
    per_member_args: Collection[str] = (),
) -> dict[str, Any]:
    """``values`` checked against ``constraints`` and normalised, in the order of ``values``.

    Args:
        constraints: name -> list of forms (a class's ``parameter_constraints``), or ``(name,
            forms)`` pairs where a name may come back: then every rule must hold, in order (the
            rules of a class and of its bases). Names without a rule pass unchanged.
        values: the arguments, name -> value.
        batch_size: ``None`` for one agent, else the members B of a batched agent.
        per_member_args: the names that may give one value per member (:func:`per_member`).

    Raises:
        InvalidArgumentError: the first argument that takes none of its forms, named (with its
            member for a per-member value).
    """
    pairs = list(constraints.items()) if isinstance(constraints, Mapping) else list(constraints)
    rules: dict[str, list[list]] = {}
    for name, forms in pairs:
        rules.setdefault(name, []).append(forms)
    out = dict(values)
    for name, value in values.items():
        for forms in rules.get(name, ()):
            if name in per_member_args:
                check = functools.partial(check_value, forms=forms)
                value = per_member(name, value, batch_size, check)
            else:
                value = check_value(name, value, forms)
        out[name] = value
    return out


def check_seed(seed: Any, name: str = "seed") -> int | None:
    """A seed: ``None`` (fresh entropy) or, by the one seed rule (:mod:`linbandit_host.seeds`), an
    int in ``[0, 2**63)`` (``True`` is not a seed)."""
    return check_value(name, seed, SHARED_CONSTRAINTS["seed"])


def is_per_member(value: Any) -> bool:
    """Whether ``value`` gives one value per member: a list, tuple or 1-D array/tensor (not a
    str)."""
    if isinstance(value, (list, tuple)):
        return True
    ndim = getattr(value, "ndim", 0)
    return not isinstance(value, (str, bytes)) and isinstance(ndim, int) and ndim >= 1


def per_member(
    name: str, value: Any, batch_size: int | None, check: Callable[[str, Any], Any]
) -> Any:
    """A constructor argument that may differ across the members of a batched agent.

    ``value`` is one value for every member, or (batched agents only) a list, tuple or 1-D
    array of ``batch_size`` values. Each value is validated by ``check(label, v)`` (which
    returns it normalised or raises a ``ValueError`` starting with ``label``); a bad value of
    one member is reported as ``name[i]`` with the member's index. Returns the one value when
    all members agree (so a uniform batch keeps the scalar code paths), else a numpy array
    of the B values (an object array when strings and numbers mix).

    Raises:
        InvalidArgumentError: a sequence given to a single agent (``batch_size=None``), a
            sequence whose length is not ``batch_size``, or a bad value of some member.
    """
    if not is_per_member(value):
        return check(name, value)
    values = value.tolist() if hasattr(value, "tolist") else list(value)
    if batch_size is None:
        raise InvalidArgumentError(
            f"{name}={value!r} gives one value per member, but a single agent (batch_size=None) "
            f"takes one value; pass batch_size={len(values)} for a batched agent whose member i "
            f"uses {name}[i]"
        )
    if getattr(value, "ndim", 1) != 1 or any(isinstance(v, (list, tuple)) for v in values):
        raise InvalidArgumentError(
            f"{name} must be one value or a flat sequence of {batch_size} values (one per "
            f"member), got {value!r}"
        )
    if len(values) != batch_size:
        raise InvalidArgumentError(
            f"{name} must hold one value per member (batch_size={batch_size}), got {len(values)} "
            f"values: {value!r}"
        )
    checked = []
    for i, v in enumerate(values):
        try:
            checked.append(check(f"{name}[{i}]", v))
        except (ValueError, TypeError) as exc:
            raise InvalidArgumentError(f"{exc} (member {i} of the batch of {batch_size})") from None
    if all(c == checked[0] for c in checked[1:]):
        return checked[0]
    if any(
        isinstance(c, str) for c in checked
    ):  # e.g. beta: "theory" for some members, numbers for others
        return np.array(checked, dtype=object)
    return np.array(checked)
