"""Environment families, one per module."""

from .bai import BAILinBanditEnv
from .base import LinBanditEnv
from .classification import ClassificationBanditEnv
from .heavy_tail import HeavyTailLinBanditEnv
from .locally_convex import LocallyConvexLinBanditEnv
from .memory import EnvTooLargeError, MemoryEstimate
from .synthetic import SyntheticLinBanditEnv
from .user_warnings import LinBanditWarning

__all__ = [
    "BAILinBanditEnv",
    "ClassificationBanditEnv",
    "EnvTooLargeError",
    "HeavyTailLinBanditEnv",
    "LinBanditEnv",
    "LinBanditWarning",
    "LocallyConvexLinBanditEnv",
    "MemoryEstimate",
    "SyntheticLinBanditEnv",
]
