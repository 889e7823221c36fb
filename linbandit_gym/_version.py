"""The version of linbandit-gym: one source of truth, the version in ``pyproject.toml`` as
installed."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("linbandit-gym")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
