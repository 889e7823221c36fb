"""What the tests that start ``linbandit`` as a process share: the small sweep and run they
start, and the way they start it (its own session, Ctrl-C at its default action)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

LINUX = sys.platform.startswith("linux") and Path("/proc/self/stat").exists()
SMALL_ENV = {"id": "LinBandit-Synthetic-v0", "args": {"d": 5, "n_arms": 4, "horizon": 30}}
THREE = {
    "name": "three",
    "seeds": 3,
    "envs": [SMALL_ENV],
    "agents": [{"name": "OFUL", "args": {"beta": 0.1}}],
}
RUN = [
    "run",
    "--env",
    "LinBandit-Synthetic-v0",
    "--horizon",
    "30",
    "--env-arg",
    "d=5",
    "--env-arg",
    "n_arms=4",
    "--no-progress",
]


def sigint_as_a_terminal_gives_it() -> None:
    """In the child, before it runs: Ctrl-C at its default action, as a terminal's foreground
    command gets it. A job started in the background of a non-interactive shell (CI scripts
    often are) inherits SIGINT ignored, and a process that finds it ignored rightly keeps it so:
    these tests are about what the user's Ctrl-C does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    """``python -m linbandit_gym.cli ARGS`` in its own session (a signal to its group reaches its
    workers too), text pipes, unbuffered."""
    return subprocess.Popen(
        [sys.executable, "-m", "linbandit_gym.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_as_a_terminal_gives_it,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        **popen,
    )
