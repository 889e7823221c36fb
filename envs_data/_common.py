"""Shared helpers of the loaders: the data directory and the (X, y) output contract."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_DATA_DIR",
    "get_data_dir",
    "as_features",
    "as_xy",
    "encode_labels",
    "read_npz",
]

#: Environment variable naming the data directory (overridden by a ``data_dir=`` argument).
DATA_DIR_ENV = "LINBANDIT_DATA"
#: Data directory used when neither ``data_dir=`` nor ``$LINBANDIT_DATA`` is set.
DEFAULT_DATA_DIR = Path("~/.cache/linbandit")


def get_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data/cache directory: ``data_dir`` if given, else ``$LINBANDIT_DATA``, else
    ``~/.cache/linbandit``. The directory is not created (only a download writes to it).

    >>> str(get_data_dir("/tmp/somewhere"))
    '/tmp/somewhere'
    """
    if data_dir is None:
        data_dir = os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR
    if not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(
            f"data_dir must be a path (str or os.PathLike) or None, got {type(data_dir).__name__}"
        )
    return Path(data_dir).expanduser()


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file (no pickles), or a ``ValueError`` naming the file."""
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: not a readable .npz file ({exc})") from exc


def encode_labels(y: Any, source: str = "labels") -> np.ndarray:
    """Map arbitrary class labels to int64 codes 0..M-1 in sorted label order.

    Labels that all parse as numbers are sorted numerically (so OpenML's string classes
    ``"1", ..., "10"`` keep their natural order), others lexicographically.

    >>> encode_labels(["10", "2", "1", "2"]).tolist()
    [2, 1, 0, 1]
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{source}: expected a 1-D label vector, got shape {y.shape}")
    if y.dtype.kind in "iub":
        values = y.astype(np.int64)
    else:
        if y.dtype.kind == "S":
            y = np.char.decode(y, "utf-8")
        strings = np.array([str(v).strip() for v in y.tolist()], dtype=object)
        try:
            values = np.array([float(s) for s in strings], dtype=np.float64)
            if not np.all(np.isfinite(values)):
                raise ValueError
        except ValueError:
            values = strings.astype(str)
    _, codes = np.unique(values, return_inverse=True)
    return codes.reshape(-1).astype(np.int64)


def as_features(X: Any, source: str) -> np.ndarray:
    """``X`` as a C-contiguous float64 ``(n, d)`` array of finite real numbers, or a
    ``ValueError`` that starts with ``source`` (the file or argument the data came from).

    Complex values are refused rather than cast (a cast keeps the real part and silently
    drops the imaginary one).

    >>> as_features([[1, 2], [3, 4]], "demo").dtype
    dtype('float64')
    """
    if np.iscomplexobj(X) or (
        isinstance(X, np.ndarray)
        and X.dtype == object
        and any(isinstance(v, complex) for v in X.ravel().tolist())
    ):
        raise ValueError(
            f"{source}: the features X are complex numbers; a linear bandit needs real features "
            "(pass X.real, np.abs(X), or the real and imaginary parts as separate columns)"
        )
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}: the features X are not numeric ({exc})") from exc
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(
            f"{source}: the features X must be a non-empty 2-D array (n_samples, n_features), got "
            f"shape {X.shape}"
        )
    if not np.all(np.isfinite(X)):
        bad = int(np.count_nonzero(~np.isfinite(X)))
        raise ValueError(
            f"{source}: the features X hold {bad} NaN or inf values; impute or drop them first"
        )
    return np.ascontiguousarray(X)


def as_xy(X: Any, y: Any, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate a loaded dataset and return it as (float64 (n, d), int64 (n,)) arrays.

    Integer labels are kept as they are; any other labels are encoded 0..M-1
    (:func:`encode_labels`). ``source`` names the file or dataset in error messages.
    """
    X = as_features(X, source)
    y = np.asarray(y)
    if y.ndim == 2 and 1 in y.shape:
        y = y.reshape(-1)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"{source}: expected {X.shape[0]} labels (one per row of X), got an array of shape "
            f"{y.shape}"
        )
    if y.dtype.kind in "iu":
        y = y.astype(np.int64)
    elif y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
        y = y.astype(np.int64)
    else:
        y = encode_labels(y, source)
    return X, np.ascontiguousarray(y)
