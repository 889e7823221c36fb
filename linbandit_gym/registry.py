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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .specs import did_you_mean, load_object

__all__ = ["AgentEntry", "agent_names", "lookup_agent", "registered_name", "resolve_agent"]


@dataclass(frozen=True)
class AgentEntry:
    """A resolved agent name: ``label``, the registered spelling (or the ``module:Class`` given),
    which run labels start from, and ``factory``, the class (or callable) that builds the agent."""

    label: str
    factory: Callable[..., Any]

    def build(self, args: dict[str, Any] | None = None) -> Any:
        """The agent ``factory(**args)``; an argument it does not take is a ``ValueError`` naming the agent."""
        try:
            return self.factory(**(args or {}))
        except TypeError as exc:
            raise ValueError(f"bad arguments for agent {self.label!r}: {exc}") from exc

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
