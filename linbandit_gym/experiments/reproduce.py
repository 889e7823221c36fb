"""``linbandit reproduce NAME``: the experiments of Wen et al. (2025) as shipped sweep configs.

Each experiment is a YAML file under ``linbandit_gym/configs/`` (``NAME.yaml`` and the
scaled-down ``NAME-quick.yaml``); reproducing one is ``sweep`` + ``plot`` + ``report`` on it,
optionally preceded by ``tune`` (the paper's beta/lambda grid search, App. F.1). Read the
configs for what is run; their comments say where the paper is silent and what was chosen.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from .config import ConfigError, load_config
from .costs import CpuLedger
from .execution import ExecutionOptions

__all__ = ["EXPERIMENTS", "config_path", "cost_lines", "reproduce"]

EXPERIMENTS = {
    "synthetic": "Fig. 1: OFUL, SOFUL/CBSCFD l in {50, 450}, DBSLinUCB-FD/RFD l0=50 eps=8; "
    "d=500, K=100; spectral-error exponent (Fig. 1c)",
    "mnist": "Fig. 3 and 5, Table 2: OFUL, SOFUL l in {20,100,150}, DBSLinUCB eps/l0 grids, "
    "Pareto fronts; T=2000",
    "matrix-approx": "App. F.2 / Fig. 4: spectral-norm error of FD l=50 vs DBS l0=16, "
    "eps in {5,10,20}; n=1250, d=500",
    "openml": "App. F.4 / Fig. 6: Pareto fronts on cnae-9, MFeat, Spam "
    "(needs the OpenML files locally)",
    "highdim": "where sketching pays: d = 300..100,000, HeavyTail rank 32 and Synthetic arms; "
    "OFUL up to d = 3000, SOFUL/CBSCFD/DBSLinUCB at every d; fronts per d, ms/round and memory "
    "against d with fitted slopes",
    "ts": "UCB against Thompson sampling on the exact, FD and DBS estimators (OFUL/LinTS, "
    "SOFUL/SLinTS, DBSLinUCB/DBSLinTS), Synthetic d=50 and MNIST, rewards at once or 10 or 100 "
    "rounds late",
}


def config_path(name: str, quick: bool = False) -> Path:
    """The shipped config of experiment ``name`` (``-quick`` variant with ``quick``)."""
    if name not in EXPERIMENTS:
        raise ValueError(
            f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)} "
            "(see `linbandit reproduce --list`)"
        )
    path = resources.files("linbandit_gym") / "configs" / f"{name}{'-quick' if quick else ''}.yaml"
    return Path(str(path))


def reproduce(
    name: str,
    *,
    quick: bool = False,
    out: str | Path | None = None,
    tune_first: bool = False,
    schedule: str | None = None,
    eta: int | None = None,
    dtype: str | None = None,
    options: ExecutionOptions | None = None,
    log: Callable[[str], None] | None = print,
    **execution: Any,
) -> int:
    """Run experiment ``name``; write records, plots, ``summary.md`` and ``report.html`` to ``out``.

    ``options`` (and its fields as keywords, ``workers=2``): how the runs execute, those of the
    tuning sweep too (:class:`~linbandit_gym.experiments.ExecutionOptions`: workers, backend,
    threads, batches; by default the first seed of every configuration runs alone, so that the
    figures and tables of cost read times measured alone).
    ``tune_first``: tune beta and lambda first (:func:`.tune.tune` on the config's ``tune:``
    grid, into ``OUT/tune``), by ``schedule`` (``"halving"``, the default, or ``"grid"``, the
    paper's protocol) with reduction factor ``eta``. ``dtype``: ``"float32"`` or ``"float64"``
    for every agent's state (the config's ``dtype:``; default ``OUT`` then
    ``runs/reproduce-NAME-float32``).
    Prints the summary table, for sweeps under several feedback schedules the final regret of
    each agent under each (:mod:`.feedback_table`, also written to ``summary_by_schedule.md``),
    for configs with ``scaling`` plots the fitted log-log slopes, and where the CPU time went:
    tuning, evaluation (timing runs apart), figures, and the share outside the agents'
    ``act``/``update``.
    Returns the exit code (0, or 1 if some runs failed).
    """
    from .feedback_table import write_feedback_table
    from .figures import format_table, make_plots, markdown_table, write_tables
    from .report import write_report
    from .sweep import check_output_dir, sweep

    if not tune_first and (schedule is not None or eta is not None):
        raise ConfigError(
            "--schedule and --eta say how beta and lambda are tuned: give them with --tune"
        )
    run_options = ExecutionOptions.build(options, **execution)  # checked before anything is written
    raw = load_config(config_path(name, quick))
    if dtype is not None:
        raw["dtype"] = dtype
    suffix = ("-quick" if quick else "") + (f"-{dtype}" if dtype is not None else "")
    target = check_output_dir(Path(out) if out else Path("runs") / f"reproduce-{name}{suffix}")
    say = log or (lambda _msg: None)
    tuning_cost = None
    if tune_first:
        if raw.get("task", "bandit") != "bandit":
            raise ConfigError(
                f"{name}: a matrix-approximation experiment has no beta/lambda to tune"
            )
        from .tune import tune

        tuned = tune(raw, target / "tune", schedule=schedule, eta=eta, options=run_options, log=log)
        how = "successive halving" if tuned.schedule == "halving" else "the full grid"
        say(f"tuned beta and lambda by {how} (lowest mean final regret on the tuning seeds):")
        say(tuned.table_markdown())
        raw, tuning_cost = tuned.tuned_config, tuned.cost
    try:
        result = sweep(raw, target, options=run_options, log=log)
    except ConfigError as exc:
        if name == "openml":
            raise ConfigError(
                f"the OpenML experiment needs the cnae-9, MFeat and Spam datasets on this machine "
                f"(nothing is downloaded at run time). {exc}"
            ) from exc
        raise
    figures_start = time.process_time()
    table, _ = write_tables(target)
    files = make_plots(target)
    report = write_report(target, replot=False)
    figures = time.process_time() - figures_start
    print()
    print(markdown_table(format_table(table)))
    by_schedule = write_feedback_table(target)
    if by_schedule:
        print("\nfinal regret under each feedback schedule (mean ± std over the seeds):")
        print(by_schedule.read_text().rstrip())
    for slopes in sorted((target / "plots").glob("*_slopes.md")):
        print(f"\n{slopes.stem.replace('_', ' ')} (log-log fit of cost against the env argument):")
        print(slopes.read_text().rstrip())
    print(f"\n{len(files)} figure/table files under {target}; report: {report}")
    print()
    for line in cost_lines(name, tuning_cost, result.cost, figures):
        print(line)
    return 0 if result.ok else 1


def cost_lines(
    name: str, tuning: CpuLedger | None, evaluation: CpuLedger, figures: float
) -> list[str]:
    """Where the CPU time of reproducing ``name`` went: tuning, evaluation (its timing runs
    apart), figures and report; and the share outside the agents' ``act``/``update``.

    >>> tuning = CpuLedger(agents=50.0, rounds=10.0)
    >>> evaluation = CpuLedger(agents=300.0, rounds=30.0, timing_runs=40.0, driver=10.0)
    >>> print("\\n".join(cost_lines("mnist", tuning, evaluation, 10.0)))
    CPU time of reproduce mnist: 410.0 s = tuning 60.0 s + evaluation 340.0 s (timing runs
      40.0 s of it) + figures and report 10.0 s; 350.0 s (85%) in the agents' act/update,
      60.0 s (15%) outside them
    """
    keep = "\u00a0"  # no line is broken between a number and its unit
    whole = CpuLedger(figures=figures)
    whole += evaluation
    parts = []
    if tuning is not None:
        whole += tuning
        parts.append(f"tuning {tuning.total:.1f}{keep}s")
    timing = evaluation.timing_runs
    of_it = f" (timing runs {timing:.1f}{keep}s of it)" if timing > 0 else ""
    parts += [
        f"evaluation {evaluation.total:.1f}{keep}s{of_it}",
        f"figures and report {figures:.1f}{keep}s",
    ]
    text = f"CPU time of reproduce {name}: {whole.total:.1f}{keep}s = {' + '.join(parts)}"
    if whole.total > 0:
        text += (
            f"; {whole.agents:.1f}{keep}s ({whole.agents / whole.total:.0%}) in the agents' "
            f"act/update, {whole.outside_agents:.1f}{keep}s ({whole.share_outside():.0%}) "
            "outside them"
        )
    lines = textwrap.wrap(text, width=90, subsequent_indent="  ")
    return [line.replace(keep, " ") for line in lines]
