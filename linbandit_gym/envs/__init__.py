"""Environment families, one per module."""

from .bai import BAILinBanditEnv
from .base import LinBanditEnv
from .synthetic import SyntheticLinBanditEnv

__all__ = ["BAILinBanditEnv", "LinBanditEnv", "SyntheticLinBanditEnv"]
