"""linbandit-gym: Gymnasium linear-bandit environments, evaluation loop and tools.

``import linbandit_gym`` registers every env id (``gym.make("LinBandit-Synthetic-v0")``);
``gym.make("linbandit_gym:LinBandit-Synthetic-v0")`` works without the explicit import.
"""

from ._version import __version__
from .envs import LinBanditEnv
from .evaluate import run
from .registration import ENV_IDS, env_description, register_envs
from .specs import check_env_args

register_envs()

from .vector import make_vec  # noqa: E402  (after registration: it looks the ids up)

__all__ = [
    "ENV_IDS",
    "LinBanditEnv",
    "check_env_args",
    "env_description",
    "make_vec",
    "register_envs",
    "run",
    "__version__",
]
