"""B independent Dyadic Block Sketches as one tensor program (batched DBSLinUCB's estimator).

The batched twin of :class:`agents.sketches.dbs.DyadicBlockSketch` (seed 000 Alg. 1 / fast
Alg. 4): the same block rule (close the active block when ``BlockSize + ||x||^2 >= eps l0``
and willExcessSketch, with App. B.1's sentinel), the same dyadic sizes ``l0 2^i``, the same
block cap and switch to exact Sherman-Morrison updates, the same FD/RFD blocks -- with every
member free to close its blocks on its own rounds.

**How divergent block structures are batched.** The members' sketches differ in the number
of blocks, the active block's size, the rows held and whether they are already exact. All
of it is kept in one padded layout, so that every query is one batched op:

    S (B, R, d)   member i's rows [S~_i; S*_i] (frozen blocks, then the active block) in
                  slots [0, r_i); zero rows after.  R = the largest r_i so far (grown by doubling)
    G (B, R, R)   their Gram S S^T (the active block's part is its FD Gram)
    Linv (B, R, R)  inverse of the Cholesky factor of S S^T + c_i I on [0, r_i), identity on
                  the padding (bordered on every insert, as in :mod:`agents.batched.fd`)
    z (B, R)      S b, kept up to date
    A_inv (B, d, d)  (allocated when the first member reaches the block cap) exact members' A_hat^-1

``A_hat_i^-1 = (1/c_i)(I - S_i^T (S_i S_i^T + c_i I)^-1 S_i)`` (eq. 5) is evaluated as
``(||x||^2 - ||L_i^-1 S_i x||^2) / c_i`` with batched matrix products only: the zero rows and identity padding contribute
nothing, so the padded batch computes each member's own eq. 5 exactly. Closing a block moves
nothing (the active rows simply count as frozen from then on). Per-member bookkeeping (block
mass, rows received, sizes, shrinkage, RFD alpha, exact flag) lives in host arrays; the
decisions of Alg. 1 line 7 are taken for all members at once with masks.

Where a loop remains, and why: FD reductions and willExcessSketch look-aheads need an ``eigh``
of the active block's Gram, whose size differs between members at different block levels;
members are grouped by (rows, sketch size) and each group is one batched ``eigh`` (one group
in the common case). The combined factor is rebuilt by one batched Cholesky (and triangular
inverse) per group after a reduction (the unbatched sketch re-forms ``M`` by eq. 3 at the same moments).
The per-member Cholesky fallback (rounding made ``G + cI`` look indefinite) is a loop over
the failing members only.

Differences from the unbatched sketch, none of them in ``A_hat``: the combined matrix is held
as a Cholesky factor (bordered on every insert) instead of the explicit inverse ``M`` of
eq. 3/7 (its inverse factor, to be exact), and the padding costs up to B (R d + 2 R^2) memory (R the largest row count).
``member_memory_bytes`` reports what each unbatched sketch would hold.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._torch import tensor_bytes
from ..sketches.dbs import block_cap
from .base import BatchedEstimator

__all__ = ["BatchedDyadicBlockSketch"]


def _grow_capacity(cap: np.ndarray, r: np.ndarray, frozen: np.ndarray, active_cap: np.ndarray) -> np.ndarray:
    """The unbatched sketch's M-buffer growth (``DyadicBlockSketch._ensure_capacity``): when r rows
    no longer fit, room for the frozen rows plus the active block's full FD buffer."""
    return np.where(r > cap, np.maximum(r, frozen + active_cap), cap)


class BatchedDyadicBlockSketch(BatchedEstimator):
    """B Dyadic Block Sketches over FD or RFD blocks, with eq. 5 queries of ``A_hat_i^-1``.

    Args:
        batch_size: B.
        d: dimension of the rows.
        l0, eps, sketch, fast, sentinel: as :class:`agents.sketches.dbs.DyadicBlockSketch`
            (validated by the unbatched agent).
        reg: the ridge lambda.
        device, dtype: where the state lives.

    Per-member state (host arrays, one entry per member): ``exact`` (past the block cap),
    ``rows`` (sketch rows held), ``n_blocks``, ``active_sketch_size``, ``frobenius_mass``;
    properties ``total_shrinkage`` and ``alpha``.

    >>> import torch
    >>> X = torch.randn(2, 300, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    >>> X[1] *= 3.0                                   # member 1 closes its blocks sooner
    >>> dbs = BatchedDyadicBlockSketch(2, 40, 4, 2.0, reg=1.0, device=torch.device("cpu"), dtype=torch.float64)
    >>> for t in range(300):
    ...     dbs.update(X[:, t], torch.zeros(2, dtype=torch.float64))
    >>> dbs.block_cap, dbs.n_blocks.tolist(), dbs.exact.tolist()
    (3, [3, 3], [True, True])
    """

    def __init__(self, batch_size: int, d: int, l0: int, eps: float, *, sketch: str = "fd", reg: float,
                 fast: bool = True, sentinel: bool = True, device, dtype):
        super().__init__(batch_size, d, reg=reg, device=device, dtype=dtype)
        self.l0, self.eps, self.sketch = int(l0), float(eps), sketch
        self.robust = sketch == "rfd"
        self.fast, self.sentinel = bool(fast), bool(sentinel)
        self.threshold = self.eps * self.l0  # Alg. 1 line 7: BlockSize + ||x||^2 < eps * l0
        self.block_cap = block_cap(self.d, self.l0)
        self._eps = torch.finfo(dtype).eps
        self._kw = {"device": device, "dtype": dtype}
        B = self.batch_size
        ints = lambda: np.zeros(B, dtype=np.int64)  # noqa: E731
        floats = lambda: np.zeros(B, dtype=np.float64)  # noqa: E731
        self.rows, self.rows_in = ints(), ints()  # rows held: all / in frozen blocks
        self.m_act = ints()  # rows of the active block's sketch
        self.l_act = np.full(B, self.l0, dtype=np.int64)  # its sketch size l0 2^i
        self.act_rows, self.act_mass = ints(), floats()  # rows it received, its BlockSize
        self.act_shrink, self.act_alpha = floats(), floats()  # its FD shrinkage / RFD alpha
        self.n_frozen = ints()
        self.frozen_shrink, self.alpha_in, self.frozen_ls = floats(), floats(), floats()  # sums over frozen blocks
        self.exact = np.zeros(B, dtype=np.bool_)
        self.n_exact_rows = ints()
        self.frobenius_mass = floats()
        self._mcap = ints()  # capacity of the unbatched sketch's M buffer (memory accounting)
        self._R = 0
        self.S = torch.zeros(B, 0, self.d, **self._kw)
        self.G = torch.zeros(B, 0, 0, **self._kw)
        self.Linv = torch.zeros(B, 0, 0, **self._kw)
        self._z = torch.zeros(B, 0, **self._kw)  # S b over each member's rows, kept up to date
        self._cache = None  # projections of the last score_terms, for the next update
        self.A_inv: torch.Tensor | None = None
        if self.block_cap <= 1:  # Alg. 1 line 3 holds from the start: exact (OFUL) for every member
            self.exact[:] = True
            self.n_frozen[:] = 1
            self.A_inv = (torch.eye(self.d, **self._kw) / self.reg).expand(B, self.d, self.d).clone()

    # -- per-member scalars -----------------------------------------------------------------
    @property
    def cap_act(self) -> np.ndarray:
        """Rows the active block's FD buffer holds at most (2l fast, l textbook)."""
        return 2 * self.l_act if self.fast else self.l_act.copy()

    def c(self) -> np.ndarray:
        """The ridge of ``A_hat_i``: reg, plus every block's alpha for RFD (host float64 ``(B,)``)."""
        return self.reg + self.alpha_in + self.act_alpha

    def _c_tensor(self, idx=None) -> torch.Tensor:
        c = self.c() if idx is None else self.c()[idx]
        return torch.as_tensor(c, device=self.device).to(self.dtype)

    @property
    def total_shrinkage(self) -> np.ndarray:
        """``sum_i sigma_bar_i`` per member (``< 2 eps``, Theorem 1)."""
        return self.frozen_shrink + np.where(self.exact, 0.0, self.act_shrink)

    @property
    def alpha(self) -> np.ndarray:
        """Total RFD counter per member (0 for FD blocks)."""
        return self.c() - self.reg

    @property
    def n_blocks(self) -> np.ndarray:
        return self.n_frozen + (~self.exact)

    @property
    def active_sketch_size(self) -> np.ndarray:
        """``l_{B_t}`` per member (the last block's size in exact mode)."""
        return self.l_act.copy()

    def blocks_weighted_shrinkage(self) -> np.ndarray:
        """``sum_i l_i sigma_bar_i`` over each member's blocks (DBSLinUCB-RFD's theory radius)."""
        return self.frozen_ls + np.where(self.exact, 0.0, self.l_act * self.act_shrink)

    # -- storage ------------------------------------------------------------------------------
    def _ensure_rows(self, n: int) -> None:
        """Grow the padded row capacity R to at least ``n`` (amortised doubling)."""
        if n <= self._R:
            return
        R = max(n, 2 * self._R, 8)
        B, old = self.batch_size, self._R
        S = torch.zeros(B, R, self.d, **self._kw)
        G = torch.zeros(B, R, R, **self._kw)
        Linv = torch.eye(R, **self._kw).repeat(B, 1, 1)
        z = torch.zeros(B, R, **self._kw)
        S[:, :old], G[:, :old, :old], Linv[:, :old, :old], z[:, :old] = self.S, self.G, self.Linv, self._z
        self.S, self.G, self.Linv, self._z, self._R = S, G, Linv, z, R

    def _groups(self, idx: np.ndarray, *keys: np.ndarray):
        """Split member indices ``idx`` by the values of ``keys`` (one batched op per group)."""
        if idx.size == 0:
            return
        stacked = np.stack([k[idx] for k in keys], axis=1)
        values, inverse = np.unique(stacked, axis=0, return_inverse=True)
        for j, value in enumerate(values):
            yield idx[inverse.reshape(-1) == j], [int(v) for v in value]

    # -- streaming ----------------------------------------------------------------------------
    def update(self, X: torch.Tensor, r: torch.Tensor, actions: torch.Tensor | None = None) -> None:
        norm2 = (X * X).sum(dim=1).to(torch.float64).cpu().numpy()
        self.frobenius_mass += norm2
        cache, self._cache = self._cache, None
        if actions is None:
            cache = None
        ar = torch.arange(self.batch_size, device=self.device)
        if cache is not None and cache[0] is not None:  # S x = the played arm's row of arms S^T
            g = torch.zeros(self.batch_size, self._R, **self._kw)
            g[:, : cache[1]] = cache[0][ar, actions]
        else:
            g = torch.bmm(self.S, X.unsqueeze(2)).squeeze(2)  # (B, R): zero on the padding and for exact members
        self.b += r.unsqueeze(1) * X
        self._z += r.unsqueeze(1) * g  # S b for the new b, on the rows held before this one
        was_exact = self.exact.copy()
        # Alg. 1 line 7 for every sketched member at once (the look-ahead only where the mass test fails)
        need = ~was_exact & ~(self.act_mass + norm2 < self.threshold)
        close = need & self.sentinel & (self.act_rows > 0) & (self.act_rows < self.l_act)  # App. B.1's sentinel
        look = np.flatnonzero(need & ~close)
        if look.size:
            close[look] = self._shrinkage_if_added(look, X, norm2, g) > 0.0
        switch = np.zeros(self.batch_size, dtype=np.bool_)
        closing = np.flatnonzero(close)
        if closing.size:
            switch[self._close_active(closing)] = True
        inserting = np.flatnonzero(~was_exact & ~switch)
        if inserting.size:
            self._insert_active(inserting, X, norm2, g)
        exact_rows = np.flatnonzero(was_exact | switch)
        if exact_rows.size:
            Ax = None
            if cache is not None and cache[2] is not None and np.array_equal(cache[3], exact_rows):
                Ax = cache[2][torch.arange(exact_rows.size, device=self.device), actions[torch.as_tensor(exact_rows)]]
            self._sherman_morrison(exact_rows, X, Ax)
        self.n_exact_rows[was_exact] += 1
        self.n_rows += 1

    def _close_active(self, idx: np.ndarray) -> np.ndarray:
        """Alg. 1 lines 10-12: freeze the active blocks of ``idx`` (their rows stay where they
        are, now counted as frozen) and open blocks of twice the size; members reaching the cap
        switch to exact updates (returned)."""
        self.frozen_shrink[idx] += self.act_shrink[idx]
        self.alpha_in[idx] += self.act_alpha[idx]
        self.frozen_ls[idx] += self.l_act[idx] * self.act_shrink[idx]
        self.n_frozen[idx] += 1
        self.rows_in[idx] = self.rows[idx]
        self.l_act[idx] *= 2
        for arr in (self.m_act, self.act_rows):
            arr[idx] = 0
        for arr in (self.act_mass, self.act_shrink, self.act_alpha):
            arr[idx] = 0.0
        switching = idx[self.n_frozen[idx] >= self.block_cap - 1]
        if switching.size:
            self.n_frozen[switching] += 1  # the new block holds x alone, exactly (see the unbatched sketch)
            self._switch_to_exact(switching)
        return switching

    def _switch_to_exact(self, idx: np.ndarray) -> None:
        """Invariant 2 reached: ``A_hat^-1 = (I - W^T W) / c`` with ``W = L^-1 S`` (eq. 5), once."""
        if self.A_inv is None:
            self.A_inv = torch.zeros(self.batch_size, self.d, self.d, **self._kw)
        t = torch.as_tensor(idx, device=self.device)
        eye = torch.eye(self.d, **self._kw)
        if self._R:
            W = torch.bmm(self.Linv[t], self.S[t])  # (n, R, d)
            A = eye - torch.bmm(W.transpose(1, 2), W)
            self.S[t] = 0.0
            self.G[t] = 0.0
            self._z[t] = 0.0
            self.Linv[t] = torch.eye(self._R, **self._kw)
        else:
            A = eye.expand(idx.size, self.d, self.d).clone()
        self.A_inv[t] = A / self._c_tensor(idx).view(-1, 1, 1)
        self.exact[idx] = True
        for arr in (self.rows, self.rows_in, self.m_act, self._mcap):
            arr[idx] = 0

    def _insert_active(self, idx: np.ndarray, X: torch.Tensor, norm2: np.ndarray, g: torch.Tensor) -> None:
        """FD update of the active blocks of ``idx`` with their rows (Alg. 4 lines 11-19)."""
        self.act_mass[idx] += norm2[idx]
        self.act_rows[idx] += 1
        live = idx[norm2[idx] > 0.0]  # FD skips zero rows: A_hat unchanged
        if live.size == 0:
            return
        self._ensure_rows(int(self.rows[live].max()) + 1)
        if g.shape[1] < self._R:
            g = torch.nn.functional.pad(g, (0, self._R - g.shape[1]))
        self._append(live, X, g)
        self.m_act[live] += 1
        self.rows[live] += 1
        reducing = live[self.m_act[live] == self.cap_act[live]] if self.fast else live
        bordered = np.setdiff1d(live, reducing, assume_unique=True)
        self._mcap[bordered] = _grow_capacity(  # eq. 7 grows M
            self._mcap[bordered], self.rows[bordered], self.rows_in[bordered], self.cap_act[bordered]
        )
        for group, (m, l) in self._groups(reducing, self.m_act, self.l_act):
            self._reduce_active(group, m, l)

    def _append(self, idx: np.ndarray, X: torch.Tensor, g: torch.Tensor) -> None:
        """Border every factor with its member's new row (one batched triangular solve); written
        for the members ``idx`` only. ``c^2`` of the new diagonal is the Schur complement
        ``c (1 + x^T A_hat^-1 x) >= c`` (clamped at c against rounding, as eq. 7's xi)."""
        c = self._c_tensor()
        w = torch.bmm(self.Linv, g.unsqueeze(2)).squeeze(2)  # L^-1 S x
        xx = (X * X).sum(dim=1)
        diag = torch.sqrt(torch.maximum(xx + c - (w * w).sum(dim=1), c))
        new_row = -torch.bmm(w.unsqueeze(1), self.Linv).squeeze(1) / diag.unsqueeze(1)  # -(w^T L^-1)/s
        t = torch.as_tensor(idx, device=self.device)
        pos = torch.as_tensor(self.rows[idx], device=self.device)
        self.Linv[t, pos] = new_row[t]
        self.Linv[t, pos, pos] = 1.0 / diag[t]
        self.G[t, pos] = g[t]
        self.G[t, :, pos] = g[t]
        self.G[t, pos, pos] = xx[t]
        self.S[t, pos] = X[t]
        self._z[t, pos] = (X[t] * self.b[t]).sum(dim=1)

    def _active_block(self, t: torch.Tensor, off: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The active blocks' rows ``(n, m, d)`` and Gram ``(n, m, m)`` at per-member offsets."""
        A = off.unsqueeze(1) + torch.arange(m, device=self.device)
        rows = self.S[t.unsqueeze(1), A]
        gram = self.G[t.view(-1, 1, 1), A.unsqueeze(2), A.unsqueeze(1)]
        return rows, gram

    def _tol(self, m: int, top: torch.Tensor) -> torch.Tensor:
        """FD's rounding level of an m x m Gram (eigenvalues below it count as 0)."""
        return 2.0 * self._eps * (m + math.sqrt(self.d)) * torch.clamp(top, min=0.0)

    def _shrinkage_if_added(self, idx: np.ndarray, X: torch.Tensor, norm2: np.ndarray, g_all: torch.Tensor) -> np.ndarray:
        """willExcessSketch: the shrink value inserting x would apply to each active block now
        (FrequentDirections.shrinkage_if_added: 0 for a zero row, or while a fast buffer is not
        about to fill; else the l-th eigenvalue of the bordered Gram, rounding-level -> 0)."""
        out = np.zeros(idx.size)
        cand = norm2[idx] > 0.0
        if self.fast:
            cand &= self.m_act[idx] + 1 >= self.cap_act[idx]
        where = {int(i): j for j, i in enumerate(idx)}
        for group, (m, l) in self._groups(idx[cand], self.m_act, self.l_act):
            if m + 1 < l:
                continue  # fewer than l rows: FD discards nothing
            t = torch.as_tensor(group, device=self.device)
            off = torch.as_tensor(self.rows_in[group], device=self.device)
            _, gram = self._active_block(t, off, m)
            x = X[t]
            bordered = torch.zeros(group.size, m + 1, m + 1, **self._kw)
            bordered[:, :m, :m] = gram
            g = g_all[t.unsqueeze(1), off.unsqueeze(1) + torch.arange(m, device=self.device)]  # S* x
            bordered[:, m, :m] = g
            bordered[:, :m, m] = g
            bordered[:, m, m] = (x * x).sum(dim=1)
            evals = torch.linalg.eigvalsh(bordered).flip(-1)
            delta = evals[:, l - 1]
            delta = torch.where(delta <= self._tol(m + 1, evals[:, 0]), torch.zeros_like(delta), delta)
            for i, value in zip(group, delta.tolist()):
                out[where[int(i)]] = value
        return out

    def _reduce_active(self, idx: np.ndarray, m: int, l: int) -> None:
        """FD reduction (seed 000 Alg. 2 lines 4-7) of the active blocks of ``idx`` (all with m
        rows and sketch size l), then eq. 3: the combined factor rebuilt from the Gram."""
        t = torch.as_tensor(idx, device=self.device)
        n, R = idx.size, self._R
        off = torch.as_tensor(self.rows_in[idx], device=self.device)
        rows, gram = self._active_block(t, off, m)
        evals, evecs = torch.linalg.eigh(gram)
        evals, evecs = evals.flip(-1), evecs.flip(-1)
        tol = self._tol(m, evals[:, 0])
        if m < l:
            delta = torch.zeros_like(tol)
        else:
            delta = evals[:, l - 1]
            delta = torch.where(delta <= tol, torch.zeros_like(delta), delta)
        k = min(l - 1, m)
        keep = evals[:, :k] - delta.unsqueeze(1)
        kept_n = (keep > tol.unsqueeze(1)).sum(dim=1)
        kept = torch.arange(k, device=self.device).unsqueeze(0) < kept_n.unsqueeze(1)
        keep = torch.where(kept, keep, torch.zeros_like(keep))
        w = torch.where(kept, keep / evals[:, :k], torch.zeros_like(keep))
        coeff = (evecs[:, :, :k] * torch.sqrt(w).unsqueeze(1)).transpose(1, 2)  # (n, k, m): new S* = coeff @ S*
        new_rows = torch.bmm(coeff, rows)  # (n, k, d)
        # Frozen rows stay; the active block's rows are replaced, its Gram becomes diag(keep)
        # and its cross terms with the frozen rows are recomputed (eq. 3's off-diagonal blocks).
        frozen = torch.arange(R, device=self.device).unsqueeze(0) < off.unsqueeze(1)  # (n, R)
        S = self.S[t] * frozen.unsqueeze(2)
        Ak = off.unsqueeze(1) + torch.arange(k, device=self.device)
        ar = torch.arange(n, device=self.device).unsqueeze(1)
        S[ar, Ak] = new_rows
        z = self._z[t] * frozen
        z_act = self._z[t.unsqueeze(1), off.unsqueeze(1) + torch.arange(m, device=self.device)]
        z[ar, Ak] = torch.bmm(coeff, z_act.unsqueeze(2)).squeeze(2)  # S b follows S
        cross = torch.bmm(new_rows, S.transpose(1, 2)) * frozen.unsqueeze(1)  # (n, k, R)
        cross.scatter_(2, Ak.unsqueeze(2), keep.unsqueeze(2))
        G = self.G[t] * (frozen.unsqueeze(2) & frozen.unsqueeze(1))
        G[ar, Ak] = cross
        G[ar, :, Ak] = cross
        delta_np = delta.to(torch.float64).cpu().numpy()
        self.act_shrink[idx] += delta_np
        if self.robust:  # Alg. 3 line 5: alpha += sigma, before c is used below
            self.act_alpha[idx] += delta_np
        self.m_act[idx] = kept_n.cpu().numpy()
        self.rows[idx] = self.rows_in[idx] + self.m_act[idx]
        self.S[t], self.G[t], self._z[t] = S, G, z
        self.Linv[t] = self._inverse_factor(G, self.rows[idx], self.c()[idx])
        self._mcap[idx] = _grow_capacity(self._mcap[idx], self.rows[idx], self.rows_in[idx], self.cap_act[idx])

    def _inverse_factor(self, G: torch.Tensor, r: np.ndarray, c: np.ndarray) -> torch.Tensor:
        """Inverse Cholesky factors of ``G + c I`` on each member's first r rows, identity on the padding."""
        R = G.shape[1]
        real = torch.arange(R, device=self.device).unsqueeze(0) < torch.as_tensor(r, device=self.device).unsqueeze(1)
        ct = torch.as_tensor(c, device=self.device).to(self.dtype).unsqueeze(1)
        H = G + torch.diag_embed(torch.where(real, ct, torch.ones_like(ct)))
        L, info = torch.linalg.cholesky_ex(H)
        for j in torch.nonzero(info).flatten().tolist():  # rounding made G + cI look indefinite: clamp at c
            n = int(r[j])
            evals, evecs = torch.linalg.eigh(H[j, :n, :n])
            Lj = torch.eye(R, **self._kw)
            Lj[:n, :n] = torch.linalg.cholesky((evecs * torch.clamp(evals, min=float(c[j]))) @ evecs.T)
            L[j] = Lj
        eye = torch.eye(R, **self._kw).expand_as(L)
        return torch.linalg.solve_triangular(L, eye, upper=False)

    def _sherman_morrison(self, idx: np.ndarray, X: torch.Tensor, Ax: torch.Tensor | None = None) -> None:
        full = idx.size == self.batch_size
        t = torch.as_tensor(idx, device=self.device)
        A = self.A_inv if full else self.A_inv[t]
        x = X if full else X[t]
        if Ax is None:
            Ax = torch.bmm(A, x.unsqueeze(2)).squeeze(2)
        scale = -1.0 / (1.0 + (x * Ax).sum(dim=1))
        A.baddbmm_((Ax * scale.unsqueeze(1)).unsqueeze(2), Ax.unsqueeze(1))
        if not full:
            self.A_inv[t] = A

    # -- queries ------------------------------------------------------------------------------
    def score_terms(self, arms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x^T A_hat^-1 b, x^T A_hat^-1 x)`` for every arm of every member from one projection:
        ``arms S^T`` for the sketched members (eq. 5 with ``S b`` kept up to date), ``arms A^-1``
        for the exact ones. The projections are kept for the next update."""
        c = self._c_tensor().unsqueeze(1)
        sq = (arms * arms).sum(dim=2)
        U, Rm, W_ex, e = None, 0, None, None
        mean, quad = torch.zeros_like(sq), torch.zeros_like(sq)
        sketched = ~self.exact
        if sketched.any():
            xb = torch.bmm(arms, self.b.unsqueeze(2)).squeeze(2)
            Rm = int(self.rows[sketched].max()) if self._R else 0
            if Rm:
                U = torch.bmm(arms, self.S[:, :Rm].transpose(1, 2))  # (B, K, Rm): the only O(B K d r) step
                Linv = self.Linv[:, :Rm, :Rm]
                W = torch.bmm(U, Linv.transpose(1, 2))  # rows L^-1 S x
                y = torch.bmm(Linv, self._z[:, :Rm].unsqueeze(2))  # L^-1 S b
                quad = torch.clamp((sq - (W * W).sum(dim=2)) / c, min=0.0)
                mean = (xb - torch.bmm(W, y).squeeze(2)) / c
            else:
                quad, mean = sq / c, xb / c
        if self.exact.any():
            e = np.flatnonzero(self.exact)
            if e.size == self.batch_size:
                W_ex = torch.bmm(arms, self.A_inv)
                quad = (W_ex * arms).sum(dim=2)
                mean = torch.bmm(W_ex, self.b.unsqueeze(2)).squeeze(2)
            else:
                t = torch.as_tensor(e, device=self.device)
                W_ex = torch.bmm(arms[t], self.A_inv[t])
                quad[t] = (W_ex * arms[t]).sum(dim=2)
                mean[t] = torch.bmm(W_ex, self.b[t].unsqueeze(2)).squeeze(2)
        self._cache = (U, Rm, W_ex, e)
        return mean, quad

    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        """eq. 5 per sketched member, ``x^T A_inv x`` per exact member: ``(B, K, d) -> (B, K)``."""
        sq = (arms * arms).sum(dim=2)
        out = torch.empty_like(sq)
        sketched = np.flatnonzero(~self.exact)
        if sketched.size:
            if self._R:
                U = torch.bmm(arms, self.S.transpose(1, 2))  # (B, K, R)
                W = torch.bmm(U, self.Linv.transpose(1, 2))
                proj = (W * W).sum(dim=2)
            else:
                proj = torch.zeros_like(sq)
            q = torch.clamp((sq - proj) / self._c_tensor().unsqueeze(1), min=0.0)
            out = q
        if self.exact.any():
            e = np.flatnonzero(self.exact)
            if e.size == self.batch_size:
                return (torch.bmm(arms, self.A_inv) * arms).sum(dim=2)
            t = torch.as_tensor(e, device=self.device)
            out[t] = (torch.bmm(arms[t], self.A_inv[t]) * arms[t]).sum(dim=2)
        return out

    def solve(self, V: torch.Tensor) -> torch.Tensor:
        """``A_hat_i^-1 v_i`` per member (eq. 5, or the exact inverse past the cap)."""
        out = V / self._c_tensor().unsqueeze(1)
        if (~self.exact).any() and self._R:
            y = torch.bmm(self.Linv.transpose(1, 2), torch.bmm(self.Linv, torch.bmm(self.S, V.unsqueeze(2))))
            out = (V - torch.bmm(y.transpose(1, 2), self.S).squeeze(1)) / self._c_tensor().unsqueeze(1)
        if self.exact.any():
            e = np.flatnonzero(self.exact)
            if e.size == self.batch_size:
                return torch.bmm(self.A_inv, V.unsqueeze(2)).squeeze(2)
            t = torch.as_tensor(e, device=self.device)
            out[t] = torch.bmm(self.A_inv[t], V[t].unsqueeze(2)).squeeze(2)
        return out

    # -- introspection ------------------------------------------------------------------------
    def sketch_sizes(self) -> np.ndarray:
        """Rows held per member (``d`` once exact), as the unbatched ``sketch_size``."""
        return np.where(self.exact, self.d, self.rows)

    def member_memory_bytes(self) -> np.ndarray:
        """What each unbatched sketch holds: frozen rows and Gram, M, the active FD block, or the
        d x d inverse once exact."""
        es = torch.empty(0, dtype=self.dtype).element_size()
        cap, r_in, d = self.cap_act, self.rows_in, self.d
        sketched = r_in * d + r_in**2 + self._mcap**2 + cap * d + 2 * cap**2
        return (es * np.where(self.exact, d * d, sketched)).astype(np.int64)

    def memory_bytes(self) -> int:
        return tensor_bytes(self.S, self.G, self.Linv, self._z, self.A_inv)
