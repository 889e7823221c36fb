"""Sweep configurations: load (YAML/TOML/dict), validate, expand into runs.

A sweep config names agents (with parameter grids), envs (with arguments) and seeds; it
expands into one *run* per (agent config, env config, seed). Example (YAML)::

    name: small-synthetic
    seeds: 3                      # an int n (seeds 0..n-1) or a list of seeds
    horizon: 500                  # passed to every env as its ``horizon`` keyword
    envs:
      - id: LinBandit-Synthetic-v0
        args: {d: 100, n_arms: 50}
        label: synthetic          # optional (default: the id)
    agents:
      - name: OFUL                # a registered agent name or "package.module:Class"
        args: {lam: 1.0, beta: 0.1}
      - name: SOFUL
        args: {lam: 1.0, beta: 0.1}
        grid: {sketch_size: [10, 50]}       # cartesian product of the lists ...
        label: "SOFUL l={sketch_size}"      # optional format string over the args
      - name: DBSLinUCB
        family: DBSLinUCB-FD                # groups points on Pareto plots (default: name)
        envs: [synthetic]                   # optional: only on these env labels (globs)
        args: {lam: 1.0, beta: 0.1, sketch: fd}
        grid: [{l0: 10, eps: 2}, {l0: 20, eps: 8}]   # ... or an explicit list of points
    record:
      spectral_error: 50          # every 50 rounds record Delta_t and ||X^T X - cov||_2 (O(d^3));
                                  # an agents entry may carry its own record: (overrides this)
    plots:                        # optional: which figures ``linbandit plot`` draws
      - {kind: regret, agents: ["OFUL", "SOFUL*"], name: fig1a}
      - {kind: scaling, env: "synthetic-*", x: d}   # ms/round and memory against an env argument
                                                    # (log-log, fitted slopes); fronts: Pareto
                                                    # panels of the matching envs side by side
                                                    # (env: a label or glob, every kind)
    tune:                         # optional: defaults of ``linbandit tune``
      beta: [0.01, 0.1, 1.0]
      lam: [0.2, 2.0]
      schedule: halving           # successive halving (default), or grid: every pair to the end
      eta: 3                      # halving keeps the best 1/eta of the pairs at each rung
    tuned:                        # optional: per env label, per agent label (glob): arg overrides
      synthetic: {"SOFUL*": {beta: 0.1, lam: 2.0}}
    feedback_delay: 10            # optional: round t's update after round t + 10's act (default 0)
    update_every: 1               # optional: updates applied every n rounds (default 1); either
                                  # key may be a list (one run per value) and an agents entry may
                                  # carry its own (overrides this)

``task: matrix-approx`` configs instead stream Gaussian rows through covariance sketches
(no bandit; Wen et al. (2025), App. F.2): ``data: {n, d}`` replaces ``envs`` and each
``agents`` entry names an agent whose covariance estimator is sketched (or a ``module:Class``
estimator).

Every run has a stable id: the first 16 hex digits of the SHA-256 of its canonical JSON
(agent name and full args, env id and args, seed, recording options). Labels are not part of
it, so relabelling a finished sweep does not redo it.
"""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import itertools
import json
import numbers
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from linbandit_host.seeds import SEED_LIMIT, check_seeds

from ..arguments import ArgumentProblem, format_problems, named_argument
from ..feedback import FeedbackSchedule, schedule_problems
from ..records import canonical_json, run_id
from ..registration import ENV_IDS
from ..registry import (
    AgentEntry,
    RunMemory,
    check_run_fits,
    estimate_run_bytes,
    lookup_agent,
    lookup_estimator,
)
from ..specs import (
    args_label,
    check_file_name,
    did_you_mean,
    env_argument_problems,
    env_arguments,
    format_label,
)

__all__ = [
    "ConfigError",
    "RunSpec",
    "SweepConfig",
    "load_config",
    "parse_config",
    "run_id",
    "canonical_json",
    "MAX_RUNS",
    "MAX_CONFIG_VALUES",
    "MAX_CONFIG_TEXT",
    "check_config_size",
    "SEED_LIMIT",
]

TOP_LEVEL_KEYS = {
    "name": "a name for the sweep (default output directory runs/NAME)",
    "description": "free text (a string), shown in the report",
    "task": "'bandit' (default) or 'matrix-approx'",
    "seeds": "an int n (seeds 0..n-1) or a list of ints",
    "horizon": "rounds per episode, passed to every env as horizon= (an env's own args.horizon "
    "wins)",
    "envs": "list of {id, args, grid, label}",
    "agents": "list of {name, args, grid, label, family, record, envs}",
    "data": "matrix-approx only: {n, d, every}",
    "record": "recording options: {spectral_error: EVERY, spectral_sketch_sizes: [l...], "
    "curve_points: N}",
    "plots": "list of figures for `linbandit plot`",
    "tune": "defaults for `linbandit tune`: {beta, lam, seeds, horizon, agents, schedule, eta}",
    "tuned": "per env label, per agent label (glob): argument overrides, e.g. tuned beta/lam",
    "timing_repeats": "plays of each timing run (a configuration's first seed, played alone); "
    "each round keeps its least time (default 1)",
    "dtype": "float32 or float64: the dtype of every agent that takes one (unless it sets one)",
    "feedback_delay": "an int k >= 0, or a list of them: round t's update after round t + k's act "
    "(default 0)",
    "update_every": "an int n >= 1, or a list of them: updates applied every n rounds (default 1)",
}
#: The dtypes a config's ``dtype:`` (``--dtype``) may give every agent.
DTYPES = ("float32", "float64")
#: The keys of a feedback schedule (:class:`~linbandit_gym.feedback.FeedbackSchedule`): at the
#: top level for every agents entry, or in an entry for its runs; defaults: the plain loop.
FEEDBACK_KEYS = {field.name: field.default for field in dataclasses.fields(FeedbackSchedule)}
AGENT_KEYS = {"name", "args", "grid", "label", "family", "record", "envs", *FEEDBACK_KEYS}
ENV_KEYS = {"id", "args", "grid", "label"}
RECORD_KEYS = {"spectral_error", "spectral_sketch_sizes", "curve_points"}
DATA_KEYS = {"n", "d", "every"}
PLOT_KEYS = {"kind", "agents", "name", "title", "family", "x", "group", "env", "bound"}
PLOT_KINDS = {
    "regret",
    "pareto",
    "spectral",
    "sketch_size",
    "param",
    "matrix_error",
    "scaling",
    "fronts",
}
TUNE_KEYS = {"beta", "lam", "seeds", "horizon", "agents", "schedule", "eta"}

#: How ``linbandit tune`` searches its grid: successive halving (the default), or every pair to
#: the end, the paper's protocol (Wen et al., 2025, App. F.1).
TUNE_SCHEDULES = ("halving", "grid")
TASKS = {"bandit", "matrix-approx"}

#: The most runs one config expands into: each is two files in one directory and at least a
#: process round trip; a config past this is a typo (``seeds: 1000000000``) or several sweeps.
MAX_RUNS = 100_000

#: The most values a config may hold, and the most characters of text, counted as the config
#: expands: a YAML alias (``*name``) repeats what its anchor (``&name``) holds each time it is
#: used, so that a few lines of aliases of aliases (an "alias bomb") can stand for billions of
#: values. Far above any real config (a grid of 10,000 points, 100,000 seeds, a page of
#: description); a config past them is refused as it is read (:func:`check_config_size`).
MAX_CONFIG_VALUES = 1_000_000
MAX_CONFIG_TEXT = 1_000_000
#: The deepest a config's nesting may go (a grid point's value inside a list inside a mapping
#: is 5 deep), and the largest file read as one.
MAX_CONFIG_DEPTH = 50
MAX_CONFIG_BYTES = 10_000_000

#: The paper's tuning grids (Wen et al., 2025, App. F.1).
PAPER_BETA_GRID = [1e-4, 1e-3, 1e-2, 1e-1, 1.0]
PAPER_LAM_GRID = [2e-4, 2e-3, 2e-2, 2e-1, 2.0, 2e1, 2e2, 2e3, 2e4]


class ConfigError(ValueError):
    """A sweep config is malformed; the message names the offending key.

    ``problems`` holds one line per problem, each starting with where it was written
    (``agents[1].grid.sketch_size: ...``): a config reports every problem it has at once.
    """

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems) if problems else [message]

    @classmethod
    def listing(cls, problems: list[str]) -> ConfigError:
        """One error for ``problems`` (repeats dropped): the message itself for one, else a
        count and one indented line per problem."""
        problems = list(dict.fromkeys(problems))
        if len(problems) == 1:
            return cls(problems[0])
        lines = "\n".join(f"  {p}" for p in problems)
        return cls(f"{len(problems)} problems in the config:\n{lines}", problems)


class _Problems:
    """The problems of a config, collected check by check so that one error lists them all."""

    def __init__(self) -> None:
        self.found: list[str] = []

    @contextmanager
    def section(self):
        """Run the checks of one part of the config; a ``ConfigError`` they raise is recorded
        (with every problem it lists) and the next part is checked all the same."""
        try:
            yield
        except ConfigError as exc:
            self.found.extend(exc.problems)

    def add(self, message: str) -> None:
        self.found.append(message)

    def raise_if_any(self) -> None:
        if self.found:
            raise ConfigError.listing(self.found)


# -- loading ------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-4`` as a float (YAML 1.1 needs ``1.0e-4``)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def check_config_size(data: Any, where: str = "the config") -> None:
    """Refuse ``data`` (a loaded config) if, expanded, it holds more than
    :data:`MAX_CONFIG_VALUES` values or :data:`MAX_CONFIG_TEXT` characters of text: each use of
    a YAML alias counts what it repeats (a recursive alias, ``&a [*a]``, never ends and is
    refused too). Stops counting at the limit: an alias bomb costs no more than a real config."""
    values = text = 0
    stack = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        values += 1
        if isinstance(item, str):
            text += len(item)
        elif isinstance(item, (dict, list, tuple)):
            if depth > MAX_CONFIG_DEPTH:
                raise ConfigError(
                    f"{where} nests lists and mappings more than {MAX_CONFIG_DEPTH} "
                    "deep: a config lists agents, envs and seeds, a few levels deep"
                )
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        if values > MAX_CONFIG_VALUES or text > MAX_CONFIG_TEXT:
            what = (
                f"more than {MAX_CONFIG_VALUES:,} values"
                if values > MAX_CONFIG_VALUES
                else f"more than {MAX_CONFIG_TEXT:,} characters of text"
            )
            raise ConfigError(
                f"{where} expands into {what} (YAML aliases, *name, repeat what &name holds each "
                "time they are used): a config lists agents, envs and seeds; write several "
                "configs, or fewer aliases"
            )


def load_config(source: str | Path | dict) -> dict:
    """Read a config from a YAML/TOML file (by suffix; YAML otherwise) or copy a dict; what it
    expands into is bounded (:func:`check_config_size`)."""
    if isinstance(source, dict):
        check_config_size(source)
        return copy.deepcopy(source)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"sweep config {str(path)!r} not found")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: {path.stat().st_size:,} bytes is not a sweep config (at most "
            f"{MAX_CONFIG_BYTES:,}): a config lists agents, envs and seeds"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not a text file in UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None
    if path.suffix.lower() == ".toml":
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
        except RecursionError:
            raise ConfigError(f"{path}: nests tables and arrays too deep to read") from None
    else:
        try:
            data = yaml.load(text, Loader=_Loader)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        except RecursionError:
            raise ConfigError(f"{path}: nests lists and mappings too deep to read") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: a sweep config is a mapping (agents:, envs:, seeds:, ...), "
            f"got {type(data).__name__}"
        )
    check_config_size(data, str(path))
    return data


# -- the expanded form --------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    """One run: an agent config on an env config with one seed."""

    run_id: str
    config: dict  # canonical: what the id hashes (task, agent, env, seed, record)
    agent_label: str
    env_label: str
    family: str
    entry: str = ""  #: the config entry the run comes from (``"agents[1]"``), what messages name

    @property
    def seed(self) -> int:
        return int(self.config["seed"])

    def to_dict(self) -> dict:
        return {
            "run_id": self.run_id,
            "config": self.config,
            "agent_label": self.agent_label,
            "env_label": self.env_label,
            "family": self.family,
            "entry": self.entry,
        }

    @classmethod
    def from_dict(cls, data: dict) -> RunSpec:
        return cls(
            data["run_id"],
            data["config"],
            data["agent_label"],
            data["env_label"],
            data["family"],
            data.get("entry", ""),
        )


@dataclass
class SweepConfig:
    """A validated config (the raw dict is kept for the records and the report)."""

    raw: dict
    name: str
    task: str
    seeds: list[int]
    runs: list[RunSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def plots(self) -> list[dict]:
        return list(self.raw.get("plots") or [])

    #: (agent label, env label) -> the estimated peak memory of one of its runs
    memory: dict[tuple[str, str], RunMemory] = field(default_factory=dict)

    def largest_run(self) -> tuple[tuple[str, str], RunMemory] | None:
        """The (agent label, env label) whose runs need the most memory, with its estimate."""
        if not self.memory:
            return None
        return max(self.memory.items(), key=lambda item: item[1].total)

    @property
    def timing_repeats(self) -> int:
        """How many times each timing run is played (``timing_repeats:``, default 1)."""
        return int(self.raw.get("timing_repeats") or 1)


# -- validation helpers -------------------------------------------------------------


def _check_keys(obj: dict, allowed, where: str) -> None:
    unknown = [
        f"{where}: unknown key {key!r}{did_you_mean(key, allowed)}; "
        f"allowed: {', '.join(sorted(allowed))}"
        for key in obj
        if key not in allowed
    ]
    if unknown:
        raise ConfigError.listing(unknown)


def _mapping(value: Any, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where}: expected a mapping of NAME: VALUE, got {type(value).__name__} {value!r}"
        )
    for key in value:
        if not isinstance(key, str) or not key.isidentifier():
            raise ConfigError(f"{where}: argument name {key!r} is not a Python identifier")
    return value


def _grid_points(grid: Any, where: str) -> list[dict]:
    """A grid is a mapping NAME: [values] (cartesian product) or a list of mappings (points)."""
    if grid is None:
        return [{}]
    if isinstance(grid, dict):
        names = list(_mapping(grid, where))
        for name in names:
            values = grid[name]
            if not isinstance(values, list):
                raise ConfigError(
                    f"{where}.{name}: a grid maps each argument to a list of values, got "
                    f"{type(values).__name__} {values!r} "
                    f"(write [{values!r}] for a single value, or move it to args)"
                )
            if not values:
                raise ConfigError(f"{where}.{name}: empty list of values")
        return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]
    if isinstance(grid, list):
        if not grid:
            raise ConfigError(f"{where}: empty list of grid points")
        points = []
        for i, point in enumerate(grid):
            if not isinstance(point, dict):
                raise ConfigError(
                    f"{where}[{i}]: a list grid holds mappings (one per point), "
                    f"got {type(point).__name__} {point!r}"
                )
            points.append(dict(_mapping(point, f"{where}[{i}]")))
        return points
    raise ConfigError(
        f"{where}: a grid is a mapping NAME: [values] or a list of mappings, "
        f"got {type(grid).__name__} {grid!r}"
    )


def _format_label(template: str | None, default: str, values: dict, where: str) -> str:
    if template is None:
        return default
    if not isinstance(template, str):
        raise ConfigError(f"{where}: label must be a string, got {type(template).__name__}")
    try:  # {NAME} and {NAME:FORMAT} of the arguments only: no attribute or index walks
        return format_label(template, values)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _seeds(value: Any, where: str = "seeds") -> list[int]:
    """The config's ``seeds`` (absent: seed 0) by the one seed rule
    (:func:`linbandit_host.seeds.check_seeds`)."""
    if value is None:
        return [0]
    return check_seeds(value, where, error=ConfigError)


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a message quotes what it refuses, briefly)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError(f"{where}: expected a positive int, got {value!r}")
    return int(value)


def _feedback_values(value: Any, where: str, task: str) -> list[int]:
    """The values of a ``feedback_delay`` or ``update_every`` key (an int or a non-empty list of
    distinct ints, each checked by :func:`linbandit_gym.feedback.schedule_problems`)."""
    key = where.rpartition(".")[2]
    if task != "bandit":
        raise ConfigError(
            f"{where}: only bandit sweeps have rounds whose feedback can be delayed; remove it"
        )
    values = value if isinstance(value, list) else [value]
    if not values:
        raise ConfigError(f"{where}: an empty list; give an int or a list of ints")
    problems = []
    for i, item in enumerate(values):
        at = f"{where}[{i}]" if isinstance(value, list) else where
        delay, every = (item, 1) if key == "feedback_delay" else (0, item)
        problems += schedule_problems(delay, every, names=(f"{at}:", f"{at}:"))
    if problems:
        raise ConfigError.listing(problems)
    if len(set(values)) != len(values):
        raise ConfigError(f"{where}: the list has repeated values: {value}")
    return [int(v) for v in values]


def _schedules(entry: dict, where: str, x: _Expansion) -> list[FeedbackSchedule]:
    """The feedback schedules of the runs of an ``agents`` entry: its own ``feedback_delay`` and
    ``update_every`` (else the top level's), one schedule per pair of values."""
    values = dict(x.feedback)
    for key in FEEDBACK_KEYS:
        if entry.get(key) is not None:
            values[key] = _feedback_values(entry[key], f"{where}.{key}", x.task)
    return [
        FeedbackSchedule(delay, every)
        for delay in values["feedback_delay"]
        for every in values["update_every"]
    ]


def _record_options(raw: Any, where: str = "record") -> dict:
    rec = _mapping(raw, where)
    _check_keys(rec, RECORD_KEYS, where)
    out: dict[str, Any] = {}
    every = rec.get("spectral_error")
    if every not in (None, False, 0):
        out["spectral_error"] = _positive_int(every, f"{where}.spectral_error")
        sizes = rec.get("spectral_sketch_sizes")
        if sizes is not None:
            if not isinstance(sizes, list) or not all(
                isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1
                for s in sizes
            ):
                raise ConfigError(
                    f"{where}.spectral_sketch_sizes: expected a list of positive ints, "
                    f"got {sizes!r}"
                )
            out["spectral_sketch_sizes"] = sorted(int(s) for s in sizes)
    elif rec.get("spectral_sketch_sizes") is not None:
        raise ConfigError(
            f"{where}.spectral_sketch_sizes: only meaningful with record.spectral_error: EVERY"
        )
    return out


def _curve_points(raw: dict) -> int:
    rec = raw.get("record") or {}
    return (
        _positive_int(rec.get("curve_points", 200), "record.curve_points")
        if isinstance(rec, dict)
        else 200
    )


def _lookup_agent(name: Any, where: str) -> AgentEntry:
    """The :class:`~linbandit_gym.registry.AgentEntry` of agent ``name``, or a ``ConfigError``
    at ``where``."""
    try:
        return lookup_agent(name)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _resolve_agent_factory(name: Any, where: str):
    """The class (or factory) of agent ``name`` (:func:`linbandit_gym.registry.lookup_agent`)."""
    return _lookup_agent(name, where).factory


def _check_env_id(env_id: Any, where: str) -> str:
    if not isinstance(env_id, str) or not env_id:
        raise ConfigError(f"{where}: expected an env id (see `linbandit list`), got {env_id!r}")
    if env_id not in ENV_IDS:
        import gymnasium as gym

        if env_id not in gym.registry:
            raise ConfigError(
                f"{where}: unknown env id {env_id!r}{did_you_mean(env_id, ENV_IDS)}; "
                f"known: {', '.join(ENV_IDS)}"
            )
    return env_id


def tuned_arguments(raw: dict, env_label: str, agent_label: str) -> dict:
    """The arguments a config's ``tuned:`` section gives the agent labelled ``agent_label`` on the
    env labelled ``env_label`` (what ``linbandit tune`` chose, over its entry's ``args:``); ``{}``
    when none, or when the section is not a mapping of mappings (a config edited by hand).

    >>> raw = {"tuned": {"mnist": {"SOFUL l=20": {"beta": 0.1, "lam": 2.0}}}}
    >>> tuned_arguments(raw, "mnist", "SOFUL l=20"), tuned_arguments(raw, "mnist", "SOFUL l=100")
    ({'beta': 0.1, 'lam': 2.0}, {})
    """
    tuned = raw.get("tuned") if isinstance(raw, dict) else None
    if not isinstance(tuned, dict) or not all(
        v is None or isinstance(v, dict) for v in tuned.values()
    ):
        return {}
    try:
        return _apply_tuned(tuned, env_label, agent_label)
    except (TypeError, ValueError):
        return {}


def _apply_tuned(tuned: dict, env_label: str, agent_label: str) -> dict:
    """Overrides from ``tuned`` for this (env label, agent label); exact labels beat globs."""
    return _tuned_entry(tuned, env_label, agent_label)[0]


def _tuned_entry(tuned: dict, env_label: str, agent_label: str) -> tuple[dict, str]:
    """``(overrides, where)``: :func:`_apply_tuned`'s overrides and the config key they are
    under."""
    env_key = env_label if tuned.get(env_label) else "*"
    per_env = tuned.get(env_key) or {}
    if agent_label in per_env:
        return dict(per_env[agent_label]), f"tuned.{env_key}.{agent_label}"
    for pattern, values in per_env.items():
        if fnmatch.fnmatchcase(agent_label, pattern):
            return dict(values), f"tuned.{env_key}.{pattern}"
    return {}, "tuned"


# -- expansion ----------------------------------------------------------------------


def parse_config(source: str | Path | dict, *, validate_args: bool = True) -> SweepConfig:
    """Validate a config and expand it into runs.

    Raises :class:`ConfigError` listing every problem found, each at the key where it was
    written (an unknown top-level key, an unknown agent or env, a grid that is not a list, an
    argument an agent or env does not take -- with the closest valid name -- or a value it
    refuses, at ``agents[1].args.NAME`` or ``agents[1].grid.NAME``, ...).
    """
    raw = load_config(source)
    problems = _Problems()
    with problems.section():
        _check_keys(raw, TOP_LEVEL_KEYS, "config")
    task = raw.get("task", "bandit")
    if task not in TASKS:  # what the rest means depends on the task: stop here
        problems.add(f"task: expected one of {sorted(TASKS)}, got {task!r}")
        problems.raise_if_any()
    name = raw.get("name") or (Path(source).stem if isinstance(source, (str, Path)) else "sweep")
    if not isinstance(name, str):
        problems.add(f"name: expected a string, got {name!r}")
    else:  # the default output directory is runs/NAME: a name, never a path out of runs/
        try:
            check_file_name(name, "name")
        except ValueError as exc:
            problems.add(str(exc))
    description = raw.get("description")
    if description is not None and not isinstance(description, str):
        problems.add(
            f"description: expected free text (a string), got "
            f"{type(description).__name__} {_short(description)}"
        )
    seeds, record, horizon, tuned, envs = [0], {}, None, {}, []
    with problems.section():
        seeds = _seeds(raw.get("seeds"))
    with problems.section():
        record = _record_options(raw.get("record"))
    with problems.section():
        _curve_points(raw)
    if raw.get("horizon") is not None:
        with problems.section():
            horizon = _positive_int(raw["horizon"], "horizon")
    if raw.get("timing_repeats") is not None:
        with problems.section():
            _positive_int(raw["timing_repeats"], "timing_repeats")
    dtype = raw.get("dtype")
    if dtype is not None and dtype not in DTYPES:
        problems.add(
            f"dtype: expected one of {', '.join(DTYPES)} (the dtype of the agents' "
            f"state), got {dtype!r}"
        )
        dtype = None
    feedback = {key: [default] for key, default in FEEDBACK_KEYS.items()}
    for key in FEEDBACK_KEYS:
        if raw.get(key) is not None:
            with problems.section():
                feedback[key] = _feedback_values(raw[key], key, task)
    agents = raw.get("agents")
    if not isinstance(agents, list) or not agents:
        problems.add("agents: expected a non-empty list of {name: ..., args: {...}, grid: {...}}")
        agents = []
    with problems.section():
        _validate_plots(raw.get("plots"))
    with problems.section():
        _validate_tune(raw.get("tune"))
    with problems.section():
        tuned = _validate_tuned(raw.get("tuned"))
    with problems.section():
        if task == "matrix-approx":
            if raw.get("envs") is not None:
                raise ConfigError(
                    "envs: a matrix-approx sweep has no envs; describe the rows under data: {n, d}"
                )
            envs = [_matrix_data(raw.get("data"))]
        else:
            if raw.get("data") is not None:
                raise ConfigError("data: only for task: matrix-approx; bandit sweeps list envs:")
            envs = _expand_envs(raw.get("envs"), horizon)
    if task == "bandit" and envs:
        with problems.section():
            _check_plot_axes(raw.get("plots"), envs)

    try:  # before expanding: a billion runs would take minutes and gigabytes
        _check_run_count(agents, envs, seeds, feedback)
    except ConfigError as exc:
        problems.add(str(exc))
        problems.raise_if_any()
    expansion = _Expansion(
        raw=raw,
        task=task,
        seeds=seeds,
        record=record,
        tuned=tuned,
        envs=envs,
        validate_args=validate_args,
        problems=problems,
        feedback=feedback,
        dtype=dtype,
    )
    for i, entry in enumerate(agents):
        with problems.section():
            _expand_agent(i, entry, expansion)
    problems.raise_if_any()
    return SweepConfig(
        raw=raw,
        name=name,
        task=task,
        seeds=seeds,
        runs=expansion.runs,
        notes=list(dict.fromkeys(expansion.notes)),
        memory=expansion.memory,
    )


def _validate_tuned(tuned: Any) -> dict:
    tuned = tuned or {}
    if not isinstance(tuned, dict):
        raise ConfigError(
            f"tuned: expected a mapping ENV_LABEL: {{AGENT_LABEL: {{arg: value}}}}, got {tuned!r}"
        )
    for env_label, per_agent in tuned.items():
        if not isinstance(env_label, str):
            raise ConfigError(
                f"tuned: {env_label!r} is not an env label (a string, or a glob such as '*')"
            )
        if not isinstance(per_agent, dict) or not all(
            isinstance(v, dict) for v in per_agent.values()
        ):
            raise ConfigError(f"tuned.{env_label}: expected a mapping AGENT_LABEL: {{arg: value}}")
        for agent_label in per_agent:
            if not isinstance(agent_label, str):
                raise ConfigError(
                    f"tuned.{env_label}: {agent_label!r} is not an agent label (a string or a glob)"
                )
        for agent_label, values in per_agent.items():
            _mapping(values, f"tuned.{env_label}.{agent_label}")
    return tuned


@dataclass
class _Expansion:
    """What the agent entries of a config expand against, and what they expand into."""

    raw: dict
    task: str
    seeds: list[int]
    record: dict
    tuned: dict
    envs: list[dict]
    validate_args: bool
    problems: _Problems
    feedback: dict[str, list[int]]  # the top level's feedback_delay and update_every values
    dtype: str | None = None  # given to every agent that takes a dtype and sets none itself
    runs: list[RunSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    by_id: dict[str, tuple[RunSpec, bool]] = field(default_factory=dict)
    seen_labels: dict[tuple[str, str], tuple[dict, dict]] = field(default_factory=dict)
    memory: dict[tuple[str, str], RunMemory] = field(default_factory=dict)


def _expand_agent(i: int, entry: Any, x: _Expansion) -> None:
    """Expand ``agents[i]`` into runs (appended to ``x.runs``); its argument problems are added
    to ``x.problems``, a malformed entry raises ``ConfigError``."""
    where = f"agents[{i}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping {{name: ..., args: ...}}, got {entry!r}")
    _check_keys(entry, AGENT_KEYS, where)
    if "name" not in entry:
        raise ConfigError(f"{where}: missing key 'name' (an agent name or module:Class)")
    agent = _agent_entry(entry["name"], f"{where}.name", x.task)
    base_args = dict(_mapping(entry.get("args"), f"{where}.args"))
    points = _grid_points(entry.get("grid"), f"{where}.grid")
    run_record = x.record
    if entry.get("record") is not None:  # per-agent recording options override the sweep's
        merged = {**(x.raw.get("record") or {}), **_mapping(entry["record"], f"{where}.record")}
        run_record = _record_options(merged, f"{where}.record")
    family = entry.get("family", entry["name"])
    if not isinstance(family, str):
        raise ConfigError(f"{where}.family: expected a string, got {family!r}")
    entry_envs = x.envs
    if entry.get("envs") is not None:  # this agent config only on some envs (e.g. l0 <= d)
        patterns = entry["envs"]
        if not (
            isinstance(patterns, list) and patterns and all(isinstance(p, str) for p in patterns)
        ):
            raise ConfigError(
                f"{where}.envs: expected a non-empty list of env labels or glob patterns, "
                f"got {patterns!r}"
            )
        entry_envs = [
            e for e in x.envs if any(fnmatch.fnmatchcase(e["label"], p) for p in patterns)
        ]
        if x.envs and not entry_envs:
            raise ConfigError(
                f"{where}.envs: {patterns!r} matches no env label; "
                f"labels: {', '.join(e['label'] for e in x.envs)}"
            )
    schedules = _schedules(entry, where, x)
    checks = None
    if x.validate_args and not (x.task == "matrix-approx" and ":" in entry["name"]):
        checks = _AgentArgumentChecks(agent, where, base_args, entry.get("grid"), x.problems)
    for j, point in enumerate(points):
        args = {**base_args, **point}
        varying = {k: v for k, v in point.items()}
        if (
            checks is not None and not entry_envs
        ):  # the envs are broken: the arguments still get checked
            checks.check_values(args, j, point)
        for schedule in schedules:  # a setting other than the plain loop's is part of the label
            played = schedule.config_entries()
            default = args_label(args_label(entry["name"], varying), played)
            values = {**args, **dataclasses.asdict(schedule)}  # a label may name them
            label = _format_label(entry.get("label"), default, values, f"{where}.label")
            for env in entry_envs:
                _expand_runs(
                    x,
                    entry,
                    where,
                    agent,
                    checks,
                    j,
                    point,
                    args,
                    label,
                    env,
                    played,
                    run_record,
                    family,
                )


def _expand_runs(
    x: _Expansion,
    entry: dict,
    where: str,
    agent: AgentEntry,
    checks: _AgentArgumentChecks | None,
    j: int,
    point: dict,
    args: dict,
    label: str,
    env: dict,
    played: dict,
    run_record: dict,
    family: str,
) -> None:
    """The runs (one per seed) of grid point ``j`` of ``agents[i]`` (``where``) on ``env``,
    labelled ``label`` and played by the feedback schedule whose ``config_entries`` are
    ``played``."""
    key = (env["label"], label)
    overrides, tuned_where = _tuned_entry(x.tuned, env["label"], label)
    final_args = {**args, **overrides}
    if x.dtype is not None and "dtype" not in final_args:
        takes = agent.arguments()
        if "dtype" in takes or takes.open:
            final_args["dtype"] = x.dtype
        elif (
            note := f"dtype: {x.dtype} is not given to {label!r}: its agent takes no dtype"
        ) not in x.notes:
            x.notes.append(note)
    if key in x.seen_labels and x.seen_labels[key] != (final_args, played):
        raise ConfigError(
            f"{where}.label: label {label!r} is used by two different agent configs on env "
            f"{env['label']!r}; give them distinct labels"
            + (" (a label template may use {feedback_delay} and {update_every})" if played else "")
        )
    x.seen_labels[key] = (final_args, played)
    if checks is not None:
        checks.check_overrides(overrides, tuned_where)
        checks.check_values(final_args, j, point, overrides, tuned_where)
    if x.validate_args and (label, env["label"]) not in x.memory:
        memory = _check_run_memory(agent, final_args, env, x.task, where)
        x.memory[(label, env["label"])] = memory
        if checks is not None and x.task == "bandit":  # against the arms' d (l0 <= d)
            checks.check_values(
                final_args, j, point, overrides, tuned_where, memory=memory, env_label=env["label"]
            )
    for seed in x.seeds:
        config = {
            "task": x.task,
            "agent": {"name": entry["name"], "args": final_args},
            "env": {"id": env["id"], "args": env["args"]},
            "seed": seed,
            **played,  # nothing for the plain loop: its runs keep their ids
        }
        if run_record:
            config["record"] = run_record
        spec = RunSpec(
            run_id(config), json.loads(canonical_json(config)), label, env["label"], family, where
        )
        if spec.run_id in x.by_id:
            first, first_tuned = x.by_id[spec.run_id]
            if not (overrides or first_tuned):
                raise ConfigError(
                    f"{where}: the run {label!r} on {env['label']!r} seed {seed} is the same agent "
                    f"config as {first.agent_label!r}; remove the duplicate"
                )
            # tuned: overrides made two configs equal: run it once, under the first label
            x.notes.append(
                f"{label!r} on {env['label']!r} equals {first.agent_label!r} after tuning; run once"
            )
            continue
        x.by_id[spec.run_id] = (spec, bool(overrides))
        x.runs.append(spec)


def _agent_entry(name: Any, where: str, task: str) -> AgentEntry:
    """The checked :class:`~linbandit_gym.registry.AgentEntry` of an ``agents[i].name``: an
    agent, or for a matrix-approx config's ``module:Class`` a covariance estimator."""
    if task == "matrix-approx" and isinstance(name, str) and ":" in name:
        try:
            return AgentEntry(name, lookup_estimator(name))
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return _lookup_agent(name, where)


def _check_run_count(
    agents: list, envs: list[dict], seeds: list[int], feedback: dict[str, list[int]]
) -> None:
    """Refuse, before expanding, a config of more than :data:`MAX_RUNS` runs."""
    points = 0
    for entry in agents:
        grid = entry.get("grid") if isinstance(entry, dict) else None
        if isinstance(grid, dict):
            count = 1
            for values in grid.values():
                count *= len(values) if isinstance(values, list) else 1
        else:
            count = len(grid) if isinstance(grid, list) and grid else 1
        for key, values in feedback.items():  # one run per feedback schedule
            own = entry.get(key) if isinstance(entry, dict) else None
            if own is None:
                count *= len(values)
            elif isinstance(own, list):
                count *= max(len(own), 1)
        points += count
    total = points * max(len(envs), 1) * len(seeds)
    if total > MAX_RUNS:
        raise ConfigError(
            f"seeds, agents, envs: this config expands into up to {total:,} runs "
            f"({points:,} agent configs x "
            f"{len(envs):,} env configs x {len(seeds):,} seeds), "
            f"more than one sweep holds ({MAX_RUNS:,}); "
            "fewer seeds or grid points, or several configs"
        )


def _check_run_memory(agent: AgentEntry, args: dict, env: dict, task: str, where: str) -> RunMemory:
    """The estimated peak memory of a run of ``agent`` on ``env``; a :class:`ConfigError` if it
    is more than the memory available (:func:`linbandit_gym.registry.check_run_fits`)."""
    if (
        task == "matrix-approx"
    ):  # the rows, the exact Gram the error is measured against, the sketch
        n, d = env["args"]["n"], env["args"]["d"]
        own = None if ":" in agent.label else _agent_bytes(agent, d, 1, args)
        run = RunMemory(8 * (n * d + 2 * d * d), own, 1, d)
    else:
        try:
            run = estimate_run_bytes(agent, args, env["id"], env["args"])
        except ValueError as exc:
            raise ConfigError(f"{where}: env {env['label']!r}: {exc}") from None
    try:
        return check_run_fits(agent, args, run, f"env {env['label']!r}")
    except ValueError as exc:
        location = "horizon" if getattr(exc, "cause", None) == "records" else f"{where}.args"
        raise ConfigError(f"{location}: {exc}") from None


def _agent_bytes(agent: AgentEntry, d: int, n_arms: int, args: dict) -> int | None:
    try:
        value = agent.estimate_memory_bytes(d, n_arms, {k: v for k, v in args.items() if k != "d"})
    except (TypeError, ValueError, KeyError, OverflowError):
        return None
    return None if value is None else int(value)


class _AgentArgumentChecks:
    """The argument checks of one ``agents[i]`` entry, each problem reported where it was written.

    Names and types are checked once per key against the agent's signature
    (:meth:`~linbandit_gym.registry.AgentEntry.argument_problems`): ``agents[i].args.NAME``,
    ``agents[i].grid.NAME`` (a mapping grid) or ``agents[i].grid[j].NAME`` (a list of points),
    ``tuned.ENV.LABEL.NAME``. The values of every set of arguments whose names and types are
    right are checked by the agent's own constructor, once per distinct set.
    """

    def __init__(
        self, agent: AgentEntry, where: str, base_args: dict, grid: Any, problems: _Problems
    ):
        self.agent, self.where, self.problems = agent, where, problems
        self.grid_is_list = isinstance(grid, list)
        self.valued: set[str] = set()
        found: list[tuple[str, ArgumentProblem]] = []
        for problem in agent.argument_problems(base_args):
            found.append((f"{where}.args.{problem.name}", problem))
        seen = set()
        if isinstance(grid, dict):
            for name, values in grid.items():
                for value in values:
                    for problem in agent.argument_problems({name: value}):
                        if problem.name not in seen:
                            seen.add(problem.name)
                            found.append((f"{where}.grid.{problem.name}", problem))
        elif isinstance(grid, list):
            for j, point in enumerate(grid):
                for problem in agent.argument_problems(point):
                    if (problem.name, problem.unknown or j) not in seen:
                        seen.add((problem.name, problem.unknown or j))
                        found.append((f"{where}.grid[{j}].{problem.name}", problem))
        self._report(found)
        self.seen_overrides: set[str] = set()

    def _report(self, found: list[tuple[str, ArgumentProblem]]) -> None:
        messages = format_problems([p for _, p in found], self.agent.arguments())
        for (location, _), message in zip(found, messages):
            self.problems.add(f"{location}: {message}")

    def _grid_location(self, name: str, j: int) -> str:
        return (
            f"{self.where}.grid[{j}].{name}" if self.grid_is_list else f"{self.where}.grid.{name}"
        )

    def check_overrides(self, overrides: dict, tuned_where: str) -> None:
        """Names and types of the ``tuned:`` overrides applied to this entry (once per key)."""
        if not overrides or tuned_where in self.seen_overrides:
            return
        self.seen_overrides.add(tuned_where)
        self._report(
            [(f"{tuned_where}.{p.name}", p) for p in self.agent.argument_problems(overrides)]
        )

    def check_values(
        self,
        args: dict,
        j: int,
        point: dict,
        overrides: dict | None = None,
        tuned_where: str = "tuned",
        memory: RunMemory | None = None,
        env_label: str | None = None,
    ) -> None:
        """The agent's own value checks of ``args`` (grid point ``j``), reported at the key of
        the argument the message names; skipped where a name or type is wrong (reported already).
        With the ``memory`` estimate of a run on env ``env_label``, the checks against that env's
        dimension (:meth:`~linbandit_gym.registry.AgentEntry.value_problem`), once per dimension."""
        d = None if memory is None else memory.d or None
        key = canonical_json([args, d])
        if key in self.valued or self.agent.argument_problems(args):
            return
        self.valued.add(key)
        if d is None:
            message = self.agent.value_problem(args)
        else:
            message = self.agent.value_problem(args, d, memory.agent_up_front)
            if message is not None and self.agent.value_problem(args) is None:
                message += f" (on env {env_label!r}, whose arms have d={d})"
        if message is None:
            return
        name = named_argument(message, args)
        if name and name in (overrides or {}):
            location = f"{tuned_where}.{name}"
        elif name and name in point:
            location = self._grid_location(name, j)
        elif name:
            location = f"{self.where}.args.{name}"
        else:
            location = f"{self.where}.args" + (f" (grid point {point})" if point else "")
        self.problems.add(f"{location}: {message}")


def _expand_envs(envs: Any, horizon: int | None) -> list[dict]:
    if not isinstance(envs, list) or not envs:
        raise ConfigError("envs: expected a non-empty list of {id: ..., args: {...}}")
    out, labels = [], set()
    problems = _Problems()
    for i, entry in enumerate(envs):
        with problems.section():
            out += _expand_env(i, entry, horizon, labels, problems)
    problems.raise_if_any()
    return out


def _expand_env(
    i: int, entry: Any, horizon: int | None, labels: set, problems: _Problems
) -> list[dict]:
    """The env configs of ``envs[i]`` (one per grid point); argument problems go to ``problems``."""
    where = f"envs[{i}]"
    if isinstance(entry, str):
        entry = {"id": entry}
    if not isinstance(entry, dict):
        raise ConfigError(
            f"{where}: expected an env id or a mapping {{id: ..., args: ...}}, got {entry!r}"
        )
    _check_keys(entry, ENV_KEYS, where)
    if "id" not in entry:
        raise ConfigError(f"{where}: missing key 'id' (an env id, see `linbandit list`)")
    env_id = _check_env_id(entry["id"], f"{where}.id")
    base = dict(_mapping(entry.get("args"), f"{where}.args"))
    if horizon is not None:
        base.setdefault("horizon", horizon)
    grid = entry.get("grid")
    out, found = [], []
    for j, point in enumerate(_grid_points(grid, f"{where}.grid")):
        args = {**base, **point}
        # names, types and values against the env's constructor: a typo fails here, not mid-sweep
        for problem in env_argument_problems(env_id, args):
            if problem.name in point:
                location = (
                    f"{where}.grid[{j}].{problem.name}"
                    if isinstance(grid, list)
                    else f"{where}.grid.{problem.name}"
                )
            else:
                location = f"{where}.args" + (f".{problem.name}" if problem.name else "")
            found.append((location, problem))
        label = _format_label(entry.get("label"), args_label(env_id, point), args, f"{where}.label")
        if label in labels:
            raise ConfigError(
                f"{where}.label: two env configs share the label {label!r}; give distinct labels"
            )
        labels.add(label)
        out.append({"id": env_id, "args": args, "label": label})
    if found:
        unique = list({(loc, p.message): (loc, p) for loc, p in found}.values())
        messages = format_problems([p for _, p in unique], env_arguments(env_id))
        for (location, _), message in zip(unique, messages):
            problems.add(f"{location}: {message}")
        return []
    return out


def _matrix_data(data: Any) -> dict:
    data = _mapping(data, "data")
    _check_keys(data, DATA_KEYS, "data")
    n = _positive_int(data.get("n", 1250), "data.n")
    d = _positive_int(data.get("d", 500), "data.d")
    every = _positive_int(data.get("every", 10), "data.every")
    return {
        "id": "gaussian-rows",
        "args": {"n": n, "d": d, "every": every},
        "label": f"gaussian n={n} d={d}",
    }


def _validate_plots(plots: Any) -> None:
    if plots is None:
        return
    if not isinstance(plots, list):
        raise ConfigError("plots: expected a list of {kind: ..., agents: [...]} entries")
    for i, entry in enumerate(plots):
        where = f"plots[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping, got {entry!r}")
        _check_keys(entry, PLOT_KEYS, where)
        if entry.get("name") is not None:  # plots/NAME.png: a name, never a path out of plots/
            try:
                check_file_name(entry["name"], f"{where}.name")
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        if entry.get("kind") not in PLOT_KINDS:
            raise ConfigError(
                f"{where}.kind: expected one of {sorted(PLOT_KINDS)}, got {entry.get('kind')!r}"
            )
        for key in ("title", "family", "x", "group", "env"):  # text; a name or a glob
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise ConfigError(
                    f"{where}.{key}: expected a string, got "
                    f"{type(entry[key]).__name__} {_short(entry[key])}"
                )
        if entry.get("bound") is not None and not isinstance(entry["bound"], bool):
            raise ConfigError(
                f"{where}.bound: expected true or false, got {_short(entry['bound'])}"
            )
        agents = entry.get("agents")
        if agents is not None and not (
            isinstance(agents, list) and all(isinstance(a, str) for a in agents)
        ):
            raise ConfigError(
                f"{where}.agents: expected a list of agent labels or glob patterns, got {agents!r}"
            )
        if entry["kind"] == "param" and not (entry.get("family") and entry.get("x")):
            raise ConfigError(f"{where}: a param plot needs family: and x: (and optionally group:)")


def _check_plot_axes(plots: Any, envs: list[dict]) -> None:
    """Each ``scaling`` or ``fronts`` figure puts an env argument on its x axis (``x``, default
    ``d``): every env it draws must be given that argument, so that ``linbandit plot`` after
    the sweep does not fail on it (checked before anything runs)."""
    if not isinstance(plots, list):
        return
    for i, entry in enumerate(plots):
        if not isinstance(entry, dict) or entry.get("kind") not in ("scaling", "fronts"):
            continue
        x = entry.get("x") or "d"
        labels = [env["label"] for env in envs]
        drawn = select_labels(labels, [entry["env"]]) if entry.get("env") else labels
        missing = [env["label"] for env in envs if env["label"] in drawn and x not in env["args"]]
        if missing:
            raise ConfigError(
                f"plots[{i}].x: env(s) {missing} are not given the argument {x!r} "
                f"that this {entry['kind']} figure is drawn against; give it in "
                "their args (or grid), or set x"
            )


def _validate_tune(tune: Any) -> None:
    if tune is None:
        return
    tune = _mapping(tune, "tune")
    _check_keys(tune, TUNE_KEYS, "tune")
    for key in ("beta", "lam"):
        values = tune.get(key)
        if values is not None and not (
            isinstance(values, list)
            and values
            and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)
        ):
            raise ConfigError(f"tune.{key}: expected a non-empty list of numbers, got {values!r}")
    if tune.get("seeds") is not None:
        _seeds(tune["seeds"], "tune.seeds")
    if tune.get("horizon") is not None:
        _positive_int(tune["horizon"], "tune.horizon")
    agents = tune.get("agents")
    if agents is not None and not (
        isinstance(agents, list) and all(isinstance(a, str) for a in agents)
    ):
        raise ConfigError(
            f"tune.agents: expected a list of agent labels or glob patterns, got {agents!r}"
        )
    check_schedule(tune.get("schedule"), tune.get("eta"), "tune.")


def check_schedule(schedule: Any, eta: Any, where: str = "") -> None:
    """A :class:`ConfigError` unless ``schedule`` is ``None`` or one of :data:`TUNE_SCHEDULES`
    and ``eta`` is ``None`` or an int >= 2 (``where``: the key's prefix in messages)."""
    if schedule is not None and schedule not in TUNE_SCHEDULES:
        raise ConfigError(
            f"{where}schedule: expected one of {', '.join(TUNE_SCHEDULES)} "
            "(successive halving, or every pair to the end as in the paper), got "
            f"{schedule!r}"
        )
    if eta is not None and (
        isinstance(eta, bool) or not isinstance(eta, numbers.Integral) or eta < 2
    ):
        raise ConfigError(
            f"{where}eta: expected an int >= 2 (successive halving keeps 1/eta of "
            f"the pairs at each rung), got {eta!r}"
        )


def select_labels(labels, patterns: list[str] | None) -> list[str]:
    """Labels matching any glob pattern (all when ``patterns`` is None), in the given order."""
    labels = list(dict.fromkeys(labels))
    if not patterns:
        return labels
    return [lab for lab in labels if any(fnmatch.fnmatchcase(lab, p) for p in patterns)]
