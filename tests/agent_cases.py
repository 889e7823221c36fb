"""Helpers of the tests that play every registered agent (``agents.AGENTS``) a few rounds."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from agents import AGENTS


def keywords(cls) -> set[str]:
    """The constructor keywords of ``cls``, following ``**kwargs`` passed on to the parent's."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {
            "self"
        }
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names
    return names


def agent_params():
    return [pytest.param(cls, id=name) for name, cls in AGENTS.items()]


def make(cls, **kwargs):
    """An agent of ``cls`` able to play the small arm sets below (DBSLinUCB needs l0 <= d)."""
    if "l0" in keywords(cls):
        kwargs.setdefault("l0", 2)
    return cls(**kwargs)


def arm_set(k=4, d=3, seed=0):
    return np.random.default_rng(seed).standard_normal((k, d))


def play(agent, x, rounds=6, seed=0):
    """A few rounds on the fixed arm set ``x`` (pulls only: BAI agents stop with a ``>= K``
    action)."""
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        a = agent.act(x)
        if a >= len(x):
            return
        agent.update(x, a, float(rng.standard_normal()))
