"""``linbandit reproduce NAME``: the experiments of Wen et al. (2025) as shipped sweep configs.

Each experiment is a YAML file under ``linbandit_gym/configs/`` (``NAME.yaml`` and the
scaled-down ``NAME-quick.yaml``); reproducing one is ``sweep`` + ``plot`` + ``report`` on it,
optionally preceded by ``tune`` (the paper's beta/lambda grid search, App. F.1). Read the
configs for what is run; their comments say where the paper is silent and what was chosen.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Callable

from .config import ConfigError, load_config
from .execution import ExecutionOptions

__all__ = ["EXPERIMENTS", "config_path", "reproduce"]

EXPERIMENTS = {
    "synthetic": "Fig. 1: OFUL, SOFUL/CBSCFD l in {50, 450}, DBSLinUCB-FD/RFD l0=50 eps=8; d=500, K=100; "
    "spectral-error exponent (Fig. 1c)",
    "mnist": "Fig. 3 and 5, Table 2: OFUL, SOFUL l in {20,100,150}, DBSLinUCB eps/l0 grids, Pareto fronts; T=2000",
    "matrix-approx": "App. F.2 / Fig. 4: spectral-norm error of FD l=50 vs DBS l0=16, eps in {5,10,20}; n=1250, d=500",
    "openml": "App. F.4 / Fig. 6: Pareto fronts on cnae-9, MFeat, Spam (needs the OpenML files locally)",
    "highdim": "where sketching pays: d = 300..100,000, HeavyTail rank 32 and Synthetic arms; OFUL up to d = 3000, "
    "SOFUL/CBSCFD/DBSLinUCB at every d; fronts per d, ms/round and memory against d with fitted slopes",
    "ts": "UCB against Thompson sampling on the exact, FD and DBS estimators (OFUL/LinTS, "
    "SOFUL/SLinTS, DBSLinUCB/DBSLinTS), Synthetic d=50 and MNIST, rewards at once or 10 or 100 "
    "rounds late",
}


def config_path(name: str, quick: bool = False) -> Path:
    """The shipped config of experiment ``name`` (``-quick`` variant with ``quick``)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)} (see `linbandit reproduce --list`)")
    path = resources.files("linbandit_gym") / "configs" / f"{name}{'-quick' if quick else ''}.yaml"
    return Path(str(path))


def reproduce(
    name: str,
    *,
    quick: bool = False,
    out: str | Path | None = None,
    tune_first: bool = False,
    options: ExecutionOptions | None = None,
    log: Callable[[str], None] | None = print,
    **execution: Any,
) -> int:
    """Run experiment ``name``; write records, plots, ``summary.md`` and ``report.html`` to ``out``.

    ``options`` (and its fields as keywords, ``workers=2``): how the runs execute, those of the
    tuning sweep too (:class:`~linbandit_gym.experiments.ExecutionOptions`: workers, backend,
    threads, batches; by default the first seed of every configuration runs alone, so that the
    figures and tables of cost read times measured alone).
    Prints the summary table, for sweeps under several feedback schedules the final regret of
    each agent under each (:mod:`.feedback_table`, also written to ``summary_by_schedule.md``)
    and, for configs with ``scaling`` plots, the fitted log-log slopes.
    Returns the exit code (0, or 1 if some runs failed).
    """
    from .feedback_table import write_feedback_table
    from .figures import format_table, make_plots, markdown_table, write_tables
    from .report import write_report
    from .sweep import check_output_dir, sweep

    run_options = ExecutionOptions.build(options, **execution)  # checked before anything is written
    raw = load_config(config_path(name, quick))
    default = Path("runs") / f"reproduce-{name}{'-quick' if quick else ''}"
    target = check_output_dir(Path(out) if out else default)
    say = log or (lambda _msg: None)
    if tune_first:
        if raw.get("task", "bandit") != "bandit":
            raise ConfigError(f"{name}: a matrix-approximation experiment has no beta/lambda to tune")
        from .tune import tune

        tuned = tune(raw, target / "tune", options=run_options, log=log)
        say("tuned beta and lambda (lowest mean final regret on the tuning seeds):")
        say(tuned.table_markdown())
        raw = tuned.tuned_config
    try:
        result = sweep(raw, target, options=run_options, log=log)
    except ConfigError as exc:
        if name == "openml":
            raise ConfigError(
                f"the OpenML experiment needs the cnae-9, MFeat and Spam datasets on this machine (nothing is "
                f"downloaded at run time). {exc}"
            ) from exc
        raise
    table, _ = write_tables(target)
    files = make_plots(target)
    report = write_report(target, replot=False)
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
    return 0 if result.ok else 1
