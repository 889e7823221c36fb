"""Device, dtype and input handling shared by every torch agent and sketch.

Kept in one place so that every agent rejects a bad device or a malformed arm set with
the same clear message, and so that no module ever writes a ``.cuda()`` literal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

__all__ = [
    "DeviceLike",
    "DTypeLike",
    "resolve_device",
    "resolve_dtype",
    "as_arm_matrix",
    "as_float_array",
    "as_vector",
    "obs_token",
    "same_obs",
    "tensor_bytes",
]

#: What a ``device=`` argument takes: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, a ``torch.device``,
#: or None (CPU).
DeviceLike = str | torch.device | None
#: What a ``dtype=`` argument takes: ``"float64"``/``"float32"``,
#: ``torch.float64``/``torch.float32``, or None.
DTypeLike = str | torch.dtype | None

_DTYPES = {
    "float64": torch.float64,
    "double": torch.float64,
    "float32": torch.float32,
    "float": torch.float32,
}


def resolve_device(device: str | torch.device | None) -> torch.device:
    """Return a ``torch.device``, failing clearly when the backend is not available.

    ``None`` means CPU. ``"cuda"`` (or ``"cuda:N"``) without a CUDA build or GPU raises a
    ``ValueError`` naming the fix, instead of torch's lazy failure at the first tensor.
    """
    if device is None:
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"device={device!r} is not a valid torch device; use 'cpu', 'cuda' or 'cuda:N'"
        ) from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} was requested but CUDA is not available "
                "(torch.cuda.is_available() is False: no GPU, or a CPU-only torch build); "
                "use device='cpu'"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} but only {torch.cuda.device_count()} CUDA device(s) exist"
            )
    elif dev.type == "mps":
        if not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
            raise ValueError(f"device={device!r} was requested but MPS is not available; use 'cpu'")
    elif dev.type != "cpu":
        raise ValueError(f"device={device!r} is not supported; use 'cpu', 'cuda' or 'mps'")
    return dev


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """float64 by default on CPU (exactness for tests), float32 by default on accelerators."""
    if dtype is None:
        return torch.float64 if device.type == "cpu" else torch.float32
    if isinstance(dtype, str):
        if dtype not in _DTYPES:
            raise ValueError(f"dtype={dtype!r} is not supported; use 'float64' or 'float32'")
        dtype = _DTYPES[dtype]
    if dtype not in (torch.float64, torch.float32):
        raise ValueError(f"dtype={dtype!r} is not supported; use torch.float64 or torch.float32")
    if dtype == torch.float64 and device.type == "mps":
        raise ValueError("MPS has no float64; use dtype=torch.float32 on device='mps'")
    return dtype


def _all_finite(t: torch.Tensor) -> bool:
    """``bool(torch.isfinite(t).all())`` (or of a numpy array) from one pass: a sum is finite only
    if every entry is (an inf or NaN entry makes it inf/NaN), and the elementwise check runs only
    when the sum is not finite (NaN/inf present, or a legitimate overflow of huge entries). The
    sum's finiteness is read on the host (``math.isfinite(.item())``), not by another dispatched
    op."""
    if isinstance(t, np.ndarray):
        if t.size <= 64:  # a few scores: the sum of Python floats (which overflows to inf without a
            # warning, unlike numpy reductions) costs less than a numpy call
            return math.isfinite(sum(t.ravel().tolist())) or bool(np.isfinite(t).all())
        return bool(np.isfinite(t).all())
    return math.isfinite(t.sum().item()) or bool(torch.isfinite(t).all())


_NUMPY_OF = {torch.float64: np.float64, torch.float32: np.float32}
_HOST_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))  # native byte order
_CPU = torch.device("cpu")  # compared with ==: device.type builds a str each call


def as_float_tensor(
    obs: Any, device: torch.device, dtype: torch.dtype, what: str, own: bool = False
) -> torch.Tensor:
    """``obs`` (tensor, numpy array or nested lists) as a tensor on ``device`` of ``dtype``;
    a ``ValueError`` saying the observation must be a numeric ``what`` when it is not numeric.

    ``own=True``: a numpy ``obs`` is always copied (never shared with the tensor), so a later
    in-place change of the array cannot reach the tensor (the single agent's snapshot of the
    arms it scored); otherwise a float64 array on CPU is shared, anything else copied. A
    float32/float64 array bound for the CPU is cast by numpy, which copies at most once (where
    ``as_tensor(...).to(...)`` and a separate ``clone`` would copy twice); the values are the same
    (one round-to-nearest cast either way)."""
    if isinstance(obs, torch.Tensor):
        if (
            obs.requires_grad
        ):  # the agents learn by linear algebra, not autograd (and read CPU arms as numpy views)
            obs = obs.detach()
        if obs.dtype == dtype and obs.device == device:
            return obs  # what .to() would return, without its call overhead (every act)
        if obs.is_complex():
            raise ValueError(_complex_message(what))
        _check_data_device(obs, what)
        return obs.to(device=device, dtype=dtype)
    if type(obs) is np.ndarray and obs.dtype in _HOST_FLOATS and device == _CPU:
        # shared (not own) only where the plain conversion below shares: a float64 array
        return torch.from_numpy(
            obs.astype(_NUMPY_OF[dtype], copy=own or obs.dtype is not _HOST_FLOATS[0])
        )
    try:
        arr = np.asarray(obs)
        is_complex = arr.dtype.kind == "c"
        if not is_complex:
            arr = arr.astype(np.float64, copy=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"the observation must be a numeric {what}, got {type(obs).__name__}"
        ) from exc
    if is_complex:
        raise ValueError(_complex_message(what))
    t = torch.as_tensor(arr, device=device)
    t = t if t.dtype == dtype else t.to(dtype)
    if (
        own
        and isinstance(obs, np.ndarray)
        and t.device.type == "cpu"
        and (t.data_ptr() == arr.__array_interface__["data"][0])
    ):
        t = t.clone()  # shares obs's memory (an ndarray subclass of float64, say): copy it
    return t


def as_float_array(obs: Any, dtype: torch.dtype, what: str, own: bool = False) -> np.ndarray:
    """:func:`as_float_tensor` for an estimator on the numpy backend: ``obs`` as a numpy array of
    ``dtype`` (a CPU tensor's memory is shared; ``own``: a numpy ``obs`` is copied, never
    shared)."""
    if isinstance(obs, torch.Tensor):
        if obs.requires_grad:
            obs = obs.detach()
        if obs.dtype == dtype and obs.device == _CPU:
            return obs.numpy()  # what .to() would give, without its call
        if obs.is_complex():
            raise ValueError(_complex_message(what))
        _check_data_device(obs, what)
        return obs.to(device=_CPU, dtype=dtype).numpy()
    if type(obs) is np.ndarray and obs.dtype in _HOST_FLOATS:
        return obs.astype(_NUMPY_OF[dtype], copy=own or obs.dtype is not _HOST_FLOATS[0])
    try:
        arr = np.asarray(obs)
        is_complex = arr.dtype.kind == "c"
        if not is_complex:
            arr = arr.astype(_NUMPY_OF[dtype], copy=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"the observation must be a numeric {what}, got {type(obs).__name__}"
        ) from exc
    if is_complex:
        raise ValueError(_complex_message(what))
    if type(arr) is not np.ndarray:  # a subclass (np.matrix): a plain array of its values
        arr = np.array(arr)
    elif own and isinstance(obs, np.ndarray) and np.shares_memory(arr, obs):
        arr = arr.copy()
    return arr


def _check_data_device(obs: torch.Tensor, what: str) -> None:
    """A ``ValueError`` naming the device of a tensor whose values cannot be read: a ``meta`` tensor
    holds shapes only (and torch's own error, a ``NotImplementedError``, does not say so)."""
    if obs.device.type == "meta" or obs.is_meta:
        raise ValueError(
            f"the observation is a tensor on device {str(obs.device)!r}, which holds no values "
            f"(shapes only); pass the {what} as a tensor on 'cpu' (or the agent's device) or a "
            "numpy array"
        )


def _complex_message(what: str) -> str:
    # complex input is refused: the casts would silently drop the imaginary part
    return (
        f"the observation must be a real-valued {what}, got complex values; pass obs.real if "
        "that is meant"
    )


NONFINITE_ARMS = "the arm matrix contains NaN or infinite entries"


def as_arm_matrix(
    obs: Any,
    device: torch.device,
    dtype: torch.dtype,
    d: int | None,
    check_finite: bool = True,
    own: bool = False,
    host: bool = False,
) -> torch.Tensor:
    """Convert an arm set (numpy array, tensor or nested list) of shape (K, d) to a tensor
    (``host``: to a numpy array, :func:`as_float_array`, for an estimator on the numpy backend).

    Raises ``ValueError`` with the received shape when the input is not a finite 2-D array
    whose second dimension matches ``d`` (when ``d`` is already known). ``check_finite=False``
    leaves the NaN/inf test to the caller, who must run it before trusting anything derived
    from the arms (LinUCB does it only when the scores come out non-finite, which non-finite
    arms always make them). ``own``: see :func:`as_float_tensor`.
    """
    what = "(K, d) arm matrix"
    arms = (
        as_float_array(obs, dtype, what, own)
        if host
        else as_float_tensor(obs, device, dtype, what, own)
    )
    shape = arms.shape  # read once: each .shape builds a torch.Size (this runs every act)
    if len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
        raise ValueError(
            "the observation must be a (K, d) arm matrix with K >= 1 arms, got shape "
            f"{tuple(arms.shape)}"
        )
    if d is not None and shape[1] != d:
        raise ValueError(
            f"arm dimension changed: the agent was built for d={d} but got arms of shape "
            f"{tuple(arms.shape)}; call agent.reset() before playing an env of another dimension"
        )
    if check_finite and not _all_finite(arms):
        raise ValueError(NONFINITE_ARMS)
    return arms


def as_vector(
    v: Any, device: torch.device, dtype: torch.dtype, d: int, name: str = "x"
) -> torch.Tensor:
    """A length-``d`` finite vector on the device, or a ``ValueError`` naming ``name``."""
    t = (
        v.to(device=device, dtype=dtype)
        if isinstance(v, torch.Tensor)
        else torch.as_tensor(np.asarray(v, dtype=np.float64), device=device).to(dtype)
    )
    if t.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},), got {tuple(t.shape)}")
    if not _all_finite(t):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return t


def obs_token(obs: Any) -> tuple | None:
    """What identifies an observation object between an agent's ``act`` and ``update`` (its
    scoring is then reused): a tensor together with its in-place version counter; a numpy array
    (which ``act`` copied) together with its shape (numpy lets ``obs.shape`` be reassigned in
    place). Other inputs (lists, ...) are not identified: None."""
    if isinstance(obs, torch.Tensor):
        return obs, obs._version, None
    if isinstance(obs, np.ndarray):
        return obs, None, obs.shape
    return None


def same_obs(token: tuple, obs: Any) -> bool:
    """Whether ``obs`` is the observation of :func:`obs_token`'s ``token``, unchanged: the very
    numpy array with the same shape, or the same tensor or an equal view of it (``arms[t]``
    indexed twice: same storage, offset, sizes, strides and dtype) whose version counter has not
    moved."""
    seen, version, shape = token
    if version is None:
        return seen is obs and obs.shape == shape
    return (
        isinstance(obs, torch.Tensor)
        and obs._version == version
        and (seen is obs or (obs.is_set_to(seen) and obs.dtype is seen.dtype))
    )


def tensor_bytes(*tensors: torch.Tensor | None) -> int:
    """Bytes held by the given tensors (``None`` entries count zero)."""
    return int(sum(t.element_size() * t.nelement() for t in tensors if t is not None))
