"""Run storage: the layout of an output directory, and writing and reading its files (run
records as Parquet, or CSV without pyarrow; JSON; YAML). Sweeps, ``linbandit run --out``, tuning,
plots and reports all save and load runs here.

Layout of an output directory::

    DIR/config.yaml             the config as given (what `linbandit plot/report` read)
    DIR/manifest.json           the run ids of that config, with their labels (sealed)
    DIR/runs/<run_id>.parquet   per-round records of one run (CSV without pyarrow)
    DIR/runs/<run_id>.json      its metadata: full config, seed, versions, device, summary, the
                                records file's size, rows and SHA-256, and its own checksum
    DIR/failed/<run_id>.json    the traceback of a run's last failure (removed on success)
    DIR/.lock                   flock'ed by the process writing DIR (its pid and command line)

A run's id is 16 hex digits of the SHA-256 of its canonical config (:func:`run_id`), so a run can
never be written twice under different names. A run is *finished* when its ``.json`` passes its
checks (its seal and the schema of a run's JSON, :func:`run_meta_problem`), holds the run's
config, and its records file has the size, rows and SHA-256 the ``.json`` stores
(:func:`is_finished`): :func:`save_run` writes the records (atomically) first, so a writer killed
at any moment leaves every run either finished or absent. :func:`load_runs` and
:func:`load_records` read only runs that pass the same checks and name every one that does not,
with the reason (:func:`completeness`: how much of the config is on disk). The record and run
contracts are on the documentation's Contracts page.

Every result file goes through :func:`atomic_path`: it is written under a temporary name in
its directory (``.NAME.linbandit-pidPID.XXXX.tmp``), flushed to disk, given the mode the user's
umask asks for, and renamed, so a reader never sees a half-written file and a colleague on a
shared server can read what the umask lets them read. A write never leaves its output
directory through a symbolic link (:func:`inside_output`): a link on the way that leads out of
it is refused, before anything is written, and a link that stays inside is followed to its
target, which is replaced (the link itself is kept); :func:`check_output_dir` checks a
directory before the first write. :func:`lock_output_dir` makes one process the only writer of
an output directory (:func:`writing_output_dir` adds the directory's checks and one clear error
for a failing file system); :func:`remove_stale_temporaries` removes only the temporaries this
project names as its own, of writers that are gone.

Integrity: :func:`records_fingerprint` stores a records file's size, rows and SHA-256 in its
run's JSON, and :func:`check_records` compares them, so that a truncated file, a flipped byte or
a same-size rewrite is seen when the run is read or resumed. A JSON result file that others
rely on is *sealed* (:func:`seal`: the SHA-256 of its canonical content stored inside it) and
checked when read (:func:`seal_problem`); a run's JSON is also checked against the schema of
what the runs write (:func:`run_meta_problem`), so that a value of the wrong type never reaches
an aggregate.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import math
import numbers
import os
import re
import shlex
import stat
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from linbandit_host.seeds import SEED_RULE, is_seed

try:  # POSIX; elsewhere an output directory is not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

#: ``open`` without following a final symbolic link (0 where the system has no such flag).
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)

__all__ = [
    "RecordsError",
    "OutputError",
    "has_parquet",
    "current_umask",
    "inside_output",
    "check_output_paths",
    "atomic_path",
    "write_text_atomic",
    "write_json_atomic",
    "write_records",
    "read_records",
    "read_json",
    "records_fingerprint",
    "check_records",
    "file_sha256",
    "seal",
    "seal_problem",
    "run_meta_problem",
    "lock_output_dir",
    "lock_holder",
    "current_writer",
    "remove_stale_temporaries",
    "canonical_json",
    "run_id",
    "OUTPUT_NAMES",
    "check_output_dir",
    "writing_output_dir",
    "records_path",
    "records_problem",
    "read_run_meta",
    "checked_run",
    "run_problem",
    "is_finished",
    "refresh_labels",
    "save_run",
    "write_sweep_config",
    "load_runs",
    "load_meta",
    "load_records",
    "Completeness",
    "completeness",
]

#: The lock file of an output directory (holds the writer's pid).
LOCK_NAME = ".lock"
#: What every temporary file of :func:`atomic_path` is called: ``.NAME.linbandit-pidPID.XXXX.tmp``
#: (``XXXX``: :func:`tempfile.mkstemp`'s random part); the only names
#: :func:`remove_stale_temporaries` removes.
_TEMP_MARK = ".linbandit-pid"
_TEMP_NAME = re.compile(r"^\..+\.linbandit-pid(\d+)\.[A-Za-z0-9_]+\.tmp$")


class RecordsError(ValueError):
    """A result file is missing, truncated or garbled; the message names it and says what to do."""


class OutputError(ValueError):
    """An output directory cannot be written (permissions, or another process is writing it).

    ``exit_code``: what the command line exits with, 2 (bad input: choose another directory) or
    1 (a failure of the system: the disk is full, a file is too large)."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code


def has_parquet() -> bool:
    """Whether pandas can write Parquet here (pyarrow installed)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


# -- atomic writes -------------------------------------------------------------------


def current_umask() -> int:
    """The process umask, read without changing it (``/proc/self/status`` on Linux).

    ``os.umask`` can only be read by setting it, which races with other threads creating
    files; that fallback runs once per process (:func:`_umask_by_setting`).
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return _umask_by_setting()


_UMASK_LOCK = threading.Lock()


@functools.cache
def _umask_by_setting() -> int:
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def _link_out(path: Path, root: Path, real_root: Path) -> tuple[Path, str] | None:
    """The first symbolic link on the way from ``root`` to ``path`` whose target is outside
    ``real_root``, with that target; ``None`` if there is none."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = path.parts
        root = Path(path.anchor)
    here = root
    for part in parts:
        here = here / part
        if here.is_symlink():
            target = os.path.realpath(here)
            if not _is_within(Path(target), real_root):
                return here, target
    return None


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def inside_output(path: str | Path, root: str | Path | None = None) -> Path:
    """Where a write of ``path`` lands, if that is inside the output directory ``root``
    (default: ``path``'s own directory): ``path`` with every symbolic link on the way resolved.

    A link that stays inside ``root`` (``DIR/plots -> DIR/figures``, a file linked to another
    file of ``DIR``) is followed; one that leads out of it (``DIR/summary.csv -> ~/notes.txt``,
    ``DIR/runs -> /elsewhere``) is refused, so that nothing outside the directory the user named
    is ever written. ``root`` itself may be a link (the user named it).

    Raises:
        OutputError: naming the link, where it leads and what to do (exit code 2).
    """
    path = Path(path)
    root = path.parent if root is None else Path(root)
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if _is_within(real, real_root) and real != real_root:
        return real
    link = _link_out(path, root, real_root)
    if link is None:  # not under root at all: a caller's mistake, not the user's
        raise OutputError(f"{path} is not inside the output directory {root}")
    where, target = link
    raise OutputError(
        f"{where} is a symbolic link to {target}, outside the output directory {root}: linbandit "
        "writes only inside the directory it was given; remove the link (or choose another output "
        "directory, --out)"
    )


def check_output_paths(root: str | Path, names: Iterable[str]) -> None:
    """:func:`inside_output` for each ``root / name`` that exists (files and directories a
    command is about to write), and for what a directory among them holds: a command checks
    every place it writes before it writes the first file."""
    root = Path(root)
    for name in names:
        path = root / name
        if not (path.exists() or path.is_symlink()):
            continue
        inside_output(path, root)
        if path.is_dir():
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        inside_output(Path(entry.path), root)


@contextmanager
def atomic_path(path: str | Path, root: str | Path | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block succeeds, publish it as ``path``.

    ``path`` is first checked to stay inside the output directory ``root`` (default: its own
    directory) through any symbolic link (:func:`inside_output`); a link inside is followed and
    its target replaced. The caller writes the temporary file; it is then fsync'ed, given mode
    ``0o666 & ~umask`` (``mkstemp`` creates 0600 whatever the umask) and renamed onto the
    target: ``os.replace`` swaps the directory entry, so it never writes through a link. On an
    error (or Ctrl-C) the temporary file is removed and ``path`` is left as it was. The
    temporary name carries this process's pid so that :func:`remove_stale_temporaries` can tell
    whose it is.
    """
    target = inside_output(path, root)
    target.parent.mkdir(parents=True, exist_ok=True)
    target = inside_output(path, root)  # what mkdir made holds no link: checked again all the same
    prefix = f".{target.name}{_TEMP_MARK}{os.getpid()}."
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as fh:  # on disk before the rename: no empty file after a crash
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, target)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def write_text_atomic(text: str, path: str | Path, root: str | Path | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_path` (inside ``root``)."""
    with atomic_path(path, root) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def write_json_atomic(data: Any, path: str | Path, root: str | Path | None = None) -> Path:
    """Write ``data`` as JSON to ``path`` through :func:`atomic_path` (inside ``root``)."""
    text = json.dumps(data, indent=1, default=_json_default, allow_nan=True)
    return write_text_atomic(text, path, root)


def read_json(path: str | Path) -> Any:
    """Read a JSON result file; a garbled one raises :class:`RecordsError` naming it."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordsError(
            f"{path} is not valid JSON ({exc}); delete it and rerun the command to redo that run"
        ) from exc


# -- records ---------------------------------------------------------------------------


def write_records(frame: pd.DataFrame, stem: str | Path, root: str | Path | None = None) -> Path:
    """Write ``frame`` atomically to ``stem.parquet`` (or ``stem.csv`` without pyarrow), inside
    the output directory ``root`` (:func:`atomic_path`)."""
    stem = Path(stem)
    path = stem.with_suffix(".parquet" if has_parquet() else ".csv")
    with atomic_path(path, root) as tmp:
        if path.suffix == ".parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)
    return path


def read_records(path: str | Path) -> pd.DataFrame:
    """Read a file written by :func:`write_records` (by suffix); a damaged file raises
    :class:`RecordsError` naming it."""
    path = Path(path)
    if path.suffix not in (".parquet", ".csv"):
        raise ValueError(f"unknown records format {path.suffix!r}: expected .parquet or .csv")
    try:
        return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except FileNotFoundError:
        raise
    except Exception as exc:  # pyarrow and the CSV parser raise many types for a damaged file
        raise RecordsError(
            f"{path} cannot be read ({' '.join(str(exc).split())}); it is damaged (truncated?): "
            "delete it and rerun "
            "the command to redo that run"
        ) from exc


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def records_fingerprint(path: str | Path, rows: int) -> dict:
    """What :func:`check_records` compares later: file name, size in bytes, number of rows and
    the SHA-256 of the bytes."""
    path = Path(path)
    return {
        "file": path.name,
        "bytes": path.stat().st_size,
        "rows": int(rows),
        "sha256": file_sha256(path),
    }


def check_records(path: str | Path, fingerprint: dict | None = None) -> str | None:
    """``None`` if the records file is the one its ``fingerprint`` (from
    :func:`records_fingerprint`) describes, else what is wrong with it.

    The size first (a ``stat``), then for Parquet the footer and its row count, then the
    SHA-256 of the whole file: a flipped byte or a same-size rewrite changes it. Without a
    fingerprint only the Parquet footer is checked.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if fingerprint:
        if fingerprint.get("file") not in (None, path.name):
            return f"is not the records file its metadata names ({fingerprint['file']})"
        if fingerprint.get("bytes") is not None and size != fingerprint["bytes"]:
            return (
                f"has {size} bytes where {fingerprint['bytes']} were written "
                "(truncated or overwritten)"
            )
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            rows = pq.read_metadata(path).num_rows
        except ImportError:
            return None
        except Exception as exc:  # ArrowInvalid ("Parquet magic bytes not found", ...) and OSError
            return f"is not a complete Parquet file ({' '.join(str(exc).split())})"  # on one line
        if fingerprint and fingerprint.get("rows") is not None and rows != fingerprint["rows"]:
            return f"has {rows} rows where {fingerprint['rows']} were written"
    if fingerprint and fingerprint.get("sha256") is not None:
        try:
            actual = file_sha256(path)
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        if actual != fingerprint["sha256"]:
            return (
                "does not have the SHA-256 written with it "
                "(its bytes changed since: damaged or rewritten)"
            )
    return None


# -- sealed JSON and the schema of a run's JSON ---------------------------------------------

#: The key of a sealed JSON object that holds the SHA-256 of the rest of it.
SEAL_KEY = "sha256_of_content"


def _content_digest(data: dict) -> str:
    """SHA-256 of ``data`` without its seal, as key-sorted compact JSON (what a reader recomputes
    from the parsed file: floats round-trip exactly through JSON, NaN as ``NaN``)."""
    plain = json.loads(json.dumps(data, default=_json_default, allow_nan=True))
    plain.pop(SEAL_KEY, None)
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def seal(data: dict) -> dict:
    """``data`` with :data:`SEAL_KEY`: the SHA-256 of its content, which :func:`seal_problem`
    recomputes when the file is read back (any changed value, same size or not, shows)."""
    return {**data, SEAL_KEY: _content_digest(data)}


def seal_problem(data: Any) -> str | None:
    """``None`` if ``data`` is a JSON object whose seal matches its content, else what is wrong."""
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not an object"
    stored = data.get(SEAL_KEY)
    if stored is None:
        return "has no checksum (written by an older linbandit-gym, or edited)"
    if stored != _content_digest(data):
        return "does not match its checksum (changed since it was written: damaged or edited)"
    return None


def _is_int(value: Any, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_real_or_none(value: Any) -> bool:
    return value is None or _is_real(value)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_mapping(value: Any) -> bool:
    return isinstance(value, dict)


_HEX16 = re.compile(r"[0-9a-f]{16}")
_HEX64 = re.compile(r"[0-9a-f]{64}")

#: The schema of a run's JSON: (path of keys, test, what the value must be). Every run
#: written by this version has these; other keys (versions, host, threads, ...) are free.
_RUN_FIELDS: list[tuple[tuple[str, ...], Any, str]] = [
    (
        ("run_id",),
        lambda v: isinstance(v, str) and _HEX16.fullmatch(v) is not None,
        "16 hex digits",
    ),
    (("agent_label",), _is_text, "a string"),
    (("env_label",), _is_text, "a string"),
    (("family",), _is_text, "a string"),
    (("seed",), is_seed, SEED_RULE),
    (("config",), _is_mapping, "a mapping"),
    (("config", "task"), lambda v: v in ("bandit", "matrix-approx"), "'bandit' or 'matrix-approx'"),
    (("config", "seed"), is_seed, SEED_RULE),
    (("config", "agent"), _is_mapping, "a mapping"),
    (("config", "agent", "name"), _is_text, "a string"),
    (("config", "agent", "args"), _is_mapping, "a mapping"),
    (("config", "env"), _is_mapping, "a mapping"),
    (("config", "env", "id"), _is_text, "a string"),
    (("config", "env", "args"), _is_mapping, "a mapping"),
    (("summary",), _is_mapping, "a mapping"),
    (("summary", "rounds"), lambda v: _is_int(v, 1), "an int >= 1"),
    (("summary", "agent_time_s"), _is_real, "a number"),
    (("summary", "ms_per_round"), _is_real, "a number"),
    (("summary", "peak_memory_bytes"), lambda v: _is_int(v), "an int >= 0"),
    (("summary", "final_sketch_size"), _is_real_or_none, "a number or null"),
    (("records",), _is_mapping, "a mapping"),
    (("records", "file"), _is_text, "a file name"),
    (("records", "bytes"), lambda v: _is_int(v), "an int >= 0"),
    (("records", "rows"), lambda v: _is_int(v), "an int >= 0"),
    (
        ("records", "sha256"),
        lambda v: isinstance(v, str) and _HEX64.fullmatch(v) is not None,
        "64 hex digits",
    ),
]
_BANDIT_FIELDS = [
    (("summary", key), _is_real, "a number")
    for key in ("final_regret", "agent_wall_time_s", "wall_time_s", "wall_ms_per_round")
] + [
    (("summary", "time_shared_by"), lambda v: _is_int(v, 1), "an int >= 1"),
    (("summary", "timing_repeats"), lambda v: _is_int(v, 1), "an int >= 1"),
]
_MATRIX_FIELDS = [
    (("summary", key), _is_real, "a number") for key in ("final_error", "max_error", "final_bound")
]
_MISSING = object()


def _spectral_problem(spectral: Any) -> str | None:
    """What is wrong with a run's recorded spectral series (``t``, ``cov_error``, ``delta``), if
    anything."""
    if not isinstance(spectral, dict):
        return "spectral is not a mapping"
    t, errors, deltas = spectral.get("t"), spectral.get("cov_error"), spectral.get("delta")
    if not (isinstance(t, list) and all(_is_int(v, 1) for v in t)):
        return "spectral.t is not a list of rounds"
    if not (
        isinstance(errors, list)
        and len(errors) == len(t)
        and all(_is_real_or_none(v) for v in errors)
    ):
        return "spectral.cov_error is not a list of numbers as long as spectral.t"
    if not isinstance(deltas, dict):
        return "spectral.delta is not a mapping"
    for size, values in deltas.items():
        if not (
            str(size).isdigit()
            and isinstance(values, list)
            and len(values) == len(t)
            and all(_is_real_or_none(v) for v in values)
        ):
            return f"spectral.delta[{size!r}] is not a list of numbers as long as spectral.t"
    return None


def run_meta_problem(meta: Any, run_id: str | None = None) -> str | None:
    """``None`` if ``meta`` is a run's JSON as this version writes it, else what is wrong:
    its seal (:func:`seal_problem`), then each field of the schema (type and range), the run id
    (``run_id``: the one its file name says) and the seed against its config."""
    problem = seal_problem(meta)
    if problem is not None:
        return problem
    task = meta.get("config", {}).get("task") if isinstance(meta.get("config"), dict) else None
    fields = _RUN_FIELDS + (_MATRIX_FIELDS if task == "matrix-approx" else _BANDIT_FIELDS)
    for keys, test, expected in fields:
        value: Any = meta
        for key in keys:
            value = value.get(key, _MISSING) if isinstance(value, dict) else _MISSING
        if value is _MISSING:
            return f"has no {'.'.join(keys)}"
        if not test(value):
            return f"has {'.'.join(keys)} = {value!r}, not {expected}"
        if _is_real(value) and isinstance(value, float) and math.isinf(value):
            return f"has {'.'.join(keys)} = {value!r}, not a finite number"
    if run_id is not None and meta["run_id"] != run_id:
        return f"is the JSON of run {meta['run_id']}, not of {run_id}"
    if meta["seed"] != meta["config"]["seed"]:
        return f"has seed {meta['seed']} where its config says {meta['config']['seed']}"
    if meta["records"]["file"] not in (f"{meta['run_id']}.parquet", f"{meta['run_id']}.csv"):
        return (
            f"names the records file {meta['records']['file']!r}, not one of run {meta['run_id']}"
        )
    for key, low in (("feedback_delay", 0), ("update_every", 1)):  # absent: the plain loop
        value = meta["config"].get(key, low)
        if not _is_int(value, low):
            return f"has config.{key} = {value!r}, not an int >= {low}"
    if meta.get("warnings") is not None and not _are_warnings(meta["warnings"]):
        return "has warnings that are not a list of {category, message} strings"
    if meta.get("spectral") is not None:
        return _spectral_problem(meta["spectral"])
    return None


def _are_warnings(warnings: Any) -> bool:
    """A run's kept warnings (:func:`linbandit_host.user_line.warning_records`): a list
    of mappings of strings with a ``category`` and a ``message``."""
    return isinstance(warnings, list) and all(
        isinstance(w, dict)
        and {"category", "message"} <= w.keys()
        and all(_is_text(v) for v in w.values())
        for w in warnings
    )


# -- output directories ------------------------------------------------------------------


def _unwritable(directory: Path, exc: OSError) -> OutputError:
    where = exc.filename or directory
    return OutputError(
        f"cannot write to the output directory {directory}: {exc.strerror or exc} ({where}); "
        "make it writable or choose another output directory (--out)"
    )


def _command_line() -> str:
    """This process's command line, as a user would retype it: ``linbandit sweep c.yaml --out d``
    (the program's path shortened to its name)."""
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
    if argv:
        argv[0] = Path(argv[0]).name
    if len(argv) > 1 and Path(argv[1]).name in (
        "linbandit",
        "__main__.py",
    ):  # python .../bin/linbandit
        argv = ["linbandit", *argv[2:]]
    return shlex.join(argv).replace("\n", " ")[:500]


def lock_holder(text: str) -> tuple[str, str, str]:
    """``(pid, what, command)`` read from a lock file's ``text`` (written by
    :func:`lock_output_dir`)."""
    lines = [line.strip() for line in text.splitlines()]
    pid, what, command = (lines + ["", "", ""])[:3]
    return pid or "unknown", what, command


@contextmanager
def lock_output_dir(directory: str | Path, what: str = "sweep") -> Iterator[Path]:
    """Create ``directory`` and hold its lock for the block: one writer per output directory.

    Raises :class:`OutputError` if the directory cannot be written, or if another process
    holds the lock (the message says what holds it: its pid, what it is -- a sweep, a run --
    and its command line, which the lock file holds). The lock is ``flock`` on ``DIR/.lock``:
    the kernel releases it when the holder exits, however it exits, so no stale lock is left.
    """
    directory = Path(directory)
    lock = directory / LOCK_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # never through a link, never blocking on a FIFO; what opens must be a plain file
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NO_FOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if lock.is_symlink():
            raise OutputError(
                f"{lock} is a symbolic link (to {os.path.realpath(lock)}), where "
                f"linbandit keeps the lock of {directory}: remove the link, or "
                "choose another output directory (--out)"
            ) from exc
        raise _unwritable(directory, exc) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OutputError(
            f"{lock} is not a regular file, where linbandit keeps the lock of "
            f"{directory}: move it away, or choose another output directory (--out)"
        )
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                pid, holder, command = lock_holder(os.pread(fd, 4096, 0).decode(errors="replace"))
                running = f" running `{command}`" if command else ""
                raise OutputError(
                    f"another {holder or 'process'} (pid {pid}) is using {directory}{running}: "
                    "wait for it to "
                    "finish, or choose another output directory (--out)"
                ) from exc
            except OSError:  # a file system without locks (ENOLCK): write unlocked, as before locks
                pass
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n{what}\n{_command_line()}\n".encode())
        yield directory
    finally:
        os.close(fd)  # releases the flock


def current_writer(directory: str | Path) -> tuple[str, str, str] | None:
    """``(pid, what, command)`` of the process that holds the lock of ``directory`` now (a
    sweep or a run writing it), else ``None``. Asks the kernel without waiting and without
    writing: the lock is tried shared and released at once."""
    if fcntl is None:
        return None
    try:
        fd = os.open(Path(directory) / LOCK_NAME, os.O_RDONLY | _NO_FOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return lock_holder(os.pread(fd, 4096, 0).decode(errors="replace"))
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there: assume alive, keep its files
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, someone else's
        return True
    return True


def remove_stale_temporaries(directory: str | Path) -> list[Path]:
    """Remove the temporary files :func:`atomic_path` left in ``directory`` when their writer is
    gone; returns what was removed.

    Only regular files named as this project names its temporaries
    (``.NAME.linbandit-pidPID.XXXX.tmp``) are candidates, and one whose pid is a live process
    is kept (it may be that process's write in flight): a user's ``.notes.tmp``, a link or a
    directory is never touched.
    """
    directory = Path(directory)
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    for tmp in directory.glob(".*.tmp"):
        match = _TEMP_NAME.match(tmp.name)
        if not match or _pid_alive(int(match.group(1))):
            continue
        try:
            if not stat.S_ISREG(tmp.lstat().st_mode):
                continue
            tmp.unlink()
        except OSError:
            continue
        removed.append(tmp)
    return removed


# -- run directories: the layout, saving a run, reading runs back -------------------------------


def _canonical_default(value: Any) -> Any:
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (tuple, set)):
        return list(value)
    raise TypeError(f"value {value!r} of type {type(value).__name__} is not JSON-serialisable")


def canonical_json(value: Any) -> str:
    """Key-sorted compact JSON: the form run ids hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_canonical_default)


def run_id(config: dict) -> str:
    """Stable id of a canonical run config: 16 hex digits of its SHA-256 (its files' name)."""
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]


#: Writes the user can fix by choosing another directory (exit code 2); any other error of the
#: file system (a full disk, a file too large, an I/O error) is a failure (exit code 1).
_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}


def _output_error(out: Path, exc: OSError) -> OutputError:
    """One line for an error of the file system while writing ``out``."""
    where = exc.filename or out
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in _UNWRITABLE:
        return OutputError(
            f"cannot write to {where}: {reason}; make {out} writable or choose another output "
            "directory (--out)"
        )
    return OutputError(
        f"cannot write to {where}: {reason}; free space (or raise the file size limit) or choose "
        "another output directory (--out); every run saved before is kept",
        exit_code=1,
    )


#: What the commands write into an output directory (``sweep``, ``run --out``, ``plot``,
#: ``report``, ``tune``): each is checked before the first write (:func:`check_output_dir`).
OUTPUT_NAMES = (
    ".lock",
    "config.yaml",
    "manifest.json",
    "runs",
    "failed",
    "summary.csv",
    "summary.md",
    "plots",
    "regret.png",
    "report.html",
    "report.md",
    "tune-table.csv",
    "tuned.yaml",
    "tuned-config.yaml",
    "halving",
)


def check_output_dir(out: str | Path, keeps: tuple[str, ...] = ("runs", "failed")) -> Path:
    """``out`` if a command can write its files there, checked without writing anything: it is
    a directory (or does not exist yet), ``plots`` and the directories it ``keeps`` (``runs``
    and ``failed``; a tuning by successive halving ``halving``) are directories where they
    exist, and no symbolic link among the places the commands write (:data:`OUTPUT_NAMES`)
    leads out of it (:func:`check_output_paths`).

    Raises:
        OutputError: what is in the way, and what to do (exit code 2).
    """
    out = Path(out)
    if (out.exists() or out.is_symlink()) and not out.is_dir():
        raise OutputError(f"{out} is not a directory: choose another output directory (--out)")
    for sub in dict.fromkeys((*keeps, "plots")):
        if (out / sub).exists() and not (out / sub).is_dir():
            raise OutputError(
                f"{out / sub} is a file, where {out} keeps its {sub}/ directory: "
                "move it away, or choose another output directory (--out)"
            )
    check_output_paths(out, OUTPUT_NAMES)
    return out


@contextmanager
def writing_output_dir(
    out: Path, what: str, keeps: tuple[str, ...] = ("runs", "failed")
) -> Iterator[None]:
    """Hold the lock of ``out`` (one writer per directory), check it again under the lock
    (:func:`check_output_dir`), make its first directory of ``keeps`` (``runs/``; a tuning by
    successive halving keeps ``halving/``), clear what dead writers left there and in ``out``,
    and turn an error of the file system into one clear :class:`OutputError`."""
    check_output_dir(out, keeps)
    with lock_output_dir(out, what):
        try:
            check_output_dir(out, keeps)
            (out / keeps[0]).mkdir(exist_ok=True)
            for directory in (out, *(out / sub for sub in keeps)):
                remove_stale_temporaries(directory)
            yield
        except (
            ConnectionError,
            TimeoutError,
        ):  # the network (a Ray cluster), not the output directory
            raise
        except OSError as exc:  # also pyarrow's, whose errno may be unset
            raise _output_error(out, exc) from exc


def records_path(runs_dir: Path, rid: str) -> Path | None:
    """The records file of run ``rid`` in ``runs_dir`` (Parquet, else CSV), or None."""
    for suffix in (".parquet", ".csv"):
        path = runs_dir / f"{rid}{suffix}"
        if path.exists():
            return path
    return None


def records_problem(runs_dir: Path, meta: dict) -> str | None:
    """``None`` if the records of the run ``meta`` describes are complete, else what is wrong
    (naming the file): missing, or not matching the size and rows its metadata stores."""
    rid = meta.get("run_id")
    named = (meta.get("records") or {}).get("file")
    path = runs_dir / named if named else records_path(runs_dir, str(rid))
    if path is None or not path.exists():
        return f"{path or runs_dir / f'{rid}.parquet'} is missing"
    problem = check_records(path, meta.get("records"))
    return None if problem is None else f"{path} {problem}"


def read_run_meta(path: str | Path) -> dict:
    """A run's JSON (``runs/<id>.json``), checked: valid JSON, its checksum, the schema of a
    run's JSON (:func:`run_meta_problem`); else :class:`RecordsError`
    naming the file and what is wrong."""
    path = Path(path)
    meta = read_json(path)
    problem = run_meta_problem(meta, path.stem)
    if problem is not None:
        raise RecordsError(f"{path} {problem}")
    return meta


def checked_run(out_dir: str | Path, run_id: str) -> tuple[dict | None, str | None]:
    """``(meta, None)`` if run ``run_id`` of ``out_dir`` passes every check, else ``(None,
    what is wrong)``, naming the file: its JSON missing, garbled or failing its checksum or
    schema, its records missing or not the size, rows and SHA-256 its JSON stores."""
    runs_dir = Path(out_dir) / "runs"
    meta_path = runs_dir / f"{run_id}.json"
    if not meta_path.exists():
        return None, f"{meta_path} is missing"
    try:
        meta = read_run_meta(meta_path)
    except RecordsError as exc:
        return None, str(exc).split("; delete it")[0]
    except OSError as exc:
        return None, f"{meta_path} cannot be read ({exc.strerror or exc})"
    problem = records_problem(runs_dir, meta)
    return (meta, None) if problem is None else (None, problem)


def run_problem(out_dir: str | Path, run_id: str) -> str | None:
    """``None`` if run ``run_id`` of ``out_dir`` passes every check, else what is wrong."""
    return checked_run(out_dir, run_id)[1]


def is_finished(out_dir: str | Path, spec: Any) -> bool:
    """Whether ``spec`` (a :class:`~linbandit_gym.experiments.RunSpec`: ``run_id`` and
    ``config``) has records and metadata with the same config in ``out_dir`` that pass every
    check (:func:`run_problem`). A run that fails one is not finished: it is done again.
    """
    meta, _ = checked_run(out_dir, spec.run_id)
    return meta is not None and canonical_json(meta["config"]) == canonical_json(spec.config)


def refresh_labels(out_dir: Path, spec: Any) -> None:
    """A finished run keeps its records; only its labels follow the current config."""
    meta_path = out_dir / "runs" / f"{spec.run_id}.json"
    meta = read_run_meta(meta_path)
    new = {"agent_label": spec.agent_label, "env_label": spec.env_label, "family": spec.family}
    if any(meta.get(k) != v for k, v in new.items()):
        meta.update(new)
        write_json_atomic(seal(meta), meta_path, out_dir)


def save_run(out_dir: str | Path, records: pd.DataFrame, meta: dict) -> Path:
    """Write a finished run: its records, then its metadata with their fingerprint (size, rows,
    SHA-256), sealed with its own checksum (the ``.json`` last: its presence marks the run
    finished). Clears an earlier failure."""
    out = Path(out_dir)
    rid = meta["run_id"]
    path = write_records(records, out / "runs" / rid, out)
    meta = seal({**meta, "records": records_fingerprint(path, len(records))})
    write_json_atomic(meta, out / "runs" / f"{rid}.json", out)
    stale = out / "failed" / f"{rid}.json"
    if stale.exists():
        stale.unlink()
    return path


def write_sweep_config(out: Path, cfg: Any) -> None:
    """``DIR/config.yaml`` (``cfg.raw``, the config as given) and ``DIR/manifest.json`` (sealed: the
    name, task and run ids of ``cfg``, a :class:`~linbandit_gym.experiments.SweepConfig`)."""
    write_text_atomic(yaml.safe_dump(cfg.raw, sort_keys=False), out / "config.yaml", out)
    manifest = {
        "name": cfg.name,
        "task": cfg.task,
        "runs": [
            {"run_id": r.run_id, "agent": r.agent_label, "env": r.env_label, "seed": r.seed}
            for r in cfg.runs
        ],
    }
    write_json_atomic(seal(manifest), out / "manifest.json", out)


def _run_ids(out_dir: Path, all_runs: bool) -> list[str] | None:
    manifest = out_dir / "manifest.json"
    if all_runs or not manifest.exists():
        return None
    data = read_json(manifest)
    problem = seal_problem(data)
    if problem is None:
        try:
            ids = [r["run_id"] for r in data["runs"]]
            if all(isinstance(i, str) for i in ids):
                return ids
        except (KeyError, TypeError):
            pass
        problem = "does not list the runs"
    raise RecordsError(
        f"{manifest} {problem}: rerun the sweep (or the same `linbandit run` command) to write it "
        f"again, or delete it to see every run of {out_dir}"
    )


def load_runs(out_dir: str | Path, *, all_runs: bool = False) -> pd.DataFrame:
    """One row per finished run: labels, seed, agent args, summary metrics.

    By default only the runs of the directory's current config (its manifest); ``all_runs``
    also returns runs of earlier configs written to the same directory.
    """
    out = Path(out_dir)
    runs_dir = out / "runs"
    if not runs_dir.is_dir():
        raise FileNotFoundError(
            f"{out} holds no sweep (no runs/ directory): run `linbandit sweep CONFIG --out {out}`"
        )
    wanted = _run_ids(out, all_runs)
    paths = (
        [runs_dir / f"{rid}.json" for rid in wanted]
        if wanted is not None
        else sorted(runs_dir.glob("*.json"))
    )
    rows, problems = [], []
    for path in paths:
        if not path.exists():
            continue  # not run yet, or failed: the report lists failed/
        meta, problem = checked_run(out, path.stem)
        if problem is not None:
            problems.append(problem)
            continue
        summary = meta["summary"]
        # how its times were measured; runs saved before records said so: B if it ran in a batch
        shared_by = summary.get("time_shared_by", meta.get("batch_size", 1))
        row = {
            "run_id": meta["run_id"],
            "agent": meta["agent_label"],
            "env": meta["env_label"],
            "family": meta.get("family", meta["config"]["agent"]["name"]),
            "agent_name": meta["config"]["agent"]["name"],
            "seed": meta["seed"],
            "device": meta.get("device"),
            "backend": meta.get("backend"),
            # the feedback schedule played (absent from the config: the plain loop)
            "feedback_delay": meta["config"].get("feedback_delay", 0),
            "update_every": meta["config"].get("update_every", 1),
            **{f"arg.{k}": v for k, v in meta["config"]["agent"]["args"].items() if _is_scalar(v)},
            **{k: v for k, v in summary.items() if _is_scalar(v)},
            "time_shared_by": shared_by,
        }
        rows.append(row)
    if problems:
        raise _damaged(out, problems)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Completeness:
    """How much of a sweep directory's config is on disk: ``finished`` runs of the ``listed``
    ones of its manifest (``None``: no manifest), and ``writer``, the ``(pid, what, command)``
    of a process writing the directory now (:func:`current_writer`)."""

    out: Path
    finished: int
    listed: int | None
    writer: tuple[str, str, str] | None

    def note(self) -> str | None:
        """A line saying that tables and figures drawn now are partial, and why; ``None`` when
        every run of the config is finished and nothing is writing the directory."""
        if self.writer is not None:
            pid, what, command = self.writer
            running = f" (`{command}`)" if command else ""
            listed = f" of {self.listed}" if self.listed is not None else ""
            return (
                f"partial: a {what or 'process'} (pid {pid}){running} is still writing "
                f"{self.out}; these tables and figures hold the {self.finished}{listed} runs "
                "finished so far: plot again when it is done"
            )
        if self.listed is not None and self.finished < self.listed:
            missing = self.listed - self.finished
            return (
                f"partial: {missing} of the {self.listed} runs of the config of {self.out} are "
                "not finished (not run yet, failed, or their files deleted); these tables and "
                f"figures hold the {self.finished} finished runs: rerun the sweep to complete "
                "them"
            )
        return None


def completeness(out_dir: str | Path) -> Completeness:
    """The :class:`Completeness` of ``out_dir``: its manifest's runs that have their JSON (the
    checks of :func:`load_runs` are not repeated here) and what is writing it now."""
    out = Path(out_dir)
    try:
        wanted = _run_ids(out, all_runs=False)
    except (RecordsError, OSError):
        wanted = None
    runs_dir = out / "runs"
    if wanted is None:
        finished = len(list(runs_dir.glob("*.json"))) if runs_dir.is_dir() else 0
    else:
        finished = sum((runs_dir / f"{rid}.json").exists() for rid in dict.fromkeys(wanted))
    listed = None if wanted is None else len(dict.fromkeys(wanted))
    return Completeness(out, finished, listed, current_writer(out))


def _damaged(out: Path, problems: list[str]) -> RecordsError:
    """The error naming every run of ``out`` that fails its checks, with the reason."""
    listed = "\n".join(f"  {problem}" for problem in problems)
    return RecordsError(
        f"{len(problems)} run(s) of {out} fail their checks, so no table or figure would be "
        f"right:\n{listed}\nrerun the sweep (or the same `linbandit run` command) to redo them, or "
        "delete a run's .json to leave it out"
    )


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str, np.number))


def load_meta(out_dir: str | Path, run_id: str) -> dict:
    """The checked JSON of run ``run_id`` (:func:`read_run_meta`)."""
    return read_run_meta(Path(out_dir) / "runs" / f"{run_id}.json")


def load_records(
    out_dir: str | Path, run_ids: list[str] | None = None, *, columns: list[str] | None = None
) -> pd.DataFrame:
    """Concatenated per-round records of finished runs, labelled by the current config."""
    out = Path(out_dir)
    runs = load_runs(out)
    if run_ids is not None:
        runs = runs[runs["run_id"].isin(run_ids)]
    frames = []
    for rid, agent, env in zip(runs["run_id"], runs["agent"], runs["env"]):
        # the file its JSON names (load_runs checked its SHA-256)
        path = out / "runs" / read_json(out / "runs" / f"{rid}.json")["records"]["file"]
        frame = read_records(path)
        if columns is not None:
            frame = frame[[c for c in columns if c in frame.columns]]
        frames.append(frame.assign(agent=agent, env=env))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)
