"""The inspector's reads of a store: typed single and batch reads by id, column reads, the store version.

Column reads go through the store's table layer: the public API returns whole memories, and a
summary of 100k memories needs three small columns of each, not the memories.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from memory_retrievers.filters import MemoryFilter, build_where, sql_literal
from memory_retrievers.models import Memory

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["columns", "get_many", "get_one", "linking_where", "store_version"]


async def store_version(store: MemoryStore) -> int:
    """The table version the store sees now (every commit makes a new one; caches key on it)."""
    return await store._table.version()


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


async def columns(store: MemoryStore, where: str, columns: list[str], action: str) -> pa.Table:
    """A few columns of the rows matching ``where`` (the public API reads whole memories; summaries need columns)."""
    return await store._table.rows(where, columns, action=action)


def linking_where(namespace: str, memory_id: str) -> str:
    """The predicate of the memories of ``namespace`` whose ``links`` name ``memory_id``."""
    where = build_where(namespace, MemoryFilter(include_superseded=True))
    return f"{where} AND array_has(links, {sql_literal(memory_id)})"
