"""Bounded per-namespace caches: a dict that keeps its most recently put entries.

The store's small caches (entity cue, speakers, recency cutoffs, namespaces over the view limit)
are keyed by namespace or filter; a worker serving a million tenants must not grow with them.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["bounded_put"]

K = TypeVar("K")
V = TypeVar("V")


def bounded_put(cache: dict[K, V], key: K, entry: V, limit: int) -> None:
    """Put ``entry`` last, then drop the oldest entries past ``limit`` (they are read again when next asked)."""
    cache.pop(key, None)
    cache[key] = entry
    while len(cache) > limit:
        cache.pop(next(iter(cache)))
