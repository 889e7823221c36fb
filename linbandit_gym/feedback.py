"""When the agent learns from a round: delayed and batched feedback.

In the plain loop the agent learns from round t (``update(obs_t, a_t, r_t)``) right after it
acted in round t. A :class:`FeedbackSchedule` holds that feedback back:

* ``feedback_delay = k`` (an int >= 0): round t's feedback arrives k rounds late, after the
  agent's ``act`` of round t + k (and before its ``act`` of round t + k + 1);
* ``update_every = n`` (an int >= 1): the agent learns only at the end of rounds n, 2n, 3n, ...,
  from every round whose feedback has arrived by then, in the order the rounds were played (the
  batched bandits of Perchet et al. (2016), with a fixed grid).

Together: round t's ``update`` is called in round ``n * ceil((t + k) / n)``, after that round's
``act`` and env step. ``k = 0, n = 1`` is the plain loop.

At the episode's end (the env ends it, or ``max_rounds``) the feedback still held -- the last k
rounds', and those waiting for the next multiple of n -- is given to the agent, in order, in the
last round. No ``act`` follows, so this changes no action and no regret of the episode; what it
keeps is that the agent learns from every round exactly once whatever the schedule: it ends the
episode with as many updates as the plain loop, its ``memory_bytes`` and ``sketch_size`` in the
last record are those of an agent that has seen every round, and the cumulative ``agent_time``
at the last round covers T acts and T updates for every setting, so that the time per round of
runs under different schedules compares the same work (dropping the held feedback would make a
delayed run look cheaper by k updates).

What the agent is handed is what the env returned: the same observation object ``act`` saw in
round t (not a copy), the action as ``act`` returned it and the reward as the env returned it.
An env must not overwrite an arm set it returned -- which the plain loop already needs for one
step, between ``act`` and ``update`` -- for the k + n - 1 rounds the loop may hold it.

Layer: the evaluation loop (:mod:`linbandit_gym.loop` plays by a schedule).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["IMMEDIATE_FEEDBACK", "FeedbackSchedule", "HeldFeedback", "schedule_problems"]


def schedule_problems(
    feedback_delay: Any,
    update_every: Any,
    names: tuple[str, str] = ("feedback_delay", "update_every"),
) -> list[str]:
    """What is wrong with ``feedback_delay`` and ``update_every`` (an empty list: nothing), one
    line per value, each under its name in ``names`` (e.g. the command line's flags)."""
    problems = []
    for value, name, low, meaning in (
        (feedback_delay, names[0], 0, "rounds between a round's act and its update; 0: at once"),
        (update_every, names[1], 1, "updates are applied every n rounds; 1: every round"),
    ):
        integral = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
        if not integral or value < low:
            problems.append(f"{name} must be an int >= {low} ({meaning}), got {value!r}")
    return problems


@dataclasses.dataclass(frozen=True)
class FeedbackSchedule:
    """When the agent learns from each round (see the module docstring): round t's ``update``
    is called in round ``update_every * ceil((t + feedback_delay) / update_every)``, and at the
    episode's end for what is still held.

    Raises ``ValueError`` for a value that is not an int >= 0 (``feedback_delay``) or >= 1
    (``update_every``), saying what it means.

    >>> FeedbackSchedule(feedback_delay=2, update_every=3).updates_by_round(8).tolist()
    [0, 0, 1, 1, 1, 4, 4, 8]
    """

    feedback_delay: int = 0
    update_every: int = 1

    def __post_init__(self) -> None:
        problems = schedule_problems(self.feedback_delay, self.update_every)
        if problems:
            raise ValueError("; ".join(problems))
        object.__setattr__(self, "feedback_delay", int(self.feedback_delay))  # numpy ints, ...
        object.__setattr__(self, "update_every", int(self.update_every))

    @property
    def immediate(self) -> bool:
        """Whether this is the plain loop: every round's update right after its act."""
        return self.feedback_delay == 0 and self.update_every == 1

    def config_entries(self) -> dict[str, int]:
        """The settings that differ from the plain loop, as a run's config holds them (nothing
        for the plain loop, so that its runs keep the ids they had before schedules existed)."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if getattr(self, field.name) != field.default
        }

    @classmethod
    def of_config(cls, config: dict) -> FeedbackSchedule:
        """The schedule a run's config says (absent keys: the plain loop)."""
        return cls(config.get("feedback_delay", 0), config.get("update_every", 1))

    def updates_by_round(self, rounds: int) -> np.ndarray:
        """``(rounds,)``: how many rounds' feedback the agent has learnt from at the end of each
        round of an episode of ``rounds`` rounds: ``max(0, n floor(s / n) - k)`` after round s,
        and all of them after the last."""
        s = np.arange(1, rounds + 1, dtype=np.int64)
        seen = np.maximum(0, self.update_every * (s // self.update_every) - self.feedback_delay)
        if rounds:
            seen[-1] = rounds
        return seen


#: The plain loop's schedule: every round's update right after its act.
IMMEDIATE_FEEDBACK = FeedbackSchedule()


class HeldFeedback:
    """The feedback of one episode's rounds that the agent has not learnt from yet.

    :meth:`receive` takes the place of the agent's ``update`` in the loop (same arguments, one
    call per round): it holds the round's feedback and calls ``update`` on what is due, in the
    order the rounds were played; :meth:`flush` gives the agent everything still held (the
    episode's end). Holds at most ``feedback_delay + update_every - 1`` rounds between calls.
    """

    def __init__(self, schedule: FeedbackSchedule, update: Callable[[Any, Any, Any], Any]):
        self.update = update
        self.delay, self.every = schedule.feedback_delay, schedule.update_every
        self.held: deque[tuple[Any, Any, Any]] = deque()
        self.rounds = 0  # rounds received

    def receive(self, obs: Any, actions: Any, rewards: Any) -> None:
        """Round ``s`` (the ``s``-th call) has been played: hold its feedback; at the end of a
        round ``s`` that is a multiple of ``update_every``, learn from the rounds
        ``<= s - feedback_delay``."""
        self.rounds += 1
        self.held.append((obs, actions, rewards))
        if self.rounds % self.every:
            return
        # the held rounds are the last len(held); those older than the delay are due
        for _ in range(len(self.held) - self.delay):
            self.update(*self.held.popleft())

    def flush(self) -> None:
        """The episode has ended: learn from every round still held, in order."""
        while self.held:
            self.update(*self.held.popleft())
