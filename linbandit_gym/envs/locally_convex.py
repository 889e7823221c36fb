"""Arm sets sampled from a sphere or an ellipsoid: a locally convex arm space (Wen et al. 2025, Obs.
1).

Wen et al. (2025), Sec. 2.3, Observation 1 and App. C.1, Theorem 5 (after Banerjee et al.
2023, Thm. 3.3): when the arm space has a curved ("locally convex") surface around the
optimal arm, every algorithm with O(sqrt T) expected regret has an expected design matrix
whose minimum eigenvalue grows as Omega(T^q), q in (0, 1/2]: low-regret play keeps
exploring every direction, so the played arms have a heavy spectral tail and SOFUL with any
sketch size l < d - T^(1/3 - q) has vacuous (linear) regret. This env is that arm space.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from .base import LinBanditEnv, check_nonnegative_float, check_positive_int, short_repr
from .memory import Allocation, MemoryEstimate

__all__ = ["LocallyConvexLinBanditEnv"]

_SHAPES = ("sphere", "ellipsoid")


def _check_local_frac(value) -> float:
    value = check_nonnegative_float("local_frac", value)
    if value > 1.0:
        raise ValueError(f"local_frac must be in [0, 1], got {value!r}")
    return value


def _unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    g = rng.standard_normal((n, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


#: The range of the observations' dtype, which every semi-axis must lie in.
_FLOAT32 = np.finfo(np.float32)


class LocallyConvexLinBanditEnv(LinBanditEnv):
    """Fresh arms on the unit sphere (or an ellipsoid's surface) every round; theta* on the sphere.

    Every round ``n_arms`` arms are drawn i.i.d. as ``x = a * u`` (elementwise), ``u``
    uniform on the unit sphere S^{d-1} and ``a`` the semi-axes (all ones for the sphere, so
    ``x = u``). For the ellipsoid ``{x : sum_i (x_i / a_i)^2 = 1}`` this is the image of the
    uniform law of the sphere, whose density is smooth and positive on the whole surface
    (not the surface-area measure). theta* is uniform on the unit sphere.

    The continuous arm space has the unique optimum ``x* = a^2 theta* / ||a theta*||`` with
    value ``||a theta*||`` (attributes ``optimum``, ``optimum_value``; the sphere: ``x* =
    theta*``). Around it the surface is curved, so the gap of an arm grows quadratically
    with its distance to ``x*`` in every direction: the near-optimal arms spread in all
    directions, and an agent that keeps playing near-optimal arms keeps adding mass to
    every direction of its design matrix (Banerjee et al. 2023). A finite, fixed,
    well-separated arm set lacks this: OFUL settles on one arm and ``lambda_min`` of its
    design matrix stalls (``tests/test_locally_convex_env.py`` shows both).

    **Arms per round.** The best of ``K`` uniform arms sits at angle ~ ``K^(-1/(d-1))``
    from theta*. Measured mean angle between theta* and the best of ``K`` uniform arms
    on the sphere (50 draws):

    | d | K = 100 | K = 1000 | K = 5000 |
    |---|---|---|---|
    | 3 | 0.18 | 0.053 | 0.025 |
    | 5 | 0.43 | 0.25 | 0.16 |
    | 10 | 0.78 | 0.57 | 0.47 |
    | 20 | 0.98 | 0.86 | 0.76 |

    So the defaults ``d = 5``, ``n_arms = 1000`` cover the cap around theta* to ~0.25 rad
    (mean instantaneous gap ``1 - cos`` ~ 0.03) at a cost of one 1000 x 5 matmul a round.
    For larger ``d`` no affordable ``K`` covers the sphere; ``local_frac > 0`` then draws
    that fraction of the arms in caps around ``x*`` at log-uniform angles in
    ``[local_min_angle, pi/2]`` (in random rows), so near-optimal arms exist at every scale.
    Caveat: such a non-uniform arm law carries information about theta* (the average
    observed arm points at ``x*``); it is off by default so that theta* is learnable only
    from rewards.

    ## Action Space
    ``Discrete(n_arms)``: the index of the arm to play.

    ## Observation Space
    ``Box(-max(a), max(a), (n_arms, d), float32)`` (``Box(-1, 1, ...)`` for the sphere): this
    round's arm set, one arm per row (unit norm for the sphere).

    ## Rewards
    ``<x_a, theta*> + N(0, noise_std^2)``. ``info`` holds ``expected_reward``,
    ``best_expected_reward``, ``regret`` (w.r.t. the best arm of the round) and ``best_arm``.

    ## Starting State
    ``reset(seed=s)`` draws theta* and fixes the arm and noise streams.

    ## Episode End
    Truncated after ``horizon`` rounds; never terminated.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``d`` | 5 | dimension, >= 2 |
    | ``n_arms`` | 1000 | arms per round K (at d = 5, a cap of ~0.25 rad around theta*) |
    | ``horizon`` | 2000 | rounds per episode |
    | ``noise_std`` | 0.1 | std of the Gaussian reward noise |
    | ``shape`` | None | ``"sphere"`` or ``"ellipsoid"``; None: ellipsoid iff ``axes`` is given |
    | ``axes`` | None | the d semi-axes (> 0) of the ellipsoid (default ``linspace(1, 0.5, d)``) |
    | ``local_frac`` | 0.0 | fraction of each round's arms drawn near ``x*`` (in [0, 1]) |
    | ``local_min_angle`` | 0.01 | smallest angle (rad) of those arms to ``x*``, in (0, pi/2) |
    | ``render_mode`` | None | None, ``"rgb_array"`` or ``"human"`` (see ``LinBanditEnv``) |

    ## Version History
    * v0: initial version.

    Example:

    >>> env = LocallyConvexLinBanditEnv(d=3, n_arms=500)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, bool(np.allclose(np.linalg.norm(obs, axis=1), 1.0))
    ((500, 3), True)
    >>> bool(info["best_expected_reward"] > 0.95)  # some arm lies close to theta*
    True
    """

    def __init__(
        self,
        d: int = 5,
        n_arms: int = 1000,
        horizon: int = 2000,
        noise_std: float = 0.1,
        shape: str | None = None,
        axes: Sequence[float] | np.ndarray | None = None,
        local_frac: float = 0.0,
        local_min_angle: float = 0.01,
        render_mode: str | None = None,
    ):
        d = check_positive_int("d", d, minimum=2)  # S^0 = {-1, 1} has no curved surface
        n_arms = check_positive_int("n_arms", n_arms, minimum=2)
        local_frac = _check_local_frac(local_frac)
        if (
            isinstance(local_min_angle, (bool, np.bool_))
            or not isinstance(local_min_angle, numbers.Real)
            or not (0.0 < local_min_angle < math.pi / 2)
        ):
            raise ValueError(
                "local_min_angle must be an angle in (0, pi/2) radians, got "
                f"{short_repr(local_min_angle)}"
            )
        self._refuse_if_too_large(
            self._memory_estimate(
                d=d, n_arms=n_arms, horizon=horizon, render_mode=render_mode, local_frac=local_frac
            )
        )
        if shape is None:
            shape = "sphere" if axes is None else "ellipsoid"
        if not isinstance(shape, str) or shape not in _SHAPES:
            raise ValueError(f"shape must be one of {_SHAPES}, got {short_repr(shape)}")
        if shape == "sphere":
            if axes is not None:
                raise ValueError(
                    "axes= describes an ellipsoid; pass shape='ellipsoid' (or omit shape) with axes"
                )
            semi_axes = np.ones(d)
        elif axes is None:
            semi_axes = np.linspace(1.0, 0.5, d)
        else:
            if np.iscomplexobj(axes):  # a cast would drop the imaginary part silently
                raise ValueError(
                    f"axes must be real numbers, got complex values {short_repr(axes)}"
                )
            try:
                semi_axes = np.asarray(axes, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    f"axes must be a sequence of d={d} positive numbers, got {short_repr(axes)}"
                ) from None
            if (
                semi_axes.shape != (d,)
                or not np.all(np.isfinite(semi_axes))
                or not np.all(semi_axes > 0)
            ):
                raise ValueError(
                    f"axes must be a sequence of d={d} finite positive numbers, got "
                    f"{short_repr(axes)}"
                )
            low, high = float(_FLOAT32.tiny), float(_FLOAT32.max)
            if not np.all((semi_axes >= low) & (semi_axes <= high)):
                raise ValueError(
                    f"axes must lie in [{low:.3g}, {high:.3g}] (the arms are float32 "
                    "observations: a longer axis is inf there, a shorter one 0), got "
                    f"{short_repr(axes)}"
                )
        # every coordinate satisfies |x_i| <= a_i <= max(a)
        super().__init__(
            d=d,
            n_arms=n_arms,
            horizon=horizon,
            noise_std=noise_std,
            arm_bound=float(np.max(semi_axes)),
            render_mode=render_mode,
        )
        self.shape = shape
        self.axes = semi_axes
        self.local_frac = local_frac
        self.local_min_angle = float(local_min_angle)
        self.n_local = int(round(self.local_frac * self.n_arms))
        self.optimum: np.ndarray | None = None
        self.optimum_value: float | None = None

    @classmethod
    def _memory_estimate(cls, *, d, local_frac=0.0, **arguments) -> MemoryEstimate:
        estimate = super()._memory_estimate(d=check_positive_int("d", d, minimum=2), **arguments)
        n_arms, d = estimate.obs_shape
        n_local = int(round(_check_local_frac(local_frac) * n_arms))
        return estimate.plus(
            Allocation("the semi-axes, x* and its direction", d, 32, ("d",), "lower d"),
            # the cap draws: directions, their projections and the rotated arms (see _sample_arms)
            Allocation(
                "the arms drawn near x*",
                n_local * d,
                16,
                ("local_frac x n_arms", "d"),
                "lower local_frac, n_arms or d",
                transient=True,
            ),
        )

    def _sample_problem(self, rng: np.random.Generator) -> None:
        self.theta_star = _unit_rows(rng, 1, self.d)[0]
        a_theta = self.axes * self.theta_star
        self.optimum_value = float(np.linalg.norm(a_theta))
        self._u_star = a_theta / self.optimum_value  # x* = a * u_star
        self.optimum = self.axes * self._u_star

    def _sample_arms(self, rng: np.random.Generator) -> np.ndarray:
        u = _unit_rows(rng, self.n_arms, self.d)
        if self.n_local:
            # Rotate u_star by a log-uniform angle towards a random orthogonal direction.
            m = self.n_local
            v = rng.standard_normal((m, self.d))
            v -= np.outer(v @ self._u_star, self._u_star)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            phi = np.exp(rng.uniform(math.log(self.local_min_angle), math.log(math.pi / 2), size=m))
            rows = rng.permutation(self.n_arms)[:m]
            u[rows] = np.cos(phi)[:, None] * self._u_star + np.sin(phi)[:, None] * v
        return u * self.axes
