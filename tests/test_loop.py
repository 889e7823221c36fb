"""The one evaluation loop (linbandit_gym.loop.play): what it writes, for a single env and agent
(a vector of one) and for the members of a vector env and a batched agent."""

import time

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium import spaces
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym
from agents import OFUL, SOFUL, GAllocation
from agents.batched import batched
from linbandit_gym.envs import SyntheticLinBanditEnv
from linbandit_gym.envs.memory import RECORD_BYTES_PER_ROUND
from linbandit_gym.feedback import FeedbackSchedule
from linbandit_gym.loop import (
    RECORD_COLUMNS,
    TIMING_COLUMNS,
    batch_members,
    forwarded_step,
    play,
    play_in_stages,
    records_frame,
    single_members,
)

SMALL = dict(d=6, n_arms=4, horizon=30)
TIMING = TIMING_COLUMNS
DTYPES = {
    "seed": "int64",
    "t": "int64",
    "action": "int64",
    "reward": "float64",
    "expected_reward": "float64",
    "best_expected_reward": "float64",
    "regret": "float64",
    "cumulative_regret": "float64",
    "agent_time": "float64",
    "agent_wall_time": "float64",
    "wall_time": "float64",
    "memory_bytes": "int64",
    "sketch_size": "float64",
    "time_shared_by": "int64",
}


def _replay(env_kwargs: dict, agent, seed: int, actions) -> pd.DataFrame:
    """The rounds of ``actions`` played bare on a fresh env, with what the agent holds after
    each."""
    env = gym.make("LinBandit-Synthetic-v0", **env_kwargs)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed=seed)
    rows = []
    for action in actions:
        assert agent.act(obs) == action  # the agent chooses as it did in the loop
        next_obs, reward, _, _, info = env.step(action)
        agent.update(obs, action, reward)
        rows.append(
            {
                "reward": reward,
                "expected_reward": info["expected_reward"],
                "best_expected_reward": info["best_expected_reward"],
                "regret": info["regret"],
                "memory_bytes": agent.memory_bytes(),
                "sketch_size": float(agent.sketch_size),
            }
        )
        obs = next_obs
    return pd.DataFrame(rows)


@pytest.mark.filterwarnings("ignore:.*holds.*bytes per agent")
def test_the_records_are_what_the_env_and_agent_gave_round_by_round():
    records = linbandit_gym.run(
        "LinBandit-Synthetic-v0",
        SOFUL(sketch_size=3, beta=0.1),
        seeds=[7, 3],
        env_kwargs=SMALL,
        batched=False,
        progress=False,
    )
    assert list(records.columns) == RECORD_COLUMNS
    assert {c: str(records[c].dtype) for c in DTYPES} == DTYPES
    for seed, part in records.groupby("seed", sort=False):
        part = part.reset_index(drop=True)
        assert part["t"].tolist() == list(range(1, SMALL["horizon"] + 1))
        bare = _replay(SMALL, SOFUL(sketch_size=3, beta=0.1), seed, part["action"].tolist())
        pd.testing.assert_frame_equal(part[bare.columns], bare, check_exact=True, check_dtype=False)
        assert part["cumulative_regret"].tolist() == np.cumsum(bare["regret"]).tolist()
        for column in ("agent_time", "agent_wall_time", "wall_time"):  # cumulative seconds
            assert (part[column].diff().dropna() >= 0).all() and part[column].iloc[0] >= 0
        assert (part["wall_time"] >= part["agent_wall_time"]).all()
        assert (part["time_shared_by"] == 1).all()  # measured alone
    assert records["seed"].tolist() == [7] * 30 + [3] * 30


def test_batch_members_play_as_the_single_members_do_record_for_record():
    seeds = [5, 2, 5]  # players sharing a seed share an env member
    agent = OFUL(beta=0.1)
    venv = gym.make_vec(
        "LinBandit-Synthetic-v0", num_envs=2, vectorization_mode="vector_entry_point", **SMALL
    )
    together = play(
        batch_members(venv, batched(agent, 3), seeds, ["a", "b", "c"], ["e"] * 3)
    ).member_frames()
    assert all(
        (frame["time_shared_by"] == 3).all() for frame in together
    )  # each time is a third of the batch's
    env = gym.make("LinBandit-Synthetic-v0", **SMALL)
    for frame, seed, name in zip(together, seeds, "abc"):
        alone = play(single_members(env, agent, seed, name, "e")).frame()
        pd.testing.assert_frame_equal(
            frame.drop(columns=TIMING), alone.drop(columns=TIMING), check_exact=True
        )


class _UserEnv(gym.Env):
    """A user's env without a horizon attribute: it ends its episodes itself after 1500 rounds."""

    observation_space = spaces.Box(-1.0, 1.0, (3, 2), np.float32)
    action_space = spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, (3, 2)).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        obs = self.np_random.uniform(-1, 1, (3, 2)).astype(np.float32)
        return (
            obs,
            float(action),
            self.t == 1500,
            False,
            {"regret": 2.0 - action, "note": "x" if action == 2 else None},
        )


def test_columns_grow_for_an_episode_of_unknown_length_and_extra_info_keys_become_columns():
    records = linbandit_gym.run(_UserEnv(), OFUL(beta=0.1), seeds=[0, 1], progress=False)
    assert (
        len(records) == 3000 and records["t"].max() == 1500
    )  # past the first allocation of 1024 rounds
    assert (
        len(linbandit_gym.run(_UserEnv(), OFUL(beta=0.1), seeds=[0], max_rounds=7, progress=False))
        == 7
    )
    assert records["cumulative_regret"].iloc[1499] == pytest.approx(
        records["regret"].iloc[:1500].sum()
    )
    assert records["expected_reward"].isna().all()  # the env does not report it
    assert (
        records["note"].notna() == (records["action"] == 2)
    ).all()  # a scalar info key; None is no scalar


def test_best_arm_identification_keeps_its_info_columns_and_their_dtypes():
    records = linbandit_gym.run("LinBandit-BAI-v0", GAllocation(), seeds=2, progress=False)
    assert list(records.columns) == RECORD_COLUMNS + ["n_pulls", "recommendation", "correct"]
    assert (
        str(records["n_pulls"].dtype),
        str(records["recommendation"].dtype),
        str(records["correct"].dtype),
    ) == ("int64", "float64", "object")
    ends = records.groupby("seed")["t"].transform("max") == records["t"]
    assert records.loc[ends, "correct"].notna().all() and records.loc[~ends, "correct"].isna().all()


class _OneBufferEnv(gym.Env):
    """A user's env that hands out one observation buffer on every reset and step (what
    gymnasium's env checker warns about: the caller's kept observations change under it)."""

    observation_space = spaces.Box(-1.0, 1.0, (3, 2), np.float32)
    action_space = spaces.Discrete(3)

    def __init__(self):
        self.buffer = np.zeros((3, 2), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.buffer, {}

    def step(self, action):
        self.t += 1
        return self.buffer, 0.0, False, self.t == 6, {"regret": 0.0}


class _CountingWrapper(gym.Wrapper):
    """A user's wrapper that counts the steps it is asked for."""

    def __init__(self, env):
        super().__init__(env)
        self.steps = 0

    def step(self, action):
        self.steps += 1
        return self.env.step(action)


def test_gym_makes_wrappers_are_passed_only_once_they_do_nothing_but_forward():
    env = gym.make("LinBandit-Synthetic-v0", **SMALL)  # OrderEnforcing(PassiveEnvChecker(env))
    checker = env.env
    assert forwarded_step(env) == env.step  # before reset, OrderEnforcing refuses to step
    env.reset(seed=0)
    assert forwarded_step(env) == checker.step  # the checker checks the first step
    env.step(0)
    assert forwarded_step(env) == checker.step  # ... and the second's data
    env.step(0)
    assert forwarded_step(env) == env.unwrapped.step
    counted = _CountingWrapper(env)
    assert forwarded_step(counted) == counted.step  # a user's wrapper is never passed


@pytest.mark.filterwarnings("ignore:.*`reset` and the following `step` share")
def test_gymnasiums_checks_see_the_first_steps_of_a_run_and_a_users_wrapper_every_step():
    env = OrderEnforcing(PassiveEnvChecker(_OneBufferEnv()))  # what gym.make wraps an env in
    with pytest.warns(UserWarning, match="returned by `step` and the following `step` share"):
        linbandit_gym.run(env, OFUL(beta=0.1), seeds=[0], progress=False)
    counted = _CountingWrapper(gym.make("LinBandit-Synthetic-v0", **SMALL))
    records = linbandit_gym.run(counted, OFUL(beta=0.1), seeds=[0, 1], progress=False)
    assert counted.steps == 2 * SMALL["horizon"]
    bare = linbandit_gym.run(
        SyntheticLinBanditEnv(**SMALL), OFUL(beta=0.1), seeds=[0, 1], progress=False
    )
    compared = [c for c in RECORD_COLUMNS if c not in TIMING and c != "env"]
    pd.testing.assert_frame_equal(records[compared], bare[compared], check_exact=True)


def test_records_frame_joins_runs_in_order():
    env = gym.make("LinBandit-Synthetic-v0", **SMALL)
    first, second = (
        play(single_members(env, OFUL(), s, "OFUL", "e"), max_rounds=4) for s in (1, 2)
    )
    frame = records_frame([first, second])
    assert frame["seed"].tolist() == [1] * 4 + [2] * 4 and frame["t"].tolist() == [1, 2, 3, 4] * 2


def _members(kind: str, seeds: list[int], horizon: int):
    """Fresh members to play: one SOFUL on its env, or a batch of OFUL members on a vector env."""
    kwargs = {**SMALL, "horizon": horizon}
    if kind == "single":
        return single_members(
            gym.make("LinBandit-Synthetic-v0", **kwargs),
            SOFUL(sketch_size=3, beta=0.1),
            seeds[0],
            "a",
            "e",
        )
    venv = gym.make_vec(
        "LinBandit-Synthetic-v0",
        num_envs=len(set(seeds)),
        vectorization_mode="vector_entry_point",
        **kwargs,
    )
    names = [f"m{i}" for i in range(len(seeds))]
    return batch_members(
        venv, batched(OFUL(beta=0.1), len(seeds)), seeds, names, ["e"] * len(seeds)
    )


@pytest.mark.filterwarnings("ignore:.*holds.*bytes per agent")
@settings(max_examples=15, deadline=None)
@given(
    kind=st.sampled_from(["single", "batch"]),
    seeds=st.lists(st.integers(0, 3), min_size=1, max_size=3),
    cuts=st.lists(st.integers(1, 39), max_size=4, unique=True),
    to_end=st.booleans(),
    schedule=st.sampled_from([(0, 1), (3, 1), (0, 4), (2, 5)]),
)
def test_an_episode_played_in_stages_gives_the_records_of_one_played_through(
    kind, seeds, cuts, to_end, schedule
):
    # The stages of two episodes interleave, as the rungs of successive halving do: neither
    # disturbs the other, and each ends with the records of the same episode played at once,
    # under any feedback schedule (feedback held at a stop stays held).
    feedback = FeedbackSchedule(*schedule)
    stops = sorted(cuts) + [None if to_end else 40]
    seeds = seeds[:1] if kind == "single" else seeds
    staged = [
        play_in_stages(_members(kind, order, 40), stops, feedback=feedback)
        for order in (seeds, seeds[::-1])
    ]
    seen = {0: [], 1: []}
    for stop in stops:
        for i, stages in enumerate(staged):
            records = next(stages)
            assert records.rounds == (
                stop or 40
            )  # the episode stops where it is told and waits there
            seen[i].append(records.frame())
    for stages in staged:
        assert next(stages, None) is None  # nothing after the last stop
    for i, order in enumerate((seeds, seeds[::-1])):
        whole = play(_members(kind, order, 40), feedback=feedback).frame().drop(columns=TIMING)
        assert seen[i][-1]["t"].max() == 40
        pd.testing.assert_frame_equal(seen[i][-1].drop(columns=TIMING), whole, check_exact=True)
        for frame, stop in zip(
            seen[i], stops
        ):  # each stage's records are the start of the whole episode's
            assert frame["t"].max() == (stop or 40)
            pd.testing.assert_frame_equal(
                frame.drop(columns=TIMING).reset_index(drop=True),
                whole[whole["t"] <= (stop or 40)].reset_index(drop=True),
                check_exact=True,
            )


@pytest.mark.filterwarnings("ignore:.*holds.*bytes per agent")
def test_a_stage_past_the_end_of_the_episode_ends_the_stages_there_and_pauses_cost_no_time():
    stages = play_in_stages(_members("single", [1], 10), [4, 25, 60])
    first = next(stages).frame()
    time.sleep(0.3)  # the caller's pause between stages
    last = next(stages)
    assert (
        last.rounds == 10 and next(stages, None) is None
    )  # the env ended the episode at its horizon
    frame = last.frame()
    assert (
        frame["wall_time"].iloc[4] - frame["wall_time"].iloc[3] < 0.3
    )  # round 5 does not hold the pause
    assert first["wall_time"].tolist() == frame["wall_time"].iloc[:4].tolist()
    assert last.cpu_time >= frame["agent_time"].iloc[-1] > 0  # the rounds' CPU holds the agent's


@pytest.mark.filterwarnings("ignore:.*holds.*bytes per agent")
@pytest.mark.parametrize("stops", [[], [3, 3], [5, 2], [None, 4], [0], [2.5], [True]])
def test_stops_that_are_not_increasing_round_counts_are_refused_before_anything_is_played(stops):
    members = _members("single", [0], 10)
    with pytest.raises(ValueError, match="stops must"):
        play_in_stages(members, stops)


# -- the records' size rule ------------------------------------------------------------------------


def test_the_records_size_rule_bounds_what_a_runs_records_hold_per_round():
    """:data:`RECORD_BYTES_PER_ROUND` (what ``--dry-run``, ``run`` and :func:`play` check) is an
    upper bound of the memory a run's records add per round and seed, within a factor of 3
    (traced by tracemalloc: the loop's columns, the frame, its sums; the Parquet writer's own
    buffers are not traced, and the rule leaves room for them)."""
    import tracemalloc

    class First:  # the records do not depend on the agent: the cheapest one
        def reset(self, seed=None):
            pass

        def act(self, obs):
            return 0

        def update(self, obs, action, reward):
            pass

    def peak(rounds: int) -> int:
        tracemalloc.start()
        try:
            linbandit_gym.run(
                "LinBandit-Synthetic-v0",
                First(),
                seeds=2,
                batched=False,
                progress=False,
                env_kwargs={"d": 2, "n_arms": 2, "horizon": rounds},
            )
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    peak(100)  # imports and caches first
    per_round = (peak(11_000) - peak(1_000)) / 10_000 / 2
    assert per_round <= RECORD_BYTES_PER_ROUND <= 3 * per_round, per_round


def test_play_refuses_records_that_cannot_fit_before_the_first_round(monkeypatch):
    monkeypatch.setenv("LINBANDIT_MEMORY_LIMIT", "1MB")
    env = gym.make("LinBandit-Synthetic-v0", d=2, n_arms=2, horizon=10_000)  # 4.88 MiB of records
    agent = OFUL()
    with pytest.raises(
        ValueError,
        match=r"horizon=10000: the records of 10,000 rounds need about "
        r"4.88 MiB.*\$LINBANDIT_MEMORY_LIMIT",
    ):
        play(single_members(env, agent, 0, "OFUL", "synthetic"))
    assert agent.t == 0  # nothing played
