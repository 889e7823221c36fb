"""The small inputs the command-line tests give ``linbandit``: a tiny synthetic env as
``run``/``compare`` flags (5 and 15 rounds) and as a config's ``envs:``."""

SYNTH = "LinBandit-Synthetic-v0"
TINY = [
    "--env",
    SYNTH,
    "--env-arg",
    "d=4",
    "--env-arg",
    "n_arms=3",
    "--horizon",
    "5",
    "--no-progress",
]
TINY_ENV = [
    "--env",
    SYNTH,
    "--env-arg",
    "d=4",
    "--env-arg",
    "n_arms=3",
    "--horizon",
    "15",
    "--no-progress",
]
ENVS = [{"id": SYNTH, "args": {"d": 6, "n_arms": 4, "horizon": 10}}]
