"""Matrix sketches and the exact baseline, behind one :class:`CovarianceEstimator` interface.

Pure linear algebra: nothing here knows about arms, rewards or regret.
"""

from .base import CovarianceEstimator, PrecisionWarning
from .exact import ExactCovariance
from .fd import FrequentDirections
from .rfd import RobustFrequentDirections
from .dbs import DyadicBlockSketch

__all__ = ["CovarianceEstimator", "ExactCovariance", "FrequentDirections", "RobustFrequentDirections"]
__all__ += ["DyadicBlockSketch", "PrecisionWarning"]
