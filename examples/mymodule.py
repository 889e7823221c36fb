"""An agent of your own: any class with ``reset``, ``act`` and ``update``; nothing to import
from linbandit-gym. From the repository's root::

    linbandit describe examples.mymodule:MyAgent
    linbandit run --env LinBandit-Synthetic-v0 --agent examples.mymodule:MyAgent \\
        --agent-arg eps=0.05

and ``name: examples.mymodule:MyAgent`` in a sweep config (``mymodule:MyAgent`` from inside
this directory).
"""

from __future__ import annotations

import numpy as np


class MyAgent:
    """Ridge regression on the played arms, a random arm with probability ``eps``.

    Args:
        eps: probability of playing a uniformly random arm, in [0, 1].
        lam: ridge lambda > 0 (``A = lam I + sum x x^T``).
    """

    def __init__(self, eps: float = 0.1, lam: float = 1.0):
        if not 0.0 <= eps <= 1.0:
            raise ValueError(f"eps must be in [0, 1], got {eps!r}")
        if not lam > 0.0:
            raise ValueError(f"lam must be > 0, got {lam!r}")
        self.eps, self.lam = eps, lam
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.A = self.b = None

    def act(self, obs) -> int:
        """The arm of ``obs`` (the round's ``(K, d)`` arm set) to play."""
        obs = np.asarray(obs, dtype=float)
        if self.A is None:
            d = obs.shape[1]
            self.A, self.b = self.lam * np.eye(d), np.zeros(d)
        if self.rng.random() < self.eps:
            return int(self.rng.integers(len(obs)))
        return int(np.argmax(obs @ np.linalg.solve(self.A, self.b)))

    def update(self, obs, action: int, reward: float) -> None:
        x = np.asarray(obs, dtype=float)[action]
        self.A += np.outer(x, x)
        self.b += reward * x

    def memory_bytes(self) -> int:
        """What the state holds now: ``A`` (d x d) and ``b`` (d)."""
        return 0 if self.A is None else self.A.nbytes + self.b.nbytes
