"""Optimism in the face of uncertainty over any covariance estimator, batch dimension first.

Every regret agent of the papers (OFUL, SOFUL, CBSCFD, DBSLinUCB) is the same loop

    x_t = argmax_{x in X_t}  x^T theta_hat + beta * ||x||_{A_hat^-1}          (Wen et al. (2025), eq. 2)
    A_hat <- A_hat + x_t x_t^T (exactly, or through a sketch);  b <- b + r_t x_t
    theta_hat = A_hat^-1 b

and differs only in how ``A_hat`` is kept. :class:`LinUCB` owns that loop once; each agent
file supplies its :class:`~agents.sketches.CovarianceEstimator`. As the estimators, the loop
exists once with a leading batch dimension: ``batch_size=None`` (the default) is one agent
(``act`` takes a ``(K, d)`` arm set and returns an int), ``batch_size=B`` is B independent
agents advanced as one tensor program (``act`` takes ``(B, K, d)`` and returns B actions; the
constructors of :mod:`agents.batched` are this). The single agent is B = 1 of the same code.

Per round the estimator reads its big state once for scoring (``score_terms`` returns a
:class:`~agents.sketches.base.ScoreTerms`: both UCB terms of every arm from one projection of the
arms) and once for the update (``step`` takes those terms, and reuses the played arm's projection
when ``update`` gets the very arm set ``act`` scored). ``theta_hat`` is never needed during play
and is computed on demand.
"""

from __future__ import annotations

import math
import numbers
from abc import abstractmethod
from typing import Any

import numpy as np
import torch

from linbandit_host.memory import format_bytes, format_count, memory_limit_bytes, memory_limit_source
from ._torch import (NONFINITE_ARMS, DeviceLike, DTypeLike, _all_finite, as_arm_matrix, as_float_tensor, obs_token, resolve_device,
                     resolve_dtype, same_obs)
from ._validate import check_batch_size, check_seed, per_member
from .base import TorchAgent
from .sketches.backend import choose_backend
from .sketches.base import CovarianceEstimator, Members, ScoreTerms, core_dtype, warn_if_beyond_dtype

__all__ = ["LinUCB", "as_arm_batch"]


def _check_lam(name: str, lam: Any) -> float:
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not (lam > 0 and math.isfinite(lam)):
        raise ValueError(f"{name} (ridge lambda) must be a finite number > 0, got {lam!r}")
    return float(lam)


def _check_beta(name: str, beta: Any) -> float | str:
    if isinstance(beta, str):
        if beta != "theory":
            raise ValueError(f"{name} must be a float >= 0 or 'theory', got {beta!r}")
        return beta
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not (beta >= 0 and math.isfinite(beta)):
        raise ValueError(f"{name} must be a float >= 0 or 'theory', got {beta!r}")
    return float(beta)


def arm_scratch_bytes(d: int, n_arms: int) -> int:
    """A few ``K x d`` arm sets and their scores in float64: what a round holds beside the state."""
    return 4 * n_arms * d * 8


def state_dtypes(args: dict[str, Any]) -> tuple[torch.dtype, torch.dtype]:
    """The working and core dtypes of an agent built with the constructor arguments ``args``
    (``device``, ``dtype``), read without building it or checking that the device exists."""
    device = args.get("device")
    try:
        device = torch.device("cpu" if device is None else device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={args.get('device')!r} is not a valid torch device") from exc
    return resolve_dtype(args.get("dtype"), device), core_dtype(device)


def _fmt(value: Any) -> str:
    """A parameter for a message or repr: a per-member array as a list."""
    return repr(value.tolist()) if np.ndim(value) else repr(value)


def _member_seeds(seed: Any, members: Members) -> list:
    """The members' seeds of ``reset(seed)``: one agent takes ``seed`` itself; a batch an int (member i gets
    ``seed + i``), a list of B seeds, or None. Each is checked (a refused seed changes nothing)."""
    B = members.B
    for s in seed if isinstance(seed, (list, tuple)) and not members.unbatched else [seed]:
        check_seed(s)
    if members.unbatched or seed is None:
        return [seed] * B
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        check_seed(int(seed) + B - 1, f"seed + {B - 1} (member {B - 1}'s seed)")
        return [int(seed) + i for i in range(B)]
    seeds = list(seed)
    if len(seeds) != B:
        raise ValueError(f"seed as a list must hold one seed per member (batch_size={B}), got {len(seeds)}")
    return seeds


def as_arm_batch(obs: Any, device: torch.device, dtype: torch.dtype, batch_size: int, d: int | None,
                 own: bool = False) -> torch.Tensor:
    """A ``(B, K, d)`` finite tensor on the device, or a ``ValueError`` saying what was wrong
    (``own``: see :func:`~agents._torch.as_float_tensor`)."""
    arms = as_float_tensor(obs, device, dtype, "(B, K, d) batch of arm sets", own)
    if arms.ndim != 3 or arms.shape[0] != batch_size or arms.shape[1] < 1 or arms.shape[2] < 1:
        raise ValueError(
            f"the observation must be a (B={batch_size}, K, d) batch of arm sets (one per member), "
            f"got shape {tuple(arms.shape)}"
        )
    if d is not None and arms.shape[2] != d:
        raise ValueError(
            f"arm dimension changed: the agent was built for d={d} but got arms of shape {tuple(arms.shape)}; "
            "call agent.reset() before playing an env of another dimension"
        )
    if not _all_finite(arms):
        raise ValueError("the arm sets contain NaN or infinite entries")
    return arms


class LinUCB(TorchAgent):
    """Optimistic linear bandit agent over a pluggable covariance estimator.

    Args:
        lam: ridge regularisation lambda > 0 (``A_hat = lam I + ...``).
        beta: confidence radius. A float uses that constant every round, as in the papers'
            experiments (tuned on the grid {1e-4, ..., 1}); ``"theory"`` uses the
            self-normalised radius of Abbasi-Yadkori et al. (2011, Thm. 2),
            ``noise_std * sqrt(2 log(1/delta) + log det(A_hat)/lam^d) + sqrt(lam) * theta_bound``.
        delta: confidence level of the ``"theory"`` radius.
        noise_std: sub-Gaussian scale R of the reward noise (``"theory"`` only).
        theta_bound: bound H on ||theta*||_2 (``"theory"`` only).
        batch_size: ``None`` (one agent) or B (B independent agents; member i of ``reset(seed=s)``
            gets seed ``s + i``, or pass a list of B seeds). Batched, each argument named in
            :attr:`per_member_args` (``lam``, ``beta`` here) may be B values, member i playing
            exactly as the single agent with the i-th values (``beta`` may mix ``"theory"`` and
            numbers); ``self.lam``/``self.beta`` are then arrays ``(B,)``.
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    Ties in the score are broken towards the lowest index (``torch.argmax``).

    ``update(obs, a, r)`` called with the same numpy array or tensor object that ``act`` just
    scored learns from the arm set as ``act`` saw it (validated once; an in-place change of
    ``obs`` in between is not looked at, or for a tensor makes ``update`` convert it afresh).
    """

    #: constructor arguments that may differ across the members of a batched agent: each given
    #: as one value (every member) or a list/tuple/1-D array of ``batch_size`` values; member i
    #: then plays exactly as the single agent built with the i-th values
    per_member_args: tuple[str, ...] = ("lam", "beta")

    @classmethod
    def batchable(cls) -> bool:
        # Read from the class itself, not inherited: a subclass may change act or update,
        # which the batched agent (the same class with batch_size=B) would not run.
        return cls.__dict__.get("_has_batched_twin", False)

    #: the constructor arguments beside ``d`` that size the state (named when a state cannot fit)
    _size_args: tuple[str, ...] = ()

    # -- memory, from the arguments alone (the estimator classes' own formulas) ------------------
    @classmethod
    def estimate_memory_bytes(cls, d: int, n_arms: int, **args: Any) -> int | None:
        """The arm sets of a round (:func:`arm_scratch_bytes`) and the state at its peak
        (:meth:`estimate_state_bytes`); ``None`` for an estimator the class cannot size.
        ``dtype``/``device`` in ``args`` are honoured (float64 state on CPU by default)."""
        state = cls.estimate_state_bytes(d, n_arms, **args)
        return None if state is None else arm_scratch_bytes(d, n_arms) + state

    @classmethod
    def estimate_state_bytes(cls, d: int, n_arms: int, *, initial: bool = False, **args: Any) -> int | None:
        """Bytes of one agent's state: its estimator's (the estimator class's own byte formula,
        :meth:`_estimator_bytes`) and ``theta_hat`` (``d`` numbers of the working dtype). At its
        peak, or ``initial``: what is allocated before the stream fills it. For OFUL, SOFUL and
        CBSCFD both are what :meth:`memory_bytes` reports (the state is allocated whole);
        DBSLinUCB's peak is a bound (see its :meth:`_estimator_bytes`)."""
        dtype, cdtype = state_dtypes(args)
        estimator = cls._estimator_bytes(d, n_arms, args, dtype, cdtype, initial)
        return None if estimator is None else int(estimator) + d * dtype.itemsize

    @classmethod
    def _estimator_bytes(cls, d: int, n_arms: int, args: dict[str, Any], dtype: torch.dtype, cdtype: torch.dtype,
                         initial: bool) -> int | None:
        """Bytes of the estimator one agent plays with (``None``: this class cannot say)."""
        return None

    def _sizing_args(self) -> dict[str, Any]:
        """The constructor arguments :meth:`estimate_state_bytes` reads, from this agent."""
        return {"dtype": self.dtype, "device": self.device}

    def _check_state_fits(self, d: int) -> None:
        """Refuse, before anything is allocated, a state (all members) beyond :func:`~linbandit_host.memory.memory_limit_bytes`,
        naming the arguments that size it and the bytes; nothing changes."""
        per_member = type(self).estimate_state_bytes(d, 1, initial=True, **self._sizing_args())
        if per_member is None:
            return
        need, limit = per_member * self.batch_size, memory_limit_bytes()
        if need <= limit:
            return
        name = getattr(type(self), "single_class", type(self)).__name__
        sizes = ", ".join(f"{arg}={_fmt(self._sizing_args()[arg])}" for arg in self._size_args)
        members = "" if self.members.unbatched else f" for its {self.batch_size} members"
        raise ValueError(
            f"{name}({sizes}) at d={d} would allocate about {format_bytes(need)} ({format_count(need)} bytes){members}, "
            f"more than {memory_limit_source()} ({format_bytes(limit)}); lower {' or '.join((*self._size_args, 'd'))}"
        )

    #: whether ``beta="theory"`` accumulates ``log(1 + ||x||^2_{A_hat^-1})`` (OFUL's radius);
    #: the sketched agents' radii read their sketch instead, so they skip that work
    _accumulates_logdet = True

    def __init__(self, *, lam: float = 1.0, beta: float | str = 1.0, delta: float = 0.05, noise_std: float = 1.0,
                 theta_bound: float = 1.0, batch_size: int | None = None, d: int | None = None, device: DeviceLike = None,
                 dtype: DTypeLike = None, seed: int | None = None):
        batch_size = check_batch_size(batch_size)
        # lam and beta may differ across members (one value per member, see per_member_args)
        self.lam = per_member("lam", lam, batch_size, _check_lam)
        self.beta = per_member("beta", beta, batch_size, _check_beta)
        # which members use the "theory" radius: True/False for all, or a mask when mixed with numbers
        if np.ndim(self.beta) and self.beta.dtype == object:
            self._theory = np.array([isinstance(b, str) for b in self.beta])
            self._beta_numbers = np.array([0.0 if isinstance(b, str) else b for b in self.beta])
        else:
            self._theory = isinstance(self.beta, str)
        if not (0 < delta < 1):
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        if not (noise_std >= 0):
            raise ValueError(f"noise_std must be >= 0, got {noise_std!r}")
        if not (theta_bound >= 0):
            raise ValueError(f"theta_bound must be >= 0, got {theta_bound!r}")
        self.delta = float(delta)
        self.noise_std = float(noise_std)
        self.theta_bound = float(theta_bound)
        self.members = Members(batch_size)
        self.batch_size = self.members.B
        # one agent's arms go to its estimator's backend: numpy for one estimator on CPU
        self._host_arms = batch_size is None and choose_backend(resolve_device(device), None).is_numpy
        self._repr_params = {"lam": self.lam, "beta": self.beta}
        self.estimator: CovarianceEstimator | None = None
        super().__init__(d=d, device=device, dtype=dtype, seed=seed)

    # -- what each agent file supplies ---------------------------------------------
    @abstractmethod
    def _make_estimator(self, d: int) -> CovarianceEstimator:
        """The covariance estimator this agent plays with (``batch_size=self._est_batch``)."""

    @property
    def single(self) -> bool:
        """Whether this is one agent with unbatched public shapes (``batch_size=None``)."""
        return self.members.unbatched

    @property
    def _est_batch(self) -> int | None:
        return self.members.given

    def _sketch_radius(self) -> np.ndarray:
        """``beta="theory"`` radius per member from the sketch (sketched agents override)."""
        raise NotImplementedError

    # -- state ---------------------------------------------------------------------
    def reset(self, seed: int | list[int | None] | None = None) -> None:
        """Forget everything; batched: ``seed`` an int (member i gets ``seed + i``), a list of B seeds, or None."""
        self.seeds = _member_seeds(seed, self.members)  # checked before anything is cleared
        self.estimator = None
        self._theta = None
        self._logdet = np.zeros(self.batch_size)  # log det(A_hat) - d log(lam), for beta="theory"
        self._scored = None  # what act() scored last, for update() of the same obs (see _remember_scored)
        super().reset(seed=seed if seed is None or isinstance(seed, numbers.Integral) else None)

    def _allocate(self, d: int) -> None:
        self._check_state_fits(d)  # before anything is allocated or changed
        super()._allocate(d)
        self.estimator = self._make_estimator(d)

    def _arms(self, obs: Any, check_finite: bool = True, own: bool = False):
        """The round's validated arms as the estimator's backend array ``(B, K, d)``.
        ``check_finite=False`` (dimension known) leaves the NaN/inf test to :meth:`_round`, which runs
        it only when the scores are not finite (a non-finite arm always makes its score non-finite).
        ``own``: a numpy ``obs`` is copied, never shared (:func:`~agents._torch.as_float_tensor`)."""
        if self.members.unbatched:  # (K, d): numpy for one estimator on CPU (agents.sketches.backend)
            arms = as_arm_matrix(obs, self.device, self.dtype, self.d, check_finite=check_finite or self.d is None,
                                 own=own, host=self._host_arms)[None]
        else:
            arms = as_arm_batch(obs, self.device, self.dtype, self.batch_size, self.d, own)
        if self.d is None:
            self._allocate(int(arms.shape[2]))
        return arms

    def _max_row_sq(self) -> float:
        """The largest ``tr(X^T X)`` over members (an upper bound on every squared row norm seen)."""
        return float(np.max(self.estimator.trace)) if self.estimator is not None else 0.0

    @property
    def b(self) -> torch.Tensor | None:
        """``sum_s r_s x_s`` (per member when batched), in the estimator's core dtype (float64 on CPU
        whatever the working dtype)."""
        return None if self.estimator is None else self.estimator.b

    @property
    def theta_hat(self) -> torch.Tensor | None:
        """``A_hat^-1 b`` (``(d,)``, or ``(B, d)`` batched), computed on demand (play never needs it)."""
        if self.estimator is None:
            return None
        if self._theta is None:
            theta = self.estimator.theta()
            if not bool(torch.isfinite(theta).all()):
                raise FloatingPointError(
                    f"{type(self).__name__}: theta_hat = A_hat^-1 b is not finite (round {self.t}): the ridge solution "
                    f"overflowed {self.dtype} because A_hat is too ill-conditioned for it (lam={_fmt(self.lam)} against "
                    f"squared row norms up to {self._max_row_sq():.3g}); rescale the features/rewards, raise lam or "
                    "use dtype=torch.float64"
                )
            self._theta = theta
        return self._theta

    @property
    def logdet_ratio(self):
        """``sum_s log(1 + ||x_s||^2_{A_hat^-1})`` = ``log det(A_hat) - d log(lam)`` (OFUL, ``"theory"``)."""
        return self.members.host(self._logdet)

    # -- the loop ------------------------------------------------------------------
    def _radius(self):
        """beta_t as a float, or per member as a float64 array ``(B,)``."""
        if self._theory is False:
            return self.beta
        if self._accumulates_logdet or self.estimator is None:
            r = self.noise_std * np.sqrt(2.0 * math.log(1.0 / self.delta) + self._logdet) + np.sqrt(
                self.lam) * self.theta_bound
        else:
            r = self._sketch_radius()
        if self._theory is not True:
            r = np.where(self._theory, r, self._beta_numbers)  # "theory" members mixed with numeric ones
        return self.members.host(np.broadcast_to(r, (self.batch_size,)))

    def confidence_radius(self):
        """beta_t used in the current round (a float; per member when batched, a float64 array ``(B,)``)."""
        return self._radius()

    def _round(self, obs: Any):
        """Score the round's arms: the UCBs ``(B, K)`` (the estimator's backend, core dtype) and the
        :class:`~agents.sketches.base.ScoreTerms` they came from.

        The UCBs stay in the core dtype (float64 on CPU whatever the working dtype): the K scores
        cost nothing to keep there, and rounding them to float32 would make near-ties (within
        float32's eps relative) exact ties, which argmax breaks by index."""
        arms = self._arms(obs, check_finite=False, own=True)  # own: a snapshot of a numpy obs (_remember_scored)
        est = self.estimator
        xp = est.xp
        terms = est.score_terms(arms)
        r = self._radius()
        width = xp.sqrt(terms.quad)  # quad >= the estimators' valid floor >= 0
        width = width * r if isinstance(r, float) else width * xp.asarray(r, est.cdtype)[:, None]
        ucb = terms.mean + width  # x^T theta_hat + beta ||x||_{A_hat^-1} (Wen et al. (2025), eq. 2)
        if not xp.all_finite(ucb):
            self._scored = None
            if not xp.all_finite(arms):
                raise ValueError(NONFINITE_ARMS)
            raise self._overflow_error("not finite")
        self._remember_scored(obs, terms)
        return ucb, terms

    def scores(self, obs: Any) -> torch.Tensor:
        """Upper confidence bounds of all arms: ``(K,)`` (batched ``(B, K)``), in the working dtype
        (:meth:`act` compares them before that rounding, in the core dtype). Scores finite in the
        core dtype but beyond the working dtype's range (float32 past ~3.4e38) raise the same
        ``FloatingPointError`` as non-finite ones."""
        ucb, _ = self._round(obs)
        s = self.estimator.xp.to_torch(ucb)
        out = s.to(self.dtype)
        if not bool(torch.isfinite(out).all()):
            raise self._overflow_error(f"up to {float(s.abs().max()):.3g} in size")
        return self.members.out(out)

    def _overflow_error(self, size: str) -> FloatingPointError:
        """The error for UCB scores that ``self.dtype`` cannot hold (``size``: what they were)."""
        return FloatingPointError(
            f"{type(self).__name__}: the UCB scores are {size} (round {self.t}): they overflowed {self.dtype} "
            f"because A_hat = lam I + X^T X is too ill-conditioned for it (lam={_fmt(self.lam)} against squared "
            f"row norms up to {self._max_row_sq():.3g}); rescale the features/rewards, raise lam or use "
            "dtype=torch.float64"
        )

    def act(self, obs: Any):
        ucb, _ = self._round(obs)
        if self.members.unbatched:
            return int(ucb[0].argmax())  # the first maximum, as torch.argmax
        actions = ucb.argmax(axis=1) if self.estimator.xp.is_numpy else torch.argmax(ucb, dim=1)
        if isinstance(obs, torch.Tensor):
            return self.estimator.xp.to_torch(actions)
        return self.estimator.xp.host(actions)

    def _remember_scored(self, obs: Any, terms: ScoreTerms) -> None:
        """Keep act's terms for update() of the same obs object (the usual loop; :func:`~agents._torch.obs_token`:
        a tensor tied to its version counter, a numpy array, which act copied, to its shape; update()
        then learns from the arms as act saw them). Other inputs are converted afresh by update()."""
        token = obs_token(obs)
        self._scored = None if token is None else (token, terms)

    def _scored_terms(self, obs: Any) -> ScoreTerms | None:
        """act's terms when ``obs`` is the arm set act just scored and the estimator has not moved since,
        else None. Changes nothing."""
        sc = self._scored
        if sc is None or sc[1].version != self.estimator.n_rows or not same_obs(sc[0], obs):
            return None
        return sc[1]

    def _feedback(self, n_arms: int, actions: Any, rewards: Any) -> tuple[np.ndarray, np.ndarray]:
        """Validate a batched round's feedback before any state changes: ``(B,)`` host actions and rewards."""
        B = self.batch_size
        a = actions.detach().cpu().numpy() if isinstance(actions, torch.Tensor) else np.asarray(actions)
        if a.shape != (B,) or a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be {B} integer arm indices (shape ({B},)), got {a.dtype} array of shape {a.shape}")
        if (a < 0).any() or (a >= n_arms).any():
            raise ValueError(f"action {int(a[(a < 0) | (a >= n_arms)][0])} is out of range for arm sets of {n_arms} arms")
        r = rewards.detach().cpu().numpy() if isinstance(rewards, torch.Tensor) else rewards
        try:
            r = np.asarray(r)
            # strings such as "1.0" are not parsed, and complex is not real (also inside an object array)
            if r.dtype.kind in "USc" or (r.dtype.kind == "O" and any(
                    isinstance(v, (str, bytes, complex, np.complexfloating)) for v in r.ravel().tolist())):
                raise TypeError(r.dtype)
            r = r.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"rewards must be {B} real numbers, got {rewards!r}") from exc
        if r.shape != (B,):
            raise ValueError(f"rewards must have shape ({B},) (one per member), got {r.shape}")
        if not np.isfinite(r).all():
            raise ValueError("rewards must be finite")
        return a.astype(np.int64), r

    def update(self, obs: Any, action: Any, reward: Any) -> None:
        terms = self._scored_terms(obs) if self.estimator is not None else None
        if self.members.unbatched:  # an int and a float; feedback checked before _arms, which fixes d on the first round
            a, r = self._check_feedback(self._n_arms(obs) if terms is None else terms.arms.shape[1], action, reward)
            actions: Any = a
        else:
            n_arms = terms.arms.shape[1] if terms is not None else self._n_arms_batch(obs)
            actions, r = self._feedback(n_arms, action, reward)
        arms = terms.arms if terms is not None else self._arms(obs)
        est = self.estimator
        X = est._pick(arms, actions)  # each member's played row (B, d)
        if self._theory is not False and self._accumulates_logdet:
            self._logdet = self._logdet + est.logdet_increments(X, terms, actions)
        est.step(X, r, terms, actions if terms is not None else None)
        self._scored = self._theta = None
        self.t += 1
        warn_if_beyond_dtype(est, who=type(self).__name__)

    def _n_arms_batch(self, obs: Any) -> int:
        shape = getattr(obs, "shape", None)
        if shape is not None and len(shape) == 3:
            return int(shape[1])
        return int(np.asarray(obs).shape[1])

    # -- introspection -------------------------------------------------------------
    @property
    def sketch_size(self):
        """Rows of sketch held now (``d`` for OFUL; per member when batched); ``None`` before the first observation."""
        return None if self.estimator is None else self.estimator.sketch_size

    def member_memory_bytes(self) -> np.ndarray:
        """Per member, what the single agent's ``memory_bytes()`` reports: the estimator (``b`` included)
        plus ``theta_hat`` (working dtype)."""
        if self.estimator is None:
            return np.zeros(self.batch_size, dtype=np.int64)
        own = self.d * self.dtype.itemsize
        return self.estimator.member_memory_bytes() + own

    def memory_bytes(self) -> int:
        """Bytes of state held now (batched: all members, padding included)."""
        if self.estimator is None:
            return 0
        if self.members.unbatched:
            return int(self.member_memory_bytes()[0])
        theta = 0 if self._theta is None else self._theta.element_size() * self._theta.nelement()
        return self.estimator._held_bytes() + theta

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={_fmt(v)}" for k, v in self._repr_params.items())
        if self.members.given is not None:
            inner = f"batch_size={self.batch_size}" + (", " + inner if inner else "")
        return f"{type(self).__name__}({inner})"
