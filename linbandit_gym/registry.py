"""Agent names users type, resolved to the classes that build them.

One resolution for ``linbandit run --agent``, the demo, sweep configs (validation,
``--dry-run``, the runs) and the batch planner: a registered name, case-insensitive
(``"SOFUL"``, ``"DBSLinUCB-FD"``: :data:`agents.AGENTS`), or ``"package.module:Class"``, a
user's agent found in the current directory first, as ``python -m`` finds modules.

What a caller needs to know before building an agent -- whether agents of its class batch,
the arguments batch members may differ in, an estimate of its memory -- is asked of the class
through :class:`AgentEntry`, so that a user's class without these answers gets those of
:class:`agents.Agent`: not batched, no estimate. (``agents``, and with it torch, is imported on
first use: ``linbandit --help`` or ``linbandit plot`` need neither.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .arguments import ArgumentProblem, Arguments, arguments_of, describe_arguments, format_problems, rst_to_text
from .envs.names import closest_name, name_key
from .registration import ENV_IDS, env_description
from .specs import did_you_mean, env_arguments, load_object

__all__ = ["AgentEntry", "agent_names", "describe", "lookup_agent", "registered_name", "resolve_agent"]


@dataclass(frozen=True)
class AgentEntry:
    """A resolved agent name: ``label``, the registered spelling (or the ``module:Class`` given),
    which run labels start from, and ``factory``, the class (or callable) that builds the agent."""

    label: str
    factory: Callable[..., Any]

    def arguments(self) -> Arguments:
        """The constructor's arguments (names, type hints, defaults, documented meanings),
        named after the agent as the user typed it (:func:`linbandit_gym.arguments.arguments_of`)."""
        return arguments_of(self.factory, self.label)

    def argument_problems(self, args: dict[str, Any]) -> list[ArgumentProblem]:
        """Every problem of ``args`` that the signature shows, each naming its argument: names
        the agent does not take (with the closest one) and values that do not fit their type
        hint (a per-member argument may be a list of such values). Nothing is built."""
        return self.arguments().problems(args, sequences=self.per_member_args())

    def value_problem(self, args: dict[str, Any]) -> str | None:
        """What the agent's own checks say of ``args`` (ranges, combinations), else None: the
        agent is built (cheap: the state is allocated when the dimension is known) and dropped."""
        try:
            self.factory(**args)
        except (TypeError, ValueError) as exc:
            return f"{self.label}: {exc}"
        return None

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
        where = f"{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', type(factory).__name__)}"
        lines = [f"{self.label}  (agent {where})", _summary_line(factory)]
        per_member = self.per_member_args()
        if per_member:
            lines.append(f"batched (batch_size=B): {', '.join(per_member)} may differ between the B members")
        return "\n".join([*filter(None, lines), "", "arguments:", *describe_arguments(self.arguments())])

    def build(self, args: dict[str, Any] | None = None) -> Any:
        """The agent ``factory(**args)``; an argument it does not take is a ``ValueError`` naming
        the agent as the user typed it, the closest valid name and the valid arguments."""
        args = dict(args or {})
        unknown = [p for p in self.argument_problems(args) if p.unknown]
        if unknown:
            raise ValueError("\n".join(format_problems(unknown, self.arguments())))
        try:
            return self.factory(**args)
        except TypeError as exc:  # e.g. a required argument of a user's class: no raw __init__() text
            raise ValueError(f"bad arguments for agent {self.label!r}: {_without_qualname(exc)}") from exc

    def _ask(self, question: str) -> Callable[..., Any]:
        """The class's own answer to ``question`` (a classmethod of :class:`agents.Agent`), or
        the base class's for an agent that does not subclass it."""
        from agents import Agent

        method = getattr(self.factory, question, None)
        return method if callable(method) else getattr(Agent, question)

    def batchable(self) -> bool:
        """Whether agents of this class advance together as the members of one batched agent."""
        return bool(self._ask("batchable")())

    def per_member_args(self) -> tuple[str, ...]:
        """The arguments in which the members of one batched agent of this class may differ."""
        return tuple(getattr(self.factory, "per_member_args", ()))

    def estimate_memory_bytes(self, d: int, n_arms: int, args: dict[str, Any]) -> int | None:
        """The class's estimate of one agent's peak memory for arm sets ``(n_arms, d)`` (``None``: unknown)."""
        return self._ask("estimate_memory_bytes")(d, n_arms, **args)


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
        lines = [f"{env_id}  (env {ENV_IDS[env_id]})", env_description(env_id), "", "arguments:",
                 *describe_arguments(env_arguments(env_id))]
        return "\n".join(lines)
    from agents import AGENTS

    agents = {name_key(agent): agent for agent in AGENTS}
    if ":" in name or name_key(name) in agents:
        return lookup_agent(name if ":" in name else agents[name_key(name)]).describe()
    known = [*ENV_IDS, *sorted(AGENTS)]
    close = closest_name(name, known)
    hint = f" (did you mean {close!r}?)" if close else ""
    raise ValueError(f"{name!r} is no env id nor agent name{hint}; `linbandit list` shows them all "
                     "(an agent of your own: package.module:Class)")


def agent_names() -> list[str]:
    """The registered agent names, sorted."""
    from agents import AGENTS

    return sorted(AGENTS)


def lookup_agent(name: str) -> AgentEntry:
    """The :class:`AgentEntry` of a registered name (case-insensitive) or ``"package.module:Class"``.

    Raises:
        ValueError: an unknown name (with the closest registered one and the list), or a
            ``module:Class`` that cannot be imported.
    """
    from agents import AGENTS

    if not isinstance(name, str) or not name:
        raise ValueError(f"expected an agent name (see `linbandit list`) or module:Class, got {name!r}")
    if ":" in name:
        try:
            return AgentEntry(name, load_object(name))
        except ValueError as exc:
            raise ValueError(f"agent: {exc}") from None
    by_lower = {key.lower(): key for key in AGENTS}
    if name.lower() not in by_lower:
        raise ValueError(f"unknown agent {name!r}{did_you_mean(name, AGENTS)}; known: {', '.join(sorted(AGENTS))} "
                         "(or give package.module:Class)")
    key = by_lower[name.lower()]
    return AgentEntry(key, AGENTS[key])


def resolve_agent(name: str, kwargs: dict[str, Any] | None = None) -> Any:
    """Build an agent from a registered name (case-insensitive) or ``"package.module:Class"``."""
    return lookup_agent(name).build(kwargs)


def registered_name(cls: type) -> str:
    """The registered name of the agent class ``cls``, else its ``module:Class``."""
    from agents import AGENTS

    return next((name for name, registered in AGENTS.items() if registered is cls),
                f"{cls.__module__}:{cls.__qualname__}")
