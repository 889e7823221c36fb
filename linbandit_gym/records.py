"""Writing and reading run records (Parquet when pyarrow is installed, CSV otherwise)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

__all__ = ["has_parquet", "write_records", "read_records"]


def has_parquet() -> bool:
    """Whether pandas can write Parquet here (pyarrow installed)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def write_records(frame: pd.DataFrame, stem: str | Path) -> Path:
    """Write ``frame`` atomically to ``stem.parquet`` (or ``stem.csv`` without pyarrow).

    The file is written under a temporary name in the same directory and renamed, so a
    reader (or a resumed sweep) never sees a half-written file.
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    path = stem.with_suffix(".parquet" if has_parquet() else ".csv")
    fd, tmp = tempfile.mkstemp(dir=stem.parent, prefix=f".{stem.name}.", suffix=".tmp")
    os.close(fd)
    try:
        if path.suffix == ".parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def read_records(path: str | Path) -> pd.DataFrame:
    """Read a file written by :func:`write_records` (by suffix)."""
    path = Path(path)
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix == ".csv":
        return pd.read_csv(path)
    raise ValueError(f"unknown records format {path.suffix!r}: expected .parquet or .csv")
