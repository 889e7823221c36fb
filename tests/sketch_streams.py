"""Random and adversarial row streams for the sketch tests (test_fd, test_rfd), the dense
widths their estimates are checked against, and the two backends they run on."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st

from agents.sketches.backend import torch_on_cpu

#: The backends an estimator's kernels run on: numpy (the CPU's) and torch (a GPU's, run here on
#: the CPU by :func:`on_backend`).
BACKENDS = ("numpy", "torch")


def on_backend(kind: str):
    """The block inside which estimators are built on the backend ``kind`` (:data:`BACKENDS`)."""
    return torch_on_cpu(kind == "torch")


KINDS = (
    "gauss",
    "lowrank",
    "powerlaw",
    "repeated",
    "orth_bursts",
    "huge_rows",
    "zero_rows",
    "rank_one_then_full",
)


def make_stream(kind: str, n: int, d: int, seed: int) -> np.ndarray:
    """An ``(n, d)`` float64 stream of the given kind (deterministic in ``seed``)."""
    rng = np.random.default_rng(seed)
    if kind == "gauss":
        X = rng.standard_normal((n, d))
    elif kind == "lowrank":  # rank r < d: FD must be exact once l > r
        r = int(rng.integers(1, max(2, d // 2) + 1))
        X = rng.standard_normal((n, r)) @ rng.standard_normal((r, d))
    elif kind == "powerlaw":  # heavy-tailed spectrum i^-a, randomly rotated
        a = rng.uniform(0.3, 1.5)
        Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        X = (rng.standard_normal((n, d)) * np.arange(1, d + 1) ** -a) @ Q.T
    elif kind == "repeated":  # the same few rows again and again, scaled
        base = rng.standard_normal((int(rng.integers(1, 4)), d))
        X = base[rng.integers(0, len(base), n)] * rng.uniform(0.5, 2.0, (n, 1))
    elif kind == "orth_bursts":  # bursts of orthonormal directions of very different scales
        Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        idx = np.concatenate([rng.permutation(d) for _ in range(n // d + 1)])[:n]
        X = Q[idx] * 10.0 ** rng.integers(-2, 3, (n, 1))
    elif kind == "huge_rows":  # a few rows 1e3 times the rest
        X = rng.standard_normal((n, d))
        X[rng.random(n) < 0.15] *= 1e3
    elif kind == "zero_rows":  # exact zero rows mixed in
        X = rng.standard_normal((n, d))
        X[rng.random(n) < 0.4] = 0.0
    elif kind == "rank_one_then_full":  # a long rank-1 phase, then full-rank noise
        u = rng.standard_normal(d)
        k = n // 2
        X = np.vstack([np.outer(rng.standard_normal(k), u), rng.standard_normal((n - k, d))])
    else:  # pragma: no cover
        raise ValueError(kind)
    return X.astype(np.float64)


DTYPES = (torch.float64, torch.float32)


def tol(X: np.ndarray, dtype: torch.dtype, d: int) -> float:
    """Absolute tolerance for spectral statements about X^T X in ``dtype``."""
    eps = torch.finfo(dtype).eps
    scale = float((X * X).sum()) + 1e-300
    return 50.0 * eps * (1.0 + np.sqrt(d)) * scale


stream_args = dict(
    kind=st.sampled_from(KINDS),
    n=st.integers(1, 50),
    d=st.integers(1, 10),
    l=st.integers(1, 12),
    seed=st.integers(0, 2**31 - 1),
    fast=st.booleans(),
    dtype=st.sampled_from(DTYPES),
)


def dense_quad(rows, c: float, arms: np.ndarray) -> np.ndarray:
    """``x^T (c I + S^T S)^-1 x`` per arm ``x`` (rows of ``arms``), in float64, for the rows ``S``
    (array or tensor): the width a sketch holding exactly these rows must report."""
    S = torch.as_tensor(rows).double().numpy()
    A = c * np.eye(S.shape[1]) + S.T @ S
    return np.einsum("kd,kd->k", arms, np.linalg.solve(A, arms.T).T)
