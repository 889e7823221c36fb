"""The array namespace every estimator's kernels are written against, and the one place it is chosen.

Each estimator (exact, FD, RFD, Dyadic Block Sketch) is written once, batch dimension first, with
operators numpy arrays and torch tensors share (``@``, ``*``, ``+``, slicing, item and index
stores, ``.mT``) and the functions of a :class:`Backend`, where their spellings differ: the
approach scikit-learn and SciPy take with the array API standard, with a namespace of our own
that adds no per-call cost on the hot path.

:func:`choose_backend` decides, once, when an estimator is built:

* ``batch_size=None`` (one estimator) on CPU: numpy arrays with a leading batch dimension of one.
  A round of a single agent is a few dozen small operations beside its one big product, and a
  numpy call has a smaller fixed cost than a torch dispatch (``benchmarks/profile_agents.py``
  measures both sides).
* anything else (a batch of members, or any other device): torch tensors on that device.

Both run the very same kernels; the tests compare them on the same streams. Public accessors of
the estimators return torch tensors whatever the backend (a numpy array is shared with
``torch.from_numpy``, no copy).
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["Backend", "choose_backend", "NUMPY_CPU"]

from scipy.linalg.blas import dger, sger

_NP_DTYPE = {torch.float64: np.float64, torch.float32: np.float32}
_GER = {np.dtype(np.float64): dger, np.dtype(np.float32): sger}


class Backend:
    """numpy (CPU) or torch (any device): creation, the few functions whose spellings differ,
    linear algebra and conversions. Arrays of the numpy backend are ``numpy.ndarray``; of the
    torch backend ``torch.Tensor`` on :attr:`device`."""

    def __init__(self, kind: str, device: torch.device):
        if kind not in ("numpy", "torch"):
            raise ValueError(f"unknown backend {kind!r}")
        self.kind = kind
        self.is_numpy = kind == "numpy"
        self.device = device
        self.index_dtype = np.int64 if self.is_numpy else torch.long

    def __repr__(self) -> str:
        return f"Backend({self.kind!r}, {str(self.device)!r})"

    # -- dtypes and creation ----------------------------------------------------------------------
    def dtype(self, dtype: torch.dtype):
        """The backend's dtype for a torch float dtype."""
        return _NP_DTYPE[dtype] if self.is_numpy else dtype

    def zeros(self, shape, dtype: torch.dtype):
        if self.is_numpy:
            return np.zeros(shape, dtype=_NP_DTYPE[dtype])
        return torch.zeros(shape, dtype=dtype, device=self.device)

    def eye(self, n: int, dtype: torch.dtype):
        if self.is_numpy:
            return np.eye(n, dtype=_NP_DTYPE[dtype])
        return torch.eye(n, dtype=dtype, device=self.device)

    def asarray(self, x, dtype: torch.dtype):
        """``x`` (array, tensor, list or scalar) as an array of ``dtype`` (shared when it already is one)."""
        if self.is_numpy:
            if isinstance(x, torch.Tensor):
                x = x.detach().cpu().numpy()
            return np.asarray(x, dtype=_NP_DTYPE[dtype])
        if isinstance(x, torch.Tensor):
            return x.to(device=self.device, dtype=dtype)
        x = np.asarray(x, dtype=np.float64)
        return torch.as_tensor(x if x.flags.writeable else x.copy(), device=self.device).to(dtype)

    def index(self, idx):
        """Host integer indices ``idx`` as the backend's index array."""
        if self.is_numpy:
            return np.asarray(idx, dtype=np.int64)
        return torch.as_tensor(np.asarray(idx, dtype=np.int64), device=self.device)

    def arange(self, n: int):
        return np.arange(n) if self.is_numpy else torch.arange(n, device=self.device)

    def astype(self, x, dtype: torch.dtype):
        """``x`` in ``dtype`` (``x`` itself when it already is)."""
        if self.is_numpy:
            target = _NP_DTYPE[dtype]
            return x if x.dtype == target else x.astype(target)
        return x if x.dtype == dtype else x.to(dtype)

    def cast_like(self, host, like):
        """The host array ``host`` in the dtype (and device) of the array ``like``."""
        if self.is_numpy:
            return np.asarray(host, dtype=like.dtype)
        return torch.as_tensor(np.asarray(host), dtype=like.dtype, device=like.device)

    def concat(self, a, b, axis: int = 1):
        return np.concatenate((a, b), axis=axis) if self.is_numpy else torch.cat((a, b), dim=axis)

    def copy(self, x):
        return x.copy() if self.is_numpy else x.clone()

    def host(self, x) -> np.ndarray:
        """``x`` as a float64 (or int/bool) numpy array on the host."""
        if self.is_numpy:
            return np.asarray(x)
        return x.detach().cpu().numpy()

    def to_torch(self, x) -> torch.Tensor:
        """``x`` as a torch tensor (a numpy array is shared, not copied)."""
        return torch.from_numpy(x) if self.is_numpy else x

    # -- elementwise and reductions whose spellings differ ----------------------------------------
    def vecdot(self, x, y):
        """``sum_i x_i y_i`` over the last axis."""
        return np.vecdot(x, y) if self.is_numpy else torch.linalg.vecdot(x, y)

    def log1p(self, x):
        return np.log1p(x) if self.is_numpy else torch.log1p(x)

    def matvec(self, A, x):
        """``A_i x_i`` for stacks ``A`` ``(B, n, m)`` and ``x`` ``(B, m)``."""
        return np.matvec(A, x) if self.is_numpy else (A @ x[:, :, None])[:, :, 0]

    def sqrt(self, x):
        return np.sqrt(x) if self.is_numpy else torch.sqrt(x)

    def maximum(self, x, y):
        if self.is_numpy:
            return np.maximum(x, y)
        return torch.maximum(x, y if isinstance(y, torch.Tensor) else torch.as_tensor(y, dtype=x.dtype, device=x.device))

    def where(self, cond, x, y):
        if self.is_numpy:
            return np.where(cond, x, y)
        return torch.where(cond, x, y)

    def flip_last(self, x):
        """``x`` reversed along its last axis."""
        return x[..., ::-1] if self.is_numpy else x.flip(-1)

    def any(self, x) -> bool:
        """Whether some entry of ``x`` is nonzero (True)."""
        return np.count_nonzero(x) > 0 if self.is_numpy else bool(x.any())

    def all_finite(self, x) -> bool:
        """Whether every entry of ``x`` is finite, from its sum (one pass: an inf or NaN entry makes
        the sum inf or NaN; only a finite sum that overflowed is checked entrywise)."""
        if self.is_numpy:
            if x.size <= 64:  # a sum of Python floats: overflows to inf without a warning
                return math.isfinite(sum(x.ravel().tolist())) or bool(np.isfinite(x).all())
            with np.errstate(over="ignore", invalid="ignore"):  # (huge finite entries may overflow the sum)
                return math.isfinite(float(x.sum())) or bool(np.isfinite(x).all())
        return math.isfinite(float(x.sum())) or bool(torch.isfinite(x).all())

    def norm_sq(self, x, dtype: torch.dtype):
        """``||x||^2`` over the last axis, summed in ``dtype`` (float32 arms summed in float64 see
        exactly the squares float64 would: the values are exact in float64)."""
        if self.is_numpy:
            target = _NP_DTYPE[dtype]
            xc = x if x.dtype == target else x.astype(target)
            return np.vecdot(xc, xc)
        return torch.linalg.vector_norm(x, dim=-1, dtype=dtype).square()

    # -- linear algebra (stacks of matrices) ------------------------------------------------------
    def eigh_desc(self, G):
        """Eigenvalues (descending) and eigenvectors (columns, same order) of the symmetric ``G``
        (``(..., n, n)``; the lower triangle is read)."""
        if self.is_numpy:
            w, U = np.linalg.eigh(G)
            return w[..., ::-1], U[..., ::-1]
        w, U = torch.linalg.eigh(G)
        return w.flip(-1), U.flip(-1)

    def eigvalsh_desc(self, G):
        if self.is_numpy:
            return np.linalg.eigvalsh(G)[..., ::-1]
        return torch.linalg.eigvalsh(G).flip(-1)

    def svd(self, A):
        """Thin SVD of ``A`` (``(..., n, m)``): ``(U, s, Wh)`` with ``A = U diag(s) Wh``, ``s`` descending."""
        if self.is_numpy:
            return np.linalg.svd(A, full_matrices=False)
        return torch.linalg.svd(A, full_matrices=False)

    def logdet(self, A) -> np.ndarray:
        """``log det A`` of symmetric positive definite ``A`` (``(..., n, n)``), host float64."""
        if self.is_numpy:
            return np.linalg.slogdet(A)[1].astype(np.float64)
        return torch.linalg.slogdet(A)[1].double().cpu().numpy()

    def svdvals(self, A):
        """Singular values of ``A`` (``(..., n, m)``), descending."""
        if self.is_numpy:
            return np.linalg.svd(A, compute_uv=False)
        return torch.linalg.svdvals(A)

    def cholesky(self, A):
        """Lower Cholesky factors of the symmetric positive definite ``A`` (``(..., n, n)``)."""
        return np.linalg.cholesky(A) if self.is_numpy else torch.linalg.cholesky(A)

    def solve_lower(self, L, B):
        """``L^-1 B`` for lower triangular ``L`` (``(..., n, n)``) and ``B`` (``(..., n, m)``)."""
        if self.is_numpy:
            return np.linalg.solve(L, B)
        return torch.linalg.solve_triangular(L, B, upper=False)

    def qr(self, A):
        """Reduced QR of ``A`` (``(..., n, m)``, n >= m): ``Q`` (``(..., n, m)``, orthonormal columns), ``R``."""
        if self.is_numpy:
            return np.linalg.qr(A)
        return torch.linalg.qr(A)

    def rank1_update_(self, A, x, alpha) -> None:
        """``A_i += alpha_i x_i x_i^T`` in place for a stack of symmetric ``A`` ``(B, n, n)``, ``x`` ``(B, n)``,
        ``alpha`` ``(B,)``: BLAS ``ger`` per member on numpy (one pass, no ``n x n`` temporary), one fused
        ``baddbmm`` on torch."""
        if self.is_numpy:
            ger = _GER[A.dtype]
            for i, a in enumerate(alpha.tolist()):
                At = A[i].T  # A is symmetric: updating A^T (Fortran-ordered) in place is updating A
                if ger(a, x[i], x[i], 1, 1, At, 1, 1, 1) is not At:  # (incx, incy, a, overwrite_x, overwrite_y, overwrite_a)
                    raise RuntimeError("BLAS ger did not update in place")
            return
        A.baddbmm_((x * alpha.to(A.dtype).reshape(-1, 1)).unsqueeze(2), x.unsqueeze(1))

    def inv_spd(self, A):
        """Inverses of the symmetric positive definite ``A`` (``(..., n, n)``), via Cholesky; a
        member whose factorization fails (rounding made it look indefinite) is inverted from its
        eigendecomposition with the eigenvalues clamped at the smallest one its construction
        guarantees (the caller adds ``c I``: see :func:`spd_inverse`)."""
        return spd_inverse(self, A)


def spd_inverse(xp: Backend, A):
    """``A^-1`` for a stack of symmetric positive definite matrices, symmetrised.

    Cholesky ``A = L L^T``, then ``A^-1 = L^-T L^-1``. Where the factorization fails (only when
    rounding has made a matrix with eigenvalues far apart look indefinite), that member goes
    through ``eigh`` with its eigenvalues clamped below at ``n eps lambda_max`` (the rounding level
    of the decomposition), which is finite and positive definite."""
    n = A.shape[-1]
    if n == 0:
        return xp.copy(A)
    if xp.is_numpy:
        try:
            L = np.linalg.cholesky(A)
            Linv = np.linalg.inv(L)
            out = Linv.mT @ Linv
            return 0.5 * (out + out.mT)
        except np.linalg.LinAlgError:
            w, U = np.linalg.eigh(A)
            floor = n * np.finfo(A.dtype).eps * np.abs(w).max(axis=-1, keepdims=True)
            w = np.maximum(w, np.maximum(floor, np.finfo(A.dtype).tiny))
            return (U / w[..., None, :]) @ U.mT
    L, info = torch.linalg.cholesky_ex(A)
    eye = torch.eye(n, dtype=A.dtype, device=A.device).expand_as(A)
    Linv = torch.linalg.solve_triangular(L, eye, upper=False)
    out = Linv.mT @ Linv
    bad = torch.nonzero(info).flatten()
    if bad.numel():
        w, U = torch.linalg.eigh(A[bad])
        floor = n * torch.finfo(A.dtype).eps * w.abs().amax(dim=-1, keepdim=True)
        w = torch.maximum(w, floor.clamp(min=torch.finfo(A.dtype).tiny))
        out[bad] = (U / w.unsqueeze(-2)) @ U.mT
    return 0.5 * (out + out.mT)


NUMPY_CPU = Backend("numpy", torch.device("cpu"))


def choose_backend(device: torch.device, batch_size: int | None) -> Backend:
    """The one place the backend is chosen: numpy for a single estimator on CPU, torch otherwise
    (see the module docstring)."""
    if batch_size is None and device.type == "cpu":
        return NUMPY_CPU
    return Backend("torch", device)


