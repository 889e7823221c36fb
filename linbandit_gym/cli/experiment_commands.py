"""The experiment subcommands of ``linbandit``: sweep, plot, tune, reproduce, report, agreement.

linbandit sweep CONFIG [--out DIR] [--workers N] [--backend ray [--address A]] [--no-batched]
                       [--feedback-delay K ...] [--update-every N ...]
linbandit plot DIR
linbandit tune CONFIG [--out DIR] [--beta ...] [--lam ...] [--schedule halving|grid] [--eta ETA]
linbandit reproduce NAME [--quick] [--tune [--schedule halving|grid]] [--out DIR] [--workers N]
linbandit report DIR [--format html|md]
linbandit agreement REFERENCE OTHER [--csv FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..batched import DEFAULT_MAX_BATCH
from ..experiments.execution import ExecutionOptions

__all__ = ["EXECUTION_FLAGS", "add_commands", "add_execution_flags", "execution_options"]


def _add_feedback_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--feedback-delay",
        type=int,
        nargs="+",
        default=None,
        metavar="K",
        help="round t's update after round t + K's act, for every run (several values: "
        "one run per value); as the config's top-level feedback_delay, which it "
        "replaces",
    )
    p.add_argument(
        "--update-every",
        type=int,
        nargs="+",
        default=None,
        metavar="N",
        help="updates held and applied, in order, every N rounds, for every run "
        "(several values: one run per value); as the config's top-level update_every, "
        "which it replaces",
    )


def _add_dtype_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default=None,
        help="the dtype of every agent's state (default: the config's dtype:, else each "
        "agent's own, float64 on CPU); float32 runs are other runs than float64 ones "
        "(their ids differ); `linbandit agreement DIR64 DIR32` compares them",
    )


def _config_source(args: argparse.Namespace):
    """``args.config``, or its contents with the top-level ``feedback_delay`` and
    ``update_every`` that ``--feedback-delay`` and ``--update-every`` give (each checked under
    its flag first) and the ``dtype`` that ``--dtype`` gives."""
    from ..experiments.config import load_config
    from ..feedback import schedule_problems

    given = {key: getattr(args, key, None) for key in ("feedback_delay", "update_every")}
    given = {key: values for key, values in given.items() if values is not None}
    dtype = getattr(args, "dtype", None)
    if not given and dtype is None:
        return args.config
    flags = ("--feedback-delay", "--update-every")
    problems = [
        problem
        for value in given.get("feedback_delay", [])
        for problem in schedule_problems(value, 1, flags)
    ]
    problems += [
        problem
        for value in given.get("update_every", [])
        for problem in schedule_problems(0, value, flags)
    ]
    if problems:
        raise ValueError("\n".join(problems))
    raw = load_config(args.config)
    raw["name"] = raw.get("name") or Path(args.config).stem  # as parse_config names a file's sweep
    raw.update({key: values[0] if len(values) == 1 else values for key, values in given.items()})
    if dtype is not None:
        raw["dtype"] = dtype
    return raw


def _add_schedule_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--schedule",
        choices=("halving", "grid"),
        default=None,
        help="how the beta x lam grid is searched: halving (default, or the config's "
        "tune.schedule): successive halving, every pair plays the first T/eta^k "
        "rounds and the best 1/eta go on from where they stopped, to T; grid: "
        "every pair plays every round, the paper's protocol (App. F.1)",
    )
    p.add_argument(
        "--eta",
        type=int,
        default=None,
        metavar="ETA",
        help="successive halving keeps the best 1/ETA of the pairs at each rung "
        "(default 3, or the config's tune.eta)",
    )


def _memory_size(text: str) -> int:
    from linbandit_host.memory import parse_bytes

    try:
        return parse_bytes(text, "--batch-memory")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: The flags of the execution options (:class:`~linbandit_gym.experiments.ExecutionOptions`), by
#: field: every playing subcommand adds the ones it takes, and :func:`execution_options` reads
#: them back. Defaults are the fields' own.
EXECUTION_FLAGS: dict[str, dict] = {
    "workers": dict(
        type=int,
        metavar="N",
        help="parallel runs: at most N local worker processes (default 1: in this process; fewer, "
        "or none, where the planned runs are too short to pay for starting them) or N local Ray "
        "CPUs",
    ),
    "backend": dict(
        choices=("local", "ray"),
        help="local processes (default) or Ray (pip install 'linbandit-gym[ray]')",
    ),
    "address": dict(
        metavar="ADDR",
        help="Ray cluster address, e.g. ray://head:10001 or auto (default: start a local Ray)",
    ),
    "threads": dict(
        type=int,
        metavar="T",
        help="torch and BLAS threads per run (default 1: runs are small ops; use --workers for "
        "parallelism)",
    ),
    "batched": dict(
        action=argparse.BooleanOptionalAction,
        help="advance runs that differ only in seed (and, in a sweep, in the agent's per-member "
        "arguments: lam, beta, ...) together as one batched program, each still saved as its own "
        "run (default: where the agent and env allow it, the agent's state is small, < 1 MiB, "
        "and 4 members at least share a batch, so that a batch is faster; --batched: wherever "
        "allowed; --no-batched: one run at a time, each timed alone)",
    ),
    "batch_memory": dict(
        type=_memory_size,
        metavar="SIZE",
        help="memory budget of one batch, e.g. 2GiB (default), 512M (binary: 1K = 1024 bytes)",
    ),
    "max_batch": dict(
        type=int, metavar="B", help=f"members of one batch at most (default {DEFAULT_MAX_BATCH})"
    ),
    "timing_runs": dict(
        action=argparse.BooleanOptionalAction,
        help="play the first seed of every configuration on its own, so that every configuration "
        "has a time measured alone, which the tables and figures of cost read (default); with "
        "--no-timing-runs every seed may be batched and the times of batched runs are shares of "
        "their batch's",
    ),
    "timing_repeats": dict(
        type=int,
        metavar="R",
        help="play each timing run R times, each round keeping its least time, what the rest of "
        "the machine disturbed least (default: the config's timing_repeats, else 1)",
    ),
}

#: The flags of ``sweep``, ``tune`` and ``reproduce`` (``tune`` times nothing: no timing flags).
RUN_FLAGS = ("workers", "backend", "address", "threads", "batched", "batch_memory", "max_batch")
TIMING_FLAGS = ("timing_runs", "timing_repeats")


def flag(name: str) -> str:
    """The flag of execution option ``name``: ``batch_memory`` -> ``--batch-memory``."""
    return "--" + name.replace("_", "-")


def add_execution_flags(p: argparse.ArgumentParser, names: tuple[str, ...]) -> None:
    """Add the flags of the execution options ``names`` to ``p``, with the options' defaults."""
    defaults = ExecutionOptions()
    for name in names:
        p.add_argument(flag(name), default=getattr(defaults, name), **EXECUTION_FLAGS[name])


def execution_options(args: argparse.Namespace) -> ExecutionOptions:
    """The :class:`~linbandit_gym.experiments.ExecutionOptions` of the flags in ``args``,
    checked before anything runs; a bad value is a ``ValueError`` naming the flag."""
    given = {name: getattr(args, name) for name in ExecutionOptions.names() if name in args}
    try:
        return ExecutionOptions(**given)
    except ValueError as exc:
        message = str(exc)
        names = sorted(given, key=len, reverse=True)  # max_batch before a shorter prefix
        name = next((n for n in names if message.startswith(n)), None)
        raise ValueError(flag(name) + message[len(name) :] if name else message) from None


def _log(args):
    return None if getattr(args, "quiet", False) else print


def _print_summary(out_dir: Path) -> int:
    from ..experiments.figures import format_table, markdown_table, write_tables

    table, _ = write_tables(out_dir)
    if not table.empty:
        print()
        print(markdown_table(format_table(table)))
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ..experiments.config import parse_config
    from ..experiments.sweep import default_out_dir, plan, sweep

    # every option is checked, with --dry-run too: a dry run says whether the command would run
    options = execution_options(args)
    cfg = parse_config(_config_source(args))
    out = Path(args.out) if args.out else default_out_dir(cfg)
    if args.dry_run:
        finished, pending = plan(cfg, out)
        print(
            f"{cfg.name}: {len(cfg.runs)} runs ({len(finished)} finished, "
            f"{len(pending)} to run) in {out}"
        )
        for spec in cfg.runs:
            state = "done" if spec in finished else "todo"
            print(
                f"  {spec.run_id}  {state}  {spec.agent_label} | {spec.env_label} "
                f"| seed {spec.seed}"
            )
        print(_largest_run_line(cfg))
        return 0
    result = sweep(cfg, out, options=options, log=_log(args))
    if args.quiet:  # the lines of the runs are left out, not where the time went
        for line in result.cost.lines():
            print(line)
    _print_summary(out)
    if not args.no_plots:
        from ..experiments.figures import make_plots

        files = make_plots(out)
        print(f"\n{len(files)} plot/table files written under {out}")
    return 0 if result.ok else 1


def _largest_run_line(cfg) -> str:
    """``largest run: AGENT on ENV, about 3.5 MiB (agent 1.2 MiB, env 2.3 MiB, records 1 MiB) of
    20 GiB available``."""
    from ..envs.memory import format_bytes, memory_limit_bytes

    largest = cfg.largest_run()
    if largest is None:
        return "largest run: memory unknown"
    (agent, env), memory = largest
    agent_part = (
        "agent: no estimate"
        if memory.agent_bytes is None
        else f"agent {'up to ' if memory.agent_grows else ''}{format_bytes(memory.agent_bytes)}"
    )
    return (
        f"largest run: {agent} on {env}, about {format_bytes(memory.total)} ({agent_part}, env "
        f"{format_bytes(memory.env_bytes)}, records {format_bytes(memory.records_bytes)}) of "
        f"{format_bytes(memory_limit_bytes())} available"
    )


def _note_partial(command: str, out_dir: str | Path) -> None:
    """Say on stderr when the tables and figures just written hold only part of the config's
    runs (a sweep still writing the directory, runs not finished or deleted)."""
    from ..experiments.sweep import completeness

    note = completeness(out_dir).note()
    if note:
        print(f"linbandit {command}: note: {note}", file=sys.stderr)


def _cmd_plot(args: argparse.Namespace) -> int:
    from ..experiments.figures import make_plots

    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    files = make_plots(args.dir, formats=formats)
    for path in files:
        print(path)
    _note_partial("plot", args.dir)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from ..experiments.report import write_report

    path = write_report(args.dir, fmt=args.format, out=args.out, replot=not args.no_replot)
    print(f"report written to {path}")
    _note_partial("report", args.dir)
    return 0


def _cmd_tune(args: argparse.Namespace) -> int:
    from ..experiments.tune import tune

    options = execution_options(args)
    result = tune(
        _config_source(args),
        args.out,
        beta=args.beta,
        lam=args.lam,
        seeds=args.seeds,
        horizon=args.horizon,
        agents=args.agents,
        schedule=args.schedule,
        eta=args.eta,
        options=options,
        log=_log(args),
    )
    print()
    print(result.table_markdown())
    print(f"\nchosen values written to {result.tuned_path}; tuned config: {result.config_path}")
    return 0 if result.ok else 1


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from ..experiments.reproduce import EXPERIMENTS, reproduce

    if args.list or not args.name:
        for name, text in EXPERIMENTS.items():
            print(f"  {name:14s} {text}")
        return 0 if args.list else 2
    return reproduce(
        args.name,
        quick=args.quick,
        out=args.out,
        tune_first=args.tune,
        schedule=args.schedule,
        eta=args.eta,
        dtype=args.dtype,
        options=execution_options(args),
        log=_log(args),
    )


def _cmd_agreement(args: argparse.Namespace) -> int:
    from ..experiments.agreement import agreement
    from ..experiments.figures import markdown_table

    try:
        result = agreement(args.reference, args.other)
    except ValueError as exc:
        raise SystemExit(f"linbandit agreement: error: {exc}") from None
    table = result.table.copy()
    table["identical_choices"] = table["identical_choices"].map(lambda v: f"{v:.1%}")
    table["first_parting"] = table["first_parting"].map(lambda v: "never" if v != v else f"{v:.0f}")
    for column in table.columns:
        if column.startswith("regret"):
            table[column] = table[column].map(lambda v: f"{v:.3f}")
    print(markdown_table(table.rename(columns=lambda c: c.replace("_", " "))))
    print()
    for line in result.lines():
        print(line)
    if args.csv:
        result.table.to_csv(args.csv, index=False)
        print(f"table written to {args.csv}")
    return 0


def add_commands(sub) -> None:
    """Add the experiment subcommands to the ``linbandit`` subparsers ``sub``."""
    p = sub.add_parser(
        "sweep",
        help="run a sweep config: agents x envs x seeds, resumable",
        description="Expand CONFIG (YAML or TOML: agents with grids, envs with args, seeds) into "
        "runs and execute those not finished yet in DIR; each finished run is written atomically "
        "with its config, versions and summary. Rerunning the same command resumes. Prints the "
        "summary table and writes the plots.",
    )
    p.add_argument("config", metavar="CONFIG", help="sweep config (.yaml/.yml or .toml)")
    p.add_argument(
        "--out", default=None, metavar="DIR", help="output directory (default runs/<config name>)"
    )
    p.add_argument(
        "--dry-run", action="store_true", help="list the runs and which are finished; run nothing"
    )
    p.add_argument("--no-plots", action="store_true", help="skip writing plots after the sweep")
    _add_dtype_option(p)
    add_execution_flags(p, RUN_FLAGS + TIMING_FLAGS)
    p.add_argument("--quiet", action="store_true", help="no line per finished run")
    _add_feedback_options(p)
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser(
        "plot",
        help="plots and summary tables of a sweep directory",
        description="Write DIR/plots/*.png|pdf (regret curves, Pareto fronts regret-vs-time and "
        "regret-vs-memory, spectral-error exponent, sketch size, parameter effects) and "
        "DIR/summary.csv|md.",
    )
    p.add_argument("dir", metavar="DIR", help="a sweep output directory")
    p.add_argument(
        "--formats", default="png,pdf", metavar="F,F", help="figure formats (default png,pdf)"
    )
    p.set_defaults(func=_cmd_plot)

    p = sub.add_parser(
        "tune",
        help="search beta and lambda for each agent of a sweep config (successive halving or grid)",
        description="For every agent config of CONFIG (or those matching --agents), search the "
        "grid beta x lam (default: the config's tune: section, else the paper's "
        "grids) and keep the pair with the lowest mean final regret: by successive "
        "halving (default), or every pair to the end (--schedule grid, the paper's "
        "protocol). Writes DIR/tuned.yaml and DIR/tuned-config.yaml (CONFIG with a "
        "tuned: section, and the schedule that chose it in its tune: section).",
    )
    p.add_argument("config", metavar="CONFIG", help="sweep config (.yaml/.yml or .toml)")
    p.add_argument(
        "--out", default=None, metavar="DIR", help="output directory (default runs/<name>-tune)"
    )
    p.add_argument("--beta", type=float, nargs="+", default=None, metavar="B", help="beta grid")
    p.add_argument("--lam", type=float, nargs="+", default=None, metavar="L", help="lambda grid")
    p.add_argument(
        "--seeds",
        type=int,
        default=None,
        metavar="S",
        help="tuning seeds (default: config's tune.seeds or 2)",
    )
    p.add_argument(
        "--horizon",
        type=int,
        default=None,
        metavar="N",
        help="tuning horizon (default: the sweep's)",
    )
    p.add_argument(
        "--agents", nargs="+", default=None, metavar="GLOB", help="tune only these agent labels"
    )
    _add_schedule_options(p)
    _add_dtype_option(p)
    add_execution_flags(p, RUN_FLAGS)
    p.add_argument("--quiet", action="store_true", help="no line per finished run")
    p.set_defaults(func=_cmd_tune)

    p = sub.add_parser(
        "reproduce",
        help="reproduce an experiment of Wen et al. (2025): synthetic, mnist, matrix-approx, "
        "openml; or highdim, ts (UCB against Thompson sampling, delayed feedback)",
        description="Run the shipped sweep config of a paper experiment, then write plots, tables "
        "and a report. --quick runs a scaled-down version in minutes on 2 cores.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="experiment name (see --list)")
    p.add_argument("--list", action="store_true", help="list the experiments")
    p.add_argument(
        "--quick", action="store_true", help="the scaled-down version (minutes on 2 cores)"
    )
    p.add_argument(
        "--tune", action="store_true", help="tune beta and lambda first (the config's tune: grid)"
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="output directory (default runs/reproduce-NAME[-quick])",
    )
    _add_schedule_options(p)
    _add_dtype_option(p)
    add_execution_flags(p, RUN_FLAGS + TIMING_FLAGS)
    p.add_argument("--quiet", action="store_true", help="no line per finished run")
    p.set_defaults(func=_cmd_reproduce)

    p = sub.add_parser(
        "agreement",
        help="how far two sweeps of the same runs in different dtypes agree (float32 and float64)",
        description="Pair the runs of two sweep directories whose configs differ only in the "
        "agents' dtype (or device), e.g. `linbandit sweep C --out A` and `linbandit "
        "sweep C --dtype float32 --out B`, and print per configuration the share of "
        "rounds in which both chose the same arm, the first round where they parted, "
        "and the final regrets of both with their difference.",
    )
    p.add_argument(
        "reference", metavar="REFERENCE", help="the reference sweep directory (e.g. float64)"
    )
    p.add_argument(
        "other", metavar="OTHER", help="the sweep directory compared with it (e.g. float32)"
    )
    p.add_argument(
        "--csv", default=None, metavar="FILE", help="also write the table as CSV to FILE"
    )
    p.set_defaults(func=_cmd_agreement)

    p = sub.add_parser(
        "report",
        help="one self-contained HTML (or Markdown) report of a sweep directory",
        description="Write DIR/report.html (plots embedded) or DIR/report.md with the summary "
        "tables, the figures, the config, library versions and any failed runs.",
    )
    p.add_argument("dir", metavar="DIR", help="a sweep output directory")
    p.add_argument(
        "--format",
        choices=("html", "md"),
        default="html",
        help="html (default, self-contained) or md",
    )
    p.add_argument(
        "--out", default=None, metavar="FILE", help="report path (default DIR/report.html|md)"
    )
    p.add_argument(
        "--no-replot", action="store_true", help="use the existing DIR/plots instead of redrawing"
    )
    p.set_defaults(func=_cmd_report)
