"""Batched agents and estimators: the B > 1 constructors of the one implementation.

Every estimator and agent exists once, with a leading batch dimension (:mod:`agents.sketches`,
:mod:`agents.linucb`); the single agent is its B = 1 case. The names here keep the batched
signatures: ``BatchedOFUL(batch_size=B, **kw)`` is ``OFUL(batch_size=B, **kw)``, B independent
``OFUL(**kw)`` agents: ``act`` takes the ``(B, K, d)`` arm sets of a vector env
(:mod:`linbandit_gym.vector`) and returns B actions, ``update(obs, actions, rewards)`` learns
from the B rounds. Each member runs the very operations of the single agent on its own slice
of the state. A class batches when it declares its :class:`~agents.base.Batching`
(``batching = Batching(per_member=...)``); :func:`batched` builds the batched agent of an agent
instance, with its parameters; :data:`BATCHED` maps unbatched classes to their batched classes.

Members may also differ in the arguments the class's ``batching`` names (``per_member_args``:
``lam`` and ``beta`` for every LinUCB agent, ``sketch_size`` for SOFUL/CBSCFD, ``l0`` and ``eps``
for DBSLinUCB): ``SOFUL(lam=[0.2, 2.0], beta=[0.01, 0.1], sketch_size=[10, 50], batch_size=2)``
gives member i the i-th values and still plays exactly as ``SOFUL(lam=lam[i], beta=beta[i],
sketch_size=sketch_size[i])`` (sketch state padded to the largest member).
:func:`batched_members` builds such an agent from B single agents.
"""

from __future__ import annotations

from typing import Any

from ..cbscfd import CBSCFD
from ..dbslints import DBSLinTS
from ..dbslinucb import DBSLinUCB, DBSLinUCBFD, DBSLinUCBRFD
from ..lints import LinTS
from ..linucb import LinUCB, as_arm_batch
from ..oful import OFUL
from ..sketches.base import CovarianceEstimator
from ..sketches.dbs import DyadicBlockSketch
from ..sketches.exact import ExactCovariance
from ..sketches.fd import FrequentDirections
from ..sketches.rfd import RobustFrequentDirections
from ..slints import SLinTS
from ..soful import SOFUL

BatchedEstimator = CovarianceEstimator  # the estimators are batched-first (kept name)
BatchedLinUCB = LinUCB  # the loop is batched-first (kept name)

__all__ = [
    "BATCHED",
    "BatchedCBSCFD",
    "BatchedDBSLinUCB",
    "BatchedDyadicBlockSketch",
    "BatchedEstimator",
    "BatchedExactCovariance",
    "BatchedLinTS",
    "BatchedSLinTS",
    "BatchedDBSLinTS",
    "BatchedFrequentDirections",
    "BatchedLinUCB",
    "BatchedOFUL",
    "BatchedRobustFrequentDirections",
    "BatchedSOFUL",
    "as_arm_batch",
    "batched",
    "batched_members",
    "constructor_args",
    "supports_batched",
]


class BatchedExactCovariance(ExactCovariance):
    """``ExactCovariance(d, batch_size=B, ...)``: B exact inverses ``(B, d, d)``."""

    def __init__(
        self,
        batch_size: int,
        d: int,
        *,
        reg: float,
        device=None,
        dtype=None,
        keep_gram: bool = False,
    ):
        super().__init__(
            d, reg=reg, device=device, dtype=dtype, keep_gram=keep_gram, batch_size=batch_size
        )


class BatchedFrequentDirections(FrequentDirections):
    """``FrequentDirections(d, l, batch_size=B, ...)``: B FD sketches in one ``(B, cap, d)`` buffer.

    >>> import torch
    >>> fd = BatchedFrequentDirections(
    ...     2, 4, 3, reg=1.0, fast=False, device=torch.device("cpu"), dtype=torch.float64
    ... )
    >>> for x in torch.eye(4, dtype=torch.float64):
    ...     fd.update(torch.stack([x, 2 * x]), torch.zeros(2, dtype=torch.float64))
    >>> fd.total_shrinkage.tolist()  # as FrequentDirections(4, 3, fast=False) on each stream
    [1.0, 4.0]
    """

    def __init__(
        self,
        batch_size: int,
        d: int,
        sketch_size: int,
        *,
        reg: float,
        fast: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__(
            d, sketch_size, reg=reg, fast=fast, device=device, dtype=dtype, batch_size=batch_size
        )


class BatchedRobustFrequentDirections(RobustFrequentDirections):
    """``RobustFrequentDirections(d, l, batch_size=B, ...)``."""

    def __init__(
        self,
        batch_size: int,
        d: int,
        sketch_size: int,
        *,
        reg: float,
        fast: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__(
            d, sketch_size, reg=reg, fast=fast, device=device, dtype=dtype, batch_size=batch_size
        )


class BatchedDyadicBlockSketch(DyadicBlockSketch):
    """``DyadicBlockSketch(d, l0, eps, batch_size=B, ...)``: members close blocks on their own
    rounds.

    >>> import torch
    >>> X = torch.randn(2, 300, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    >>> X[1] *= 3.0                                   # member 1 closes its blocks sooner
    >>> dbs = BatchedDyadicBlockSketch(
    ...     2, 40, 4, 2.0, reg=1.0, memory_cap=False, time_cap=False,
    ...     device=torch.device("cpu"), dtype=torch.float64,
    ... )
    >>> for t in range(300):
    ...     dbs.update(X[:, t], torch.zeros(2, dtype=torch.float64))
    >>> dbs.block_cap, dbs.n_blocks.tolist(), dbs.exact.tolist()
    (3, [3, 3], [True, True])
    """

    def __init__(
        self,
        batch_size: int,
        d: int,
        l0: int,
        eps: float,
        *,
        sketch: str = "fd",
        reg: float,
        fast: bool = True,
        sentinel: bool = True,
        memory_cap: bool = True,
        time_cap: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__(
            d,
            l0,
            eps,
            sketch=sketch,
            reg=reg,
            fast=fast,
            sentinel=sentinel,
            memory_cap=memory_cap,
            time_cap=time_cap,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
        )


def _batched_agent(single: type) -> type:
    """``Batched{single}``: the constructor ``Batched{single}(B, **kw)`` of ``single(batch_size=B,
    **kw)``."""

    def __init__(self, batch_size: int, **kwargs: Any):
        kwargs.pop("batch_size", None)
        single.__init__(self, batch_size=batch_size, **kwargs)

    doc = (
        "B independent "
        f":class:`~agents.{single.__module__.split('.')[-1]}.{single.__name__}` agents: "
        f"``{single.__name__}(batch_size=B, **kw)`` (same keywords, plus ``batch_size``)."
    )
    body = {"__init__": __init__, "__doc__": doc, "single_class": single}
    cls = type(f"Batched{single.__name__}", (single,), body)
    cls.__module__ = __name__
    return cls


BatchedOFUL = _batched_agent(OFUL)
BatchedSOFUL = _batched_agent(SOFUL)
BatchedCBSCFD = _batched_agent(CBSCFD)
BatchedDBSLinUCB = _batched_agent(DBSLinUCB)
BatchedLinTS = _batched_agent(LinTS)
BatchedSLinTS = _batched_agent(SLinTS)
BatchedDBSLinTS = _batched_agent(DBSLinTS)

#: class -> the class of its batched agents, for every class that declares its ``batching`` (exact
#: classes: a user's subclass may change the loop). Ours are listed; another class that declares
#: ``batching`` joins on first use (:func:`batched_class`).
BATCHED: dict[type, type] = {
    cls.single_class: cls
    for cls in (
        BatchedOFUL,
        BatchedSOFUL,
        BatchedCBSCFD,
        BatchedDBSLinUCB,
        BatchedLinTS,
        BatchedSLinTS,
        BatchedDBSLinTS,
    )
}
BATCHED.update({DBSLinUCBFD: BatchedDBSLinUCB, DBSLinUCBRFD: BatchedDBSLinUCB})


def supports_batched(agent: Any) -> bool:
    """Whether ``agent`` (an agent, or an agent class) batches: its class declares its own
    :attr:`~agents.base.Agent.batching`."""
    cls = agent if isinstance(agent, type) else type(agent)
    return cls.__dict__.get("batching") is not None


def batched_class(cls: type) -> type:
    """The class of the batched agents holding members of ``cls`` (:data:`BATCHED`).

    Raises ``TypeError`` for a class that does not batch (see :func:`supports_batched`)."""
    found = BATCHED.get(cls)
    if found is not None:
        return found
    if not supports_batched(cls):
        known = ", ".join(sorted(c.__name__ for c in BATCHED))
        raise TypeError(
            f"{cls.__name__} has no batched version (batched agents exist for: "
            f"{known}, and any class that declares its batching)"
        )
    host = cls.batching.batched_as or cls
    BATCHED[cls] = BATCHED[host] if host is not cls and host in BATCHED else _batched_agent(host)
    return BATCHED[cls]


def constructor_args(agent: Any) -> dict[str, Any]:
    """The constructor keywords that rebuild ``agent`` (one of ours that batches), read back from
    it: its checked arguments, with its device, dtype and current seed (``d`` only where it was
    given). What :meth:`~agents.base.Agent.estimate_memory_bytes` takes as ``args``."""
    batched_class(type(agent))
    params = {k: v for k, v in agent.arguments.items() if k not in _PLACEMENT}
    params.update(device=agent.device, dtype=agent.dtype, seed=agent.seed)
    if agent.arguments.get("d") is not None:
        params["d"] = agent.arguments["d"]
    return params


_PLACEMENT = ("batch_size", "d", "device", "dtype", "seed")


def batched(agent: Any, batch_size: int) -> LinUCB:
    """The batched agent of ``agent``'s class with ``batch_size`` members and the same parameters.

    Raises ``TypeError`` for agents whose class does not batch (see :func:`supports_batched`).
    """
    return batched_class(type(agent))(batch_size, **constructor_args(agent))


def batched_members(agents: Any) -> LinUCB:
    """One batched agent whose member i plays exactly as ``agents[i]``.

    ``agents``: B >= 1 single agents of one class that batches (``DBSLinUCBFD`` and
    ``DBSLinUCB(sketch="fd")`` count as one class), whose constructor arguments differ only in
    that class's ``per_member_args`` (e.g. ``lam`` and ``beta``); those become per-member lists.
    The members' seeds are kept (``reset(seed=[...])``: member i draws as ``agents[i]``, the
    Thompson sampling agents' normals included); the LinUCB agents are deterministic.

    >>> from agents import SOFUL
    >>> agent = batched_members(
    ...     [SOFUL(lam=0.2, beta=0.01, sketch_size=4), SOFUL(lam=2.0, beta=0.01, sketch_size=4)]
    ... )
    >>> agent
    BatchedSOFUL(batch_size=2, lam=[0.2, 2.0], beta=0.01, sketch_size=4)

    Raises:
        TypeError: an agent whose class does not batch.
        ValueError: no agents, a batched agent among them, agents of different classes, or
            agents differing in an argument that cannot differ across members (named).
    """
    agents = list(agents)
    if not agents:
        raise ValueError("batched_members needs at least one agent")
    cls = batched_class(type(agents[0]))
    for i, agent in enumerate(agents):
        if batched_class(type(agent)) is not cls:
            raise ValueError(
                f"agents[{i}] is a {type(agent).__name__} but agents[0] a "
                f"{type(agents[0]).__name__}: one batched agent holds members of one class; "
                "batch each class separately"
            )
        if not agent.single:
            raise ValueError(
                f"agents[{i}] is already batched (batch_size={agent.batch_size}); "
                "pass single agents"
            )
    args = [constructor_args(agent) for agent in agents]
    per_member = getattr(cls, "per_member_args", ())
    params: dict[str, Any] = {}
    for key in args[0]:
        values = [a[key] for a in args]
        differ = next((j for j, v in enumerate(values) if not _same(v, values[0])), None)
        if differ is None or key == "seed":
            params[key] = values[0] if differ is None else None
        elif key in per_member:
            params[key] = values
        else:
            allowed = ", ".join(per_member) or "none"
            raise ValueError(
                f"agents[{differ}] has {key}={values[differ]!r} but agents[0] has "
                f"{key}={values[0]!r}; {key} cannot differ across the members of one batched "
                f"{cls.single_class.__name__} (per member: {allowed}): "
                "batch those agents separately"
            )
    out = cls(len(agents), **params)
    if any(a["seed"] is not None for a in args) and (params["seed"] is None or len(args) > 1):
        out.reset(seed=[a["seed"] for a in args])
    return out


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b
