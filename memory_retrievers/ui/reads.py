"""The inspector's reads of a store: typed single and batch reads by id, column reads, the namespace's version.

Everything goes through the public store API (``aget``, ``acolumns``, ``aversion``), so the
inspector works over any store the library offers, a :class:`~memory_retrievers.ShardedMemoryStore`
included. Column reads exist because the memory API returns whole memories, and a summary of
100k memories needs three small columns of each, not the memories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memory_retrievers.models import Memory

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["EVERY_ROW", "columns", "get_many", "get_one", "namespace_version"]

#: The filter of every stored row of a namespace: superseded, expired and archived memories too.
EVERY_ROW: Mapping[str, Any] = {"include_superseded": True, "include_expired": True, "include_archived": True}


async def namespace_version(store: MemoryStore, namespace: str) -> int:
    """The version of the table holding ``namespace`` now (every commit makes a new one; caches key on it)."""
    return await store.aversion(namespace)


async def get_one(store: MemoryStore, namespace: str, memory_id: str) -> Memory:
    """One memory by id (typed: ``aget`` of a str).

    Raises:
        NotFoundError: No such memory in the namespace.
    """
    found = await store.aget(memory_id, namespace=namespace)
    return found if isinstance(found, Memory) else found[0]


async def get_many(store: MemoryStore, namespace: str, ids: list[str], *, include_vector: bool = False) -> list[Memory]:
    """Memories by id, in order (typed: ``aget`` of a list; an empty list reads nothing).

    Raises:
        NotFoundError: Any id is missing from the namespace.
    """
    if not ids:
        return []
    found = await store.aget(ids, namespace=namespace, include_vector=include_vector)
    return [found] if isinstance(found, Memory) else list(found)


async def columns(
    store: MemoryStore,
    namespaces: str | Sequence[str],
    wanted: list[str],
    *,
    filter: Mapping[str, Any] = EVERY_ROW,
    limit: int | None = None,
) -> pa.Table:
    """A few columns of the namespaces' memories matching ``filter`` (the public API's ``acolumns``)."""
    return await store.acolumns(namespaces, wanted, filter=filter, limit=limit)
