"""LinTS (Agrawal & Goyal, 2013): linear Thompson sampling with the exact Gram matrix."""

from __future__ import annotations

from .base import Batching
from .sketches.exact import ExactCovariance
from .thompson import ThompsonSampling

__all__ = ["LinTS"]


class LinTS(ThompsonSampling):
    """Linear Thompson sampling (Agrawal & Goyal (2013), Alg. 1) on the exact ``A = lam I + X^T X``.

    Every round draws ``theta_tilde = theta_hat + v S z`` (``z ~ N(0, I_d)`` from the agent's own
    generator) and plays ``argmax_x x^T theta_tilde``. ``A^-1`` is kept by Sherman-Morrison and
    the square-root factor ``S`` (``S S^T = A^-1``) by Potter's update
    (:mod:`agents.sketches.exact`): the lower Cholesky factor ``I / sqrt(lam)`` at the first round,
    three ``d^2`` products a row since. A round costs ``O(d^2 + K d)`` (``theta_hat = A^-1 b``, the
    draw, the ``K`` arms against ``theta_tilde``, the two updates), against OFUL's ``O(K d^2)``
    scoring; memory ``2 d^2`` numbers (``A^-1`` and ``S``).

    Args:
        lam: ridge lambda > 0.
        v: the posterior scale: a float (tuned, as OFUL's ``beta``) or ``"theory"``
            (:func:`agents.thompson.theory_scale`, ``R sqrt(9 d ln(t / delta))``).
        delta, noise_std: used by ``v="theory"`` only.
        theta_bound: unused (accepted as the UCB agents accept it).
        batch_size: ``None`` (one agent) or B independent agents; ``lam`` and ``v`` may then give
            one value per member.
        d, device, dtype: see :class:`~agents.base.TorchAgent`.
        seed: seed of the agent's normal draws (``reset(seed=...)`` overrides it).

    Example:

    >>> import numpy as np
    >>> agent = LinTS(lam=1.0, v=0.1, seed=0)
    >>> arms = np.eye(3)
    >>> a = agent.act(arms); agent.update(arms, a, reward=1.0)
    >>> agent.theta_hat.tolist()[a]
    0.5
    """

    estimator_class = ExactCovariance
    batching = Batching(per_member=("lam", "v"))
