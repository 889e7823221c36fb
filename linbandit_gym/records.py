"""Writing and reading result files: run records (Parquet, or CSV without pyarrow), JSON, YAML.

Every result file goes through :func:`atomic_path`: it is written under a temporary name in
its directory (``.NAME.pidPID.XXXX.tmp``), flushed to disk, given the mode the user's umask
asks for, and renamed, so a reader never sees a half-written file and a colleague on a shared
server can read what the umask lets them read. :func:`lock_output_dir` makes one process the
only writer of an output directory; :func:`remove_stale_temporaries` removes only the
temporaries of writers that are gone. :func:`records_fingerprint` and :func:`check_records`
let a later reader tell a complete records file from a truncated one without reading it all.
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

try:  # POSIX; elsewhere an output directory is not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

__all__ = [
    "RecordsError",
    "OutputError",
    "has_parquet",
    "current_umask",
    "atomic_path",
    "write_text_atomic",
    "write_json_atomic",
    "write_records",
    "read_records",
    "read_json",
    "records_fingerprint",
    "check_records",
    "lock_output_dir",
    "remove_stale_temporaries",
]

#: The lock file of an output directory (holds the writer's pid).
LOCK_NAME = ".lock"
_TEMP_PID = re.compile(r"\.pid(\d+)\.[^.]*\.tmp$")


class RecordsError(ValueError):
    """A result file is missing, truncated or garbled; the message names it and says what to do."""


class OutputError(ValueError):
    """An output directory cannot be written (permissions, or another process is writing it)."""


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


@functools.lru_cache(maxsize=None)
def _umask_by_setting() -> int:
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block succeeds, publish it as ``path``.

    The caller writes the temporary file; it is then fsync'ed, given mode ``0o666 & ~umask``
    (``mkstemp`` creates 0600 whatever the umask) and renamed onto ``path``. On an error (or
    Ctrl-C) the temporary file is removed and ``path`` is left as it was. The temporary name
    carries this process's pid so that :func:`remove_stale_temporaries` can tell whose it is.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.pid{os.getpid()}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as fh:  # on disk before the rename: no empty file after a crash
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text_atomic(text: str, path: str | Path) -> Path:
    """Write ``text`` to ``path`` through :func:`atomic_path`."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
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


def write_json_atomic(data: Any, path: str | Path) -> Path:
    """Write ``data`` as JSON to ``path`` through :func:`atomic_path`."""
    return write_text_atomic(json.dumps(data, indent=1, default=_json_default, allow_nan=True), path)


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

def write_records(frame: pd.DataFrame, stem: str | Path) -> Path:
    """Write ``frame`` atomically to ``stem.parquet`` (or ``stem.csv`` without pyarrow)."""
    stem = Path(stem)
    path = stem.with_suffix(".parquet" if has_parquet() else ".csv")
    with atomic_path(path) as tmp:
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
            f"{path} cannot be read ({exc}); it is damaged (truncated?): delete it and rerun the command to redo "
            "that run"
        ) from exc


def records_fingerprint(path: str | Path, rows: int) -> dict:
    """What :func:`check_records` compares later: file name, size in bytes, number of rows."""
    path = Path(path)
    return {"file": path.name, "bytes": path.stat().st_size, "rows": int(rows)}


def check_records(path: str | Path, fingerprint: dict | None = None) -> str | None:
    """``None`` if the records file looks complete, else what is wrong with it.

    Cheap: a ``stat``, and for Parquet the footer (its last bytes), never the data. With a
    ``fingerprint`` (from :func:`records_fingerprint`) the size and row count must match it;
    without one (files written before fingerprints) only the Parquet footer is checked.
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
            return f"has {size} bytes where {fingerprint['bytes']} were written (truncated or overwritten)"
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            rows = pq.read_metadata(path).num_rows
        except ImportError:
            return None
        except Exception as exc:  # ArrowInvalid ("Parquet magic bytes not found", ...) and OSError
            return f"is not a complete Parquet file ({exc})"
        if fingerprint and fingerprint.get("rows") is not None and rows != fingerprint["rows"]:
            return f"has {rows} rows where {fingerprint['rows']} were written"
    return None


# -- output directories ------------------------------------------------------------------

def _unwritable(directory: Path, exc: OSError) -> OutputError:
    where = exc.filename or directory
    return OutputError(
        f"cannot write to the output directory {directory}: {exc.strerror or exc} ({where}); "
        "make it writable or choose another output directory (--out)"
    )


@contextmanager
def lock_output_dir(directory: str | Path, what: str = "sweep") -> Iterator[Path]:
    """Create ``directory`` and hold its lock for the block: one writer per output directory.

    Raises :class:`OutputError` if the directory cannot be written, or if another process
    holds the lock (the message gives its pid). The lock is ``flock`` on ``DIR/.lock``: the
    kernel releases it when the holder exits, however it exits, so no stale lock is left.
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise _unwritable(directory, exc) from exc
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                raise OutputError(
                    f"another {what} (pid {holder}) is using {directory}: wait for it to finish, or choose "
                    "another output directory (--out)"
                ) from exc
            except OSError:  # a file system without locks (ENOLCK): write unlocked, as before locks
                pass
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield directory
    finally:
        os.close(fd)  # releases the flock


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
    """Remove the ``.NAME.*.tmp`` files of writers that are gone; returns what was removed.

    A temporary file whose name carries the pid of a live process is kept (it may be that
    process's write in flight); names without a pid come from older versions and are removed.
    """
    directory = Path(directory)
    removed = []
    if not directory.is_dir():
        return removed
    for tmp in directory.glob(".*.tmp"):
        match = _TEMP_PID.search(tmp.name)
        if match and _pid_alive(int(match.group(1))):
            continue
        try:
            tmp.unlink()
        except OSError:
            continue
        removed.append(tmp)
    return removed
