"""Bandit agents and the matrix sketches they are built on (torch, any device).

``from agents import OFUL, SOFUL, CBSCFD, DBSLinUCB, GAllocation`` gives the paper's agents;
:class:`Agent` and :func:`check_agent` document and check the contract that any
third-party agent satisfies by duck typing. ``AGENTS`` maps the names the command line
accepts to the classes. This package imports neither ``linbandit_gym`` nor ``envs_data``.

An agent is an estimator and an action rule: :class:`EstimatorAgent` plays any covariance
estimator (:mod:`agents.sketches`) and :class:`LinUCB` is the optimism rule on it
(:class:`ThompsonSampling` the Thompson sampling rule: LinTS, SLinTS, DBSLinTS). What a class
tells the registry, the planner and the memory estimate it declares: its constructor's
``parameter_constraints`` (:class:`Interval`, :class:`Options`, checked by
:func:`validate_parameters`), its :class:`Batching`, its estimator.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

from ._validate import Interval, InvalidArgumentError, Options, validate_parameters
from ._warnings import DesignWarning, DiscardedMassWarning, SketchSizeWarning
from .base import Agent, AgentProtocol, Batching, TorchAgent, check_agent
from .cbscfd import CBSCFD
from .dbslints import DBSLinTS
from .dbslinucb import DBSLinUCB, DBSLinUCBFD, DBSLinUCBRFD
from .estimator_agent import EstimatorAgent
from .g_allocation import GAllocation
from .lints import LinTS
from .linucb import LinUCB
from .oful import OFUL
from .phased_elimination import PhasedElimination
from .slints import SLinTS
from .soful import SOFUL
from .thompson import ThompsonSampling
from .xy_adaptive import XYAdaptive
from .xy_static import XYStatic

AGENTS: dict[str, type] = {"OFUL": OFUL, "SOFUL": SOFUL, "CBSCFD": CBSCFD}
AGENTS.update({"DBSLinUCB": DBSLinUCB, "DBSLinUCB-FD": DBSLinUCBFD, "DBSLinUCB-RFD": DBSLinUCBRFD})
# Thompson sampling on the same estimators (agents.thompson)
AGENTS.update({"LinTS": LinTS, "SLinTS": SLinTS, "DBSLinTS": DBSLinTS})

try:  # the distribution's version (pyproject.toml): agents ships inside linbandit-gym
    __version__ = _dist_version("linbandit-gym")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AGENTS",
    "Agent",
    "AgentProtocol",
    "TorchAgent",
    "LinUCB",
    "OFUL",
    "SOFUL",
    "CBSCFD",
    "check_agent",
]
__all__ += ["Batching", "EstimatorAgent", "InvalidArgumentError", "Interval", "Options"]
__all__ += ["validate_parameters"]
__all__ += ["DBSLinUCB", "DBSLinUCBFD", "DBSLinUCBRFD"]
__all__ += ["ThompsonSampling", "LinTS", "SLinTS", "DBSLinTS"]

# Optimal design side: best-arm identification (LinBandit-BAI-v0) and phased elimination.
AGENTS.update({"GAllocation": GAllocation, "XYStatic": XYStatic, "XYAdaptive": XYAdaptive})
AGENTS["PhasedElimination"] = PhasedElimination
__all__ += ["GAllocation", "XYStatic", "XYAdaptive", "PhasedElimination"]
# the agents' warnings, at the user's line
__all__ += ["SketchSizeWarning", "DiscardedMassWarning", "DesignWarning"]
