import os

os.environ.setdefault("MPLBACKEND", "Agg")

import linbandit_gym  # noqa: E402,F401  (registers the env ids for every test)
