"""Suggestions for mistyped names (env ids, arguments, agents) that ignore case and separators.

``LinBandit-Mnist-v0``, ``linbandit_mnist_v0`` and ``LinBandit-MNIST`` all mean
``LinBandit-MNIST-v0``; ``sketchsize`` means ``sketch_size``. :func:`closest_name` compares
names by their *key* (lower case, letters and digits only) before it falls back to
``difflib``'s similarity, which alone is fooled by case (it suggests ``LinBandit-MFeat-v0``
for ``LinBandit-Mnist-v0``: more letters in the same case).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["closest_name", "did_you_mean", "name_key"]

_VERSION = re.compile(r"v\d+$")


def name_key(name: str) -> str:
    """``name`` in lower case with everything but letters and digits removed.

    >>> name_key("LinBandit-MNIST-v0"), name_key("sketch_size")
    ('linbanditmnistv0', 'sketchsize')
    """
    return re.sub(r"[^0-9a-z]", "", str(name).casefold())


def closest_name(name: str, choices: Iterable[str]) -> str | None:
    """The choice a mistyped ``name`` most likely meant, or None.

    In this order: the one choice with the same key (:func:`name_key`); the one choice
    with the same key once a version suffix is dropped from both (``LinBandit-MNIST`` or
    ``LinBandit-MNIST-v1`` for ``LinBandit-MNIST-v0``); the one choice whose key contains the
    name's key of at least three characters (``mnist``, ``sketch``); else the most similar key
    by ``difflib`` (cutoff 0.5, so that ``dim`` still finds ``d``).

    >>> ids = ["LinBandit-MFeat-v0", "LinBandit-MNIST-v0", "LinBandit-Synthetic-v0"]
    >>> closest_name("LinBandit-Mnist-v0", ids), closest_name("linbandit_synthetic", ids)
    ('LinBandit-MNIST-v0', 'LinBandit-Synthetic-v0')
    >>> closest_name("mnist", ids), closest_name("LinBandit-Mnsit-v0", ids)
    ('LinBandit-MNIST-v0', 'LinBandit-MNIST-v0')
    >>> closest_name("cartpole", ids) is None
    True
    """
    choices = [str(c) for c in choices]
    key = name_key(name)
    if not key or not choices:
        return None
    keys = {c: name_key(c) for c in choices}
    for matches in (
        [c for c in choices if keys[c] == key],
        [c for c in choices if _VERSION.sub("", keys[c]) == _VERSION.sub("", key)],
        [c for c in choices if len(key) >= 3 and key in keys[c]],
    ):
        if len(matches) == 1:
            return matches[0]
    by_key: dict[str, str] = {}
    for choice in choices:
        by_key.setdefault(keys[choice], choice)
    close = difflib.get_close_matches(key, list(by_key), n=1, cutoff=0.5)
    return by_key[close[0]] if close else None


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the :func:`closest_name` of a mistyped ``name``, else ``""``.

    >>> did_you_mean("dim", ["d", "n_arms", "horizon"])
    " (did you mean 'd'?)"
    """
    close = closest_name(name, choices)
    return f" (did you mean {close!r}?)" if close else ""
