"""B independent Frequent Directions sketches as one tensor program (batched SOFUL's estimator).

The batched twin of :class:`agents.sketches.fd.FrequentDirections`: the same algorithm, the
same choices (2l-row fast buffer or textbook one-reduction-per-row FD, shrink by the l-th
eigenvalue of the buffer's Gram, rounding-level values treated as 0, zero rows skipped,
Cholesky-bordered appends, Woodbury queries), with every tensor carrying a leading batch
dimension:

    buf  (B, cap, d)   rows [0, m_i) of member i are its sketch S_i, the rest are zero
    G    (B, cap, cap) S_i S_i^T, zero-padded
    Linv (B, cap, cap) the INVERSE of the lower Cholesky factor L_i of S_i S_i^T + rho_i I on
                       the first m_i rows, identity on the padding
    z    (B, cap)      S_i b_i (kept up to date, see :class:`~agents.batched.base.BatchedEstimator`)

Padding is exact, not an approximation: a zero row of ``buf`` adds nothing to ``S^T S``, and
with an identity block in ``Linv`` the padded positions of every product stay 0, so queries on
the padded tensors equal the unbatched ones on the ``m_i``-sized slices (and ``log diag`` of
the padding is 0 in the log-det bound). The unbatched sketch keeps ``L`` and solves with it;
here ``L^-1`` is kept instead (bordered on every append:
``[[L, 0], [c^T, s]]^-1 = [[L^-1, 0], [-(c^T L^-1)/s, 1/s]]``, diagonal after a reduction), so
that every query is a batched matrix product rather than a batched triangular solve, which
torch runs as one small LAPACK call per member. Row counts can therefore differ
per member (a zero row skipped, a low-rank stream keeping fewer rows after a reduction).

Reductions: with the fast buffer every member fills its buffer on the same rounds unless the
streams degenerate, so one batched ``eigh`` over the members that are full does all of them;
members with different row counts (textbook FD's first rows, or after degenerate reductions)
are grouped by row count, one batched ``eigh`` per group -- the only loop, over distinct
counts, never over members or arms. O(B d l) memory.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._torch import tensor_bytes
from .base import BatchedEstimator

__all__ = ["BatchedFrequentDirections"]


class BatchedFrequentDirections(BatchedEstimator):
    """B Frequent Directions sketches of size ``sketch_size`` with ``(reg I + S_i^T S_i)^-1`` queries.

    Args:
        batch_size: B.
        d: dimension of the rows.
        sketch_size: ``l >= 1`` (validated by the unbatched agent).
        reg: ridge lambda > 0.
        fast: 2l-row buffer (``True``) or textbook FD (``False``), as the unbatched sketch.
        device, dtype: where the state lives.

    Attributes (one entry per member):
        total_shrinkage: float64 tensor ``(B,)``, the sum of each member's shrink values.
        n_reductions: int array ``(B,)``.
        rows_in_use: int array ``(B,)``, rows of each sketch held now.

    >>> import torch
    >>> fd = BatchedFrequentDirections(2, 4, 3, reg=1.0, fast=False, device=torch.device("cpu"), dtype=torch.float64)
    >>> for x in torch.eye(4, dtype=torch.float64):
    ...     fd.update(torch.stack([x, 2 * x]), torch.zeros(2, dtype=torch.float64))
    >>> fd.total_shrinkage.tolist()          # as FrequentDirections(4, 3, fast=False) on each stream
    [1.0, 4.0]
    """

    def __init__(self, batch_size: int, d: int, sketch_size: int, *, reg: float, fast: bool = True, device, dtype):
        super().__init__(batch_size, d, reg=reg, device=device, dtype=dtype)
        self._l = int(sketch_size)
        self.fast = bool(fast)
        self._cap = 2 * self._l if self.fast else self._l
        B, cap = self.batch_size, self._cap
        kw = {"device": device, "dtype": dtype}
        self._buf = torch.zeros(B, cap, d, **kw)
        self._G = torch.zeros(B, cap, cap, **kw)
        self._Linv = torch.eye(cap, **kw).expand(B, cap, cap).clone()
        self._m = torch.zeros(B, dtype=torch.long, device=device)
        self.rows_in_use = np.zeros(B, dtype=np.int64)  # host copy of _m for the control flow
        self._eps = torch.finfo(dtype).eps
        self.total_shrinkage = torch.zeros(B, dtype=torch.float64, device=device)
        self.n_reductions = np.zeros(B, dtype=np.int64)
        self._members = torch.arange(B, device=device)
        self._z = torch.zeros(B, cap, device=device, dtype=dtype)  # S b, kept up to date (see score_terms)
        self._cache = None  # (arms S^T, rows) of the last score_terms, for the next update

    # -- hooks the RFD twin overrides ----------------------------------------------------
    @property
    def rho(self) -> torch.Tensor:
        """Per member, the scalar ridge of ``A_hat = rho I + S^T S`` (``reg`` for FD): ``(B,)``."""
        return torch.full((self.batch_size,), self.reg, dtype=torch.float64, device=self.device)

    def _on_shrink(self, members: torch.Tensor, delta: torch.Tensor) -> None:
        """Called once per reduction of ``members`` with their shrink values, before ``rho`` is read."""

    # -- streaming ---------------------------------------------------------------------------
    def _max_rows(self) -> int:
        return int(self.rows_in_use.max())

    def update(self, X: torch.Tensor, r: torch.Tensor, actions: torch.Tensor | None = None) -> None:
        xx = (X * X).sum(dim=1)
        if actions is not None and self._cache is not None:  # S x = the played arm's row of Z
            Z, mm = self._cache
            g = torch.zeros(self.batch_size, self._cap, device=self.device, dtype=self.dtype)
            g[:, :mm] = Z[torch.arange(self.batch_size, device=self.device), actions]
        else:
            g = torch.bmm(self._buf, X.unsqueeze(2)).squeeze(2)  # (B, cap): zero on the padding
        self._cache = None
        self.b += r.unsqueeze(1) * X
        self._z += r.unsqueeze(1) * g  # S b for the new b, on the rows held before this one
        live = xx > 0  # a zero row adds nothing to X^T X and is skipped, as unbatched
        if bool(live.all()):
            members = self._members
        else:
            members = torch.nonzero(live).squeeze(1)
            if members.numel() == 0:
                self.n_rows += 1
                return
        self._append(members, X, xx, g)
        idx = members.cpu().numpy()
        if self.fast:
            idx = idx[self.rows_in_use[idx] == self._cap]
        if idx.size:
            self._reduce(idx)
        self.n_rows += 1

    def _append(self, members: torch.Tensor, X: torch.Tensor, xx: torch.Tensor, g: torch.Tensor) -> None:
        rho = self.rho.to(self.dtype)
        c = torch.bmm(self._Linv, g.unsqueeze(2)).squeeze(2)  # L^-1 S x: zero on the padding
        schur = xx + rho - (c * c).sum(dim=1)
        # Schur complement of the bordered Gram = rho (1 + x^T A_hat^-1 x) >= rho: clamp, never 0.
        diag = torch.sqrt(torch.maximum(schur, rho))
        new_row = -torch.bmm(c.unsqueeze(1), self._Linv).squeeze(1) / diag.unsqueeze(1)  # -(c^T L^-1)/s
        pos = self._m[members]
        Xm = X[members]
        self._Linv[members, pos] = new_row[members]
        self._Linv[members, pos, pos] = 1.0 / diag[members]
        self._G[members, pos] = g[members]
        self._G[members, :, pos] = g[members]
        self._G[members, pos, pos] = xx[members]
        self._buf[members, pos] = Xm
        self._z[members, pos] = (Xm * self.b[members]).sum(dim=1)
        self._m[members] += 1
        self.rows_in_use[members.cpu().numpy()] += 1

    def _reduce(self, idx: np.ndarray) -> None:
        """FD reduction (seed 000 Alg. 2 lines 4-7) of the members ``idx``, grouped by row count."""
        counts = self.rows_in_use[idx]
        for m in np.unique(counts):
            group = idx[counts == m]
            self._reduce_group(torch.as_tensor(group, device=self.device), int(m))

    def _reduce_group(self, members: torch.Tensor, m: int) -> None:
        l, eps = self._l, self._eps
        evals, evecs = torch.linalg.eigh(self._G[members, :m, :m])
        evals, evecs = evals.flip(-1), evecs.flip(-1)  # descending
        tol = 2.0 * eps * (m + math.sqrt(self.d)) * torch.clamp(evals[:, 0], min=0.0)
        if m < l:
            delta = torch.zeros_like(tol)
        else:  # Alg. 2 line 5: the l-th largest eigenvalue; rounding-level values count as 0
            delta = evals[:, l - 1]
            delta = torch.where(delta <= tol, torch.zeros_like(delta), delta)
        k = min(l - 1, m)
        keep = evals[:, :k] - delta.unsqueeze(1)  # Alg. 2 line 6 on the l - 1 leading directions
        r = (keep > tol.unsqueeze(1)).sum(dim=1)  # keep is sorted: the leading r survive
        kept = torch.arange(k, device=self.device).unsqueeze(0) < r.unsqueeze(1)
        w = torch.where(kept, keep / evals[:, :k], torch.zeros_like(keep))  # in [0, 1]
        coeff = (evecs[:, :, :k] * torch.sqrt(w).unsqueeze(1)).transpose(1, 2)  # (n, k, m): new S = coeff @ S
        new_rows = torch.bmm(coeff, self._buf[members, :m])
        buf = torch.zeros(members.numel(), self._cap, self.d, device=self.device, dtype=self.dtype)
        buf[:, :k] = new_rows
        self._buf[members] = buf
        z = torch.zeros(members.numel(), self._cap, device=self.device, dtype=self.dtype)
        z[:, :k] = torch.bmm(coeff, self._z[members, :m].unsqueeze(2)).squeeze(2)  # S b follows S
        self._z[members] = z
        self._on_shrink(members, delta.to(torch.float64))  # RFD: alpha += delta before rho is read below
        rho = self.rho[members].to(self.dtype)
        # Alg. 2 line 7: the rows are now orthogonal, so G and L are diagonal.
        keep = torch.where(kept, keep, torch.zeros_like(keep))
        G = torch.zeros(members.numel(), self._cap, self._cap, device=self.device, dtype=self.dtype)
        G[:, :k, :k] = torch.diag_embed(keep)
        Linv = torch.eye(self._cap, device=self.device, dtype=self.dtype).repeat(members.numel(), 1, 1)
        Linv[:, :k, :k] = torch.diag_embed(
            torch.where(kept, 1.0 / torch.sqrt(keep + rho.unsqueeze(1)), torch.ones_like(keep))
        )
        self._G[members] = G
        self._Linv[members] = Linv
        self._m[members] = r
        host = members.cpu().numpy()
        self.rows_in_use[host] = r.cpu().numpy()
        self.total_shrinkage[members] += delta.to(torch.float64)
        self.n_reductions[host] += 1

    # -- queries -------------------------------------------------------------------------------
    def score_terms(self, arms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Both UCB terms from one projection ``Z = arms S^T`` (the only O(B K d l) step):
        ``x^T A^-1 x = (||x||^2 - ||L^-1 S x||^2) / rho`` and
        ``x^T A^-1 b = (x^T b - (L^-1 S x)^T (L^-1 S b)) / rho`` with ``S b`` kept up to date."""
        rho = self.rho.to(self.dtype).unsqueeze(1)
        sq = (arms * arms).sum(dim=2)
        xb = torch.bmm(arms, self.b.unsqueeze(2)).squeeze(2)
        mm = self._max_rows()  # every member's rows lie in the first mm slots
        if mm == 0:
            self._cache = None
            return xb / rho, sq / rho
        Z = torch.bmm(arms, self._buf[:, :mm].transpose(1, 2))  # (B, K, mm)
        Linv = self._Linv[:, :mm, :mm]
        W = torch.bmm(Z, Linv.transpose(1, 2))  # rows L^-1 S x
        y = torch.bmm(Linv, self._z[:, :mm].unsqueeze(2))  # L^-1 S b
        self._cache = (Z, mm)
        quad = torch.clamp((sq - (W * W).sum(dim=2)) / rho, min=0.0)
        return (xb - torch.bmm(W, y).squeeze(2)) / rho, quad

    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        """``(||x||^2 - ||L_i^-1 S_i x||^2) / rho_i`` for every arm of every member, O(B K d l)."""
        sq = (arms * arms).sum(dim=2)
        Z = torch.bmm(arms, self._buf.transpose(1, 2))  # (B, K, cap)
        W = torch.bmm(Z, self._Linv.transpose(1, 2))
        proj = (W * W).sum(dim=2)
        return torch.clamp((sq - proj) / self.rho.to(self.dtype).unsqueeze(1), min=0.0)

    def solve(self, V: torch.Tensor) -> torch.Tensor:
        """``(v - S^T (S S^T + rho I)^-1 S v) / rho`` per member, O(B (d l + l^2))."""
        z = torch.bmm(self._Linv, torch.bmm(self._buf, V.unsqueeze(2)))
        y = torch.bmm(self._Linv.transpose(1, 2), z)  # (L L^T)^-1 S v
        out = V - torch.bmm(y.transpose(1, 2), self._buf).squeeze(1)  # row-vector form: contiguous reads
        return out / self.rho.to(self.dtype).unsqueeze(1)

    def log_det_ratio_bound(self) -> torch.Tensor:
        """Per member, :meth:`FrequentDirections.log_det_ratio_bound <agents.sketches.fd.FrequentDirections.log_det_ratio_bound>`: ``(B,)``."""
        lam, sig = self.reg, self.total_shrinkage
        m = torch.as_tensor(self.rows_in_use, device=self.device, dtype=torch.float64)
        out = self.d * torch.log1p(sig / lam)
        logdiag = -torch.log(torch.diagonal(self._Linv, dim1=1, dim2=2)).sum(dim=1).to(torch.float64)  # padding: 0
        exact = 2.0 * logdiag - m * math.log(lam)
        trace = torch.diagonal(self._G, dim1=1, dim2=2).sum(dim=1).to(torch.float64)
        safe_m = torch.clamp(m, min=1.0)
        amgm = m * torch.log1p(torch.clamp(trace, min=0.0) / (safe_m * (lam + sig)))
        return out + torch.where(m > 0, torch.minimum(exact, amgm), torch.zeros_like(out))

    # -- introspection ---------------------------------------------------------------------------
    @property
    def sketch_size(self) -> int:
        """The nominal sketch size ``l`` (the same for every member)."""
        return self._l

    def sketch_sizes(self) -> np.ndarray:
        return np.full(self.batch_size, self._l, dtype=np.int64)

    def member_memory_bytes(self) -> np.ndarray:
        return np.full(self.batch_size, tensor_bytes(self._buf, self._G, self._Linv) // self.batch_size, dtype=np.int64)

    def memory_bytes(self) -> int:
        return tensor_bytes(self._buf, self._G, self._Linv, self._m, self.total_shrinkage, self._z)
