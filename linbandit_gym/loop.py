"""The evaluation loop: the one place where envs and agents meet.

:func:`play` plays the rounds of a vector of B (env member, agent member) pairs and writes one
record per member and round into preallocated columns (:class:`RoundRecords`). A single run is
a vector of one: the env itself (:class:`OneEnv`) and the agent itself, whose ``act`` returns
an arm index; B > 1 members are the members of a native vector env
(:class:`VectorEnvMembers`, over :meth:`~linbandit_gym.vector.LinBanditVectorEnv.step_players`)
and one batched agent (:mod:`agents.batched`), whose ``act`` returns B arm indices. Only the
setting-up differs (:func:`single_members`, :func:`batch_members`); every round of every path
-- :func:`linbandit_gym.run`, batched runs, sweeps, ``play_members`` -- goes through the same
loop body, so their records agree column for column. A
:class:`~linbandit_gym.feedback.FeedbackSchedule` says when the agent learns from each round
(delayed and batched feedback); the plain loop learns from round t right after acting in it.

Timing: the CPU clock (a system call, the loop's largest cost) and the wall clock are read
once at each boundary of a round's calls -- after ``act``, after the env's step (with the
round's records written), after ``update`` -- and the end of one round is the start of the
next; only an agent whose state is read after the round (``memory_bytes``, ``sketch_size``)
gets a fresh start, so that reading its state is not counted as its time. With B members, the
times are the batch's and each member's record holds a 1/B share of them. Under a feedback
schedule a round's agent time is its ``act`` and the updates the schedule calls in that round
(none, one, or several: those due, and at the episode's end everything still held), so the
cumulative time at the last round covers every act and every update, as in the plain loop.

Layer: the evaluation loop (above the envs, the agents and the registry; below the
experiments and the command line).
"""

from __future__ import annotations

import itertools
import numbers
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

from linbandit_host.seeds import SEED_LIMIT
from linbandit_host.seeds import check_seeds as check_seed_list

from .envs.memory import check_records_fit
from .feedback import IMMEDIATE_FEEDBACK, FeedbackSchedule, HeldFeedback
from .registration import register_envs

__all__ = [
    "RECORD_COLUMNS",
    "SEED_LIMIT",
    "TIMING_COLUMNS",
    "Members",
    "OneEnv",
    "RoundRecords",
    "VectorEnvMembers",
    "agent_label",
    "batch_members",
    "check_seeds",
    "env_shape",
    "make_env",
    "play",
    "play_in_stages",
    "records_frame",
    "single_members",
]

#: Columns every record has, in order. Envs may add scalar ``info`` keys (e.g. the
#: best-arm-identification ``recommendation``/``correct``/``n_pulls``) as further columns.
#: ``time_shared_by`` says how the times were measured: 1, alone; B, each time is a 1/B share of
#: the time of a batch of B members advanced together. ``exact_mode`` is 1 after a round where a
#: sketched agent updates exactly (DBSLinUCB past its cap: OFUL from then on), 0 while it
#: sketches, NaN for an agent that does not say (no ``exact_mode`` attribute).
#: ``feedback_delay`` and ``update_every`` say when the agent learnt from each round
#: (:class:`~linbandit_gym.feedback.FeedbackSchedule`; 0 and 1: right after acting in it).
RECORD_COLUMNS = [
    "agent",
    "env",
    "seed",
    "t",
    "action",
    "reward",
    "expected_reward",
    "best_expected_reward",
    "regret",
    "cumulative_regret",
    "agent_time",
    "agent_wall_time",
    "wall_time",
    "memory_bytes",
    "sketch_size",
    "exact_mode",
    "time_shared_by",
    "feedback_delay",
    "update_every",
]

#: The columns that depend on how the rounds were timed; the rest of a run's records is the same
#: whether it was played alone or in a batch.
TIMING_COLUMNS = ["agent_time", "agent_wall_time", "wall_time", "time_shared_by"]


def make_env(env: str | gym.Env | Callable[[], gym.Env], **env_kwargs: Any) -> gym.Env:
    """An env from an id (``gym.make(id, **env_kwargs)``), an instance, or a factory."""
    if isinstance(env, str):
        register_envs()  # idempotent: the ids are there even if the registry was cleared
        return gym.make(env, **env_kwargs)
    if isinstance(env, gym.Env):
        if env_kwargs:
            raise ValueError(
                "env_kwargs can only be given with an env id, not with an env instance"
            )
        return env
    if callable(env):
        return env(**env_kwargs)
    raise TypeError(
        f"env must be an env id, a gymnasium.Env or a factory, got {type(env).__name__}"
    )


def env_shape(env_id: str, env_kwargs: dict[str, Any], seed: int) -> tuple[int, int]:
    """``(K, d)`` of the arm sets of the env ``env_id`` with ``env_kwargs`` (built once, then
    closed)."""
    instance = make_env(env_id, **env_kwargs)
    try:
        instance.reset(seed=seed)
        n_arms, d = instance.observation_space.shape[-2:]
    finally:
        instance.close()
    return int(n_arms), int(d)


def check_seeds(
    seeds: int | Iterable[int], max_rounds: int | None = None, *, distinct: bool = True
) -> list[int]:
    """``seeds`` as a list, by the one seed rule (:func:`linbandit_host.seeds.check_seeds`: an
    int ``n`` means seeds ``0..n-1``, a list holds distinct seeds in ``[0, 2**63)``; ``distinct``
    False lets the members of a batch share one); checks ``max_rounds`` too."""
    seeds = check_seed_list(seeds, distinct=distinct)
    if max_rounds is not None and max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
    return seeds


def agent_label(agent: Any, given: str | None) -> str:
    """``given``, else the label ``linbandit run`` would give the agent: its name and non-default
    arguments (``SOFUL l=10``; :func:`linbandit_gym.registry.object_label`)."""
    if given is not None:
        return given
    from .registry import object_label

    return object_label(agent)


# -- the env side of a vector of members ------------------------------------------------------

#: The ``info`` keys every linbandit env reports on a step; other scalar keys become columns.
STANDARD_INFO = frozenset({"expected_reward", "best_expected_reward", "regret", "best_arm"})
_NAN = float("nan")


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (numbers.Number, np.bool_, bool, np.number, str))


def _only_forwards(wrapper: Any) -> bool:
    """Whether ``wrapper`` is one of the wrappers ``gym.make`` puts around every env, in the
    state where its ``step`` does nothing but call the env inside: ``OrderEnforcing`` once reset
    was called, ``PassiveEnvChecker`` once it checked the first step and the second's data."""
    kind = type(wrapper)
    if kind is OrderEnforcing:
        return getattr(wrapper, "_has_reset", False) is True
    if kind is PassiveEnvChecker:
        return (
            getattr(wrapper, "checked_step", False) is True
            and getattr(wrapper, "checked_data_reuse", False) is True
        )
    return False


def forwarded_step(env: gym.Env) -> Callable[[Any], tuple]:
    """``env.step``, or the ``step`` of the env inside it when every wrapper in between only
    forwards the call now (:func:`_only_forwards`): the same results, without a Python call per
    wrapper and round. Any other wrapper (a user's) is stepped as it is."""
    while _only_forwards(env):
        env = env.env
    return env.step


class OneEnv:
    """A Gymnasium env as a vector of one member: any env following the linbandit contract,
    wrapped or not, ours or a user's. ``info`` keys beyond the standard four with scalar values
    (best-arm identification's ``recommendation``, ``correct``, ``n_pulls``) are kept by round
    in :attr:`extras`."""

    size = 1
    scalar = True  # a round's values are scalars (a vector env's are arrays, even of one member)

    def __init__(self, env: gym.Env):
        self.env = env
        self._step = env.step
        horizon = getattr(env.unwrapped, "horizon", None)
        self.horizon = (
            int(horizon) if isinstance(horizon, numbers.Integral) and horizon > 0 else None
        )
        self.extras: dict[str, dict[int, Any]] = {}

    def reset(self, seeds: Sequence[int]) -> Any:
        obs, _ = self.env.reset(seed=seeds[0])
        self._step = self.env.step  # gymnasium's checks see the first rounds (see step)
        return obs

    def step(self, action: Any, t: int) -> tuple:
        """``(next obs, reward, expected reward, best expected reward, regret, action as recorded,
        ended)``. From round ``t = 2`` on, the wrappers that only forward are skipped
        (:func:`forwarded_step`)."""
        next_obs, reward, terminated, truncated, info = self._step(action)
        if t == 1:  # the env checker has checked the first two steps: it forwards from now on
            self._step = forwarded_step(self.env)
        if not info.keys() <= STANDARD_INFO:
            for key, value in info.items():
                if key not in STANDARD_INFO and _is_scalar(value):
                    self.extras.setdefault(key, {})[t] = value
        get = info.get
        return (
            next_obs,
            float(reward),
            float(get("expected_reward", _NAN)),
            float(get("best_expected_reward", _NAN)),
            float(get("regret", _NAN)),
            int(action),
            terminated or truncated,
        )


class VectorEnvMembers:
    """The members of a native vector env (:class:`~linbandit_gym.vector.LinBanditVectorEnv`)
    played by B players: player i plays env member ``members[i]``. Players that share a seed
    share a member (its arm sets are drawn once and each player gets what its own env would
    give it, see :meth:`~linbandit_gym.vector.LinBanditVectorEnv.step_players`)."""

    scalar = False

    def __init__(self, venv: Any, seeds: Sequence[int]):
        self.venv = venv
        self.extras: dict[
            str, dict[int, Any]
        ] = {}  # the vector's info holds the standard keys only
        self.size = len(seeds)
        self.env_seeds = list(dict.fromkeys(seeds))  # one env member per distinct seed
        self.members = np.array([self.env_seeds.index(s) for s in seeds], dtype=np.int64)
        self.shared = len(self.env_seeds) < self.size  # else player i plays member i: no gather
        self.horizon = int(venv.unwrapped.horizon)
        self._step = venv.unwrapped.step_players

    def reset(self, seeds: Sequence[int]) -> Any:
        obs, _ = self.venv.reset(seed=self.env_seeds)
        return obs[self.members] if self.shared else obs

    def step(self, actions: Any, t: int) -> tuple:
        """As :meth:`OneEnv.step`, each entry an array over the B players."""
        obs, rewards, truncated, info = self._step(actions, self.members)
        ended = bool(truncated.any())
        if (
            ended and not truncated.all()
        ):  # every member has the same horizon; nothing else ends an episode here
            raise RuntimeError(
                "members of the vector env ended at different rounds; use run(..., batched=False)"
            )
        return (
            obs[self.members] if self.shared else obs,
            rewards,
            info["expected_reward"],
            info["best_expected_reward"],
            info["regret"],
            actions,
            ended,
        )


# -- a vector of (env member, agent member) pairs -----------------------------------------------


def _sketch_size(agent: Any) -> float:
    value = getattr(agent, "sketch_size", None)
    return float(value) if isinstance(value, (numbers.Real, np.number)) else _NAN


def _flag(value: Any) -> Any:
    """An agent's ``exact_mode`` (a bool, or one per member) as 1.0/0.0; NaN where it has none
    yet."""
    if value is None:
        return _NAN
    return np.asarray(value, dtype=np.float64) if np.ndim(value) else float(bool(value))


def _exact_reader(agent: Any) -> Callable[[], Any] | None:
    """What reads, after a round, whether the agent (each member) updates exactly; None where it
    does not say."""
    return (lambda: _flag(agent.exact_mode)) if hasattr(agent, "exact_mode") else None


class Members:
    """B (env member, agent member) pairs that play the same rounds, and what labels them.

    ``envs`` is the env side (:class:`OneEnv` or :class:`VectorEnvMembers`); ``agent`` the
    agent itself (B = 1) or one batched agent of B members; ``reset_agent(seeds)`` resets it;
    ``memory()``, ``sketch_size()`` and ``exact_mode()`` read, after a round, what each member
    holds and whether it updates exactly (``None``: the agent does not say, recorded as 0 bytes
    and NaN).
    """

    def __init__(
        self,
        envs: OneEnv | VectorEnvMembers,
        agent: Any,
        *,
        seeds: Sequence[int],
        agent_names: Sequence[str],
        env_names: Sequence[str],
        reset_agent: Callable[[list[int]], None],
        memory: Callable[[], Any] | None,
        sketch_size: Callable[[], Any] | None,
        exact_mode: Callable[[], Any] | None = None,
    ):
        if not (len(seeds) == len(agent_names) == len(env_names) == envs.size):
            raise ValueError(
                f"{envs.size} members need {envs.size} seeds, agent names and env names, got "
                f"{len(seeds)}, {len(agent_names)} and {len(env_names)}"
            )
        self.envs, self.agent, self.size = envs, agent, envs.size
        self.seeds = [int(s) for s in seeds]
        self.agent_names, self.env_names = list(agent_names), list(env_names)
        self.reset_agent, self.memory, self.sketch_size = reset_agent, memory, sketch_size
        self.exact_mode = exact_mode


def single_members(env: gym.Env, agent: Any, seed: int, agent_name: str, env_name: str) -> Members:
    """The vector of one that a single run is: ``env`` and ``agent`` themselves, seeded ``seed``."""
    reset = getattr(agent, "reset", None)
    memory = getattr(agent, "memory_bytes", None)
    return Members(
        OneEnv(env),
        agent,
        seeds=[seed],
        agent_names=[agent_name],
        env_names=[env_name],
        reset_agent=(lambda seeds: reset(seed=seeds[0]))
        if callable(reset)
        else (lambda seeds: None),
        memory=memory if callable(memory) else None,
        sketch_size=(lambda: _sketch_size(agent)) if hasattr(agent, "sketch_size") else None,
        exact_mode=_exact_reader(agent),
    )


def batch_members(
    venv: Any,
    agent: Any,
    seeds: Sequence[int],
    agent_names: Sequence[str],
    env_names: Sequence[str],
) -> Members:
    """B players of one batched ``agent`` (member i seeded ``seeds[i]``) on the native vector
    env ``venv`` (one env member per distinct seed). ``memory_bytes`` is per member what the
    single agent reports (the batch holds B times that, plus padding)."""

    def sketch_size():
        sizes = agent.sketch_size
        return _NAN if sizes is None else sizes

    return Members(
        VectorEnvMembers(venv, seeds),
        agent,
        seeds=seeds,
        agent_names=agent_names,
        env_names=env_names,
        reset_agent=lambda s: agent.reset(seed=list(s)),
        memory=agent.member_memory_bytes,
        sketch_size=sketch_size,
        exact_mode=_exact_reader(agent),
    )


# -- the records ---------------------------------------------------------------------------------


class RoundRecords:
    """Preallocated columns of the rounds of B members, filled in place by :func:`play`: per
    round and member the action, reward, expected and best expected reward, regret, memory,
    sketch size and exact mode (``(capacity,)`` arrays for a single env, whose values are
    scalars, ``(capacity, B)`` for the B members of a vector env, so that a round is one
    assignment either way), and per round the batch's agent CPU, agent wall and round wall
    seconds; ``feedback`` is the schedule the rounds were played by. ``cpu_time``: the CPU
    seconds of the rounds played, on the loop's clock (``act``, the env's step, ``update``,
    writing the row): with ``agent_time``, what a round spends outside the agent."""

    def __init__(
        self, members: Members, capacity: int, feedback: FeedbackSchedule = IMMEDIATE_FEEDBACK
    ):
        self.members = members
        self.feedback = feedback
        self.rounds = 0
        self.cpu_time = 0.0
        self._allocate(max(1, capacity))

    def _allocate(self, capacity: int) -> None:
        # the one size rule of records, before the first byte: horizon=10**10 is refused by name
        check_records_fit(capacity, self.members.size)
        self._allocate_columns(capacity)

    def _allocate_columns(self, capacity: int) -> None:
        shape = (capacity,) if self.members.envs.scalar else (capacity, self.members.size)
        self.action = np.zeros(shape, dtype=np.int64)
        self.reward, self.expected, self.best, self.regret = (np.zeros(shape) for _ in range(4))
        self.memory = np.zeros(shape, dtype=np.int64)
        self.sketch = np.full(shape, np.nan)
        self.exact = np.full(shape, np.nan)
        self.agent_time, self.agent_wall_time, self.wall_time = (
            np.zeros(capacity) for _ in range(3)
        )
        self.capacity = capacity

    def columns(self) -> tuple[np.ndarray, ...]:
        """The column arrays, in the order of :data:`_BUFFERS`."""
        return tuple(getattr(self, name) for name in _BUFFERS)

    def grow(self) -> None:
        """Twice the capacity, keeping what is written (an episode longer than expected)."""
        old = self.columns()
        self._allocate(2 * self.capacity)
        for new, values in zip(self.columns(), old):
            new[: len(values)] = values

    def frame(self) -> pd.DataFrame:
        """The records as :data:`RECORD_COLUMNS`: member by member, round by round, the times
        cumulated (with B members, each member's share, 1/B, of the batch's: ``time_shared_by``)."""
        T, B, members = self.rounds, self.members.size, self.members

        def per_member(values: np.ndarray) -> np.ndarray:  # (T, B) -> member-major flat
            return values[:T] if values.ndim == 1 else values[:T].T.reshape(-1)

        def shared(values: np.ndarray) -> np.ndarray:
            cumulative = np.cumsum(values[:T])
            return np.tile(cumulative / B, B) if B > 1 else cumulative

        columns = {
            "agent": np.repeat(np.asarray(members.agent_names, dtype=object), T),
            "env": np.repeat(np.asarray(members.env_names, dtype=object), T),
            "seed": np.repeat(np.asarray(members.seeds, dtype=np.int64), T),
            "t": np.tile(np.arange(1, T + 1, dtype=np.int64), B),
            "action": per_member(self.action),
            "reward": per_member(self.reward),
            "expected_reward": per_member(self.expected),
            "best_expected_reward": per_member(self.best),
            "regret": per_member(self.regret),
            "cumulative_regret": per_member(np.cumsum(self.regret[:T], axis=0)),
            "agent_time": shared(self.agent_time),
            "agent_wall_time": shared(self.agent_wall_time),
            "wall_time": shared(self.wall_time),
            "memory_bytes": per_member(self.memory),
            "sketch_size": per_member(self.sketch),
            "exact_mode": per_member(self.exact),
            "time_shared_by": np.full(T * B, B, dtype=np.int64),
            "feedback_delay": np.full(T * B, self.feedback.feedback_delay, dtype=np.int64),
            "update_every": np.full(T * B, self.feedback.update_every, dtype=np.int64),
        }
        return pd.DataFrame(columns)

    def member_frames(self) -> list[pd.DataFrame]:
        """:meth:`frame` cut into one frame per member (each a run's records)."""
        frame, T = self.frame(), self.rounds
        return [
            frame.iloc[i * T : (i + 1) * T].reset_index(drop=True) for i in range(self.members.size)
        ]


_BUFFERS = (
    "action",
    "reward",
    "expected",
    "best",
    "regret",
    "memory",
    "sketch",
    "exact",
    "agent_time",
    "agent_wall_time",
    "wall_time",
)


def records_frame(played: Iterable[RoundRecords]) -> pd.DataFrame:
    """The records of runs played one after another (e.g. the seeds of an unbatched run), in
    order, with the envs' extra ``info`` keys as further columns (missing rounds: NaN)."""
    frames, extras, offset = [], {}, 0
    for records in played:
        frames.append(records.frame())
        for key, values in records.members.envs.extras.items():
            extras.setdefault(key, {}).update({offset + t: v for t, v in values.items()})
        offset += records.rounds * records.members.size
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    for key, values in extras.items():
        frame[key] = pd.Series(values, index=list(values.keys())).reindex(range(offset))
    return frame


# -- the loop ----------------------------------------------------------------------------------


def play(
    members: Members,
    *,
    max_rounds: int | None = None,
    cpu: Callable[[], float] = time.thread_time,
    bar: Any = None,
    feedback: FeedbackSchedule = IMMEDIATE_FEEDBACK,
) -> RoundRecords:
    """Play one episode of every member of ``members`` and return its records.

    Each round: the agent acts on the members' arm sets, the env members step, the agent learns
    from the round (``update(obs, actions, rewards)``, the same ``obs`` object ``act`` saw), and
    row ``t`` of every column is written. The episode ends when the env ends it (for a vector,
    every member at once), or after ``max_rounds``; the env's ``horizon``, where it has one,
    sizes the columns. ``cpu`` is the clock of ``agent_time``
    (:func:`linbandit_gym.threads.cpu_clock`); ``bar``, a tqdm bar, advances by B a round.
    ``feedback``: when the agent learns from each round instead
    (:class:`~linbandit_gym.feedback.FeedbackSchedule`: round t's ``update`` after round t + k's
    ``act``, updates every n rounds, what is still held in the last round); the records of that
    round then hold the time and the state after those updates.
    """
    *_, records = play_in_stages(members, [max_rounds], cpu=cpu, bar=bar, feedback=feedback)
    return records


def play_in_stages(
    members: Members,
    stops: Sequence[int | None],
    *,
    cpu: Callable[[], float] = time.thread_time,
    bar: Any = None,
    feedback: FeedbackSchedule = IMMEDIATE_FEEDBACK,
) -> Iterator[RoundRecords]:
    """Play one episode of every member of ``members`` in stages: the rounds up to ``stops[0]``,
    then on to ``stops[1]``, and so on, yielding the records after each stop.

    ``stops`` are increasing round counts; the last may be ``None`` (the end of the episode).
    Between two stages the env and the agent wait as they are, their state kept: nothing is
    reset or replayed, so the records after the last stop are those of :func:`play` with
    ``max_rounds=stops[-1]`` in every column but the times (:data:`TIMING_COLUMNS`; a pause is
    nobody's time). Closing the iterator early drops the members where they stand. If the env
    ends the episode before a stop, the records are yielded there and the iteration ends. The
    records yielded are one :class:`RoundRecords` that grows: read it (:meth:`~RoundRecords.frame`)
    before asking for the next stage. ``feedback`` as in :func:`play`: feedback still held at a
    stop stays held (the episode goes on); only the episode's last round applies it.
    """
    stops = list(stops)

    def is_round_count(s: Any) -> bool:
        return not isinstance(s, bool) and isinstance(s, numbers.Integral) and s >= 1

    if not stops or any(s is not None and not is_round_count(s) for s in stops):
        raise ValueError(f"stops must be round counts >= 1 (the last may be None), got {stops!r}")
    if None in stops[:-1] or any(a >= b for a, b in itertools.pairwise(stops) if b is not None):
        raise ValueError(
            f"stops must increase, with None (the end of the episode) only last, got {stops!r}"
        )
    return _stages(members, stops, cpu, bar, feedback)


def _stages(
    members: Members,
    stops: list[int | None],
    cpu: Callable[[], float],
    bar: Any,
    feedback: FeedbackSchedule,
) -> Iterator[RoundRecords]:
    """The rounds of :func:`play_in_stages` (its arguments checked)."""
    max_rounds = stops[-1]
    pending = iter(stops)
    stop = next(pending)
    envs, agent, size = members.envs, members.agent, members.size
    members.reset_agent(members.seeds)
    obs = envs.reset(members.seeds)
    known = [x for x in (envs.horizon, max_rounds) if x is not None]
    records = RoundRecords(members, min(known) if known else 1024, feedback)
    act, step, memory, sketch_size = agent.act, envs.step, members.memory, members.sketch_size
    exact_mode = members.exact_mode
    held = None if feedback.immediate else HeldFeedback(feedback, agent.update)
    update = agent.update if held is None else held.receive  # same arguments: one call a round
    wall = time.perf_counter
    # The columns as locals (rebound when they grow): a round writes each once, in place.
    (
        action_col,
        reward_col,
        expected_col,
        best_col,
        regret_col,
        memory_col,
        sketch_col,
        exact_col,
        agent_cpu_col,
        agent_wall_col,
        round_wall_col,
    ) = records.columns()
    reads_state = memory is not None or sketch_size is not None or exact_mode is not None
    t = 0
    cpu_start, wall_start = cpu(), wall()
    cpu_stage = cpu_start
    while True:
        actions = act(obs)
        cpu_acted, wall_acted = cpu(), wall()
        next_obs, rewards, expected, best, regret, recorded, ended = step(actions, t)
        action_col[t] = recorded
        reward_col[t] = rewards
        expected_col[t] = expected
        best_col[t] = best
        regret_col[t] = regret
        if bar is not None:
            bar.update(size)
        wall_stepped, cpu_stepped = wall(), cpu()
        update(obs, actions, rewards)
        last = ended or t + 1 == max_rounds
        if last and held is not None:
            held.flush()  # the episode's end: the feedback still held, in this last round
        cpu_end, wall_end = cpu(), wall()
        agent_cpu_col[t] = cpu_acted - cpu_start + cpu_end - cpu_stepped
        agent_wall_col[t] = wall_acted - wall_start + wall_end - wall_stepped
        round_wall_col[t] = wall_end - wall_start
        if reads_state:
            if memory is not None:
                memory_col[t] = memory()
            if sketch_size is not None:
                sketch_col[t] = sketch_size()
            if exact_mode is not None:
                exact_col[t] = exact_mode()
            cpu_end, wall_end = cpu(), wall()  # what the agent holds is not its time
        t += 1
        if last:
            break
        if t == stop:
            records.rounds, records.cpu_time = t, records.cpu_time + cpu_end - cpu_stage
            yield records  # the members wait here, as they are
            stop = next(pending)
            cpu_end, wall_end = cpu(), wall()  # the pause is nobody's time
            cpu_stage = cpu_end
        obs = next_obs
        cpu_start, wall_start = cpu_end, wall_end
        if t == records.capacity:
            records.grow()
            (
                action_col,
                reward_col,
                expected_col,
                best_col,
                regret_col,
                memory_col,
                sketch_col,
                exact_col,
                agent_cpu_col,
                agent_wall_col,
                round_wall_col,
            ) = records.columns()
    records.rounds, records.cpu_time = t, records.cpu_time + cpu_end - cpu_stage
    yield records
