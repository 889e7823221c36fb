"""Matrix sketches and the exact baseline, behind one :class:`CovarianceEstimator` interface.

Pure linear algebra: nothing here knows about arms, rewards or regret.
"""

from .base import CovarianceEstimator, PrecisionWarning
from .dbs import DyadicBlockSketch
from .exact import ExactCovariance
from .fd import FrequentDirections
from .rfd import RobustFrequentDirections

__all__ = ["CovarianceEstimator", "ExactCovariance", "FrequentDirections"]
__all__ += ["DyadicBlockSketch", "PrecisionWarning", "RobustFrequentDirections"]
