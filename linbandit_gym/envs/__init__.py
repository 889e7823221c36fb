"""Environment families, one per module."""

from .bai import BAILinBanditEnv
from .base import LinBanditEnv
from .heavy_tail import HeavyTailLinBanditEnv
from .locally_convex import LocallyConvexLinBanditEnv
from .synthetic import SyntheticLinBanditEnv

__all__ = [
    "BAILinBanditEnv",
    "HeavyTailLinBanditEnv",
    "LinBanditEnv",
    "LocallyConvexLinBanditEnv",
    "SyntheticLinBanditEnv",
]
