"""Argument validation shared by every agent: one rule and one message per kind of argument.

docs/contracts.md makes the constructor keywords a contract: a keyword means the same thing in every
agent that has it. So its check lives here once, and every agent says the same thing about
the same bad value, naming the argument, what was expected, and what it got (value and
type): ``delta must be a real number in (0, 1) (confidence level, e.g. 0.05), got '0.5'
(str)`` instead of ``TypeError: '<' not supported between instances of 'int' and 'str'``.

The checks refuse what Python's comparisons would let through silently: ``bool`` (an
``int`` subclass: ``seed=True`` would seed with 1), ``inf`` and ``nan`` (``noise_std=inf``
makes every ``beta="theory"`` score ``inf``/``nan``), numeric strings, complex numbers.
numpy scalars (``np.float32(0.1)``, ``np.int64(3)``) are accepted like the Python ones.

:data:`SHARED_KEYWORDS` maps the keywords shared by several agent families to their check;
:class:`~agents.base.TorchAgent` applies it to the keywords an agent is constructed with,
before the agent's own ``__init__`` runs.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from linbandit_host.seeds import SEED_RULE, is_seed

__all__ = [
    "InvalidArgumentError",
    "SHARED_KEYWORDS",
    "check_batch_size",
    "check_int",
    "check_probability",
    "check_real",
    "check_seed",
    "check_shared_keywords",
    "is_per_member",
    "per_member",
]


class InvalidArgumentError(ValueError, TypeError):
    """An argument of the wrong type or out of range.

    Both a ``ValueError`` (what the agents always raised for bad arguments, and what the
    command line turns into a usage error) and a ``TypeError`` (what Python raises for a
    wrong type), as scikit-learn's ``InvalidParameterError`` is.
    """


def _got(value: Any) -> str:
    return f"got {value!r} ({type(value).__name__})"


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_real(
    name: str,
    value: Any,
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    hint: str = "",
) -> float:
    """``value`` as a float if it is a finite real number within the bounds, else an error.

    Args:
        name: the argument's name, for the message.
        gt, ge, lt: strict lower, inclusive lower and strict upper bounds (None: unbounded).
        hint: what the argument means, e.g. ``"the reward noise's sub-Gaussian scale"``.

    Raises:
        InvalidArgumentError: not a real number (str, None, bool, complex, ...), not finite,
            or out of bounds.
    """
    if gt is not None and lt is not None:
        expected = f"a real number in ({gt:g}, {lt:g})"
    else:
        bounds = [f"{op} {b:g}" for op, b in ((">", gt), (">=", ge), ("<", lt)) if b is not None]
        expected = " ".join(["a finite real number", " and ".join(bounds)]).rstrip()
    suffix = f" ({hint})" if hint else ""
    ok = _is_real(value) and math.isfinite(value)
    if ok:
        v = float(value)
        ok = (gt is None or v > gt) and (ge is None or v >= ge) and (lt is None or v < lt)
    if not ok:
        raise InvalidArgumentError(f"{name} must be {expected}{suffix}, {_got(value)}")
    return float(value)


def check_probability(name: str, value: Any, hint: str = "") -> float:
    """A real number in the open interval (0, 1) (a confidence level or failure probability)."""
    return check_real(name, value, gt=0.0, lt=1.0, hint=hint)


def check_int(name: str, value: Any, *, minimum: int | None = None, optional: bool = False, hint: str = "") -> int | None:
    """``value`` as an int (``None`` passes when ``optional``), refusing bool, float and str.

    Raises:
        InvalidArgumentError: not an integer (``2.0`` and ``True`` included), or below ``minimum``.
    """
    if optional and value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or (
        minimum is not None and value < minimum
    ):
        expected = "an int" if minimum is None else f"an int >= {minimum}"
        expected += " or None" if optional else ""
        suffix = f" ({hint})" if hint else ""
        raise InvalidArgumentError(f"{name} must be {expected}{suffix}, {_got(value)}")
    return int(value)


def check_seed(seed: Any, name: str = "seed") -> int | None:
    """A seed: ``None`` (fresh entropy) or, by the one seed rule of the loop, the configs and the
    records (:mod:`linbandit_host.seeds`), an int in ``[0, 2**63)`` (``True`` is not a seed)."""
    if seed is None:
        return None
    if not is_seed(seed):
        raise InvalidArgumentError(
            f"{name} must be {SEED_RULE} or None (seeds the agent's own generator), {_got(seed)}"
        )
    return int(seed)


#: keyword -> check, for the keywords that mean the same thing in every agent having them.
#: Ranges narrower in one family (noise_std > 0 for best-arm identification, lam > 0 for the
#: ridge agents, lam = 0 for plain OLS) are checked by that family with the same helpers.
SHARED_KEYWORDS: dict[str, Callable[[Any], Any]] = {
    "seed": check_seed,
    "d": lambda v: check_int("d", v, minimum=1, optional=True, hint="None: read from the first observation"),
    "delta": lambda v: check_probability("delta", v, hint="confidence level, e.g. 0.05"),
    "noise_std": lambda v: check_real("noise_std", v, ge=0.0, hint="sub-Gaussian scale of the reward noise"),
    "theta_bound": lambda v: check_real("theta_bound", v, ge=0.0, hint="bound on ||theta*||_2"),
}


def check_shared_keywords(kwargs: dict[str, Any]) -> None:
    """Apply :data:`SHARED_KEYWORDS` to the keywords present in ``kwargs`` (others are ignored)."""
    for key, value in kwargs.items():
        check = SHARED_KEYWORDS.get(key)
        if check is not None:
            check(value)


def check_batch_size(batch_size: Any) -> int | None:
    """``None`` (one agent) or the number of members B >= 1 of a batched agent."""
    if batch_size is not None and (isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, numbers.Integral)
                                   or batch_size < 1):
        raise InvalidArgumentError(
            f"batch_size must be an int >= 1 (the number of independent members B), got {batch_size!r}"
        )
    return None if batch_size is None else int(batch_size)


def is_per_member(value: Any) -> bool:
    """Whether ``value`` gives one value per member: a list, tuple or 1-D array/tensor (not a str)."""
    if isinstance(value, (list, tuple)):
        return True
    ndim = getattr(value, "ndim", 0)
    return not isinstance(value, (str, bytes)) and isinstance(ndim, int) and ndim >= 1


def per_member(name: str, value: Any, batch_size: int | None, check: Callable[[str, Any], Any]) -> Any:
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
            f"{name}={value!r} gives one value per member, but a single agent (batch_size=None) takes one value; "
            f"pass batch_size={len(values)} for a batched agent whose member i uses {name}[i]"
        )
    if getattr(value, "ndim", 1) != 1 or any(isinstance(v, (list, tuple)) for v in values):
        raise InvalidArgumentError(f"{name} must be one value or a flat sequence of {batch_size} values (one per "
                                   f"member), got {value!r}")
    if len(values) != batch_size:
        raise InvalidArgumentError(
            f"{name} must hold one value per member (batch_size={batch_size}), got {len(values)} values: {value!r}"
        )
    checked = []
    for i, v in enumerate(values):
        try:
            checked.append(check(f"{name}[{i}]", v))
        except (ValueError, TypeError) as exc:
            raise InvalidArgumentError(f"{exc} (member {i} of the batch of {batch_size})") from None
    if all(c == checked[0] for c in checked[1:]):
        return checked[0]
    if any(isinstance(c, str) for c in checked):  # e.g. beta: "theory" for some members, numbers for others
        return np.array(checked, dtype=object)
    return np.array(checked)
