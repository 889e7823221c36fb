"""Frequent Directions (Liberty 2013; Ghashami et al. 2016; Wen et al. (2025), Alg. 2 and Remark 1).

FD streams rows x_1, x_2, ... in R^d into a sketch ``S`` of at most ``2 l`` rows (fast) or ``l``
rows (textbook) with

    0  <=  X^T X - S^T S  <=  total_shrinkage * I                    (PSD order) total_shrinkage  <=
    min_{0 <= k < l} ||X - X_[k]||_F^2 / (l - k)     (Wen et al. (2025), eq. 1, Lemma 1)

and serves ``A_hat = rho I + S^T S`` (``rho = reg``; RFD adds its ``alpha``) through the basis state
of :mod:`agents.sketches.core`, never forming a d x d matrix:

    x^T A_hat^-1 x = ||x - V^T V x||^2 / rho + (V x)^T (M + rho I)^-1 (V x),    S^T S = V^T M V.

One implementation with a leading batch dimension (``batch_size=B``; ``None`` = one sketch).

Two variants (``fast=``):

* ``fast=True`` (default; Wen et al. (2025), Remark 1 / App. B.2; Yang et al. (2025), Sec. 3.2):
  rows are appended until ``2 l`` are held, then ONE shrink by ``delta = s_l^2`` (the l-th
  largest squared singular value of the held rows) keeps at most ``l - 1``. One O(R^2 (l + R))
  SVD and one ``l x R x d`` rotation every >= l + 1 rows: O(d l) amortised.
* ``fast=False``: the textbook Alg. 2, a shrink after every row with an ``l``-row sketch.

Implementation choices (the papers leave them open):

* **The shrink** (:func:`agents.sketches.core.fd_shrink`,
  :meth:`agents.sketches.core.SketchCore.shrink`) is the SVD step of Alg. 2 lines 4-6 on the rows'
  coordinates in the orthonormal basis of their span (``N x R`` numbers): the same singular values
  and right singular vectors as the SVD of the ``N x d`` rows, at O(N R^2) cost. New rows
  ``diag(sqrt(s^2 - delta)) W^T``: weights in [0, 1], so ``S_new^T S_new <= S^T S`` (FD never
  over-estimates) survives rounding.
* **The rank cut** (:func:`agents.sketches.core.fd_shrink`) follows from FD's analysis and the
  dtype's rounding: a singular value below the rounding of the coordinates cannot be told from 0
  (FD of size l is exact on rank < l: shrink value 0), and a kept direction below the rounding
  of ``s_i^2 - s_l^2`` is a tie with ``s_l``, dropped; the mass left unaccounted is at the
  rounding level of the rows. So FD is exact (SOFUL == OFUL) for ``sketch_size > d``, and not for
  ``sketch_size = d`` (it keeps ``l - 1`` directions).
* **Buffers sized by what can be used.** The basis never holds more than ``min(cap, d)`` vectors,
  and more than ``basis`` rows in ``d`` dimensions are redundant: past ``basis + slack`` rows
  (:data:`COMPRESS_SLACK`: a quarter of the basis, so that one QR serves many rows) the rows are
  replaced by their ``R x R`` QR factor (the same ``S^T S``;
  :meth:`~agents.sketches.core.SketchCore.compress`), while the shrinks still happen at FD's own row
  counts. ``SOFUL(sketch_size=5000)`` at ``d = 12`` holds ``12`` basis vectors and ``15``
  coordinate rows of 12 numbers.
* **A sketch nobody queries** (rows without responses and no scoring, e.g. matrix approximation)
  keeps its rows themselves until its first query, response or full buffer, and shrinks them from
  their own ``n x n`` Gram, Liberty's and Ghashami et al.'s buffer algorithm
  (:meth:`~agents.sketches.core.SketchCore.shrink_raw`): the row stored, no product, and one
  ``2 l x 2 l`` eigendecomposition a shrink. Then the basis state is built (one row append per raw
  row, :meth:`~agents.sketches.core.SketchCore.settle`) and kept from then on; both routes shrink at
  the same rows by the same values.
* Zero rows carry no information and are skipped.

Example:

>>> import torch
>>> fd = FrequentDirections(d=4, sketch_size=3, fast=False, dtype=torch.float64)
>>> for x in torch.eye(4, dtype=torch.float64):
...     fd.update(x)
>>> fd.total_shrinkage                     # rank 4 >= l = 3: something was discarded
1.0
>>> float(fd.quad_inv(torch.eye(4, dtype=torch.float64)).max()) <= 1.0
True
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from .._torch import as_vector
from .._validate import Interval, Options, check_value, per_member
from .base import CovarianceEstimator, ScoreTerms
from .core import SketchCore, rounding, shrink_groups

__all__ = ["FrequentDirections", "check_sketch_size"]


#: The rules of FD's arguments (checked by agents._validate.check_value, which writes the messages)
SKETCH_SIZE_RULE = [Interval(numbers.Integral, 1, None, hint="the number l of sketch rows")]
FAST_RULE = [Options((True, False), hint="True: the 2l-row buffer, False: textbook FD")]


def _check_l(name: str, sketch_size) -> int:
    return check_value(name, sketch_size, SKETCH_SIZE_RULE)


def check_sketch_size(sketch_size, fast, batch_size: int | None = None):
    """Validate FD's ``sketch_size`` and ``fast`` (before any state exists). ``sketch_size`` may
    give one value per member when ``batch_size`` is set (see :func:`agents._validate.per_member`):
    returns the int, or an int array ``(B,)`` when the members' sizes differ."""
    check_value("fast", fast, FAST_RULE)
    return per_member("sketch_size", sketch_size, batch_size, _check_l)


def _listed(value):
    """A per-member array as a list (for repr), anything else as is."""
    return value.tolist() if np.ndim(value) else value


#: Rows a full basis of ``R`` vectors takes beyond ``R`` before its rows are compressed to their
#: ``R x R`` QR factor, as a share of ``R``. The QR of ``(R + s) x R`` coordinates costs
#: ``~(4/3 R + 2 s) R^2`` and frees ``s`` rows: with ``s = R / 4`` that is ``~7 R^2`` a freed row,
#: a few of the append's own ``O(d R + R^2)`` products run as one blocked factorization, against
#: ``(4/3) R^3`` a row when every row past ``R + 1`` triggers one. The price is ``s x R`` more
#: coordinates, held only where ``2 l > d`` (a basis of ``d`` vectors: the sketch is larger than
#: OFUL's state anyway).
COMPRESS_SLACK = 0.25


def _caps(d: int, l, fast: bool):
    """FD's buffer (rows before a shrink: ``2 l`` fast, ``l`` textbook) and the storage it needs:
    ``basis = min(buffer, d)`` vectors and ``rows = min(buffer, basis + slack)`` coordinate rows,
    ``slack = max(1, ceil(COMPRESS_SLACK * basis))`` (:data:`COMPRESS_SLACK`)."""
    buffer = 2 * np.asarray(l) if fast else np.asarray(l)
    basis = np.minimum(buffer, d)
    slack = np.maximum(1, np.ceil(COMPRESS_SLACK * basis).astype(np.int64))
    return buffer, np.minimum(buffer, basis + slack), basis


class FrequentDirections(CovarianceEstimator):
    """Frequent Directions sketch of ``X^T X`` with queries of ``(rho I + S^T S)^-1``.

    Args:
        d: dimension of the rows.
        sketch_size: ``l >= 1``; FD keeps at most ``l - 1`` directions after a shrink and its
            error is at most ``min_k ||X - X_[k]||_F^2 / (l - k)``. Batched, B values give member i
            the size ``l_i``: storage is padded to the largest, and member i shrinks when its own
            ``2 l_i`` (``l_i``) rows are held, exactly as the single sketch of size ``l_i``.
        reg: ridge lambda > 0 added to the estimate (``A_hat = reg I + S^T S``); batched, one value
            or B values.
        fast: ``True`` for the 2l-row buffer (one shrink every ~l rows, O(d l) amortised),
            ``False`` for the textbook one-shrink-per-row Alg. 2.
        device, dtype: where the state lives (float64 default on CPU).
        batch_size: ``None`` for one sketch (unbatched shapes), or B independent sketches.

    Attributes (floats/lists for one sketch, arrays ``(B,)`` / lists of lists when batched):
        total_shrinkage: sum of the shrink values applied so far (Wen et al. (2025)'s sigma-bar):
            ``0 <= X^T X - S^T S <= total_shrinkage * I``.
        n_reductions: number of shrinks so far.
        shrinkages: the shrink value of each shrink, in order.
        last_shrinkage: shrink value of the latest shrink (0.0 before any).
        rows_in_use: rows of ``S`` held now.
    """

    robust = False

    def __init__(
        self,
        d: int,
        sketch_size: int,
        *,
        reg: float = 1.0,
        fast: bool = True,
        device=None,
        dtype=None,
        batch_size: int | None = None,
    ):
        l = check_sketch_size(sketch_size, fast, None if batch_size is None else int(batch_size))
        super().__init__(d, reg=reg, device=device, dtype=dtype, batch_size=batch_size)
        self._l = l  # an int, or (members' sizes differing) an int array (B,)
        self.fast = fast
        B = self.batch_size
        self._ls = np.broadcast_to(np.asarray(l, dtype=np.int64), (B,)).copy()
        self._caps, self._rows_caps, self._basis_caps = _caps(self.d, self._ls, fast)
        self.core = SketchCore(
            self.xp,
            B,
            self.d,
            self.dtype,
            self.cdtype,
            int(self._rows_caps.max()),
            int(self._basis_caps.max()),
            self._reg_host(),
        )
        self._member_bytes = SketchCore.layout_bytes(
            self.d, self._rows_caps, self._basis_caps, self.dtype.itemsize, self.cdtype.itemsize
        ).astype(np.int64)
        # rows each member's FD buffer takes before it is full (a shrink when it reaches 0)
        self._room = self._caps.copy()
        # the raw phase (rows kept as they are, SketchCore.append_raw) needs every buffer to fill at
        # once
        self._raw = bool((self._ls == self._ls[0]).all())
        self._members = np.arange(B)
        self._shrink = np.zeros(B)
        self._n_red = np.zeros(B, dtype=np.int64)
        self._shrinkages: list[list[float]] = [[] for _ in range(B)]

    @classmethod
    def peak_member_bytes(
        cls,
        d: int,
        sketch_size: int,
        fast: bool = True,
        dtype: torch.dtype = torch.float64,
        core_dtype: torch.dtype = torch.float64,
    ) -> int:
        """Bytes one member holds at its peak (allocated once, at construction), without building
        anything: the basis ``min(cap, d) x d`` in ``dtype`` and, in ``core_dtype``, the coordinate
        rows, the core inverse and the split of ``b``
        (:meth:`agents.sketches.core.SketchCore.layout_bytes`), ``cap = 2 l`` fast, ``l`` textbook.
        :meth:`member_memory_bytes` reports the same."""
        _, rows, basis = _caps(d, int(sketch_size), fast)
        es = dtype.itemsize
        ec = core_dtype.itemsize
        return int(SketchCore.layout_bytes(d, int(rows), int(basis), es, ec))

    # -- byte estimate, asked by the agents before building one (agents.estimator_agent) ------
    @classmethod
    def estimate_member_bytes(
        cls,
        d: int,
        sketch_size,
        *,
        fast: bool = True,
        n_arms: int = 1,
        initial: bool = False,
        dtype: torch.dtype = torch.float64,
        core_dtype: torch.dtype = torch.float64,
    ) -> int:
        """:meth:`peak_member_bytes` for the largest of the members' ``sketch_size`` (one value, or
        one per member: the state is padded to the largest). Allocated whole at construction, so the
        first allocation is the peak (``n_arms`` and ``initial`` change nothing)."""
        return cls.peak_member_bytes(d, int(np.max(sketch_size)), fast, dtype, core_dtype)

    # -- end of the byte estimate --------------------------------------------------------------

    # -- per-member scalars ------------------------------------------------------------------------
    @property
    def rho_all(self) -> np.ndarray:
        """``reg + alpha`` per member: the ridge of ``A_hat`` (``reg`` for FD)."""
        return self.core.c.copy()

    @property
    def _alpha(self) -> np.ndarray:
        """RFD's added-back mass per member (0 for FD; the core's, read only)."""
        return self.core.alpha

    @property
    def rho(self):
        """``reg`` for FD, ``reg + alpha`` for RFD (per member when batched)."""
        return self._host_out(self.rho_all)

    def _alpha_total(self):
        return self._alpha

    @property
    def total_shrinkage(self):
        return self._host_out(self._shrink)

    @property
    def n_reductions(self):
        return self._host_out(self._n_red)

    @property
    def shrinkages(self):
        return self.members.out(self._shrinkages)

    @property
    def last_shrinkage(self):
        return self._host_out([s[-1] if s else 0.0 for s in self._shrinkages])

    @property
    def rows_in_use(self):
        """FD's rows in use, the count its buffer fills by (at most ``2 l - 1`` fast, ``l - 1``
        textbook, between rows): the rows held, or as many when a basis of ``d`` vectors lets fewer
        stand for them (their QR factor)."""
        held = self.core.n_raw if self._raw else self._caps - self._room
        return self._host_out(np.broadcast_to(held, (self.batch_size,)))

    @property
    def capacity(self) -> int:
        """Rows FD buffers before a shrink (``2l`` fast, ``l`` textbook; the largest member's when
        batched)."""
        return int(self._caps.max())

    # -- single-sketch views (diagnostics) ---------------------------------------------------------
    def _need_single(self, what):
        self.members.require_unbatched(what)

    def member_rows(self, i: int = 0) -> torch.Tensor:
        """Member ``i``'s sketch rows ``S = C V`` ``(rows, d)``, in the working dtype (a copy)."""
        return self.xp.to_torch(self.xp.astype(self.core.rows(i), self.dtype))

    @property
    def S(self) -> torch.Tensor:
        """The sketch rows now, shape ``(rows_in_use, d)`` (a copy, in the working dtype)."""
        self._need_single("S")
        return self.member_rows(0)

    @property
    def gram(self) -> torch.Tensor:
        """``S S^T`` (``(m, m)``, working dtype)."""
        self._need_single("gram")
        S = self.xp.to_torch(self.core.rows(0))
        return (S @ S.mT).to(self.dtype)

    @property
    def chol(self) -> torch.Tensor:
        """Lower Cholesky factor of ``S S^T + rho I``."""
        self._need_single("chol")
        G = self.gram.to(torch.float64)
        return torch.linalg.cholesky(
            G + float(self.rho_all[0]) * torch.eye(G.shape[0], dtype=G.dtype)
        ).to(self.dtype)

    @property
    def is_orthogonal(self) -> bool:
        """True when the rows of ``S`` are mutually orthogonal to the last bit (:attr:`gram`
        diagonal)."""
        self._need_single("is_orthogonal")
        G = self.gram
        return bool(torch.equal(G, torch.diag(torch.diagonal(G))))

    @property
    def M(self) -> torch.Tensor:
        """``(S S^T + rho I)^-1`` (the paper's M, m x m; diagonal when :attr:`is_orthogonal`).
        Diagnostics."""
        self._need_single("M")
        G = self.gram.to(torch.float64)
        return torch.linalg.inv(
            G + float(self.rho_all[0]) * torch.eye(G.shape[0], dtype=G.dtype)
        ).to(self.dtype)

    # -- streaming ---------------------------------------------------------------------------------
    def step(self, X, r, terms: ScoreTerms | None = None, actions=None, before=None) -> None:
        """Add the rows (see :meth:`CovarianceEstimator.step`): zero rows are skipped (they carry no
        information); a member whose buffer the row fills shrinks (Wen et al. (2025), Alg. 2)."""
        rows = self._admit_rows(X, r, terms, actions, before)
        sq, sq_host = rows.sq, rows.sq_host
        p = hp = php = None
        if rows.played is not None:
            p, hp, php = self._played_coordinates(terms, rows.played)
        self.trace = self.trace + sq_host
        every = min(sq_host.tolist()) > 0.0
        answered = r != 0.0 if isinstance(r, float) else r.any()
        if self._raw and every and not answered and self.core.n_raw < self.core.basis_cap:
            self._append_raw(X)
        elif every or max(sq_host.tolist()) > 0.0:
            self._append(X, sq, sq_host, r, p, hp, php, every)
        self.n_rows += 1

    def _append_raw(self, X) -> None:
        """The raw phase (no query, no response, every member's row nonzero, one sketch size): every
        member keeps its row as it is, and every buffer fills at the same row."""
        core = self.core
        core.append_raw(X)
        if core.n_raw >= self._caps[0] or not self.fast:
            plan = core.shrink_raw(int(self._ls[0]), add_back=self.robust)
            self._record(self._members, plan)
            if (
                plan.kept.min() != plan.kept.max()
            ):  # (the members' ranks differ: their buffers part)
                self._raw = False
                core.settle()

    def _append(self, X, sq, sq_host: np.ndarray, r, p, hp, php, every: bool) -> None:
        """The row append to the basis state (:meth:`SketchCore.append`) of the members whose row is
        not zero (every member when ``every``), and the shrink of those whose buffer it fills (a
        member without a row was below its buffer's size)."""
        core = self.core
        live = None if every else sq_host > 0.0
        self._leave_raw()
        self._compress_crowded(live)
        ex = core.expand(X, sq, sq_host, p, hp, php)
        core.append(ex, r if isinstance(r, float) else self.xp.asarray(r, self.cdtype), live)
        self._room -= 1 if live is None else live
        if self.fast and min(self._room.tolist()) <= 0:
            self._reduce(np.flatnonzero(self._room <= 0))
        elif not self.fast:
            self._reduce(self._members if live is None else np.flatnonzero(live))

    def _leave_raw(self) -> None:
        """End the raw phase (a query, a response, a zero row or a full buffer came): the raw rows
        get their coordinates (:meth:`SketchCore.settle`), and every later row goes to the basis
        state."""
        if self._raw:
            self._raw = False
            self._room = self._caps - self.core.n_raw
            self.core.settle()

    def _compress_crowded(self, live: np.ndarray | None) -> None:
        """Members (where ``live``; all when None) whose coordinate rows are full (a basis of ``R``
        vectors needs at most ``R`` rows; ``R + slack`` are kept, :data:`COMPRESS_SLACK`) replace
        them by their ``R x R`` QR factor: the same ``S^T S`` in fewer rows."""
        core = self.core
        if max(core.N.tolist()) < core.rows_cap:
            return
        full = core.N >= core.rows_cap
        crowded = np.nonzero(full if live is None else full & live)[0]
        if crowded.size:
            core.compress(crowded, np.zeros(crowded.size, dtype=np.int64))

    def _reduce(self, idx: np.ndarray) -> None:
        """FD's shrink (Wen et al. (2025), Alg. 2 lines 4-7; RFD: Alg. 3 line 5 adds the shrink
        value back) of the members ``idx``, grouped by the rows they hold and their sketch size."""
        core = self.core
        for group, l in shrink_groups(idx, core.N[idx], self._ls[idx]):
            zero = np.zeros(group.size, dtype=np.int64)
            self._record(group, core.shrink(group, zero, l, zero, add_back=self.robust))

    def _record(self, group: np.ndarray, plan) -> None:
        """Count the shrink ``plan`` of the members ``group``: their rows, shrinkage and
        ``tr S^T S``."""
        self._room[group] = self._caps[group] - plan.kept
        self._shrink[group] += plan.delta
        self._n_red[group] += 1
        self.trace[group] = plan.mass
        for i, v in zip(group.tolist(), plan.delta.tolist()):
            self._shrinkages[i].append(v)

    # -- look-ahead (one sketch) -------------------------------------------------------------------
    def _shrink_value(self, x) -> float:
        """FD's shrink value of the held rows (with ``x`` appended when given); the sketch unchanged
        (its raw rows, if any, get their coordinates)."""
        core, xp = self.core, self.xp
        self._leave_raw()
        if core.N[0] == 0 and x is None:
            return 0.0
        ex = None
        if x is not None:
            X = xp.asarray(x, self.dtype)[None]
            sq = xp.norm_sq(X, self.cdtype)
            ex = core.expand(X, sq, xp.host(sq))
        zero = np.zeros(1, dtype=np.int64)
        return float(core.shrink_value(zero, zero, int(self._ls[0]), ex)[0])

    def shrinkage_if_added(self, x) -> float:
        """The shrink value that ``update(x)`` would apply now (0.0 if no shrink would happen or it
        would discard nothing); the sketch is unchanged. In the fast variant a shrink happens only
        when ``x`` fills the 2l-row buffer (Dyadic Block Sketching's ``willExcessSketch`` test)."""
        self._need_single("shrinkage_if_added")
        x = as_vector(x, self.device, self.dtype, self.d)
        if not float(x @ x) > 0.0:  # the test update() uses to skip zero rows
            return 0.0
        if self.fast and int(self.rows_in_use) + 1 < self._caps[0]:
            return 0.0
        return self._shrink_value(x)

    def pending_shrinkage(self, x=None) -> float:
        """The shrink value a shrink of the current sketch (with ``x`` appended, if given) would
        apply now, whether or not the buffer is full; 0.0 while the rank is < l."""
        self._need_single("pending_shrinkage")
        if x is not None:
            x = as_vector(x, self.device, self.dtype, self.d)
            if not float(x @ x) > 0.0:
                x = None
        return self._shrink_value(x)

    # -- queries -----------------------------------------------------------------------------------
    def score_terms(self, arms) -> ScoreTerms:
        xp, core = self.xp, self.core
        self._leave_raw()
        arms_c, sq = self._arm_norms(arms)
        P = core.project(arms)
        mean, quad, PH, pHp = core.score(arms, arms_c, sq, P)
        return ScoreTerms(
            arms, sq, mean, xp.maximum(quad, self._floor(sq)), P, self.n_rows, hp=PH, php=pHp
        )

    def quad_all(self, arms):
        self._leave_raw()
        arms_c, sq = self._arm_norms(arms)
        return self.xp.maximum(
            self.core.score(arms, arms_c, sq, self.core.project(arms))[1], self._floor(sq)
        )

    def solve_all(self, V):
        self._leave_raw()
        return self.core.solve(V)

    def theta_all(self):
        self._leave_raw()
        return self.core.theta()

    def b_all(self):
        return self.core.b()

    def draw_all(self, Z):
        """``F z = (z - V^T V z) / sqrt(c) + V^T L V z`` with ``H = L L^T`` (lower Cholesky factor
        of the core inverse; :meth:`agents.sketches.core.SketchCore.draw`)."""
        self._leave_raw()
        return self.core.draw(Z)

    def sample_all(self, Z, scale):
        """:meth:`agents.sketches.core.SketchCore.sample` (``theta_hat`` and the draw fused)."""
        self._leave_raw()
        return self.core.sample(Z, scale)

    def covariance_all(self):
        """``S^T S`` (plus ``alpha I`` for RFD), ``(B, d, d)``."""
        cov = self.core.covariance()
        if self.robust:
            cov = cov + self.xp.asarray(self._alpha, self.cdtype)[:, None, None] * self.xp.eye(
                self.d, self.cdtype
            )
        return cov

    def log_det_ratio_bound(self):
        """An upper bound on ``ln det(reg I + X^T X) - d ln(reg)`` for the rows seen so far.

        FD: ``X^T X <= S^T S + sigma_bar I`` gives
        ``d ln(1 + sigma_bar/reg) + sum_j ln(1 + s_j^2/(reg + sigma_bar))`` (the first step of Wen
        et al. (2025), Lemma 6); the sum is bounded by the smaller of
        ``sum_j ln(1 + s_j^2/reg) = ln det(M + reg I) - R ln reg`` and the trace/AM-GM bound
        ``R ln(1 + ||S||_F^2/(R (reg + sigma_bar)))``. Exact when nothing was discarded. RFD
        (overridden): ``ln det(A_hat) - d ln(reg)`` exactly (``A <= A_hat``).

        ``R`` in the AM-GM bound counts the eigenvalues of ``M = S^T S`` above the rounding of a
        zero one (:func:`~agents.sketches.core.rounding`): a basis vector kept for a residual at
        rounding level carries a squared singular value at rounding level, adds nothing to the sum,
        and must not raise the bound (whether such a residual is kept can differ with the backend's
        rounding)."""
        self._leave_raw()
        core, xp = self.core, self.xp
        lam, sig = self._reg_host(), self._shrink
        m, exact = np.zeros(self.batch_size), np.zeros(self.batch_size)
        if core.width:  # one eigendecomposition of M serves both the count and the sum
            s2 = xp.maximum(xp.eigvalsh_desc(core.gram()), 0.0)
            noise = rounding(xp, core.eps_w, core.eps_c, int(core.N.max()) + core.width, s2)
            s2h = xp.host(s2).astype(np.float64, copy=False)
            m = (s2h > noise.zero_level()[:, None]).sum(axis=1).astype(np.float64)
            exact = np.log1p(s2h / lam[:, None]).sum(axis=1)
        out = self.d * np.log1p(sig / lam)
        trace = core.frob2()
        amgm = m * np.log1p(np.maximum(trace, 0.0) / (np.maximum(m, 1.0) * (lam + sig)))
        return self._host_out(out + np.where(m > 0, np.minimum(exact, amgm), 0.0))

    # -- introspection -----------------------------------------------------------------------------
    def sketch_sizes(self):
        """The sketch size ``l`` per member (FD's parameter; :attr:`rows_in_use` says the rows
        held)."""
        return self._ls.copy()

    def member_memory_bytes(self):
        """What each member's single sketch allocates (:meth:`peak_member_bytes`: its own sizes,
        fixed at construction; the loop reads it after every round)."""
        return self._member_bytes.copy()

    def _held_bytes(self):
        return self.core.held_bytes()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(d={self.d}, sketch_size={_listed(self._l)}, "
            f"reg={_listed(self.reg)}, fast={self.fast}, batch_size={self.members.given}, "
            f"rows_in_use={self.rows_in_use})"
        )
