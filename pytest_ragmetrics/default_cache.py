"""Which cache ``cache=True`` means while a pytest session runs: the session registers a
provider of its cache here, and :func:`pytest_ragmetrics.cache.default_cache` asks it.

Apart from :mod:`pytest_ragmetrics.cache` (which imports numpy) because the plugin registers
the provider at start-up, where nothing heavy may be imported. This module imports nothing of
ours: the cache depends on it, never the other way round.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

DEFAULT_FOLDER = Path(".ragmetrics/cache")
"""Where ``cache=True`` caches outside a pytest session (relative to the current folder)."""

_providers: list[Callable[[], object]] = []


def default_cache_provider() -> Callable[[], object] | None:
    """The provider registered last and not yet withdrawn, or None outside a session."""
    return _providers[-1] if _providers else None


def use_default_cache(provider: Callable[[], object]) -> Callable[[], None]:
    """Make ``provider()`` (returning a :class:`~pytest_ragmetrics.cache.Cache`) the default
    cache until the returned function is called."""
    _providers.append(provider)

    def restore() -> None:
        if provider in _providers:
            _providers.remove(provider)

    return restore
