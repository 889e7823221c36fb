"""Agent names users type, resolved to the classes that build them.

One resolution for ``linbandit run --agent``, the demo, sweep configs (validation,
``--dry-run``, the runs) and the batch planner: a registered name, case-insensitive
(``"SOFUL"``, ``"DBSLinUCB-FD"``: :data:`agents.AGENTS`), or ``"package.module:Class"``, a
user's agent found in the current directory first, as ``python -m`` finds modules.

A ``module:Class`` name imports ``module`` (a config that names one runs the user's module, as
a Python script would), then must name an agent before anything is called: a class with
``reset``, ``act`` and ``update``, or a factory function whose return annotation is such a
class (``def make_agent(eps: float = 0.1) -> MyAgent``). Anything else -- ``os:system``,
``subprocess:getoutput``, ``collections:OrderedDict`` -- is refused with one line, before it is
called (:func:`check_agent_factory`). Arguments are checked against the signature
(:meth:`AgentEntry.check_args`) and sizes against the memory available
(:func:`estimate_run_bytes`, :func:`check_run_fits`), still without building anything.

What a caller needs to know before building an agent -- whether agents of its class batch,
the arguments batch members may differ in, an estimate of its memory -- is what the class
declares (:class:`agents.Agent`: ``batching``, ``estimate_memory_bytes``), asked through
:class:`AgentEntry`, so that a user's class without these declarations gets the defaults: not
batched, no estimate. (``agents``, and with it torch, is imported on
first use: ``linbandit --help`` or ``linbandit plot`` need neither.)
"""

from __future__ import annotations

import inspect
import re
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .arguments import (
    ArgumentProblem,
    Arguments,
    arguments_of,
    describe_arguments,
    format_problems,
    rst_to_text,
)
from .envs.names import closest_name, name_key
from .registration import ENV_IDS, env_description
from .specs import args_label, did_you_mean, env_arguments, load_object, non_default_args

__all__ = [
    "AGENT_METHODS",
    "PLACEMENT_ARGS",
    "AgentEntry",
    "RunMemory",
    "RunTooLargeError",
    "agent_arguments",
    "agent_names",
    "check_agent_factory",
    "check_run_fits",
    "describe",
    "estimate_run_bytes",
    "lookup_agent",
    "lookup_estimator",
    "object_label",
    "registered_name",
    "resolve_agent",
]

#: What every agent has (the agent contract, ``docs/contracts.md``): checked on a
#: ``module:Class`` before use.
AGENT_METHODS = ("reset", "act", "update")
#: What a covariance estimator named by a ``task: matrix-approx`` config has.
ESTIMATOR_METHODS = ("update", "covariance")


#: The most a registered agent may allocate for its checks against the arms' dimension in
#: validation (:meth:`AgentEntry.value_problem`): built with ``d`` only up to this, so that a
#: ``--dry-run`` of large agents stays cheap (theirs come at the first round).
DIMENSION_CHECK_BYTES = 64 * 2**20


@dataclass(frozen=True)
class AgentEntry:
    """A resolved agent name: ``label``, the registered spelling (or the ``module:Class`` given),
    which run labels start from, and ``factory``, the class (or callable) that builds the agent."""

    label: str
    factory: Callable[..., Any]

    def arguments(self) -> Arguments:
        """The constructor's arguments (names, type hints, defaults, documented meanings),
        named after the agent as the user typed it
        (:func:`linbandit_gym.arguments.arguments_of`)."""
        return arguments_of(self.factory, self.label)

    def argument_problems(self, args: dict[str, Any]) -> list[ArgumentProblem]:
        """Every problem of ``args`` that the signature shows, each naming its argument: names
        the agent does not take (with the closest one) and values that do not fit their type
        hint (a per-member argument may be a list of such values). Nothing is built."""
        return self.arguments().problems(args, sequences=self.per_member_args())

    def value_problem(
        self, args: dict[str, Any], d: int | None = None, up_front_bytes: int | None = None
    ) -> str | None:
        """What the agent's own checks say of ``args`` (ranges, combinations), else None.

        Only a registered agent is asked, built *without* ``d`` (so that it allocates nothing:
        the state is allocated when the dimension is known) and dropped; ``d`` itself must be a
        positive int. Given the arms' dimension ``d`` (the env's, or the agent's own ``d``) and
        what the agent allocates up front for it (``up_front_bytes``, from its class's estimate,
        at most :data:`DIMENSION_CHECK_BYTES`), it is then built with ``d`` too, so that what it
        checks against the dimension (``l0 <= d``) is refused here and not at the first round;
        its warnings are left to the run. A user's ``module:Class`` is never constructed here: its
        own code runs in its runs, not in validation or ``--dry-run``."""
        if ":" in self.label:
            return None
        given = args.get("d")
        if given is not None and (
            isinstance(given, bool) or not isinstance(given, int) or given < 1
        ):
            return f"{self.label}: d must be a positive int (the arms' dimension), got {given!r}"
        others = {k: v for k, v in args.items() if k != "d"}
        try:
            self.factory(**others)
        except (TypeError, ValueError) as exc:
            return f"{self.label}: {exc}"
        d = given if given is not None else d
        if d is None or up_front_bytes is None or up_front_bytes > DIMENSION_CHECK_BYTES:
            return None
        if not self.takes_d():
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.factory(**others, d=d)
        except (TypeError, ValueError) as exc:
            return f"{self.label}: {exc}"
        return None

    def takes_d(self) -> bool:
        """Whether the factory takes ``d`` (by name, or through ``**kwargs``)."""
        try:
            parameters = inspect.signature(self.factory).parameters
        except (TypeError, ValueError):
            return False
        return "d" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())

    def check_args(self, args: dict[str, Any]) -> None:
        """Raise a ``ValueError`` listing every problem of ``args`` (names and types, with the
        valid arguments and their defaults; else the agent's own value checks)."""
        problems = self.argument_problems(args)
        if problems:
            raise ValueError("\n".join(format_problems(problems, self.arguments())))

    def describe(self) -> str:
        """What ``linbandit describe NAME`` prints for this agent: its class, the summary line of
        its docstring and every argument with its type, default and meaning."""
        factory = self.factory
        qualname = getattr(factory, "__qualname__", type(factory).__name__)
        where = f"{getattr(factory, '__module__', '?')}:{qualname}"
        lines = [f"{self.label}  (agent {where})", _summary_line(factory)]
        per_member = self.per_member_args()
        if per_member:
            lines.append(
                f"batched (batch_size=B): {', '.join(per_member)} may differ between the B members"
            )
        return "\n".join(
            [*filter(None, lines), "", "arguments:", *describe_arguments(self.arguments())]
        )

    def build(self, args: dict[str, Any] | None = None) -> Any:
        """The agent ``factory(**args)``; an argument it does not take is a ``ValueError`` naming
        the agent as the user typed it, the closest valid name and the valid arguments."""
        args = dict(args or {})
        unknown = [p for p in self.argument_problems(args) if p.unknown]
        if unknown:
            raise ValueError("\n".join(format_problems(unknown, self.arguments())))
        try:
            return self.factory(**args)
        except (
            TypeError
        ) as exc:  # e.g. a required argument of a user's class: no raw __init__() text
            raise ValueError(
                f"bad arguments for agent {self.label!r}: {_without_qualname(exc)}"
            ) from exc

    def _ask(self, question: str) -> Callable[..., Any]:
        """The class's own answer to ``question`` (a classmethod of :class:`agents.Agent`), or
        the base class's for an agent that does not subclass it."""
        from agents import Agent

        method = getattr(self.factory, question, None)
        return method if callable(method) else getattr(Agent, question)

    def batchable(self) -> bool:
        """Whether agents of this class advance together as the members of one batched agent: the
        class's own body declares its ``batching`` (:func:`agents.batched.supports_batched`; a
        class that only answers ``batchable()`` with ``True`` runs one agent at a time)."""
        from agents.batched import supports_batched

        return isinstance(self.factory, type) and supports_batched(self.factory)

    def per_member_args(self) -> tuple[str, ...]:
        """The arguments in which the members of one batched agent of this class may differ."""
        return tuple(getattr(self.factory, "per_member_args", ()))

    def estimate_memory_bytes(self, d: int, n_arms: int, args: dict[str, Any]) -> int | None:
        """The class's estimate of one agent's peak memory for arm sets ``(n_arms, d)``
        (``None``: unknown)."""
        return self._ask("estimate_memory_bytes")(d, n_arms, **args)

    def estimate_initial_memory_bytes(
        self, d: int, n_arms: int, args: dict[str, Any]
    ) -> int | None:
        """The class's estimate of what one agent allocates first, where its memory grows with the
        stream (``None``: the peak is allocated up front, or unknown)."""
        return self._ask("estimate_initial_memory_bytes")(d, n_arms, **args)


def _without_qualname(exc: TypeError) -> str:
    """A ``TypeError`` of a call, without the ``Class.__init__()`` Python puts first."""
    return re.sub(r"^[\w.]*__init__\(\) ", "", str(exc))


def _summary_line(obj: Any) -> str:
    lines = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return rst_to_text(lines[0].strip()) if lines else ""


def describe(name: str) -> str:
    """The arguments of an env id or an agent name (case and separators ignored, as the
    suggestions do: ``linbandit-mnist-v0``, ``soful``), or of a ``module:Class`` agent: each
    with its type, default and the meaning its docstring gives (``linbandit describe``).

    Raises:
        ValueError: ``name`` is neither, with the closest env id or agent name.
    """
    envs = {name_key(env_id): env_id for env_id in ENV_IDS}
    if name in ENV_IDS or name_key(name) in envs:
        env_id = name if name in ENV_IDS else envs[name_key(name)]
        lines = [
            f"{env_id}  (env {ENV_IDS[env_id]})",
            env_description(env_id),
            "",
            "arguments:",
            *describe_arguments(env_arguments(env_id)),
        ]
        return "\n".join(lines)
    from agents import AGENTS

    agents = {name_key(agent): agent for agent in AGENTS}
    if ":" in name or name_key(name) in agents:
        return lookup_agent(name if ":" in name else agents[name_key(name)]).describe()
    known = [*ENV_IDS, *sorted(AGENTS)]
    close = closest_name(name, known)
    hint = f" (did you mean {close!r}?)" if close else ""
    raise ValueError(
        f"{name!r} is no env id nor agent name{hint}; `linbandit list` shows them all "
        "(an agent of your own: package.module:Class)"
    )


def agent_names() -> list[str]:
    """The registered agent names, sorted."""
    from agents import AGENTS

    return sorted(AGENTS)


def lookup_agent(name: str) -> AgentEntry:
    """The :class:`AgentEntry` of a registered name (case-insensitive) or
    ``"package.module:Class"``.

    Raises:
        ValueError: an unknown name (with the closest registered one and the list), or a
            ``module:Class`` that cannot be imported.
    """
    from agents import AGENTS

    if not isinstance(name, str) or not name:
        raise ValueError(
            f"expected an agent name (see `linbandit list`) or module:Class, got {name!r}"
        )
    if ":" in name:
        try:
            return AgentEntry(name, check_agent_factory(load_object(name), name))
        except ValueError as exc:
            raise ValueError(f"agent: {exc}") from None
    by_lower = {key.lower(): key for key in AGENTS}
    if name.lower() not in by_lower:
        raise ValueError(
            f"unknown agent {name!r}{did_you_mean(name, AGENTS)}; "
            f"known: {', '.join(sorted(AGENTS))} "
            "(or give package.module:Class)"
        )
    key = by_lower[name.lower()]
    return AgentEntry(key, AGENTS[key])


def _missing(obj: Any, methods: tuple[str, ...]) -> list[str]:
    """The names among ``methods`` that the class ``obj`` does not define as callables, looked
    up statically (no descriptor or ``__getattr__`` of the class runs)."""
    missing = []
    for method in methods:
        try:
            attribute = inspect.getattr_static(obj, method)
        except AttributeError:
            missing.append(method)
            continue
        if isinstance(attribute, (staticmethod, classmethod)):
            attribute = attribute.__func__
        if not callable(attribute):
            missing.append(method)
    return missing


def _what(obj: Any) -> str:
    if inspect.isbuiltin(obj):
        return f"the built-in function {getattr(obj, '__name__', obj)!r}"
    if inspect.isroutine(obj):
        return f"the function {getattr(obj, '__qualname__', obj)!r}"
    if inspect.ismodule(obj):
        return f"the module {obj.__name__!r}"
    if inspect.isclass(obj):
        return f"the class {obj.__qualname__!r}"
    return f"a {type(obj).__name__} object"


def _check_factory(obj: Any, spec: str, methods: tuple[str, ...], kind: str) -> Any:
    """``obj`` if it is a class with ``methods`` (or a Python function annotated to return
    one), else a ``ValueError`` that says what ``spec`` names instead. Nothing is called."""
    how = (
        f"name a class that defines {', '.join(methods[:-1])} and {methods[-1]}, "
        "or a factory function "
        "annotated to return one (def make(...) -> MyClass)"
    )
    if inspect.isclass(obj):
        missing = _missing(obj, methods)
        if missing:
            raise ValueError(
                f"{spec!r} is {_what(obj)}, not {kind}: it has no {', '.join(missing)}; {how}"
            )
        return obj
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        try:
            returns = typing.get_type_hints(obj).get("return")
        # an annotation that does not resolve: not a documented factory
        except Exception:  # noqa: BLE001
            returns = None
        if inspect.isclass(returns) and not _missing(returns, methods):
            return obj
        raise ValueError(
            f"{spec!r} is {_what(obj)}, not {kind} nor a factory annotated to return one; {how}"
        )
    raise ValueError(f"{spec!r} is {_what(obj)}, not {kind}; {how}")


def check_agent_factory(obj: Any, spec: str) -> Any:
    """``obj`` (what ``spec``, a ``module:Class``, names) if it builds agents, checked on the
    object itself before anything is called: a class with ``reset``, ``act`` and ``update``
    (:data:`AGENT_METHODS`), or a function whose return annotation is such a class.

    Raises:
        ValueError: one line saying what ``spec`` names instead (a built-in function such as
            ``os:system``, a class without ``act``, a module, ...).
    """
    return _check_factory(obj, spec, AGENT_METHODS, "an agent class")


def lookup_estimator(spec: str) -> Callable[..., Any]:
    """The covariance-estimator class named by ``"package.module:Class"`` (a ``task:
    matrix-approx`` config's own sketch), checked as :func:`check_agent_factory` checks agents:
    a class with ``update`` and ``covariance``, called later as ``Class(d, **args)``."""
    try:
        return _check_factory(
            load_object(spec), spec, ESTIMATOR_METHODS, "a covariance estimator class"
        )
    except ValueError as exc:
        raise ValueError(f"estimator: {exc}") from None


@dataclass(frozen=True)
class RunMemory:
    """The estimated peak bytes of one run: its env's, its agent's (``None``: the agent's class
    cannot say) and its records' (every round is kept:
    :func:`~linbandit_gym.envs.memory.records_bytes` of the env's ``rounds``, for ``members`` runs
    held together), and the arm sets' shape
    ``(n_arms, d)`` the agent's estimate is for.

    ``agent_first_bytes``: what the agent allocates before the stream fills it, where that is
    less than its peak (Dyadic Block Sketching: one block at first; the exact phase's d x d
    inverse only once its blocks are full, which a short horizon never reaches); ``None``: the
    peak is allocated up front."""

    env_bytes: int
    agent_bytes: int | None
    n_arms: int
    d: int
    agent_first_bytes: int | None = None
    records_bytes: int = 0
    rounds: int | None = None
    members: int = 1

    @property
    def agent_grows(self) -> bool:
        return self.agent_first_bytes is not None

    @property
    def total(self) -> int:
        return self.env_bytes + (self.agent_bytes or 0) + self.records_bytes

    @property
    def agent_up_front(self) -> int | None:
        """What the agent allocates whatever it learns: its first allocation (``None``: unknown)."""
        return self.agent_first_bytes if self.agent_grows else self.agent_bytes

    @property
    def up_front(self) -> int:
        """What is allocated whatever the agent learns: the env's, the agent's first allocation
        and the records (sized by the horizon before the first round)."""
        return self.env_bytes + (self.agent_up_front or 0) + self.records_bytes


def estimate_run_bytes(
    entry: AgentEntry,
    agent_args: dict[str, Any],
    env_id: str,
    env_args: dict[str, Any],
    members: int = 1,
) -> RunMemory:
    """The peak memory of playing ``entry``'s agent (built with ``agent_args``) on ``env_id``
    (built with ``env_args``), estimated from the arguments alone: the env's
    :func:`~linbandit_gym.registration.env_memory_estimate`, the agent class's
    ``estimate_memory_bytes(d, n_arms, **args)`` on the env's arm sets (on the agent's own
    ``d`` where it is given one), and the records of ``members`` runs of the env's horizon held
    together (:func:`~linbandit_gym.envs.memory.records_bytes`). Nothing is built.

    Raises the env's ``ValueError`` for a bad size argument
    (:class:`~linbandit_gym.envs.EnvTooLargeError` for an env that cannot fit); an agent class
    whose estimate fails for these arguments counts as unknown (``agent_bytes=None``): the agent's
    own checks will name the argument.
    """
    from .envs.memory import records_bytes
    from .registration import env_memory_estimate

    estimate = env_memory_estimate(env_id, **env_args)
    rounds = estimate.rounds
    records = {
        "records_bytes": 0 if rounds is None else records_bytes(rounds, members),
        "rounds": rounds,
        "members": members,
    }
    if estimate.obs_shape is None:
        return RunMemory(estimate.nbytes, None, 0, 0, **records)
    n_arms, d = (int(n) for n in estimate.obs_shape)
    given = agent_args.get("d")  # an agent given d= allocates for that d when it is built
    if isinstance(given, int) and not isinstance(given, bool) and given > 0:
        d = given
    args = {k: v for k, v in agent_args.items() if k != "d"}
    try:
        agent_bytes = entry.estimate_memory_bytes(d, n_arms, args)
        first = entry.estimate_initial_memory_bytes(d, n_arms, args)
    except (TypeError, ValueError, KeyError, OverflowError):
        agent_bytes = first = None
    agent_bytes = None if agent_bytes is None else int(agent_bytes)
    return RunMemory(estimate.nbytes, agent_bytes, n_arms, d, first, **records)


class RunTooLargeError(ValueError):
    """A run's agent, env and records together need more memory than is available (raised
    before building); ``cause`` is the part that holds most: ``"agent"``, ``"env"`` or
    ``"records"`` (then the horizon is what to lower)."""

    def __init__(self, message: str, cause: str = "agent"):
        super().__init__(message)
        self.cause = cause


def check_run_fits(
    entry: AgentEntry,
    agent_args: dict[str, Any],
    memory: RunMemory,
    env_name: str,
    limit: int | None = None,
) -> RunMemory:
    """``memory`` (from :func:`estimate_run_bytes`) if what it allocates up front fits in
    ``limit`` (default :func:`~linbandit_gym.envs.memory.memory_limit_bytes`), else
    :class:`RunTooLargeError` naming the agent's arguments, the env, the bytes of each and what
    to lower. (An agent whose peak is reached only as the stream fills it,
    :attr:`RunMemory.agent_grows`, is judged on its first allocation: a short horizon never
    reaches the peak.)"""
    import os

    from .envs.memory import MEMORY_LIMIT_ENV, format_bytes, memory_limit_bytes

    limit = memory_limit_bytes() if limit is None else limit
    if memory.up_front <= limit:
        return memory
    source = f"${MEMORY_LIMIT_ENV}" if os.environ.get(MEMORY_LIMIT_ENV) else "the memory available"
    given = ", ".join(f"{k}={v!r}" for k, v in agent_args.items()) or "default arguments"
    agent = memory.agent_up_front
    agent_part = "unknown" if agent is None else format_bytes(agent)
    parts = (("records", memory.records_bytes), ("env", memory.env_bytes), ("agent", agent or 0))
    cause = max(parts, key=lambda part: part[1])[0]
    if cause == "records":  # the records hold most: the horizon
        per_round = format_bytes(memory.records_bytes // max(1, memory.rounds or 1))
        together = f" for {memory.members} runs held together" if memory.members > 1 else ""
        fix = (
            f"lower horizon (horizon={memory.rounds}: the records keep every round, {per_round} "
            f"a round{together})"
        )
    else:
        fix = "lower the agent's sizes (sketch_size, l0, d) or the env's d, n_arms"
    raise RunTooLargeError(
        f"agent {entry.label!r} ({given}) on {env_name} (d={memory.d}, n_arms={memory.n_arms}) "
        f"needs about {format_bytes(memory.up_front)} (agent {agent_part}, env "
        f"{format_bytes(memory.env_bytes)}, records {format_bytes(memory.records_bytes)}), more "
        f"than {source} ({format_bytes(limit)}): {fix}",
        cause,
    )


def resolve_agent(name: str, kwargs: dict[str, Any] | None = None) -> Any:
    """Build an agent from a registered name (case-insensitive) or ``"package.module:Class"``."""
    return lookup_agent(name).build(kwargs)


#: Constructor keywords that place or size an agent (where it runs, its dimension, its seed, its
#: batch) rather than choose it: not part of a label.
PLACEMENT_ARGS = frozenset({"d", "device", "dtype", "seed", "batch_size"})


def agent_arguments(agent: Any) -> dict[str, Any]:
    """The constructor keywords that build an agent like ``agent``, read back from it: for ours,
    :func:`agents.batched.constructor_args`; for any other class, the attributes named as its
    constructor's parameters (the scikit-learn convention), where it has them. Placement
    (:data:`PLACEMENT_ARGS`) is left out.

    >>> from agents import SOFUL
    >>> agent_arguments(SOFUL(beta=0.1, sketch_size=10))["sketch_size"]
    10
    """
    from agents.batched import constructor_args, supports_batched

    cls = type(agent)
    if supports_batched(agent):
        args = constructor_args(agent)
    else:
        try:
            names = [
                name
                for name, p in inspect.signature(cls).parameters.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            ]
        except (TypeError, ValueError):
            names = []
        args = {}
        for name in names:
            try:
                args[name] = getattr(agent, name)
            except Exception:  # noqa: BLE001  (no such attribute, or a property that needs state)
                continue
    return {k: v for k, v in args.items() if k not in PLACEMENT_ARGS}


def object_label(agent: Any, name: str | None = None) -> str:
    """The label of an agent object, the one rule of :func:`linbandit_gym.run` and ``linbandit
    run``: its name and its constructor arguments that differ from that name's defaults,
    ``sketch_size`` written ``l`` (:func:`~linbandit_gym.specs.args_label`). The name is
    ``name`` where given (``linbandit run --agent mymodule:MyAgent`` gives the one typed), else
    the agent's own ``name`` (``DBSLinUCB(sketch="rfd")`` calls itself ``DBSLinUCB-RFD``, whose
    default sketch is ``"rfd"``), else its registered name, else its class's.

    >>> from agents import DBSLinUCB, OFUL, SOFUL
    >>> object_label(SOFUL(sketch_size=10)), object_label(OFUL(lam=1.0, beta=0.1))
    ('SOFUL l=10', 'OFUL beta=0.1')
    >>> object_label(DBSLinUCB(sketch="rfd", l0=20))
    'DBSLinUCB-RFD l0=20'
    """
    from agents import AGENTS

    cls = type(agent)
    own = getattr(agent, "name", None)
    if name is None:
        name = (
            own
            if isinstance(own, str) and own
            else next((key for key, known in AGENTS.items() if known is cls), cls.__name__)
        )
    return args_label(name, non_default_args(AGENTS.get(name, cls), agent_arguments(agent)))


def registered_name(cls: type) -> str:
    """The registered name of the agent class ``cls``, else its ``module:Class``."""
    from agents import AGENTS

    return next(
        (name for name, registered in AGENTS.items() if registered is cls),
        f"{cls.__module__}:{cls.__qualname__}",
    )
