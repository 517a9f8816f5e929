"""Reading or deleting every memory of a namespace, a page at a time.

Shared by the core's formation package and the framework adapters (through
:mod:`memory_retrievers.integration`, which re-exports these names). It lives apart from both so
neither imports the other: formation used to borrow these from ``integration``, which imports
formation, and that made an import cycle.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memory_retrievers.filters import MemoryFilter
from memory_retrievers.models import Memory

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["PAGE_SIZE", "aall_memories", "adelete_ids", "aiter_memories"]

#: Memories read or deleted per call by the paging helpers.
PAGE_SIZE = 1000


async def aiter_memories(
    store: MemoryStore,
    namespace: str,
    *,
    filter: MemoryFilter | Mapping[str, Any] | None = None,
    newest_first: bool = True,
) -> AsyncIterator[list[Memory]]:
    """Every memory of a namespace matching ``filter``, a page (:data:`PAGE_SIZE`) at a time."""
    offset = 0
    while True:
        page = await store.alist(namespace, filter=filter, limit=PAGE_SIZE, offset=offset, newest_first=newest_first)
        if page:
            yield page
        if len(page) < PAGE_SIZE:
            return
        offset += PAGE_SIZE


async def aall_memories(
    store: MemoryStore,
    namespace: str,
    *,
    filter: MemoryFilter | Mapping[str, Any] | None = None,
    newest_first: bool = False,
) -> list[Memory]:
    """Every memory of a namespace matching ``filter`` (oldest first by default)."""
    out: list[Memory] = []
    async for page in aiter_memories(store, namespace, filter=filter, newest_first=newest_first):
        out.extend(page)
    return out


async def adelete_ids(store: MemoryStore, namespace: str, ids: Sequence[str]) -> int:
    """Delete ``ids`` (those already gone are skipped), :data:`PAGE_SIZE` per commit; returns the count."""
    deleted = 0
    for start in range(0, len(ids), PAGE_SIZE):
        deleted += await store.adelete(list(ids[start : start + PAGE_SIZE]), namespace=namespace, missing_ok=True)
    return deleted
