"""The version of linbandit-gym (the distribution's, in ``pyproject.toml``)."""

__version__ = "0.1.0"
