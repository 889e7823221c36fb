"""An agent = a covariance estimator + an action rule; this is everything but the rule.

Every regret agent of the papers plays the same loop over a covariance estimator
(:class:`~agents.sketches.base.CovarianceEstimator`: exact, Frequent Directions, Robust FD,
Dyadic Block Sketch), which keeps ``A_hat`` (``lam I + sum_s x_s x_s^T``, exactly or through a
sketch) and ``b = sum_s r_s x_s``:

    x_t = argmax_{x in X_t} score_t(x)          (the action rule: optimism, Thompson sampling)
    A_hat <- A_hat + x_t x_t^T;  b <- b + r_t x_t

:class:`EstimatorAgent` owns what does not depend on the rule: argument checks, the lazy
dimension, seeds, the members of a batched agent, the round's scoring reused by its update,
``theta_hat``, memory (held and estimated) and ``repr``. A rule (:class:`agents.linucb.LinUCB`)
supplies :meth:`EstimatorAgent._arm_scores`; an agent file names its estimator
(:attr:`~EstimatorAgent.estimator_class`, :attr:`~EstimatorAgent.estimator_args`) and what its
paper adds.

The loop exists once with a leading batch dimension, as the estimators do: ``batch_size=None``
(the default) is one agent (``act`` takes a ``(K, d)`` arm set and returns an int),
``batch_size=B`` is B independent agents advanced as one tensor program (``act`` takes
``(B, K, d)`` and returns B actions; the constructors of :mod:`agents.batched` are this). The
single agent is B = 1 of the same code.

Per round the estimator reads its big state once for scoring (``score_terms`` returns a
:class:`~agents.sketches.base.ScoreTerms`: the mean ``x^T theta_hat`` and the width
``||x||^2_{A_hat^-1}`` of every arm from one projection of the arms) and once for the update
(``step`` takes those terms, and reuses the played arm's projection when ``update`` gets the very
arm set ``act`` scored). ``theta_hat`` is never needed during play and is computed on demand.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import torch

from linbandit_host.memory import (
    format_bytes,
    format_count,
    memory_limit_bytes,
    memory_limit_source,
)

from ._torch import (
    NONFINITE_ARMS,
    DeviceLike,
    DTypeLike,
    _all_finite,
    as_arm_matrix,
    as_float_array,
    as_float_tensor,
    obs_token,
    resolve_dtype,
    same_obs,
)
from ._validate import Interval, check_seed
from .base import TorchAgent, _listed
from .sketches.base import (
    CovarianceEstimator,
    Members,
    ScoreTerms,
    core_dtype,
    warn_if_beyond_dtype,
    warn_if_updates_inexact,
)

__all__ = ["EstimatorAgent", "arm_scratch_bytes", "as_arm_batch", "state_dtypes"]


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


def _member_seeds(seed: Any, members: Members) -> list:
    """The members' seeds of ``reset(seed)``: one agent takes ``seed`` itself; a batch an int
    (member i gets ``seed + i``), a list of B seeds, or None. Each is checked (a refused seed
    changes nothing)."""
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
        raise ValueError(
            f"seed as a list must hold one seed per member (batch_size={B}), got {len(seeds)}"
        )
    return seeds


def as_arm_batch(
    obs: Any,
    device: torch.device,
    dtype: torch.dtype,
    batch_size: int,
    d: int | None,
    own: bool = False,
    host: bool = False,
) -> torch.Tensor:
    """A ``(B, K, d)`` finite tensor on the device, or a ``ValueError`` saying what was wrong
    (``own``: see :func:`~agents._torch.as_float_tensor`; ``host``: a numpy array,
    :func:`~agents._torch.as_float_array`, for an estimator on the numpy backend)."""
    what = "(B, K, d) batch of arm sets"
    arms = (
        as_float_array(obs, dtype, what, own)
        if host
        else as_float_tensor(obs, device, dtype, what, own)
    )
    if arms.ndim != 3 or arms.shape[0] != batch_size or arms.shape[1] < 1 or arms.shape[2] < 1:
        raise ValueError(
            f"the observation must be a (B={batch_size}, K, d) batch of arm sets (one per member), "
            f"got shape {tuple(arms.shape)}"
        )
    if d is not None and arms.shape[2] != d:
        raise ValueError(
            f"arm dimension changed: the agent was built for d={d} but got arms of shape "
            f"{tuple(arms.shape)}; "
            "call agent.reset() before playing an env of another dimension"
        )
    if not _all_finite(arms):
        raise ValueError("the arm sets contain NaN or infinite entries")
    return arms


class EstimatorAgent(TorchAgent):
    """A linear bandit agent on a covariance estimator; a subclass supplies the action rule.

    Args:
        lam: ridge regularisation lambda > 0 (``A_hat = lam I + ...``).
        delta: confidence level of the rule's ``"theory"`` scale.
        noise_std: sub-Gaussian scale R of the reward noise (``"theory"`` only).
        theta_bound: bound H on ||theta*||_2 (``"theory"`` only).
        batch_size: ``None`` (one agent) or B (B independent agents; member i of ``reset(seed=s)``
            gets seed ``s + i``, or pass a list of B seeds). Batched, each argument named in
            ``per_member_args`` may be B values, member i playing exactly as the single agent
            with the i-th values; the attribute (``self.lam``) is then an array ``(B,)``.
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    **What an agent class declares** (besides :class:`~agents.base.TorchAgent`'s
    ``parameter_constraints`` and :class:`~agents.base.Agent`'s ``batching``):
    :attr:`estimator_class`, the estimator it plays on, built with ``reg=lam`` and the agent's
    arguments named in :attr:`estimator_args`; :attr:`size_args`, those that size its state. From
    them the base builds the estimator (:meth:`make_estimator`) and answers the memory estimate
    with the estimator class's own byte formula (``estimator_class.estimate_member_bytes``), and
    refuses, before allocating, a state beyond the memory available.

    **What a rule supplies**: :meth:`_arm_scores`, the ``(B, K)`` scores ``act`` maximises.

    ``update(obs, a, r)`` called with the same numpy array or tensor object that ``act`` just
    scored learns from the arm set as ``act`` saw it (validated once; an in-place change of
    ``obs`` in between is not looked at, or for a tensor makes ``update`` convert it afresh).
    Ties in the scores are broken towards the lowest index (``torch.argmax``).
    """

    parameter_constraints = {
        "lam": [Interval(numbers.Real, 0, None, closed="neither", hint="ridge lambda")],
        "batch_size": [
            Interval(numbers.Integral, 1, None, hint="None: one agent; B: B independent members"),
            None,
        ],
    }

    #: The covariance estimator the agent plays on (a
    #: :class:`~agents.sketches.base.CovarianceEstimator` subclass; ``None`` for a rule not yet
    #: paired with one).
    estimator_class: type[CovarianceEstimator] | None = None
    #: The agent's constructor arguments passed on to the estimator by name (besides ``reg=lam`` and
    #: the placement), and to its byte estimate.
    estimator_args: tuple[str, ...] = ()
    #: The constructor arguments beside ``d`` that size the state (named when a state cannot fit).
    size_args: tuple[str, ...] = ()

    #: What the scores are, for messages.
    scores_name = "scores"

    def __init__(
        self,
        *,
        lam: float = 1.0,
        delta: float = 0.05,
        noise_std: float = 1.0,
        theta_bound: float = 1.0,
        batch_size: int | None = None,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
    ):
        self.lam = lam
        self.delta, self.noise_std, self.theta_bound = delta, noise_std, theta_bound
        self.members = Members(batch_size)
        self.batch_size = self.members.B
        self.estimator: CovarianceEstimator | None = None
        super().__init__(d=d, device=device, dtype=dtype, seed=seed)

    # -- the estimator ---------------------------------------------------------------
    def make_estimator(self, d: int) -> CovarianceEstimator:
        """The estimator this agent plays on, for dimension ``d``: :attr:`estimator_class` with
        ``reg=lam``, the arguments named in :attr:`estimator_args` and the agent's placement."""
        args = {name: self.arguments[name] for name in self.estimator_args}
        return self.estimator_class(
            d,
            reg=self.lam,
            **args,
            device=self.device,
            dtype=self.dtype,
            batch_size=self.members.given,
        )

    @property
    def single(self) -> bool:
        """Whether this is one agent with unbatched public shapes (``batch_size=None``)."""
        return self.members.unbatched

    # -- state ---------------------------------------------------------------------
    def reset(self, seed: int | list[int | None] | None = None) -> None:
        """Forget everything; batched: ``seed`` an int (member i gets ``seed + i``), a list of B
        seeds, or None."""
        self.seeds = _member_seeds(seed, self.members)  # checked before anything is cleared
        self.estimator = None
        self._theta = None
        # what act() scored last, for update() of the same obs (see _remember_scored)
        self._scored = None
        super().reset(seed=seed if seed is None or isinstance(seed, numbers.Integral) else None)

    def _allocate(self, d: int) -> None:
        self._check_state_fits(d)  # before anything is allocated or changed
        super()._allocate(d)
        self.estimator = self.make_estimator(d)

    def _arms(self, obs: Any, check_finite: bool = True, own: bool = False):
        """The round's validated arms as the estimator's backend array ``(B, K, d)``.
        ``check_finite=False`` (dimension known) leaves the NaN/inf test to :meth:`_round`, which
        runs it only when the scores are not finite (a non-finite arm always makes its score
        non-finite). ``own``: a numpy ``obs`` is copied, never shared
        (:func:`~agents._torch.as_float_tensor`)."""
        # the estimator's backend's arrays (numpy on the CPU, agents.sketches.backend); numpy until
        # the first round has built it
        est = self.estimator
        host = est is None or est.xp.is_numpy
        if self.members.unbatched:  # (K, d)
            arms = as_arm_matrix(
                obs,
                self.device,
                self.dtype,
                self.d,
                check_finite=check_finite or self.d is None,
                own=own,
                host=host,
            )[None]
        else:
            arms = as_arm_batch(obs, self.device, self.dtype, self.batch_size, self.d, own, host)
        if self.d is None:
            self._allocate(int(arms.shape[2]))
            arms = self.estimator.xp.asarray(arms, self.dtype)  # (its backend's, chosen now)
        return arms

    @property
    def b(self) -> torch.Tensor | None:
        """``sum_s r_s x_s`` (per member when batched), in the estimator's core dtype (float64 on
        CPU whatever the working dtype)."""
        return None if self.estimator is None else self.estimator.b

    @property
    def theta_hat(self) -> torch.Tensor | None:
        """``A_hat^-1 b`` (``(d,)``, or ``(B, d)`` batched), computed on demand (play never needs
        it)."""
        if self.estimator is None:
            return None
        if self._theta is None:
            theta = self.estimator.theta()
            if not bool(torch.isfinite(theta).all()):
                raise FloatingPointError(
                    f"{type(self).__name__}: theta_hat = A_hat^-1 b is not finite in {self.dtype} "
                    f"(round {self.t}): ||theta_hat|| <= ||b|| / lam, with ||b|| up to "
                    f"{float(np.max(self.estimator._response_mass)):.3g} (sum_s |r_s| ||x_s||) "
                    f"and lam={_fmt(self.lam)}; rescale the rewards, raise lam or use "
                    "dtype=torch.float64"
                )
            self._theta = theta
        return self._theta

    # -- the loop ------------------------------------------------------------------
    def _arm_scores(self, arms, terms: ScoreTerms):
        """The action rule: the scores ``(B, K)`` of the round's arms ``(B, K, d)``, the estimator's
        backend array in its core dtype, from the estimator's ``terms`` of them; ``act`` plays the
        first maximum of each member's."""
        raise NotImplementedError(f"{type(self).__name__} has no action rule (_arm_scores)")

    def _score_terms(self, arms) -> ScoreTerms:
        """What the rule reads of the estimator for the round's arms ``(B, K, d)``: by default both
        UCB terms of every arm (:meth:`~agents.sketches.base.CovarianceEstimator.score_terms`, whose
        projection the update reuses). A rule that reads the estimator otherwise (Thompson
        sampling: ``theta_hat`` and a draw) returns the arms alone, without a projection."""
        return self.estimator.score_terms(arms)

    def _before_step(self, rows, terms: ScoreTerms | None, actions) -> None:
        """What the rule keeps of the played rows ``(B, d)`` before the estimator adds them
        (``terms``: act's, when reused; nothing by default)."""

    def _round(self, obs: Any):
        """Score the round's arms: the rule's scores ``(B, K)`` (the estimator's backend, core
        dtype) and the :class:`~agents.sketches.base.ScoreTerms` they came from.

        The scores stay in the core dtype (float64 on CPU whatever the working dtype): the K scores
        cost nothing to keep there, and rounding them to float32 would make near-ties (within
        float32's eps relative) exact ties, which argmax breaks by index."""
        arms = self._arms(
            obs, check_finite=False, own=True
        )  # own: a snapshot of a numpy obs (_remember_scored)
        est = self.estimator
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is named below, by cause
            terms = self._score_terms(arms)
            scores = self._arm_scores(arms, terms)
        if not est.xp.all_finite(scores):
            self._scored = None
            if not est.xp.all_finite(arms):
                raise ValueError(NONFINITE_ARMS)
            raise self._overflow_error("not finite", terms)
        self._remember_scored(obs, terms)
        return scores, terms

    def scores(self, obs: Any) -> torch.Tensor:
        """The scores of all arms that ``act`` maximises: ``(K,)`` (batched ``(B, K)``), in the
        working dtype (:meth:`act` compares them before that rounding, in the core dtype). Scores
        finite in the core dtype but beyond the working dtype's range (float32 past ~3.4e38) raise
        the same ``FloatingPointError`` as non-finite ones."""
        scores, _ = self._round(obs)
        s = self.estimator.xp.to_torch(scores)
        out = s.to(self.dtype)
        if not bool(torch.isfinite(out).all()):
            raise self._overflow_error(f"up to {float(s.abs().max()):.3g} in size")
        return self.members.out(out)

    def _overflow_error(self, size: str, terms: ScoreTerms | None = None) -> Exception:
        """The error for scores that ``self.dtype`` cannot hold (``size``: what they were), naming
        the term that overflowed, from the bounds ``x^T A_hat^-1 x <= ||x||^2 / lam`` and
        ``|x^T A_hat^-1 b| <= ||x|| ||b|| / lam`` (``||b|| <= sum_s |r_s| ||x_s||``): the arms'
        norms or the rewards' sum against ``lam``, whatever ``A_hat``'s conditioning (a
        ``ValueError`` for arms whose squared norm overflows)."""
        est = self.estimator
        head = f"{type(self).__name__}: the {self.scores_name} are {size} (round {self.t})"
        lam, lam_min = _fmt(self.lam), float(np.min(est._reg_host()))
        largest = 0.0
        if terms is not None:  # (a rule without widths, Thompson sampling, leaves sq None)
            with np.errstate(over="ignore"):
                sq = terms.sq if terms.sq is not None else est.xp.norm_sq(terms.arms, est.cdtype)
            largest = float(est.xp.host(sq).max())
        mass = float(np.max(est._response_mass))
        float64 = "" if self.dtype == torch.float64 else ", or use dtype=torch.float64"
        with np.errstate(over="ignore"):
            widths = max(largest, math.sqrt(largest)) / lam_min  # bounds x^T A^-1 x and A^-1 x
            means = math.sqrt(largest) * mass / lam_min
        if not largest <= est._max_norm_sq:  # (a rule that did not check the arms' norms)
            return ValueError(est._too_large("an arm's", terms.arms))
        if terms is None:  # finite in the core dtype, beyond the working dtype's range
            cause = f"they are beyond {self.dtype}'s range; use dtype=torch.float64"
        elif not widths <= torch.finfo(self.dtype).max and terms.quad is not None:
            cause = (
                f"the widths x^T A_hat^-1 x (at most ||x||^2 / lam) overflowed {self.dtype}: "
                f"arms of squared norm up to {largest:.3g} against lam={lam}; rescale the features "
                f"or raise lam{float64}"
            )
        elif not means <= torch.finfo(est.cdtype).max:
            cause = (
                f"the means x^T A_hat^-1 b (at most ||x|| ||b|| / lam) overflowed: arms of norm up "
                f"to {math.sqrt(largest):.3g} and ||b|| up to {mass:.3g} (sum_s |r_s| ||x_s||) "
                f"against lam={lam}; rescale the rewards or the features, or raise lam"
            )
        else:
            cause = (
                f"the rule's scores overflowed (arms of squared norm up to {largest:.3g}, ||b|| up "
                f"to {mass:.3g}, lam={lam}); rescale the features or lower the rule's scale"
            )
        return FloatingPointError(f"{head}: {cause}")

    def act(self, obs: Any):
        scores, _ = self._round(obs)
        if self.members.unbatched:
            return int(scores[0].argmax())  # the first maximum, as torch.argmax
        actions = (
            scores.argmax(axis=1) if self.estimator.xp.is_numpy else torch.argmax(scores, dim=1)
        )
        if isinstance(obs, torch.Tensor):
            return self.estimator.xp.to_torch(actions)
        return self.estimator.xp.host(actions)

    def _remember_scored(self, obs: Any, terms: ScoreTerms) -> None:
        """Keep act's terms for update() of the same obs object (the usual loop;
        :func:`~agents._torch.obs_token`: a tensor tied to its version counter, a numpy array, which
        act copied, to its shape; update() then learns from the arms as act saw them). Other inputs
        are converted afresh by update()."""
        token = obs_token(obs)
        self._scored = None if token is None else (token, terms)

    def _scored_terms(self, obs: Any) -> ScoreTerms | None:
        """act's terms when ``obs`` is the arm set act just scored and the estimator has not moved
        since, else None. Changes nothing."""
        sc = self._scored
        if sc is None or sc[1].version != self.estimator.n_rows or not same_obs(sc[0], obs):
            return None
        return sc[1]

    def _feedback(self, n_arms: int, actions: Any, rewards: Any) -> tuple[np.ndarray, np.ndarray]:
        """Validate a batched round's feedback before any state changes: ``(B,)`` host actions and
        rewards."""
        B = self.batch_size
        a = (
            actions.detach().cpu().numpy()
            if isinstance(actions, torch.Tensor)
            else np.asarray(actions)
        )
        if a.shape != (B,) or a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(
                f"actions must be {B} integer arm indices (shape ({B},)), got {a.dtype} array of "
                f"shape {a.shape}"
            )
        if (a < 0).any() or (a >= n_arms).any():
            raise ValueError(
                f"action {int(a[(a < 0) | (a >= n_arms)][0])} is out of range for arm sets of "
                f"{n_arms} arms"
            )
        r = rewards.detach().cpu().numpy() if isinstance(rewards, torch.Tensor) else rewards
        try:
            r = np.asarray(r)
            # strings such as "1.0" are not parsed, and complex is not real (also inside an object
            # array)
            if r.dtype.kind in "USc" or (
                r.dtype.kind == "O"
                and any(
                    isinstance(v, (str, bytes, complex, np.complexfloating))
                    for v in r.ravel().tolist()
                )
            ):
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
        if (
            self.members.unbatched
        ):  # an int and a float; feedback checked before _arms, which fixes d on the first round
            a, r = self._check_feedback(
                self._n_arms(obs) if terms is None else terms.arms.shape[1], action, reward
            )
            actions: Any = a
        else:
            n_arms = terms.arms.shape[1] if terms is not None else self._n_arms_batch(obs)
            actions, r = self._feedback(n_arms, action, reward)
        arms = terms.arms if terms is not None else self._arms(obs)
        est = self.estimator
        X = est._pick(arms, actions)  # each member's played row (B, d)
        est.step(
            X,
            r,
            terms,
            actions if terms is not None else None,
            before=lambda: self._before_step(X, terms, actions),
        )
        self._scored = self._theta = None
        self.t += 1
        warn_if_beyond_dtype(est, who=type(self).__name__)
        warn_if_updates_inexact(est, who=type(self).__name__)

    def _n_arms_batch(self, obs: Any) -> int:
        shape = getattr(obs, "shape", None)
        if shape is not None and len(shape) == 3:
            return int(shape[1])
        return int(np.asarray(obs).shape[1])

    # -- introspection -------------------------------------------------------------
    @property
    def sketch_size(self):
        """Rows of sketch held now (``d`` for OFUL; per member when batched); ``None`` before the
        first observation."""
        return None if self.estimator is None else self.estimator.sketch_size

    # -- memory: held now, and estimated from the arguments alone ---------------------
    def member_memory_bytes(self) -> np.ndarray:
        """Per member, what the single agent's ``memory_bytes()`` reports: the estimator (``b``
        included) plus ``theta_hat`` (working dtype)."""
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

    @classmethod
    def estimate_memory_bytes(cls, d: int, n_arms: int, **args: Any) -> int | None:
        """The arm sets of a round (:func:`arm_scratch_bytes`) and the state at its peak
        (:meth:`estimate_state_bytes`); ``None`` for an estimator that cannot say.
        ``dtype``/``device`` in ``args`` are honoured (float64 state on CPU by default)."""
        state = cls.estimate_state_bytes(d, n_arms, **args)
        return None if state is None else arm_scratch_bytes(d, n_arms) + state

    @classmethod
    def estimate_initial_memory_bytes(cls, d: int, n_arms: int, **args: Any) -> int | None:
        """What one agent allocates first with the arm sets of a round, where that is less than its
        peak (an estimator whose memory grows with the stream); ``None`` otherwise."""
        first = cls.estimate_state_bytes(d, n_arms, initial=True, **args)
        if first is None or first == cls.estimate_state_bytes(d, n_arms, **args):
            return None
        return arm_scratch_bytes(d, n_arms) + first

    @classmethod
    def estimate_state_bytes(
        cls, d: int, n_arms: int, *, initial: bool = False, **args: Any
    ) -> int | None:
        """Bytes of one agent's state: its estimator's (the estimator class's own formula,
        ``estimator_class.estimate_member_bytes``, for the largest member where members' sizes
        differ) and ``theta_hat`` (``d`` numbers of the working dtype). At its peak, or ``initial``:
        what is allocated before the stream fills it. The estimate of a whole allocated state
        (OFUL, SOFUL, CBSCFD) is what :meth:`memory_bytes` reports; a growing one's peak (DBSLinUCB)
        bounds it."""
        if cls.estimator_class is None:
            return None
        dtype, cdtype = state_dtypes(args)
        estimator_args = {name: cls.constructor_argument(name, args) for name in cls.estimator_args}
        estimator = cls.estimator_class.estimate_member_bytes(
            d, **estimator_args, n_arms=n_arms, initial=initial, dtype=dtype, core_dtype=cdtype
        )
        return None if estimator is None else int(estimator) + d * dtype.itemsize

    def _check_state_fits(self, d: int) -> None:
        """Refuse, before anything is allocated, a state (all members) beyond
        :func:`~linbandit_host.memory.memory_limit_bytes`, naming the arguments that size it and the
        bytes; nothing changes."""
        args = {
            k: v
            for k, v in self.arguments.items()
            if k not in ("d", "batch_size", "device", "dtype")
        }
        per_member = type(self).estimate_state_bytes(
            d, 1, initial=True, **args, device=self.device, dtype=self.dtype
        )
        if per_member is None:
            return
        need, limit = per_member * self.batch_size, memory_limit_bytes()
        if need <= limit:
            return
        name = getattr(type(self), "single_class", type(self)).__name__
        sizes = ", ".join(f"{arg}={_fmt(self.arguments[arg])}" for arg in self.size_args)
        members = "" if self.members.unbatched else f" for its {self.batch_size} members"
        raise ValueError(
            f"{name}({sizes}) at d={d} would allocate about {format_bytes(need)} "
            f"({format_count(need)} bytes){members}, more than {memory_limit_source()} "
            f"({format_bytes(limit)}); lower {' or '.join((*self.size_args, 'd'))}"
        )

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={_fmt(self.arguments[k])}" for k in self.repr_args)
        if self.members.given is not None:
            inner = f"batch_size={self.batch_size}" + (", " + inner if inner else "")
        return f"{type(self).__name__}({inner})"


def _fmt(value: Any) -> str:
    """A parameter for a message or repr: a per-member array as a list."""
    return repr(_listed(value))
