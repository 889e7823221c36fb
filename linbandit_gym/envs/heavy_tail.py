"""Gaussian arms with a power-law spectrum, or exactly low rank (Wen et al. 2025, Sec. 2.3 and 5).

Wen et al. (2025) contrast two regimes of the streaming matrix ``X`` of played arms: a heavy
spectral tail, where a fixed sketch size ``l`` leaves a spectral error ``Delta_T`` that grows
with ``T`` and SOFUL/CBSCFD turn linear (Sec. 2.3, Lemma 2), and an exactly low-rank stream,
where a sketch of size >= rank is exact (App. D.2, the low-rank case). This env produces
either, with the spectrum chosen by the user.
"""

from __future__ import annotations

import numbers

import numpy as np

from .base import LinBanditEnv, check_bool, check_positive_int, is_finite_real, short_repr
from .memory import Allocation, MemoryEstimate

__all__ = ["HeavyTailLinBanditEnv", "power_law_spectrum", "normalized_spectrum"]


def power_law_spectrum(d: int, alpha: float, rank: int | None = None) -> np.ndarray:
    """``lambda_i = i^-alpha / sum_{j<=r} j^-alpha`` for ``i <= r`` and 0 beyond (sums to 1).

    >>> power_law_spectrum(4, 1.0, rank=2).round(3).tolist()
    [0.667, 0.333, 0.0, 0.0]
    """
    r = d if rank is None else rank
    lam = np.zeros(d)
    lam[:r] = np.arange(1, r + 1, dtype=np.float64) ** (-float(alpha))
    return lam / lam.sum()


def normalized_spectrum(lam: np.ndarray, step: float = 0.1) -> np.ndarray:
    """Eigenvalues ``mu`` of ``E[x x^T]`` for ``x = g / ||g||``, ``g ~ N(0, diag(lam))``.

    ``E[x x^T]`` stays diagonal in the eigenbasis of ``diag(lam)`` (sign symmetry), with

        mu_i = E[lam_i z_i^2 / sum_j lam_j z_j^2]
             = lam_i * int_0^inf (1 + 2 t lam_i)^-1 prod_j (1 + 2 t lam_j)^-1/2 dt,

    from ``1/s = int_0^inf exp(-t s) dt`` and the Gaussian moment generating function.
    The integral is taken in ``t = e^u`` with the trapezoid rule, which converges
    geometrically for this analytic, exponentially decaying integrand (step 0.1 is exact to
    double precision). ``sum(mu) == 1``.

    >>> normalized_spectrum(np.array([0.5, 0.5])).round(6).tolist()
    [0.5, 0.5]
    """
    lam = np.asarray(lam, dtype=np.float64)
    lam = lam / lam.sum()
    u = np.arange(-60.0, 120.0 + step, step)
    t = np.exp(u)
    pos = lam[lam > 0]
    # log prod_j (1 + 2 t lam_j)^-1/2, accumulated in chunks to bound memory for large d.
    log_prod = np.zeros_like(t)
    for start in range(0, pos.size, 512):
        log_prod -= 0.5 * np.log1p(2.0 * np.outer(t, pos[start : start + 512])).sum(axis=1)
    weight = t * np.exp(log_prod)  # dt = e^u du
    mu = np.array(
        [li * np.sum(weight / (1.0 + 2.0 * t * li)) * step if li > 0 else 0.0 for li in lam]
    )
    return mu / mu.sum()  # removes the (tiny) truncation error of the u-range


def _check_rank(rank, d: int) -> int | None:
    if rank is None:
        return None
    rank = check_positive_int("rank", rank)
    if rank > d:
        raise ValueError(f"rank must be in [1, d={d}] (or None for full rank), got {rank}")
    return rank


class HeavyTailLinBanditEnv(LinBanditEnv):
    """Arms from ``N(0, Sigma)`` with ``Sigma``'s spectrum a power law ``i^-alpha``, or low rank.

    Every round ``n_arms`` arms are drawn i.i.d. as ``x = Q diag(sqrt(lambda)) z``,
    ``z ~ N(0, I)``, with

    * ``lambda_i = i^-alpha / sum_j j^-alpha`` (``i = 1..r``), so ``trace Sigma = E||x||^2 = 1``;
      ``alpha = 0`` is the flat (heaviest) tail where every fixed-size sketch fails,
      ``alpha > 1`` makes the tail mass ``sum_{i>l} lambda_i`` vanish as ``l^(1-alpha)``
      (effectively low rank);
    * ``r = d``, or ``r = rank`` for the exactly low-rank mode: then ``lambda_i = 0`` for
      ``i > rank`` and every arm lies in the ``rank``-dimensional subspace spanned by the
      first ``rank`` columns of ``Q`` (the power law applies inside it);
    * ``Q`` a Haar-random rotation drawn at ``reset`` when ``rotate`` (so the spectrum is not
      axis-aligned and the low-rank subspace is random), else the identity.

    theta* is uniform on the unit sphere of the arms' span (of R^d, or of the ``rank``-dim
    subspace, so the low-rank problem is learnable and ``||theta*|| = 1``).

    **Which spectrum.** ``spectrum`` holds the eigenvalues (descending, summing to 1) of
    ``E[x x^T]`` for one offered arm, in the basis ``basis`` (= ``Q``):

    * ``normalize=False`` (default): exactly ``lambda``, the requested power law;
      arm norms vary (``E||x||^2 = 1``).
    * ``normalize=True``: every arm is scaled to unit l2 norm (``L = 1``), which changes the
      spectrum to ``mu_i = E[lambda_i z_i^2 / sum_j lambda_j z_j^2]``
      (:func:`normalized_spectrum`): same eigenvectors, same order, same rank, but a flatter
      curve than ``i^-alpha`` (the leading directions lose mass to the tail; for
      ``alpha = 0`` nothing changes).

    The played arms' design matrix ``X^T X`` of any agent lies in the span of the first
    ``r`` columns of ``Q`` (rank <= ``rank`` in the low-rank mode). For a policy that does
    not look at the arms (e.g. uniform), ``X^T X / t -> Q diag(spectrum) Q^T``; a
    low-regret agent tilts its picks towards theta*, adding mass along theta* on top.

    ## Action Space
    ``Discrete(n_arms)``: the index of the arm to play.

    ## Observation Space
    ``Box(-inf, inf, (n_arms, d), float32)`` (``Box(-1, 1, ...)`` with ``normalize``): this
    round's arm set, one arm per row.

    ## Rewards
    ``<x_a, theta*> + N(0, noise_std^2)``. ``info`` holds ``expected_reward``,
    ``best_expected_reward``, ``regret`` and ``best_arm``.

    ## Starting State
    ``reset(seed=s)`` draws ``Q`` and theta* and fixes the arm and noise streams.

    ## Episode End
    Truncated after ``horizon`` rounds; never terminated.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``d`` | 200 | dimension |
    | ``n_arms`` | 100 | arms per round K |
    | ``horizon`` | 2000 | rounds per episode |
    | ``noise_std`` | 0.1 | std of the Gaussian reward noise |
    | ``alpha`` | 0.5 | power-law decay ``lambda_i ~ i^-alpha``, >= 0 (0: flat) |
    | ``rank`` | None | None: full rank d; an int in [1, d]: arms in a fixed ``rank``-dim subspace |
    | ``rotate`` | True | random rotation ``Q`` (else the spectrum is axis-aligned) |
    | ``normalize`` | False | scale every arm to unit norm (its ``spectrum`` is then flatter) |
    | ``render_mode`` | None | None, ``"rgb_array"`` or ``"human"`` (see ``LinBanditEnv``) |

    ## Version History
    * v0: initial version.

    Example:

    >>> env = HeavyTailLinBanditEnv(d=6, n_arms=4, alpha=1.0, rank=3)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, int(np.linalg.matrix_rank(obs)), env.spectrum.round(3).tolist()
    ((4, 6), 3, [0.545, 0.273, 0.182, 0.0, 0.0, 0.0])
    """

    def __init__(
        self,
        d: int = 200,
        n_arms: int = 100,
        horizon: int = 2000,
        noise_std: float = 0.1,
        alpha: float = 0.5,
        rank: int | None = None,
        rotate: bool = True,
        normalize: bool = False,
        render_mode: str | None = None,
    ):
        rotate = check_bool("rotate", rotate)
        normalize = check_bool("normalize", normalize)
        d = check_positive_int("d", d)
        if (
            isinstance(alpha, (bool, np.bool_))
            or not isinstance(alpha, numbers.Real)
            or not (is_finite_real(alpha) and alpha >= 0)
        ):
            raise ValueError(
                "alpha (power-law decay of the spectrum) must be a finite number >= 0, got "
                f"{short_repr(alpha)}"
            )
        rank = _check_rank(rank, d)
        self._refuse_if_too_large(
            self._memory_estimate(
                d=d,
                n_arms=n_arms,
                horizon=horizon,
                render_mode=render_mode,
                rank=rank,
                rotate=rotate,
                normalize=normalize,
            )
        )
        # unit-norm arms have every coordinate in [-1, 1]; Gaussian arms are unbounded
        super().__init__(
            d=d,
            n_arms=n_arms,
            horizon=horizon,
            noise_std=noise_std,
            arm_bound=1.0 if normalize else np.inf,
            render_mode=render_mode,
        )
        self.alpha = float(alpha)
        self.rank = rank
        self.rotate = bool(rotate)
        self.normalize = bool(normalize)
        self.power_law = power_law_spectrum(self.d, self.alpha, rank)
        self.spectrum = (
            normalized_spectrum(self.power_law) if self.normalize else self.power_law.copy()
        )
        self.basis: np.ndarray | None = None
        r = self.d if rank is None else rank
        self._r = r
        self._scale = np.sqrt(self.power_law[:r])

    #: a round also holds the Gaussian factors z and, axis-aligned, the zero-padded arms
    _ROUND_ARM_BYTES = LinBanditEnv._ROUND_ARM_BYTES + 8

    @classmethod
    def _memory_estimate(
        cls, *, d, rank=None, rotate=True, normalize=False, **arguments
    ) -> MemoryEstimate:
        estimate = super()._memory_estimate(d=d, **arguments)
        d = estimate.arguments["d"]
        r = d if _check_rank(rank, d) is None else rank
        # lambda, sqrt(lambda) and theta* (8 bytes a number each); normalize adds mu, built as a
        # list of Python floats (32) and then an array (8)
        per_number = 24 + (40 if check_bool("normalize", normalize) else 0)
        allocations = [Allocation("the spectra", d, per_number, ("d",), "lower d")]
        if normalize:
            # normalized_spectrum's quadrature: 1801 nodes times a chunk of <= 512 eigenvalues,
            # twice
            allocations.append(
                Allocation(
                    "the normalised spectrum's quadrature",
                    1801 * min(r, 512),
                    16,
                    ("1801", "min(rank, 512)"),
                    "pass normalize=False",
                    transient=True,
                )
            )
        if check_bool("rotate", rotate):
            span = ("rank", "d") if rank is not None else ("d", "d")
            allocations += [
                Allocation(
                    "the rotation Q",
                    d * d,
                    8,
                    ("d", "d"),
                    "lower d, or pass rotate=False (no d x d matrix)",
                ),
                # besides Q: the Gaussian d x d matrix, LAPACK's copy of it and workspace, the
                # factor R
                Allocation(
                    "the QR factorisation that draws Q",
                    d * d,
                    25,
                    ("d", "d"),
                    "lower d, or pass rotate=False (no d x d matrix)",
                    transient=True,
                ),
                Allocation(
                    "the arms' span Q[:, :rank] diag(sqrt(lambda))",
                    r * d,
                    8,
                    span,
                    "lower d or rank",
                ),
            ]
        return estimate.plus(
            *allocations, **({"rank": rank} if rank is not None else {}), rotate=bool(rotate)
        )

    def _sample_problem(self, rng: np.random.Generator) -> None:
        if not self.rotate:
            # Axis-aligned: no d x d matrix at all (d = 10^5 would need 74.5 GiB), O(K d) a round;
            # the draws and values are exactly those of Q = I (adding zero products is exact).
            self._span = None
            g = rng.standard_normal(self._r)
            self.theta_star = np.zeros(self.d)
            self.theta_star[: self._r] = g / np.linalg.norm(g)
            return
        # Haar rotation: QR of a Gaussian matrix with the signs of R's diagonal fixed.
        q, r = np.linalg.qr(rng.standard_normal((self.d, self.d)))
        self.basis = q * np.sign(np.diag(r))
        g = rng.standard_normal(self._r)
        self.theta_star = self.basis[:, : self._r] @ (g / np.linalg.norm(g))
        self._span = np.ascontiguousarray(
            self.basis[:, : self._r].T * self._scale[:, None]
        )  # (r, d)

    @property
    def basis(self) -> np.ndarray | None:
        """``Q``: the eigenvectors of ``E[x x^T]`` as columns (the identity, built on demand,
        without ``rotate``)."""
        if self._basis is None and not self.rotate and self.theta_star is not None:
            return np.eye(self.d)
        return self._basis

    @basis.setter
    def basis(self, value: np.ndarray | None) -> None:
        self._basis = value

    def _sample_arms(self, rng: np.random.Generator) -> np.ndarray:
        z = rng.standard_normal((self.n_arms, self._r))
        if self._span is None:  # axis-aligned
            arms = np.zeros((self.n_arms, self.d))
            arms[:, : self._r] = z * self._scale
        else:
            arms = z @ self._span
        if self.normalize:
            arms /= np.linalg.norm(arms, axis=1, keepdims=True)
        return arms
