"""Delayed and batched feedback (linbandit_gym.feedback) in the one loop: when ``update`` is
called, what the records say, that every path (a single run, a batch of seeds, a sweep batch,
``linbandit run --out``) plays the same schedule, and that bad settings are refused before
anything runs."""

import doctest
import itertools
import math
import time

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym
import linbandit_gym.evaluate
import linbandit_gym.feedback
from agents import OFUL, SOFUL
from linbandit_gym.cli import main
from linbandit_gym.experiments import load_records, load_runs, sweep
from linbandit_gym.experiments.config import ConfigError, parse_config
from linbandit_gym.experiments.runner import _overhead_by_round
from linbandit_gym.experiments.tune import tune
from linbandit_gym.feedback import FeedbackSchedule, HeldFeedback
from linbandit_gym.loop import RECORD_COLUMNS, TIMING_COLUMNS

ENV = "LinBandit-Synthetic-v0"
SMALL = {"d": 6, "n_arms": 4, "horizon": 13}  # 13 rounds: not a multiple of update_every = 3
SCHEDULES = list(itertools.product([0, 1, 5], [1, 3]))  # (feedback_delay, update_every)


def applied_in(t: int, delay: int, every: int, rounds: int) -> int:
    """The definition: round t's update is made in round every * ceil((t + delay) / every), and
    in the last round for what would come later."""
    return min(every * math.ceil((t + delay) / every), rounds)


class CountingAgent:
    """A user's agent (duck-typed, nothing imported from the project): it plays arms in a
    fixed pattern, logs every act and every update (naming the round whose feedback it is,
    recognised by the arm set), and its ``memory_bytes`` is the number of updates seen, so the
    records' ``memory_bytes`` column is that count after each round."""

    def reset(self, seed=None):
        self.log, self.played, self.rounds = [], {}, 0

    def act(self, obs):
        self.rounds += 1
        action = (3 * self.rounds) % len(obs)
        self.played[np.asarray(obs).tobytes()] = (self.rounds, action)
        self.log.append(("act", self.rounds))
        return action

    def update(self, obs, action, reward):
        t, played = self.played[np.asarray(obs).tobytes()]
        assert action == played  # the feedback is the round's own
        self.log.append(("update", t))

    def memory_bytes(self):
        return sum(1 for event, _ in self.log if event == "update")


@pytest.mark.parametrize("delay,every", SCHEDULES)
def test_a_round_is_learnt_from_in_the_round_the_schedule_says_in_order_and_all_by_the_end(
    delay, every
):
    agent = CountingAgent()
    records = linbandit_gym.run(
        ENV,
        agent,
        seeds=[2],
        env_kwargs=SMALL,
        feedback_delay=delay,
        update_every=every,
        progress=False,
    )
    T = SMALL["horizon"]
    expected = []
    for s in range(1, T + 1):
        expected.append(("act", s))
        expected += [("update", t) for t in range(1, T + 1) if applied_in(t, delay, every, T) == s]
    assert agent.log == expected  # each update after round t + k's act, every n rounds, in order
    seen = [
        sum(applied_in(t, delay, every, T) <= s for t in range(1, T + 1)) for s in range(1, T + 1)
    ]
    assert records["memory_bytes"].tolist() == seen
    assert seen[-1] == T  # the episode's end: every round learnt from exactly once
    assert FeedbackSchedule(delay, every).updates_by_round(T).tolist() == seen
    assert (records["feedback_delay"] == delay).all() and (records["update_every"] == every).all()


def test_an_episode_cut_by_max_rounds_ends_with_the_held_feedback_too():
    agent = CountingAgent()
    records = linbandit_gym.run(
        ENV,
        agent,
        seeds=[0],
        env_kwargs=SMALL,
        feedback_delay=5,
        update_every=3,
        max_rounds=8,
        progress=False,
    )
    assert records["memory_bytes"].tolist() == [0, 0, 0, 0, 0, 1, 1, 8]
    assert agent.log[-8:] == [("act", 8)] + [
        ("update", t) for t in range(2, 9)
    ]  # round 1's came in round 6


def hand_written_delayed_loop(agent, seed: int, delay: int, every: int) -> pd.DataFrame:
    """The rounds of one episode with delayed, batched feedback, written out without the
    library's loop: after each round, learn from the held rounds that are due (at a multiple of
    ``every``, those at least ``delay`` rounds old; at the episode's end all of them)."""
    env = gym.make(ENV, **SMALL)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed=seed)
    held, rows, s, done = [], [], 0, False
    while not done:
        s += 1
        action = agent.act(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        held.append((s, obs, action, reward))
        done = terminated or truncated
        if s % every == 0 or done:
            due = [round_ for round_ in held if done or round_[0] + delay <= s]
            for _, old_obs, old_action, old_reward in due:
                agent.update(old_obs, old_action, old_reward)
            held = held[len(due) :]
        rows.append(
            {
                "t": s,
                "action": action,
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
@pytest.mark.parametrize("delay,every", SCHEDULES)
def test_records_equal_those_of_a_hand_written_delayed_loop(delay, every):
    def make():
        return SOFUL(sketch_size=3, beta=0.1)

    records = linbandit_gym.run(
        ENV,
        make(),
        seeds=[4, 7],
        env_kwargs=SMALL,
        feedback_delay=delay,
        update_every=every,
        batched=False,
        progress=False,
    )
    assert list(records.columns) == RECORD_COLUMNS
    for seed, part in records.groupby("seed", sort=False):
        bare = hand_written_delayed_loop(make(), seed, delay, every)
        pd.testing.assert_frame_equal(
            part[bare.columns].reset_index(drop=True), bare, check_dtype=False, check_exact=True
        )
    plain = linbandit_gym.run(
        ENV, make(), seeds=[4, 7], env_kwargs=SMALL, batched=False, progress=False
    )
    if (delay, every) != (0, 1):  # the schedule is what changed the choices
        assert (plain["action"] != records["action"]).any()


@pytest.mark.filterwarnings("ignore:.*holds.*bytes per agent")
@pytest.mark.parametrize("delay,every", [(5, 3), (1, 1), (0, 3)])
def test_batched_records_equal_single_records_under_a_schedule(delay, every):
    kwargs = {
        "seeds": [3, 1, 8],
        "env_kwargs": SMALL,
        "feedback_delay": delay,
        "update_every": every,
        "progress": False,
    }
    together = linbandit_gym.run(ENV, OFUL(beta=0.1), batched=True, **kwargs)
    alone = linbandit_gym.run(ENV, OFUL(beta=0.1), batched=False, **kwargs)
    assert (together["time_shared_by"] == 3).all() and (alone["time_shared_by"] == 1).all()
    pd.testing.assert_frame_equal(
        together.drop(columns=TIMING_COLUMNS), alone.drop(columns=TIMING_COLUMNS), check_exact=True
    )


@settings(max_examples=200, deadline=None)
@given(delay=st.integers(0, 12), every=st.integers(1, 7), rounds=st.integers(1, 40))
def test_held_feedback_calls_update_by_the_definition(delay, every, rounds):
    calls = []
    held = HeldFeedback(
        FeedbackSchedule(delay, every), lambda obs, action, reward: calls.append(obs)
    )
    made_by = []
    for s in range(1, rounds + 1):
        held.receive(s, "action", 0.0)
        if s == rounds:
            held.flush()
        made_by.append(len(calls))
        assert len(held.held) <= delay + every - 1 or s == rounds
    assert calls == list(range(1, rounds + 1))  # every round once, in order
    assert made_by == [
        sum(applied_in(t, delay, every, rounds) <= s for t in range(1, rounds + 1))
        for s in range(1, rounds + 1)
    ]
    assert made_by == FeedbackSchedule(delay, every).updates_by_round(rounds).tolist()


class SlowUpdates(CountingAgent):
    """Each update spins for ``SPIN`` seconds of this thread's CPU time; act costs next to none."""

    SPIN = 0.002

    def update(self, obs, action, reward):
        super().update(obs, action, reward)
        start = time.thread_time()
        while time.thread_time() - start < self.SPIN:
            pass


def test_a_rounds_agent_time_is_its_act_and_the_updates_made_in_it():
    T, delay, every = SMALL["horizon"], 2, 3
    records = linbandit_gym.run(
        ENV,
        SlowUpdates(),
        seeds=[0],
        env_kwargs=SMALL,
        feedback_delay=delay,
        update_every=every,
        threads=1,
        progress=False,
    )
    per_round = np.diff(
        records["agent_time"].to_numpy(), prepend=0.0
    )  # CPU seconds, not disturbed by load
    updates = np.diff(FeedbackSchedule(delay, every).updates_by_round(T), prepend=0)
    assert updates.sum() == T and updates[-1] == 3  # the last round: rounds 11 to 13
    for spent, made in zip(per_round, updates):
        if made:
            assert spent >= made * SlowUpdates.SPIN
        else:
            assert spent < SlowUpdates.SPIN / 2  # an act and no update
    assert records["agent_time"].iloc[-1] >= T * SlowUpdates.SPIN  # every update, as without delay


def test_the_diagnostics_time_is_taken_out_of_the_round_that_made_the_update():
    cumulative = [10.0 * (u + 1) for u in range(8)]  # the diagnostics' time after each update
    schedule = FeedbackSchedule(feedback_delay=2, update_every=3)
    expected = [0.0, 0.0, 10.0, 10.0, 10.0, 40.0, 40.0, 80.0]  # updates made by rounds 1..8
    assert _overhead_by_round(cumulative, schedule, 8).tolist() == expected
    assert _overhead_by_round(cumulative, FeedbackSchedule(), 8).tolist() == cumulative


def test_the_examples_in_the_docstrings_run():
    assert doctest.testmod(linbandit_gym.feedback).failed == 0
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(
        linbandit_gym.evaluate.run, "run", globs={"run": linbandit_gym.evaluate.run}
    ):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


# -- bad settings -------------------------------------------------------------------------------


class ResetRecorder(CountingAgent):
    resets = 0

    def reset(self, seed=None):
        type(self).resets += 1
        super().reset(seed)


@pytest.mark.parametrize(
    "key,value",
    [
        ("feedback_delay", -1),
        ("feedback_delay", 1.5),
        ("feedback_delay", True),
        ("update_every", 0),
        ("update_every", "3"),
        ("update_every", None),
    ],
)
def test_a_bad_setting_is_refused_before_anything_runs(key, value):
    with pytest.raises(
        ValueError,
        match=rf"{key} must be an int >= {0 if key == 'feedback_delay' else 1} .*"
        rf"got {value!r}",
    ):
        linbandit_gym.run(
            ENV, ResetRecorder(), seeds=[0], env_kwargs=SMALL, progress=False, **{key: value}
        )
    assert ResetRecorder.resets == 0


def test_the_command_line_refuses_a_bad_setting_under_its_flag(tmp_path, capsys):
    run = [
        "run",
        "--env",
        ENV,
        "--agent",
        "OFUL",
        "--env-arg",
        "d=4",
        "--horizon",
        "5",
        "--no-progress",
    ]
    assert main([*run, "--feedback-delay", "-2", "--out", str(tmp_path / "out")]) == 2
    assert "--feedback-delay must be an int >= 0" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    config = tmp_path / "c.yaml"
    config.write_text(
        f"envs: [{{id: {ENV}, args: {{d: 4, horizon: 5}}}}]\nagents: [{{name: OFUL}}]\n"
    )
    assert (
        main(["sweep", str(config), "--update-every", "3", "0", "--out", str(tmp_path / "sweep")])
        == 2
    )
    assert "--update-every must be an int >= 1" in capsys.readouterr().err
    assert not (tmp_path / "sweep").exists()


def test_a_config_reports_bad_settings_where_they_were_written():
    base = {"envs": [{"id": ENV, "args": SMALL}]}
    with pytest.raises(ConfigError) as caught:
        parse_config(
            {
                **base,
                "feedback_delay": -1,
                "agents": [
                    {"name": "OFUL", "update_every": [2, 0]},
                    {"name": "OFUL", "feedback_delay": [1, 1]},
                ],
            }
        )
    assert caught.value.problems == [
        (
            "feedback_delay: must be an int >= 0 (rounds between a round's act and its update; "
            "0: at once), got -1"
        ),
        (
            "agents[0].update_every[1]: must be an int >= 1 (updates are applied every n rounds; "
            "1: every round), got 0"
        ),
        "agents[1].feedback_delay: the list has repeated values: [1, 1]",
    ]
    with pytest.raises(ConfigError, match="only bandit sweeps"):
        parse_config({"task": "matrix-approx", "update_every": 2, "agents": [{"name": "SOFUL"}]})
    with pytest.raises(ConfigError, match=r"\{feedback_delay\}"):  # one label for two schedules
        parse_config(
            {**base, "agents": [{"name": "OFUL", "label": "mine", "feedback_delay": [0, 3]}]}
        )


# -- configs, sweeps and `linbandit run --out` -------------------------------------------------


def test_a_config_plays_one_run_per_schedule_labelled_by_it_and_plain_runs_keep_their_ids():
    base = {"seeds": 2, "envs": [{"id": ENV, "args": SMALL}]}
    plain = parse_config({**base, "agents": [{"name": "OFUL"}]})
    cfg = parse_config(
        {
            **base,
            "update_every": 3,
            "agents": [
                {"name": "OFUL", "feedback_delay": [0, 4], "update_every": 1},
                {"name": "OFUL", "label": "OFUL k={feedback_delay} n={update_every}"},
            ],
        }
    )
    assert [
        (r.agent_label, r.config.get("feedback_delay"), r.config.get("update_every"))
        for r in cfg.runs
    ] == [
        ("OFUL", None, None),
        ("OFUL", None, None),
        ("OFUL feedback_delay=4", 4, None),
        ("OFUL feedback_delay=4", 4, None),
        ("OFUL k=0 n=3", None, 3),
        ("OFUL k=0 n=3", None, 3),
    ]
    assert [r.run_id for r in cfg.runs[:2]] == [
        r.run_id for r in plain.runs
    ]  # the plain loop's ids


@pytest.mark.filterwarnings("ignore:.*holds.*bytes per agent")
def test_a_sweep_batch_plays_the_schedule_as_its_runs_alone_do(tmp_path):
    config = {
        "seeds": 3,
        "feedback_delay": [0, 4],
        "update_every": 3,
        "envs": [{"id": ENV, "args": SMALL}],
        "agents": [{"name": "OFUL", "grid": {"beta": [0.1, 1.0]}}],
    }
    together = sweep(config, tmp_path / "batched", batched=True, timing_runs=False, log=None)
    alone = sweep(config, tmp_path / "alone", batched=False, log=None)
    assert together.ok and alone.ok and len(together.executed) == len(alone.executed) == 12
    runs = load_runs(tmp_path / "batched")
    assert sorted(runs.groupby(["feedback_delay", "update_every"]).size().items()) == [
        ((0, 3), 6),
        ((4, 3), 6),
    ]
    assert (runs["time_shared_by"] > 1).all()  # every run was a member of a batch
    keys = ["agent", "seed", "t"]
    batched = load_records(tmp_path / "batched").sort_values(keys).reset_index(drop=True)
    single = load_records(tmp_path / "alone").sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(
        batched.drop(columns=TIMING_COLUMNS), single.drop(columns=TIMING_COLUMNS)
    )
    assert set(zip(single["agent"], single["feedback_delay"])) == {
        ("OFUL beta=0.1 update_every=3", 0),
        ("OFUL beta=1.0 update_every=3", 0),
        ("OFUL beta=0.1 feedback_delay=4 update_every=3", 4),
        ("OFUL beta=1.0 feedback_delay=4 update_every=3", 4),
    }


def test_run_out_saves_the_schedule_and_resumes_only_its_own_runs(tmp_path, capsys):
    out = tmp_path / "out"
    run = [
        "run",
        "--env",
        ENV,
        "--agent",
        "OFUL",
        "--env-arg",
        "d=4",
        "--horizon",
        "6",
        "--seeds",
        "2",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert main([*run, "--feedback-delay", "2", "--update-every", "2"]) == 0
    assert "OFUL feedback_delay=2 update_every=2" in capsys.readouterr().out
    first = load_runs(out)
    assert first[["feedback_delay", "update_every"]].drop_duplicates().values.tolist() == [[2, 2]]
    records = load_records(out)
    assert (records["feedback_delay"] == 2).all() and (records["update_every"] == 2).all()
    assert main([*run, "--feedback-delay", "2", "--update-every", "2"]) == 0  # resumed: nothing new
    assert len(list((out / "runs").glob("*.json"))) == 2
    assert main(run) == 0  # the plain loop: other runs
    assert len(list((out / "runs").glob("*.json"))) == 4


def test_tune_tunes_each_agent_under_the_schedule_its_evaluation_runs_play(tmp_path):
    config = {
        "seeds": 1,
        "feedback_delay": [0, 3],
        "agents": [{"name": "OFUL"}],
        "envs": [{"id": ENV, "args": {"d": 4, "n_arms": 3, "horizon": 10}}],
    }
    result = tune(
        config, tmp_path / "grid", beta=[0.1, 1.0], lam=[1.0], seeds=1, schedule="grid", log=None
    )
    runs = load_runs(tmp_path / "grid")
    assert sorted(set(zip(runs["family"], runs["feedback_delay"]))) == [
        ("OFUL", 0),
        ("OFUL feedback_delay=3", 3),
    ]
    assert set(result.tuned[ENV]) == {"OFUL", "OFUL feedback_delay=3"}
    # successive halving plays its pairs under the same schedules: two pairs play every round
    # (one rung), so each pair's regret is the grid's run's, for both settings
    halving = tune(
        config,
        tmp_path / "halving",
        beta=[0.1, 1.0],
        lam=[1.0],
        seeds=1,
        schedule="halving",
        log=None,
    )
    keys = ["agent", "beta", "lam"]
    pd.testing.assert_series_equal(
        halving.table.set_index(keys)["final_regret"].sort_index(),
        result.table.set_index(keys)["final_regret"].sort_index(),
        check_exact=True,
    )
    assert set(halving.tuned[ENV]) == {"OFUL", "OFUL feedback_delay=3"}
