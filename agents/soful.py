"""SOFUL (Kuzborskij, Cella & Cesa-Bianchi, 2019): OFUL on a Frequent Directions sketch."""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from ._torch import DeviceLike, DTypeLike
from ._validate import Interval, Options
from ._warnings import DiscardedMassWarning, SketchSizeWarning, warn_user
from .base import Batching
from .linucb import LinUCB
from .sketches.dbs import block_round_cost, exact_round_cost
from .sketches.fd import FrequentDirections

__all__ = ["SOFUL"]


class SOFUL(LinUCB):
    """Sketched OFUL: the optimistic loop with ``A_hat = lam I + S^T S`` from Frequent Directions.

    Wen et al. (2025), Sec. 2.3 (eqs. 3-4): ``A_hat^-1 = (1/lam)(I - S^T M S)``,
    ``M = (S S^T + lam I)^-1``; all K arms scored in one O(K d l) batched op, updates O(d l)
    amortised with the fast 2l-row buffer (Remark 1; the papers' experiments use it), memory
    O(d l). FD keeps ``l - 1``
    directions, so SOFUL equals OFUL exactly when ``sketch_size > d`` (not at ``= d``).

    Args:
        lam: ridge lambda > 0.
        beta: constant radius (float, as in the papers' experiments) or ``"theory"``: Wen et al.
            (2025) Thm. 2 (App. E.1, eq. before Lemma 6) specialised to one FD block,
            ``R sqrt(1 + sb/lam) sqrt(2 ln(1/delta) + ln(|A|/|lam I|)) + H (lam + sb)/sqrt(lam)``
            with ``sb`` the total FD shrinkage and ``ln(|A|/|lam I|)`` replaced by the data bound
            :meth:`~agents.sketches.fd.FrequentDirections.log_det_ratio_bound` (Lemma 6 before
            ``||x|| <= L`` is used, so no arm-norm bound is needed). Equals OFUL's radius
            while nothing has been discarded.
        sketch_size: FD sketch size ``l >= 1``; batched, one per member allowed (the members'
            buffers are padded to the largest; each still reduces on its own ``2 l_i`` rows).
        fast: ``True`` (default) 2l-row buffer, ``False`` textbook one-SVD-per-row FD.
        delta, noise_std (R), theta_bound (H): used by ``beta="theory"`` only.
        batch_size: ``None`` (one agent) or B independent agents; ``lam``, ``beta`` and
            ``sketch_size`` may then give one value per member (``per_member_args``; see
            :class:`agents.batched.BatchedSOFUL`).
        d, device, dtype, seed: see :class:`~agents.base.TorchAgent`.

    Example:

    >>> import numpy as np
    >>> agent = SOFUL(lam=1.0, beta=0.1, sketch_size=4)
    >>> arms = np.eye(3)
    >>> a = agent.act(arms); agent.update(arms, a, reward=1.0)
    >>> [round(v, 12) for v in agent.theta_hat.tolist()]
    [0.5, 0.0, 0.0]
    """

    estimator_class = FrequentDirections
    estimator_args = ("sketch_size", "fast")
    size_args = ("sketch_size",)
    parameter_constraints = {
        "sketch_size": [Interval(Integral, 1, None, hint="the number l of sketch rows")],
        "fast": [Options((True, False), hint="True: the 2l-row buffer, False: textbook FD")],
    }
    batching = Batching(per_member=("lam", "beta", "sketch_size"))
    repr_args = ("lam", "beta", "sketch_size")

    def __init__(
        self,
        *,
        lam: float = 1.0,
        beta: float | str = 1.0,
        sketch_size: int = 50,
        fast: bool = True,
        delta: float = 0.05,
        noise_std: float = 1.0,
        theta_bound: float = 1.0,
        d: int | None = None,
        device: DeviceLike = None,
        dtype: DTypeLike = None,
        seed: int | None = None,
        batch_size: int | None = None,
    ):
        # sketch_size (one per member when they differ: the buffers are padded to the largest) and
        # fast reach the estimator through self.arguments (estimator_args)
        self.fast = fast
        super().__init__(
            lam=lam,
            beta=beta,
            delta=delta,
            noise_std=noise_std,
            theta_bound=theta_bound,
            batch_size=batch_size,
            d=d,
            device=device,
            dtype=dtype,
            seed=seed,
        )

    def reset(self, seed=None) -> None:
        super().reset(seed=seed)
        self._warned_mass = False  # (warn_if_discarded_mass_dominates, once per episode)

    def update(self, obs, action, reward) -> None:
        super().update(obs, action, reward)
        if not self._warned_mass:
            warn_if_discarded_mass_dominates(self)

    def make_estimator(self, d: int) -> FrequentDirections:
        _warn_if_larger_than_oful(self, d)
        return super().make_estimator(d)

    def _theory_radius(self) -> np.ndarray:
        est = self.estimator
        sb, logdet = np.atleast_1d(est.total_shrinkage), np.atleast_1d(est.log_det_ratio_bound())
        lam = self.lam
        return self.noise_std * np.sqrt(1.0 + sb / lam) * np.sqrt(
            2.0 * math.log(1.0 / self.delta) + logdet
        ) + self.theta_bound * (lam + sb) / np.sqrt(lam)


def largest_sketch_size_within(d: int, limit: int, fast: bool, dtype, cdtype) -> int | None:
    """The largest ``sketch_size`` whose FD sketch
    (:meth:`~agents.sketches.fd.FrequentDirections.peak_member_bytes`, non-decreasing in the size)
    holds at most ``limit`` bytes at dimension ``d``: 0 when none does, ``None`` when every size
    does (the buffer stops growing at ``d`` rows)."""

    def size(l: int) -> int:
        return FrequentDirections.peak_member_bytes(d, l, fast, dtype, cdtype)

    # from l = d + 1 on (2 l > d + its slack) the storage no longer grows: every larger l fits
    if size(d + 1) <= limit:
        return None
    lo, hi = 0, d + 1  # size(lo) <= limit (or lo = 0), size(hi) > limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if size(mid) <= limit else (lo, mid)
    return lo


def slower_than_oful(d: int, sketch_size, fast: bool) -> np.ndarray:
    """Whether an FD round of sketch size ``l`` (an int or an array of them) costs more
    multiply-adds than OFUL's at every number of arms ``K >= 1``, by the estimate Dyadic Block
    Sketching switches to exact updates by: :func:`~agents.sketches.dbs.block_round_cost` at the
    buffer's peak (``2 l`` rows fast, ``l`` textbook) against
    :func:`~agents.sketches.dbs.exact_round_cost`. Both costs are linear in ``K``, so it is so at
    every ``K`` when it is so at ``K = 1`` and each further arm costs the sketch at least OFUL's
    ``d^2``."""
    l = np.asarray(sketch_size)
    rows = 2 * l if fast else l
    one, two = (block_round_cost(d, k, rows, l, fast) - exact_round_cost(d, k) for k in (1, 2))
    return (one > 0.0) & (two >= one)


def _largest_not_slower(d: int, fast: bool) -> int | None:
    """The largest ``sketch_size`` below every size :func:`slower_than_oful` flags at dimension
    ``d`` (``None`` when none is flagged up to ``d + 1``, past which the rounds no longer grow)."""
    slower = np.flatnonzero(slower_than_oful(d, np.arange(1, d + 2), fast))
    return int(slower[0]) if slower.size else None


def _warn_if_larger_than_oful(agent, d: int) -> None:
    """A SOFUL/CBSCFD sketch that holds more bytes than OFUL's d x d inverse, or whose rounds cost
    more arithmetic than OFUL's whatever the number of arms (:func:`slower_than_oful`), saves
    nothing: say so, with the largest sketch size that does neither (the very comparisons made
    here), at the user's line (once per line and message, Python's default), when the dimension
    becomes known."""
    from .sketches.base import core_dtype
    from .sketches.exact import ExactCovariance

    l = int(np.max(agent.arguments["sketch_size"]))  # the largest member's when the sizes differ
    cdtype = core_dtype(agent.device)
    ec = cdtype.itemsize
    sketch = FrequentDirections.peak_member_bytes(d, l, agent.fast, agent.dtype, cdtype)
    oful = ExactCovariance.peak_member_bytes(d, agent.dtype, core_bytes=ec)
    larger, slower = sketch > oful, bool(slower_than_oful(d, l, agent.fast))
    if not (larger or slower):
        return
    name = getattr(
        type(agent), "single_class", type(agent)
    ).__name__  # the class the user built, not its batch
    sizes = [
        largest_sketch_size_within(d, oful, agent.fast, agent.dtype, cdtype),
        _largest_not_slower(d, agent.fast),
    ]
    largest = min((s for s in sizes if s is not None), default=None)
    # FD keeps sketch_size - 1 directions: a size below 2 keeps none, and is never suggested
    fix = f"use sketch_size <= {largest} or OFUL" if largest and largest >= 2 else "use OFUL"
    said = [f"holds {sketch} bytes per agent, more than OFUL's d x d inverse ({oful} bytes)"]
    said = said * larger
    said += [
        "its rounds cost more than OFUL's at any number of arms (multiply-adds at the buffer's "
        "peak, the estimate DBSLinUCB switches to exact updates by)"
    ] * slower
    warn_user(f"{name}(sketch_size={l}) at d={d} {', and '.join(said)}: {fix}", SketchSizeWarning)


def warn_if_discarded_mass_dominates(agent: SOFUL) -> None:
    """Warn once (a :class:`~agents.DiscardedMassWarning`) when Frequent Directions' discarded mass
    passes ``lam`` for some member, naming the agents that do not have that limit.

    FD's guarantee (Ghashami et al. 2016) is ``0 <= X^T X - S^T S <= Delta I`` with ``Delta`` the
    total shrinkage, so ``A_hat <= A <= A_hat + Delta I <= (1 + Delta / lam) A_hat`` (as
    ``A_hat >= lam I``) and, for every arm,

        ||x||^2_{A^-1}  <=  ||x||^2_{A_hat^-1}  <=  (1 + Delta / lam) ||x||^2_{A^-1}.

    While ``Delta <= lam`` SOFUL's widths are within ``sqrt 2`` of OFUL's (it plays as OFUL with a
    radius at most ``sqrt 2`` larger); past it nothing bounds them: a direction the sketch
    discarded keeps the width ``||x||^2 / lam`` of a direction never played, and SOFUL's regret
    bound grows with ``Delta / lam`` (Kuzborskij et al. 2019). Robust FD adds the mass back
    (``A_hat >= A``, CBSCFD) and Dyadic Block Sketching bounds it (``Delta < 2 eps``), so they do
    not warn."""
    est = agent.estimator
    if est is None or est.robust:
        return
    shrinkage = est.total_shrinkage  # (it only grows at a shrink: called every round, so cheap)
    if max(np.ravel(shrinkage).tolist()) <= min(np.ravel(agent.lam).tolist()):
        return
    mass = np.atleast_1d(np.asarray(shrinkage, dtype=np.float64))
    lam = np.broadcast_to(np.asarray(agent.lam, dtype=np.float64), mass.shape)
    if not (mass > lam).any():
        return
    agent._warned_mass = True
    i = int(np.argmax(mass / lam))
    name = getattr(type(agent), "single_class", type(agent)).__name__
    l = int(np.broadcast_to(np.asarray(agent.arguments["sketch_size"]), mass.shape)[i])
    # the same words for every seed of a configuration, alone or a batch's member (a sweep says a
    # warning once per cause): the member's sketch_size and lam, not its index
    warn_user(
        f"{name}(sketch_size={l}, lam={lam[i]:.3g}): Frequent Directions discarded more "
        "mass than lam (its total shrinkage passed lam): its widths can then exceed OFUL's by more "
        "than sqrt 2 (up to sqrt(1 + mass / lam)) and its regret can grow linearly where OFUL's "
        "does not. Use CBSCFD (which adds the discarded mass back), a larger sketch_size, or "
        "DBSLinUCB (which bounds it)",
        DiscardedMassWarning,
    )
