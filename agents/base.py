"""The agent contract and a conformance check any third-party agent can run.

The agent contract (``docs/contracts.md``): any object with

    agent.reset(seed=None)             # forget everything
    a = agent.act(obs)                 # obs: (K, d) arm set -> int arm index
    agent.update(obs, a, reward)       # learn from the round

works in every loop, sweep and plot of the project. ``memory_bytes()`` is optional for
third-party agents and provided by every agent here. :class:`Agent` documents the
contract and what a class declares for the registry, the planner and the memory estimate
(:class:`Batching`, with defaults); :class:`TorchAgent` adds the checks of the constructor's
arguments from the rules each class declares, and the device/dtype/seed plumbing our agents
share.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol, runtime_checkable

import numpy as np
import torch

from ._torch import DeviceLike, DTypeLike, as_arm_matrix, resolve_device, resolve_dtype
from ._validate import SHARED_CONSTRAINTS, _form, check_seed, validate_parameters

__all__ = ["Agent", "AgentProtocol", "Batching", "TorchAgent", "check_agent"]


@runtime_checkable
class AgentProtocol(Protocol):
    """Structural type of an agent: what the evaluation loop calls."""

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, obs: Any) -> int: ...

    def update(self, obs: Any, action: int, reward: float) -> None: ...


@dataclass(frozen=True)
class Batching:
    """How agents of a class advance together as the members of one batched agent
    (:func:`agents.batched.batched`): built with ``batch_size=B``, ``act`` takes the ``(B, K, d)``
    arm sets of a vector env and returns B actions, ``update`` learns from the B rounds, and
    member i plays exactly as the single agent built with its arguments.

    Attributes:
        per_member: the constructor arguments in which the members may differ, each then given as
            one value per member (a list, tuple or 1-D array of B values).
        batched_as: the class whose batched agent holds members of this one, where this class
            only presets one of its arguments (``DBSLinUCBFD`` is ``DBSLinUCB(sketch="fd")``);
            ``None``: this class itself.
    """

    per_member: tuple[str, ...] = ()
    batched_as: type | None = None


class Agent:
    """Tiny base class for agents (subclassing it is optional: duck typing suffices).

    Subclasses implement :meth:`act` and :meth:`update`, and usually :meth:`reset`.

    Example, a uniformly random agent:

    >>> import numpy as np
    >>> class RandomAgent(Agent):
    ...     def reset(self, seed=None):
    ...         self.rng = np.random.default_rng(seed)
    ...     def act(self, obs):
    ...         return int(self.rng.integers(len(obs)))
    ...     def update(self, obs, action, reward):
    ...         pass
    >>> agent = RandomAgent(); agent.reset(seed=0)
    >>> 0 <= agent.act(np.zeros((5, 3))) < 5
    True

    **What a class tells the registry, the planner and the memory estimate** (before anything is
    built; each has a default here, so a class declares only what differs):

    * :attr:`batching`: whether and how its agents batch (a :class:`Batching`; ``per_member_args``
      and :meth:`batchable` read it);
    * :meth:`estimate_memory_bytes` and :meth:`estimate_initial_memory_bytes`: its memory.

    :class:`TorchAgent` adds the constraints of the constructor's arguments
    (``parameter_constraints``) and :class:`~agents.estimator_agent.EstimatorAgent` the estimator
    whose byte formulas answer the memory estimate.
    """

    name: str | None = None

    #: How agents of this class advance together as the members of one batched agent
    #: (:class:`Batching`); ``None``: one agent at a time. It counts where the class's own body
    #: declares it (a subclass may change ``act`` or ``update``, which its batched agent would
    #: have to run: it batches when it says so); its per-member arguments are inherited.
    batching: Batching | None = None

    #: The constructor arguments in which the members of one batched agent may differ, each then
    #: given one value per member (:func:`agents.batched.batched_members`): ``batching.per_member``.
    per_member_args: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("batching")
        if declared is not None:
            cls.per_member_args = declared.per_member

    @classmethod
    def batchable(cls) -> bool:
        """Whether agents of exactly this class advance together as the members of one batched
        agent: whether the class's own body declares :attr:`batching`."""
        return cls.__dict__.get("batching") is not None

    @classmethod
    def estimate_memory_bytes(cls, d: int, n_arms: int, **args: Any) -> int | None:
        """A conservative estimate of the bytes one agent of this class, built with the
        constructor arguments ``args`` (defaults for the others), holds at its peak on arm sets
        of ``n_arms`` arms in dimension ``d``; ``None`` when the class cannot say. Nothing is
        built. Our agents answer with their estimators' own byte formulas, in the dtype ``args``
        give (float64 by default on CPU)."""
        return None

    @classmethod
    def estimate_initial_memory_bytes(cls, d: int, n_arms: int, **args: Any) -> int | None:
        """For a class whose memory grows with the stream, what one agent allocates first (as
        :meth:`estimate_memory_bytes`, before the stream fills it: a short run never reaches the
        peak); ``None`` when the peak is allocated up front (or the class cannot say)."""
        return None

    @classmethod
    def constructor_argument(cls, name: str, args: dict[str, Any]) -> Any:
        """``args[name]``, else the default the constructor gives ``name`` (the first
        ``__init__`` along the class's MRO that declares it). ``KeyError`` if none does."""
        if name in args:
            return args[name]
        defaults = _constructor_defaults(cls)
        if name in defaults:
            return defaults[name]
        raise KeyError(f"{cls.__name__} has no argument {name!r} with a default")

    def reset(self, seed: int | None = None) -> None:
        """Forget everything learned; ``seed`` fixes any internal randomness."""

    def act(self, obs: Any) -> int:
        """Return the index of the arm to play among the rows of ``obs`` (shape ``(K, d)``)."""
        raise NotImplementedError

    def update(self, obs: Any, action: int, reward: float) -> None:
        """Learn from the round: arm set ``obs``, chosen ``action`` and observed ``reward``."""
        raise NotImplementedError

    def memory_bytes(self) -> int:
        """Bytes of state held now (0 unless overridden)."""
        return 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@functools.lru_cache(maxsize=1024)
def _constructor_parameters(cls: type) -> tuple[inspect.Parameter, ...]:
    """The keyword parameters of ``cls``'s constructor, in order: those of the first ``__init__``
    along the MRO, then, where it passes ``**kwargs`` on, those of the next one's (not yet
    named)."""
    found: dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        parameters = list(inspect.signature(init).parameters.values())[1:]  # without self
        for p in parameters:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                found.setdefault(p.name, p)
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return tuple(found.values())


def _constructor_defaults(cls: type) -> dict[str, Any]:
    """``{name: default}`` of :func:`_constructor_parameters` (the parameters that have one)."""
    return {p.name: p.default for p in _constructor_parameters(cls) if p.default is not p.empty}


def _is_complex(x: Any) -> bool:
    """Whether ``x`` is a complex number or array (``float()`` of numpy complex drops the
    imaginary part)."""
    if isinstance(x, torch.Tensor):
        return x.is_complex()
    return isinstance(x, (complex, np.complexfloating)) or (
        isinstance(x, np.ndarray) and x.dtype.kind == "c"
    )


def _real_number(name: str, value: Any) -> float:
    """``value`` as a float if it is a real number: a Python, numpy or torch scalar (a 0-d or
    one-element array); a ``ValueError`` naming ``name`` otherwise (a string such as ``"1.0"`` is
    not parsed)."""
    if isinstance(value, (np.ndarray, torch.Tensor)) and value.ndim == 0:
        value = value.item()
    elif isinstance(value, (np.ndarray, torch.Tensor)) and tuple(value.shape) == (1,):
        value = value.reshape(()).item()
    if not isinstance(value, numbers.Real):  # str, bytes, None, containers, Decimal ...
        raise ValueError(
            f"{name} must be a real number (an int or a float, or a numpy/torch scalar), "
            f"got {value!r} ({type(value).__name__})"
        )
    return float(value)


class TorchAgent(Agent):
    """Base for our torch agents: argument checks, device/dtype resolution, seeding, lazy dimension.

    Args:
        d: dimension of the arms; by default read from the first observation.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device``; a CUDA request on a
            machine without CUDA raises ``ValueError`` at construction.
        dtype: ``torch.float64`` (default on CPU) or ``torch.float32`` (default on GPU).
        seed: seed of the agent's own generator (used only by randomised agents);
            ``reset(seed=...)`` overrides it.

    **Arguments are checked once, from declarations.** Each class states the rules of its own
    constructor arguments in :attr:`parameter_constraints` (:mod:`agents._validate`); the rules of
    a class and of its bases all apply, the bases' first, starting with the keywords every agent
    shares (``seed``, ``d``, ``delta``, ``noise_std``, ``theta_bound``:
    :data:`~agents._validate.SHARED_CONSTRAINTS`), so every agent refuses ``delta="0.5"``,
    ``noise_std=inf`` or ``seed=True`` with the same message naming the argument (an
    :class:`~agents._validate.InvalidArgumentError`, a ``ValueError``). The constructor of every
    subclass is called with its arguments checked and normalised (numpy scalars as Python
    numbers, per-member sequences as arrays: :meth:`check_arguments`) before its body runs, so a
    refused argument leaves nothing half-built; the checked arguments, defaults included, are
    :attr:`arguments`. :attr:`repr_args` names those ``repr`` shows.
    """

    #: The rules of the constructor's arguments: name -> the forms its value may take
    #: (:func:`agents._validate.validate_parameters`). A class lists its own arguments; its bases'
    #: rules apply too, first.
    parameter_constraints: dict[str, list] = dict(SHARED_CONSTRAINTS)

    #: The constructor arguments ``repr`` shows.
    repr_args: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and not getattr(init, "checks_arguments", False):
            cls.__init__ = _called_with_checked_arguments(init)

    @classmethod
    def check_arguments(cls, values: dict[str, Any]) -> dict[str, Any]:
        """``values`` (constructor arguments) checked against the rules of the class and of its
        bases (the bases' first) and normalised; a per-member argument (``per_member_args``) may
        give one value per member when ``values`` has a ``batch_size``.

        Raises:
            InvalidArgumentError: the first argument that breaks a rule, named.
        """
        rules = _rules(cls)
        batch = validate_parameters(rules, {k: v for k, v in values.items() if k == "batch_size"})
        return validate_parameters(
            rules,
            {**values, **batch},
            batch_size=batch.get("batch_size"),
            per_member_args=cls.per_member_args,
        )

    def __init__(
        self,
        *,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
    ):
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.seed = seed
        self._d_init = d
        self.reset(seed=seed)

    # -- state ---------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        # subclasses clear their own state first and then call this: they should check the
        # seed before clearing anything (check_seed), so that a refused seed changes nothing
        seed = check_seed(seed)
        if seed is not None:
            self.seed = seed
        self.rng = np.random.default_rng(self.seed)
        self.t = 0
        self.d = None
        if self._d_init is not None:
            self._allocate(self._d_init)

    def _allocate(self, d: int) -> None:
        """Create the state for dimension ``d`` (called once, lazily or eagerly)."""
        self.d = d

    # -- input handling ------------------------------------------------------------
    def _validated_arms(self, obs: Any) -> torch.Tensor:
        """The arm set as a checked ``(K, d)`` tensor, without any state change."""
        return as_arm_matrix(obs, self.device, self.dtype, self.d)

    def _arms(self, obs: Any) -> torch.Tensor:
        """:meth:`_validated_arms`, then the lazy allocation for ``d`` if this is the first
        observation."""
        arms = self._validated_arms(obs)
        if self.d is None:
            self._allocate(int(arms.shape[1]))
        return arms

    def _n_arms(self, obs: Any) -> int:
        """The number of arms K of ``obs``, without any state change (to check feedback first).

        Reads ``obs.shape`` when it is a 2-D array or tensor (cheap; the full check follows in
        :meth:`_arms`); anything else is converted and checked here.
        """
        shape = getattr(obs, "shape", None)
        if shape is not None and len(shape) == 2 and shape[0] >= 1:
            return int(shape[0])
        return int(self._validated_arms(obs).shape[0])

    @staticmethod
    def _check_feedback(
        n_arms: int, action: Any, reward: Any, *, stop_actions: bool = False
    ) -> tuple[int, float]:
        """Validate one round's feedback before any state changes.

        ``stop_actions``: the best-arm-identification encoding, where ``a in [K, 2K)`` stops
        and recommends arm ``a - K`` (``n_arms`` is still K, the number of arms).

        An ``int`` action in range with a finite ``float`` (or numpy float64) reward, what every
        loop passes, returns at once (~0.1 us, against ~1.5 us for the general checks below,
        whose ``numbers.Integral`` test is an ABC lookup); anything else takes those checks.
        """
        if (
            type(action) is int
            and 0 <= action < (2 * n_arms if stop_actions else n_arms)
            and (type(reward) is float or type(reward) is np.float64)
            and math.isfinite(reward)
        ):
            return action, float(reward)
        if isinstance(action, (np.ndarray, torch.Tensor)) and action.ndim == 0:
            action = action.item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, numbers.Integral):
            raise ValueError(
                f"action must be an int arm index, got {action!r} ({type(action).__name__})"
            )
        action = int(action)
        n_actions = 2 * n_arms if stop_actions else n_arms
        if not 0 <= action < n_actions:
            encoding = ""
            if stop_actions:
                encoding = (
                    f" (actions 0..{n_arms - 1} pull an arm, {n_arms}..{2 * n_arms - 1} stop and "
                    f"recommend arm action - {n_arms})"
                )
            raise ValueError(
                f"action {action} is out of range for an arm set of {n_arms} arms{encoding}"
            )
        if _is_complex(reward):
            raise ValueError(f"reward must be a real number, got the complex {reward!r}")
        reward = _real_number("reward", reward)
        if not math.isfinite(reward):
            raise ValueError(f"reward must be finite, got {reward!r}")
        return action, reward

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={_listed(self.arguments[k])!r}" for k in self.repr_args)
        return f"{type(self).__name__}({inner})"


@functools.lru_cache(maxsize=1024)
def _rules(cls: type) -> tuple[tuple[str, tuple], ...]:
    """The ``(name, forms)`` rules of ``cls`` and of its bases, the bases' first."""
    return tuple(
        (name, tuple(_form(f) for f in forms))
        for klass in reversed(cls.__mro__)
        for name, forms in klass.__dict__.get("parameter_constraints", {}).items()
    )


def _listed(value: Any) -> Any:
    """A per-member array as a list (for messages and repr), anything else as it is."""
    return value.tolist() if isinstance(value, np.ndarray) and value.ndim else value


def _called_with_checked_arguments(init: Callable[..., None]) -> Callable[..., None]:
    """``init``, an ``__init__`` of a :class:`TorchAgent` subclass, called with its arguments
    checked.

    When it is the constructor of the object's class (not a base's, called by a subclass's
    ``__init__`` with arguments checked already), the call is bound to the constructor's
    parameters (a ``**kwargs`` passed on to a base's ``__init__`` is read as that one's), what was
    given is checked (:meth:`TorchAgent.check_arguments`) and kept, with the defaults of the rest,
    as ``self.arguments``, and ``init`` runs with the normalised values. A call that does not bind
    is left to Python's own ``TypeError``.
    """
    signature = inspect.signature(init)
    parameters = signature.parameters.values()
    var_keyword = next((p.name for p in parameters if p.kind is p.VAR_KEYWORD), None)
    positional = inspect.Parameter.VAR_POSITIONAL

    @functools.wraps(init)
    def __init__(self: TorchAgent, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        if cls.__init__ is not __init__:
            return init(self, *args, **kwargs)
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:
            return init(self, *args, **kwargs)
        given = {
            name: value
            for name, value in list(bound.arguments.items())[1:]
            if name != var_keyword and signature.parameters[name].kind is not positional
        }
        passed_on = bound.arguments.get(var_keyword, {})
        checked = cls.check_arguments({**given, **passed_on})  # the defaults obey the rules
        self.arguments = {**_constructor_defaults(cls), **checked}
        for name in given:
            bound.arguments[name] = self.arguments[name]
        for name in passed_on:
            passed_on[name] = self.arguments[name]
        return init(*bound.args, **bound.kwargs)

    __init__.checks_arguments = True
    return __init__


TorchAgent.__init__ = _called_with_checked_arguments(TorchAgent.__init__)


def _signature_problem(method: str, fn: Any, args: tuple, kwargs: dict, call: str) -> str | None:
    """Why ``fn`` cannot be called as the loop calls it (``call``), or None when it can."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # no introspectable signature (some builtins): try it instead
        return None
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        return f"{method}{sig} cannot be called as {call}: {exc}"
    return None


def check_agent(agent: Any, env: Any, n_steps: int = 20, seed: int = 0) -> None:
    """Check that ``agent`` satisfies the agent contract against ``env``.

    Runs ``n_steps`` rounds twice with the same seeds and checks that: ``agent`` is an
    instance (not a class); the three methods exist and accept the loop's calls
    (``reset(seed=s)``, ``act(obs)``, ``update(obs, action, reward)``); ``act`` returns a
    Python or numpy integer inside ``env.action_space``; no call raises; the same seed
    replays the same actions; and ``memory_bytes()``, if present, returns a non-negative int.

    Raises ``AssertionError`` listing what failed (an exception raised by the agent is
    reported with its type and message, and chained as the cause); returns ``None`` when all
    is well.

    Args:
        agent: the agent to check (any object).
        env: a Gymnasium env following the linbandit env contract (``gym.make(...)`` result).
        n_steps: rounds per replay.
        seed: seed passed to ``agent.reset`` and ``env.reset``.
    """

    def fail(problems: list[str], cause: BaseException | None = None) -> NoReturn:
        raise AssertionError("check_agent failed:\n  - " + "\n  - ".join(problems)) from cause

    if isinstance(agent, type):
        fail(
            [
                f"got the class {agent.__name__}, not an agent: pass an instance, "
                f"e.g. {agent.__name__}()"
            ]
        )
    problems: list[str] = []
    calls = {
        "reset": ((), {"seed": seed}, f"reset(seed={seed})"),
        "act": ((None,), {}, "act(obs)"),
        "update": ((None, 0, 0.0), {}, "update(obs, action, reward)"),
    }
    for method, (args, kwargs, call) in calls.items():
        fn = getattr(agent, method, None)
        if not callable(fn):
            problems.append(f"agent has no callable {method}()")
        else:
            problem = _signature_problem(method, fn, args, kwargs, call)
            if problem:
                problems.append(problem)
    if problems:
        fail(problems)

    def agent_call(call: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # the agent's own failure: report it as a failed check
            fail([f"{call} raised {type(exc).__name__}: {exc}"], exc)

    def replay() -> list[int]:
        actions = []
        agent_call(f"reset(seed={seed})", agent.reset, seed=seed)
        obs, _ = env.reset(seed=seed)
        for step in range(n_steps):
            a = agent_call(f"act(obs) at step {step}", agent.act, obs)
            if isinstance(a, (bool, np.bool_)) or not isinstance(a, (numbers.Integral, np.integer)):
                fail([f"act() returned {a!r} ({type(a).__name__}), expected an int"])
            if not env.action_space.contains(int(a)):
                fail([f"act() returned {a!r}, outside {env.action_space}"])
            obs_next, reward, terminated, truncated, _ = env.step(int(a))
            agent_call(
                f"update(obs, {int(a)}, {float(reward)!r}) at step {step}",
                agent.update,
                obs,
                int(a),
                float(reward),
            )
            actions.append(int(a))
            obs = obs_next
            if terminated or truncated:
                break
        return actions

    first = replay()
    second = replay()
    if first != second:
        problems.append(
            "the same seed gave different actions (reset(seed) must make the agent deterministic)"
        )
    mem = getattr(agent, "memory_bytes", None)
    if callable(mem):
        value = agent_call("memory_bytes()", mem)
        if (
            isinstance(value, (bool, np.bool_))
            or not isinstance(value, (numbers.Integral, np.integer))
            or value < 0
        ):
            problems.append(f"memory_bytes() returned {value!r}, expected a non-negative int")
    if problems:
        fail(problems)
