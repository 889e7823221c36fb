"""Where a sweep's CPU time goes: in the agents' ``act``/``update``, or around them.

Every unit of a sweep (a run, a batch, a successive-halving bracket) measures, in the process
that executes it, its own CPU time (``time.process_time``: every thread of the process) and
reports it with its results (:func:`unit_cost`), next to the agents' CPU time that its
records hold (``agent_time``, summed over every play, repeats of a timing run included). The
driver adds what it spends itself (planning, saving runs) and, for local worker processes,
what they spent outside the units (starting: importing torch, building the first env). A
:class:`CpuLedger` holds the sums; :meth:`CpuLedger.lines` says them in words, with the share
outside ``act``/``update``: env steps, the rows of the records, building envs and agents,
timing runs played again, worker start-up, saving, figures.
"""

from __future__ import annotations

import resource
import textwrap
import time
from dataclasses import dataclass, fields
from typing import Self

__all__ = ["CpuLedger", "children_cpu", "unit_cost"]


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's children that ended and were waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def unit_cost(
    cpu_s: float, agent_cpu_s: float, *, timing_cpu_s: float = 0.0, repeat_cpu_s: float = 0.0
) -> dict:
    """The cost record a unit sends back with the result of one of its runs (plain floats: it
    crosses process and Ray boundaries): the run's share of the unit's CPU seconds, the CPU
    seconds its agent spent in ``act``/``update`` over every play, and, for a timing run, its
    whole CPU time and the part spent playing it again (``timing_repeats`` > 1)."""
    return {
        "cpu_s": float(cpu_s),
        "agent_cpu_s": float(agent_cpu_s),
        "timing_cpu_s": float(timing_cpu_s),
        "repeat_cpu_s": float(repeat_cpu_s),
    }


@dataclass
class CpuLedger:
    """CPU seconds of one sweep (or tuning, or reproduction), by where they went.

    ``agents``: the agents' ``act``/``update``. ``rounds``: the rest of the units' time: env
    steps, writing the rows of the records and their frames, building envs and agents, summaries.
    ``timing_runs``: the CPU of the timing runs (runs played alone so that a configuration has a
    time measured alone), agents' time included; ``timing_repeats`` of it went to playing them
    again. ``workers``: worker processes outside their units (start-up). ``driver``: this
    process outside the units (planning, saving runs). ``figures``: plots, tables and report.
    """

    agents: float = 0.0
    rounds: float = 0.0
    timing_runs: float = 0.0
    timing_repeats: float = 0.0
    workers: float = 0.0
    driver: float = 0.0
    figures: float = 0.0

    def add_run(self, cost: dict | None) -> None:
        """Count the cost record of one run (:func:`unit_cost`; ``None``: not measured)."""
        if not cost:
            return
        agent = min(
            cost["agent_cpu_s"], cost["cpu_s"]
        )  # both clocks, read apart: never more than the whole
        self.agents += agent
        self.rounds += cost["cpu_s"] - agent
        self.timing_runs += cost.get("timing_cpu_s", 0.0)
        self.timing_repeats += cost.get("repeat_cpu_s", 0.0)

    def __iadd__(self, other: CpuLedger) -> Self:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    @property
    def total(self) -> float:
        """Every CPU second counted (``timing_runs`` is a part of ``agents`` + ``rounds``)."""
        return self.agents + self.rounds + self.workers + self.driver + self.figures

    @property
    def outside_agents(self) -> float:
        """CPU seconds outside the agents' ``act``/``update``."""
        return self.total - self.agents

    def share_outside(self) -> float:
        """The share of :attr:`total` outside the agents (0 when nothing was counted)."""
        return self.outside_agents / self.total if self.total > 0 else 0.0

    def lines(self, what: str = "sweep") -> list[str]:
        """The ledger in words: the total, the agents' share and what the rest went to.

        >>> ledger = CpuLedger(agents=80.0, rounds=12.0, workers=5.0, driver=3.0, timing_runs=9.0)
        >>> print("\\n".join(ledger.lines()))
        CPU time of the sweep: 100.0 s; in the agents' act/update 80.0 s (80%), outside them
          20.0 s (20%): env steps, records and building the runs 12.0 s, worker start-up 5.0 s,
          this process (planning, saving runs) 3.0 s; timing runs (played alone, agents included)
          9.0 s
        """
        total = self.total
        if total <= 0:
            return [f"CPU time of the {what}: nothing run"]
        parts = [
            ("env steps, records and building the runs", self.rounds),
            ("worker start-up", self.workers),
            ("this process (planning, saving runs)", self.driver),
            ("figures and report", self.figures),
        ]
        rest = ", ".join(f"{name} {_seconds(value)}" for name, value in parts if value >= 0.05)
        text = (
            f"CPU time of the {what}: {_seconds(total)}; in the agents' act/update "
            f"{_seconds(self.agents)} ({self.agents / total:.0%}), outside them "
            f"{_seconds(self.outside_agents)} ({self.share_outside():.0%}): {rest}"
        )
        if self.timing_runs > 0:
            again = self.timing_repeats
            text += f"; timing runs (played alone, agents included) {_seconds(self.timing_runs)}"
            text += f", {_seconds(again)} of it playing them again" if again >= 0.05 else ""
        wrapped = textwrap.wrap(text, width=90, subsequent_indent="  ")
        return [line.replace(_KEEP, " ") for line in wrapped]


#: A space no line is broken at (between a number and its unit), a plain space once wrapped.
_KEEP = "\u00a0"


def _seconds(value: float) -> str:
    return f"{value:.1f}{_KEEP}s"


class Stopwatch:
    """This process's CPU seconds since it was made, less what was :meth:`exclude`-d (units run
    here, whose cost they report themselves)."""

    def __init__(self) -> None:
        self.start = time.process_time()
        self.excluded = 0.0

    def exclude(self, seconds: float) -> None:
        self.excluded += seconds

    def elapsed(self) -> float:
        return max(0.0, time.process_time() - self.start - self.excluded)
