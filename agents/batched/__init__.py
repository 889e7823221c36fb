"""Batched agents: B independent runs of an agent advanced together as one tensor program.

``BatchedOFUL(batch_size=B, **kw)`` is B independent ``OFUL(**kw)`` agents: ``act`` takes the
``(B, K, d)`` arm sets of a vector env (:mod:`linbandit_gym.vector`) and returns B actions,
``update(obs, actions, rewards)`` learns from the B rounds. Each member makes the choices
its unbatched twin makes. :func:`batched` builds the batched twin of an agent instance;
:data:`BATCHED` maps unbatched classes to their batched classes.
"""

from __future__ import annotations

from typing import Any

from ..dbslinucb import DBSLinUCBFD, DBSLinUCBRFD
from .base import BatchedEstimator, BatchedLinUCB, as_arm_batch
from .cbscfd import BatchedCBSCFD
from .dbs import BatchedDyadicBlockSketch
from .dbslinucb import BatchedDBSLinUCB
from .exact import BatchedExactCovariance
from .fd import BatchedFrequentDirections
from .oful import BatchedOFUL
from .rfd import BatchedRobustFrequentDirections
from .soful import BatchedSOFUL

#: unbatched class -> batched class (exact classes: a user's subclass may change the loop)
BATCHED: dict[type, type] = {cls.single_class: cls for cls in (BatchedOFUL, BatchedSOFUL, BatchedCBSCFD, BatchedDBSLinUCB)}
BATCHED.update({DBSLinUCBFD: BatchedDBSLinUCB, DBSLinUCBRFD: BatchedDBSLinUCB})

__all__ = [
    "BATCHED", "BatchedCBSCFD", "BatchedDBSLinUCB", "BatchedDyadicBlockSketch", "BatchedEstimator", "BatchedExactCovariance", "BatchedFrequentDirections",
    "BatchedLinUCB", "BatchedOFUL", "BatchedRobustFrequentDirections", "BatchedSOFUL",
    "as_arm_batch", "batched", "supports_batched",
]


def supports_batched(agent: Any) -> bool:
    """Whether ``agent`` (an instance of one of our agents) has a batched twin."""
    return type(agent) in BATCHED


def batched(agent: Any, batch_size: int) -> BatchedLinUCB:
    """The batched twin of ``agent`` with ``batch_size`` members and the same parameters.

    Raises ``TypeError`` for agents without a batched twin (see :func:`supports_batched`).
    """
    cls = BATCHED.get(type(agent))
    if cls is None:
        known = ", ".join(sorted(c.__name__ for c in BATCHED))
        raise TypeError(f"{type(agent).__name__} has no batched version (batched agents exist for: {known})")
    return cls(batch_size, **_constructor_params(agent), **cls.params_of(agent))


def _constructor_params(agent: Any) -> dict[str, Any]:
    """The keywords that rebuild ``agent`` (read from its attributes)."""
    params = {
        "lam": agent.lam, "beta": agent.beta, "delta": agent.delta, "noise_std": agent.noise_std,
        "theta_bound": agent.theta_bound, "device": agent.device, "dtype": agent.dtype, "seed": agent.seed,
    }
    if getattr(agent, "_d_init", None) is not None:
        params["d"] = agent._d_init
    return params
