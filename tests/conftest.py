import os

os.environ.setdefault("MPLBACKEND", "Agg")

import torch  # noqa: E402

import linbandit_gym  # noqa: E402,F401  (registers the env ids for every test)

# One intra-op thread, as the CLI defaults to: the tests do many tiny ops, and two threads on
# a shared two-core machine make each of them an order of magnitude slower.
torch.set_num_threads(1)
