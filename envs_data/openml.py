"""The OpenML classification sets of Wen et al. (2025), App. F.4 (Table 3), offline first.

| name | OpenML id | OpenML name | instances | features | classes |
|---|---|---|---|---|---|
| ``cnae-9`` | 1468 | cnae-9 | 1080 | 856 | 9 |
| ``mfeat`` | 22 | mfeat-zernike | 2000 | 47 (Table 3 says 48) | 10 |
| ``spam`` | 44 | spambase | 4601 | 57 | 2 |

Where the data comes from, in this order (never a silent download, never a hang):

1. ``path=`` a local file: ``.npz`` (arrays ``X``, ``y``), ``.csv`` (label in the last
   column, optional header row) or dense ``.arff`` (label = last attribute, e.g. the
   file OpenML serves);
2. the same kind of file placed at ``<data_dir>/openml/<name>.{npz,csv,arff}`` (the OpenML
   name works too, e.g. ``spambase.csv``);
3. scikit-learn's OpenML cache under ``<data_dir>/openml/openml.org/`` (what
   ``fetch_openml(data_home=<data_dir>)`` writes), read without the network: every cache file
   is checked first (complete gzip, valid JSON with the keys scikit-learn reads, the data
   file's MD5 checksum), and a missing or damaged one is named in the error instead of being
   fetched again;
4. only with ``download=True``: a reachability probe of www.openml.org bounded by
   ``timeout`` seconds, then ``fetch_openml`` into that cache.

Otherwise ``FileNotFoundError`` says which files to place where. Labels are encoded
0..M-1 in sorted order of the original class values (numeric order when numeric).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import socket
import threading
import zlib
from contextlib import contextmanager, nullcontext
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

from ._common import as_xy, encode_labels, get_data_dir, read_npz

__all__ = [
    "OPENML_SETS",
    "OPENML_SHAPES",
    "OPENML_HOST",
    "load_openml",
    "openml_help",
    "openml_cache_file",
    "read_table",
]

#: name -> (OpenML data id, OpenML name, description).
OPENML_SETS: dict[str, tuple[int, str, str]] = {
    "cnae-9": (
        1468,
        "cnae-9",
        "CNAE-9 business-description word counts (OpenML 1468): 1080 x 856, 9 classes",
    ),
    "mfeat": (
        22,
        "mfeat-zernike",
        "MFeat Zernike moments of handwritten digits (OpenML 22): 2000 x 47, 10 classes",
    ),
    "spam": (44, "spambase", "Spambase e-mail features (OpenML 44): 4601 x 57, 2 classes"),
}
#: name -> (samples, features, classes) as published on OpenML (for memory estimates).
OPENML_SHAPES: dict[str, tuple[int, int, int]] = {
    "cnae-9": (1080, 856, 9),
    "mfeat": (2000, 47, 10),
    "spam": (4601, 57, 2),
}
#: Host probed before any download (tests point it at an unresolvable name).
OPENML_HOST = "www.openml.org"
_LOCAL_SUFFIXES = (".npz", ".csv", ".arff")


def openml_cache_file(data_id: int, data_dir: str | os.PathLike | None = None) -> Path:
    """The metadata file scikit-learn's ``fetch_openml(data_home=data_dir)`` caches first."""
    return (
        get_data_dir(data_dir)
        / "openml"
        / "openml.org"
        / "api"
        / "v1"
        / "json"
        / "data"
        / f"{data_id}.gz"
    )


def openml_help(name: str, data_dir: Path) -> str:
    """How to provide an OpenML set offline (used in error messages and the README)."""
    data_id, openml_name, _ = OPENML_SETS[name]
    local = data_dir / "openml"
    return (
        f"To use {name!r} offline, either (a) place {local / (name + '.npz')} (arrays X, y) or "
        f"{local / (name + '.csv')} (features then the label in the last column, optional header "
        "row) or the dense "
        f"ARFF file from https://www.openml.org/d/{data_id} as {local / (name + '.arff')}; or pass "
        "path=<file>; or "
        f"(b) copy a scikit-learn OpenML cache: on a machine with internet run "
        f"`python -c \"import envs_data; envs_data.load_dataset('{name}', data_dir='DIR', "
        'download=True)"` '
        f"(or sklearn.datasets.fetch_openml(data_id={data_id}, data_home='DIR')) and copy "
        f"DIR/openml to {local}. "
        f"Set $LINBANDIT_DATA or data_dir= to choose the data directory (now {data_dir})."
    )


def read_table(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read a labelled table: ``.npz`` (``X``, ``y``), ``.csv`` (label last) or dense ``.arff``
    (label last)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        arrays = read_npz(path)
        if not {"X", "y"} <= set(arrays):
            raise ValueError(f"{path} holds arrays {sorted(arrays)}; expected arrays named X and y")
        return as_xy(arrays["X"], arrays["y"], str(path))
    if suffix == ".csv":
        return _read_csv(path)
    if suffix == ".arff":
        return _read_arff(path)
    raise ValueError(
        f"{path}: unsupported file type {suffix!r}; use .npz (X, y), .csv (label last) or .arff"
    )


_CSV_LAYOUT = (
    "expected comma-separated rows of features then the label (an optional header row first)"
)


def _read_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    try:
        with open(path, encoding="utf-8") as fh:
            first = fh.readline().strip()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc}); {_CSV_LAYOUT}") from exc
    if not first:
        raise ValueError(f"{path}: the file is empty or starts with a blank line; {_CSV_LAYOUT}")
    try:
        [float(v) for v in first.split(",")[:-1]]
        header = None
    except ValueError:
        header = 0  # the first line names the columns
    try:
        frame = pd.read_csv(path, header=header)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: could not parse this CSV file ({exc}); {_CSV_LAYOUT}") from exc
    if frame.shape[1] < 2:
        raise ValueError(
            f"{path}: expected at least 2 comma-separated columns (features, then the label)"
        )
    return as_xy(frame.iloc[:, :-1].to_numpy(), frame.iloc[:, -1].to_numpy(), str(path))


def _read_arff(path: Path) -> tuple[np.ndarray, np.ndarray]:
    from scipy.io import arff

    hint = (
        "expected a dense ARFF file (@RELATION, @ATTRIBUTE lines, the label last, then @DATA rows)"
    )
    try:
        data, _meta = arff.loadarff(str(path))
    except StopIteration:  # scipy's parser runs out of lines before finding a header
        raise ValueError(
            f"{path}: not an ARFF file (no @RELATION/@ATTRIBUTE header found); {hint}"
        ) from None
    except (NotImplementedError, ValueError, UnicodeDecodeError, arff.ArffError) as exc:
        raise ValueError(
            f"{path}: could not parse this ARFF file ({exc}); {hint}. Sparse ARFF is not supported "
            "here: convert "
            "it to .npz (X, y) or .csv (label last)"
        ) from exc
    names = data.dtype.names or ()
    if len(names) < 2:
        raise ValueError(
            f"{path}: the ARFF file declares {len(names)} attribute(s) {list(names)}; it needs at "
            "least one feature "
            "and the label (the last attribute)"
        )
    try:
        X = np.column_stack([data[n].astype(np.float64) for n in names[:-1]])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: the feature attributes must be NUMERIC ({exc}); {hint}") from exc
    return as_xy(X, data[names[-1]], str(path))


@contextmanager
def _socket_timeout(seconds: float):
    # urlopen inside fetch_openml has no timeout argument; the default socket timeout
    # bounds every connect/read it makes.
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(old)


def _probe(host: str, timeout: float) -> None:
    """Raise ``ConnectionError`` unless ``host:443`` accepts a connection within ``timeout`` s.

    Runs in a daemon thread so that a stuck DNS lookup (not covered by socket timeouts)
    cannot block the caller longer than ``timeout``.
    """
    outcome: dict[str, BaseException | None] = {}

    def target() -> None:
        try:
            with socket.create_connection((host, 443), timeout=timeout):
                outcome["error"] = None
        except Exception as exc:  # noqa: BLE001 - reported to the caller, never lost in the thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise ConnectionError(f"no answer from {host} within {timeout:g} s")
    if outcome.get("error") is not None:
        raise ConnectionError(f"cannot reach {host}: {outcome['error']}")


def _damaged(path: Path, problem: str, name: str) -> ValueError:
    return ValueError(
        f"{path}: {problem}. This file of the OpenML cache of {name!r} is damaged and "
        "download=False, so it is not "
        f"fetched again: delete it and run load_dataset({name!r}, download=True) (or copy the "
        "cache again from a "
        "machine where it loads)"
    )


def _cache_bytes(path: Path, name: str, root: Path) -> bytes:
    """The decompressed content of one cache file, or an error naming it (missing, not gzip,
    truncated)."""
    if not path.is_file():
        raise FileNotFoundError(
            f"the OpenML cache of {name!r} under {root / 'openml'} is incomplete: {path} is "
            "missing and "
            "download=False. " + openml_help(name, root)
        )
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise _damaged(path, f"not a complete gzip file ({exc})", name) from exc


def _cache_json(path: Path, name: str, root: Path, keys: tuple[str, ...]) -> dict:
    """A cached OpenML API answer: ``{keys[0]: {...}}`` holding every one of ``keys[1:]``."""
    try:
        content = json.loads(_cache_bytes(path, name, root))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _damaged(path, f"not valid JSON ({exc})", name) from exc
    outer, *inner = keys
    body = content.get(outer) if isinstance(content, dict) else None
    if not isinstance(body, dict):
        raise _damaged(path, f"the JSON has no {outer!r} object", name)
    missing = [key for key in inner if key not in body]
    if missing:
        raise _damaged(path, f"the {outer!r} object lacks {missing}", name)
    return body


def _check_cache(data_id: int, root: Path, name: str) -> None:
    """Check every file ``fetch_openml(data_id)`` will read from the cache, without the network.

    scikit-learn deletes a cache file it cannot parse and downloads it again; offline that
    means a network wait and then a confusing error (``KeyError: 'status'`` for a truncated
    description). So each file is checked here first and a bad one is named.
    """
    api = root / "openml" / "openml.org" / "api" / "v1" / "json" / "data"
    description = _cache_json(
        api / f"{data_id}.gz",
        name,
        root,
        ("data_set_description", "status", "format", "url", "md5_checksum"),
    )
    _cache_json(api / "features" / f"{data_id}.gz", name, root, ("data_features", "feature"))
    if str(description["format"]).lower() != "sparse_arff":
        _cache_json(api / "qualities" / f"{data_id}.gz", name, root, ("data_qualities",))
    data_file = (
        root
        / "openml"
        / "openml.org"
        / (urlparse(str(description["url"])).path.lstrip("/") + ".gz")
    )
    checksum = hashlib.md5(_cache_bytes(data_file, name, root)).hexdigest()
    if checksum != description["md5_checksum"]:
        raise _damaged(
            data_file,
            f"its MD5 checksum {checksum} differs from {description['md5_checksum']} announced by "
            f"{api / f'{data_id}.gz'}",
            name,
        )


@contextmanager
def _sklearn_offline():
    """Make scikit-learn's OpenML client fail at once instead of opening a connection."""
    from unittest import mock
    from urllib.error import URLError

    import sklearn.datasets._openml as sklearn_openml

    def refuse(*args, **kwargs):
        raise URLError("download=False: the network is not used")

    if not hasattr(
        sklearn_openml, "urlopen"
    ):  # another scikit-learn layout: _check_cache still guards
        yield
        return
    with mock.patch.object(sklearn_openml, "urlopen", refuse):
        yield


def _fetch(
    data_id: int, root: Path, *, offline: bool, timeout: float
) -> tuple[np.ndarray, np.ndarray]:
    import warnings

    from sklearn.datasets import fetch_openml

    # fetch_openml reads every file it finds in its cache and only goes to the network for
    # a missing one; offline, that attempt must fail at once (sklearn's minimum: 1 retry).
    with (
        _socket_timeout(timeout),
        warnings.catch_warnings(),
        _sklearn_offline() if offline else nullcontext(),
    ):
        if offline:
            warnings.filterwarnings("ignore", message="A network error occurred")
        X, y = fetch_openml(
            data_id=data_id,
            data_home=str(root),
            return_X_y=True,
            as_frame=False,
            n_retries=1,
            delay=0.01 if offline else 1.0,
            # The pandas ARFF parser of scikit-learn 1.9 fails on numeric nominal classes
            # (spambase {0,1}, mfeat {1..10}) with pandas 3; liac-arff reads them all.
            parser="liac-arff",
        )
    if hasattr(X, "toarray"):  # sparse ARFF on OpenML
        X = X.toarray()
    return X, y


def load_openml(
    name: str,
    data_dir: str | os.PathLike | None = None,
    path: str | os.PathLike | None = None,
    download: bool = False,
    timeout: float = 10.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Load one of :data:`OPENML_SETS` (see the module docstring for the search order)."""
    if name not in OPENML_SETS:
        raise ValueError(f"unknown OpenML set {name!r}; known: {sorted(OPENML_SETS)}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    data_id, openml_name, _ = OPENML_SETS[name]
    root = get_data_dir(data_dir)
    X, y = _load_openml_raw(name, root, path, download, float(timeout))
    return X, encode_labels(y, f"OpenML {data_id} ({openml_name})")


def _load_openml_raw(
    name: str, root: Path, path, download: bool, timeout: float
) -> tuple[np.ndarray, np.ndarray]:
    data_id, openml_name, _ = OPENML_SETS[name]
    if path is not None:
        return read_table(path)
    for stem in dict.fromkeys((name, openml_name)):
        for suffix in _LOCAL_SUFFIXES:
            candidate = root / "openml" / (stem + suffix)
            if candidate.is_file():
                return read_table(candidate)

    source = f"OpenML {data_id} ({openml_name})"
    if openml_cache_file(data_id, root).is_file():
        if not download:
            _check_cache(data_id, root, name)  # names a missing or damaged file; no network
        try:
            X, y = _fetch(
                data_id,
                root,
                offline=not download,
                timeout=timeout if download else min(timeout, 2.0),
            )
        except OSError as exc:  # URLError, timeouts, DNS errors: the cache lacks a file
            raise FileNotFoundError(
                f"the OpenML cache of {name!r} under {root / 'openml'} is incomplete or corrupt "
                "and fetching the "
                f"missing part failed ({exc}). " + openml_help(name, root)
            ) from exc
        return as_xy(X, y, source)
    if not download:
        raise FileNotFoundError(
            f"{name!r} ({source}) is not in the data directory {root} and download=False. "
            + openml_help(name, root)
        )
    try:
        _probe(OPENML_HOST, timeout)
        X, y = _fetch(data_id, root, offline=False, timeout=timeout)
    except OSError as exc:
        raise ConnectionError(
            f"could not download {name!r} ({source}): {exc}. " + openml_help(name, root)
        ) from exc
    return as_xy(X, y, source)
