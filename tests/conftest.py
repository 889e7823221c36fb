import os

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

import linbandit_gym  # noqa: E402,F401  (registers the env ids for every test)

# One intra-op thread, as the CLI defaults to: the tests do many tiny ops, and two threads on
# a shared two-core machine make each of them an order of magnitude slower.
torch.set_num_threads(1)


@pytest.fixture
def workers_cost_nothing(monkeypatch):
    """Worker processes free to start, for the planner's rule (``backends.WORKER_START_S`` = 0):
    a sweep on ``workers=N`` of two units or more starts them however short its runs, as the
    tests of the worker machinery (on small sweeps) need."""
    from linbandit_gym.experiments import backends

    monkeypatch.setattr(backends, "WORKER_START_S", 0.0)
