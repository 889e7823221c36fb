"""The one interface every covariance estimator implements, batch dimension first.

A *covariance estimator* sees, for each of B independent members, a stream of rows
x_1, x_2, ... in R^d (and their responses r_1, r_2, ...) and maintains

    A_hat = reg * I + (approximation of X^T X)          (X = [x_1; ...; x_t])
    b     = sum_s r_s x_s                                (the ridge right-hand side)

Each estimator (exact, FD, RFD, Dyadic Block Sketch) exists once, with a leading batch dimension,
as ``torch.distributions`` does with batch shapes: ``batch_size=B`` gives B members advanced as one
program, ``batch_size=None`` (the default) a single estimator whose public methods take and
return unbatched shapes; it is B = 1 of the same code. The kernels are written against an array
namespace (:mod:`agents.sketches.backend`), chosen once per estimator: numpy arrays for a single
estimator on CPU, torch tensors otherwise.

Public API (shapes for ``batch_size=None``; add a leading B otherwise; inputs may be numpy arrays,
tensors or lists, outputs are torch tensors):

* ``update(x, r=0.0)``: add the row ``x`` (d,) with response ``r``; validated first.
* ``quad_inv(arms)``: ``x^T A_hat^-1 x`` for the K rows of ``arms`` (K, d) -> (K,).
* ``solve(v)``: ``A_hat^-1 v``; ``theta()``: ``A_hat^-1 b``; ``b``.
* ``covariance()``: the dense approximation of ``X^T X`` (diagnostics only).
* ``draw(z)``: ``F z`` with ``F F^T = A_hat^-1`` for standard normal rows ``z`` ``(n, d) -> (n, d)``
  (Thompson sampling's draws; each estimator says which factor).
* ``sketch_size``, ``memory_bytes()``, ``logdet_increment(x)``.

Each query is implemented once, batch-first on backend arrays in the core dtype (``quad_all``,
``solve_all``, ``theta_all``, ``b_all``, ``covariance_all``, ``draw_all``); the public methods
validate, add or drop the member axis and convert. The optimistic loop
(:class:`agents.linucb.LinUCB`) uses two more batched methods: :meth:`score_terms` returns a
:class:`ScoreTerms` (both UCB terms of every arm, and the projection of the arms the update
reuses) and :meth:`step` adds the played rows, taking those terms as an argument.

Numerics shared by every estimator:

* The big state (an inverse, a sketch's basis) lives in the working dtype; the small state (a
  sketch's coordinates and core inverse, ``b``) in the core dtype, float64 (float32 on MPS, which
  has no float64) whatever the working dtype.
* ``||x||^2`` is summed in the core dtype and both UCB terms come back in it, so a float32 run
  ranks its arms as float64 would up to the rounding of the big product (unit-norm arms tie
  exactly in the first round, and float32 sums broke that tie otherwise than float64).
* Widths are clamped from below by the valid bound ``||x||^2 / (reg + tr(X^T X) + alpha)``
  (``lambda_max(A_hat)`` is at most the denominator), never by 0.
* A row whose squared norm overflows the working dtype is rejected before the state changes.
* :func:`warn_if_beyond_dtype`: when ``(reg + tr X^T X) / reg`` passes what the dtype resolves,
  one warning per estimator names the fixes; :func:`warn_if_updates_inexact`: when an estimator's
  own updates lost accuracy before that (:meth:`CovarianceEstimator.inexact_updates`: the exact
  inverse's Sherman-Morrison cancellation), one warning says so.
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._torch import resolve_device, resolve_dtype
from .._validate import Interval, check_value, per_member
from .._warnings import warn_user
from .backend import Backend, choose_backend

__all__ = [
    "BEYOND_DTYPE",
    "AdmittedRows",
    "CovarianceEstimator",
    "Members",
    "PrecisionWarning",
    "ScoreTerms",
    "core_dtype",
    "warn_if_beyond_dtype",
    "warn_if_updates_inexact",
]

Array = Any  # a numpy array or a torch tensor, as the estimator's backend says


def core_dtype(device: torch.device) -> torch.dtype:
    """The dtype of the small state: float64, except on MPS (no float64)."""
    return torch.float32 if device.type == "mps" else torch.float64


def _check_reg(name: str, reg) -> float:
    try:
        reg_f = float(reg)
    except (TypeError, ValueError):
        reg_f = float("nan")
    if isinstance(reg, bool) or not (reg_f > 0.0 and np.isfinite(reg_f)):
        raise ValueError(f"{name} (the ridge lambda) must be a finite number > 0, got {reg!r}")
    return reg_f


#: ``(reg + tr X^T X) / reg`` beyond ``BEYOND_DTYPE / eps`` of the working dtype: no estimator in
#: that dtype resolves ``A_hat`` (the exact inverse's Sherman-Morrison steps and a sketch's
#: products both carry ``eps`` of the largest scale), so :func:`warn_if_beyond_dtype` warns.
BEYOND_DTYPE = 32.0


class Members:
    """The public shapes of B members, the one place one estimator (or agent) differs from a batch:
    ``batch_size=None`` means one member whose public methods take and return unbatched shapes
    (scalars, ``(d,)``, ``(K, d)``); ``batch_size=B`` keeps the leading member axis. Inside,
    everything is batch-first with ``B >= 1`` members."""

    def __init__(self, batch_size: int | None):
        self.given = batch_size  # as the user gave it: None or B
        self.unbatched = batch_size is None
        self.B = 1 if batch_size is None else int(batch_size)

    def out(self, a):
        """A batch-first result as the user sees it: member 0 for one member, the whole batch
        otherwise."""
        return a[0] if self.unbatched else a

    def host(self, a):
        """A per-member host array ``(B,)`` as the user sees it: a Python scalar for one member, a
        copy otherwise."""
        a = np.asarray(a)
        return a[0].item() if self.unbatched else a.copy()

    def take(self, a):
        """A user's input with the member axis (added for one member)."""
        return a[None] if self.unbatched else a

    def shape(self, *tail) -> tuple:
        """The public shape of a per-member ``tail``."""
        return tail if self.unbatched else (self.B, *tail)

    def of(self, n: int) -> int | None:
        """The ``batch_size`` to give an estimator of ``n`` of these members (None: one member,
        unbatched)."""
        return None if self.unbatched else n

    def require_unbatched(self, what: str) -> None:
        if not self.unbatched:
            raise AttributeError(
                f"{what} is a view of one estimator; index the batched results instead"
            )


@dataclass(slots=True)
class ScoreTerms:
    """What :meth:`CovarianceEstimator.score_terms` computed for a ``(B, K, d)`` arm set, handed to
    :meth:`CovarianceEstimator.step` of the same round (which reuses the played arm's projection).

    Attributes:
        arms: the scored arms ``(B, K, d)``, working dtype.
        sq: ``||x||^2`` ``(B, K)``, core dtype.
        mean: ``x^T theta_hat`` ``(B, K)``, core dtype.
        quad: ``x^T A_hat^-1 x`` ``(B, K)``, core dtype, clamped at the valid floor.
        proj: the arms' projection: a sketch's basis coordinates ``V x`` ``(B, K, R)`` (core dtype);
            the exact estimator's ``A^-1 x`` ``(B, K, d)`` (working dtype); None when there is none.
        raw: the exact estimator's unclamped widths ``(B, K)`` (its repair test), else None.
        version: the estimator's ``n_rows`` when scored; :meth:`~CovarianceEstimator.step` reuses
            the terms only while it is unchanged.
        parts: Dyadic Block Sketching's terms of its sketched and exact members, else None.
        hp, php: a sketch's ``H p`` ``(B, K, R)`` and ``p^T H p`` ``(B, K)`` of every arm (core
            dtype; the played arm's feed its append's bordered step), else None.
    """

    arms: Array
    sq: Array
    mean: Array
    quad: Array
    proj: Array | None
    version: int
    raw: Array | None = None
    parts: Any = None
    hp: Array | None = None
    php: Array | None = None


@dataclass(slots=True)
class AdmittedRows:
    """The rows a step adds, admitted by :meth:`CovarianceEstimator._admit_rows` (they fit the
    dtypes' range): their ``||x||^2``, ``sq`` ``(B,)`` in the core dtype and ``sq_host`` on the host
    (float64), and ``played``, the played entries' index into this round's :class:`ScoreTerms`
    (:meth:`CovarianceEstimator._played`, for :meth:`CovarianceEstimator._pick`) when those are
    current, else None."""

    sq: Array
    sq_host: np.ndarray
    played: Any = None


class PrecisionWarning(RuntimeWarning):
    """The problem's condition number is beyond what the working dtype resolves, for every estimator
    (:func:`warn_if_beyond_dtype`)."""


def warn_if_beyond_dtype(est: CovarianceEstimator, who: str | None = None) -> None:
    """Warn once per estimator when ``(reg + tr X^T X + alpha) / reg`` exceeds
    ``BEYOND_DTYPE / eps`` of the working dtype: ``A_hat``'s condition number can then reach what
    that dtype cannot hold for any estimator (OFUL's exact inverse included); the fixes are named.
    Called by the public entry points after a step (``estimator.update``, ``agent.update``),
    attributed to the user's line (:func:`agents._warnings.warn_user`); ``who`` names the agent the
    warning is about (the estimator's class by default)."""
    if est._warned_dtype:
        return
    alpha = est._alpha_total()
    if (
        max(est.trace.tolist()) + max(alpha.tolist()) <= est._trace_room
    ):  # (no member near the limit)
        return
    if not np.count_nonzero(est.trace + alpha > est._trace_limit):
        return
    est._warned_dtype = True
    eps = torch.finfo(est.dtype).eps
    cond = float(np.max((est._reg_host() + est.trace + est._alpha_total()) / est._reg_host()))
    fixes = (
        "dtype=torch.float64, a larger lam, or" if est.dtype != torch.float64 else "a larger lam or"
    )
    warn_user(
        f"{who or type(est).__name__}: (lam + tr X^T X) / lam = {cond:.3g} is beyond what "
        f"{est.dtype} resolves (~{BEYOND_DTYPE:g} / eps = {BEYOND_DTYPE / eps:.3g}): every "
        f"estimator's widths (OFUL's too) lose their accuracy in this dtype. Use {fixes} "
        "normalised (rescaled) arms.",
        PrecisionWarning,
    )


def warn_if_updates_inexact(est: CovarianceEstimator, who: str | None = None) -> None:
    """Warn once per estimator when its updates lost accuracy (a :class:`PrecisionWarning` with
    :meth:`CovarianceEstimator.inexact_updates`'s sentence), called beside
    :func:`warn_if_beyond_dtype` by the public entry points after a step."""
    if est._warned_updates:
        return
    said = est.inexact_updates()
    if said is None:
        return
    est._warned_updates = True
    warn_user(f"{who or type(est).__name__}: {said}", PrecisionWarning)


class CovarianceEstimator(ABC):
    """Streaming estimate of ``reg * I + X^T X`` and of ``b = sum r x``, for B members at once.

    Args:
        d: dimension of the rows.
        reg: ridge term added to the estimate (the bandit's lambda); must be > 0. Batched, a
            sequence of B values gives member i the ridge ``reg[i]`` (``self.reg`` is then a
            float64 array ``(B,)``; it stays a float when the members agree).
        device, dtype: where the state lives; see :func:`agents._torch.resolve_device`.
        batch_size: ``None`` (default) for one estimator with unbatched shapes, or B >= 1.
        backend: the array backend, for an estimator built by another (which hands its own);
            ``None``: :func:`~agents.sketches.backend.choose_backend`'s for ``device``.
    """

    def __init__(
        self,
        d: int,
        *,
        reg: float = 1.0,
        device=None,
        dtype=None,
        batch_size: int | None = None,
        backend: Backend | None = None,
    ):
        positive = Interval(numbers.Integral, 1, None)
        d = check_value("d", d, [positive])
        batch_size = check_value("batch_size", batch_size, [None, positive])
        self.reg = per_member(
            "reg", reg, None if batch_size is None else int(batch_size), _check_reg
        )
        self._reg_arr = np.array(
            np.broadcast_to(
                np.asarray(self.reg, dtype=np.float64),
                (1 if batch_size is None else int(batch_size),),
            )
        )
        self.d = int(d)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.cdtype = core_dtype(self.device)
        self.members = Members(batch_size)
        self.batch_size = self.members.B
        self.xp: Backend = backend or choose_backend(self.device, batch_size)
        self.trace = np.zeros(self.batch_size)  # tr(X^T X) per member, for the width floor
        self.n_rows = 0
        self._warned_dtype = False
        self._warned_updates = False  # (warn_if_updates_inexact)
        # tr X^T X + alpha beyond which (reg + tr + alpha) / reg > BEYOND_DTYPE / eps
        # (warn_if_beyond_dtype)
        self._trace_limit = (BEYOND_DTYPE / torch.finfo(self.dtype).eps - 1.0) * self._reg_host()
        # below it no member needs the exact check
        self._trace_room = float(self._trace_limit.min())
        self._no_alpha = np.zeros(self.batch_size)
        # a row's ||x||^2 beyond it overflows the dtype
        self._max_norm_sq = float(torch.finfo(self.dtype).max)
        self._max_core = float(torch.finfo(self.cdtype).max)
        # sum_s |r_s| ||x_s|| per member, which bounds ||b|| (_admit)
        self._response_mass = np.zeros(self.batch_size)
        # update()'s default r (read only)
        self._no_response = self.members.host(np.zeros(self.batch_size))
        self._row_shape = self.members.shape(self.d)  # the public shape of one row per member

    # -- byte estimate, asked by the agents before building one (agents.estimator_agent) ------
    @classmethod
    def estimate_member_bytes(
        cls,
        d: int,
        *,
        n_arms: int = 1,
        initial: bool = False,
        dtype: torch.dtype = torch.float64,
        core_dtype: torch.dtype = torch.float64,
        **args: Any,
    ) -> int | None:
        """Bytes one member built with the constructor arguments ``args`` holds at its peak on arm
        sets of ``n_arms`` arms (``initial``: what it allocates first), in ``dtype`` and
        ``core_dtype``, without building anything; ``None``: this estimator cannot say."""
        return None

    @classmethod
    def draw_state_bytes(cls, d: int, dtype: torch.dtype = torch.float64) -> int:
        """Bytes one member keeps beside its state once it has drawn (:meth:`draw`): none for the
        sketches (their factor is formed per draw from the small core), the exact estimator's
        ``d x d`` square-root factor."""
        return 0

    # -- end of the byte estimate --------------------------------------------------------------

    # -- the batched internals the optimistic loop calls ----------------------------------------
    @abstractmethod
    def score_terms(self, arms) -> ScoreTerms:
        """Both UCB terms of every arm of every member, from one projection of the ``(B, K, d)``
        arms (a backend array in the working dtype)."""

    @abstractmethod
    def step(self, X, r, terms: ScoreTerms | None = None, actions=None, before=None) -> None:
        """Add row ``X[i]`` (a backend array ``(B, d)``, its shape validated) with response ``r[i]``
        (a float, or ``(B,)`` host float64) to member i. ``terms``/``actions``: ``X[i]`` is row
        ``actions[i]`` (host ints, or an int when B = 1) of the arms ``terms`` were computed for;
        reused if current. ``before``: a callable run once the rows are admitted, before the state
        changes (an agent's own bookkeeping). Every implementation starts with
        :meth:`_admit_rows`: a row the state cannot take is refused, and nothing changes."""

    @abstractmethod
    def quad_all(self, arms):
        """``(B, K, d) -> (B, K)``: ``x^T A_hat_i^-1 x`` (core dtype, clamped at the valid floor),
        leaving the state as it is."""

    @abstractmethod
    def solve_all(self, V):
        """``(B, d) -> (B, d)``: ``A_hat_i^-1 v_i`` (core dtype)."""

    @abstractmethod
    def draw_all(self, Z):
        """``(B, n, d) -> (B, n, d)``: ``F_i z`` for each row ``z`` of ``Z[i]`` (core dtype), with a
        factor ``F_i F_i^T = A_hat_i^-1`` (each estimator says which): standard normal rows ``z``
        give draws of covariance ``A_hat_i^-1`` (Thompson sampling)."""

    def sample_all(self, Z, scale):
        """``(B, n, d) -> (B, n, d)``: ``theta_hat_i + scale_i F_i z`` for each row ``z`` of
        ``Z[i]`` (core dtype; ``scale`` a float or host float64 ``(B,)``), with :meth:`draw_all`'s
        factor: Thompson sampling's ``theta_tilde``. A sketch fuses the two (one pass over its
        basis)."""
        scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (self.batch_size,))
        return self.theta_all()[:, None, :] + self.xp.asarray(scale, self.cdtype)[
            :, None, None
        ] * self.draw_all(Z)

    @abstractmethod
    def covariance_all(self):
        """``(B, d, d)``: the dense approximation of ``X_i^T X_i`` (without ``reg``)."""

    @abstractmethod
    def theta_all(self):
        """``(B, d)``: ``A_hat_i^-1 b_i`` (core dtype)."""

    @abstractmethod
    def b_all(self):
        """``(B, d)``: ``b_i`` (core dtype)."""

    @abstractmethod
    def sketch_sizes(self) -> np.ndarray:
        """Rows of sketch held now per member (``d`` when exact): int array ``(B,)``."""

    @abstractmethod
    def member_memory_bytes(self) -> np.ndarray:
        """Bytes one member's estimator holds (what ``memory_bytes()`` reports at B = 1):
        ``(B,)``."""

    @abstractmethod
    def _held_bytes(self) -> int:
        """Bytes the arrays actually hold (all members, padding included)."""

    # -- shared helpers --------------------------------------------------------------------------
    def _reg_host(self) -> np.ndarray:
        """``reg`` per member, a host float64 array ``(B,)`` (do not modify)."""
        return self._reg_arr

    def _alpha_total(self) -> np.ndarray:
        """Mass added back as ``alpha I`` (RFD); 0 otherwise (read only)."""
        return self._no_alpha

    def inexact_updates(self) -> str | None:
        """A sentence saying how this estimator's own updates lost accuracy so far (what the
        working dtype resolves aside, :func:`warn_if_beyond_dtype`), or None: the exact inverse's
        Sherman-Morrison steps can (:meth:`agents.sketches.exact.ExactCovariance.inexact_updates`);
        a sketch's basis form does not cancel (``agents.sketches.core``)."""
        return None

    def _top(self) -> np.ndarray:
        """``reg + tr(X^T X) + alpha`` per member (host float64 ``(B,)``): at least
        ``lambda_max(A_hat)``."""
        return self._reg_host() + self.trace + self._alpha_total()

    def _floor(self, sq, top: np.ndarray | None = None):
        """``||x||^2 / (reg + tr(X^T X) + alpha)``: a lower bound on ``x^T A_hat^-1 x`` (``(B, K)``;
        ``top``: :meth:`_top` when the caller has it)."""
        top = self._top() if top is None else top
        return sq / self.xp.asarray(top, self.cdtype)[:, None]

    def _played(self, actions):
        """``actions`` as an index of the played entries: an int when B = 1 (basic indexing), else
        the backend's ``(members, actions)`` index arrays (built once for the several arrays a step
        picks from)."""
        if isinstance(actions, (int, np.integer)):
            return int(actions)
        return self.xp.arange(self.batch_size), self.xp.index(actions)

    def _pick(self, a, actions):
        """``a[i, actions[i]]`` per member (``actions`` an int when B = 1, host ints, or
        :meth:`_played`'s index)."""
        ix = actions if isinstance(actions, (int, tuple)) else self._played(actions)
        return a[:, ix] if isinstance(ix, int) else a[ix]

    def _played_coordinates(self, terms: ScoreTerms, played) -> tuple:
        """A sketch's scoring of the played arms, which its append reuses: ``p = V x``, ``H p`` and
        ``p^T H p`` per member (``terms.proj``, ``hp``, ``php`` at ``played``, :meth:`_pick`)."""
        pick = self._pick
        return pick(terms.proj, played), pick(terms.hp, played), pick(terms.php, played)

    def _arm_norms(self, arms):
        """The arms ``(B, K, d)`` in the core dtype and their ``||x||^2`` ``(B, K)`` summed there; a
        ``ValueError`` (nothing changed) when an arm is not finite. The check reads the K sums only
        (an inf or NaN entry makes its arm's sum inf or NaN), before any product could propagate
        it. Called under ``np.errstate(over="ignore")``, set once by the entry point (a round's
        scoring, :meth:`quad_inv`, :meth:`logdet_increment`): an overflowing norm is refused here,
        with its cause, not warned about."""
        xp = self.xp
        arms_c = xp.astype(arms, self.cdtype)
        sq = xp.vecdot(arms_c, arms_c)
        if sq.shape[-1] and not float(sq.max()) <= self._max_norm_sq:  # (NaN compares False)
            if not xp.all_finite(arms):
                raise ValueError("the arm matrix contains NaN or infinite entries")
            raise ValueError(self._too_large("an arm's", arms))
        return arms_c, sq

    def _too_large(self, whose: str, X) -> str:
        """The message for rows (or arms) ``X`` whose squared norm overflows the working dtype."""
        fix = "" if self.dtype == torch.float64 else " or use dtype=torch.float64"
        return (
            f"{whose} squared norm overflows {self.dtype} (|x| up to "
            f"{float(np.abs(self.xp.host(X)).max()):.3g}); rescale the features{fix}"
        )

    def _admit_rows(self, X, r, terms: ScoreTerms | None, actions, before=None) -> AdmittedRows:
        """The start of every :meth:`step`: the rows' squared norms (the scoring's when ``terms``
        are current, else computed, :meth:`_row_norms`), the rows refused if the state cannot take
        them (:meth:`_admit`; a refused row changes nothing, ``before`` included), then ``before``
        run and the responses' mass counted."""
        if self._fresh(terms, actions):
            played = self._played(actions)
            sq = self._pick(terms.sq, played)
            sq_host = self.xp.host(sq).astype(np.float64, copy=False)
        else:
            played = None
            sq, sq_host = self._row_norms(X)
        mass = self._admit(sq_host, r)
        if before is not None:
            before()
        self._response_mass = mass
        return AdmittedRows(sq, sq_host, played)

    def _admit(self, sq_host: np.ndarray, r) -> np.ndarray:
        """Refuse, before a step changes anything, rows of squared norms ``sq_host`` (host
        ``(B,)``, finite) with responses ``r`` (a float or host ``(B,)``, finite) that would take
        the state past the dtypes' range; else return the responses' mass after the step.

        Two sums grow with the stream and are checked per member: ``tr X^T X`` (the widths' floor,
        a sketch's Gram) within the working dtype's range, and ``m = sum_s |r_s| ||x_s||``, which
        bounds ``||b||`` (``b = sum_s r_s x_s``), with ``m / reg`` within the core dtype's range:
        ``||theta_hat|| = ||A_hat^-1 b|| <= ||b|| / reg`` then stays finite. A refused row leaves
        the estimator as it was (nothing else has to be reset). The B sums are Python floats, whose
        arithmetic overflows to inf without numpy's warning (and costs less than numpy calls on
        arrays of one member)."""
        sq_list = sq_host.tolist()
        r_list = [r] * len(sq_list) if isinstance(r, float) else r.tolist()
        traces = [t + s for t, s in zip(self.trace.tolist(), sq_list)]
        masses = [
            m + abs(ri) * math.sqrt(s)
            for m, ri, s in zip(self._response_mass.tolist(), r_list, sq_list)
        ]
        thetas = [m / reg for m, reg in zip(masses, self._reg_host().tolist())]
        if max(traces) <= self._max_norm_sq and max(thetas) <= self._max_core:
            return np.array(masses)
        trace, mass, theta = np.array(traces), np.array(masses), np.array(thetas)
        i = int(np.argmax(np.maximum(trace / self._max_norm_sq, theta / self._max_core)))
        member = "" if self.members.unbatched else f"member {i}: "
        if not trace[i] <= self._max_norm_sq:
            fix = "" if self.dtype == torch.float64 else " or use dtype=torch.float64"
            raise ValueError(
                f"{member}the rows' squared norms would sum past {self.dtype}'s range (tr X^T X = "
                f"{self.trace[i]:.3g} before a row of squared norm {sq_host[i]:.3g}); rescale the "
                f"features{fix}. The row was not added"
            )
        ri = float(r if isinstance(r, float) else r[i])
        raise ValueError(
            f"{member}reward {ri:.3g} on a row of norm {math.sqrt(sq_host[i]):.3g} would take "
            f"b = sum_s r_s x_s past what theta_hat = A_hat^-1 b can hold in {self.cdtype} "
            f"(sum_s |r_s| ||x_s|| = {mass[i]:.3g} against lam = {self._reg_host()[i]:.3g}); "
            "rescale the rewards (or the features). The row was not added"
        )

    def _fresh(self, terms: ScoreTerms | None, actions) -> bool:
        """Whether ``terms`` are this round's scoring of the arms ``actions`` index, with a
        projection to reuse (a rule that scores without one, Thompson sampling, leaves ``proj``
        and ``parts`` None)."""
        return (
            terms is not None
            and actions is not None
            and terms.version == self.n_rows
            and (terms.proj is not None or terms.parts is not None)
        )

    def _row_norms(self, X):
        """``||x||^2`` per row (core ``(B,)`` and host float64), or a ``ValueError`` (state
        untouched) when it overflows the working dtype."""
        with np.errstate(over="ignore"):  # an overflowing norm is refused below, with its cause
            sq = self.xp.norm_sq(X, self.cdtype)
        sq_host = self.xp.host(sq).astype(np.float64, copy=False)
        # the largest is NaN when some entry is NaN, inf when one is infinite or the sum overflows
        if not max(sq_host.tolist()) <= self._max_norm_sq:
            if not self.xp.all_finite(X):
                raise ValueError("x contains NaN or infinite entries")
            raise ValueError(self._too_large("a row's", X))
        return sq, sq_host

    # -- public API (unbatched shapes when batch_size is None) ---------------------------------
    @property
    def single(self) -> bool:
        """Whether this is one estimator with unbatched public shapes (``batch_size=None``)."""
        return self.members.unbatched

    def _out(self, a) -> torch.Tensor:
        return self.members.out(self.xp.to_torch(a))

    def _host_out(self, a):
        return self.members.host(a)

    def _rows_in(self, x, name: str = "x", finite: bool = True):
        """``x`` as a validated backend array ``(B, d)`` in the working dtype (``finite=False``: the
        caller checks the entries, as :meth:`_row_norms` does through the norms)."""
        xp = self.xp
        try:
            X = xp.asarray(x, self.dtype)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be numeric, got {type(x).__name__}") from exc
        if X.shape != self._row_shape:  # (a torch.Size compares equal to the tuple)
            raise ValueError(f"{name} must have shape {self._row_shape}, got {tuple(X.shape)}")
        if finite and not xp.all_finite(X):
            raise ValueError(f"{name} contains NaN or infinite entries")
        return self.members.take(X)

    def _arms_in(self, arms):
        """``arms`` as a validated backend array ``(B, K, d)`` in the working dtype."""
        xp = self.xp
        A = xp.asarray(arms, self.dtype)
        want = self.members.shape("K", self.d)
        if (
            A.ndim != len(want)
            or A.shape[-1] != self.d
            or (A.ndim == 3 and A.shape[0] != self.batch_size)
        ):
            raise ValueError(
                f"arms must have shape ({', '.join(map(str, want))}), got {tuple(A.shape)}"
            )
        if not xp.all_finite(A):
            raise ValueError("arms contain NaN or infinite entries")
        return self.members.take(A)

    def update(self, x, r=None) -> None:
        """Add one row per member (``(d,)`` unbatched) with response ``r`` (default 0). Validates
        before touching any state."""
        X = self._rows_in(x, finite=False)  # (step checks the entries through the rows' norms)
        if r is None:
            r = self._no_response
        else:
            arr = np.asarray(
                r.detach().cpu() if isinstance(r, torch.Tensor) else r, dtype=np.float64
            ).reshape(-1)
            if arr.shape != (self.batch_size,) or not np.isfinite(arr).all():
                raise ValueError(f"r must be {self.batch_size} finite response(s), got {r!r}")
            r = self.members.host(arr)  # a float for one estimator, (B,) for a batch
        self.step(X, r)
        warn_if_beyond_dtype(self)
        warn_if_updates_inexact(self)

    def quad_inv(self, arms) -> torch.Tensor:
        """``x^T A_hat^-1 x`` for each row of ``arms``: ``(K, d) -> (K,)`` (batched
        ``(B, K, d) -> (B, K)``), in the working dtype."""
        with np.errstate(over="ignore"):  # (an overflowing norm is refused, with its cause)
            quad = self.quad_all(self._arms_in(arms))
        return self._out(self.xp.astype(quad, self.dtype))

    def solve(self, v) -> torch.Tensor:
        """``A_hat^-1 v``: ``(d,) -> (d,)`` (batched ``(B, d) -> (B, d)``), in the working dtype."""
        V = self.xp.astype(self._rows_in(v, name="v"), self.cdtype)
        return self._out(self.xp.astype(self.solve_all(V), self.dtype))

    def theta(self) -> torch.Tensor:
        """``A_hat_i^-1 b_i``: ``(d,)`` (batched ``(B, d)``), in the working dtype."""
        return self._out(self.xp.astype(self.theta_all(), self.dtype))

    @property
    def b(self) -> torch.Tensor:
        """``sum_s r_s x_s``: ``(d,)`` (batched ``(B, d)``), in the core dtype."""
        return self._out(self.b_all())

    def covariance(self) -> torch.Tensor:
        """The dense ``d x d`` approximation of ``X^T X`` (without ``reg``); diagnostics only."""
        return self._out(self.xp.astype(self.covariance_all(), self.dtype))

    def draw(self, z) -> torch.Tensor:
        """``F z`` for standard normal ``z``, with ``F F^T = A_hat^-1``: ``(n, d) -> (n, d)``
        (batched ``(B, n, d) -> (B, n, d)``), in the working dtype. Fed ``z ~ N(0, I_d)``, the rows
        are draws of ``N(0, A_hat^-1)`` (Thompson sampling: ``theta_hat + v F z``); which factor
        ``F`` each estimator applies is on its :meth:`draw_all`. Validated first; ``A_hat`` is
        unchanged (a sketch nobody queried yet gives its raw rows their coordinates; the exact
        estimator starts keeping its square-root factor).

        >>> import torch
        >>> from agents.sketches import FrequentDirections
        >>> fd = FrequentDirections(3, sketch_size=2, reg=4.0)
        >>> fd.draw(torch.eye(3, dtype=torch.float64))   # nothing seen: F = I / sqrt(4)
        tensor([[0.5000, 0.0000, 0.0000],
                [0.0000, 0.5000, 0.0000],
                [0.0000, 0.0000, 0.5000]], dtype=torch.float64)
        """
        xp = self.xp
        try:
            Z = xp.asarray(z, self.cdtype)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"z must be numeric, got {type(z).__name__}") from exc
        want = self.members.shape("n", self.d)
        if (
            Z.ndim != len(want)
            or Z.shape[-1] != self.d
            or (Z.ndim == 3 and Z.shape[0] != self.batch_size)
        ):
            raise ValueError(
                f"z must have shape ({', '.join(map(str, want))}), got {tuple(Z.shape)}"
            )
        if not xp.all_finite(Z):
            raise ValueError("z contains NaN or infinite entries")
        return self._out(xp.astype(self.draw_all(self.members.take(Z)), self.dtype))

    def logdet_increment(self, x) -> torch.Tensor:
        """``log det(A_hat + x x^T) - log det(A_hat)`` = ``log(1 + ||x||^2_{A_hat^-1})``."""
        with np.errstate(over="ignore"):  # (an overflowing norm is refused, with its cause)
            q = self.quad_all(self._rows_in(x)[:, None, :])[:, 0]
        return self._out(self.xp.astype(self.xp.log1p(q), self.dtype))

    def logdet_increments(self, X, terms: ScoreTerms | None = None, actions=None):
        """``log(1 + ||x_i||^2_{A_i^-1})`` per member (host float64 ``(B,)``), reusing the scored
        widths."""
        if self._fresh(terms, actions):
            q = self._pick(terms.quad, actions)
        else:
            q = self.quad_all(X[:, None, :])[:, 0]
        return np.log1p(self.xp.host(q).astype(np.float64))

    @property
    def sketch_size(self):
        """Rows of sketch held now (``d`` for the exact estimator); an array ``(B,)`` when
        batched."""
        return self.members.host(self.sketch_sizes())

    def memory_bytes(self) -> int:
        """Bytes held by the estimator's arrays (one member's formula when unbatched; all members,
        padding included, when batched)."""
        return int(self.member_memory_bytes()[0]) if self.members.unbatched else self._held_bytes()
