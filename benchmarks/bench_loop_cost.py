"""The evaluation loop's own cost per round: ``run()`` minus the env's own time, and the time a
round spends outside the agent.

A random agent whose arms are drawn before the episode (its ``act`` is a list lookup, its
``update`` a counter) plays one episode of the env through ``linbandit_gym.run`` (1 thread, no
progress bar, the unbatched path), and the same episode is played bare (``reset`` and ``step``
with the same arms, nothing else). The loop's cost per round is the difference of the two
times over the rounds: what ``run()`` adds to a round (timing, records, the calls into the
agent, and its fixed per-call work spread over the episode). Times are the thread's CPU time
(everything runs on the calling thread with 1 thread), which other processes on a shared
machine do not inflate; ``--clock wall`` takes wall-clock time instead. Two ways, interleaved,
best of ``--repeats`` of each:

* ``instance``: ``run(env, ...)`` on an env made once, against the bare episode of that env;
* ``by id``: ``run(env_id, ...)``, which builds the env, against ``gym.make`` + the bare episode.

Printed too: ``run(env_id)`` minus the bare steps alone, which counts the env's construction
(for MNIST, loading and normalising the images) as loop cost; and the time outside the agent,
what a sweep counts as not the agent's (its closing line's "outside them"), per round:

* ``outside (run)``: ``run(env, ...)``'s time minus the agent time its records hold (the env's
  steps and the loop's bookkeeping);
* ``outside (sweep run)``: a sweep's run of an agent that always plays arm 0 on the env id
  (``linbandit_gym.experiments.runner.execute_run``, the unbatched path of ``sweep`` and
  ``reproduce``: the agent and env built, the episode, its records and summary) minus its
  agent time.

``--against REV`` measures a git revision's ``linbandit_gym`` (with its ``agents`` and
``envs_data``) the same way, extracted to a temporary directory and run in a subprocess that
alternates with one of this checkout; the ratio is printed.

    python benchmarks/bench_loop_cost.py                      # MNIST, 2000 rounds, best of 7
    python benchmarks/bench_loop_cost.py --against main
    python benchmarks/bench_loop_cost.py --env LinBandit-Synthetic-v0 --env-arg d=50
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("linbandit_gym", "agents", "envs_data")
#: This script as a module a config can name (its directory is first on ``sys.path`` when run)
MODULE = os.path.splitext(os.path.basename(__file__))[0]


class PreDrawnRandomAgent:
    """Uniformly random arms, drawn before the episode so that acting costs a list lookup."""

    def __init__(self, actions: list[int]):
        self.actions = actions
        self.t = 0

    def reset(self, seed=None):
        self.t = 0

    def act(self, obs):
        return self.actions[self.t]

    def update(self, obs, action, reward):
        self.t += 1


class FirstArmAgent:
    """Plays arm 0 every round: an agent a sweep config can name (``module:FirstArmAgent``)."""

    def __init__(self, d=None, seed=None):
        pass

    def reset(self, seed=None):
        pass

    def act(self, obs):
        return 0

    def update(self, obs, action, reward):
        pass


def sweep_run_spec(env_id: str, env_args: dict, rounds: int) -> dict:
    """The run a sweep of :class:`FirstArmAgent` on ``env_id`` (seed 0) plays, as a spec dict."""
    from linbandit_gym.experiments.config import parse_config

    config = parse_config(
        {
            "name": "loop-cost",
            "seeds": 1,
            "horizon": rounds,
            "envs": [{"id": env_id, "args": env_args}],
            "agents": [{"name": f"{MODULE}:FirstArmAgent"}],
        }
    )
    return config.runs[0].to_dict()


def measure(env_id: str, env_args: dict, repeats: int, clock: str = "cpu") -> dict:
    """Best-of-``repeats`` seconds of ``run()`` on an env instance and on the env id, of the
    bare episode, of ``gym.make`` + the bare episode, and outside the agent in ``run()`` and in
    a sweep's run, interleaved."""
    import gymnasium as gym
    import numpy as np
    import torch
    from threadpoolctl import threadpool_limits

    import linbandit_gym
    from linbandit_gym.experiments.runner import execute_run

    now = time.thread_time if clock == "cpu" else time.perf_counter
    agent_column = "agent_time" if clock == "cpu" else "agent_wall_time"
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        env = gym.make(env_id, **env_args)
        obs, _ = env.reset(seed=0)
        n_arms = obs.shape[0]
        rounds = env.unwrapped.horizon
        actions = np.random.default_rng(0).integers(n_arms, size=rounds).tolist()
        agent = PreDrawnRandomAgent(actions)
        spec = sweep_run_spec(env_id, env_args, rounds)
        execute_run(spec, threads=1)  # the first builds what a process keeps (dataset, imports)
        times: dict[str, list[float]] = {
            "run": [],
            "env": [],
            "run_by_id": [],
            "make_env": [],
            "outside_run": [],
            "outside_sweep_run": [],
        }

        def bare_episode(instance) -> None:
            instance.reset(seed=0)
            for action in actions:
                instance.step(action)

        for _ in range(repeats):  # interleaved: a slow spell of the machine hits every side alike
            start = now()
            records = linbandit_gym.run(
                env, agent, seeds=[0], progress=False, batched=False, threads=1
            )
            times["run"].append(now() - start)
            assert len(records) == rounds
            times["outside_run"].append(times["run"][-1] - records[agent_column].iloc[-1])
            start = now()
            bare_episode(env)
            times["env"].append(now() - start)
            start = now()
            linbandit_gym.run(
                env_id,
                agent,
                seeds=[0],
                env_kwargs=env_args,
                progress=False,
                batched=False,
                threads=1,
            )
            times["run_by_id"].append(now() - start)
            start = now()
            made = gym.make(env_id, **env_args)
            bare_episode(made)
            made.close()
            times["make_env"].append(now() - start)
            start = now()
            result = execute_run(spec, threads=1)
            elapsed = now() - start
            summary = result["meta"]["summary"]
            assert summary["rounds"] == rounds
            agent_s = summary["agent_time_s" if clock == "cpu" else "agent_wall_time_s"]
            times["outside_sweep_run"].append(elapsed - agent_s)
        env.close()
    return {"rounds": rounds, **{key: min(values) for key, values in times.items()}}


def checkout_of(rev: str, tmp: str) -> str:
    """The packages of git revision ``rev``, extracted under ``tmp`` (a directory for
    PYTHONPATH)."""
    archive = os.path.join(tmp, "rev.tar")
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", ROOT, "archive", rev, *PACKAGES], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    return tmp


def measure_in(path: str, args: argparse.Namespace) -> dict:
    """:func:`measure` in a fresh interpreter whose ``linbandit_gym`` is the one under ``path``."""
    env = {**os.environ, "PYTHONPATH": path + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--env",
        args.env,
        "--repeats",
        str(args.repeats),
        "--clock",
        args.clock,
        "--json",
        *[f"--env-arg={kv}" for kv in args.env_arg or ()],
    ]
    out = subprocess.run(
        command, env=env, cwd=path, check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def loop_us(result: dict) -> dict[str, float]:
    """Microseconds per round: the env's bare step, the loop's cost measured each way, and the
    time outside the agent in ``run()`` and in a sweep's run."""
    per_round = {
        key: 1e6 * value / result["rounds"] for key, value in result.items() if key != "rounds"
    }
    return {
        "env step": per_round["env"],
        "loop (instance)": per_round["run"] - per_round["env"],
        "loop (by id)": per_round["run_by_id"] - per_round["make_env"],
        "run(id) - steps": per_round["run_by_id"] - per_round["env"],
        "outside (run)": per_round["outside_run"],
        "outside (sweep run)": per_round["outside_sweep_run"],
    }


def parse_env_args(pairs) -> dict:
    out = {}
    for pair in pairs or ():
        key, _, raw = pair.partition("=")
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--env", default="LinBandit-MNIST-v0")
    p.add_argument(
        "--env-arg", action="append", metavar="K=V", help="env constructor argument, repeatable"
    )
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="the calling thread's CPU time (default) or wall-clock time",
    )
    p.add_argument("--against", default=None, metavar="REV", help="a git revision to compare with")
    p.add_argument(
        "--rounds-of",
        type=int,
        default=3,
        metavar="N",
        help="with --against: alternate N subprocesses of each side, best taken",
    )
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    env_args = parse_env_args(args.env_arg)
    if args.json:  # one measurement, for the parent process of --against
        print(json.dumps(measure(args.env, env_args, args.repeats, args.clock)))
        return
    if args.against is None:
        result = measure(args.env, env_args, args.repeats, args.clock)
        sides = {"this checkout": result}
    else:
        with tempfile.TemporaryDirectory() as tmp:
            other = checkout_of(args.against, tmp)
            sides = {"this checkout": None, args.against: None}
            for _ in range(args.rounds_of):
                for label, path in (("this checkout", ROOT), (args.against, other)):
                    result = measure_in(path, args)
                    best = sides[label]
                    sides[label] = (
                        result if best is None else {k: min(v, best[k]) for k, v in result.items()}
                    )
    rounds = next(iter(sides.values()))["rounds"]
    where = f" in each of {args.rounds_of} alternating processes" if args.against else ""
    print(
        f"{args.env} {env_args or ''}: {rounds} rounds, a pre-drawn random agent, 1 thread, "
        f"{args.clock} time, best of {args.repeats} interleaved{where}"
    )
    columns = list(loop_us(next(iter(sides.values()))))
    print(
        f"{'us per round':>14}" + "".join(f" {c:>17}" for c in columns) + f" {'loop ms/round':>14}"
    )
    for label, result in sides.items():
        figures = loop_us(result)
        print(
            f"{label[:14]:>14}"
            + "".join(f" {figures[c]:17.2f}" for c in columns)
            + f" {figures['loop (instance)'] / 1000:14.4f}"
        )
    if args.against:
        for column in ("env step", "loop (instance)", "outside (run)", "outside (sweep run)"):
            this, that = (loop_us(sides[k])[column] for k in ("this checkout", args.against))
            print(f"{column}, this checkout / {args.against}: {this / that:.2f}")


if __name__ == "__main__":
    main()
