"""The array namespace every estimator's kernels are written against, and the one place it is
chosen.

Each estimator (exact, FD, RFD, Dyadic Block Sketch) is written once, batch dimension first, with
operators numpy arrays and torch tensors share (``@``, ``*``, ``+``, slicing, item and index
stores, ``.mT``) and the functions of a :class:`Backend`, where their spellings differ: the
approach scikit-learn and SciPy take with the array API standard, with a namespace of our own
that adds no per-call cost on the hot path. :class:`NumpyBackend` and :class:`TorchBackend` spell
each function once; the kernels never ask which one they hold.

:func:`choose_backend` decides, once, when an estimator is built:

* on the CPU, one estimator or a batch of members: numpy arrays, batch dimension first. A round is
  a few dozen small operations beside its big products, and a numpy call has a smaller fixed cost
  than a torch dispatch; numpy's stacked products (``(B, n, m) @ (B, m, 1)``) also run through
  BLAS per member where torch's batched CPU kernels do not (``benchmarks/profile_agents.py
  --backend torch`` and ``benchmarks/bench_batch_size.py --backend torch`` measure the other
  choice; ``docs/architecture.md`` lists the gain).
* any other device: torch tensors on that device.

Both run the very same kernels; the tests compare them on the same streams, running torch on the
CPU inside :func:`torch_on_cpu`. An estimator built by another (Dyadic Block Sketching's exact
estimator) is handed its builder's backend (``backend=``), not chosen again. Public accessors of
the estimators return torch tensors whatever the backend (a numpy array is shared with
``torch.from_numpy``, no copy).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch
from scipy.linalg.blas import dger, sger
from scipy.linalg.lapack import dpotrf, spotrf

__all__ = [
    "NUMPY_CPU",
    "Backend",
    "NumpyBackend",
    "TorchBackend",
    "choose_backend",
    "torch_on_cpu",
]

_NP_DTYPE = {torch.float64: np.float64, torch.float32: np.float32}
_GER = {np.dtype(np.float64): dger, np.dtype(np.float32): sger}
_POTRF = {np.dtype(np.float64): dpotrf, np.dtype(np.float32): spotrf}
_ONE_MEMBER, _NO_MEMBER = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
_ONE_MEMBER.flags.writeable = _NO_MEMBER.flags.writeable = False


class Backend:
    """The functions whose spellings differ between numpy (CPU) and torch (any device): creation,
    conversions, a few elementwise functions and reductions, and linear algebra on stacks of
    matrices (``(..., n, n)``). Arrays of :class:`NumpyBackend` are ``numpy.ndarray``; of
    :class:`TorchBackend` ``torch.Tensor`` on :attr:`device`. Dtypes are given as torch dtypes."""

    kind: str
    is_numpy: bool

    def __init__(self, device: torch.device):
        self.device = device

    def __repr__(self) -> str:
        return f"Backend({self.kind!r}, {str(self.device)!r})"

    def select(self, idx: np.ndarray):
        """The members ``idx`` (sorted host ints) as a key of a batch-first array: a slice where
        they are consecutive (every member, or one: views), else the backend's index array
        (:meth:`index`)."""
        n = len(idx)
        if n and idx.item(n - 1) - idx.item(0) + 1 == n:
            return slice(idx.item(0), idx.item(0) + n)
        return self.index(idx)

    def eigh_desc(self, G):
        """Eigenvalues (descending) and eigenvectors (columns, same order) of the symmetric ``G``
        (the lower triangle is read)."""
        w, U = self.eigh(G)
        return self.flip_last(w), self.flip_last(U)

    def eigvalsh_desc(self, G):
        return self.flip_last(self.eigvalsh(G))

    def inv_spd(self, A):
        """``A^-1`` of symmetric positive definite ``A``, symmetrised: Cholesky ``A = L L^T``, then
        ``A^-1 = L^-T L^-1``. A member whose factorization fails (rounding made a matrix with
        eigenvalues far apart look indefinite) is inverted from its eigendecomposition with its
        eigenvalues clamped below at ``n eps lambda_max``, the rounding level of the
        decomposition."""
        n = A.shape[-1]
        if n == 0:
            return self.copy(A)
        L, failed = self.cholesky_ex(A)
        Linv = self.solve_lower(L, self.eye_like(A))
        out = Linv.mT @ Linv
        bad = np.flatnonzero(failed)
        if bad.size:
            bi = self.index(bad)
            w, U = self.eigh(A[bi])
            info = self.finfo(A)
            floor = (n * info.eps) * self.max_last(self.abs(w))
            w = self.maximum(w, self.maximum(floor, info.tiny))
            out[bi] = (U / w[..., None, :]) @ U.mT
        return 0.5 * (out + out.mT)


class NumpyBackend(Backend):
    """numpy arrays on the CPU (:func:`choose_backend`), at the smaller fixed cost per call of
    numpy. Its member helpers (:meth:`select`, :meth:`at`, :meth:`members_where`) address one
    member, or consecutive members, by basic indexing (views, no gather)."""

    kind = "numpy"
    is_numpy = True

    # -- dtypes, creation, conversion --------------------------------------------------------------
    def zeros(self, shape, dtype: torch.dtype):
        return np.zeros(shape, dtype=_NP_DTYPE[dtype])

    def eye(self, n: int, dtype: torch.dtype):
        return np.eye(n, dtype=_NP_DTYPE[dtype])

    def asarray(self, x, dtype: torch.dtype):
        """``x`` (array, tensor, list or scalar) as an array of ``dtype`` (shared when it already is
        one)."""
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().numpy()
        return np.asarray(x, dtype=_NP_DTYPE[dtype])

    def eye_like(self, A):
        """The identity of ``A``'s last two sizes (broadcast over its leading ones) in its dtype."""
        return np.eye(A.shape[-1], dtype=A.dtype)

    def index(self, idx):
        """Host integer indices as the backend's index array."""
        return np.asarray(idx, dtype=np.int64)

    def arange(self, n: int):
        return np.arange(n)

    def astype(self, x, dtype: torch.dtype):
        """``x`` in ``dtype`` (``x`` itself when it already is)."""
        target = _NP_DTYPE[dtype]
        return x if x.dtype == target else x.astype(target)

    def cast_like(self, host, like):
        """The host array ``host`` in the dtype (and device) of the array ``like``."""
        return np.asarray(host, dtype=like.dtype)

    def concat(self, a, b, axis: int = 1):
        return np.concatenate((a, b), axis=axis)

    def copy(self, x):
        return x.copy()

    def host(self, x) -> np.ndarray:
        """``x`` as a numpy array on the host."""
        return np.asarray(x)

    def to_torch(self, x) -> torch.Tensor:
        """``x`` as a torch tensor (shared, not copied)."""
        return torch.from_numpy(x)

    def nbytes(self, x) -> int:
        return int(x.nbytes)

    def finfo(self, x):
        return np.finfo(x.dtype)

    # -- elementwise and reductions ----------------------------------------------------------------
    def vecdot(self, x, y):
        """``sum_i x_i y_i`` over the last axis."""
        return np.vecdot(x, y)

    def matvec(self, A, x):
        """``A_i x_i`` for stacks ``A`` ``(B, n, m)`` and ``x`` ``(B, m)``."""
        return np.matvec(A, x)

    def log1p(self, x):
        return np.log1p(x)

    def sqrt(self, x):
        return np.sqrt(x)

    def abs(self, x):
        return np.abs(x)

    def maximum(self, x, y):
        return np.maximum(x, y)

    def max_last(self, x):
        """The largest entry along the last axis, kept as an axis of size 1."""
        return x.max(axis=-1, keepdims=True)

    def where(self, cond, x, y):
        return np.where(cond, x, y)

    def flip_last(self, x):
        """``x`` reversed along its last axis."""
        return x[..., ::-1]

    def any(self, x) -> bool:
        """Whether some entry of ``x`` is nonzero (True)."""
        return np.count_nonzero(x) > 0

    def all_finite(self, x) -> bool:
        """Whether every entry of ``x`` is finite, from its sum (one pass: an inf or NaN entry makes
        the sum inf or NaN; only a finite sum that overflowed is checked entrywise). A few entries
        are summed as Python floats, which overflow to inf without a warning."""
        if x.size <= 64:
            return math.isfinite(sum(x.ravel().tolist())) or bool(np.isfinite(x).all())
        with np.errstate(over="ignore", invalid="ignore"):
            return math.isfinite(float(x.sum())) or bool(np.isfinite(x).all())

    def norm_sq(self, x, dtype: torch.dtype):
        """``||x||^2`` over the last axis, summed in ``dtype`` (float32 entries are exact in
        float64)."""
        xc = self.astype(x, dtype)
        return np.vecdot(xc, xc)

    # -- linear algebra ----------------------------------------------------------------------------
    def eigh(self, G):
        return np.linalg.eigh(G)

    def eigvalsh(self, G):
        return np.linalg.eigvalsh(G)

    def svd(self, A):
        """Thin SVD ``(U, s, Wh)`` with ``A = U diag(s) Wh``, ``s`` descending."""
        return np.linalg.svd(A, full_matrices=False)

    def logdet(self, A) -> np.ndarray:
        """``log det A`` of symmetric positive definite ``A``, host float64."""
        return np.linalg.slogdet(A)[1].astype(np.float64)

    def inv(self, A):
        return np.linalg.inv(A)

    def cholesky(self, A):
        """Lower Cholesky factors of symmetric positive definite ``A`` (the lower triangle is
        read). One matrix goes to LAPACK's ``potrf`` directly (numpy's stacked routine costs as
        much again in its setup at the sizes of a sketch's core)."""
        if A.ndim == 3 and A.shape[0] == 1 and A.dtype in _POTRF:
            L, info = _POTRF[A.dtype](A[0], lower=1, clean=1)
            if info != 0:
                raise np.linalg.LinAlgError("Matrix is not positive definite")
            return L[None]
        return np.linalg.cholesky(A)

    def cholesky_ex(self, A):
        """Lower Cholesky factors of ``A`` and, per member, whether the factorization failed (host
        bools ``(B,)``; a failed member's factor is not meaningful)."""
        try:
            return np.linalg.cholesky(A), np.zeros(A.shape[0], dtype=bool)
        except np.linalg.LinAlgError:
            L = np.zeros_like(A)
            failed = np.zeros(A.shape[0], dtype=bool)
            for i in range(A.shape[0]):
                try:
                    L[i] = np.linalg.cholesky(A[i])
                except np.linalg.LinAlgError:
                    failed[i] = True
                    L[i] = np.eye(A.shape[-1], dtype=A.dtype)
            return L, failed

    def solve_lower(self, L, B):
        """``L^-1 B`` for lower triangular ``L``."""
        return np.linalg.solve(L, B)

    def qr_factor(self, A):
        """The triangular factor ``R`` ``(..., m, m)`` of the reduced QR of ``A`` (``(..., n, m)``,
        ``n >= m``), without forming ``Q``."""
        return np.linalg.qr(A, mode="r")

    def at(self, members: np.ndarray, *slots: np.ndarray, width: int | None = None) -> tuple:
        """The key of the entries ``[m, slots[0][m], slots[1][m], ...]`` of the members ``members``
        (host ints, not empty; ``slots``: host int arrays ``(B,)``, one per axis after the
        members') in a batch-first array, and their first ``width`` entries along the next axis
        when given: ``dst[key] = src`` stores ``src[j]`` there for the ``j``-th member. One member
        by basic indexing, several by index arrays."""
        if len(members) == 1:  # basic indexing: a view of the one slot, no gather
            m = members.item(0)
            key = (slice(m, m + 1), *[s.item(m) for s in slots])
        else:
            key = (members, *[s[members] for s in slots])
        return key if width is None else (*key, slice(0, width))

    def members_where(self, mask: np.ndarray) -> np.ndarray:
        """The members (host ints, ascending) where the host bools ``mask`` ``(B,)`` hold."""
        if len(mask) == 1:
            return _ONE_MEMBER if mask.item(0) else _NO_MEMBER
        return np.flatnonzero(mask)

    def row_range(self, src, idx: np.ndarray, starts: np.ndarray, count: int, width: int):
        """``src[m_j, starts_j : starts_j + count, :width]`` for the members ``m_j`` of ``idx``,
        stacked."""
        return np.stack(
            [src[m, s : s + count, :width] for m, s in zip(idx.tolist(), starts.tolist())]
        )

    def put_rows(
        self, dst, idx: np.ndarray, offsets: np.ndarray, src, counts: np.ndarray, stop: int
    ) -> None:
        """For each member ``m_j`` of ``idx``: the rows ``[offsets_j, stop)`` of ``dst[m_j]``
        zeroed, then the first ``counts_j`` rows of ``src[j]`` written from row ``offsets_j`` on
        (into the first ``src.shape[-1]`` columns when the rows are vectors)."""
        width = (slice(0, src.shape[-1]),) if src.ndim == 3 else ()
        for j, (m, o, c) in enumerate(zip(idx.tolist(), offsets.tolist(), counts.tolist())):
            dst[m, o:stop] = 0.0
            dst[(m, slice(o, o + c)) + width] = src[j, :c]

    def rank1_update_(self, A, x, alpha) -> None:
        """``A_i += alpha_i x_i x_i^T`` in place for symmetric ``A`` ``(B, n, n)``, ``x``
        ``(B, n)``, ``alpha`` ``(B,)``: BLAS ``ger`` per member (one pass, no ``n x n``
        temporary)."""
        ger = _GER[A.dtype]
        for i, a in enumerate(alpha.tolist()):
            At = A[i].T  # A is symmetric: updating A^T (Fortran-ordered) in place is updating A
            # positional (a, x, y, incx, incy, overwrite_x, overwrite_y, overwrite_a)
            if ger(a, x[i], x[i], 1, 1, At, 1, 1, 1) is not At:
                raise RuntimeError("BLAS ger did not update in place")

    def outer_update_(self, A, x, y, alpha) -> None:
        """``A_i += alpha_i x_i y_i^T`` in place for ``A`` ``(B, n, n)`` (C-ordered), ``x`` and
        ``y`` ``(B, n)``, ``alpha`` ``(B,)``: BLAS ``ger`` per member on the Fortran-ordered view
        ``A_i^T``, which gains ``alpha_i y_i x_i^T``."""
        ger = _GER[A.dtype]
        for i, a in enumerate(alpha.tolist()):
            At = A[i].T
            if ger(a, y[i], x[i], 1, 1, At, 1, 1, 1) is not At:
                raise RuntimeError("BLAS ger did not update in place")


class TorchBackend(Backend):
    """torch tensors on :attr:`device` (a batch of members, or any device)."""

    kind = "torch"
    is_numpy = False

    # -- dtypes, creation, conversion --------------------------------------------------------------
    def zeros(self, shape, dtype: torch.dtype):
        return torch.zeros(shape, dtype=dtype, device=self.device)

    def eye(self, n: int, dtype: torch.dtype):
        return torch.eye(n, dtype=dtype, device=self.device)

    def asarray(self, x, dtype: torch.dtype):
        """``x`` (array, tensor, list or scalar) as a tensor of ``dtype`` (shared when it already is
        one)."""
        if isinstance(x, torch.Tensor):
            return x.to(device=self.device, dtype=dtype)
        x = np.asarray(x, dtype=np.float64)
        return torch.as_tensor(x if x.flags.writeable else x.copy(), device=self.device).to(dtype)

    def eye_like(self, A):
        return torch.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand_as(A)

    def index(self, idx):
        return torch.as_tensor(np.asarray(idx, dtype=np.int64), device=self.device)

    def arange(self, n: int):
        return torch.arange(n, device=self.device)

    def astype(self, x, dtype: torch.dtype):
        return x if x.dtype == dtype else x.to(dtype)

    def cast_like(self, host, like):
        return torch.as_tensor(np.asarray(host), dtype=like.dtype, device=like.device)

    def concat(self, a, b, axis: int = 1):
        return torch.cat((a, b), dim=axis)

    def copy(self, x):
        return x.clone()

    def host(self, x) -> np.ndarray:
        return x.detach().cpu().numpy()

    def to_torch(self, x) -> torch.Tensor:
        return x

    def nbytes(self, x) -> int:
        return int(x.element_size() * x.nelement())

    def finfo(self, x):
        return torch.finfo(x.dtype)

    # -- elementwise and reductions ----------------------------------------------------------------
    def vecdot(self, x, y):
        return torch.linalg.vecdot(x, y)

    def matvec(self, A, x):
        return (A @ x[:, :, None])[:, :, 0]

    def log1p(self, x):
        return torch.log1p(x)

    def sqrt(self, x):
        return torch.sqrt(x)

    def abs(self, x):
        return x.abs()

    def maximum(self, x, y):
        if not isinstance(y, torch.Tensor):
            y = torch.as_tensor(y, dtype=x.dtype, device=x.device)
        return torch.maximum(x, y)

    def max_last(self, x):
        return x.amax(dim=-1, keepdim=True)

    def where(self, cond, x, y):
        return torch.where(cond, x, y)

    def flip_last(self, x):
        return x.flip(-1)

    def any(self, x) -> bool:
        return bool(x.any())

    def all_finite(self, x) -> bool:
        return math.isfinite(float(x.sum())) or bool(torch.isfinite(x).all())

    def norm_sq(self, x, dtype: torch.dtype):
        return torch.linalg.vector_norm(x, dim=-1, dtype=dtype).square()

    # -- linear algebra ----------------------------------------------------------------------------
    def eigh(self, G):
        return torch.linalg.eigh(G)

    def eigvalsh(self, G):
        return torch.linalg.eigvalsh(G)

    def svd(self, A):
        return torch.linalg.svd(A, full_matrices=False)

    def logdet(self, A) -> np.ndarray:
        return torch.linalg.slogdet(A)[1].double().cpu().numpy()

    def inv(self, A):
        return torch.linalg.inv(A)

    def cholesky(self, A):
        return torch.linalg.cholesky(A)

    def cholesky_ex(self, A):
        L, info = torch.linalg.cholesky_ex(A)
        return L, info.cpu().numpy() != 0

    def solve_lower(self, L, B):
        return torch.linalg.solve_triangular(L, B, upper=False)

    def qr_factor(self, A):
        return torch.linalg.qr(A, mode="r")[1]

    def at(self, members: np.ndarray, *slots: np.ndarray, width: int | None = None) -> tuple:
        """:meth:`NumpyBackend.at` as index tensors: one indexed store for every member."""
        key = (self.index(members), *[self.index(s[members]) for s in slots])
        return key if width is None else (*key, slice(0, width))

    def members_where(self, mask: np.ndarray) -> np.ndarray:
        return np.flatnonzero(mask)

    def row_range(self, src, idx: np.ndarray, starts: np.ndarray, count: int, width: int):
        rows = self.index(starts[:, None] + np.arange(count)[None, :])
        return src[self.index(idx)[:, None], rows, :width]

    def put_rows(
        self, dst, idx: np.ndarray, offsets: np.ndarray, src, counts: np.ndarray, stop: int
    ) -> None:
        ii = self.index(idx)
        keep = self.cast_like(np.arange(stop)[None, :] < offsets[:, None], dst)
        dst[ii, :stop] = dst[ii, :stop] * keep.reshape((idx.size, stop) + (1,) * (dst.ndim - 2))
        which = np.repeat(np.arange(idx.size), counts)
        j = np.arange(which.size) - np.repeat(np.cumsum(counts) - counts, counts)
        values = src[self.index(which), self.index(j)]
        rows, cols = self.index(idx[which]), self.index(offsets[which] + j)
        if src.ndim == 3:
            dst[rows, cols, : src.shape[2]] = values
        else:
            dst[rows, cols] = values

    def rank1_update_(self, A, x, alpha) -> None:
        """``A_i += alpha_i x_i x_i^T`` in place: one fused ``baddbmm``."""
        A.baddbmm_((x * alpha.to(A.dtype).reshape(-1, 1)).unsqueeze(2), x.unsqueeze(1))

    def outer_update_(self, A, x, y, alpha) -> None:
        """``A_i += alpha_i x_i y_i^T`` in place: one fused ``baddbmm``."""
        A.baddbmm_((x * alpha.to(A.dtype).reshape(-1, 1)).unsqueeze(2), y.unsqueeze(1))


NUMPY_CPU = NumpyBackend(torch.device("cpu"))


_torch_on_cpu = False  # (torch_on_cpu)


@contextlib.contextmanager
def torch_on_cpu(on: bool = True):
    """Estimators built inside this block run on the torch backend on the CPU too (those built
    before keep theirs): how the tests and ``--backend torch`` of the benchmarks run, on a machine
    without a GPU, the kernels a GPU runs. Not for speed (see the module docstring). ``on=False``
    changes nothing (the block of a caller that chose numpy)."""
    global _torch_on_cpu
    before, _torch_on_cpu = _torch_on_cpu, _torch_on_cpu or on
    try:
        yield
    finally:
        _torch_on_cpu = before


def choose_backend(device: torch.device, batch_size: int | None) -> Backend:
    """The one place the backend is chosen: numpy on the CPU, torch on any other device (see the
    module docstring; :func:`torch_on_cpu` asks for torch on the CPU). ``batch_size`` does not
    change the choice."""
    if device.type == "cpu" and not _torch_on_cpu:
        return NUMPY_CPU
    return TorchBackend(device)
