"""Environment families, one per module."""

from .bai import BAILinBanditEnv
from .base import LinBanditEnv
from .heavy_tail import HeavyTailLinBanditEnv
from .synthetic import SyntheticLinBanditEnv

__all__ = ["BAILinBanditEnv", "HeavyTailLinBanditEnv", "LinBanditEnv", "SyntheticLinBanditEnv"]
