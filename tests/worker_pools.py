"""Sweeps long enough to start worker processes by the planner's own rule, for the tests of the
worker machinery that run a command in a subprocess (where a start-up cost patched in the test's
process does not reach): the rule is :func:`linbandit_gym.experiments.backends.worker_count` on
:func:`linbandit_gym.experiments.packing.cpu_seconds`."""

from __future__ import annotations

from linbandit_gym.experiments.backends import worker_count
from linbandit_gym.experiments.packing import ROUND_CPU_S


def horizon_for_workers(runs: int, workers: int = 2) -> int:
    """The least power of two at which ``runs`` runs of a small-state agent (a state of at most
    ``SMALL_STATE``: a round estimated at ``ROUND_CPU_S``), each a unit of its own, start
    ``workers`` worker processes."""
    horizon = 1
    while worker_count([horizon * ROUND_CPU_S] * runs, workers) < workers:
        horizon *= 2
    return horizon
