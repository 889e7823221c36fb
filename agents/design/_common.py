"""Input handling and span geometry shared by the design solvers (pure linear algebra).

Every solver works in the span of the arms, in *whitened* coordinates: with ``X = U S V^T``
(thin SVD) and ``r`` the numerical rank, the arms become ``Z = U_r = X V_r S_r^-1``
(``K x r``). For ``x`` in the span, ``||x||^2_{V(pi)^+} = ||z||^2_{V_Z(pi)^-1}`` with
``V_Z(pi) = sum_i pi_i z_i z_i^T`` (``r x r``, invertible for a good design), so a
rank-deficient arm set is handled exactly, and the Kiefer-Wolfowitz target is ``r``.

Why whitened rather than an orthonormal basis of the span (``X V_r``, an isometry): every
quantity of optimal design and least squares is invariant under an invertible linear change
of coordinates of the arms (``||x||_{V^-1}``, ``||x - x'||_{A^-1}``, OLS predictions
``x^T theta_hat``; theta's coordinates change, rewards and noise do not), so the choice is
free, and only the conditioning differs. In the isometric coordinates an arm set whose
norms span 1e-6..1e6 gives design matrices with condition numbers ~1e24, past any
Cholesky or pseudo-inverse cut-off: the solvers called such designs singular and the
best-arm agents never stopped. In whitened coordinates ``Z^T Z = I`` and every row has norm
``<= 1``, so a design with ``max_i ||z_i||^2_{V_Z(pi)^-1} <= g`` has
``cond(V_Z(pi)) <= K g`` (``tr V_Z^-1 = sum_i ||z_i||^2_{V_Z^-1} <= K g`` and
``lambda_max(V_Z) <= 1``) whatever the scale of the arms. What remains out of reach is a
direction below the rank tolerance (numpy's ``max(K, d) eps s_1``): it is treated as outside
the span, as ``numpy.linalg.matrix_rank`` would.
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .._validate import Interval, check_value

__all__ = [
    "DesignResult",
    "SpanArms",
    "span_arms",
    "check_eps",
    "check_max_iter",
    "as_weights",
    "design_matrix",
    "inverse_pd",
    "leverages",
    "pinv_quad",
    "to_output",
    "small_ops",
]


@dataclass
class DesignResult:
    """What a design solver returns besides the weights.

    Attributes:
        weights: design on the K arms (non-negative, sums to 1), same container type as
            the arms given (numpy array for numpy/list input, tensor for tensor input).
        value: the criterion at ``weights``: ``max_x ||x||^2_{V^-1}`` (G) or
            ``max_y ||y||^2_{V^-1}`` over the target differences (XY).
        bound: a certified lower bound on the optimal value (G: the rank ``r``, by
            Kiefer-Wolfowitz; XY: the duality bound of :func:`agents.design.xy_optimal_design`).
            ``value <= (1 + eps) * bound`` when ``converged``.
        rank: dimension r of span(arms).
        n_iter: Frank-Wolfe iterations run.
        converged: whether the stopping rule was met within ``max_iter``.
    """

    weights: Any
    value: float
    bound: float
    rank: int
    n_iter: int
    converged: bool
    extra: dict = field(default_factory=dict)


@dataclass
class SpanArms:
    """Arms in whitened coordinates of their span: ``z_i = basis^T x_i``, ``Z^T Z = I``."""

    z: torch.Tensor  # (K, r)
    basis: torch.Tensor  # (d, r): columns v_j / s_j, so z = x @ basis
    rank: int
    is_tensor: bool  # the caller gave a torch tensor (return tensors)
    device: torch.device
    dtype: torch.dtype


def _input_eps(arms: Any) -> float:
    """Machine epsilon of the caller's dtype (float32 arms are only float32-exact)."""
    dt = getattr(arms, "dtype", None)
    if dt in (torch.float32, torch.float16, torch.bfloat16) or dt in (np.float32, np.float16):
        return float(np.finfo(np.float32).eps)
    return float(np.finfo(np.float64).eps)


def span_arms(
    arms: Any,
    *,
    name: str = "arms",
    dtype: torch.dtype | None = None,
    rank_eps: float | None = None,
) -> SpanArms:
    """Validate a ``(K, d)`` arm matrix and express it in whitened coordinates of its span.

    ``z_i = S_r^-1 V_r^T x_i``, the rows of ``U_r`` in the thin SVD ``X = U S V^T`` (see the
    module docstring for why whitened: invariance of everything computed, and a condition
    number independent of the arms' scale).

    The rank tolerance is numpy's ``matrix_rank`` rule, ``max(K, d) * eps * s_max``, with
    ``eps`` of the caller's dtype (float32 input: float32 epsilon) unless ``rank_eps`` is
    given (e.g. by an agent that received float32 arms and converted them to float64), so
    arms lying in a subspace up to rounding are treated as lying in it.

    Raises:
        ValueError: not a 2-D real numeric array with K >= 1 rows and d >= 1 columns (complex
            values included), NaN/inf entries, or every arm is the zero vector (no design can
            estimate anything).
    """
    is_tensor = isinstance(arms, torch.Tensor)
    if arms.is_complex() if is_tensor else np.iscomplexobj(arms):
        # refused: the float conversions below would silently drop the imaginary part
        raise ValueError(
            f"{name} must be real-valued, got complex values; pass arms.real if that is meant"
        )
    if is_tensor:
        device = arms.device
        work_dtype = dtype or (torch.float64 if device.type == "cpu" else arms.dtype)
        if not arms.is_floating_point():
            work_dtype = dtype or torch.float64
        x = arms.detach().to(dtype=work_dtype)
    else:
        try:
            arr = np.asarray(arms, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} must be a numeric (K, d) matrix, got {type(arms).__name__}"
            ) from exc
        device = torch.device("cpu")
        work_dtype = dtype or torch.float64
        x = torch.as_tensor(arr).to(work_dtype)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"{name} must be a (K, d) matrix with K >= 1 arms and d >= 1, "
            f"got shape {tuple(x.shape)}"
        )
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or infinite entries; remove or fix those arms")
    k, d = x.shape
    u, s, vh = torch.linalg.svd(x, full_matrices=False)
    s_max = float(s[0]) if s.numel() else 0.0
    if s_max == 0.0:
        raise ValueError(
            f"all {k} {name} are the zero vector: they span {{0}}, "
            "so no design can estimate anything "
            "(pass at least one non-zero arm)"
        )
    tol = max(k, d) * (_input_eps(arms) if rank_eps is None else float(rank_eps)) * s_max
    r = int((s > tol).sum())
    basis = (vh[:r].T / s[:r]).contiguous()  # (d, r): z = x @ basis
    # U_r straight from the SVD (backward stable) rather than x @ basis, which would cancel
    # the large components of big arms in the small singular directions
    z = u[:, :r].contiguous()
    return SpanArms(z=z, basis=basis, rank=r, is_tensor=is_tensor, device=device, dtype=work_dtype)


def check_eps(eps: Any, name: str = "eps") -> float:
    """A design's relative accuracy: a finite real number > 0."""
    return check_value(
        name,
        eps,
        [Interval(numbers.Real, 0, None, closed="neither", hint="relative accuracy, e.g. 0.01")],
    )


def check_max_iter(max_iter: Any, default: int) -> int:
    """A solver's iteration budget: an int >= 0, or ``None`` for ``default``."""
    max_iter = check_value("max_iter", max_iter, [Interval(numbers.Integral, 0, None), None])
    return default if max_iter is None else max_iter


def as_weights(weights: Any, k: int | None = None, *, name: str = "weights") -> np.ndarray:
    """A design as a float64 numpy vector on the simplex (renormalised), or a ``ValueError``."""
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a 1-D array of non-negative numbers, got {type(weights).__name__}"
        ) from exc
    if w.ndim != 1 or w.size < 1:
        raise ValueError(
            f"{name} must be a non-empty 1-D array (one weight per arm), got shape {w.shape}"
        )
    if k is not None and w.size != k:
        raise ValueError(f"{name} has {w.size} entries but there are {k} arms")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    if np.any(w < 0):
        raise ValueError(f"{name} must be non-negative, got min {w.min()!r}")
    total = w.sum()
    if total <= 0:
        raise ValueError(f"{name} sum to 0: a design needs positive mass on at least one arm")
    return w / total


def design_matrix(z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``V(w) = sum_i w_i z_i z_i^T`` (one matmul)."""
    return (z * w[:, None]).T @ z


def inverse_pd(v: torch.Tensor) -> torch.Tensor | None:
    """Inverse of a symmetric positive-definite matrix, or ``None`` if it is singular."""
    v = 0.5 * (v + v.T)
    chol, info = torch.linalg.cholesky_ex(v)
    if int(info) != 0:
        return None
    diag = torch.diagonal(chol)
    if float(diag.min()) <= float(diag.max()) * 1e-12:  # numerically singular
        return None
    return torch.cholesky_inverse(chol)


def pinv_quad(v: torch.Tensor, y: torch.Tensor, rtol: float = 1e-10) -> torch.Tensor:
    """``y^T V^+ y`` for the rows of ``y``; ``inf`` for rows outside range(V) (not estimable)."""
    evals, evecs = torch.linalg.eigh(0.5 * (v + v.T))
    keep = evals > max(float(evals.max()), 1e-300) * rtol
    c = y @ evecs
    inv = torch.where(
        keep, 1.0 / torch.where(keep, evals, torch.ones_like(evals)), torch.zeros_like(evals)
    )
    q = ((c * c) * inv).sum(dim=1)
    if not bool(keep.all()):
        scale = torch.sqrt((y * y).sum(dim=1)).clamp(min=1e-300)
        outside = c[:, ~keep].abs().max(dim=1).values > 1e-8 * scale
        q = torch.where(outside, torch.full_like(q, math.inf), q)
    return q


def leverages(z: torch.Tensor, vinv: torch.Tensor) -> torch.Tensor:
    """``||z_i||^2_{vinv}`` for every row, one batched op."""
    return ((z @ vinv) * z).sum(dim=1)


def to_output(
    values: np.ndarray | torch.Tensor, like_tensor: bool, device: torch.device | None = None
):
    """Return numpy for numpy/list callers and a tensor (on their device) for tensor callers."""
    if like_tensor:
        t = values if isinstance(values, torch.Tensor) else torch.as_tensor(values)
        return t.to(device) if device is not None else t
    return values.detach().cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)


@contextlib.contextmanager
def small_ops(device: torch.device) -> Iterator[None]:
    """Run a loop of many small CPU tensor ops on one intra-op thread, then restore.

    Frank-Wolfe does thousands of O(K r) steps; torch's thread pool costs more than the
    arithmetic for such sizes (measured 5x slower with 2 threads on a busy 2-core machine),
    so the solvers pin one thread for their duration. No effect on accelerators.
    """
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    try:
        if before != 1:
            torch.set_num_threads(1)
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
