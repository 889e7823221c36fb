"""The small inputs the command-line tests give ``linbandit``: a tiny synthetic env as
``run``/``compare`` flags (5 and 15 rounds) and as a config's ``envs:``."""

SYNTH = "LinBandit-Synthetic-v0"


def tiny_env_flags(horizon: int) -> list[str]:
    """``--env`` flags of the tiny synthetic env (d = 4, 3 arms) played for ``horizon`` rounds."""
    return [
        "--env",
        SYNTH,
        "--env-arg",
        "d=4",
        "--env-arg",
        "n_arms=3",
        "--horizon",
        str(horizon),
        "--no-progress",
    ]


TINY = tiny_env_flags(5)
TINY_ENV = tiny_env_flags(15)
ENVS = [{"id": SYNTH, "args": {"d": 6, "n_arms": 4, "horizon": 10}}]
