"""Environment families, one per module."""

from .base import LinBanditEnv
from .synthetic import SyntheticLinBanditEnv

__all__ = ["LinBanditEnv", "SyntheticLinBanditEnv"]
