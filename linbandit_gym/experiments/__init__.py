"""Experiments: sweeps over agents x envs x seeds, tuning, the paper's reproductions, reports.

    from linbandit_gym.experiments import sweep
    result = sweep("examples/my_sweep.yaml", "runs/my-sweep", workers=2)  # or backend="ray"

See :mod:`.config` for the config format, :class:`ExecutionOptions` for how runs execute
(workers, backend, threads, batches), :mod:`linbandit_gym.records` for the output directory
layout.
"""

from .config import ConfigError, RunSpec, SweepConfig, load_config, parse_config, run_id
from .execution import ExecutionOptions
from .sweep import SweepResult, load_records, load_runs, plan, summary_table, sweep

__all__ = [
    "ConfigError",
    "ExecutionOptions",
    "RunSpec",
    "SweepConfig",
    "SweepResult",
    "load_config",
    "load_records",
    "load_runs",
    "parse_config",
    "plan",
    "run_id",
    "summary_table",
    "sweep",
]
