"""B independent Frequent Directions sketches as one tensor program (batched SOFUL's estimator).

The batched twin of :class:`agents.sketches.fd.FrequentDirections`: the same algorithm, the
same choices (2l-row fast buffer or textbook one-reduction-per-row FD, shrink by the l-th
eigenvalue of the buffer's Gram, rounding-level values treated as 0, zero rows skipped,
Cholesky-bordered appends, Woodbury queries), with every tensor carrying a leading batch
dimension:

    buf (B, cap, d)   rows [0, m_i) of member i are its sketch S_i, the rest are zero
    G   (B, cap, cap) S_i S_i^T, zero-padded
    L   (B, cap, cap) lower Cholesky factor of S_i S_i^T + rho_i I on the first m_i rows,
                      identity on the padding

Padding is exact, not an approximation: a zero row of ``buf`` adds nothing to ``S^T S``, and
with an identity block in ``L`` the padded positions of every triangular solve stay 0, so
queries on the full ``cap``-sized tensors equal the unbatched ones on the ``m_i``-sized slices
(and ``log diag L`` of the padding is 0 in the log-det bound). Row counts can therefore differ
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
    ...     fd.update(torch.stack([x, 2 * x]))
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
        self._L = torch.eye(cap, **kw).expand(B, cap, cap).clone()
        self._m = torch.zeros(B, dtype=torch.long, device=device)
        self.rows_in_use = np.zeros(B, dtype=np.int64)  # host copy of _m for the control flow
        self._eps = torch.finfo(dtype).eps
        self.total_shrinkage = torch.zeros(B, dtype=torch.float64, device=device)
        self.n_reductions = np.zeros(B, dtype=np.int64)
        self._members = torch.arange(B, device=device)

    # -- hooks the RFD twin overrides ----------------------------------------------------
    @property
    def rho(self) -> torch.Tensor:
        """Per member, the scalar ridge of ``A_hat = rho I + S^T S`` (``reg`` for FD): ``(B,)``."""
        return torch.full((self.batch_size,), self.reg, dtype=torch.float64, device=self.device)

    def _on_shrink(self, members: torch.Tensor, delta: torch.Tensor) -> None:
        """Called once per reduction of ``members`` with their shrink values, before ``rho`` is read."""

    # -- streaming ---------------------------------------------------------------------------
    def update(self, X: torch.Tensor) -> None:
        xx = (X * X).sum(dim=1)
        live = xx > 0  # a zero row adds nothing to X^T X and is skipped, as unbatched
        if bool(live.all()):
            members = self._members
        else:
            members = torch.nonzero(live).squeeze(1)
            if members.numel() == 0:
                self.n_rows += 1
                return
        self._append(members, X, xx)
        idx = members.cpu().numpy()
        if self.fast:
            idx = idx[self.rows_in_use[idx] == self._cap]
        if idx.size:
            self._reduce(idx)
        self.n_rows += 1

    def _append(self, members: torch.Tensor, X: torch.Tensor, xx: torch.Tensor) -> None:
        rho = self.rho.to(self.dtype)
        g = torch.bmm(self._buf, X.unsqueeze(2))  # (B, cap, 1): S x, zero on the padding
        c = torch.linalg.solve_triangular(self._L, g, upper=False).squeeze(2)  # zero on the padding
        schur = xx + rho - (c * c).sum(dim=1)
        # Schur complement of the bordered Gram = rho (1 + x^T A_hat^-1 x) >= rho: clamp, never 0.
        diag = torch.sqrt(torch.maximum(schur, rho))
        g = g.squeeze(2)
        pos = self._m[members]
        self._L[members, pos] = c[members]
        self._L[members, pos, pos] = diag[members]
        self._G[members, pos] = g[members]
        self._G[members, :, pos] = g[members]
        self._G[members, pos, pos] = xx[members]
        self._buf[members, pos] = X[members]
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
        new_rows = torch.bmm((evecs[:, :, :k] * torch.sqrt(w).unsqueeze(1)).transpose(1, 2), self._buf[members, :m])
        buf = torch.zeros(members.numel(), self._cap, self.d, device=self.device, dtype=self.dtype)
        buf[:, :k] = new_rows
        self._buf[members] = buf
        self._on_shrink(members, delta.to(torch.float64))  # RFD: alpha += delta before rho is read below
        rho = self.rho[members].to(self.dtype)
        # Alg. 2 line 7: the rows are now orthogonal, so G and L are diagonal.
        keep = torch.where(kept, keep, torch.zeros_like(keep))
        G = torch.zeros(members.numel(), self._cap, self._cap, device=self.device, dtype=self.dtype)
        G[:, :k, :k] = torch.diag_embed(keep)
        L = torch.eye(self._cap, device=self.device, dtype=self.dtype).repeat(members.numel(), 1, 1)
        L[:, :k, :k] = torch.diag_embed(torch.where(kept, torch.sqrt(keep + rho.unsqueeze(1)), torch.ones_like(keep)))
        self._G[members] = G
        self._L[members] = L
        self._m[members] = r
        host = members.cpu().numpy()
        self.rows_in_use[host] = r.cpu().numpy()
        self.total_shrinkage[members] += delta.to(torch.float64)
        self.n_reductions[host] += 1

    # -- queries -------------------------------------------------------------------------------
    def quad_inv(self, arms: torch.Tensor) -> torch.Tensor:
        """``(||x||^2 - ||L_i^-1 S_i x||^2) / rho_i`` for every arm of every member, O(B K d l)."""
        sq = (arms * arms).sum(dim=2)
        Z = torch.bmm(arms, self._buf.transpose(1, 2))  # (B, K, cap): the only O(B K d l) step
        W = torch.linalg.solve_triangular(self._L, Z.transpose(1, 2), upper=False)
        proj = (W * W).sum(dim=1)
        return torch.clamp((sq - proj) / self.rho.to(self.dtype).unsqueeze(1), min=0.0)

    def solve(self, V: torch.Tensor) -> torch.Tensor:
        """``(v - S^T (S S^T + rho I)^-1 S v) / rho`` per member, O(B (d l + l^2))."""
        z = torch.bmm(self._buf, V.unsqueeze(2))
        y = torch.cholesky_solve(z, self._L, upper=False)
        out = V - torch.bmm(self._buf.transpose(1, 2), y).squeeze(2)
        return out / self.rho.to(self.dtype).unsqueeze(1)

    def log_det_ratio_bound(self) -> torch.Tensor:
        """Per member, :meth:`FrequentDirections.log_det_ratio_bound <agents.sketches.fd.FrequentDirections.log_det_ratio_bound>`: ``(B,)``."""
        lam, sig = self.reg, self.total_shrinkage
        m = torch.as_tensor(self.rows_in_use, device=self.device, dtype=torch.float64)
        out = self.d * torch.log1p(sig / lam)
        logdiag = torch.log(torch.diagonal(self._L, dim1=1, dim2=2)).sum(dim=1).to(torch.float64)  # padding: log 1 = 0
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
        return np.full(self.batch_size, tensor_bytes(self._buf, self._G, self._L) // self.batch_size, dtype=np.int64)

    def memory_bytes(self) -> int:
        return tensor_bytes(self._buf, self._G, self._L, self._m, self.total_shrinkage)
