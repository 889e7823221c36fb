"""The experiment subcommands of ``linbandit``: sweep, plot, tune, reproduce, report, agreement.

    linbandit sweep CONFIG [--out DIR] [--workers N] [--backend ray [--address A]] [--no-batched]
    linbandit plot DIR
    linbandit tune CONFIG [--out DIR] [--beta ...] [--lam ...] [--schedule halving|grid] [--eta ETA]
    linbandit reproduce NAME [--quick] [--tune [--schedule halving|grid]] [--out DIR] [--workers N]
    linbandit report DIR [--format html|md]
    linbandit agreement REFERENCE OTHER [--csv FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..batched import DEFAULT_MAX_BATCH
from ..experiments.packing import DEFAULT_BATCH_MEMORY
from ..threads import DEFAULT_THREADS

__all__ = ["add_commands"]


def _add_exec_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="parallel runs: local worker processes (default 1: in this process) or local Ray CPUs")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local processes (default) or Ray (pip install 'linbandit-gym[ray]')")
    p.add_argument("--address", default=None, metavar="ADDR",
                   help="Ray cluster address, e.g. ray://head:10001 or auto (default: start a local Ray)")
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS, metavar="T",
                   help="torch and BLAS threads per run (default 1: runs are small ops; use --workers for parallelism)")
    p.add_argument("--batched", action=argparse.BooleanOptionalAction, default=None,
                   help="advance runs that differ only in seed and in the agent's per-member arguments (lam, beta, ...) "
                   "together as one batched program, each still saved as its own run (default: where the agent and "
                   "env allow it, the agent's state is small, < 1 MiB, and 8 members at least "
                   "share a batch, so that a batch is faster; --batched: wherever allowed; "
                   "--no-batched: one run at a time)")
    p.add_argument("--batch-memory", default=DEFAULT_BATCH_MEMORY, type=_memory_size, metavar="SIZE",
                   help="memory budget of one batch, e.g. 2GiB (default), 512M")
    p.add_argument("--max-batch", type=int, default=None, metavar="B",
                   help=f"members of one batch at most (default {DEFAULT_MAX_BATCH})")
    p.add_argument("--quiet", action="store_true", help="no line per finished run")


def _add_dtype_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dtype", choices=("float32", "float64"), default=None,
                   help="the dtype of every agent's state (default: the config's dtype:, else each "
                   "agent's own, float64 on CPU); float32 runs are other runs than float64 ones "
                   "(their ids differ); `linbandit agreement DIR64 DIR32` compares them")


def _with_dtype(config: str, dtype: str | None) -> dict:
    """The config at ``config`` (a path), with ``dtype:`` set when ``--dtype`` was given."""
    from ..experiments.config import load_config

    raw = load_config(config)
    if dtype is not None:
        raw["dtype"] = dtype
        raw.setdefault("name", Path(config).stem)  # the name the file gives a config without one
    return raw


def _add_timing_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timing-runs", action=argparse.BooleanOptionalAction, default=True,
                   help="play the first seed of every configuration on its own, so that every configuration has a "
                   "time measured alone, which the tables and figures of cost read (default); with --no-timing-runs "
                   "every seed may be batched and the times of batched runs are shares of their batch's")
    p.add_argument("--timing-repeats", type=int, default=None, metavar="R",
                   help="play each timing run R times, each round keeping its least time, what the rest of the "
                   "machine disturbed least (default: the config's timing_repeats, else 1)")


def _add_schedule_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schedule", choices=("halving", "grid"), default=None,
                   help="how the beta x lam grid is searched: halving (default, or the config's "
                        "tune.schedule): successive halving, every pair plays the first T/eta^k "
                        "rounds and the best 1/eta go on from where they stopped, to T; grid: "
                        "every pair plays every round, the paper's protocol (App. F.1)")
    p.add_argument("--eta", type=int, default=None, metavar="ETA",
                   help="successive halving keeps the best 1/ETA of the pairs at each rung "
                        "(default 3, or the config's tune.eta)")


def _memory_size(text: str) -> int:
    from ..experiments.packing import parse_bytes

    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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

    cfg = parse_config(_with_dtype(args.config, args.dtype) if args.dtype else args.config)
    out = Path(args.out) if args.out else default_out_dir(cfg)
    if args.dry_run:
        finished, pending = plan(cfg, out)
        print(f"{cfg.name}: {len(cfg.runs)} runs ({len(finished)} finished, {len(pending)} to run) in {out}")
        for spec in cfg.runs:
            state = "done" if spec in finished else "todo"
            print(f"  {spec.run_id}  {state}  {spec.agent_label} | {spec.env_label} | seed {spec.seed}")
        print(_largest_run_line(cfg))
        return 0
    result = sweep(cfg, out, workers=args.workers, backend=args.backend, address=args.address,
                   threads=args.threads, batched=args.batched, batch_memory=args.batch_memory,
                   max_batch=args.max_batch, timing_runs=args.timing_runs, timing_repeats=args.timing_repeats,
                   log=_log(args))
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
    """``largest run: AGENT on ENV, about 3.5 MB (agent 1.2 MB, env 2.3 MB) of 20 GB available``."""
    from ..envs.memory import format_bytes, memory_limit_bytes

    largest = cfg.largest_run()
    if largest is None:
        return "largest run: memory unknown"
    (agent, env), memory = largest
    agent_part = ("agent: no estimate" if memory.agent_bytes is None else
                  f"agent {'up to ' if memory.agent_grows else ''}{format_bytes(memory.agent_bytes)}")
    return (f"largest run: {agent} on {env}, about {format_bytes(memory.total)} ({agent_part}, env "
            f"{format_bytes(memory.env_bytes)}) of {format_bytes(memory_limit_bytes())} available")


def _cmd_plot(args: argparse.Namespace) -> int:
    from ..experiments.figures import make_plots

    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    files = make_plots(args.dir, formats=formats)
    for path in files:
        print(path)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from ..experiments.report import write_report

    path = write_report(args.dir, fmt=args.format, out=args.out, replot=not args.no_replot)
    print(f"report written to {path}")
    return 0


def _cmd_tune(args: argparse.Namespace) -> int:
    from ..experiments.tune import tune

    result = tune(
        _with_dtype(args.config, args.dtype), args.out, beta=args.beta, lam=args.lam,
        seeds=args.seeds, horizon=args.horizon, agents=args.agents, schedule=args.schedule,
        eta=args.eta, workers=args.workers, backend=args.backend, address=args.address,
        threads=args.threads, batched=args.batched, batch_memory=args.batch_memory,
        max_batch=args.max_batch, log=_log(args),
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
        args.name, quick=args.quick, out=args.out, tune_first=args.tune, schedule=args.schedule,
        eta=args.eta, dtype=args.dtype, workers=args.workers, backend=args.backend,
        address=args.address, threads=args.threads, batched=args.batched,
        batch_memory=args.batch_memory, max_batch=args.max_batch, timing_runs=args.timing_runs,
        timing_repeats=args.timing_repeats, log=_log(args),
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
        "sweep", help="run a sweep config: agents x envs x seeds, resumable",
        description="Expand CONFIG (YAML or TOML: agents with grids, envs with args, seeds) into runs and execute "
        "those not finished yet in DIR; each finished run is written atomically with its config, versions and "
        "summary. Rerunning the same command resumes. Prints the summary table and writes the plots.",
    )
    p.add_argument("config", metavar="CONFIG", help="sweep config (.yaml/.yml or .toml)")
    p.add_argument("--out", default=None, metavar="DIR", help="output directory (default runs/<config name>)")
    p.add_argument("--dry-run", action="store_true", help="list the runs and which are finished; run nothing")
    p.add_argument("--no-plots", action="store_true", help="skip writing plots after the sweep")
    _add_dtype_option(p)
    _add_exec_options(p)
    _add_timing_option(p)
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser(
        "plot", help="plots and summary tables of a sweep directory",
        description="Write DIR/plots/*.png|pdf (regret curves, Pareto fronts regret-vs-time and regret-vs-memory, "
        "spectral-error exponent, sketch size, parameter effects) and DIR/summary.csv|md.",
    )
    p.add_argument("dir", metavar="DIR", help="a sweep output directory")
    p.add_argument("--formats", default="png,pdf", metavar="F,F", help="figure formats (default png,pdf)")
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
    p.add_argument("--out", default=None, metavar="DIR", help="output directory (default runs/<name>-tune)")
    p.add_argument("--beta", type=float, nargs="+", default=None, metavar="B", help="beta grid")
    p.add_argument("--lam", type=float, nargs="+", default=None, metavar="L", help="lambda grid")
    p.add_argument("--seeds", type=int, default=None, metavar="S", help="tuning seeds (default: config's tune.seeds or 2)")
    p.add_argument("--horizon", type=int, default=None, metavar="N", help="tuning horizon (default: the sweep's)")
    p.add_argument("--agents", nargs="+", default=None, metavar="GLOB", help="tune only these agent labels")
    _add_schedule_options(p)
    _add_dtype_option(p)
    _add_exec_options(p)
    p.set_defaults(func=_cmd_tune)

    p = sub.add_parser(
        "reproduce",
        help="reproduce an experiment of Wen et al. (2025): synthetic, mnist, matrix-approx, openml; or highdim",
        description="Run the shipped sweep config of a paper experiment, then write plots, tables and a report. "
        "--quick runs a scaled-down version in minutes on 2 cores.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="experiment name (see --list)")
    p.add_argument("--list", action="store_true", help="list the experiments")
    p.add_argument("--quick", action="store_true", help="the scaled-down version (minutes on 2 cores)")
    p.add_argument("--tune", action="store_true", help="tune beta and lambda first (the config's tune: grid)")
    p.add_argument("--out", default=None, metavar="DIR", help="output directory (default runs/reproduce-NAME[-quick])")
    _add_schedule_options(p)
    _add_dtype_option(p)
    _add_exec_options(p)
    _add_timing_option(p)
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
    p.add_argument("reference", metavar="REFERENCE",
                   help="the reference sweep directory (e.g. float64)")
    p.add_argument("other", metavar="OTHER",
                   help="the sweep directory compared with it (e.g. float32)")
    p.add_argument("--csv", default=None, metavar="FILE",
                   help="also write the table as CSV to FILE")
    p.set_defaults(func=_cmd_agreement)

    p = sub.add_parser(
        "report", help="one self-contained HTML (or Markdown) report of a sweep directory",
        description="Write DIR/report.html (plots embedded) or DIR/report.md with the summary tables, the "
        "figures, the config, library versions and any failed runs.",
    )
    p.add_argument("dir", metavar="DIR", help="a sweep output directory")
    p.add_argument("--format", choices=("html", "md"), default="html", help="html (default, self-contained) or md")
    p.add_argument("--out", default=None, metavar="FILE", help="report path (default DIR/report.html|md)")
    p.add_argument("--no-replot", action="store_true", help="use the existing DIR/plots instead of redrawing")
    p.set_defaults(func=_cmd_report)
