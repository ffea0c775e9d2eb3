"""Which cache ``cache=True`` means: the pytest session's while one runs, else
``.ragmetrics/cache`` in the current folder.

Apart from :mod:`pytest_ragmetrics.cache` (which imports numpy) because the plugin sets it at
start-up, where nothing heavy may be imported.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_ragmetrics.cache import Cache

DEFAULT_FOLDER = Path(".ragmetrics/cache")
_default: list[Callable[[], Cache]] = []


def default_cache() -> Cache:
    """The cache ``cache=True`` means: the pytest session's (ragmetrics_cache_dir, off with
    --ragmetrics-no-cache) while one runs, else ``.ragmetrics/cache`` in the current folder."""
    if _default:
        return _default[-1]()
    from pytest_ragmetrics.cache import Cache

    return Cache(DEFAULT_FOLDER)


def use_default_cache(provider: Callable[[], Cache]) -> Callable[[], None]:
    """Make ``provider()`` the :func:`default_cache` until the returned function is called."""
    _default.append(provider)

    def restore() -> None:
        if provider in _default:
            _default.remove(provider)

    return restore
